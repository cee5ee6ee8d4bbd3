"""OpenTelemetry traces from a file (``--format otel``): OTLP JSON or a Phoenix/OpenInference spans export.

Accepted files (detected from their first values, or by the ``.parquet`` suffix):

- OTLP JSON as the OpenTelemetry Collector's file exporter writes it: one ``{"resourceSpans": [...]}`` request per
  line (JSONL), or a single such document (``.json``);
- a Phoenix spans export: ``px.Client().get_spans_dataframe()`` saved with ``df.to_parquet(...)`` or
  ``df.to_json(..., orient="records", lines=True)`` (one span per row: ``context.trace_id``, ``context.span_id``,
  ``parent_id``, ``span_kind``, ``start_time``, ``end_time``, ``status_code``, ``attributes.*``).

How spans become trajectories: ``formats.otel_traces``. A line that is neither, a span without ids or with a bad
time, and an LLM span without logprobs are reported (file, line, field, reason, and the fix for logprobs); every
other span of the file is still read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from .common import type_name
from .inputs import Inputs, read_with
from .jsonio import NO_DOCUMENT, ParseError, container_kind, iter_reported_lines, loads, read_document_reported
from .otel_spans import Span, SpanError, hex_id, is_otlp, is_span_row, span_of_row, spans_of_otlp
from .otel_traces import SpanStats, add_traces
from .records import RecordSink

NAME = "otel"
PARQUET_SUFFIXES = (".parquet", ".pq")

__all__ = ["read", "read_file", "PARQUET_SUFFIXES"]

# a trace id in the raw bytes of a line that is not valid JSON (OTLP JSON or a Phoenix row)
_TRACE_ID = re.compile(rb'"(?:traceId|trace_id|context\.trace_id)"\s*:\s*"([0-9A-Za-z+/=_-]{1,100})"')


class _Spans:
    """The spans of one file, with the line (or row) each came from."""

    def __init__(self, file: str, report: LoadReport):
        self.file, self.report = file, report
        self.spans: list[Span] = []
        self.lines: dict[str, int] = {}
        self.bad = 0
        self.failed: set[str] = set()      # traces with a line that could not be read: rejected whole

    def unreadable(self, no: int, raw: bytes, e: ParseError) -> None:
        """A line that is not JSON: the trace it belongs to (when its id is in the bytes) is rejected, since
        some of its spans are lost; otherwise the line's spans are lost and the other traces read."""
        self.bad += 1
        m = _TRACE_ID.search(raw)
        tid = None
        if m:
            try:
                tid = hex_id(m.group(1).decode("ascii"), "traceId", required=False)
            except SpanError:
                tid = None
        if tid:
            self.failed.add(tid)
            why = f"{e.reason}; spans of trace {tid} are lost, so that trajectory is rejected"
        else:
            why = f"{e.reason}; the spans of this line are lost, the other traces are read"
        self.report.error(self.file, no, why, field=e.field, value=e.value, trajectory_id=tid)

    def error(self, e: SpanError, line: int | None, where: str = "") -> None:
        """A span that could not be read: reported, and skipped."""
        self.bad += 1
        self.report.error(self.file, line, f"{where + ': ' if where else ''}{e.reason}; span skipped", field=e.field,
                          value=e.value, has_value=e.value is not None, rejects=False)

    def add_value(self, obj: Any, line: int | None) -> None:
        """Keep the spans of one JSON value (an OTLP request, a Phoenix row or a list of them)."""
        if is_otlp(obj):
            for sp in spans_of_otlp(obj, lambda e, where: self.error(e, line, where)):
                self._keep(sp, line)
        elif is_span_row(obj):
            try:
                self._keep(span_of_row(obj), line)
            except SpanError as e:
                self.error(e, line)
        elif isinstance(obj, list):
            for el in obj:
                self.add_value(el, line)
        else:
            self.bad += 1
            self.report.error(self.file, line, "neither an OTLP JSON request (resourceSpans) nor a Phoenix span row "
                              f"(context.trace_id); got {type_name(obj)}", value=obj, rejects=False)

    def _keep(self, sp: Span, line: int | None) -> None:
        self.spans.append(sp)
        self.lines.setdefault(sp.span_id, line)


