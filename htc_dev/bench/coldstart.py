"""Cold start vs warm start (issue 29, item 3): what a first call costs in a fresh install.

    python -m htc_dev.bench coldstart [--skip-evaluate] [--only JOB] [--repeats 3] [--browser] [--pages] [--kernels]

Each job runs in a new process, first with an empty kernel cache (``HTC_CACHE_DIR`` pointed at a new
folder: what a fresh checkout, wheel install or container sees), then again with the cache that run left (what
every later call sees). Printed: the child's CPU time (user + system, from ``getrusage(RUSAGE_CHILDREN)``),
its wall time and the cold - warm difference (the compile wait); with ``--repeats N`` the minimum of N pairs
(each cold run with a new empty cache). Jobs:

- ``fit``: ``HTCCalibrator`` HTC-Reduced and HTC-Full fitted on ``sample_runs/arithmetic/`` (the path solver);
- ``score``: ``htc score gac sample_runs/units/`` (features, the lowest-group baseline, the shipped GAC);
- ``monitor``: ``Monitor()`` (the default ``gac-prefix``) fed 10 steps of 100 tokens (incremental features);
- ``evaluate``: ``htc evaluate sample_runs/ --seeds 1`` (the whole protocol on the 2,000 sample runs);
- ``calibration``: what the dashboard's first Calibration visit waits for, in a new process: the app's evaluation
  of the sample runs (every method, 3 CV repeats, the app's alpha grid, fold threads as in the app);
- ``warmup``: ``htc warmup`` (every kernel family; what a fresh install can run once up front).

``--browser`` adds the Calibration page's first visit in a real server and Chromium (seconds from the click to
the page complete, wall time: the server's CPU is not separable from the browser's), once with an empty kernel
cache and once with the cache that visit left.

``--pages`` adds the first visit of every dashboard page in a real server and Chromium, clicked in the sidebar
one after the other: a fresh install (empty data directory: the app opens on ``sample_runs/``; empty kernel
caches), then a second server with the data and caches kept; seconds from the click to the page usable and
to the page settled, with the load average at each click (:mod:`htc_dev.bench.page_visits`). ``--pages``
alone (no ``--only``) runs just that part.

``--kernels`` adds where the first fit's compile goes, function by function (numba's compile events:
:mod:`htc_dev.bench.compile_profile`).

Every job gets its own empty cache, so no job warms another's kernels. The machine's load average is printed
with the figures (the CPU time of a compile barely depends on it; the wall time does).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_runs"

FIT = """
import htc_core as htc
ts, _ = htc.load({path!r})
fm = htc.extract(ts)
for v in ("reduced", "full"):
    htc.HTCCalibrator(variant=v).fit(fm, ts.labels)
"""

MONITOR = """
import numpy as np
from htc_core.monitor import Monitor
rng = np.random.default_rng(0)
m = Monitor()
for _ in range(10):
    lp = np.log(rng.uniform(0.2, 1.0, 100))
    top = np.sort(np.log(rng.uniform(0.01, 1.0, (100, 5))), axis=1)[:, ::-1]
    m.add_step(lp, top)
