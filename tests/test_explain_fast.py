"""The fast path of explain_trajectory (htc_core.explain.reasons, .signals): the signal grouping remembered per
matrix content, and the reference percentiles and medians computed for all features at once, give the same
numbers as the one-feature definitions, including non-finite values and a matrix changed in place."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from htc_core import explain
from htc_core.features import FEATURE_NAMES


def _model(X: np.ndarray, rng: np.random.Generator) -> SimpleNamespace:
    """A linear model over the 48 named features with random weights (some zero)."""
    d = X.shape[1]
    coef = rng.normal(size=(1, d)) * (rng.uniform(size=d) < 0.7)
    finite = np.where(np.isfinite(X), X, 0.0)
    model = SimpleNamespace(coef_=coef, intercept_=np.array([0.1]), mean_=finite.mean(axis=0),
                            scale_=np.where(finite.std(axis=0) > 0, finite.std(axis=0), 1.0),
                            feature_names_in_=np.array(FEATURE_NAMES, dtype=object), variant="full")
    model.contributions = lambda A: np.nan_to_num((A - model.mean_) / model.scale_) * model.coef_[0]
    return model


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), holes=st.floats(0.0, 0.3))
def test_the_table_places_every_feature_as_percentile_of_and_median_do(seed, n, holes):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, len(FEATURE_NAMES))), 1)          # ties
    bad = rng.uniform(size=X.shape) < holes
    X[bad] = rng.choice([np.nan, np.inf, -np.inf], size=int(bad.sum()))
    y = (rng.uniform(size=n) < 0.6).astype(float)
    i = int(rng.integers(0, n))
    with np.errstate(invalid="ignore", over="ignore"):                 # medians and means of +-inf
        e = explain.explain_trajectory(_model(X, rng), X, i, labels=y)
        ref = X[y == 1] if (y == 1).any() else X
        for _, row in e.table.iterrows():
            j = FEATURE_NAMES.index(row["feature"])
            want = explain.percentile_of(X[i, j], ref[:, j])
            assert row["success_percentile"] == want or (np.isnan(want) and np.isnan(row["success_percentile"]))
            med = float(np.median(ref[:, j]))
            assert row["success_median"] == med or (np.isnan(med) and np.isnan(row["success_median"]))


def test_signal_groups_remember_content_not_the_array():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=30), rng.normal(size=30)
    X = np.column_stack([a, a, b])
    first = explain.signal_groups(X)
    assert [(s.members, s.kind) for s in first] == [((0, 1), "duplicate"), ((2,), "single")]
    first.clear()                                          # the caller's list is its own
    assert explain.signal_groups(X.copy()) == explain.signal_groups(X)
    X[0, 1] += 5.0                                         # changed in place: no longer a copy
    assert [s.kind for s in explain.signal_groups(X, threshold=None)] == ["single"] * 3
    assert [s.kind for s in explain.signal_groups(X, threshold=0.5)] == ["correlated", "single"]


def test_signal_groups_forget_the_least_recent_beyond_the_cache_size():
    from htc_core.explain import signals as module
    rng = np.random.default_rng(4)
    mats = [rng.normal(size=(20, 5)) for _ in range(module.CACHE_SIZE + 3)]
    want = [explain.signal_groups(M) for M in mats]
    assert [explain.signal_groups(M) for M in mats] == want
    with pytest.raises(ValueError, match="threshold"):
        explain.signal_groups(mats[0], threshold=1.5)
