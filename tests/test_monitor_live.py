"""Live use: a Monitor carried by the Recorder, the smolagents step callback replayed on a recorded run, and
(with the local llama.cpp model) a real run stopped by the monitor.

The Recorder tests replay real responses of SmolLM2 recorded through the Recorder
(tests/fixtures/formats/calllog*.jsonl): a client that answers each call with the next recorded response.
What the monitor wrote during the run must equal the batch pipeline on the call log read back."""

from __future__ import annotations

import json

import numpy as np
import pytest

import htc_core as htc
from htc_core.collect import Recorder
from htc_core.collect.live import LowConfidence, smolagents_step_callback
from htc_core.monitor import Monitor
from htc_core.traces.prefix import prefixes

from conftest import REPO

FIX = REPO / "tests" / "fixtures" / "formats"


@pytest.fixture(scope="module")
def model():
    ts, _ = htc.load(REPO / "sample_runs" / "arithmetic")
    ts = ts.labeled()
    return htc.HTCCalibrator("full", alphas=(1.0,)).fit(htc.extract(ts), ts.labels)


def _recorded_calls(path):
    """trajectory id -> the recorded responses of its LLM calls, in order."""
    calls: dict[str, list] = {}
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        if "response" in obj and obj.get("endpoint") == "chat":
            calls.setdefault(obj["trajectory_id"], []).append(obj["response"])
    return calls


class ReplayClient:
    """An OpenAI-shaped client answering each call with the next recorded response (as a dict)."""

    def __init__(self, responses):
        self._responses = list(responses)
        self.chat = self
        self.completions = self

    def create(self, **kwargs):
        return self._responses.pop(0)


def _batch_confidences(model, calllog, tid):
    ts, _ = htc.load(calllog)
    one = ts.select([tid])
    return [float(model.predict_proba(htc.extract(prefixes(one, k), profile=model.profile_,
                                                  top_k=model.top_k_))[0, 1])
            for k in range(1, one.steps_per_trajectory[0] + 1)]


@pytest.mark.parametrize("fixture", ["calllog.jsonl", "calllog_stream.jsonl"])
def test_recorder_monitor_equals_batch_on_the_written_log(model, tmp_path, fixture):
    calls = _recorded_calls(FIX / fixture)
    out = tmp_path / "calls.jsonl"
    seen = {}
    with Recorder(out, monitor=Monitor(model)) as rec:
        for tid, responses in calls.items():
            client = rec.wrap(ReplayClient(responses))
            with rec.trajectory(tid):
                seen[tid] = []
                for _ in responses:
                    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
                    seen[tid].append(rec.confidence)          # available to the agent code
                assert rec.monitor.n_steps == len(responses)
    logged: dict[str, list] = {}
    for line in out.read_text().splitlines():
        obj = json.loads(line)
        if "monitor" in obj:
            logged.setdefault(obj["trajectory_id"], []).append(obj["monitor"])
    for tid in calls:
        batch = _batch_confidences(model, out, tid)
        assert [e["step"] for e in logged[tid]] == list(range(1, len(batch) + 1))
        assert np.allclose([e["confidence"] for e in logged[tid]], batch, atol=1e-9, rtol=0)
        assert np.allclose(seen[tid], batch, atol=1e-9, rtol=0)


def test_recorder_alert_stops_the_run_and_is_logged(model, tmp_path):
    calls = _recorded_calls(FIX / "calllog.jsonl")
    tid, responses = next(iter(calls.items()))
    assert len(responses) >= 2

    def stop(alert):
        raise LowConfidence(alert)

    out = tmp_path / "calls.jsonl"
    with Recorder(out, monitor=Monitor(model, threshold=1.0, on_alert=stop)) as rec:
        client = rec.wrap(ReplayClient(responses))
        made = 0
        with rec.trajectory(tid), pytest.raises(LowConfidence, match="after step 1"):
            for _ in responses:
                made += 1
                client.chat.completions.create(model="m", messages=[])
    assert made == 1
    lines = [json.loads(v) for v in out.read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["monitor"]["alert"] is True and lines[0]["monitor"]["step"] == 1


def test_parallel_trajectories_keep_their_own_monitor(model, tmp_path):
    calls = _recorded_calls(FIX / "calllog.jsonl")
    (ta, ra), (tb, rb) = list(calls.items())[:2]
    with Recorder(tmp_path / "c.jsonl", monitor=Monitor(model)) as rec:
        ca, cb = rec.wrap(ReplayClient(ra)), rec.wrap(ReplayClient(rb))
        for i in range(max(len(ra), len(rb))):        # interleaved calls of two runs
            for tid, client, resp in ((ta, ca, ra), (tb, cb, rb)):
                if i < len(resp):
                    with rec.trajectory(tid):
                        client.chat.completions.create(model="m", messages=[])
        with rec.trajectory(ta):
            got_a = list(rec.monitor.history)
        with rec.trajectory(tb):
            got_b = list(rec.monitor.history)
    assert np.allclose(got_a, _batch_confidences(model, tmp_path / "c.jsonl", ta), atol=1e-9)
    assert np.allclose(got_b, _batch_confidences(model, tmp_path / "c.jsonl", tb), atol=1e-9)


def test_call_without_logprobs_is_skipped_not_fatal(model, tmp_path):
    resp = {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "logprobs": None}]}
    with Recorder(tmp_path / "c.jsonl", monitor=Monitor(model)) as rec:
        rec.wrap(ReplayClient([resp])).chat.completions.create(model="m", messages=[])
        assert rec.monitor.n_steps == 0 and np.isnan(rec.confidence)
    line = json.loads((tmp_path / "c.jsonl").read_text())
    assert "skipped" in line["monitor"]


