"""Evaluation views by group and one calibrator per group (htc_core.explain.groups)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from htc_core import explain
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.metrics import expected_calibration_error
from htc_core.features import extract
from htc_core.formats import load


@pytest.fixture(scope="module")
def uala(uala_run_a):
    ts, _ = load(uala_run_a)
    ts = ts.take(np.arange(200))
    return ts, extract(ts)


def test_reliability_views_agree_with_the_metric():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(float)
    curves = explain.reliability_curves(y, {"m": p, "q": np.clip(p + 0.1, 0, 1)})
    assert curves["m"].ece == pytest.approx(expected_calibration_error(y, p))
    assert curves["m"].count.sum() == 300 and np.isfinite(curves["m"].lower[curves["m"].count > 0]).all()
    groups = np.where(np.arange(300) < 150, "A", "B")
    gm = explain.group_metrics(y, {"m": p}, groups)
    assert list(gm["group"]) == ["A", "B"] and list(gm["n"]) == [150, 150]
    assert gm["ece"].iloc[0] == pytest.approx(expected_calibration_error(y[:150], p[:150]))
    one = explain.group_metrics(np.ones(4), {"m": np.full(4, 0.5)}, ["A"] * 4)
    assert math.isnan(one["auroc"].iloc[0]) and "one outcome" in one["note"].iloc[0]
    gc = explain.group_curves(y, p, groups)
    assert set(gc) == {"A", "B"} and gc["A"].n == 150


def test_dataset_weights(uala):
    ts, fm = uala
    groups = np.where(np.arange(len(ts)) < 150, "big", "small")
    y = ts.labels.copy()
    y[150:] = 1.0                                  # 'small' has one outcome only
    dw = explain.dataset_weights(fm, y, groups, variant="full", alphas=(1.0,))
    assert list(dw.weights.index) == ["big"] and dw.weights.shape == (1, 48)
    assert "small" in dw.skipped and "at least 5" in dw.skipped["small"]
    big = (np.arange(len(ts)) < 150) & np.isfinite(y)
    alone = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm.values[big], y[big])
    assert np.allclose(dw.weights.loc["big"].to_numpy(), alone.coef_[0])


def test_reliability_curves_take_the_binning_strategy():
    """Equal-mass bins (strategy='quantile'): the same counts in every bin and the metrics module's ECE."""
    from htc_core.calibration.metrics import expected_calibration_error
    from htc_core.explain import reliability_curves

    rng = np.random.default_rng(0)
    p = rng.beta(5, 2, size=300)                         # skewed: equal-width bins would be very uneven
    y = (rng.uniform(size=300) < p).astype(float)
    mass = reliability_curves(y, {"m": p}, strategy="quantile")["m"]
    width = reliability_curves(y, {"m": p})["m"]
    assert mass.strategy == "quantile" and set(mass.count.tolist()) == {30}
    assert mass.ece == pytest.approx(expected_calibration_error(y, p, strategy="quantile"))
    assert width.ece == pytest.approx(expected_calibration_error(y, p)) and width.count.max() > 30
    with pytest.raises(ValueError, match="strategy"):
        reliability_curves(y, {"m": p}, strategy="kmeans")


def test_group_metrics_with_bootstrap_intervals():
    """n_boot > 0 adds the 95% bootstrap interval of each metric per group, around the group's value, from the
    same resamples a plain loop draws."""
    from htc_core.calibration.metrics import brier_score

    rng = np.random.default_rng(1)
    p = rng.uniform(size=240)
    y = (rng.uniform(size=240) < p).astype(float)
    groups = np.where(np.arange(240) < 120, "a", "b")
    gm = explain.group_metrics(y, {"m": p}, groups, n_boot=200, random_state=3)
    plain = explain.group_metrics(y, {"m": p}, groups)
    assert {"ece_low", "ece_high", "brier_low", "auroc_high"} <= set(gm.columns)
    assert gm[["ece", "brier", "auroc"]].equals(plain[["ece", "brier", "auroc"]])
    for met in ("ece", "brier", "auroc"):
        assert (gm[f"{met}_low"] < gm[f"{met}_high"]).all()
    ya, pa = y[:120], p[:120]
    idx = np.random.default_rng(3).integers(0, 120, size=(200, 120))
    boots = [brier_score(ya[i], pa[i]) for i in idx]
    assert gm.loc[0, "brier_low"] == pytest.approx(np.quantile(boots, 0.025))
    assert gm.loc[0, "brier_high"] == pytest.approx(np.quantile(boots, 0.975))


def test_group_metrics_methods_of_a_group_share_one_resample_with_the_per_method_intervals(monkeypatch):
    """One resample per group serves every method scored on its runs (paired_metric_intervals); with an int
    random_state the intervals are exactly the former per-method ones (metric_intervals once per group and
    method), also for a method missing on some runs (resampled on its own runs), a one-outcome group (AUROC
    undefined) and a group of one run."""
    from htc_core.calibration.comparison import metric_intervals, paired_metric_intervals

    rng = np.random.default_rng(7)
    n = 181
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(float)
    y[120:150] = 1.0                                             # group "c": one outcome only
    gaps = p.copy()
    gaps[::9] = np.nan                                           # a method scored on fewer runs
    preds = {"m": p, "sqrt": np.sqrt(p), "gaps": gaps}
    groups = np.array(["a"] * 60 + ["b"] * 60 + ["c"] * 30 + ["d"] * 30 + ["one"])
    from htc_core.calibration import comparison

    draws = []
    real = comparison.percentile_intervals
    monkeypatch.setattr(comparison, "percentile_intervals", lambda *a, **k: draws.append(a[1]) or real(*a, **k))
    gm = explain.group_metrics(y, preds, groups, n_boot=150, random_state=5)
    monkeypatch.undo()
    # per group one resample for "m" and "sqrt" (the same runs), one for "gaps"; "one": no "gaps"
    assert sorted(draws) == sorted([(60,), (53,), (60,), (53,), (30,), (27,), (30,), (27,), (1,)])
    assert len(gm) == 5 * 3 - 1                                 # "gaps" has no score for the run of "one"
    for _, row in gm.iterrows():
        mm = (groups == row["group"]) & np.isfinite(preds[row["method"]])
        iv = metric_intervals(y[mm], preds[row["method"]][mm], n_boot=150, random_state=5)
        for met in ("ece", "brier", "auroc"):
            assert (row[f"{met}_low"], row[f"{met}_high"]) == pytest.approx(iv[met][1:], nan_ok=True), \
                (row["group"], row["method"], met)
    m = groups == "a"
    both = paired_metric_intervals(y[m], {"m": p[m], "sqrt": np.sqrt(p[m])}, n_boot=150, random_state=5)
    assert both["sqrt"] == metric_intervals(y[m], np.sqrt(p[m]), n_boot=150, random_state=5)
    with pytest.raises(ValueError, match="at least one"):
        paired_metric_intervals(y, {})
    with pytest.raises(ValueError, match="side sqrt differ in length"):
        paired_metric_intervals(y, {"m": p, "sqrt": p[:10]})
