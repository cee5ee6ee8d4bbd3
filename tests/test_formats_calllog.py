"""openai-calllog reader: grouping, ordering, skipped lines, chunks, vLLM quirks, and a property test."""

from __future__ import annotations

import json
import random

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htc_core.synthetic import make_call
from htc_core.formats import detect, load


def write_lines(path, objs):
    with open(path, "wb") as fh:
        for o in objs:
            fh.write(o if isinstance(o, bytes) else orjson.dumps(o))
            fh.write(b"\n")
    return path


def chosen(call):
    return [t["logprob"] for t in call["response"]["choices"][0]["logprobs"]["content"]]


def test_groups_orders_and_skips(tmp_path):
    rng = random.Random(0)
    lines = []
    calls = {}
    for t in ("a", "b"):
        for s in (2, 0, 1):
            c = make_call(rng, t, s, 4)
            calls[(t, s)] = c
            lines.append(c)
        lines.append({"trajectory_id": t, "type": "tool", "observation": "x"})
    lines.append({"trajectory_id": "a", "type": "labels", "success": True, "gold": "Paris"})
    p = write_lines(tmp_path / "log.jsonl", lines)
    assert detect(p)[0] == "openai-calllog"
    ts, rep = load(p)
    assert rep.rejected == 0 and rep.skipped_lines == 1 and rep.tool_lines == 2   # the tool lines are observations
    assert list(ts.ids) == ["a", "b"]
    assert ts.k == 5 and ts.n_steps == 6
    # steps are ordered by "step", not by file order
    for i, t in enumerate(("a", "b")):
        for j, s in enumerate(range(3)):
            step = ts.traj_offsets[i] + j
            a, b = ts.step_offsets[step], ts.step_offsets[step + 1]
            np.testing.assert_array_equal(ts.logprob[a:b], chosen(calls[(t, s)]))
    assert ts.meta["success"].tolist()[0] is True and ts.meta["gold"][0] == "Paris"
    assert ts.meta["question"][0] == "question of a"
    assert ts.meta["model"][0] == "SmolLM2-135M-Instruct"


def test_group_by_option_and_missing_ids(tmp_path):
    rng = random.Random(1)
    lines = []
    for t in ("x", "y"):
        for s in range(2):
            c = make_call(rng, "ignored", s, 3)
            del c["trajectory_id"]
            c["metadata"] = {"episode": t}
            lines.append(c)
    p = write_lines(tmp_path / "log.jsonl", lines)
    ts, rep = load(p, format="openai-calllog", group_by="metadata.episode")
    assert list(ts.ids) == ["x", "y"] and ts.n_steps == 4
    # without --group-by nothing identifies the trajectory: one per file, with a warning
    ts, rep = load(p, format="openai-calllog")
    assert list(ts.ids) == ["log"] and ts.n_steps == 4
    assert any("carry no trajectory id" in p.reason for p in rep.warnings)


def test_bare_responses_and_created_order(tmp_path):
    rng = random.Random(2)
    resps = []
    for s in range(3):
        r = make_call(rng, "t", s, 3)["response"]
        r["created"] = 100 - s  # reverse chronological in the file
        r["session_id"] = "s1"
        resps.append(r)
    p = write_lines(tmp_path / "bare.jsonl", resps)
    ts, rep = load(p)
    assert list(ts.ids) == ["s1"]
    first = ts.logprob[ts.step_offsets[0]: ts.step_offsets[1]]
    np.testing.assert_array_equal(first, [t["logprob"] for t in resps[2]["choices"][0]["logprobs"]["content"]])


def test_batch_api_output_shape(tmp_path):
    rng = random.Random(3)
    body = make_call(rng, "t", 0, 3)["response"]
    line = {"id": "batch_req_1", "custom_id": "q-1", "response": {"status_code": 200, "body": body}, "error": None}
    p = write_lines(tmp_path / "batch.jsonl", [line])
    ts, rep = load(p, group_by="custom_id")
    assert list(ts.ids) == ["q-1"] and ts.n_tokens == 3


