"""The long computations of the dashboard, run once per input with a visible progress bar and kept for
all sessions: the honest evaluation (in parts) and the cache every long computation goes through
(the fits, projections and per-dataset weights are in :mod:`htc_core.app.fits`).

The evaluation runs in a background job (:mod:`htc_core.app.jobs`: a rerun never restarts it, the same
key joins it); the rest goes through :func:`computed`, keyed by :func:`~htc_core.app.session.cache_key` (the selection's
content hash and the settings, never the store's revision) plus what the computation adds; the evaluation's
parts are also kept in the store under that key, so a restart does not recompute them. :data:`CACHE_STATS`
counts memory hits, store hits and computations. Nothing here computes a metric itself:
it calls ``htc_core.calibration``, ``htc_core.explain`` and ``htc_core.app.projection``.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import streamlit as st

from ..calibration.methods import METHODS
from ..calibration.evaluation import EvaluationError, evaluate, merge_results
from .confirm import before_evaluating
from .sampling import EVAL_CAP, FIT_CAP, stratified_sample
from . import timing
from .session import cache_key, data_dir, settings
from .workspace import Workspace

log = logging.getLogger("htc.dashboard")


def _alphas_from_env() -> tuple | None:
    raw = os.environ.get("HTC_DASHBOARD_ALPHAS", "").strip()
    if not raw:
        return None
    try:
        vals = tuple(float(v) for v in raw.split(","))
    except ValueError:
        log.warning("HTC_DASHBOARD_ALPHAS=%r is not a comma-separated list of numbers; using the paper's grid", raw)
        return None
    return vals if vals and all(v > 0 for v in vals) else None


#: alpha grid of the dashboard's fits and evaluations (None: the paper's 15 values). A shorter grid
#: (``HTC_DASHBOARD_ALPHAS=0.1,1,10``) gives quick looks at large uploads; the tests use one too.
ALPHAS: tuple | None = _alphas_from_env()


def alpha_options() -> dict:
    """The ``alphas`` keyword of the dashboard's fits (empty: the library's default grid)."""
    return {} if ALPHAS is None else {"alphas": ALPHAS}


#: how each :func:`computed` call was answered: "memory" (this process's cache), "store" (a result kept in
#: the store by an earlier process) or "computed"
CACHE_STATS: collections.Counter = collections.Counter()


# ------------------------------------------------------------ the registry
@st.cache_resource(show_spinner=False)
def fit_registry() -> dict:
    """The process-wide registry of computed results (lock, LRU items, running jobs);
    ``fit_registry.clear()`` empties it."""
    return {"lock": threading.Lock(), "items": collections.OrderedDict(), "running": {}}


def cached_result(key: tuple) -> Any | None:
    """The value kept in memory under ``key`` (counted as a memory hit in :data:`CACHE_STATS`), or None."""
    reg = fit_registry()
    with reg["lock"]:
        value = reg["items"].get(key)
    if value is not None:
        CACHE_STATS["memory"] += 1
    return value


def _claim(reg: dict, key: tuple) -> tuple[bool, Any, threading.Event | None]:
    """(found, value, event): the cached value, or the event to wait on / to set when we compute it."""
    with reg["lock"]:
        if key in reg["items"]:
            reg["items"].move_to_end(key)
            return True, reg["items"][key], None
        ev = reg["running"].get(key)
        if ev is None:
            reg["running"][key] = threading.Event()
            return False, None, None
        return False, None, ev


@dataclass
class Persist:
    """How :func:`computed` keeps a result in the store: ``dump(value) -> bytes | None`` (None: do not keep
    it, e.g. an error) and ``load(bytes) -> value``."""

    store: Any
    kind: str
    dump: Callable[[Any], bytes | None]
    load: Callable[[bytes], Any]


def _key_text(key: tuple) -> str:
    return "|".join(map(str, key))


def _from_store(persist: Persist | None, key: tuple) -> Any | None:
    if persist is None:
        return None
    try:
        raw = persist.store.get_result(_key_text(key))
        return None if raw is None else persist.load(raw)
    except Exception as e:   # a damaged entry is recomputed, never fatal
        log.warning("stored %s result unusable (%s); recomputing", persist.kind, e)
        return None


def _remember(reg: dict, key: tuple, value: Any, max_items: int) -> None:
    with reg["lock"]:
        reg["items"][key] = value
        while len(reg["items"]) > max_items:
            reg["items"].popitem(last=False)


def computed(key: tuple, label: str, fn: Callable[[Callable[[float, str], None]], Any], *,
             max_items: int = 32, persist: Persist | None = None, units: int | None = None) -> Any:
    """``fn(progress)`` computed once per ``key`` (shared by all sessions), with a progress bar while it runs;
    with ``persist`` also kept in (and first looked up in) the store. ``units`` (the runs it works on): the bar
    says about how long it takes, from the seconds per run measured the last time ``label`` ran here
    (:mod:`~htc_core.app.timing`), and the time left once ``fn`` reports progress."""
    reg = fit_registry()
    found, value, other = _claim(reg, key)
    if found:
        CACHE_STATS["memory"] += 1
        return value
    if other is not None:   # another session computes the same thing: wait for it, then look again
        with st.spinner(f"{label} (started by another session)…"):
            other.wait()
        return computed(key, label, fn, max_items=max_items, persist=persist, units=units)
    stored = _from_store(persist, key)
    if stored is not None:
        with reg["lock"]:
            reg["running"].pop(key).set()
        CACHE_STATS["store"] += 1
        _remember(reg, key, stored, max_items)
        return stored
    CACHE_STATS["computed"] += 1
    folder = data_dir()
    expected = timing.estimate(folder, label, units) if units else None
    bar = st.progress(0.0, text=timing.label_with_estimate(label, expected))
    t0 = time.perf_counter()

    def progress(frac: float, msg: str = "") -> None:
        frac = float(min(1.0, max(0.0, frac)))
        text = timing.label_with_estimate(f"{label}: {msg}" if msg else label, expected, time.perf_counter() - t0, frac)
        bar.progress(frac, text=text)

    try:
        value = fn(progress)
    finally:
        with reg["lock"]:
            reg["running"].pop(key).set()
    bar.empty()
    took = time.perf_counter() - t0
    log.info("%s took %.2f s", label, took)
    if units:
        timing.record(folder, label, units, took)
    _remember(reg, key, value, max_items)
    if persist is not None:
        try:
            raw = persist.dump(value)
            if raw is not None:
                persist.store.put_result(_key_text(key), persist.kind, raw)
        except Exception as e:   # the store is busy or read-only: the result stays in memory
            log.warning("could not keep the %s result in the store: %s", persist.kind, e)
    return value


def stored_result(key: tuple, persist: Persist) -> Any | None:
    """The value under ``key`` in memory, else in the store (then kept in memory too), else None: what
    :func:`computed` finds before it computes, for a page that computes in a background job instead."""
    hit = cached_result(key)
    if hit is not None:
        return hit
    hit = _from_store(persist, key)
    if hit is not None:
        CACHE_STATS["store"] += 1
        _remember(fit_registry(), key, hit, 32)
    return hit


def keep_result(key: tuple, value: Any, persist: Persist | None = None) -> None:
    """Keep ``value`` under ``key`` in memory (and in the store with ``persist``), as :func:`computed` keeps
    what it computed: for a background job's result (the job runs outside the page script)."""
    _remember(fit_registry(), key, value, 32)
    if persist is None:
        return
    try:
        raw = persist.dump(value)
        if raw is not None:
            persist.store.put_result(_key_text(key), persist.kind, raw)
    except Exception as e:   # the store is busy or read-only: the result stays in memory
        log.warning("could not keep the %s result in the store: %s", persist.kind, e)


