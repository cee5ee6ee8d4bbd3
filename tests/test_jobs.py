"""Background jobs stop when the process exits: the exit asks them to stop and waits until they have, so no job
thread is inside compiled code while the interpreter shuts down (that aborts the process: rc 134)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
import time

from htc_core.app import jobs

from conftest import REPO


def test_exit_stops_a_running_job_at_its_next_progress_report():
    started = threading.Event()
    reports = []

    def work(job):
        started.set()
        for i in range(10_000):
            job.progress(i, 10_000, "working")
            reports.append(i)
            time.sleep(0.01)

    job = jobs.submit("test-store-exit", ("exit-test", time.time()), "Endless", work)
    assert started.wait(10)
    try:
        t0 = time.monotonic()
        jobs._stop_running_jobs()
        assert not job.is_running and time.monotonic() - t0 < 5
        assert "the process is exiting" in job.error and len(reports) < 10_000
        late = jobs.submit("test-store-exit", ("exit-test-late",), "Late", work)
        assert late.finished.wait(5) and "not started" in late.error
    finally:
        jobs._EXITING.clear()
        jobs.forget(job.key)
        jobs.forget(("exit-test-late",))


def test_a_process_that_exits_during_an_evaluation_job_exits_cleanly(tmp_path):
    """A real evaluation (threads in the path solver) running in a job when the script ends: exit code 0."""
    script = f"""
import sys, time
sys.path.insert(0, {str(REPO)!r})
from htc_core.app import jobs
from htc_core.calibration.evaluation import evaluate
from htc_core.formats import load
ts, _ = load({str(REPO / "sample_runs" / "units")!r})
def work(job):
    evaluate(ts, seeds=3, n_jobs=2, methods=["HTC-Reduced"],
             progress=lambda d, t, m: job.progress(d, t, m))
job = jobs.submit("s", ("k",), "Evaluation", work)
while job.done < 1:
    time.sleep(0.05)
print("exiting with the job running", job.is_running)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "exiting with the job running True" in out.stdout


NAMES = {"baselines": "baselines", "full": "HTC-Full"}


def test_evaluation_parts_run_at_once_with_one_progress_and_errors_raised():
    class Recorder:
        def __init__(self):
            self.calls = []

        def progress(self, done, total, message=""):
            self.calls.append((done, total, message))

    seen = set()
    both_running = threading.Barrier(2, timeout=10)     # only passes when the two parts run at the same time

    both_reported = threading.Barrier(2, timeout=10)

    def one_part(part, report):
        both_running.wait()
        for d in range(1, 4):
            report(d, 3, f"fold {d}")
            if d == 1:
                both_reported.wait()
        seen.add(part)

    job = Recorder()
    jobs.run_parts(job, ["baselines", "full"], one_part, NAMES)
    assert seen == {"baselines", "full"}
    assert job.calls[-1][:2] == (6, 6) and job.calls[-1][2] == "finishing"
    assert all(total == 6 for _, total, _ in job.calls)
    assert any("HTC-Full" in m and "baselines" in m for _, _, m in job.calls)

    def failing(part, report):
        if part == "full":
            raise jobs.JobCancelled("stopped")
        seen.add("after")

    with pytest.raises(jobs.JobCancelled, match="stopped"):
        jobs.run_parts(Recorder(), ["baselines", "full"], failing, NAMES)
    assert "after" in seen                              # the other part was not cut short


def test_exit_stops_the_running_job_and_never_starts_the_queued_one(tmp_path):
    """Why the jobs are our own threads and not a concurrent.futures executor (issue 28 item 3): an executor's
    workers are joined at interpreter shutdown *before* atexit handlers run, so a process ending with a 20 s
    job running and one queued waited 40 s and ran both to the end. Ours: the running job stops at its next
    progress report and the queued one of the same store never starts."""
    out_file = tmp_path / "what_happened.txt"
    script = f"""
import sys, time
sys.path.insert(0, {str(REPO)!r})
from htc_core.app import jobs
log = open({str(out_file)!r}, "a")
def work(job):
    try:
        for i in range(2_000):              # 20 s unless stopped
            job.progress(i, 2_000, "working")
            time.sleep(0.01)
        log.write(job.label + " ran to the end\\n")
    except jobs.JobCancelled:
        log.write(job.label + " stopped\\n")
        raise
    finally:
        log.flush()
first = jobs.submit("one-store", ("first",), "first", work)
second = jobs.submit("one-store", ("second",), "second", work)
while first.done < 5:
    time.sleep(0.01)
print("running", first.is_running, "queued", second.is_running and second.done == 0)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "running True queued True" in out.stdout
    assert out_file.read_text().splitlines() == ["first stopped"]       # the second job's work never ran


def test_a_non_exclusive_job_runs_beside_the_stores_running_job():
    """A projection (exclusive=False) neither waits for the store's evaluation nor makes it wait."""
    hold, ran = threading.Event(), threading.Event()
    first = jobs.submit("test-store-beside", ("beside-eval", time.time()), "Evaluation", lambda job: hold.wait(30))
    try:
        assert jobs.busy("test-store-beside")
        side = jobs.submit("test-store-beside", ("beside-proj", time.time()), "UMAP", lambda job: ran.set(),
                           exclusive=False)
        assert ran.wait(10) and side.finished.wait(10) and side.error is None    # while the first still runs
        assert first.is_running and jobs.busy("test-store-beside")
    finally:
        hold.set()
        assert first.finished.wait(10)
