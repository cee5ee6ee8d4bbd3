"""Live OpenTelemetry traces into the dashboard's store: the buffer behind ``htc serve``.

Spans arrive in any order and any batching. :class:`TraceBuffer` keeps them by trace id until the trace is
finished: its root span (no parent) has arrived and no span came for ``settle_s`` seconds, or no span came for
``idle_s`` seconds at all. :meth:`TraceBuffer.flush` turns the finished traces into trajectories
(``formats.otel_traces``: the same code as the file reader), scores each with the chosen model (the shipped
GAC by default) through the live :class:`~htc_core.monitor.Monitor` where it computes that model exactly (one
step at a time: the confidence after every step is kept, ``htc_confidence_steps``; with ``alert_below`` a run
whose confidence fell below it is named); a GAC with a ``transfer`` step (the shipped ``gac``: a training-free
signal mixed in, which the Monitor does not compute) scores the whole runs instead, and appends them to one run set per service name and day (``otel: <service> · <date>``,
:func:`~htc_core.app.store_append.append_run_set`): the run set keeps its id across flushes (a dashboard
selection of it stays), and a flush costs its own runs only. The model's applicability check
(:mod:`~htc_core.calibration.shift`) accumulates over each run set's runs since the start; :meth:`flush` returns
one line per run set written (runs stored, run set, scorer, mean confidence, verdict). The dashboard reads the
store's revision on every rerun and shows the new runs without a restart. Spans of a trace (with
``group_by="session"``: a session) that was already stored make a second trajectory with the id ``<id>@2``
rather than being lost. Problems go to a :class:`~htc_core.report.LoadReport` added to the run set's (the
dashboard's load report). A day's run set whose token strings a new run has and it lacks cannot take that run
(``ChunkShapeError``): such runs start a new run set of that name, with a warning.
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
from ..calibration.shift import ShiftAccumulator
from ..monitor import Monitor
from .ingest import append_trace_set, store_trace_set
from .store import Store
from .store_write import ChunkShapeError

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
    ids: dict = field(default_factory=dict)           # run set name -> its id in the store
    scores: dict = field(default_factory=dict)        # trajectory id -> calibrated confidence
    alerts: dict = field(default_factory=dict)        # trajectory id -> (step, confidence) of its first alert
    summaries: list = field(default_factory=list)     # one line per run set written
    report: LoadReport = field(default_factory=LoadReport)


class TraceBuffer:
    """Spans by trace until finished; ``flush`` stores the finished ones. Thread-safe."""

    def __init__(self, store: Store, *, model="gac", settle_s: float = 2.0, idle_s: float = 30.0,
                 group_by: str | None = None, max_spans: int = 1_000_000, alert_below: float | None = None,
                 clock=time.monotonic):
        from ..calibration.models import load_scorer

        self.store, self.settle_s, self.idle_s, self.group_by, self.clock = store, settle_s, idle_s, group_by, clock
        # scoring only: the model file read with numpy alone, as htc score reads it (no scikit-learn to import)
        self.model = load_scorer(model) if isinstance(model, str) else model
        self.model_name = model if isinstance(model, str) else (getattr(model, "name", None) or type(model).__name__)
        self.monitor = Monitor(self.model, threshold=alert_below)    # ValueError: a model it cannot run
        # a GAC with a 'transfer' combination (a training-free signal mixed in) is not what the Monitor computes:
        # its runs are scored in one batch by the model itself (the dashboard's GAC column), without step history
        self.live = getattr(self.model, "transfer", None) is None
        self.shift: dict[str, ShiftAccumulator] = {}                  # run set name -> applicability sums
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
                    scores = self._score(ts, out.alerts, out.report)
                    out.scores.update(scores)
                    out.ids[name], out.run_sets[name] = self._write(name, ts, out.report)
                    out.summaries.append(self._summary(name, out.ids[name], out.run_sets[name], ts, scores))
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

    def _score(self, ts: TraceSet, alerts: dict, report: LoadReport) -> dict:
        """Each run through the live Monitor, step by step (its value after the last step is the model's
        ``predict_proba`` on the run); the confidence after each step and the first alert go to its metadata."""
        if not self.live:
            return self._score_batch(ts, alerts)
        metas, scores = [], {}
        for i in range(ts.n_trajectories):
            mon = self.monitor.fresh()
            try:
                for s in range(ts.traj_offsets[i], ts.traj_offsets[i + 1]):
                    a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
                    mon.add_step(ts.logprob[a:b], ts.top_logprobs[a:b] if ts.k else None)
            except ValueError as e:      # stored unscored, never lost (the readers' checks make this rare)
                report.warn(f"otlp:{ts.ids[i]}", None, f"not scored: {e}", trajectory_id=str(ts.ids[i]))
                mon = self.monitor.fresh()
            m = ts.metadata_of(i)
            m.update({"htc_confidence": mon.confidence if mon.history else None, "htc_scored_by": self.model_name,
                      "htc_confidence_steps": [round(c, 6) for c in mon.history]})
            if mon.alerts:
                first = mon.alerts[0]
                alerts[str(ts.ids[i])] = (first.step, first.confidence)
                m["htc_alert"] = first.to_dict()
            metas.append(json.dumps(m, ensure_ascii=False))
            scores[str(ts.ids[i])] = float(mon.confidence)
        ts.meta["metadata"] = metas
        return scores

    def _score_batch(self, ts: TraceSet, alerts: dict) -> dict:
        from ..scoring import score_frame

        conf = score_frame(self.model, ts)["confidence"].to_numpy(dtype=float)
        metas, limit = [], self.monitor.threshold
        for i, c in enumerate(conf):
            m = ts.metadata_of(i)
            m.update({"htc_confidence": float(c), "htc_scored_by": self.model_name})
            if limit is not None and c < limit:
                n = int(ts.steps_per_trajectory[i])
                alerts[str(ts.ids[i])] = (n, float(c))
                m["htc_alert"] = {"step": n, "confidence": float(c), "threshold": limit}
            metas.append(json.dumps(m, ensure_ascii=False))
        ts.meta["metadata"] = metas
        return dict(zip(map(str, ts.ids), map(float, conf)))

    def _summary(self, name: str, rs_id: str, n: int, ts: TraceSet, scores: dict) -> str:
        """One line: runs stored, run set, scorer, mean confidence, the applicability verdict so far."""
        conf = [c for c in scores.values() if c == c]
        mean = f"{sum(conf) / len(conf):.3f}" if conf else "n/a"
        head = (f"stored {n} run(s) in {name!r} [{rs_id}]; scored by {self.model_name} "
                f"({'live Monitor' if self.live else 'whole runs: its transfer step is not in the Monitor'}), mean "
                f"confidence {mean}; applicability")
        if not (hasattr(self.model, "models") or hasattr(self.model, "coef_")):    # as htc score: HTC and GAC
            return f"{head}: not checked (the model keeps no training feature statistics)"
        acc = self.shift.setdefault(name, ShiftAccumulator(self.model, name=self.model_name))
        rep = acc.update(ts).report()
        verdict = rep.verdict if not rep.shifted else f"{rep.verdict} ({', '.join(rep.moved_features()[:3])})"
        return f"{head} over its {rep.n_runs} run(s) this session: {verdict}"

    def _write(self, name: str, ts: TraceSet, report: LoadReport) -> tuple[str, int]:
        """Append to the day's run set (same id), or store it when there is none yet; (run set id, kept)."""
        rs = self.store.get_setting(SETTING + name)
        if rs and rs in self.store.run_set_ids():
            try:
                return rs, append_trace_set(self.store, rs, ts, report)
            except ChunkShapeError as e:       # token strings the stored run set lacks: a new run set
                report.warn(name, None, f"runs stored in a new run set: {e}", field="run set", value=rs)
        res = store_trace_set(self.store, ts, report, name=name)
        self.store.set_setting(SETTING + name, res.run_set_id)
        return res.run_set_id, res.kept


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