@contextlib.contextmanager
def timed_spinner(label: str, units: int, kind: str | None = None):
    """A spinner for work that reports no progress (a report, a replay), saying about how long it takes from
    the rate measured the last time ``kind`` (default: ``label``) ran here; the rate is measured again."""
    folder, kind = data_dir(), kind or label
    expected = timing.estimate(folder, kind, units)
    t0 = time.perf_counter()
    with st.spinner(timing.label_with_estimate(label, expected) + "…"):
        yield
    timing.record(folder, kind, units, time.perf_counter() - t0)


# ------------------------------------------------------------ the evaluation
@dataclass
class Evaluated:
    """An evaluation of the labeled trajectories of a workspace; ``positions`` maps its rows back.
    ``result`` is None when the part could not run (``error`` says why)."""

    result: Any
    positions: np.ndarray
    error: str | None = None
    parts: tuple = ()    # a merged evaluation: the parts it holds (computed, or failed with their error)


def labeled_positions(ws: Workspace) -> np.ndarray:
    return np.flatnonzero(np.isfinite(ws.labels))


def evaluation_positions(ws: Workspace) -> np.ndarray:
    """The labeled runs the cross-validated evaluation uses: all of them, or a stratified sample of
    ``sampling.EVAL_CAP`` above that (see :mod:`~htc_core.app.sampling`)."""
    pos = labeled_positions(ws)
    return stratified_sample(pos, ws.labels[pos], EVAL_CAP)


