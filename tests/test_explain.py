"""Explanations, examples and evaluation views (htc_core.explain)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from htc_core import explain
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.confidence import token_confidence
from htc_core.calibration.evaluation import evaluate
from htc_core.features import FEATURE_NAMES, REGISTRY, build_context, extract
from htc_core.formats import load
from htc_core.calibration.metrics import expected_calibration_error


@pytest.fixture(scope="module")
def uala(uala_run_a):
    ts, _ = load(uala_run_a)
    ts = ts.take(np.arange(200))
    fm = extract(ts)
    model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    return ts, fm, model


def test_percentile_and_words():
    ref = np.arange(100, dtype=float)
    assert explain.percentile_of(-1, ref) == 0.0
    assert explain.percentile_of(50, ref) == pytest.approx(50.5)
    assert math.isnan(explain.percentile_of(1.0, np.array([])))
    assert [explain.describe_position(p) for p in (1, 10, 50, 80, 99)] == \
        ["far below", "below", "close to", "above", "far above"]


def test_contributions_sum_to_the_models_logit(uala):
    ts, fm, model = uala
    for i in (0, 17, 150):
        e = explain.explain_trajectory(model, fm, i, labels=ts.labels, ids=ts.ids)
        assert e.intercept + e.table["contribution"].sum() == pytest.approx(model.decision_function(fm.values[i:i + 1])[0])
        assert e.confidence == pytest.approx(model.predict_proba(fm.values[i:i + 1])[0, 1])
        assert len(e.table) == 48
        mags = e.table["contribution"].abs().to_numpy()
        assert np.all(mags[:-1] >= mags[1:])
        assert e.id == ts.ids[i]
        row = e.table.set_index("feature").loc["last_top1_avg"]
        assert row["contribution"] == pytest.approx(row["weight"] * row["z"])
        assert row["formula"] == REGISTRY["last_top1_avg"].formula


def test_reasons_compare_with_successful_runs(uala):
    ts, fm, model = uala
    contrib = model.contributions(fm.values)
    i = int(np.unravel_index(np.argmin(contrib), contrib.shape)[0])   # holds the strongest push down anywhere
    j = int(np.argmax(np.abs(contrib[i])))
    e = explain.explain_trajectory(model, fm, i, labels=ts.labels, groups=ts.meta["dataset"])
    top = e.table.iloc[0]
    assert top["feature"] == FEATURE_NAMES[j]
    succ = fm.values[ts.labels == 1, j]
    assert top["success_percentile"] == pytest.approx(explain.percentile_of(fm.values[i, j], succ))
    first = e.reasons[0]
    assert REGISTRY[FEATURE_NAMES[j]].display_name in first
    assert f"{top['position']} typical successful runs of HotpotQA" in first
    assert ("lowers the confidence" if contrib[i, j] < 0 else "raises the confidence") in first
    assert e.summary.startswith(f"Calibrated confidence {e.confidence:.2f}")
    with pytest.raises(ValueError, match="index"):
        explain.explain_trajectory(model, fm, 10_000)


def test_reason_wording_on_a_hand_made_model():
    # one feature matters; successful runs have values 1..10, the trajectory has -5: far below
    X = np.zeros((21, 48))
    X[:10, 31] = np.arange(1, 11)
    X[10:20, 31] = np.arange(-9, 1)
    X[20, 31] = -5.0
    y = np.r_[np.ones(10), np.zeros(10), np.nan]
    model = SimpleNamespace(coef_=np.zeros((1, 48)), intercept_=np.array([0.2]), mean_=np.zeros(48),
                            scale_=np.ones(48), feature_names_in_=np.array(FEATURE_NAMES, dtype=object),
                            variant="reduced")
    model.coef_[0, 31] = 0.5
    model.contributions = lambda A: ((A - model.mean_) / model.scale_) * model.coef_[0]
    e = explain.explain_trajectory(model, X, 20, labels=y)
    assert e.logit == pytest.approx(0.2 - 2.5)
    assert e.reasons == ["Last step top1 avg is far below typical successful runs (0th percentile of 10); "
                         "this lowers the confidence (logit -2.50)."]


def test_confidence_examples():
    meta = pd.DataFrame({"id": list("abcdef"), "dataset": ["D"] * 6, "model": ["m"] * 6, "question": list("QQQQQQ"),
                         "answer": list("AAAAAA"), "gold": list("GGGGGG")})
    y = np.array([0, 0, 1, 1, 0, 1])
    base = np.array([0.9, 0.6, 0.2, 0.5, 0.3, 0.9])
    htc = np.array([0.2, 0.5, 0.8, 0.55, 0.6, 0.5])
    ex = explain.confidence_examples(meta, y, base, htc, baseline="B", htc="H", n=5)
    assert list(ex.over["id"]) == ["a", "b"]            # failures HTC lowered, biggest drop first
    assert list(ex.under["id"]) == ["c", "d"]           # successes HTC raised, biggest rise first
    assert ex.over["change"].iloc[0] == pytest.approx(-0.7)
    assert list(ex.over["position"]) == [0, 1]
    assert len(explain.confidence_examples(meta, y, base, htc, baseline="B", htc="H", n=1).over) == 1
    with pytest.raises(ValueError, match="one entry per trajectory"):
        explain.confidence_examples(meta, y[:3], base, htc, baseline="B", htc="H")


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


def test_step_timeline_and_tokens(uala):
    ts, _, _ = uala
    i = int(np.argmax(ts.steps_per_trajectory))
    tl = explain.step_timeline(ts, i)
    ctx = build_context(ts.take([i]))
    assert len(tl) == ts.steps_per_trajectory[i] and list(tl["step"]) == list(range(1, len(tl) + 1))
    assert np.allclose(tl["top1_confidence"], ctx.steps.top1) and np.allclose(tl["entropy"], ctx.steps.entropy)
    steps = explain.token_steps(ts, i)
    one = ts.take([i])
    r = token_confidence(one.logprob, one.top_logprobs).r
    assert sum(len(s.tokens) for s in steps) == one.n_tokens
    assert np.allclose(np.concatenate([s.probability for s in steps]), r)
    assert steps[0].tokens == [str(t) for t in one.tokens[: one.step_offsets[1]]]
    short = explain.token_steps(ts, i, max_tokens=5)
    assert sum(len(s.tokens) for s in short) == 5


def test_weight_views(uala):
    ts, fm, model = uala
    wf = explain.weights_frame({"HTC-Full": model})
    assert len(wf) == 48 and set(wf["family"]) == {"Dynamics", "Position", "Stability", "Structure"}
    assert np.allclose(wf["weight"], model.coef_[0])
    counts = pd.Series(np.r_[np.full(10, 15), np.zeros(38, dtype=int)], index=list(FEATURE_NAMES))
    fake = SimpleNamespace(seeds=[42, 43, 44], n_splits=5, selected_counts={"HTC-Reduced": counts})
    sf = explain.selection_frequency(fake)
    assert sf["fits"].iloc[0] == 15 and sf["frequency"].max() == 1.0 and sf["frequency"].min() == 0.0
    groups = np.where(np.arange(len(ts)) < 150, "big", "small")
    y = ts.labels.copy()
    y[150:] = 1.0                                  # 'small' has one outcome only
    dw = explain.dataset_weights(fm, y, groups, variant="full", alphas=(1.0,))
    assert list(dw.weights.index) == ["big"] and dw.weights.shape == (1, 48)
    assert "small" in dw.skipped and "at least 5" in dw.skipped["small"]


def test_metric_tables(uala):
    ts, fm, _ = uala
    res = evaluate(ts.take(np.arange(120)), seeds=2, alphas=(1.0,), methods=["HTC-Full", "GlobalTrace-TP"])
    mf = explain.metrics_frame(res)
    assert list(mf["method"]) == ["HTC-Full", "GlobalTrace-TP"]
    row = mf.iloc[0]
    assert row["ECE ↓"] == f"{res.summary['HTC-Full']['ece']['mean']:.3f} ± {res.summary['HTC-Full']['ece']['std']:.3f}"
    ml = explain.metrics_long(res)
    assert len(ml) == 6 and set(ml["metric"]) == {"ECE", "Brier", "AUROC"}
    om = explain.overall_metrics(res.labels, {"a": res.oof["HTC-Full"]})
    assert om["ece"].iloc[0] == pytest.approx(res.summary["HTC-Full"]["ece"]["mean"], abs=0.2)
    fv = explain.feature_values(fm, ts.meta["model"], ts.labels, "last_top1_avg")
    assert np.array_equal(fv["value"], fm.column("last_top1_avg"))
    with pytest.raises(ValueError, match="valid features"):
        explain.feature_values(fm, ts.meta["model"], ts.labels, "nope")
