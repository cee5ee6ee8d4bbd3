"""Metrics merged from per-chunk sufficient statistics equal the one-shot metrics (htc_core.calibration.streaming)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.calibration import MetricState, auroc, brier_score, expected_calibration_error
from htc_core.formats import load

from conftest import REPO


def _check(y, p, chunks, n_bins=10):
    states = [MetricState(n_bins).update(y[c], p[c]) for c in chunks if len(c)]
    merged = states[0]
    for s in states[1:]:
        merged = merged.merge(s)
    assert merged.n == len(y)
    assert merged.expected_calibration_error() == pytest.approx(expected_calibration_error(y, p, n_bins=n_bins),
                                                                abs=1e-12)
    assert merged.brier_score() == pytest.approx(brier_score(y, p), abs=1e-12)
    if 0 < y.sum() < len(y):
        assert merged.auroc() == pytest.approx(auroc(y, p), abs=1e-12)
    return merged


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0]),
                          st.one_of(st.sampled_from([0.0, 0.1, 0.2, 0.5, 0.9, 1.0]), st.floats(0, 1))),
                min_size=2, max_size=200),
       st.integers(1, 7))
def test_any_chunking_gives_the_one_shot_metrics(pairs, n_chunks):
    y = np.array([a for a, _ in pairs])
    p = np.array([b for _, b in pairs])
    cuts = np.array_split(np.arange(len(y)), n_chunks)
    _check(y, p, cuts)


def test_real_out_of_sample_confidences_in_chunks():
    """Baseline confidences of the 2,000 sample runs (many ties), 13 uneven chunks merged in a shuffled order."""
    from htc_core.calibration import baseline_confidences

    ts, _ = load(REPO / "sample_runs")
    ts = ts.labeled()
    p = np.clip(baseline_confidences(ts)["GlobalTrace-TP"].to_numpy(), 0, 1)
    y = ts.labels
    rng = np.random.default_rng(0)
    cuts = np.split(rng.permutation(len(y)), np.sort(rng.choice(len(y), 12, replace=False)))
    _check(y, p, cuts)
    _check(y, np.round(p, 2), cuts, n_bins=15)


def test_state_checks_its_inputs():
    with pytest.raises(ValueError, match="no predictions"):
        MetricState().brier_score()
    with pytest.raises(ValueError, match="n_bins"):
        MetricState(10).merge(MetricState(5))
    assert np.isnan(MetricState().update([1, 1], [0.2, 0.3]).auroc())
