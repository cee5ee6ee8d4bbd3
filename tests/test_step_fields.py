"""The per-step diagnosis fields (input, tool, observation, error, latency_s): readers, trace set, writer, store,
and the shipped sample runs that carry them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from htc_core.app.store import Store
from htc_dev.demo_agent.runner import ACTION, FINAL
from htc_core.features import extract
from htc_core.formats import load, load_bytes, native
from htc_core.traces import STEP_FIELDS, TraceSet, concat
from htc_core.traces.prefix import prefixes

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs"
FIX = ROOT / "tests" / "fixtures" / "formats"


def _lines(*objs) -> bytes:
    return "\n".join(json.dumps(o) for o in objs).encode()


TWO = _lines(
    {"id": "a", "success": False, "steps": [
        {"name": "act", "logprobs": [-0.1, -0.2], "input": "Question: 2+2?",
         "tool": {"name": "calculator", "arguments": {"expression": "2+2"}}, "observation": "Error: boom",
         "error": "Error: boom", "latency_s": 0.25},
        {"name": "final", "logprobs": [-0.3], "input": "Observation: Error: boom"}]},
    {"id": "b", "success": True, "steps": [{"name": "final", "logprobs": [-0.5, -0.01]}]},
)


def test_native_fields_read_written_and_read_back_unchanged():
    ts, rep = load_bytes(TWO, format="native")
    assert rep.rejected == 0 and set(ts.step_fields) == set(STEP_FIELDS)
    assert list(ts.step_field("observation")) == ["Error: boom", None, None]
    assert ts.trajectory(0)["steps"][0]["tool"] == {"name": "calculator", "arguments": {"expression": "2+2"}}
    assert np.isnan(ts.step_field("latency_s")[1:]).all() and ts.step_field("latency_s")[0] == 0.25
    buf = io.StringIO()
    native.write(ts, buf)
    again, _ = load_bytes(buf.getvalue().encode(), format="native")
    assert [again.trajectory(i) for i in range(2)] == [ts.trajectory(i) for i in range(2)]
    assert "input" not in again.trajectory(1)["steps"][0]  # absent stays absent, never null


def test_fields_follow_take_concat_and_prefixes():
    ts, _ = load_bytes(TWO, format="native")
    assert list(ts.take([1, 0]).step_field("input")) == [None, "Question: 2+2?", "Observation: Error: boom"]
    plain, _ = load_bytes(_lines({"id": "c", "steps": [{"logprobs": [-1.0]}]}), format="native")
    assert plain.step_fields == {}
    both = concat([plain, ts])
    assert list(both.step_field("error")) == [None, "Error: boom", None, None]
    assert list(prefixes(ts, 1).step_field("input")) == ["Question: 2+2?", None]


def test_fields_never_change_features():
    ts, _ = load_bytes(TWO, format="native")
    bare = TraceSet(ts.logprob, ts.top_logprobs, ts.step_offsets, ts.traj_offsets, ts.meta)
    np.testing.assert_array_equal(extract(ts).values, extract(bare).values)


def test_bad_tool_or_latency_is_a_warning_and_the_step_is_kept():
    data = _lines({"id": "x", "steps": [{"logprobs": [-0.1], "tool": 42, "latency_s": -3, "observation": "ok"}]})
    ts, rep = load_bytes(data, format="native")
    assert ts.n_trajectories == 1 and rep.rejected == 0
    fields = {p.field for p in rep.problems if p.severity == "warning"}
    assert {"steps[0].tool", "steps[0].latency_s"} <= fields
    assert list(ts.step_fields) == ["observation"]


def test_bad_step_field_names_are_refused():
    ts, _ = load_bytes(TWO, format="native")
    with pytest.raises(ValueError, match="unknown field 'thought'"):
        TraceSet(ts.logprob, ts.top_logprobs, ts.step_offsets, ts.traj_offsets, ts.meta,
                 step_fields={"thought": np.full(ts.n_steps, None, dtype=object)})
    with pytest.raises(ValueError, match="name must be one of"):
        ts.step_field("thought")


def test_store_keeps_the_fields(tmp_path):
    ts, _ = load_bytes(TWO, format="native")
    store = Store(tmp_path)
    rs = store.add_run_set(ts, name="two").run_set_id
    back = store.load_run_set(rs)
    assert [back.trajectory(i) for i in range(2)] == [ts.trajectory(i) for i in range(2)]


def _call(tid, step, messages, content, *, tool_calls=None, latency=None):
    msg = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    toks = content.split() or ["."]
    line = {"trajectory_id": tid, "step": step, "request": {"messages": messages},
            "response": {"id": f"c{step}", "object": "chat.completion", "model": "m", "choices": [{
                "index": 0, "message": msg, "finish_reason": "stop",
                "logprobs": {"content": [{"token": t, "logprob": -0.1, "top_logprobs": []} for t in toks]}}]}}
    if latency is not None:
        line["latency_s"] = latency
    return line


def test_call_log_messages_become_inputs_and_tool_results_observations():
    sys_q = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}]
    call = [{"id": "t1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]
    second = sys_q + [{"role": "assistant", "content": "", "tool_calls": call},
                      {"role": "tool", "tool_call_id": "t1", "content": "-3 C, snow"}]
    data = _lines(_call("r", 0, sys_q, "calling", tool_calls=call, latency=0.4),
                  _call("r", 1, second, "It is -3 C and snowing."))
    ts, rep = load_bytes(data, name="log.jsonl", format="openai-calllog")
    assert rep.rejected == 0
    steps = ts.trajectory(0)["steps"]
    assert steps[0]["input"] == "[system]\nBe brief.\n\n[user]\nWeather in Oslo?"
    assert steps[0]["tool"] == {"name": "weather", "arguments": {"city": "Oslo"}}
    assert steps[0]["observation"] == "-3 C, snow" and steps[0]["latency_s"] == 0.4
    assert steps[1]["input"] == "-3 C, snow" and "observation" not in steps[1]


def test_smolagents_and_atif_fields():
    smol, _ = load(FIX / "smolagents_run.json", format="smolagents")
    assert smol.step_field("error")[0].startswith("AgentParsingError: Error in code parsing")
    assert np.all(smol.step_field("latency_s") > 0)
    assert smol.step_field("input")[0].startswith("[system]\n")
    atif, _ = load(FIX / "atif.json", format="atif")
    assert atif.step_field("input")[0] == "[user]\nWhat is the capital of France?"
    assert atif.step_field("observation")[0] == "Paris is the capital and largest city of France."


# ------------------------------------------------------------------ the shipped sample runs
@pytest.fixture(scope="module")
def samples():
    ts, rep = load(SAMPLES, format="native")
    assert rep.rejected == 0
    return ts


def test_every_non_final_sample_step_has_its_observation(samples):
    last = np.zeros(samples.n_steps, dtype=bool)
    last[samples.traj_offsets[1:] - 1] = True
    obs = samples.step_field("observation")
    inp = samples.step_field("input")
    missing = [int(s) for s in np.flatnonzero(~last) if not obs[s]]
    assert not missing, f"{len(missing)} non-final steps without an observation"
    assert all(isinstance(v, str) and v for v in inp)
    # the observation of a step is exactly what came into the next call
    nxt = np.flatnonzero(~last)
    assert all(inp[s + 1] == f"Observation: {obs[s]}" for s in nxt)
    # a tool call on every step that took an action
    acts = [s for s in range(samples.n_steps) if ACTION.search(samples.step_text[s] or "")
            and not FINAL.search(samples.step_text[s])]
    tools = samples.step_field("tool")
    assert acts and all(tools[s] is not None for s in acts)


def test_sample_features_match_the_raw_recording(samples):
    """The completed files still give the features of the original call-log recording, to 1e-12."""
    raw, rep = load(SAMPLES / "_calllog" / "arithmetic_SmolLM2-135M-greedy.calllog.jsonl", format="openai-calllog")
    mine = samples.select(list(raw.ids))
    np.testing.assert_allclose(extract(mine).values, extract(raw).values, rtol=0, atol=1e-12)
    assert list(mine.step_text) == list(raw.step_text)
