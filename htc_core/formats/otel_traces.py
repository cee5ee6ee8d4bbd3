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
    """What a batch of spans held (for the load report and the receiver's answer)."""

    spans: int = 0
    llm_spans: int = 0
    tool_spans: int = 0
    without_logprobs: int = 0
    unreadable: int = 0
    traces: int = 0
    other_spans: int = field(default=0)


def is_llm_span(sp: Span) -> bool:
    if sp.kind == "LLM":
        return True
    return sp.kind == "" and any(k in sp.attributes for k in ("llm.model_name", "llm.provider", "gen_ai.system"))


def group_spans(spans: list[Span], group_by: str | None = None) -> dict[str, list[Span]]:
    """Spans by trajectory: trace id, or the trace's ``session.id`` with ``group_by='session'``."""
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
    if tool.get("tool") and "tool" not in detail:
        detail["tool"] = tool["tool"]
    for key in ("observation", "error"):
        if tool.get(key):
            detail[key] = detail[key] + "\n\n" + tool[key] if detail.get(key) else tool[key]


def _trace_meta(acc: TrajAcc, spans: list[Span], llm: list[Span]) -> None:
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
    """Every trajectory of ``spans`` into ``sink`` (built, checked and counted there). ``rename(id) -> id``: the
    trajectory id to use for a trace (or session) id (the receiver's ``id@2`` for one it stored before)."""
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
