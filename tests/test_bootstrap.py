"""The one bootstrap engine (htc_core.calibration.bootstrap, over scipy.stats.bootstrap) against the engines it
replaced, on real runs: the project's sample runs (SmolLM2 facts, greedy vs sampled) and the UALA HotpotQA runs.

The old engines drew ``default_rng(seed).integers(0, n, (n_boot, n))`` (one matrix per side) and took the
percentile interval of the finite resampled values. scipy's bootstrap draws the same matrix from the same
generator, so the numbers must be *equal*, not merely close: the reference below is the old code's loop,
written here with the public metrics.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from htc_core.calibration.label_estimate import estimate
from htc_core.calibration.baselines import baseline_confidences
from htc_core.calibration.bootstrap import as_generator, check_resampling, percentile_intervals
from htc_core.calibration.comparison import COMPARED_METRICS, compare_metrics, metric_intervals
from htc_core.calibration.metrics import auroc, brier_score, expected_calibration_error, reliability_curve
from htc_core.calibration.selective import bootstrap_interval
from htc_core.formats import load

from conftest import REPO

FACTS = REPO / "sample_runs" / "facts"


def _confidences(path):
    ts, _ = load(path)
    p = baseline_confidences(ts)["GlobalTrace-TP"].to_numpy(dtype=np.float64)
    y = np.asarray(ts.labels, dtype=np.float64)
    ok = np.isfinite(y) & np.isfinite(p)
    return y[ok], p[ok]


@pytest.fixture(scope="module")
def facts():
    return [_confidences(FACTS / f"facts_SmolLM2-135M-{t}.jsonl") for t in ("greedy", "sampled-t0.7")]


@pytest.fixture(scope="module")
def hotpot(uala_dir):
    return [_confidences(uala_dir / f"hotpotqa_llama2-70b_run-{r}.jsonl") for r in ("a", "c")]


def _old_metric(name, y, p):
    return {"ece": lambda: expected_calibration_error(y, p), "brier": lambda: brier_score(y, p),
            "auroc": lambda: auroc(y, p), "accuracy": lambda: float(np.mean((p >= 0.5) == (y == 1))),
            "success_rate": lambda: float(np.mean(y))}[name]()


def _old_interval(values, level=0.95):
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return tuple(np.quantile(v, [(1 - level) / 2, 1 - (1 - level) / 2]))


@pytest.mark.parametrize("data", ["facts", "hotpot"])
@pytest.mark.parametrize("paired", [False, True])
def test_compare_metrics_equals_the_old_engine_on_real_runs(data, paired, request):
    (ya, pa), (yb, pb) = request.getfixturevalue(data)
    if paired:                      # two calibrators on the same runs: side B is a temperature-like squash
        yb, pb = ya, pa ** 2
    n_boot = 60
    got = compare_metrics(ya, pa, yb, pb, paired=paired, n_boot=n_boot, random_state=5).frame.set_index("metric")
    rng = np.random.default_rng(5)
    ia = rng.integers(0, ya.size, size=(n_boot, ya.size))
    ib = ia if paired else rng.integers(0, yb.size, size=(n_boot, yb.size))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in COMPARED_METRICS:
            a = [_old_metric(m, ya[i], pa[i]) for i in ia]
            b = [_old_metric(m, yb[j], pb[j]) for j in ib]
            assert (got.loc[m, "a_low"], got.loc[m, "a_high"]) == pytest.approx(_old_interval(a), abs=1e-12), m
            assert (got.loc[m, "b_low"], got.loc[m, "b_high"]) == pytest.approx(_old_interval(b), abs=1e-12), m
            d = np.subtract(b, a)
            assert (got.loc[m, "diff_low"], got.loc[m, "diff_high"]) == pytest.approx(_old_interval(d), abs=1e-12)


def test_metric_intervals_bootstrap_interval_and_estimate_equal_the_old_engines(hotpot):
    (y, p), _ = hotpot
    n_boot = 80
    idx = np.random.default_rng(0).integers(0, y.size, size=(n_boot, y.size))
    old_ece = _old_interval([expected_calibration_error(y[i], p[i]) for i in idx])
    old_auroc = _old_interval([auroc(y[i], p[i]) for i in idx])
    iv = metric_intervals(y, p, n_boot=n_boot, random_state=0)
    assert iv["ece"][1:] == pytest.approx(old_ece, abs=1e-12)
    assert iv["auroc"][1:] == pytest.approx(old_auroc, abs=1e-12)
    assert iv["ece"][0] == pytest.approx(expected_calibration_error(y, p))
    v, lo, hi = bootstrap_interval(expected_calibration_error, y, p, n_boot=n_boot, random_state=0)
    assert (lo, hi) == pytest.approx(old_ece, abs=1e-12)
    # the labeling estimate: level 0.9, seed 42 by default
    idx42 = np.random.default_rng(42).integers(0, y.size, size=(n_boot, y.size))
    est = estimate(y, p, n_boot=n_boot, debias=False)   # the plain ECE (the default corrects it)
    assert (est.ece_low, est.ece_high) == pytest.approx(
        _old_interval([expected_calibration_error(y[i], p[i]) for i in idx42], 0.9), abs=1e-12)
    assert (est.auroc_low, est.auroc_high) == pytest.approx(
        _old_interval([auroc(y[i], p[i]) for i in idx42], 0.9), abs=1e-12)


def test_reliability_bootstrap_band_equals_the_old_per_bin_percentiles(facts):
    (y, p), _ = facts
    curve = reliability_curve(y, p, n_bins=10, interval="bootstrap", n_bootstrap=100, random_state=42)
    idx = np.random.default_rng(42).integers(0, y.size, size=(100, y.size))
    bins = curve.bin_of(p)
    for b in np.flatnonzero(curve.count > 0):
        accs = [y[i][bins[i] == b].mean() if (bins[i] == b).any() else np.nan for i in idx]
        assert (curve.lower[b], curve.upper[b]) == pytest.approx(_old_interval(accs), abs=1e-12), b
    assert np.isnan(curve.lower[curve.count == 0]).all()


def test_new_random_states_stay_within_bootstrap_noise(hotpot):
    """Another seed moves an interval's bounds by the Monte-Carlo noise only: well under its width."""
    (ya, pa), (yb, pb) = hotpot
    f0 = compare_metrics(ya, pa, yb, pb, n_boot=1000, random_state=0).frame.set_index("metric")
    f1 = compare_metrics(ya, pa, yb, pb, n_boot=1000, random_state=1).frame.set_index("metric")
    width = f0["diff_high"] - f0["diff_low"]
    assert ((f0["diff_low"] - f1["diff_low"]).abs() < 0.15 * width).all()
    assert ((f0["diff_high"] - f1["diff_high"]).abs() < 0.15 * width).all()


