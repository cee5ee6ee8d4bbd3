"""OpenTelemetry / OpenInference spans -> trajectories (shared by the ``otel`` file reader and ``htc serve``).

One trajectory per trace (or per ``session.id`` with ``group_by="session"``):

- its **steps** are its LLM spans in start-time order; each step's tokens, logprobs and top-k alternatives come
  from the raw provider response in the span's ``output.value`` (Chat Completions, Responses API or legacy
  completions JSON, read by the same parsers as call logs: ``formats.shapes``). An LLM span without logprobs is
  counted and reported with the fix (request ``logprobs=True, top_logprobs=5``), never silently dropped;
- a step's **input** is what its request added since the previous call (``llm.input_messages.*``, else
  ``input.value``); its **tool** is the response's tool call, else the TOOL span that followed it; its
  **observation** is the ``output.value`` of the TOOL span(s) that started after it and before the next LLM
  span; **latency** is the span's duration, **error** its status message when the status is ERROR (a failed
  TOOL span's error goes to the step before it);
- the **question** is the first user message of the first LLM span (else the root span's ``input.value``); the
  **answer** is the root AGENT/CHAIN span's plain-text ``output.value``, else what ``formats.answers`` finds;
  the model is ``llm.model_name`` (else the response's), ``service.name`` goes to the metadata.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..report import LoadReport
from .answers import question_of_messages
from .common import FieldError, MissingLogprobs
from .jsonio import ParseError, loads
from .logprobs import StepPart
from .otel_spans import STATUS_ERROR, Span, input_messages
from .records import RecordSink, TrajAcc, fail
from .shapes import find_response, parse_response, response_model
from .stepdetail import as_text, messages_text, new_messages, tool_of_message, tool_value

__all__ = ["SpanStats", "add_traces", "group_spans", "NO_LOGPROBS_FIX", "is_llm_span"]

NO_LOGPROBS_FIX = ("request logprobs=True, top_logprobs=5 from the model client (OpenAI: "
                   "client.chat.completions.create(..., logprobs=True, top_logprobs=5)) so that the raw response "
                   "the instrumentor records in output.value carries them")
_ROOT_ANSWER_KINDS = ("AGENT", "CHAIN")


@dataclass
class SpanStats:
    """What a batch of spans held (for the load report and the receiver's answer).

    Parameters
    ----------
    spans : int, default=0
        Spans read.
    llm_spans : int, default=0
        LLM spans among them (the candidate steps).
    tool_spans : int, default=0
        TOOL spans (attached to the LLM step before them).
    without_logprobs : int, default=0
        LLM spans whose response carries no logprobs (steps dropped, reported with :data:`NO_LOGPROBS_FIX`).
    unreadable : int, default=0
        Spans or lines that could not be read.
    traces : int, default=0
        Traces (or sessions) seen: one trajectory each, unless rejected.
    other_spans : int, default=0
        Spans of traces without any LLM span (such a trace is rejected).

    See Also
    --------
    add_traces : counts them.

    Examples
    --------
    >>> from htc_core.formats import otel
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> otel.read_file("tests/fixtures/foreign/otel_phoenix.parquet", builder=TraceSetBuilder(), report=LoadReport())
    SpanStats(spans=7, llm_spans=5, tool_spans=1, without_logprobs=1, unreadable=1, traces=3, other_spans=0)
    """

    spans: int = 0
    llm_spans: int = 0
    tool_spans: int = 0
    without_logprobs: int = 0
    unreadable: int = 0
    traces: int = 0
    other_spans: int = field(default=0)


def is_llm_span(sp: Span) -> bool:
    """Whether a span is an LLM call (a step).

    It is when its kind is ``LLM``, or when it has no kind and an ``llm.model_name``, ``llm.provider`` or
    ``gen_ai.system`` attribute.

    Parameters
    ----------
    sp : Span
        The span.

    Returns
    -------
    bool
        True for an LLM span.

    Examples
    --------
    >>> from htc_core.formats.otel_spans import Span
    >>> from htc_core.formats.otel_traces import is_llm_span
    >>> untyped = Span("t", "s1", None, "chat", "", None, None, "OK", None, {"gen_ai.system": "openai"})
    >>> tool = Span("t", "s2", None, "search", "TOOL", None, None, "OK", None)
    >>> is_llm_span(untyped), is_llm_span(tool)
    (True, False)
    """
    if sp.kind == "LLM":
        return True
    return sp.kind == "" and any(k in sp.attributes for k in ("llm.model_name", "llm.provider", "gen_ai.system"))


def group_spans(spans: list[Span], group_by: str | None = None) -> dict[str, list[Span]]:
    """Spans by trajectory: trace id, or the trace's ``session.id`` with ``group_by='session'``.

    Parameters
    ----------
    spans : list of Span
        The spans, any order.
    group_by : str, optional
        ``"session"`` (or ``"session.id"``, ``"session_id"``): the traces sharing a ``session.id`` attribute form
        one trajectory (a trace without one stays on its own); otherwise one trajectory per trace.

    Returns
    -------
    dict
        Trajectory id (trace id or session id) -> its spans, in first-seen order.

    Examples
    --------
    >>> from htc_core.formats.otel_spans import Span
    >>> from htc_core.formats.otel_traces import group_spans
    >>> spans = [Span(t, s, None, "chat", "LLM", None, None, "OK", None, {"session.id": "chat-7"})
    ...          for t, s in (("t1", "a"), ("t1", "b"), ("t2", "c"))]
    >>> {k: len(v) for k, v in group_spans(spans).items()}
    {'t1': 2, 't2': 1}
    >>> {k: len(v) for k, v in group_spans(spans, group_by="session").items()}
    {'chat-7': 3}
    """
    by_trace: dict[str, list[Span]] = {}
    for sp in spans:
        by_trace.setdefault(sp.trace_id, []).append(sp)
    if group_by not in ("session", "session.id", "session_id"):
        return by_trace
    out: dict[str, list[Span]] = {}
    for tid, sps in by_trace.items():
        sid = next((str(s.attr("session.id")) for s in sps if s.attr("session.id") not in (None, "")), tid)
        out.setdefault(sid, []).extend(sps)
    return out


def _start(sp: Span) -> int:
    """The span's start time for sorting (0 when missing)."""
    return sp.start_ns if sp.start_ns is not None else 0


def _response_of(sp: Span) -> Any:
    """The raw provider response in ``output.value`` (parsed when it is JSON text), or None."""
    v = sp.attr("output.value")
    if isinstance(v, str):
        if not v.lstrip().startswith(("{", "[")):
            return None
        try:
            v = loads(v)
        except ParseError as e:
            raise FieldError("output.value", v, f"output.value is not valid JSON ({e.reason})") from None
    return find_response(v) if isinstance(v, (dict, list)) else None


def _llm_step(sp: Span, acc: TrajAcc, report: LoadReport, file: str, line: int | None,
              stats: SpanStats) -> tuple[StepPart | None, Any]:
    """The step part of one LLM span (None when it is not usable: reported), and its response."""
    try:
        resp = _response_of(sp)
        if resp is None:
            raise MissingLogprobs("output.value", None, "LLM span without a raw model response in output.value",
                                  has_value=False)
        return parse_response(resp), resp
    except MissingLogprobs as e:
        stats.without_logprobs += 1
        acc.missing += 1
        report.warn(file, line, f"{e.reason}: step dropped; fix: {NO_LOGPROBS_FIX}", field=e.field or "output.value",
                    trajectory_id=acc.id)
    except FieldError as e:
        stats.unreadable += 1
        acc.missing += 1
        report.warn(file, line, f"LLM span {sp.span_id}: {e.reason}; step dropped", field=e.field,
                    trajectory_id=acc.id)
    return None, None


def _tool_detail(sp: Span) -> dict:
    """A TOOL span as step details: its tool call, observation and error."""
    name = sp.attr("tool.name") or sp.name or "tool"
    args = sp.attr("tool.parameters")
    if args is None:
        args = sp.attr("input.value")
    if isinstance(args, str) and args.lstrip()[:1] in ("{", "["):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    d = {"tool": tool_value({"name": str(name), "arguments": args}), "observation": as_text(sp.attr("output.value"))}
    if sp.status == STATUS_ERROR:
        d["error"] = sp.status_message or "the tool span ended with status ERROR"
    return d


def _merge_tool(detail: dict, tool: dict) -> None:
    """Add a TOOL span's details to the LLM step before it (the step's own tool call wins)."""
    if tool.get("tool") and "tool" not in detail:
        detail["tool"] = tool["tool"]
    for key in ("observation", "error"):
        if tool.get(key):
            detail[key] = detail[key] + "\n\n" + tool[key] if detail.get(key) else tool[key]


def _trace_meta(acc: TrajAcc, spans: list[Span], llm: list[Span]) -> None:
    """The trajectory's question, answer, model, service and root error from its spans."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in ids]
    root = min(roots, key=_start) if roots else None
    if llm:
        q = question_of_messages(input_messages(llm[0].attributes))
        if q:
            acc.meta["question"] = q
    if "question" not in acc.meta and root is not None and isinstance(root.attr("input.value"), str):
        acc.meta["question"] = root.attr("input.value")
    out = root.attr("output.value") if root is not None and root.kind in _ROOT_ANSWER_KINDS else None
    if isinstance(out, str) and out.strip() and not out.lstrip().startswith(("{", "[")):
        acc.meta["answer"] = out.strip()
    model = next((s.attr("llm.model_name") for s in llm if s.attr("llm.model_name")), None)
    if model:
        acc.meta["model"] = str(model)
    service = next((s.resource.get("service.name") for s in spans if s.resource.get("service.name")), None)
    if service:
        acc.metadata["service.name"] = service
    acc.metadata["trace_id"] = spans[0].trace_id
    if root is not None and root.status == STATUS_ERROR:
        acc.metadata["error"] = root.status_message or "the trace's root span ended with status ERROR"


def _new_input(sp: Span, first: bool) -> str | None:
    """What an LLM span's request added since the previous call (the whole input for the ``first``)."""
    msgs = input_messages(sp.attributes)
    if msgs:
        return messages_text(msgs if first else new_messages(msgs))
    v = sp.attr("input.value")
    return as_text(v) if first and v is not None else None


def trace_to_acc(tid: str, spans: list[Span], report: LoadReport, file: str, lines: dict, stats: SpanStats
                 ) -> TrajAcc:
    """One trajectory from the spans of one trace (or session)."""
    spans = sorted(spans, key=_start)
    llm = [s for s in spans if is_llm_span(s)]
    llm_ids = {id(s) for s in llm}
    acc = TrajAcc(tid, file, lines.get(spans[0].span_id))
    stats.llm_spans += len(llm)
    _trace_meta(acc, spans, llm)
    steps: list[tuple[Span, StepPart, dict]] = []
    for sp in spans:
        line = lines.get(sp.span_id)
        if id(sp) in llm_ids:
            part, resp = _llm_step(sp, acc, report, file, line, stats)
            if part is None:
                continue
            if "model" not in acc.meta and response_model(resp):
                acc.meta["model"] = response_model(resp)
            d = {"latency_s": sp.latency_s}
            choices = resp.get("choices") if isinstance(resp, dict) else None
            t = tool_of_message(choices[0].get("message")) if isinstance(choices, list) and choices and \
                isinstance(choices[0], dict) else None
            if t:
                d["tool"] = t
            inp = _new_input(sp, not steps)
            if inp:
                d["input"] = inp
            if sp.status == STATUS_ERROR:
                d["error"] = sp.status_message or "the LLM span ended with status ERROR"
            steps.append((sp, part, d))
        elif sp.kind == "TOOL":
            stats.tool_spans += 1
            if steps:
                _merge_tool(steps[-1][2], _tool_detail(sp))
                report.tool_lines += 1
    for sp, part, d in steps:
        acc.add(sp.name or "llm_call", part, {k: v for k, v in d.items() if v is not None})
    return acc


def add_traces(spans: list[Span], sink: RecordSink, *, lines: dict | None = None, group_by: str | None = None,
               rename=None) -> SpanStats:
    """Every trajectory of ``spans`` into ``sink`` (built, checked and counted there).

    Shared by the ``otel`` file reader and the ``htc serve`` OTLP receiver. A trace whose LLM spans all lack
    logprobs, or that has no LLM span, is rejected with the reason (and the fix); one trace that fails never
    costs the others.

    Parameters
    ----------
    spans : list of Span
        The spans, any order.
    sink : RecordSink
        Where the trajectories go (``htc_core.formats.records.RecordSink``: a builder, a report, defaults and
        the file name used in the report).
    lines : dict, optional
        Span id -> the line (or row) it came from, for the report.
    group_by : str, optional
        As :func:`group_spans`.
    rename : callable, optional
        ``rename(id) -> id``: the trajectory id to use for a trace (or session) id (the receiver's ``id@2``
        for one it stored before).

    Returns
    -------
    SpanStats
        What the spans held.

    Examples
    --------
    >>> import json
    >>> from htc_core.formats.otel_spans import span_of_row
    >>> with open("tests/fixtures/foreign/otel_phoenix.jsonl") as fh:
    ...     spans = [span_of_row(json.loads(line)) for line in fh.readlines()[:7]]
    >>> from htc_core.formats.otel_traces import add_traces
    >>> from htc_core.formats.records import RecordSink
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> stats = add_traces(spans, RecordSink(builder, report, None, "spans.jsonl"))
    >>> stats.traces, stats.llm_spans, stats.tool_spans, stats.without_logprobs
    (3, 5, 1, 1)
    >>> builder.build().steps_per_trajectory.tolist()
    [2, 1, 1]
    """
    stats = SpanStats(spans=len(spans))
    for tid, group in group_spans(spans, group_by).items():
        stats.traces += 1
        tid = rename(tid) if rename is not None else tid
        try:
            acc = trace_to_acc(tid, group, sink.report, sink.file, lines or {}, stats)
        except Exception as e:  # noqa: BLE001 - one bad trace never costs the others
            fail(None, sink.report, sink.file, None, f"trace could not be read ({type(e).__name__}: {e})", tid=tid)
            continue
        if not acc.steps and acc.missing:
            fail(acc, sink.report, sink.file, acc.line,
                 f"trajectory rejected: none of its {acc.missing} LLM span(s) has logprobs; fix: {NO_LOGPROBS_FIX}")
            continue
        if not acc.steps:
            stats.other_spans += len(group)
            fail(acc, sink.report, sink.file, acc.line, "trajectory rejected: the trace has no LLM span "
                 "(openinference.span.kind = LLM)")
            continue
        sink.finish(acc, acc.line)
    return stats