def fit_positions(ws: Workspace) -> np.ndarray:
    """The labeled runs a dashboard calibrator is fitted on (at most ``sampling.FIT_CAP``, stratified)."""
    pos = labeled_positions(ws)
    return stratified_sample(pos, ws.labels[pos], FIT_CAP)


#: the evaluation runs in parts, cheapest first, so the Calibration page draws early and fills in
EVAL_PARTS = ("baselines", "full", "reduced")
PART_METHODS = {"baselines": [m for m in METHODS if not m.startswith("HTC")],
                "full": ["HTC-Full"], "reduced": ["HTC-Reduced"]}
#: what each part is called where the pages list the parts still running
PART_NAMES = {"baselines": "baselines", "full": "HTC-Full", "reduced": "HTC-Reduced"}


def _part_key(part: str) -> tuple:
    return cache_key("evaluation", part, settings()["seeds"], ALPHAS, EVAL_CAP)


def _evaluation_job(ws: Workspace) -> "jobs.Job | None":
    """Start (or join) the background job that computes the selection's missing evaluation parts, all at once
    (:func:`~htc_core.app.jobs.run_parts`), each kept in memory and in the store as soon as it is done; None
    when nothing is missing. Keys, settings and the store are read here, in the page script: the job itself
    never touches session state."""
    from . import jobs
    from .session import data_dir

    s = settings()
    keys = {p: _part_key(p) for p in EVAL_PARTS}
    missing = [p for p in EVAL_PARTS if cached_result(keys[p]) is None and _stored_part(ws, p) is None]
    if not missing:
        return None
    pos = evaluation_positions(ws)
    persist = _evaluation_persist(pos)
    reg = fit_registry()

    def one_part(part: str, report, inputs: tuple) -> None:
        if keys[part] in reg["items"]:
            return
        t0 = time.perf_counter()
        CACHE_STATS["computed"] += 1
        CACHE_STATS["evaluation parts"] += 1
        X, y, base = inputs
        try:
            res = evaluate(X, y, baselines=base, seeds=s["seeds"], n_jobs=-1, methods=PART_METHODS[part],
                           **alpha_options(), progress=report)
            value = Evaluated(result=res, positions=pos)
        except EvaluationError as e:
            value = Evaluated(result=None, positions=pos, error=str(e))
        log.info("evaluation part %s took %.2f s", part, time.perf_counter() - t0)
        _remember(reg, keys[part], value, 32)
        try:
            raw = persist.dump(value)
            if raw is not None:
                persist.store.put_result(_key_text(keys[part]), persist.kind, raw)
        except Exception as e:   # the store is busy or read-only: the result stays in memory
            log.warning("could not keep the evaluation part %s in the store: %s", part, e)

    folder, every_part = data_dir(), len(missing) == len(EVAL_PARTS)

    def work(job) -> None:
        # the features and raw baseline confidences the store keeps for every run (computed at import with
        # the workspace's profile and top-k), taken once for all parts: no token is read again (that took
        # ~0.6 s for 2,000 runs) and the result is the traces' (tests/test_evaluation.py)
        inputs = (ws.features.take(pos), ws.labels[pos], ws.baselines.iloc[pos].reset_index(drop=True))
        t0 = time.perf_counter()
        jobs.run_parts(job, missing, lambda part, report: one_part(part, report, inputs), PART_NAMES)
        if every_part and not job.error:     # the rate of a whole evaluation: what the next one is told
            timing.record(folder, EVAL_TIMING, len(pos), time.perf_counter() - t0)

    key = ("evaluation-job", *(keys[p] for p in EVAL_PARTS))
    expected = evaluation_seconds(folder, len(pos)) if every_part else None
    return jobs.submit(folder, key, "Cross-validated evaluation", work, expected=expected)


