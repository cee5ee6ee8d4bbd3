"""Background jobs of the dashboard: long computations that run outside the page script.

A Streamlit rerun (any widget change, a reload, another tab) stops the page script, and a computation run
inside the script would stop with it and start again from the beginning. A :class:`Job` runs in its own
daemon thread instead; the script only starts it (or joins the one already running under the same key) and
then shows its progress. Jobs of one store run one after another (a per-store lock: two evaluations at the
same time would only share the same CPU cores and both finish late).

:data:`JOB_STATS` counts ``started`` and ``joined`` submissions, so tests can show that a rerun joins the running
job instead of restarting it. Pure Python (no Streamlit): the keys and the work are given by the caller.

When the process exits (a server stopped, a test session ending) running jobs are asked to stop: the next
``job.progress`` call raises :class:`JobCancelled`, and the exit waits (at most ``EXIT_WAIT_S``) until they
have unwound, so no job thread is still inside compiled code when the interpreter shuts down (which aborts
the process).

Why not ``concurrent.futures`` (a per-store ``ThreadPoolExecutor(max_workers=1)`` and its futures; issue 28
weighed it): an executor's worker threads are joined at interpreter shutdown *before* ``atexit`` handlers
run, so the stop request above would come only after every running and queued job had run to its end.
Measured: a process ending with a 20 s job running and a second one queued took 40.6 s to exit and ran both
to the end; with these threads the running job stops at its next progress report and the queued one never
starts (``tests/test_jobs.py``). Stopping earlier would need ``threading._register_atexit``, a private name.
The registry (one job per key, a rerun joins it), the progress and the error report would stay ours anyway.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from .timing import label_with_estimate

__all__ = ["Job", "JobCancelled", "submit", "running", "JOB_STATS", "forget"]

log = logging.getLogger("htc.dashboard")

#: how submissions were answered: "started" (a new thread) or "joined" (the job already running)
JOB_STATS: collections.Counter = collections.Counter()
#: (label, seconds) of the jobs that ended, newest last (the dashboard benchmark reads it)
FINISHED: collections.deque = collections.deque(maxlen=64)

_LOCK = threading.Lock()
_JOBS: dict = {}                 # key -> Job (running, or finished with an error until forgotten)
_STORE_LOCKS: dict = {}          # store -> lock serializing its jobs
_EXITING = threading.Event()     # set when the process exits: running jobs stop at their next progress report
#: the most seconds the process's exit waits for running jobs to stop
EXIT_WAIT_S = 30.0


class JobCancelled(Exception):
    """Raised inside a job's work by its progress report when the process is exiting."""


@dataclass
class Job:
    """One background computation: its progress (``done`` of ``total`` steps, ``message``), and when it ends
    ``error`` (None when it succeeded). ``started``/``ended``: ``time.time()`` stamps."""

    key: tuple
    label: str
    done: int = 0
    total: int = 0
    message: str = ""
    error: str | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None
    finished: threading.Event = field(default_factory=threading.Event)
    expected: float | None = None      # seconds it should take, measured on this machine (timing.estimate)

    def progress(self, done: int, total: int, message: str = "") -> None:
        if _EXITING.is_set():
            raise JobCancelled(f"{self.label}: stopped, the process is exiting")
        self.done, self.total, self.message = int(done), int(total), str(message)

    @property
    def fraction(self) -> float:
        return 0.0 if self.total <= 0 else min(1.0, self.done / self.total)

    @property
    def eta(self) -> float:
        """Seconds the job still needs, judged by its progress so far (infinite before any)."""
        f = self.fraction
        return float("inf") if f <= 0 else (time.time() - self.started) * (1.0 - f) / f

    @property
    def is_running(self) -> bool:
        return not self.finished.is_set()

    def text(self) -> str:
        """'<label>: <message>' (the message says the steps done, e.g. 'HTC-Reduced (4/15 folds)')."""
        text = f"{self.label}: {self.message}" if self.message else f"{self.label}: starting"
        return label_with_estimate(text, self.expected, time.time() - self.started, self.fraction)