# ------------------------------------------------------------------ smolagents
class ReplayAgent:
    """Replays a recorded smolagents run step by step with smolagents' loop semantics: the interrupt switch
    is checked before each step, the step callbacks run after it with ``agent=self``."""

    def __init__(self, steps, step_callbacks):
        self.steps = steps
        self.step_callbacks = step_callbacks
        self.interrupt_switch = False
        self.done = []

    def interrupt(self):
        self.interrupt_switch = True

    def run(self):
        for st in self.steps:
            if self.interrupt_switch:
                return "Agent interrupted."
            self.done.append(st)
            for cb in self.step_callbacks:
                cb(st, agent=self)
        return "finished"


def _smolagents_steps():
    return json.loads((FIX / "smolagents_run.json").read_text())


def test_smolagents_callback_replay_matches_the_reader(model):
    steps = _smolagents_steps()
    mon = Monitor(model)
    flagged = []
    agent = ReplayAgent(steps, [smolagents_step_callback(mon, on_step=lambda st, c: flagged.append(c))])
    assert agent.run() == "finished"
    ts, _ = htc.load(FIX / "smolagents_run.json")
    n = ts.steps_per_trajectory[0]
    assert mon.n_steps == n >= 2 and flagged == mon.history
    batch = [float(model.predict_proba(htc.extract(prefixes(ts, k)))[0, 1]) for k in range(1, n + 1)]
    assert np.allclose(mon.history, batch, atol=1e-9, rtol=0)


def test_smolagents_callback_stops_a_run_below_the_threshold(model):
    steps = _smolagents_steps()
    with_raw = [i for i, st in enumerate(steps) if (st.get("model_output_message") or {}).get("raw")]
    assert len(with_raw) >= 2
    # threshold between the two first monitored confidences' minimum and 1: the alert comes at the first
    # monitored step whose confidence is below it, and the agent runs no step after that one
    probe = Monitor(model)
    ReplayAgent(steps, [smolagents_step_callback(probe)]).run()
    threshold = float(np.nextafter(probe.history[0], 1.0))          # the first monitored step is below
    mon = Monitor(model, threshold=threshold)
    agent = ReplayAgent(steps, [smolagents_step_callback(mon)])
    assert agent.run() == "Agent interrupted."
    assert mon.alerts[0].step == 1 and mon.n_steps == 1
    assert len(agent.done) == with_raw[0] + 1                         # stopped right after that step
    never = Monitor(model, threshold=0.0)                              # nothing is below 0: runs to the end
    agent = ReplayAgent(steps, [smolagents_step_callback(never)])
    assert agent.run() == "finished" and never.n_steps == len(probe.history)
    with pytest.raises(LowConfidence, match="after step 1"):            # no agent given: raise
        smolagents_step_callback(Monitor(model, threshold=1.0))(steps[with_raw[0]])


# ------------------------------------------------------------------ the local model, end to end
def test_local_model_run_is_stopped_by_the_monitor(base_url, model, tmp_path):
    """A real agent loop on SmolLM2: each call recorded, the monitor (threshold 1.0: any confidence is below)
    stops the run at its first call; the call log holds the confidence and equals the batch features."""
    from htc_core.collect import HTTPClient

    out = tmp_path / "calls.jsonl"

    def stop(alert):
        raise LowConfidence(alert)

    with Recorder(out, top_logprobs=5, monitor=Monitor(model, threshold=1.0, on_alert=stop)) as rec:
        llm = rec.wrap(HTTPClient(base_url))
        messages = [{"role": "user", "content": "What is 2 + 3? Think step by step."}]
        made = 0
        with rec.trajectory("live-run"), pytest.raises(LowConfidence):
            for _ in range(4):
                made += 1
                r = llm.chat.completions.create(model="SmolLM2", messages=messages, max_tokens=24, temperature=0)
                messages.append({"role": "assistant", "content": r["choices"][0]["message"]["content"]})
                messages.append({"role": "user", "content": "Continue."})
    assert made == 1
    line = json.loads(out.read_text().splitlines()[0])
    assert line["monitor"]["alert"] is True
    assert line["monitor"]["confidence"] == pytest.approx(_batch_confidences(model, out, "live-run")[0], abs=1e-9)
