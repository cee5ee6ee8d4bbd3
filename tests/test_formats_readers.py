"""Every reader on its real fixture (tests/fixtures/formats, recorded from SmolLM2 by make_fixtures.py),
plus broken variants derived from those fixtures: valid trajectories are kept, broken ones reported
with file, line, field, value and reason."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from htc_core.formats import READERS, detect, load, native

FIX = Path(__file__).parent / "fixtures" / "formats"

EXPECTED = {
    # file: (format, trajectories, k)
    "calllog.jsonl": ("openai-calllog", 4, 5),
    "calllog_stream.jsonl": ("openai-calllog", 1, 5),
    "chat_trajectories.jsonl": ("openai-chat", 4, 5),
    "chat_run.json": ("openai-chat", 1, 5),
    "responses.json": ("responses", 1, 5),
    "completions.jsonl": ("completions", 2, 5),
    "smolagents_run.json": ("smolagents", 1, 5),
    "atif.json": ("atif", 1, 0),
    # written by tests/fixtures/foreign/make_otel.py (the JSONL shapes carry a broken line: tests/test_formats_otel.py)
    "../foreign/otel_phoenix.parquet": ("otel", 3, 5),
}


def read_jsonl(p):
    return [json.loads(x) for x in Path(p).read_text().splitlines() if x.strip()]


def write_jsonl(p, rows):
    Path(p).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def no_internal_errors(rep):
    assert not any("cannot read file" in p.reason or "internal" in p.reason for p in rep.problems), rep.summary()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_detected_and_read(name):
    fmt, n, k = EXPECTED[name]
    path = FIX / name
    assert detect(path) == (fmt, "")
    ts, rep = load(path)
    assert ts.n_trajectories == n and rep.rejected == 0, rep.summary()
    assert ts.k == k
    assert np.all(ts.logprob <= 0) and np.all(np.isfinite(ts.logprob))
    if k:
        top = ts.top_logprobs
        assert np.all(np.isnan(top) | (top <= 0))
        filled = np.where(np.isnan(top), -np.inf, top)
        assert np.all(np.diff(filled, axis=1) <= 0)  # sorted descending, NaN last
    # the explicit format gives the same result
    ts2, _ = load(path, format=fmt)
    np.testing.assert_array_equal(ts.logprob, ts2.logprob)
    no_internal_errors(rep)


def test_every_format_has_a_fixture():
    assert {f for f, _, _ in EXPECTED.values()} | {"native"} == set(READERS)


def test_chat_and_calllog_agree():
    """The same real responses, packaged as call log and as chat trajectories, give identical arrays."""
    a, _ = load(FIX / "calllog.jsonl")
    b, _ = load(FIX / "chat_trajectories.jsonl")
    assert list(a.ids) == list(b.ids)
    np.testing.assert_array_equal(a.logprob, b.logprob)
    np.testing.assert_array_equal(a.top_logprobs, b.top_logprobs)
    np.testing.assert_array_equal(a.step_offsets, b.step_offsets)
    assert list(a.tokens) == list(b.tokens)
    assert a.meta["success"].tolist() == b.meta["success"].tolist()
    assert a.meta["question"].tolist() == b.meta["question"].tolist()


def test_streamed_equals_non_streamed():
    """Greedy decoding: the streamed recording of q-paris reassembles to the non-streamed one."""
    a, _ = load(FIX / "calllog.jsonl")
    b, _ = load(FIX / "calllog_stream.jsonl")
    a0 = a.take([0])
    np.testing.assert_array_equal(a0.logprob, b.logprob)
    np.testing.assert_array_equal(a0.top_logprobs, b.top_logprobs)
    assert list(a0.tokens) == list(b.tokens)


def test_responses_and_atif_match_chat_values():
    chat, _ = load(FIX / "chat_run.json")
    resp, _ = load(FIX / "responses.json")
    atif, _ = load(FIX / "atif.json")
    np.testing.assert_array_equal(chat.logprob, resp.logprob)
    np.testing.assert_array_equal(chat.top_logprobs, resp.top_logprobs)
    np.testing.assert_array_equal(chat.logprob, atif.logprob)
    assert atif.meta["framework"][0] == "tiny-react" and atif.meta["question"][0].startswith("What is the capital")
    assert list(chat.step_text) == list(resp.step_text)


def test_calllog_fixture_metadata():
    ts, rep = load(FIX / "calllog.jsonl")
    assert rep.skipped_lines > 0  # tool observations and label lines
    m = ts.meta.set_index("id")
    assert m.loc["q-paris", "success"] == True  # noqa: E712
    assert m.loc["q-gold", "success"] == False  # noqa: E712
    assert m.loc["q-paris", "dataset"] == "toy-qa" and m.loc["q-paris", "gold"] == "Paris"
    assert m.loc["q-paris", "model"] == "SmolLM2-135M-Instruct"
    assert json.loads(m.loc["q-paris", "metadata"]) == {"agent": "tiny-react"}


def test_smolagents_fixture_steps_and_warnings():
    ts, rep = load(FIX / "smolagents_run.json")
    assert ts.meta["framework"][0] == "smolagents"
    assert ts.meta["question"][0] == "What is 2 + 3? Give just the number."
    assert list(ts.step_name) == ["action", "action"]
    # smolagents keeps no raw response for planning steps: reported, with the step and line
    w = [p for p in rep.warnings if "planning" in p.reason]
    assert [p.field for p in w] == ["steps[1].model_output_message.raw", "steps[3].model_output_message.raw"]
    assert [p.line for p in w] == [3, 5]


def test_smolagents_jsonl_of_runs_and_save_helper(tmp_path):
    from htc_core.collect import save_smolagents_run

    steps = json.loads((FIX / "smolagents_run.json").read_text())
    out = tmp_path / "runs.jsonl"
    save_smolagents_run(steps, out, run_id="r1", success=True, gold="5")
    save_smolagents_run(steps, out, run_id="r2", success=False)
    with open(out, "a") as fh:
        fh.write(json.dumps(steps) + "\n")  # a bare list of steps per line works too
    assert detect(out)[0] == "smolagents"
    ts, rep = load(out)
    assert list(ts.ids) == ["r1", "r2", "runs:3"]
    assert ts.meta["success"].tolist()[:2] == [True, False]


def test_import_round_trip(tmp_path):
    from htc_core.cli import main

    out = tmp_path / "all.jsonl"
    rc = main(["import", str(FIX), "--out", str(out), "--labels", str(FIX / "labels.csv")])
    assert rc == 0
    back, rep = native.read(out)
    assert rep.rejected == 0
    total = sum(n for name, (_, n, _) in EXPECTED.items() if not name.startswith(".."))
    assert back.n_trajectories == total
    direct, _ = load(FIX, labels=FIX / "labels.csv")
    np.testing.assert_allclose(back.logprob, direct.logprob)
    assert list(back.ids) == list(direct.ids)
    assert back.meta["success"].tolist() == direct.meta["success"].tolist()


# ------------------------------------------------------------ broken variants
def test_chat_jsonl_broken_lines(tmp_path):
    rows = read_jsonl(FIX / "chat_trajectories.jsonl")
    bad_type = copy.deepcopy(rows[1])
    bad_type["responses"][1]["choices"][0]["logprobs"]["content"][2]["top_logprobs"] = "oops"
    no_lp = copy.deepcopy(rows[2])
    for r in no_lp["responses"]:
        r["choices"][0]["logprobs"] = None
    p = tmp_path / "chat.jsonl"
    with open(p, "w") as fh:
        fh.write(json.dumps(rows[0]) + "\n")
        fh.write(json.dumps(bad_type) + "\n")
        fh.write(json.dumps(rows[3])[:500] + "\n")  # truncated
        fh.write(json.dumps(no_lp) + "\n")
        fh.write(json.dumps(rows[3]) + "\n")
    ts, rep = load(p, format="openai-chat")
    assert list(ts.ids) == [rows[0]["id"], rows[3]["id"]]
    errs = {p.line: p for p in rep.errors}
    assert errs[2].field == "responses[1].choices[0].logprobs.content[2].top_logprobs"
    assert errs[2].value == "'oops'"
    assert "truncated" in errs[3].reason or "malformed" in errs[3].reason
    assert "logprobs" in errs[4].reason and errs[4].trajectory_id == rows[2]["id"]
    no_internal_errors(rep)


def test_chat_json_array_truncated(tmp_path):
    text = (FIX / "chat_run.json").read_text()
    p = tmp_path / "cut.json"
    p.write_text(text[: int(len(text) * 0.7)])
    ts, rep = load(p, format="openai-chat")
    assert ts.n_trajectories == 0
    e = rep.errors[0]
    assert "truncated" in e.reason and e.line is not None and e.line > 1
    # an array of trajectories keeps the complete ones before the cut
    rows = read_jsonl(FIX / "chat_trajectories.jsonl")
    whole = json.dumps(rows, indent=1)
    p2 = tmp_path / "trajs.json"
    p2.write_text(whole[: whole.index(rows[2]["id"]) + 200])
    ts, rep = load(p2)
    assert list(ts.ids) == [rows[0]["id"], rows[1]["id"]]
    assert rep.errors and rep.errors[0].line > 1


def test_responses_broken(tmp_path):
    objs = json.loads((FIX / "responses.json").read_text())
    good = {"id": "good", "responses": objs}
    bad = copy.deepcopy(good)
    bad["id"] = "bad"
    bad["responses"][1]["output"][0]["content"][0]["logprobs"][0]["logprob"] = None
    missing = copy.deepcopy(good)
    missing["id"] = "partly"
    del missing["responses"][0]["output"][0]["content"][0]["logprobs"]
    p = write_jsonl(tmp_path / "r.jsonl", [good, bad, missing])
    assert detect(p)[0] == "responses"
    ts, rep = load(p)
    assert list(ts.ids) == ["good", "partly"]
    assert ts.steps_per_trajectory.tolist() == [2, 1]
    e = rep.errors[0]
    assert (e.line, e.field, e.value) == (2, "responses[1].output[0].content[0].logprobs[0].logprob", "None")
    w = [x for x in rep.warnings if x.trajectory_id == "partly"]
    assert w and w[0].field == "responses[0].output[0].content[0].logprobs"


def test_completions_broken_and_vllm(tmp_path):
    rows = read_jsonl(FIX / "completions.jsonl")
    vllm = copy.deepcopy(rows[0])
    vllm["id"] = "vllm"
    lp = vllm["responses"][0]["choices"][0]["logprobs"]
    lp["top_logprobs"][0]["<unk>"] = -9999.0  # k+1 with the -inf sentinel
    bad = copy.deepcopy(rows[1])
    bad["responses"][0]["choices"][0]["logprobs"]["token_logprobs"][1] = "x"
    echo = copy.deepcopy(rows[1])
    echo["id"] = "echo"
    echo["responses"][0]["choices"][0]["logprobs"]["token_logprobs"][0] = None
    p = write_jsonl(tmp_path / "c.jsonl", [rows[0], vllm, bad, echo])
    ts, rep = load(p)
    assert list(ts.ids) == [rows[0]["id"], "vllm"]
    np.testing.assert_array_equal(ts.top_logprobs[: ts.tokens_per_trajectory[0]],
                                  ts.top_logprobs[ts.tokens_per_trajectory[0]: 2 * ts.tokens_per_trajectory[0]])
    errs = {e.line: e for e in rep.errors}
    assert errs[3].field == "responses[0].choices[0].logprobs.token_logprobs[1]" and errs[3].value == "'x'"
    assert "echo" in errs[4].reason


def test_atif_broken(tmp_path):
    doc = json.loads((FIX / "atif.json").read_text())
    bad = copy.deepcopy(doc)
    bad["session_id"] = "bad"
    bad["steps"][1]["metrics"]["logprobs"][3] = "NaN"
    nolp = copy.deepcopy(doc)
    nolp["session_id"] = "nolp"
    for st in nolp["steps"]:
        st.pop("metrics", None)
    p = write_jsonl(tmp_path / "a.jsonl", [doc, bad, nolp])
    ts, rep = load(p)
    assert list(ts.ids) == [doc["session_id"]]
    errs = {e.trajectory_id: e for e in rep.errors}
    assert errs["bad"].line == 2 and errs["bad"].field == "steps[1].metrics.logprobs[3]"
    assert errs["nolp"].line == 3 and "logprobs" in errs["nolp"].reason
    w = [x for x in rep.warnings if x.trajectory_id == "nolp"]
    assert len(w) == 2 and w[0].field == "steps[1].metrics.logprobs"


def test_smolagents_broken(tmp_path):
    steps = json.loads((FIX / "smolagents_run.json").read_text())
    bad = copy.deepcopy(steps)
    bad[2]["model_output_message"]["raw"]["choices"][0]["logprobs"]["content"][0]["logprob"] = True
    p = write_jsonl(tmp_path / "s.jsonl", [{"id": "ok", "steps": steps}, {"id": "bad", "steps": bad},
                                            {"id": "notrun", "steps": [{"foo": 1}]}])
    ts, rep = load(p, format="smolagents")
    assert list(ts.ids) == ["ok"]
    errs = {e.line: e for e in rep.errors}
    assert errs[2].field == "steps[2].model_output_message.raw.choices[0].logprobs.content[0].logprob"
    assert errs[2].value == "True" and "number" in errs[2].reason
    assert "smolagents" in errs[3].reason


def test_gzip_inputs(tmp_path):
    src = (FIX / "calllog.jsonl").read_bytes()
    p = tmp_path / "calllog.jsonl.gz"
    p.write_bytes(gzip.compress(src))
    ts, rep = load(p)
    assert ts.n_trajectories == 4 and rep.rejected == 0
    q = tmp_path / "run.json.gz"
    q.write_bytes(gzip.compress((FIX / "chat_run.json").read_bytes()))
    ts, rep = load(q)
    assert detect(q)[0] == "openai-chat" and ts.n_trajectories == 1


def test_load_bytes_for_uploads():
    from htc_core.formats import load_bytes

    ts, rep = load_bytes((FIX / "chat_run.json").read_bytes(), name="my run.json")
    assert list(ts.ids) == ["my_run"] and ts.meta["source"][0] == "my run.json"
    assert rep.formats == {"my run.json": "openai-chat"}     # the upload's name, not the temporary copy's path
    ts, rep = load_bytes(b'{"broken": ', name="x.jsonl")
    assert ts.n_trajectories == 0 and rep.errors[0].file == "x.jsonl" and rep.files == ["x.jsonl"]
