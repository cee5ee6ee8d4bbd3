"""Monitor: the confidence after step k equals predict_proba on the batch features of the k-step prefix."""

from __future__ import annotations

import math

import numpy as np
import pytest

import htc_core as htc
from htc_core.features import FEATURE_NAMES
from htc_core.features.incremental import FEATURE_ORDER
from htc_core.monitor import Alert, Monitor
from htc_core.traces.prefix import prefix_lengths, prefixes

from conftest import REPO, make_traj, write_jsonl

TOL = 1e-9


def _close(a, b) -> float:
    """Largest difference, relative for values above 1."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


def _replay_and_compare(ts, model, indices):
    """Feed each trajectory step by step; compare with extract + predict_proba on every prefix."""
    mon = Monitor(model)
    worst_p = worst_f = 0.0
    checked = 0
    for i in indices:
        mon.reset()
        one = ts.take([i])
        for k, s in enumerate(range(ts.traj_offsets[i], ts.traj_offsets[i + 1]), start=1):
            a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
            p = mon.add_step(ts.logprob[a:b], ts.top_logprobs[a:b])
            fm = htc.extract(prefixes(one, k), profile=model.profile_, top_k=model.top_k_)
            worst_p = max(worst_p, abs(p - model.predict_proba(fm)[0, 1]))
            worst_f = max(worst_f, _close(mon.features.values, fm.values))
            checked += 1
        assert mon.n_steps == ts.steps_per_trajectory[i]
    assert checked > 0
    return worst_p, worst_f


def test_feature_order_is_the_registry_order():
    assert FEATURE_ORDER == FEATURE_NAMES


@pytest.fixture(scope="module")
def sample_set():
    ts, _ = htc.load([REPO / "sample_runs" / name for name in ("arithmetic", "facts", "strings", "units")])
    return ts.labeled()


@pytest.mark.parametrize("variant,profile,top_k", [("reduced", "paper", 5), ("full", "paper", 5),
                                                   ("full", "deepconf", 3), ("full", "paper", 1)])
def test_sample_runs_match_batch(sample_set, variant, profile, top_k):
    ts = sample_set
    fm = htc.extract(ts, profile=profile, top_k=top_k)
    model = htc.HTCCalibrator(variant, alphas=(0.1, 1.0)).fit(fm, ts.labels)
    rng = np.random.default_rng(0)
    longest = np.argsort(-ts.steps_per_trajectory)[:10]
    idx = np.unique(np.concatenate([longest, rng.choice(len(ts), 40, replace=False)]))
    worst_p, worst_f = _replay_and_compare(ts, model, idx)
    assert worst_p < TOL and worst_f < TOL


def test_uala_runs_match_batch(uala_run_a):
    """Longer real runs (Llama-2-70B, up to ~10 steps, no alternatives)."""
    ts, _ = htc.load(uala_run_a)
    ts = ts.labeled()
    model = htc.HTCCalibrator("full", alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
    idx = np.argsort(-ts.steps_per_trajectory)[:25]
    assert ts.steps_per_trajectory[idx].max() >= 5
    worst_p, worst_f = _replay_and_compare(ts, model, idx)
    assert worst_p < TOL and worst_f < TOL


# ------------------------------------------------------------------ edge cases
EDGE_STEPS = [
    ([-0.1], None),                                        # one token, no alternatives
    ([-0.5], [[-0.5, -1.5]]),                              # one token with alternatives
    ([-0.2, -3.0, -0.01], None),                           # no alternatives
    ([-1.0, -0.3, -2.0, -0.7], [[-1.0, -0.6], [-0.3], [], [-2.0, -0.2, -4.0]]),   # ragged, unsorted, empty row
    ([-0.05, -0.05, -0.05], [[-0.05, -3.0, -9999.0], [-0.05, -3.0, -9999.0], [-0.05, 1e-7, -3.0]]),
    ([-2.5, -0.4], [[-0.4, -1.1, -2.5, -2.6, -3.0, -3.5, -4.0], [-0.4, -1.5, -2.0, -2.2, -3.1, -3.2, -6.0]]),
    ([0.0], [[0.0]]),                                       # certain token
]


def _edge_set(tmp_path, steps):
    trajs = [make_traj(f"t{i}", steps[: i + 1], success=bool(i % 2)) for i in range(len(steps))]
    trajs.append(make_traj("one-token-steps", [([-0.3], None), ([-0.01], None), ([-1.2], None)], success=True))
    ts, report = htc.load(write_jsonl(tmp_path / "edge.jsonl", trajs))
    assert len(ts) == len(trajs), report.summary()
    return ts, trajs


@pytest.mark.parametrize("profile,top_k", [("paper", 5), ("paper", 2), ("deepconf", 5), ("paper", 0)])
def test_edge_cases_match_batch(tmp_path, profile, top_k):
    """One-token steps, steps without alternatives, ragged/unsorted alternatives, -9999, a rounding error
    above 0, more alternatives than k, and 1 and 2 steps (trend and skew undefined): the raw lists go to
    the monitor, the file goes through the reader."""
    ts, trajs = _edge_set(tmp_path, EDGE_STEPS)
    fm = htc.extract(ts, profile=profile, top_k=top_k)
    y = np.array([i % 2 for i in range(len(trajs))])
    X = fm.values + np.random.default_rng(1).normal(0, 1e-3, fm.values.shape)  # spread so that weights are not 0
    model = htc.HTCCalibrator("full", alphas=(1.0,), inner_folds=2, profile=profile, top_k=top_k).fit(X, y)
    mon = Monitor(model)
    for i, t in enumerate(trajs):
        mon.reset()
        for k, st in enumerate(t["steps"], start=1):
            p = mon.add_step(st["logprobs"], st.get("top_logprobs"))
            pf = htc.extract(prefixes(ts.take([i]), k), profile=profile, top_k=top_k)
            assert _close(mon.features.values, pf.values) < TOL, (t["id"], k)
            assert abs(p - model.predict_proba(pf)[0, 1]) < TOL
        if len(t["steps"]) <= 2:
            trend = mon.features.column("top1_gradient_trend")[0]
            assert trend == 0.0
        if all(len(st["logprobs"]) == 1 for st in t["steps"]):
            assert mon.features.column("token_skewness_mean")[0] == 0.0


def test_openai_dict_alternatives_and_arrays_agree(tmp_path):
    ts, trajs = _edge_set(tmp_path, EDGE_STEPS)
    model = _tiny_model(ts)
    steps = trajs[5]["steps"]
    a, b = Monitor(model), Monitor(model)
    for st in steps:
        rows = st.get("top_logprobs") or [[] for _ in st["logprobs"]]
        dict_rows = [[{"token": f"w{j}", "logprob": v} for j, v in enumerate(r)] for r in rows]
        if rows and rows[0]:   # vLLM's k+1 lists repeat the sampled token: counted once
            dict_rows[0].append({"token": "w0", "logprob": rows[0][0]})
        pa = a.add_step(st["logprobs"], dict_rows)
        pb = b.add_step(np.array(st["logprobs"]), None if not st.get("top_logprobs") else st["top_logprobs"])
        assert pa == pytest.approx(pb, abs=1e-12)


def _tiny_model(ts):
    fm = htc.extract(ts)
    y = np.arange(len(ts)) % 2
    X = fm.values + np.random.default_rng(2).normal(0, 1e-3, fm.values.shape)
    return htc.HTCCalibrator("full", alphas=(1.0,), inner_folds=2).fit(X, y)


# ------------------------------------------------------------------ behaviour
@pytest.fixture(scope="module")
def sample_model(sample_set):
    return htc.HTCCalibrator("reduced").fit(htc.extract(sample_set), sample_set.labels)


@pytest.mark.parametrize("logprobs,top,message", [
    ([-0.1, float("nan")], None, "logprobs[1]"),
    ([-0.1, 0.5], None, "logprobs[1] = 0.5"),
    ([-9999.0], None, "sentinel"),
    ([-0.1], [[float("inf")]], "top_logprobs[0][0]"),
    ([-0.1], [[0.3]], "top_logprobs[0][0] = 0.3"),
    ([-0.1, -0.2], [[-0.1]], "2 tokens"),
    ([[-0.1]], None, "1-D"),
    ("abc", None, "logprobs"),
])
def test_bad_steps_raise_and_leave_the_state(sample_model, logprobs, top, message):
    mon = Monitor(sample_model)
    first = mon.add_step([-0.1, -0.2], [[-0.1, -2.0], [-0.2, -1.0]])
    before = mon._state.copy()
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        mon.add_step(logprobs, top)
    assert np.array_equal(mon._state, before) and mon.history == [first]


def test_strided_and_other_dtype_arrays_give_the_same_confidence(sample_model):
    rng = np.random.default_rng(3)
    lp = -rng.exponential(0.5, 40)
    top = -np.sort(rng.exponential(1.0, (40, 5)), axis=1)
    a, b = Monitor(sample_model), Monitor(sample_model)
    for _ in range(3):
        pa = a.add_step(lp, top)
        wide = np.zeros((80, 10))
        wide[::2, ::2] = top                                        # strided views, float32 and Fortran order
        pb = b.add_step(np.repeat(lp, 2)[::2], np.asfortranarray(wide[::2, ::2]))
        assert pa == pb
    assert Monitor(sample_model).add_step(lp.astype(np.float32), top.astype(np.float32)) == pytest.approx(
        Monitor(sample_model).add_step(lp.astype(np.float32).astype(float), top.astype(np.float32).astype(float)))


def test_empty_step_is_skipped_like_the_readers(sample_model):
    mon = Monitor(sample_model)
    assert math.isnan(mon.add_step([]))
    p = mon.add_step([-0.1, -0.3])
    assert mon.add_step(np.zeros(0)) == p and mon.n_steps == 1


def test_alerts_on_each_fall_below_the_threshold(sample_model, sample_set):
    ts = sample_set
    conf = sample_model.predict_proba(htc.extract(prefixes(ts, 1)))[:, 1]
    lo, hi = int(np.argmin(conf)), int(np.argmax(conf))

    def step(i):
        a, b = ts.step_offsets[ts.traj_offsets[i]], ts.step_offsets[ts.traj_offsets[i] + 1]
        return ts.logprob[a:b], ts.top_logprobs[a:b]

    threshold = float((conf[lo] + conf[hi]) / 2)
    seen: list[Alert] = []
    mon = Monitor(sample_model, threshold=threshold, on_alert=seen.append)
    p = mon.add_step(*step(lo))
    assert p < threshold and seen == [Alert(1, p, threshold)] and mon.alerted
    mon.reset()
    assert not mon.alerted and mon.n_steps == 0 and math.isnan(mon.confidence)
    mon.add_step(*step(hi))
    assert len(seen) == 1 and not mon.alerts

    def stop(alert):
        raise RuntimeError(f"stopped at step {alert.step}")

    with pytest.raises(RuntimeError, match="stopped at step 1"):
        Monitor(sample_model, threshold=threshold, on_alert=stop).add_step(*step(lo))


def test_any_classifier_and_model_files(sample_model, sample_set, tmp_path):
    from sklearn.linear_model import LogisticRegression

    ts = sample_set.take(np.arange(60))
    fm = htc.extract(ts)
    lr = LogisticRegression(max_iter=2000).fit(fm.values, ts.labels)
    path = sample_model.save(tmp_path / "m.json")
    by_path, by_obj, generic = Monitor(str(path)), Monitor(sample_model), Monitor(lr)
    for i in range(5):
        for m in (by_path, by_obj, generic):
            m.reset()
        for s in range(ts.traj_offsets[i], ts.traj_offsets[i + 1]):
            a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
            assert by_path.add_step(ts.logprob[a:b], ts.top_logprobs[a:b]) == \
                by_obj.add_step(ts.logprob[a:b], ts.top_logprobs[a:b])
            generic.add_step(ts.logprob[a:b], ts.top_logprobs[a:b])
        assert generic.confidence == pytest.approx(lr.predict_proba(fm.values[i:i + 1])[0, 1], abs=1e-9)


@pytest.mark.parametrize("kwargs,message", [
    ({"model": object()}, "model must be"),
    ({"model": htc.HTCCalibrator()}, "not fitted"),
    ({"threshold": 1.5}, "threshold"),
    ({"on_alert": 3}, "on_alert"),
])
def test_monitor_arguments(sample_model, kwargs, message):
    args = {"model": sample_model, **kwargs}
    with pytest.raises(Exception, match=message):
        Monitor(**args)


def test_monitor_is_public():
    assert htc.Monitor is Monitor


def test_prefix_lengths():
    ts, _ = htc.load(REPO / "sample_runs" / "arithmetic")
    S = ts.steps_per_trajectory
    assert np.array_equal(prefix_lengths(ts, 1), np.ones_like(S))
    assert np.array_equal(prefix_lengths(ts, 3), np.minimum(S, 3))
    assert np.array_equal(prefix_lengths(ts, fraction=1.0), S)
    assert np.array_equal(prefix_lengths(ts, fraction=0.5), np.maximum(1, np.ceil(S / 2)))
    assert prefixes(ts, fraction=1.0).n_tokens == ts.n_tokens
    with pytest.raises(ValueError, match="steps must be >= 1"):
        prefixes(ts, 0)
    with pytest.raises(ValueError, match="fraction"):
        prefixes(ts, fraction=0.0)
