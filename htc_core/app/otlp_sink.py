"""Live OpenTelemetry traces into the dashboard's store: the buffer behind ``htc serve``.

Spans arrive in any order and any batching. :class:`TraceBuffer` keeps them by trace id until the trace is
finished: its root span (no parent) has arrived and no span came for ``settle_s`` seconds, or no span came for
``idle_s`` seconds at all. :meth:`TraceBuffer.flush` turns the finished traces into trajectories
(``formats.otel_traces``: the same code as the file reader), scores each with the chosen model (the shipped
GAC by default), and writes them into one run set per service name and day (``otel: <service> · <date>``).

A run set is written atomically, so a day's run set is rewritten with the new runs added (the old one is
deleted after the new one is stored); the dashboard reads the store's revision on every rerun and shows the
new runs without a restart. Spans of a trace (with ``group_by="session"``: a session) that was already stored
make a second trajectory with the id ``<id>@2`` rather than being lost. Problems go to a :class:`~htc_core.report.LoadReport` kept with the
run set (the dashboard's load report).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..formats.otel_spans import Span
from ..formats.otel_traces import add_traces
from ..formats.records import RecordSink
from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from ..traces.traceset import concat
from .ingest import store_trace_set
from .store import Store

__all__ = ["TraceBuffer", "FlushResult", "run_set_name"]

SETTING = "otel-run-set:"          # store setting: run set name -> the id of its current run set


def run_set_name(service: str | None, day: str) -> str:
    return f"otel: {service or 'unknown service'} · {day}"


@dataclass
class _Pending:
    spans: list[Span] = field(default_factory=list)
    last: float = 0.0
    has_root: bool = False


@dataclass
class FlushResult:
    run_sets: dict = field(default_factory=dict)      # run set name -> trajectories added
    scores: dict = field(default_factory=dict)        # trajectory id -> calibrated confidence
    report: LoadReport = field(default_factory=LoadReport)


class TraceBuffer:
    """Spans by trace until finished; ``flush`` stores the finished ones. Thread-safe."""

    def __init__(self, store: Store, *, model="gac", settle_s: float = 2.0, idle_s: float = 30.0,
                 group_by: str | None = None, max_spans: int = 1_000_000, clock=time.monotonic):
        from ..calibration.models import load_model

        self.store, self.settle_s, self.idle_s, self.group_by, self.clock = store, settle_s, idle_s, group_by, clock
        self.model = load_model(model) if isinstance(model, str) else model
        self.pending: dict[str, _Pending] = {}
        self.max_spans, self.held = int(max_spans), 0    # past max_spans held, the oldest traces are finished
        self.flushed: dict[str, int] = {}
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()

    def add(self, spans: list[Span]) -> None:
        now = self.clock()
        with self.lock:
            for sp in spans:
                p = self.pending.setdefault(sp.trace_id, _Pending())
                p.spans.append(sp)
                p.last = now
                p.has_root = p.has_root or sp.parent_id is None
            self.held += len(spans)

    def _take_finished(self, force: bool) -> list[list[Span]]:
        now = self.clock()
        with self.lock:
            done = [t for t, p in self.pending.items() if force or now - p.last >= self.idle_s
                    or (p.has_root and now - p.last >= self.settle_s)]
            left = self.held - sum(len(self.pending[t].spans) for t in done)
            for t, p in sorted(self.pending.items(), key=lambda kv: kv[1].last):   # memory bound: oldest first
                if left <= self.max_spans:
                    break
                if t not in done:
                    done.append(t)
                    left -= len(p.spans)
            out = [self.pending.pop(t).spans for t in done]
            self.held = left
            return out

    def flush(self, *, force: bool = False) -> FlushResult:
        """Store every finished trace (all of them with ``force``); returns what was written."""
        out = FlushResult()
        traces = self._take_finished(force)
        if not traces:
            return out
        with self.write_lock:
            for (service, day), spans in _by_service_day(traces).items():
                ts = self._trajectories(spans, service, out.report)
                if ts.n_trajectories:
                    name = run_set_name(service, day)
                    out.scores.update(self._score(ts))
                    self._write(name, ts, out.report)
                    out.run_sets[name] = ts.n_trajectories
        return out

    def _trajectories(self, spans: list[Span], service: str | None, report: LoadReport) -> TraceSet:
        builder = TraceSetBuilder()
        file = f"otlp:{service or 'unknown service'}"
        add_traces(spans, RecordSink(builder, report, {"source": file}, file), group_by=self.group_by,
                   rename=self._new_id)
        return builder.build()

    def _new_id(self, tid: str) -> str:
        """A trace (or session) already stored keeps its trajectory; later spans of it make ``id@2``, ``id@3``."""
        n = self.flushed.get(tid, 0)
        self.flushed[tid] = n + 1
        return tid if n == 0 else f"{tid}@{n + 1}"

    def _score(self, ts: TraceSet) -> dict:
        from ..scoring import score_frame

        frame = score_frame(self.model, ts)
        scored_by = getattr(self.model, "display_name", None) or getattr(self.model, "name", None) \
            or type(self.model).__name__
        metas = []
        for i, c in enumerate(frame["confidence"]):
            m = ts.metadata_of(i)
            m.update({"htc_confidence": float(c), "htc_scored_by": str(scored_by)})
            metas.append(json.dumps(m, ensure_ascii=False))
        ts.meta["metadata"] = metas
        return dict(zip(map(str, ts.ids), map(float, frame["confidence"])))

    def _write(self, name: str, ts: TraceSet, report: LoadReport) -> None:
        old = self.store.get_setting(SETTING + name)
        if old and old in self.store.run_set_ids():
            ts = concat([self.store.load_run_set(old), ts])
        res = store_trace_set(self.store, ts, report, name=name)
        self.store.set_setting(SETTING + name, res.run_set_id)
        if old and old != res.run_set_id:
            self.store.delete_run_set(old)


def _day(spans: list[Span]) -> str:
    start = min((s.start_ns for s in spans if s.start_ns is not None), default=None)
    when = datetime.now(timezone.utc) if start is None else datetime.fromtimestamp(start / 1e9, tz=timezone.utc)
    return when.strftime("%Y-%m-%d")


def _by_service_day(traces: list[list[Span]]) -> dict[tuple, list[Span]]:
    out: dict[tuple, list[Span]] = {}
    for spans in traces:
        service = next((s.resource.get("service.name") for s in spans if s.resource.get("service.name")), None)
        out.setdefault((service, _day(spans)), []).extend(spans)
    return out
