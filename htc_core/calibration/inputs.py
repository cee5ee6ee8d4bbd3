"""Input validation shared by the calibrators (scikit-learn conventions: a ValueError naming the argument)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..features import FeatureMatrix


def _check_X(X, name: str = "X") -> np.ndarray:
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 2-D array of numbers, got {type(X).__name__}") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D [n_samples, n_features], got an array of shape {arr.shape}")
    if not np.isfinite(arr).all():
        i, j = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} must be finite, got {float(arr[i, j])!r} at row {i}, column {j}")
    return arr


def _check_y(y, n: int) -> np.ndarray:
    try:
        arr = np.asarray(y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"y must be a 1-D array of 0/1 labels, got {type(y).__name__}") from None
    if arr.shape[0] != n:
        raise ValueError(f"y must have one label per row of X ({n}), got {arr.shape[0]}")
    bad = ~((arr == 0) | (arr == 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"y must contain only 0 and 1 (unlabeled rows removed), got {float(arr[i])!r} at index {i}")
    return arr


def _unpack_features(X) -> tuple[Any, list[str] | None, tuple[str, int] | None]:
    """Accept an array, a DataFrame or a FeatureMatrix; return (values, feature names or None,
    (profile, top_k) or None). Only a FeatureMatrix knows the token-confidence profile it was computed with."""
    if isinstance(X, FeatureMatrix):
        return X.values, list(X.names), (str(X.profile), int(X.top_k))
    if isinstance(X, pd.DataFrame):
        return X.to_numpy(dtype=np.float64), [str(c) for c in X.columns], None
    return X, None, None


def _default_names(d: int) -> list[str]:
    from ..features import FEATURE_NAMES

    return list(FEATURE_NAMES) if d == len(FEATURE_NAMES) else [f"x{i}" for i in range(d)]


def _check_positive_int(value, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {what}, got {value!r}")
