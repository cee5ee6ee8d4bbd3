from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from htc_core.calibration.baselines import (TemperatureScaling, baseline_confidences, bottom10, global_trace_tp, last_step_tp,
                                lowest_group, tail)
from htc_core.traces import TraceSet

RUN_A = Path(__file__).resolve().parents[2] / "shared/data/uala-hotpotqa/hotpotqa_llama2-70b_run-a.jsonl"


@pytest.fixture(scope="module")
def real_ts():
    if not RUN_A.exists():
        pytest.skip(f"real data not found at {RUN_A}")
    from htc_core.formats import load

    return load([str(RUN_A)])[0]


def _synthetic(seed=0, n=40):
    rng = np.random.default_rng(seed)
    steps = rng.integers(1, 5, size=n)
    toks = rng.integers(1, 60, size=steps.sum())
    lp = np.log(rng.uniform(0.05, 1.0, size=toks.sum()))
    meta = pd.DataFrame({"id": [f"t{i}" for i in range(n)], "success": pd.array(rng.random(n) < 0.5, dtype="boolean")})
    from htc_core.traces import empty_meta

    m = empty_meta(n)
    m["id"] = meta["id"]
    m["success"] = meta["success"]
    return TraceSet(logprob=lp, top_logprobs=np.zeros((len(lp), 0)),
                    step_offsets=np.concatenate([[0], np.cumsum(toks)]),
                    traj_offsets=np.concatenate([[0], np.cumsum(steps)]), meta=m)


def _loop_oracle(ts):
    """Plain per-trajectory loop, written independently of the vectorized code."""
    out = {k: [] for k in ("LastStep-TP", "GlobalTrace-TP", "Bottom10", "LowestGroup", "Tail")}
    for i in range(ts.n_trajectories):
        steps = [np.exp(ts.logprob[ts.step_offsets[s]:ts.step_offsets[s + 1]])
                 for s in range(ts.traj_offsets[i], ts.traj_offsets[i + 1])]
        r = np.concatenate(steps)
        out["LastStep-TP"].append(sum(steps[-1]) / len(steps[-1]))
        out["GlobalTrace-TP"].append(sum(r) / len(r))
        k = max(1, int(len(r) * 0.1))
        out["Bottom10"].append(sum(sorted(r)[:k]) / k)
        if len(r) < 16:
            out["LowestGroup"].append(sum(r) / len(r))
        else:
            out["LowestGroup"].append(min(sum(r[j:j + 16]) / 16 for j in range(len(r) - 15)))
        last = r[-32:]
        out["Tail"].append(sum(last) / len(last))
    return pd.DataFrame(out)


def test_baselines_match_loop_oracle_synthetic():
    ts = _synthetic()
    got = baseline_confidences(ts)
    exp = _loop_oracle(ts)
    for c in exp:
        np.testing.assert_allclose(got[c].to_numpy(), exp[c].to_numpy(), rtol=1e-12, atol=1e-12, err_msg=c)


def test_baselines_match_loop_oracle_real(real_ts):
    got = baseline_confidences(real_ts)
    exp = _loop_oracle(real_ts)
    assert "Verbalized" not in got     # run-a carries no verbalized confidence
    for c in exp:
        np.testing.assert_allclose(got[c].to_numpy(), exp[c].to_numpy(), rtol=1e-12, atol=1e-12, err_msg=c)


def test_subsets_are_order_equivariant():
    ts = _synthetic(3)
    idx = np.random.default_rng(1).permutation(len(ts))
    full = baseline_confidences(ts)
    part = baseline_confidences(ts.take(idx))
    np.testing.assert_allclose(part.to_numpy(), full.to_numpy()[idx], rtol=1e-12)


def test_individual_functions_and_edge_lengths():
    # one trajectory of exactly 16 tokens, one of 10 and one of 40
    r = np.linspace(0.1, 0.9, 66)
    from htc_core.traces import empty_meta

    ts = TraceSet(logprob=np.log(r), top_logprobs=np.zeros((66, 0)), step_offsets=np.array([0, 16, 26, 46, 66]),
                  traj_offsets=np.array([0, 1, 2, 4]), meta=empty_meta(3))
    np.testing.assert_allclose(lowest_group(ts)[:2], [r[:16].mean(), r[16:26].mean()])
    np.testing.assert_allclose(tail(ts)[2], r[34:66].mean())
    np.testing.assert_allclose(bottom10(ts)[2], r[26:30].mean())       # 10% of 40 = 4 tokens
    np.testing.assert_allclose(last_step_tp(ts)[2], r[46:66].mean())
    np.testing.assert_allclose(global_trace_tp(ts)[1], r[16:26].mean())


def test_temperature_scaling_matches_bounded_scalar_optimum():
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(0)
    c = rng.uniform(0.05, 0.95, 300)
    y = (rng.random(300) < c ** 2).astype(float)
    ts = TemperatureScaling().fit(c, y)
    z = np.log(c / (1 - c))
    res = minimize_scalar(lambda T: np.mean(np.logaddexp(0, -(2 * y - 1) * z / T)), bounds=(0.01, 100),
                          method="bounded", options={"xatol": 1e-10})
    assert ts.temperature_ == pytest.approx(res.x, rel=1e-5)
    p = ts.predict_proba(c)
    assert p.shape == (300, 2) and np.allclose(p.sum(1), 1)
    # monotone: ranking preserved
    assert np.all(np.diff(ts.transform(np.sort(c))) >= 0)


def test_temperature_scaling_flattens_useless_overconfidence_but_keeps_ranking():
    c = np.linspace(0.85, 0.99, 100)
    y = np.r_[np.zeros(70), np.ones(30)]
    ts = TemperatureScaling().fit(c, y)
    assert ts.temperature_ == pytest.approx(100.0)      # upper bound reached
    p = ts.transform(c)
    assert np.all(np.diff(p) > 0) and abs(p.mean() - 0.5) < 0.02