def submit(store: str, key: tuple, label: str, work: Callable[[Job], None], *, expected: float | None = None,
           exclusive: bool = True) -> Job:
    """Start ``work(job)`` in a background thread, or join the job already running under ``key``.
    ``work`` reports with ``job.progress(done, total, message)`` and keeps its results itself (e.g. in a
    cache); an exception ends the job with ``job.error`` set (and is logged). ``exclusive=False``: the job runs
    beside the store's other jobs instead of after them (a projection, which shares no input with an
    evaluation: queued behind it, or an evaluation queued behind it, a page would wait for work it did not ask
    for); it never counts as :func:`busy`."""
    with _LOCK:
        job = _JOBS.get(key)
        if job is not None and job.is_running:
            JOB_STATS["joined"] += 1
            return job
        job = Job(key=key, label=label, expected=expected)
        _JOBS[key] = job
        store_lock = _STORE_LOCKS.setdefault(str(store), threading.Lock()) if exclusive else contextlib.nullcontext()
        JOB_STATS["started"] += 1

    def run() -> None:
        try:
            with store_lock:
                if _EXITING.is_set():
                    raise JobCancelled(f"{label}: not started, the process is exiting")
                work(job)
        except JobCancelled as e:
            job.error = str(e)
        except Exception as e:  # noqa: BLE001 - reported through the job, never lost in a thread
            log.exception("background job %s failed", label)
            job.error = f"{type(e).__name__}: {e}"
        finally:
            job.ended = time.time()
            FINISHED.append((label, job.ended - job.started))
            job.finished.set()
            if job.error is None:
                with _LOCK:
                    if _JOBS.get(key) is job:
                        del _JOBS[key]
            log.info("%s took %.2f s", label, job.ended - job.started)

    threading.Thread(target=run, name=f"htc-job-{label}", daemon=True).start()
    return job


@atexit.register
def _stop_running_jobs() -> None:
    """At exit: ask every running job to stop and wait (at most :data:`EXIT_WAIT_S`) until they have."""
    _EXITING.set()
    deadline = time.monotonic() + EXIT_WAIT_S
    with _LOCK:
        jobs = list(_JOBS.values())
    for job in jobs:
        job.finished.wait(max(0.0, deadline - time.monotonic()))


def busy(store: str) -> bool:
    """Whether a job of ``store`` is running now (a store's jobs run one at a time)."""
    with _LOCK:
        lock = _STORE_LOCKS.get(str(store))
    return lock is not None and lock.locked()


def running(key: tuple) -> Job | None:
    """The job under ``key`` (running, or failed and not forgotten yet), or None."""
    with _LOCK:
        return _JOBS.get(key)


def forget(key: tuple) -> None:
    """Drop a failed job, so that the next submission starts it again."""
    with _LOCK:
        job = _JOBS.get(key)
        if job is not None and not job.is_running:
            del _JOBS[key]


def run_parts(job: Job, parts: list[str], one_part: Callable, names: dict) -> None:
    """``one_part(part, report)`` for every part of a job at once, each in its own thread (the dashboard's
    evaluation: the parts' fold threads share the cores, so the last part ends sooner than when the parts run
    one after the other, 3.8-3.9 s against 4.5 s for the sample runs' three parts in one process, and the cheap
    baselines still end first). ``report(done, total, message)`` of each part feeds one progress for the job:
    the steps done over all parts (``names``: how the message calls a part). A part's error is raised once
    every part has stopped. The message lists the parts still running with their steps, e.g. 'HTC-Full 7/15,
    HTC-Reduced 4/15'."""
    done, total, errors = dict.fromkeys(parts, 0), dict.fromkeys(parts, 0), []
    lock = threading.Lock()

    def report(part: str, d: int, t: int, message: str) -> None:
        with lock:
            done[part], total[part] = d, t
            running = [f"{names[p]} {done[p]}/{total[p]}" for p in parts if done[p] < total[p]]
            job.progress(sum(done.values()), max(total.values()) * len(parts),
                         ", ".join(running) if running else "finishing")

    def run(part: str) -> None:
        try:
            one_part(part, lambda d, t, m: report(part, d, t, m))
        except BaseException as e:  # noqa: BLE001 - raised again in the job's thread below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(p,), name=f"htc-eval-{p}", daemon=True) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
