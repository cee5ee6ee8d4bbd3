"""End to end, no mocks: an ``openai`` client instrumented by ``openinference-instrumentation-openai`` (through
``opentelemetry-sdk``) drives a short ReAct-style agent against the REAL local llama.cpp server (SmolLM2, as the
recorder's test); its spans go both to an OTLP JSON file (the Collector file exporter's shape) and, over OTLP/HTTP
protobuf, to ``htc serve``'s receiver. Both paths must give the logprobs of the raw responses, the tool
observations, and the same 48 features.

Needs ``pip install 'htc-calibration[otel]' opentelemetry-sdk opentelemetry-exporter-otlp-proto-http
openinference-instrumentation-openai openai`` and the local server (skipped with the reason otherwise, like the
other model-server tests)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.model_server

otel_sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is not installed")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter",
                    reason="opentelemetry-exporter-otlp-proto-http is not installed")
pytest.importorskip("openinference.instrumentation.openai", reason="openinference-instrumentation-openai is missing")
openai = pytest.importorskip("openai", reason="the openai package is not installed")

from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

from conftest import REPO  # noqa: E402
from htc_core.formats import detect, load  # noqa: E402
from htc_core.features import extract  # noqa: E402

MODEL = "SmolLM2-135M-Instruct"
QUESTIONS = [("What is 14 times 8?", "14*8"), ("What is 9 plus 33?", "9+33")]


class OTLPJsonFileExporter(SpanExporter):
    """Writes each export as one OTLP JSON ExportTraceServiceRequest line, as the Collector's file exporter does
    (the SDK's own OTLP encoder, then protobuf's JSON mapping)."""

    def __init__(self, path):
        self.path, self.lock = path, threading.Lock()

    def export(self, spans):
        from google.protobuf.json_format import MessageToJson
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        line = json.dumps(json.loads(MessageToJson(encode_spans(spans))))
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass


def _calculator(expr: str) -> str:
    a, op, b = re.fullmatch(r"(\d+)([*+])(\d+)", expr).groups()
    return str(int(a) * int(b) if op == "*" else int(a) + int(b))


def _agent(client, tracer, question: str, expr: str) -> list:
    """Two LLM calls around one tool call, under an AGENT span; returns the raw responses."""
    from opentelemetry.trace import Status, StatusCode

    msgs = [{"role": "system", "content": "Think step by step, then give 'Answer: <number>'."},
            {"role": "user", "content": question}]
    raw = []
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT",
                                                            "input.value": question}) as root:
        for step in range(2):
            r = client.chat.completions.create(model=MODEL, messages=msgs, max_tokens=12, temperature=0.0, seed=1,
                                               logprobs=True, top_logprobs=5)
            raw.append(r)
            msgs.append({"role": "assistant", "content": r.choices[0].message.content or ""})
            if step == 0:
                with tracer.start_as_current_span("calculator", attributes={
                        "openinference.span.kind": "TOOL", "tool.name": "calculator", "input.value": expr}) as t:
                    obs = _calculator(expr)
                    t.set_attribute("output.value", obs)
                    t.set_status(Status(StatusCode.OK))
                msgs.append({"role": "user", "content": f"Observation: {obs}"})
        root.set_attribute("output.value", f"Answer: {_calculator(expr)}")
    return raw


def _start_htc_serve(data_dir) -> tuple[subprocess.Popen, int, list]:
    """``htc serve`` as a user runs it (a process of its own, a free port), and the port it reports."""
    proc = subprocess.Popen([sys.executable, "-m", "htc_core", "serve", "--port", "0", "--data-dir", str(data_dir),
                             "--settle", "0.5"], cwd=REPO, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    lines: list[str] = []
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stderr.readline()
        lines.append(line)
        m = re.search(r"http://127\.0\.0\.1:(\d+)/v1/traces", line)
        if m:
            threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
            return proc, int(m.group(1)), lines
        assert proc.poll() is None, "".join(lines)
    proc.kill()
    pytest.fail("htc serve did not start: " + "".join(lines))


def test_traced_agent_to_file_and_to_htc_serve(base_url, tmp_path):
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource

    from htc_core.app.store import Store

    proc, port, log = _start_htc_serve(tmp_path / "data")
    host = "127.0.0.1"
    path = tmp_path / "spans.otlp.jsonl"
    provider = otel_sdk.TracerProvider(resource=Resource.create({"service.name": "e2e-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPJsonFileExporter(path)))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://{host}:{port}/v1/traces")))
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=base_url, api_key="none")
        tracer = provider.get_tracer("e2e")
        raw = [r for q, e in QUESTIONS for r in _agent(client, tracer, q, e)]
    finally:
        inst.uninstrument()
        provider.shutdown()
        proc.send_signal(signal.SIGINT)              # Ctrl-C: htc serve stores every trace it holds, then exits
        assert proc.wait(timeout=120) == 0, "".join(log)
    store = Store(tmp_path / "data")

    assert detect(path) == ("otel", "")
    from_file, rep = load(path)
    assert rep.rejected == 0 and len(from_file) == 2, rep.summary()
    (rs,) = store.list_run_sets().itertuples()
    assert rs.name.startswith("otel: e2e-agent · ")
    live = store.load_run_set(rs.id)
    live = live.take([list(live.ids).index(i) for i in from_file.ids])

    # the logprobs of the raw responses, step by step, on both paths
    want = np.concatenate([[c.logprob for c in r.choices[0].logprobs.content] for r in raw])
    np.testing.assert_allclose(from_file.logprob, want, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(live.logprob, from_file.logprob)
    np.testing.assert_array_equal(live.top_logprobs, from_file.top_logprobs)
    assert from_file.k == 5 and from_file.n_steps == 4
    # the tool observation and call kept, on the step before the tool span
    for ts in (from_file, live):
        assert list(ts.step_field("observation")) == ["112", None, "42", None]
        assert json.loads(ts.step_field("tool")[0]) == {"name": "calculator", "arguments": "14*8"}
        assert list(ts.meta["question"]) == [q for q, _ in QUESTIONS]
        assert list(ts.meta["answer"]) == ["Answer: 112", "Answer: 42"]
    # the same 48 features from both paths
    a, b = extract(from_file), extract(live)
    assert a.values.shape == (2, 48)
    np.testing.assert_array_equal(a.values, b.values)
    # scored by the shipped GAC, one summary line per flush with the applicability verdict
    meta = [json.loads(m) for m in live.meta["metadata"]]
    assert all(m["htc_scored_by"] == "gac" and 0 <= m["htc_confidence"] <= 1 for m in meta)
    assert any(line.startswith("stored ") and "scored by gac (" in line and "applicability" in line
               for line in log), "".join(log)