def chunked(call, parts=3):
    """The streamed form of a chat completion: role chunk, content chunks with logprobs, usage chunk."""
    resp = call["response"]
    content = resp["choices"][0]["logprobs"]["content"]
    cid = resp["id"]
    out = [{"id": cid, "object": "chat.completion.chunk", "model": resp["model"],
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None}]}]
    step = max(1, len(content) // parts)
    for i in range(0, len(content), step):
        piece = content[i:i + step]
        out.append({"id": cid, "object": "chat.completion.chunk", "model": resp["model"],
                    "choices": [{"index": 0, "delta": {"content": "".join(t["token"] for t in piece)},
                                 "logprobs": {"content": piece}, "finish_reason": None}]})
    out.append({"id": cid, "object": "chat.completion.chunk", "choices": [], "usage": {"completion_tokens": 1}})
    return out


def test_streamed_chunks_reassembled(tmp_path):
    rng = random.Random(4)
    c1, c2 = make_call(rng, "t", 0, 7), make_call(rng, "t", 1, 5)
    # c1 recorded as a list of chunks on one line; c2 logged one chunk per line
    lines = [{"trajectory_id": "t", "step": 0, "response": chunked(c1)}]
    for ch in chunked(c2):
        lines.append({"trajectory_id": "t", "step": 1, "response": ch})
    p = write_lines(tmp_path / "stream.jsonl", lines)
    ts, rep = load(p)
    assert rep.rejected == 0, rep.summary()
    assert ts.n_steps == 2
    np.testing.assert_array_equal(ts.logprob, chosen(c1) + chosen(c2))
    assert ts.step_text[0] == c1["response"]["choices"][0]["message"]["content"]


def test_vllm_quirks(tmp_path):
    rng = random.Random(5)
    c = make_call(rng, "v", 0, 4)
    content = c["response"]["choices"][0]["logprobs"]["content"]
    # vLLM: the sampled token repeated as a k+1-th alternative, and -9999 for -inf
    content[0]["top_logprobs"].insert(0, dict(content[0]["top_logprobs"][2]))
    content[1]["top_logprobs"][4]["logprob"] = -9999.0
    content[2]["top_logprobs"].append({"token": "zzz", "logprob": -9999.0, "bytes": None})
    p = write_lines(tmp_path / "vllm.jsonl", [c])
    ts, rep = load(p)
    assert rep.rejected == 0
    assert ts.k == 5
    assert np.all(np.diff(ts.top_logprobs[0]) <= 0)  # sorted, duplicate removed
    assert len(set(ts.top_logprobs[0])) == 5
    assert np.isnan(ts.top_logprobs[1, 4])  # -9999 -> missing
    assert not np.isnan(ts.top_logprobs[2]).any()
    # chosen-token -9999 is an error, reported where it is
    content[3]["logprob"] = -9999.0
    write_lines(p, [c])
    ts, rep = load(p)
    assert ts.n_trajectories == 0
    assert rep.errors[0].field == "choices[0].logprobs.content[3].logprob" and rep.errors[0].line == 1


def test_missing_logprobs_drops_step_keeps_trajectory(tmp_path):
    rng = random.Random(6)
    a0, a1 = make_call(rng, "a", 0, 3), make_call(rng, "a", 1, 3)
    a1["response"]["choices"][0]["logprobs"] = None
    b0 = make_call(rng, "b", 0, 3)
    b0["response"]["choices"][0]["logprobs"] = None
    p = write_lines(tmp_path / "m.jsonl", [a0, a1, b0])
    ts, rep = load(p)
    assert list(ts.ids) == ["a"] and ts.n_steps == 1
    w = [x for x in rep.warnings if "step dropped" in x.reason]
    assert [(x.trajectory_id, x.line) for x in w] == [("a", 2), ("b", 3)]
    e = rep.errors
    assert len(e) == 1 and e[0].trajectory_id == "b" and "logprobs" in e[0].reason


def test_wrong_types_reported_with_field(tmp_path):
    rng = random.Random(7)
    good = make_call(rng, "g", 0, 3)
    bad = make_call(rng, "b", 0, 3)
    bad["response"]["choices"][0]["logprobs"]["content"][1]["top_logprobs"][2]["logprob"] = "-0.5"
    bad2 = make_call(rng, "c", 0, 3)
    bad2["response"]["choices"][0]["logprobs"]["content"][2]["logprob"] = 0.5
    p = write_lines(tmp_path / "w.jsonl", [good, bad, bad2])
    ts, rep = load(p)
    assert list(ts.ids) == ["g"]
    e = {x.trajectory_id: x for x in rep.errors}
    assert e["b"].line == 2 and e["b"].field == "choices[0].logprobs.content[1].top_logprobs[2].logprob"
    assert e["b"].value == "'-0.5'" and "number" in e["b"].reason
    assert e["c"].line == 3 and e["c"].field == "choices[0].logprobs.content[2].logprob" and "<= 0" in e["c"].reason


def test_tiny_positive_clipped_and_nan_literal(tmp_path):
    rng = random.Random(8)
    c = make_call(rng, "t", 0, 3)
    c["response"]["choices"][0]["logprobs"]["content"][0]["logprob"] = 5e-7
    p = write_lines(tmp_path / "c.jsonl", [c])
    ts, rep = load(p)
    assert ts.logprob[0] == 0.0 and rep.clipped_values == 1
    # NaN written by Python's json (orjson refuses it; the fallback parser reads it and the value is rejected)
    c["response"]["choices"][0]["logprobs"]["content"][0]["logprob"] = float("nan")
    (tmp_path / "c.jsonl").write_text(json.dumps(c) + "\n")
    ts, rep = load(p)
    assert ts.n_trajectories == 0 and "finite" in rep.errors[0].reason


# ------------------------------------------------------------ property test
CORRUPTIONS = ("truncate", "wrong_type", "not_object", "invalid_utf8", "missing_logprobs", "positive")


def corrupt(kind: str, call: dict) -> bytes:
    if kind == "truncate":
        raw = orjson.dumps(call)
        return raw[: len(raw) // 2]
    if kind == "invalid_utf8":
        raw = orjson.dumps(call)
        i = raw.index(b'"token"')
        return raw[:i] + b"\xff\xfe" + raw[i:]
    if kind == "not_object":
        return orjson.dumps([call["trajectory_id"], 1, 2])
    c = json.loads(orjson.dumps(call))
    content = c["response"]["choices"][0]["logprobs"]["content"]
    if kind == "wrong_type":
        content[0]["logprob"] = "high"
    elif kind == "missing_logprobs":
        c["response"]["choices"][0]["logprobs"] = None
    elif kind == "positive":
        content[-1]["logprob"] = 0.7
    return orjson.dumps(c)


traj_strategy = st.lists(
    st.tuples(st.integers(1, 4), st.lists(st.sampled_from(CORRUPTIONS + ("ok",) * 6), min_size=4, max_size=4)),
    min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=traj_strategy, seed=st.integers(0, 10_000), interleave=st.booleans())
def test_property_valid_kept_broken_reported(tmp_path, spec, seed, interleave):
    """Every valid trajectory is kept with exactly its logprobs; every broken line is reported at its line."""
    rng = random.Random(seed)
    items = []  # (traj, step, bytes, kind)
    for ti, (n_calls, kinds) in enumerate(spec):
        tid = f"traj-{ti}"
        for s in range(n_calls):
            call = make_call(rng, tid, s, rng.randint(1, 6))
            kind = kinds[s]
            raw = orjson.dumps(call) if kind == "ok" else corrupt(kind, call)
            items.append((tid, s, raw, kind, call))
    if interleave:
        rng.shuffle(items)  # the reader must regroup by id and reorder by step
    path = tmp_path / f"prop-{seed}.jsonl"
    with open(path, "wb") as fh:
        for i, it in enumerate(items):
            fh.write(it[2] + b"\n")
            if i % 3 == 0:
                fh.write(orjson.dumps({"trajectory_id": it[0], "type": "observation", "text": "..."}) + b"\n")
    line_of = {}
    no = 0
    for i, it in enumerate(items):
        no += 1
        line_of[(it[0], it[1])] = no
        if i % 3 == 0:
            no += 1
    ts, rep = load(path, format="openai-calllog")
    kept = set(ts.ids)
    problem_lines = {p.line for p in rep.problems}
    by_traj: dict[str, list] = {}
    for it in items:
        by_traj.setdefault(it[0], []).append(it)
    for tid, its in by_traj.items():
        kinds = [it[3] for it in its]
        # a line that is not an object names no trajectory: it is reported, and cannot reject one
        fatal = [k for k in kinds if k not in ("ok", "missing_logprobs", "not_object")]
        ok_steps = sorted((it for it in its if it[3] == "ok"), key=lambda it: it[1])
        for it in its:
            if it[3] != "ok":
                assert line_of[(tid, it[1])] in problem_lines, (it[3], rep.summary())
        if not fatal and ok_steps:
            assert tid in kept, rep.summary()
            i = list(ts.ids).index(tid)
            got = ts.logprob[ts.step_offsets[ts.traj_offsets[i]]: ts.step_offsets[ts.traj_offsets[i + 1]]]
            want = [v for it in ok_steps for v in chosen(it[4])]
            np.testing.assert_array_equal(got, want)
        else:
            assert tid not in kept
    assert not any("internal" in p.reason or "cannot read" in p.reason for p in rep.problems)


@pytest.mark.parametrize("bad,field,reason", [
    (5, "choices[0].logprobs.content[1].top_logprobs", "must be a list of alternatives, got int"),
    ("x", "choices[0].logprobs.content[1].top_logprobs", "must be a list of alternatives, got str"),
    ([1], "choices[0].logprobs.content[1].top_logprobs[0]", "an alternative must be an object, got int"),
    ([{"token": "a"}], "choices[0].logprobs.content[1].top_logprobs[0].logprob", "missing"),
    ([{"token": "a", "logprob": None}], "choices[0].logprobs.content[1].top_logprobs[0].logprob",
     "must be a number, got null"),
])
def test_bad_alternatives_reported(tmp_path, bad, field, reason):
    c = make_call(random.Random(9), "t", 0, 3)
    c["response"]["choices"][0]["logprobs"]["content"][1]["top_logprobs"] = bad
    ts, rep = load(write_lines(tmp_path / "b.jsonl", [c]))
    assert ts.n_trajectories == 0
    assert (rep.errors[0].field, rep.errors[0].reason) == (field, reason)


@pytest.mark.parametrize("bad", [0.5, float("inf")])
def test_positive_alternative_is_reported_not_a_crash(tmp_path, bad):
    """A positive (or +Infinity) top-k alternative names its field and value; the good call beside it is kept."""
    rng = random.Random(5)
    broken, good = make_call(rng, "bad", 0, 3), make_call(rng, "good", 0, 3)
    broken["response"]["choices"][0]["logprobs"]["content"][1]["top_logprobs"][2]["logprob"] = bad
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in (broken, good)) + "\n")
    ts, rep = load(path, format="openai-calllog")
    assert list(ts.ids) == ["good"]
    (err,) = rep.errors
    assert err.line == 1 and err.field.endswith("content[1].top_logprobs[2].logprob")
    assert ("<= 0" in err.reason) if bad == 0.5 else ("+infinity" in err.reason)