def test_temperature_scaling_rejects_bad_input():
    with pytest.raises(ValueError, match="in \\[0, 1\\], got 1.5"):
        TemperatureScaling().fit([0.2, 1.5], [0, 1])
    with pytest.raises(ValueError, match="not fitted"):
        TemperatureScaling().transform([0.5])


# ------------------------------------------------------------ Platt scaling ("+Platt")
def test_platt_recovers_slope_and_intercept():
    from htc_core.calibration.baselines import PlattScaling

    rng = np.random.default_rng(0)
    z = rng.normal(0.0, 2.0, 20000)
    y = (rng.random(len(z)) < 1 / (1 + np.exp(-(0.7 * z - 1.2)))).astype(float)
    c = 1 / (1 + np.exp(-z))
    t = PlattScaling().fit(c, y)
    assert t.slope_ == pytest.approx(0.7, abs=0.05) and t.intercept_ == pytest.approx(-1.2, abs=0.05)
    assert t.temperature_ == pytest.approx(1 / t.slope_)
    np.testing.assert_allclose(t.predict_proba(c)[:, 1], t.transform(c))


def test_platt_moves_an_overconfident_signal_to_the_success_rate_where_temperature_cannot():
    """The issue's straw man: a mean-probability signal near 0.9 for every run, 40% successes.
    Temperature scaling (no intercept) can only flatten it toward 0.5; Platt reaches the base rate."""
    from htc_core.calibration.baselines import PlattScaling, TemperatureScaling

    rng = np.random.default_rng(1)
    y = (rng.random(3000) < 0.4).astype(float)
    c = np.clip(0.9 + 0.02 * y + rng.normal(0, 0.02, len(y)), 0, 1)
    temp = TemperatureScaling().fit(c, y).transform(c)
    platt = PlattScaling().fit(c, y).transform(c)
    assert temp.mean() > 0.48
    assert platt.mean() == pytest.approx(y.mean(), abs=0.01)
    brier = lambda p: float(np.mean((p - y) ** 2))  # noqa: E731
    assert brier(platt) < brier(temp) - 0.01


def test_platt_stays_finite_on_one_outcome_or_separable_rows():
    from htc_core.calibration.baselines import PlattScaling

    c = np.linspace(0.1, 0.9, 50)
    for y in (np.ones(50), np.zeros(50), (c > 0.5).astype(float)):
        t = PlattScaling().fit(c, y)
        p = t.transform(c)
        assert np.isfinite([t.slope_, t.intercept_]).all() and np.all((p >= 0) & (p <= 1))
    assert PlattScaling().fit(c, np.ones(50)).transform(c).min() > 0.9


def test_platt_validates_like_temperature_scaling():
    from htc_core.calibration.baselines import PlattScaling

    with pytest.raises(ValueError, match="not fitted"):
        PlattScaling().transform([0.5])
    with pytest.raises(ValueError, match="ridge"):
        PlattScaling(ridge=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        PlattScaling().fit([0.5, 1.5], [0, 1])
    with pytest.raises(ValueError, match="one label per confidence"):
        PlattScaling().fit([0.5, 0.6], [0, 1, 1])
    with pytest.raises(ValueError, match="finite"):
        PlattScaling().fit([0.5, np.nan], [0, 1])


def test_isotonic_rows_only_with_enough_training_runs_on_real_sample_runs():
    """On the 2,000 sample runs every training fold has 1,600 runs: +Iso is evaluated, fitted on training
    folds only (its OOF confidence differs from an in-sample isotonic fit), and monotone in the signal."""
    from pathlib import Path

    from htc_core.calibration.evaluation import evaluate
    from htc_core.formats import load

    ts, _ = load(str(Path(__file__).resolve().parents[1] / "sample_runs"))
    ts = ts.labeled()
    r = evaluate(ts, seeds=1, methods=["Bottom10", "Bottom10+Iso", "Bottom10+Platt", "Bottom10+Temp"])
    assert r.methods == ["Bottom10", "Bottom10+Temp", "Bottom10+Platt", "Bottom10+Iso"] and not r.skipped
    raw, iso = r.oof["Bottom10"], r.oof["Bottom10+Iso"]
    for f in range(5):                                   # monotone within each fold's fit
        m = r.folds[0] == f
        order = np.argsort(raw[m], kind="stable")
        assert np.all(np.diff(iso[m][order]) >= -1e-12)
    assert r.summary["Bottom10+Platt"]["brier"]["mean"] <= r.summary["Bottom10+Temp"]["brier"]["mean"]
    assert r.strongest_baseline() in {"Bottom10+Iso", "Bottom10+Platt"}


@pytest.mark.parametrize("scaler", ["TemperatureScaling", "PlattScaling"])
def test_both_scalings_check_their_inputs_alike(scaler):
    """Temperature and Platt scaling share one check of (confidence, y): the same messages for the same faults."""
    from htc_core.calibration import baselines

    cls = getattr(baselines, scaler)
    with pytest.raises(ValueError, match=r"one label per confidence \(3\), got 2"):
        cls().fit([0.2, 0.5, 0.9], [0, 1])
    with pytest.raises(ValueError, match="only 0 and 1"):
        cls().fit([0.2, 0.5, 0.9], [0, 1, 2])
    with pytest.raises(ValueError, match="must be finite"):
        cls().fit([0.2, np.nan, 0.9], [0, 1, 1])
    with pytest.raises(ValueError, match=r"in \[0, 1\], got 1.5"):
        cls().fit([0.2, 1.5, 0.9], [0, 1, 1])
