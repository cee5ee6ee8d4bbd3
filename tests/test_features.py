"""The 48 features: registry, golden values, and agreement with the plain-loop oracle."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from conftest import LOG, PAPER, make_traj, write_jsonl
from htc_core.features import FAMILIES, FEATURE_NAMES, N_FEATURES, REGISTRY, extract, get_feature
from htc_core.formats import native
from htc_core.features.reference import features as oracle_features
from htc_core.features.reference import features_of_trajectory_dict

TOL = dict(rtol=1e-9, atol=1e-9)


def _ts(tmp_path, trajs, name="t.jsonl"):
    ts, rep = native.read(write_jsonl(tmp_path / name, trajs))
    assert rep.rejected == 0, rep.summary()
    return ts


# ------------------------------------------------------------------ registry
def test_names_and_order_match_the_papers_listing():
    if not PAPER.is_file():
        pytest.skip("paper not available")
    tex = PAPER.read_text(encoding="utf-8")
    block = tex[tex.index("FEATURE_MAP_FINAL_STABLE = {"):]
    block = block[: block.index("\\end{lstlisting}")]
    listed = re.findall(r"'([a-z0-9_]+)',\s*#\s*(\d+)", block)
    assert [n for n, _ in listed] == list(FEATURE_NAMES)
    assert [int(i) for _, i in listed] == list(range(48))


def test_family_sizes():
    counts = {f: sum(1 for s in REGISTRY.values() if s.family == f) for f in FAMILIES}
    assert counts == {"Dynamics": 19, "Position": 14, "Stability": 10, "Structure": 5}
    assert N_FEATURES == 48


def test_get_feature_by_code_and_unknown_name():
    assert get_feature("F31").name == "last_top1_avg"
    with pytest.raises(ValueError, match="valid features: top1_gradient_mean"):
        get_feature("no_such_feature")


# ------------------------------------------------------------- golden values
def test_golden_two_steps_without_alternatives(tmp_path):
    ts = _ts(tmp_path, [make_traj("a", [([LOG(0.5), LOG(0.5)], None), ([0.0], None)])])
    fm = extract(ts)
    f = dict(zip(FEATURE_NAMES, fm.values[0]))
    ln2 = math.log(2)
    expected = {
        "top1_gradient_mean": 0.5, "top1_gradient_std": 0.0, "top1_gradient_max": 0.5, "top1_gradient_min": 0.5,
        "top1_gradient_trend": 0.0, "topk_gradient_mean": 0.5,
        "token_gradient_mean": 0.0, "token_gradient_std": 0.0, "token_gradient_max": 0.0, "token_gradient_min": 0.0,
        "step_progression_entropy": 1.0, "step_progression_concentration": 0.0, "step_progression_spread": 0.0,
        "top1_confidence_change": 0.5, "topk_confidence_change": 0.5,
        "first_attention_entropy": ln2, "first_attention_concentration": 1.0, "first_attention_spread": 0.0,
        "first_confidence_skewness": 0.0, "first_top1_avg": 0.5, "first_topk_avg": 0.5,
        "last_attention_entropy": 0.0, "last_attention_concentration": 1.0, "last_top1_avg": 1.0,
        "attention_entropy_mean": ln2 / 2, "attention_entropy_std": ln2 / 2,
        "normalized_step_count": 0.2, "first_token_count": 2, "last_token_count": 1,
        "avg_tokens_per_step": 1.5, "std_tokens_per_step": 0.5,
    }
    for name, value in expected.items():
        assert f[name] == pytest.approx(value, abs=1e-6), name


def test_golden_alternatives_top1_and_topk(tmp_path):
    tops = [[LOG(0.3), LOG(0.6), LOG(0.1)]]  # unsorted on purpose: the reader sorts
    ts = _ts(tmp_path, [make_traj("a", [([LOG(0.3)], tops)])])
    assert extract(ts, top_k=5).column("first_top1_avg")[0] == pytest.approx(0.6)
    assert extract(ts, top_k=5).column("first_topk_avg")[0] == pytest.approx(1 / 3)
    assert extract(ts, top_k=2).column("first_topk_avg")[0] == pytest.approx(0.45)
    assert extract(ts, top_k=0).column("first_topk_avg")[0] == pytest.approx(0.3)  # falls back to r
    dc = extract(ts, profile="deepconf", top_k=2).column("first_topk_avg")[0]
    assert dc == pytest.approx(-(LOG(0.6) + LOG(0.3)) / 2)


def test_golden_three_steps_trend_and_skewness(tmp_path):
    # x_t = 0.2, 0.5, 0.6 -> dx = 0.3, 0.1 -> trend -0.2
    ts = _ts(tmp_path, [make_traj("a", [([LOG(0.2)], None), ([LOG(0.5)], None), ([LOG(0.6)], None)])])
    f = dict(zip(FEATURE_NAMES, extract(ts).values[0]))
    assert f["top1_gradient_trend"] == pytest.approx(-0.2)
    assert f["top1_gradient_mean"] == pytest.approx(0.2)
    assert f["top1_gradient_std"] == pytest.approx(0.1)
    # one token per step: skewness undefined -> 0, no token gradients -> 0
    assert f["token_skewness_mean"] == 0.0 and f["token_gradient_std"] == 0.0
    # skewness of r = [1, 0.5, 0.5] (n=3): mean 2/3, z = (1/3, -1/6, -1/6)/sigma
    ts2 = _ts(tmp_path, [make_traj("b", [([0.0, LOG(0.5), LOG(0.5)], None)])], "b.jsonl")
    r = np.array([1.0, 0.5, 0.5])
    z = (r - r.mean()) / (r.std() + 1e-8)
    assert extract(ts2).column("first_confidence_skewness")[0] == pytest.approx(np.mean(z ** 3))


# -------------------------------------------------------------- edge cases
def _edge_cases():
    rng = np.random.default_rng(7)

    def lp(n):
        return list(np.log(rng.uniform(0.01, 1.0, n)))

    def tops(lps, k):
        return [[v] + sorted(list(np.log(rng.uniform(1e-6, 0.5, k - 1))), reverse=True) if k else [] for v in lps]

    cases = {
        "one_step": [(lp(7), None)],
        "one_token_per_step": [(lp(1), None) for _ in range(5)],
        "two_tokens": [(lp(2), None)],
        "identical_tokens": [([LOG(0.7)] * 6, None), ([LOG(0.7)] * 6, None)],
        "prob_one": [([0.0] * 4, None), ([0.0, 0.0], None)],
        "prob_1e-12": [([LOG(1e-12)] * 3, None), ([LOG(1e-12), 0.0], None), ([0.0], None)],
        "k0": [(lp(4), [[] for _ in range(4)]), (lp(3), None)],
        "k20": [(x := lp(9), tops(x, 20)), (y := lp(5), tops(y, 20))],
        "k5_mixed": [(x := lp(6), tops(x, 5)), (lp(4), None), (y := lp(3), tops(y, 3))],
    }
    return cases


@pytest.mark.parametrize("profile", ["paper", "deepconf", "chosen"])
@pytest.mark.parametrize("top_k", [0, 1, 5, 20])
def test_edge_cases_match_oracle(tmp_path, profile, top_k):
    cases = _edge_cases()
    trajs = [make_traj(name, steps) for name, steps in cases.items()]
    ts = _ts(tmp_path, trajs)
    got = extract(ts, profile=profile, top_k=top_k).values
    for i, (name, steps) in enumerate(cases.items()):
        want = oracle_features(steps, k=top_k, profile=profile)
        np.testing.assert_allclose(got[i], want, **TOL, err_msg=name)


def test_random_sets_match_oracle(tmp_path):
    rng = np.random.default_rng(0)
    trajs, raw = [], []
    for t in range(60):
        steps = []
        for _ in range(int(rng.integers(1, 8))):
            n = int(rng.integers(1, 30))
            lps = list(np.log(rng.beta(5, 1, n) + 1e-12))
            k = int(rng.choice([0, 3, 5]))
            tops = None if k == 0 else [[v] + list(np.sort(np.log(rng.uniform(0, 0.3, k - 1) + 1e-9))[::-1]) for v in lps]
            steps.append((lps, tops))
        raw.append(steps)
        trajs.append(make_traj(f"r{t}", steps))
    ts = _ts(tmp_path, trajs)
    got = extract(ts).values
    for i, steps in enumerate(raw):
        np.testing.assert_allclose(got[i], oracle_features(steps), **TOL)


def test_real_uala_data_matches_oracle(uala_dir):
    for path in sorted(uala_dir.glob("*.jsonl")):
        ts, rep = native.read(path)
        assert rep.rejected == 0
        got = extract(ts).values
        with open(path, encoding="utf-8") as fh:
            dicts = [json.loads(line) for line in fh if line.strip()]
        assert len(dicts) == ts.n_trajectories
        for i, d in enumerate(dicts):
            np.testing.assert_allclose(got[i], features_of_trajectory_dict(d), **TOL, err_msg=d["id"])


# ------------------------------------------- common test over every feature
@pytest.fixture(scope="module")
def common_set(tmp_path_factory):
    rng = np.random.default_rng(3)
    trajs = []
    for t in range(25):
        steps = []
        for _ in range(int(rng.integers(1, 6))):
            lps = list(np.log(rng.uniform(0.05, 1.0, int(rng.integers(1, 20)))))
            steps.append((lps, [[v, v - 1.0, v - 2.5] for v in lps]))
        trajs.append(make_traj(f"c{t}", steps))
    ts, _ = native.read(write_jsonl(tmp_path_factory.mktemp("c") / "c.jsonl", trajs))
    return ts


@pytest.mark.parametrize("name", FEATURE_NAMES)
def test_every_feature_common_properties(common_set, name):
    spec = REGISTRY[name]
    assert FEATURE_NAMES[spec.index] == name and spec.code == f"F{spec.index}"
    assert spec.family in FAMILIES and spec.formula and spec.display_name and spec.description
    fm = extract(common_set)
    col = fm.column(name)
    assert col.shape == (common_set.n_trajectories,)
    assert np.all(np.isfinite(col)), "finite"
    np.testing.assert_array_equal(col, extract(common_set).column(name))  # deterministic
    perm = np.random.default_rng(1).permutation(common_set.n_trajectories)
    np.testing.assert_allclose(extract(common_set.take(perm)).column(name), col[perm], rtol=0, atol=0)  # order
    one = extract(common_set.take([4])).column(name)  # a trajectory's features do not depend on the others
    np.testing.assert_allclose(one, col[[4]], rtol=1e-12, atol=1e-12)


def test_extract_rejects_bad_arguments(common_set):
    with pytest.raises(ValueError, match="unknown confidence profile 'nope'"):
        extract(common_set, profile="nope")
    with pytest.raises(ValueError, match="top_k must be a non-negative integer"):
        extract(common_set, top_k=-1)
    with pytest.raises(ValueError, match="TraceSet"):
        extract([1, 2, 3])
