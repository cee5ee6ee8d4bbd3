"""Input helpers shared by the explanation modules (checked feature matrices, printable group names)."""

from __future__ import annotations

import numpy as np
import pandas as pd

# helpers of the explain modules, not part of the library's interface
__all__: list[str] = []


def check_matrix(X, name: str = "X") -> np.ndarray:
    """The float 2-D values of a feature matrix (a ``FeatureMatrix`` or an array)."""
    values = X.values if hasattr(X, "values") and hasattr(X, "profile") else X
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D feature matrix, got shape {arr.shape}")
    return arr


def group_names(groups) -> np.ndarray:
    """Group values as strings, a missing group shown as '(none)'."""
    return pd.Series(np.asarray(groups, dtype=object)).fillna("(none)").astype(str).to_numpy()
