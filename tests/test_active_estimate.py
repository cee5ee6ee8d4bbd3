"""The Label page's ECE estimate at few labels (issue 26, item 3): corrected for the noise of the labels, its 90%
interval holds the truth of synthetic confidences with a known answer; the plain ECE's does not."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.calibration.label_estimate import Estimate, binned_ece, estimate, stop_suggestion, weighted_metrics
from htc_core.calibration.metrics import bin_predictions, expected_calibration_error


def _draws(n_labels: int, shift: float, draws: int = 200, seed: int = 0):
    """``draws`` label sets of ``n_labels`` runs: confidences spread over (0.05, 0.95), outcomes drawn at the
    confidence minus ``shift`` (0: perfectly calibrated), with the true ECE of each set (mean |p - q|)."""
    rng = np.random.default_rng(seed)
    for d in range(draws):
        p = rng.uniform(0.05, 0.95, n_labels)
        q = np.clip(p - shift, 0.0, 1.0)
        yield d, (rng.random(n_labels) < q).astype(float), p, float(np.mean(np.abs(p - q)))


def test_calibrated_confidences_interval_covers_zero_at_30_labels():
    """A perfectly calibrated model: the corrected interval covers 0 in >= 85% of 200 draws of 30 labels; the plain
    ECE (about 0.18 on 30 runs) never does, and its point estimate is far above the corrected one."""
    covered = plain_covered = 0
    points, plain_points = [], []
    for d, y, p, _ in _draws(30, 0.0):
        est = estimate(y, p, n_boot=100, random_state=d)
        plain = estimate(y, p, n_boot=100, random_state=d, debias=False)
        covered += est.ece_low <= 1e-12
        plain_covered += plain.ece_low <= 1e-12
        points.append(est.ece)
        plain_points.append(plain.ece)
    assert covered >= 0.85 * 200
    assert plain_covered <= 0.05 * 200
    assert np.mean(plain_points) > 0.15 and np.mean(points) < 0.6 * np.mean(plain_points)


def test_shift_of_0_2_is_detected_and_covered():
    """Outcomes 0.2 below the confidences: the corrected interval still holds the true ECE in >= 85% of draws at 30
    labels, its estimate is far above a calibrated model's, and at 100 labels its lower end is above 0 in most draws."""
    covered, points = 0, []
    for d, y, p, true in _draws(30, 0.2):
        est = estimate(y, p, n_boot=100, random_state=d)
        covered += est.ece_low <= true <= est.ece_high
        points.append(est.ece)
    calibrated = [estimate(y, p, n_boot=100, random_state=d).ece for d, y, p, _ in _draws(30, 0.0, draws=100, seed=1)]
    assert covered >= 0.85 * 200
    assert np.mean(points) > np.mean(calibrated) + 0.04
    above = [estimate(y, p, n_boot=100, random_state=d).ece_low > 0 for d, y, p, _ in _draws(100, 0.2, draws=60)]
    assert np.mean(above) >= 0.6


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 60), st.integers(0, 10_000))
def test_binned_ece_is_the_metrics_ece(n, seed):
    """The vectorized ECE behind the estimate is HTC's ECE (and the weighted one) on any input."""
    rng = np.random.default_rng(seed)
    y, p, w = (rng.random(n) < 0.5).astype(float), rng.random(n), rng.uniform(0.1, 5.0, n)
    b = bin_predictions(y, p).bin_ids
    assert float(binned_ece(y, p, np.ones(n), b)) == pytest.approx(expected_calibration_error(y, p))
    assert float(binned_ece(y, p, w, b)) == pytest.approx(weighted_metrics(y, p, w)[0])
    rows = binned_ece(np.stack([y, 1 - y]), p, np.ones(n), b)
    assert rows.shape == (2,) and rows[1] == pytest.approx(expected_calibration_error(1 - y, p))
    assert float(binned_ece(y, p, np.ones(n), b, per_bin_debias=True)) <= float(binned_ece(y, p, np.ones(n), b)) + 1e-12


def test_plain_estimate_is_the_plain_ece_and_the_kind_is_named():
    rng = np.random.default_rng(3)
    y, p = (rng.random(40) < 0.5).astype(float), rng.random(40)
    plain = estimate(y, p, n_boot=50, debias=False)
    est = estimate(y, p, n_boot=50)
    assert plain.ece == pytest.approx(expected_calibration_error(y, p)) and not plain.debiased
    assert est.debiased and est.to_dict()["debiased"] is True and est.ece < plain.ece
    assert est.ece_low <= est.ece <= est.ece_high
    assert "corrected for the noise of 40 labels" in stop_suggestion(est, width=1.0)
    assert "plain ECE" in stop_suggestion(plain, width=1.0)
    assert estimate(y, p, n_boot=50).to_dict() == estimate(y, p, n_boot=50).to_dict()   # seeded
    with pytest.raises(ValueError, match="n_sim"):
        estimate(y, p, n_sim=0)


def test_estimate_of_one_label_is_undefined():
    est = estimate(np.array([1.0, np.nan]), np.array([0.7, np.nan]))
    assert est.n == 1 and np.isnan(est.ece) and isinstance(est, Estimate) and est.debiased
