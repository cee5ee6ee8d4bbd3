"""A/B comparison maths (htc_core.calibration.comparison): against the metrics module and plain loops, on the
project's own sample runs (greedy vs sampled decoding of the same tasks) and on small hand-made inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from htc_core.calibration.baselines import baseline_confidences
from htc_core.calibration.comparison import (compare_metrics, compare_run_sets, feature_shift, flipped_verdicts,
                                             pairing_keys)
from htc_core.calibration.metrics import auroc, brier_score, expected_calibration_error
from htc_core.features import FEATURE_NAMES, REGISTRY, extract
from htc_core.formats import load

from conftest import REPO

FACTS = REPO / "sample_runs" / "facts"


@pytest.fixture(scope="module")
def two_configs():
    """The facts runs of SmolLM2-135M under greedy and sampled (t=0.7) decoding, with features; the
    confidence of a run is its GlobalTrace mean token probability (a real signal, no fit needed)."""
    out = {}
    for tag in ("greedy", "sampled-t0.7"):
        ts, _ = load(FACTS / f"facts_SmolLM2-135M-{tag}.jsonl")
        fm = extract(ts)
        conf = baseline_confidences(ts)["GlobalTrace-TP"].to_numpy(dtype=np.float64)
        out[tag] = (ts, fm.values, conf)
    return out


def test_metrics_match_the_metrics_module_and_intervals_cover(two_configs):
    (ts_a, _, p_a), (ts_b, _, p_b) = two_configs["greedy"], two_configs["sampled-t0.7"]
    cmp = compare_metrics(ts_a.labels, p_a, ts_b.labels, p_b, n_boot=200, random_state=1)
    f = cmp.to_frame().set_index("metric")
    for side, y, p in (("a", ts_a.labels, p_a), ("b", ts_b.labels, p_b)):
        assert f.loc["ece", side] == pytest.approx(expected_calibration_error(y, p))
        assert f.loc["brier", side] == pytest.approx(brier_score(y, p))
        assert f.loc["auroc", side] == pytest.approx(auroc(y, p))
        assert f.loc["accuracy", side] == pytest.approx(np.mean((p >= 0.5) == (y == 1)))
        assert f.loc["success_rate", side] == pytest.approx(np.mean(y))
    for m in f.index:
        assert f.loc[m, "a_low"] <= f.loc[m, "a"] + 0.02 and f.loc[m, "a"] - 0.02 <= f.loc[m, "a_high"]
        assert f.loc[m, "diff"] == pytest.approx(f.loc[m, "b"] - f.loc[m, "a"])
        assert f.loc[m, "diff_low"] < f.loc[m, "diff_high"]
    assert (f["n_a"] == 250).all() and (f["n_b"] == 250).all()
    # equal-mass bins give the metrics module's quantile ECE
    q = compare_metrics(ts_a.labels, p_a, ts_b.labels, p_b, strategy="quantile", n_boot=20)
    assert q.frame.set_index("metric").loc["ece", "a"] == pytest.approx(
        expected_calibration_error(ts_a.labels, p_a, strategy="quantile"))


def test_bootstrap_of_the_difference_against_a_plain_loop():
    rng = np.random.default_rng(3)
    pa, pb = rng.uniform(size=80), rng.uniform(size=60)
    ya, yb = (rng.uniform(size=80) < pa).astype(float), (rng.uniform(size=60) < 0.5).astype(float)
    got = compare_metrics(ya, pa, yb, pb, n_boot=50, random_state=7).frame.set_index("metric").loc["brier"]
    r = np.random.default_rng(7)
    ia, ib = r.integers(0, 80, size=(50, 80)), r.integers(0, 60, size=(50, 60))
    diffs = [brier_score(yb[j], pb[j]) - brier_score(ya[i], pa[i]) for i, j in zip(ia, ib)]
    assert got["diff_low"] == pytest.approx(np.quantile(diffs, 0.025))
    assert got["diff_high"] == pytest.approx(np.quantile(diffs, 0.975))


def test_paired_mode_resamples_the_runs_once():
    rng = np.random.default_rng(0)
    y = (rng.uniform(size=200) < 0.5).astype(float)
    p = np.clip(y * 0.3 + rng.uniform(size=200) * 0.7, 0, 1)   # overlapping: no metric is at its bound
    same = compare_metrics(y, p, y, p, paired=True, n_boot=100).frame
    assert np.allclose(same[["diff", "diff_low", "diff_high"]].to_numpy(), 0.0)   # identical sides: exactly 0
    indep = compare_metrics(y, p, y, p, paired=False, n_boot=100).frame
    assert (indep["diff_high"] - indep["diff_low"] > 0).all()
    with pytest.raises(ValueError, match="same length"):
        compare_metrics(y, p, y[:10], p[:10], paired=True)


def test_bad_inputs_name_the_argument():
    y, p = np.array([0.0, 1.0, 1.0]), np.array([0.2, 0.8, 0.6])
    with pytest.raises(ValueError, match="n_boot"):
        compare_metrics(y, p, y, p, n_boot=3)
    with pytest.raises(ValueError, match="strategy"):
        compare_metrics(y, p, y, p, strategy="kmeans")
    with pytest.raises(ValueError, match="threshold"):
        compare_metrics(y, p, y, p, threshold=1.0)
    with pytest.raises(ValueError, match="side B"):
        compare_metrics(y, p, [np.nan], [0.5])
    with pytest.raises(ValueError, match="confidences of side A"):
        compare_metrics(y, p * 2, y, p)


def test_feature_shift_is_cohens_d_ranked(two_configs):
    (_, Xa, _), (_, Xb, _) = two_configs["greedy"], two_configs["sampled-t0.7"]
    sh = feature_shift(Xa, Xb).to_frame()
    assert len(sh) == 48 and set(sh["feature"]) == set(FEATURE_NAMES)
    j = FEATURE_NAMES.index(sh.loc[0, "feature"])
    a, b = Xa[:, j], Xb[:, j]
    d = (b.mean() - a.mean()) / np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    assert sh.loc[0, "smd"] == pytest.approx(d)
    assert sh.loc[0, "code"] == REGISTRY[sh.loc[0, "feature"]].code
    finite = sh["abs_smd"].dropna().to_numpy()
    assert np.all(np.diff(finite) <= 0)
    # sampling at t=0.7 changes the token probabilities: some feature shifts by more than a small effect (0.2)
    assert finite[0] > 0.2
    with pytest.raises(ValueError, match="at least 2 runs"):
        feature_shift(Xa[:1], Xb)


def test_pairing_by_task(two_configs):
    (ts_a, _, p_a), (ts_b, _, p_b) = two_configs["greedy"], two_configs["sampled-t0.7"]
    ka, kb = pairing_keys(ts_a.meta), pairing_keys(ts_b.meta)
    # the sample runs' ids are <task>-<model>: facts-0007 under greedy pairs with facts-0007 under sampling
    assert ka[7] == kb[7] == "task:facts\x1ffacts-0007"
    pairs, counts = flipped_verdicts(ka, p_a, ts_a.labels, kb, p_b, ts_b.labels)
    assert counts["paired"] == len(pairs) == 250 and counts["unpaired_a"] == counts["unpaired_b"] == 0
    qa, qb = ts_a.meta["question"].to_numpy(), ts_b.meta["question"].to_numpy()
    assert all(qa[r.pos_a] == qb[r.pos_b] for r in pairs.itertuples())      # same task, same question
    flips = int(np.sum((p_a >= 0.5) != (p_b >= 0.5)))                       # a plain count: row i is task i
    assert counts["flipped"] == flips == int(pairs["flipped"].sum())
    assert pairs["flipped"].iloc[:flips].all() and not pairs["flipped"].iloc[flips:].any()   # flipped first


def test_pairing_rules_and_ambiguous_keys():
    meta = pd.DataFrame({"dataset": ["d"] * 5, "model": ["m1", "m1", None, None, None],
                         "id": ["t1-m1", "t2-m1", None, None, "same-id"],
                         "question": ["q", "q", "What  is X?", None, "z"],
                         "metadata": [None, '{"task_id": "T9"}', None, None, None]})
    k = pairing_keys(meta)
    assert k[0] == "task:d\x1ft1" and k[1] == "task:d\x1fT9"
    assert k[2] == "question:d\x1fwhat is x?" and k[3] is None and k[4] == "task:d\x1fsame-id"
    # a key twice on one side is ambiguous: left unpaired, counted
    pairs, counts = flipped_verdicts(["a", "a", "b"], [0.9, 0.1, 0.7], [1, 0, 1], ["a", "b"], [0.2, 0.2], [0, 1])
    assert counts["paired"] == 1 and counts["ambiguous_a"] == 2 and counts["flipped"] == 1
    assert pairs.loc[0, "verdict_a"] == "trust" and pairs.loc[0, "verdict_b"] == "doubt"


def test_compare_run_sets_bundle(two_configs):
    (ts_a, Xa, p_a), (ts_b, Xb, p_b) = two_configs["greedy"], two_configs["sampled-t0.7"]
    cmp = compare_run_sets(ts_a.labels, p_a, ts_b.labels, p_b, name_a="greedy", name_b="sampled", X_a=Xa, X_b=Xb,
                           keys_a=pairing_keys(ts_a.meta), keys_b=pairing_keys(ts_b.meta), n_boot=50)
    assert set(cmp.curves) == {"greedy", "sampled"} and cmp.shifts is not None
    assert len(cmp.flipped) == cmp.counts["flipped"]
    d = cmp.to_dict()
    assert d["a"] == "greedy" and len(d["metrics"]["rows"]) == 5 and len(d["flipped"]) == cmp.counts["flipped"]
    paired = compare_run_sets(ts_a.labels, p_a, ts_a.labels, 1 - p_a, paired=True, n_boot=20)
    assert paired.counts["paired"] == 250 and paired.shifts is None
    with pytest.raises(ValueError, match="two different"):
        compare_run_sets(ts_a.labels, p_a, ts_b.labels, p_b, name_a="x", name_b="x")
