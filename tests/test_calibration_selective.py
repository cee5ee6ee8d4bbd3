"""Risk-coverage, ROC and bootstrap intervals (htc_core.calibration.selective), against plain loops and
scikit-learn on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from htc_core.calibration import auroc, bootstrap_interval, brier_score, risk_coverage_curve, roc_curve


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(size=n), 2)            # rounded: ties on purpose
    y = (rng.uniform(size=n) < p).astype(float)
    return y, p


def test_risk_coverage_matches_a_plain_loop():
    y, p = _data()
    rc = risk_coverage_curve(y, p)
    for t, cov, acc, kept in zip(rc.threshold, rc.coverage, rc.accuracy, rc.kept):
        keep = p >= t
        assert kept == keep.sum() and cov == pytest.approx(keep.mean()) and acc == pytest.approx(y[keep].mean())
    assert np.all(np.diff(rc.threshold) < 0) and rc.coverage[-1] == 1.0
    assert rc.accuracy[-1] == pytest.approx(y.mean()) == rc.base_rate
    assert rc.at_threshold(0.5) == (pytest.approx((p >= 0.5).mean()), pytest.approx(y[p >= 0.5].mean()),
                                    int((p >= 0.5).sum()))
    assert rc.at_threshold(1.01)[2] == 0
    t = rc.threshold_for_accuracy(0.8)
    assert y[p >= t].mean() >= 0.8
    assert len(rc.to_frame()) == len(rc.threshold)


def test_a_perfect_ranking_has_the_smallest_area():
    y = np.r_[np.ones(50), np.zeros(50)]
    good = risk_coverage_curve(y, np.r_[np.full(50, 0.9), np.full(50, 0.1)])
    bad = risk_coverage_curve(y, np.r_[np.full(50, 0.1), np.full(50, 0.9)])
    assert good.aurc < bad.aurc
    assert good.at_threshold(0.9) == (0.5, 1.0, 50)


def test_roc_curve_equals_scikit_learn_and_its_area_the_auroc():
    y, p = _data(1)
    ours = roc_curve(y, p)
    fpr, tpr, thr = sk_roc_curve(y, p, drop_intermediate=False)
    np.testing.assert_allclose(ours["fpr"], fpr)
    np.testing.assert_allclose(ours["tpr"], tpr)
    assert np.trapezoid(ours["tpr"], ours["fpr"]) == pytest.approx(roc_auc_score(y, p)) == pytest.approx(auroc(y, p))


def test_roc_with_one_class_is_nan_not_an_error():
    r = roc_curve(np.ones(5), np.linspace(0, 1, 5))
    assert r["fpr"].isna().all()


def test_bootstrap_interval_contains_the_value_and_is_reproducible():
    y, p = _data(2)
    v, lo, hi = bootstrap_interval(brier_score, y, p, n_boot=200, random_state=3)
    assert lo <= v <= hi and hi - lo < 0.1
    assert bootstrap_interval(brier_score, y, p, n_boot=200, random_state=3) == (v, lo, hi)
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_interval(brier_score, y, p, n_boot=5)
    with pytest.raises(ValueError, match="y_prob"):
        risk_coverage_curve(y, p + 2)