def _parquet_rows(path: Path):
    """(row number from 1, row as a dict) of a Parquet file."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for i, row in enumerate(table.to_pylist(), start=1):
        yield i, row


def collect_spans(path: Path, report: LoadReport) -> _Spans:
    """Every readable span of one file (problems reported; internal: :func:`read_file`)."""
    file = str(path)
    out = _Spans(file, report)
    if str(path).lower().endswith(PARQUET_SUFFIXES):
        for i, row in _parquet_rows(path):
            report.lines_read += 1
            out.add_value(row, i)
        return out
    if container_kind(path) != "jsonl":
        doc = read_document_reported(path, report, file)
        if doc is not NO_DOCUMENT:
            out.add_value(doc, 1)
        return out
    for no, raw in iter_reported_lines(path, report, file):
        try:
            obj = loads(raw)
        except ParseError as e:
            out.unreadable(no, raw, e)
            continue
        out.add_value(obj, no)
    return out


def read_file(path, *, builder: TraceSetBuilder, report: LoadReport, defaults: dict | None = None,
              group_by: str | None = None, **_: Any) -> SpanStats:
    """Read one OTLP JSON / Phoenix spans file into ``builder``; returns what its spans held.

    The reader protocol of every format (``htc_core.formats.READERS``): the trajectories go to ``builder``,
    every problem to ``report``. A trace with an unreadable line is rejected whole; a bad span is reported and
    skipped; LLM spans without logprobs are counted in a warning that says how to request them.

    Parameters
    ----------
    path : str or path
        An OTLP JSON file (JSONL or one document), or a Phoenix spans export (``.parquet`` or JSONL).
    builder : TraceSetBuilder
        Where the trajectories go (one per trace).
    report : LoadReport
        Where the problems go.
    defaults : dict, optional
        Metadata filled in where a trace has none.
    group_by : str, optional
        ``"session"``: one trajectory per ``session.id`` instead of one per trace.
    **_
        Other readers' options (ignored).

    Returns
    -------
    SpanStats
        How many spans, LLM spans, tool spans and traces the file held, and how many had no logprobs or could
        not be read.

    Examples
    --------
    >>> from htc_core.formats import otel
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> stats = otel.read_file("tests/fixtures/foreign/otel_phoenix.parquet", builder=builder, report=report)
    >>> stats.traces, stats.llm_spans, stats.without_logprobs
    (3, 5, 1)
    >>> builder.build().steps_per_trajectory.tolist()
    [2, 1, 1]
    """
    path = Path(path)
    file = str(path)
    spans = collect_spans(path, report)
    if not spans.spans and not spans.bad:
        report.error(file, None, "file holds no spans")
    kept = [sp for sp in spans.spans if sp.trace_id not in spans.failed]
    stats = add_traces(kept, RecordSink(builder, report, defaults, file, framework=None),
                       lines=spans.lines, group_by=group_by)
    stats.unreadable += spans.bad
    if stats.without_logprobs:
        report.warn(file, None, f"{stats.without_logprobs} of {stats.llm_spans} LLM span(s) carry no logprobs in "
                                "their output.value; request logprobs=True, top_logprobs=5")
    return stats


def sniff(sample) -> str | None:
    """None when the sampled values of a JSON/JSONL file are OTLP requests or Phoenix span rows, else why not."""
    if not sample.objs:
        return sample.why_empty or "no JSON value"
    for obj in sample.objs:
        if is_otlp(obj) or is_span_row(obj):
            return None
        if isinstance(obj, list) and obj and (is_span_row(obj[0]) or is_otlp(obj[0])):
            return None
    return "no OTLP JSON request (resourceSpans[]) and no Phoenix span row (context.trace_id)"


def sniff_parquet(path: Path) -> str | None:
    """None when a Parquet file's columns are a Phoenix spans export, else why not (internal: ``detect``)."""
    try:
        import pyarrow.parquet as pq

        names = set(pq.read_schema(path).names)
    except Exception as e:  # noqa: BLE001 - any unreadable file is a reason, not a crash
        return f"not a readable Parquet file ({type(e).__name__}: {e})"
    if "context.trace_id" in names or "context" in names:
        return None
    return "a Parquet file without a context.trace_id column (not a Phoenix spans export)"


def read(paths: Inputs, *, defaults: dict | None = None, report: LoadReport | None = None,
         group_by: str | None = None) -> tuple[TraceSet, LoadReport]:
    """Read OTLP JSON / Phoenix spans files or directories; returns (trace set, load report).

    One trajectory per trace (see :mod:`htc_core.formats.otel_traces` for how spans become steps). Bad lines
    and spans are reported (file, line, field, reason) and the other traces are still read.

    Parameters
    ----------
    paths : str, path or iterable of them
        Files and folders (a folder is searched recursively for files named like ``formats.SUFFIXES``).
    defaults : dict, optional
        Metadata filled in where a trace has none (e.g. ``{"dataset": "mine"}``).
    report : LoadReport, optional
        A report to add to (a new one by default).
    group_by : str, optional
        ``"session"``: one trajectory per ``session.id`` instead of one per trace.

    Returns
    -------
    ts : TraceSet
        The trajectories.
    report : LoadReport
        Counts and problems.

    Examples
    --------
    >>> from htc_core.formats import otel
    >>> ts, report = otel.read("tests/fixtures/foreign/otel_otlp.jsonl")
    >>> len(ts), ts.steps_per_trajectory.tolist(), ts.meta.loc[0, "question"]
    (3, [2, 1, 1], 'What is 14 times 8?')
    >>> [p.line for p in report.errors]
    [8, 9]
    >>> report.errors[0].reason
    'resourceSpans[0].scopeSpans[0].spans[0]: the span has no traceId; span skipped'
    """
    return read_with(read_file, paths, defaults=defaults, report=report, group_by=group_by)