"""

CALIBRATION = """
from htc_core.app.compute import ALPHAS
from htc_core.calibration.evaluation import evaluate
from htc_core.formats import load
ts, _ = load({path!r})
evaluate(ts, seeds=3, n_jobs=-1, **({{}} if ALPHAS is None else {{"alphas": ALPHAS}}))
"""

JOBS = {
    "fit": [sys.executable, "-c", FIT.format(path=str(SAMPLE / "arithmetic"))],
    "score": [sys.executable, "-m", "htc_core", "score", "gac", str(SAMPLE / "units"), "--out", "{tmp}/s.csv"],
    "monitor": [sys.executable, "-c", MONITOR],
    "evaluate": [sys.executable, "-m", "htc_core", "evaluate", str(SAMPLE), "--seeds", "1"],
    "calibration": [sys.executable, "-c", CALIBRATION.format(path=str(SAMPLE))],
    "warmup": [sys.executable, "-m", "htc_core", "warmup"],
}


def run_job(argv: list[str], cache: Path, tmp: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one new process with ``HTC_CACHE_DIR=cache``."""
    env = dict(os.environ, HTC_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([a.replace("{tmp}", str(tmp)) for a in argv], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed:\n{p.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def pair(job: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """(cold, warm) (CPU, wall) of one job: a new empty cache, then the cache that run left."""
    with tempfile.TemporaryDirectory(prefix="htc-coldstart-") as d:
        cache, tmp = Path(d) / "cache", Path(d)
        cold = run_job(JOBS[job], cache, tmp)
        warm = run_job(JOBS[job], cache, tmp)
    return cold, warm


def browser_visit() -> tuple[float, float] | None:
    """Seconds of the Calibration page's first visit in a real server, with an empty kernel cache and again with
    the cache it left (a store holding the sample runs with their features, prepared first); None without
    Chromium."""
    from .calibration_browser import first_visit_seconds
    from .dashboard import cold_start_apptest, sample_dir

    samples, _ = sample_dir()
    with tempfile.TemporaryDirectory(prefix="htc-coldstart-") as d:
        store, cache = Path(d) / "store", Path(d) / "cache"
        env = dict(os.environ, PYTHONPATH=str(ROOT), HTC_CACHE_DIR=str(Path(d) / "prep-cache"))
        cold_start_apptest(store, samples, env)           # the store and its features (its own kernel cache)
        env["HTC_CACHE_DIR"] = str(cache)
        cold = first_visit_seconds(store, samples, env)
        if cold is None:
            return None
        return cold, first_visit_seconds(store, samples, env)


def page_visits() -> None:
    """Every dashboard page's first visit in Chromium, a fresh install and then warm (printed as it goes)."""
    from .dashboard import sample_dir
    from .page_visits import cold_and_warm, print_table

    samples, said = sample_dir()
    print(f"dashboard pages on {said}, load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="htc-coldpages-") as d:
        visits = cold_and_warm(samples, dict(os.environ, PYTHONPATH=str(ROOT)), Path(d))
    if visits is None:
        print("dashboard pages: skipped (needs Playwright and Chromium)")
    else:
        print_table(*visits)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench coldstart", description=__doc__.split("\n")[0])
    ap.add_argument("--skip-evaluate", action="store_true", help="leave out the htc evaluate job (minutes cold)")
    ap.add_argument("--repeats", type=int, default=3, help="cold/warm pairs per job, minimum printed (default: 3)")
    ap.add_argument("--only", choices=tuple(JOBS), action="append", help="run only this job (repeatable)")
    ap.add_argument("--browser", action="store_true", help="also the Calibration page in Chromium, cold and warm")
    ap.add_argument("--pages", action="store_true",
                    help="also every dashboard page's first visit in Chromium, cold and warm (alone: only that)")
    ap.add_argument("--kernels", action="store_true", help="also the first fit's compile CPU per kernel")
    args = ap.parse_args(argv)
    jobs = [j for j in (args.only or ([] if args.pages else JOBS)) if not (args.skip_evaluate and j == "evaluate")]
    print(f"load average {os.getloadavg()[0]:.1f} at start; CPU = user + system of the child process; minimum of "
          f"{args.repeats} cold/warm pairs")
    print(f"{'job':<12}{'cold CPU':>10}{'warm CPU':>10}{'compile':>10}{'cold wall':>11}{'warm wall':>11}")
    for job in jobs:
        pairs = [pair(job) for _ in range(args.repeats)]
        cold = tuple(min(p[0][i] for p in pairs) for i in range(2))
        warm = tuple(min(p[1][i] for p in pairs) for i in range(2))
        print(f"{job:<12}{cold[0]:>10.2f}{warm[0]:>10.2f}{cold[0] - warm[0]:>10.2f}{cold[1]:>11.1f}"
              f"{warm[1]:>11.1f}", flush=True)
    if args.browser:
        visit = browser_visit()
        if visit is None:
            print("Calibration in Chromium: skipped (needs Playwright and Chromium)")
        else:
            print(f"Calibration page, first visit in a real server, click to complete (wall): cold cache "
                  f"{visit[0]:.1f} s, warm cache {visit[1]:.1f} s")
    if args.pages:
        page_visits()
    if args.kernels:
        from .compile_profile import print_kernels

        print_kernels()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
