import warnings

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score

from htc_core.calibration.metrics import (UndefinedMetricWarning, auroc, bin_predictions, brier_score,
                              expected_calibration_error, reliability_curve, wilson_interval,
                              fast_auroc, fast_brier, fast_ece)


def _random(seed, n=300, ties=False):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    if ties:
        p = np.round(p, 1)
    y = (rng.random(n) < p).astype(float)
    return y, p


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ties", [False, True])
def test_brier_and_auroc_match_sklearn(seed, ties):
    y, p = _random(seed, ties=ties)
    assert brier_score(y, p) == pytest.approx(brier_score_loss(y, p), abs=1e-15)
    assert auroc(y, p) == pytest.approx(roc_auc_score(y, p), abs=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("seed", range(4))
def test_reliability_curve_matches_sklearn_calibration_curve(seed, strategy):
    y, p = _random(seed)
    c = reliability_curve(y, p, n_bins=10, strategy=strategy)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy=strategy)
    nz = c.count > 0
    np.testing.assert_allclose(c.accuracy[nz], prob_true, atol=1e-12)
    np.testing.assert_allclose(c.mean_confidence[nz], prob_pred, atol=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("seed", range(4))
def test_ece_equals_weighted_gap_of_reliability_curve(seed, strategy):
    y, p = _random(seed, ties=seed % 2 == 0)
    c = reliability_curve(y, p, n_bins=7, strategy=strategy)
    nz = c.count > 0
    weighted = np.sum(c.count[nz] / c.count.sum() * np.abs(c.accuracy[nz] - c.mean_confidence[nz]))
    ece = expected_calibration_error(y, p, n_bins=7, strategy=strategy)
    assert ece == pytest.approx(weighted, abs=1e-14)
    assert ece == pytest.approx(c.ece, abs=1e-14)


def test_hand_computed_fixture():
    y = [0, 1, 1, 0, 1]
    p = [0.1, 0.3, 0.35, 0.8, 0.95]
    # bins (10 equal): 0.1 -> bin 0 (edge 0.1 goes to the lower bin), 0.3 -> bin 2, 0.35 -> bin 3, 0.8 -> 7, 0.95 -> 9
    # |acc - conf| per bin: 0.1, 0.7, 0.65, 0.8, 0.05 ; ECE = mean = 2.3 / 5
    assert expected_calibration_error(y, p) == pytest.approx(0.46)
    assert brier_score(y, p) == pytest.approx((0.01 + 0.49 + 0.4225 + 0.64 + 0.0025) / 5)
    # pairs (pos, neg): 3 positives x 2 negatives; pos 0.3>0.1, 0.3<0.8, 0.35>0.1, 0.35<0.8, 0.95>both -> 4/6
    assert auroc(y, p) == pytest.approx(4 / 6)
    b = bin_predictions(y, p)
    assert b.bin_ids.tolist() == [0, 2, 3, 7, 9]


def test_auroc_ties_count_half():
    assert auroc([0, 1], [0.5, 0.5]) == 0.5
    assert auroc([0, 0, 1, 1], [0.2, 0.4, 0.4, 0.9]) == pytest.approx(0.875)


def test_auroc_one_class_warns_and_returns_nan():
    with pytest.warns(UndefinedMetricWarning, match="one class"):
        v = auroc([1, 1, 1], [0.2, 0.5, 0.9])
    assert np.isnan(v)


@pytest.mark.parametrize("y,p,match", [
    ([0, 1, 2], [0.1, 0.2, 0.3], "y_true must contain only 0 and 1, got 2.0"),
    ([0, 1], [0.1, 1.2], "y_prob must be probabilities in \\[0, 1\\], got 1.2"),
    ([0, 1], [0.1, np.nan], "y_prob must be probabilities"),
    ([0, 1], [0.1], "same length, got 2 and 1"),
    ([], [], "empty"),
    ([[0, 1], [1, 0]], [[0.1, 0.2], [0.3, 0.4]], "1-D"),
])
def test_input_validation_names_argument_and_value(y, p, match):
    for fn in (expected_calibration_error, brier_score, auroc, reliability_curve):
        with pytest.raises(ValueError, match=match):
            fn(y, p)


def test_option_validation():
    with pytest.raises(ValueError, match="n_bins must be a positive integer, got 0"):
        expected_calibration_error([0, 1], [0.2, 0.8], n_bins=0)
    with pytest.raises(ValueError, match="strategy must be one of .* got 'equal'"):
        expected_calibration_error([0, 1], [0.2, 0.8], strategy="equal")
    with pytest.raises(ValueError, match="interval must be one of"):
        reliability_curve([0, 1], [0.2, 0.8], interval="normal")


def test_wilson_interval_known_value():
    lo, hi = wilson_interval(np.array([5]), np.array([10]))
    assert lo[0] == pytest.approx(0.2366, abs=1e-4)
    assert hi[0] == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson_interval(np.array([0]), np.array([0]))
    assert np.isnan(lo[0]) and np.isnan(hi[0])


def test_reliability_curve_intervals_contain_accuracy():
    y, p = _random(3, n=400)
    for interval in ("wilson", "bootstrap"):
        c = reliability_curve(y, p, interval=interval, n_bootstrap=300)
        nz = c.count > 0
        assert np.all(c.lower[nz] <= c.accuracy[nz] + 1e-12)
        assert np.all(c.upper[nz] >= c.accuracy[nz] - 1e-12)
        assert np.all(np.isnan(c.lower[~nz]))
    c = reliability_curve(y, p, interval=None)
    assert np.isnan(c.lower).all()
    assert c.to_dict()["count"] == c.count.tolist()


def test_fast_versions_match_public_ones_rowwise():
    rng = np.random.default_rng(7)
    y = (rng.random(120) < 0.4).astype(float)
    P = np.round(rng.random((6, 120)), 2)
    for i in range(6):
        assert fast_ece(y, P)[i] == pytest.approx(expected_calibration_error(y, P[i]), abs=1e-14)
        assert fast_brier(y, P)[i] == pytest.approx(brier_score(y, P[i]), abs=1e-14)
        assert fast_auroc(y, P)[i] == pytest.approx(roc_auc_score(y, P[i]), abs=1e-12)