def test_random_state_follows_scikit_learn():
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0] * 20)
    p = np.linspace(0.05, 0.95, 100)
    base = metric_intervals(y, p, n_boot=50, random_state=3)
    assert metric_intervals(y, p, n_boot=50, random_state=np.random.default_rng(3)) == base
    assert metric_intervals(y, p, n_boot=50, random_state=np.random.RandomState(3))["brier"][0] == base["brier"][0]
    assert np.isfinite(metric_intervals(y, p, n_boot=50, random_state=None)["brier"][1])
    with pytest.warns(FutureWarning, match="random_state"):
        assert metric_intervals(y, p, n_boot=50, seed=3) == base
    with pytest.raises(ValueError, match="random_state"):
        as_generator("three")
    for bad in (5, 2.5, True, "100"):
        with pytest.raises(ValueError, match="n_boot"):
            check_resampling(bad, 0.95)
    for bad in (0.0, 1.0, "0.9", True):
        with pytest.raises(ValueError, match="level"):
            check_resampling(100, bad)


def test_one_resample_serves_every_statistic():
    """Two statistics of the same resamples are perfectly coupled (the shared draw), and an undefined statistic
    (NaN on some resamples) gets the interval of the resamples where it is defined."""
    y = np.r_[np.ones(3), np.zeros(17)]
    seen = []

    def stat(i):
        seen.append(i.shape)
        mean = y[i].mean(axis=1)
        undefined = np.where(y[i].sum(axis=1) == 0, np.nan, mean)   # NaN when no success was drawn
        return np.stack([mean, 1 - mean, undefined])

    iv = percentile_intervals(stat, (y.size,), n_boot=400, level=0.9, random_state=1)
    assert seen == [(1, 20), (400, 20)]                     # once on the runs, once for all resamples
    assert np.allclose(iv.distribution[0] + iv.distribution[1], 1.0)
    assert iv.low[0] == pytest.approx(1 - iv.high[1]) and iv.high[0] == pytest.approx(1 - iv.low[1])
    assert np.isnan(iv.distribution[2]).any() and np.isfinite([iv.low[2], iv.high[2]]).all()
    assert iv.low[2] > 0


def test_a_sample_of_one_run_gets_its_degenerate_interval_not_an_error():
    """scipy's bootstrap refuses a sample of one; a group of one run (Compare LLMs after an upload of one run of a
    new model) must still get its metrics, with the interval every resample of one run gives."""
    import numpy as np

    from htc_core import explain
    from htc_core.calibration.bootstrap import percentile_intervals

    y = np.array([1.0])
    iv = percentile_intervals(lambda i: y[i].mean(axis=-1), (1,), n_boot=50)
    assert iv.value[0] == iv.low[0] == iv.high[0] == 1.0
    labels = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0], dtype=float)
    preds = {"a": np.linspace(0.2, 0.9, 11)}
    gm = explain.group_metrics(labels, preds, np.array(["big"] * 10 + ["one"]), n_boot=100)
    one = gm[gm["group"] == "one"].iloc[0]
    assert one["n"] == 1 and one["ece_low"] == one["ece_high"] == one["ece"]
    assert np.isnan(one["auroc"]) and np.isnan(one["auroc_low"])