#: what the evaluation's rate is recorded under (:mod:`~htc_core.app.timing`)
EVAL_TIMING = "evaluation"


def evaluation_seconds(folder, n_runs: int) -> float:
    """About how long the evaluation of ``n_runs`` labeled runs takes here: the seconds per run of the last whole
    evaluation on this machine, else the rate measured on the reference machine (``confirm.SECONDS_PER_RUN``)."""
    from .confirm import SECONDS_PER_RUN

    return timing.estimate(folder, EVAL_TIMING, n_runs, fallback_rate=SECONDS_PER_RUN)


#: a page that draws what is ready goes on waiting for the whole evaluation, once its first part is ready, while
#: the job's progress says the rest ends within this many seconds (at most twice as long in all): the parts run
#: at once and end close together, and every partial draw costs the browser its charts once more (on the 2-core
#: machine headless Chromium's rendering took CPU from the evaluation: a whole second of the first visit)
GRACE_S = 4.0


def _with_kernels(text: str) -> str:
    """The job's progress text, after the kernel warm-up's status while that compiles (a first start: the fits
    wait for it)."""
    from .. import kernels

    status = kernels.status_text()
    return text if status is None else f"{status} Then: {text}"


def _wait_for(ws: Workspace, parts: list[str], slot, *, grace_s: float = 0.0) -> None:
    """Show the background evaluation's progress in ``slot`` (an ``st.empty``) until ``parts`` are ready, then
    (``grace_s``) until every part is while the rest is due within ``grace_s`` (at most ``2 * grace_s`` more). A
    rerun (a widget change, a reload) stops this wait, never the job: the next run joins it where it is."""
    job = _evaluation_job(ws)
    if job is None:
        return
    bar = slot.progress(0.0, text=job.text())
    deadline = None

    def waiting() -> bool:
        nonlocal deadline
        if any(cached_result_quiet(_part_key(p)) is None for p in parts):
            return True
        if not grace_s or not evaluation_pending():
            return False
        deadline = time.monotonic() + 2 * grace_s if deadline is None else deadline
        return time.monotonic() < deadline and job.eta <= grace_s

    while waiting():
        if not job.is_running:
            if job.error:
                from . import jobs

                jobs.forget(job.key)
                raise RuntimeError(f"the evaluation stopped: {job.error}")
            job = _evaluation_job(ws)        # finished: what it kept is in memory (or a part failed)
            if job is None:
                break
        bar.progress(job.fraction, text=_with_kernels(job.text()))
        time.sleep(0.25)
    slot.empty()


def cached_result_quiet(key: tuple) -> Any | None:
    """Like :func:`cached_result`, not counted (the waiting loop polls it)."""
    reg = fit_registry()
    with reg["lock"]:
        return reg["items"].get(key)


def _stored_part(ws: Workspace, part: str) -> Evaluated | None:
    """The part kept in the store by an earlier process (then also in memory), or None."""
    key = _part_key(part)
    if cached_result_quiet(key) is not None:
        return cached_result_quiet(key)
    hit = _from_store(_evaluation_persist(evaluation_positions(ws)), key)
    if hit is not None:
        CACHE_STATS["store"] += 1
        _remember(fit_registry(), key, hit, 32)
    return hit


def _evaluation_persist(pos: np.ndarray) -> Persist:
    """An evaluation part kept in the store as bytes (no pickle); positions come from the workspace whose
    content the key hashes, so they are the same on reload."""
    from ..calibration.results import result_from_bytes, result_to_bytes
    from .session import store

    return Persist(store=store(), kind="evaluation",
                   dump=lambda ev: None if ev.result is None else result_to_bytes(ev.result),
                   load=lambda raw: Evaluated(result=result_from_bytes(raw), positions=pos))


