"""The OpenTelemetry reader (``--format otel``): the same runs as OTLP JSON and as a Phoenix spans export (JSONL and
Parquet) import to the same trajectories; malformed spans are counted and explained, nothing valid is lost."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from htc_core.formats import detect, load
from htc_core.formats.otel_spans import SpanError, span_of_row, spans_of_otlp

FOREIGN = REPO / "tests" / "fixtures" / "foreign"
SHAPES = ["otel_otlp.jsonl", "otel_phoenix.jsonl", "otel_phoenix.parquet"]


def _load(name):
    ts, rep = load(FOREIGN / name)
    return ts, rep


def _same(a, b):
    assert list(a.ids) == list(b.ids)
    np.testing.assert_array_equal(a.logprob, b.logprob)
    np.testing.assert_array_equal(a.top_logprobs, b.top_logprobs)
    np.testing.assert_array_equal(a.step_offsets, b.step_offsets)
    assert list(a.tokens) == list(b.tokens) and list(a.step_text) == list(b.step_text)
    assert list(a.step_name) == list(b.step_name)
    assert a.step_fields.keys() == b.step_fields.keys()
    for f in a.step_fields:
        assert [None if isinstance(x, float) and np.isnan(x) else x for x in a.step_fields[f]] == \
            [None if isinstance(x, float) and np.isnan(x) else x for x in b.step_fields[f]], f
    cols = ["id", "question", "answer", "model", "dataset", "framework"]
    pd.testing.assert_frame_equal(a.meta[cols], b.meta[cols])
    meta = [{k: v for k, v in json.loads(m).items() if k != "service.name"} for m in a.meta["metadata"]]
    assert meta == [{k: v for k, v in json.loads(m).items() if k != "service.name"} for m in b.meta["metadata"]]


@pytest.mark.parametrize("name", SHAPES)
def test_detected_as_otel(name):
    assert detect(FOREIGN / name) == ("otel", "")


def test_otlp_and_phoenix_exports_give_identical_trajectories():
    otlp, _ = _load("otel_otlp.jsonl")
    for name in SHAPES[1:]:
        _same(otlp, _load(name)[0])


def test_otlp_trajectories_hold_steps_tools_answers_and_errors():
    ts, rep = _load("otel_otlp.jsonl")
    m = ts.meta.set_index("id")
    t1, t2, t3 = "a" * 31 + "1", "b" * 31 + "2", "c" * 31 + "3"
    assert list(ts.ids) == [t1, t2, t3] and ts.k == 5
    assert m.loc[t1, "question"] == "What is 14 times 8?" and m.loc[t1, "answer"] == "112"   # the AGENT span's output
    assert m.loc[t2, "answer"] == "Canberra" and m.loc[t3, "answer"] == "4"                   # from the step text
    assert m.loc[t2, "model"] == "qwen-resp" and json.loads(m.loc[t1, "metadata"])["service.name"] == "toy-agent"
    assert list(np.diff(ts.traj_offsets)) == [2, 1, 1]          # the span without logprobs is dropped, reported
    assert json.loads(ts.step_field("tool")[0]) == {"name": "calculator", "arguments": "14*8"}
    assert list(ts.step_field("observation")) == ["112", None, None, None]
    assert list(ts.step_field("error")) == [None, None, None, "rate limited once"]
    assert ts.step_field("latency_s")[:2].tolist() == pytest.approx([0.002, 0.0025])
    assert ts.step_field("input")[1] == "Observation: 112"       # only what the second call added
    assert ts.step_text[1].endswith("Answer: 112")


@pytest.mark.parametrize("name", SHAPES)
def test_broken_spans_are_counted_and_explained_and_nothing_valid_lost(name):
    ts, rep = _load(name)
    assert rep.trajectories_read == 3 and rep.rejected == (1 if name.endswith(".jsonl") else 0)   # the broken line
    why = [p.reason for p in rep.problems]
    assert any("no context.trace_id" in w or "no traceId" in w for w in why)
    assert sum("logprobs=True, top_logprobs=5" in w for w in why) == 2        # the span, and the file's count
    assert any("1 of 5 LLM span(s) carry no logprobs" in w for w in why)
    if name.endswith(".jsonl"):
        assert any("malformed JSON" in w and "other traces are read" in w for w in why)


def test_a_trace_without_logprobs_is_rejected_with_the_fix(tmp_path):
    span = {"traceId": "f" * 32, "spanId": "1" * 16, "name": "llm", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                           {"key": "output.value", "value": {"stringValue": json.dumps(
                               {"object": "chat.completion", "choices": [{"index": 0, "message": {
                                   "role": "assistant", "content": "hi"}}]})}}]}
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n")
    ts, rep = load(p, format="otel")
    assert len(ts) == 0 and rep.rejected == 1
    assert any("none of its 1 LLM span(s) has logprobs" in e.reason and "top_logprobs=5" in e.reason
               for e in rep.errors)


def test_span_values_are_checked():
    errors = []
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "AAECAwQFBgcICQoLDA0ODw==", "spanId": "AAECAwQFBgc=", "startTimeUnixNano": "5"},   # base64 ids
        {"traceId": "ab" * 16, "spanId": "cd" * 8, "startTimeUnixNano": "yesterday"},
        "not a span"]}]}]}
    spans = spans_of_otlp(doc, lambda e, where: errors.append((e.field, where)))
    assert [(s.trace_id, s.span_id, s.start_ns) for s in spans] == [("000102030405060708090a0b0c0d0e0f",
                                                                      "0001020304050607", 5)]
    assert errors == [("startTimeUnixNano", "resourceSpans[0].scopeSpans[0].spans[1]"),
                      ("span", "resourceSpans[0].scopeSpans[0].spans[2]")]
    with pytest.raises(SpanError, match="context.trace_id"):
        span_of_row({"context.span_id": "1" * 16})
    row = span_of_row({"context": {"trace_id": "1" * 32, "span_id": "2" * 16}, "span_kind": "tool",
                       "start_time": 1_700_000_000_000, "attributes": {"tool": {"name": "x"}}})
    assert row.kind == "TOOL" and row.attr("tool.name") == "x" and row.start_ns == 1_700_000_000_000 * 1_000_000


def test_group_by_session(tmp_path):
    def line(trace, sid, t):
        chat = {"object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": {
            "role": "assistant", "content": "a"}, "logprobs": {"content": [{"token": "a", "logprob": -0.5,
                                                                          "top_logprobs": []}]}}]}
        return json.dumps({"context.trace_id": trace, "context.span_id": sid + "0" * 15, "span_kind": "LLM",
                           "start_time": t, "attributes.session.id": "s1",
                           "attributes.output.value": json.dumps(chat)})
    p = tmp_path / "spans.jsonl"
    p.write_text(line("1" * 32, "a", 1) + "\n" + line("2" * 32, "b", 2) + "\n")
    assert len(load(p)[0]) == 2
    ts, _ = load(p, group_by="session")
    assert list(ts.ids) == ["s1"] and ts.n_steps == 2


_BAD_VALUES = st.sampled_from([None, "", 0, -1, True, 1e308, "zz", [], {}, "not json {", [{"key": 1}],
                               {"stringValue": 5}, "9" * 40])


@settings(max_examples=60, deadline=None)
@given(line=st.integers(0, 6), key=st.sampled_from(["traceId", "spanId", "parentSpanId", "startTimeUnixNano",
                                                    "endTimeUnixNano", "attributes", "status", "name"]),
       value=_BAD_VALUES, drop=st.booleans())
def test_one_broken_span_never_costs_the_other_traces(tmp_path_factory, line, key, value, drop):
    """Any single span broken in any field: no exception, every trace it does not belong to reads as before."""
    lines = [json.loads(x) for x in (FOREIGN / "otel_otlp.jsonl").read_text().splitlines() if x.startswith('{"')]
    span = lines[line]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    hit = span.get("traceId")
    if drop:
        span.pop(key, None)
    else:
        span[key] = value
    p = tmp_path_factory.mktemp("otel") / "spans.jsonl"
    p.write_text("".join(json.dumps(d) + "\n" for d in lines))
    ts, rep = load(p, format="otel")
    want, _ = _load("otel_otlp.jsonl")
    keep = [i for i in want.ids if i != hit]
    for tid in keep:
        assert tid in list(ts.ids), (tid, rep.summary())
    a = want.take([list(want.ids).index(i) for i in keep])
    b = ts.take([list(ts.ids).index(i) for i in keep])
    np.testing.assert_array_equal(a.logprob, b.logprob)