def merge_evaluations(parts: list) -> Evaluated:
    """One result holding the methods of every computed part (same folds, same positions); ``parts`` in the
    order of :data:`EVAL_PARTS` (None: not ready), so the result says which parts it holds."""
    done = [p for p in parts if p is not None and p.result is not None]
    if not done:
        errors = [p.error for p in parts if p is not None and p.error]
        raise EvaluationError(errors[0] if errors else "the evaluation has not run yet")
    held = tuple(name for name, p in zip(EVAL_PARTS, parts) if p is not None)
    return Evaluated(result=merge_results([p.result for p in done]), positions=done[0].positions, parts=held)


def evaluation(ws: Workspace, *, wait: bool = True) -> Evaluated:
    """Honest nested-CV evaluation of the labeled part of the selection, computed by a background job
    (:mod:`htc_core.app.jobs`) and cached by content, with a progress bar while the page waits.

    With ``wait=False`` the page waits for the cheapest part, then for the rest while it is due within
    :data:`GRACE_S`, and the result holds what is ready (the Calibration page draws it, then waits for the
    rest with :func:`compute_evaluation_parts`).

    The progress bar's place is drawn in every run, waiting or not: the elements a page draws after it then keep
    their places from one run to the next. A bar drawn only in the run that waited moved them by one place in
    the next run, and Streamlit drew the charts there again: a click on a chart in that moment was lost."""
    slot = st.empty()
    ready = [cached_result(_part_key(p)) or _stored_part(ws, p) for p in EVAL_PARTS]
    if any(r is None for r in ready):
        before_evaluating(len(labeled_positions(ws)))     # a large selection nobody chose: ask first
        _wait_for(ws, list(EVAL_PARTS) if wait else [EVAL_PARTS[0]], slot, grace_s=0.0 if wait else GRACE_S)
        ready = [r if r is not None else cached_result_quiet(_part_key(p)) for p, r in zip(EVAL_PARTS, ready)]
    return merge_evaluations(ready)


#: the largest labeled selection whose evaluation starts before a page asks for it (the sample runs: ~4 s)
PREFETCH_CAP = 5_000


def start_evaluation(ws: Workspace) -> None:
    """Start the selection's evaluation in its background job without waiting: the app calls it on every page
    once the selection is known, so the cross-validation runs while the user looks at the runs and Calibration
    joins it (a link straight to Calibration gains the page's own start). Only for at most
    :data:`PREFETCH_CAP` labeled runs and while no other job of the store runs: a selection the user leaves
    again then costs seconds of background work, never a queue ahead of the one they open. Nothing when it is
    computed or cannot run (too few labels: the pages that need it say why)."""
    from ..calibration.evaluation import label_problem
    from . import jobs
    from .session import data_dir

    if (label_problem(ws.labels) is None and len(labeled_positions(ws)) <= PREFETCH_CAP
            and not jobs.busy(data_dir())):
        _evaluation_job(ws)


def evaluation_pending() -> list[str]:
    """The parts of the selection's evaluation not computed yet."""
    return [p for p in EVAL_PARTS if cached_result_quiet(_part_key(p)) is None]


def parts_missing(drawn: Evaluated) -> list[str]:
    """The parts an evaluation (as drawn) lacks: still computing, or finished since it was read (a page that
    drew it must then draw again)."""
    return [p for p in EVAL_PARTS if p not in drawn.parts]


def compute_evaluation_parts(ws: Workspace, parts: list[str]) -> None:
    """Wait (with the background job's progress) until every part of ``parts`` is ready."""
    _wait_for(ws, list(parts), st.empty())


def cached_evaluation() -> Evaluated | None:
    """The selection's evaluation as far as it was already computed (never starts one)."""
    parts = [cached_result(_part_key(p)) for p in EVAL_PARTS]
    if not any(p is not None and p.result is not None for p in parts):
        return None
    return merge_evaluations(parts)
