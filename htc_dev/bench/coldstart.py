"""Cold start vs warm start (issue 29, item 3): what a first call costs in a fresh install.

    python -m htc_dev.bench coldstart [--skip-evaluate] [--only JOB] [--repeats 1]

Each job runs in a new process, first with an empty kernel cache (``HTC_CACHE_DIR`` pointed at a new
folder: what a fresh checkout, wheel install or container sees), then again with the cache that run left (what
every later call sees). Printed: the child's CPU time (user + system, from ``getrusage(RUSAGE_CHILDREN)``),
its wall time and the cold - warm difference (the compile wait). Jobs:

- ``fit``: ``HTCCalibrator`` HTC-Reduced and HTC-Full fitted on ``sample_runs/arithmetic/`` (the path solver);
- ``score``: ``htc score gac sample_runs/units/`` (features, the lowest-group baseline, the shipped GAC);
- ``monitor``: ``Monitor()`` (the default ``gac-prefix``) fed 10 steps of 100 tokens (incremental features);
- ``evaluate``: ``htc evaluate sample_runs/ --seeds 1`` (the whole protocol on the 2,000 sample runs).

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

JOBS = {
    "fit": [sys.executable, "-c", FIT.format(path=str(SAMPLE / "arithmetic"))],
    "score": [sys.executable, "-m", "htc_core", "score", "gac", str(SAMPLE / "units"), "--out", "{tmp}/s.csv"],
    "monitor": [sys.executable, "-c", MONITOR],
    "evaluate": [sys.executable, "-m", "htc_core", "evaluate", str(SAMPLE), "--seeds", "1"],
}


def run_job(argv: list[str], cache: Path, tmp: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one new process with ``HTC_CACHE_DIR=cache``."""
    env = dict(os.environ, HTC_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([a.format(tmp=tmp) for a in argv], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed:\n{p.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench coldstart", description=__doc__.split("\n")[0])
    ap.add_argument("--skip-evaluate", action="store_true", help="leave out the htc evaluate job (minutes cold)")
    ap.add_argument("--repeats", type=int, default=1, help="cold/warm pairs per job (default: 1)")
    ap.add_argument("--only", choices=tuple(JOBS), action="append", help="run only this job (repeatable)")
    args = ap.parse_args(argv)
    jobs = [j for j in (args.only or JOBS) if not (args.skip_evaluate and j == "evaluate")]
    print(f"load average {os.getloadavg()[0]:.1f} at start; CPU = user + system of the child process")
    print(f"{'job':<10}{'cold CPU':>10}{'warm CPU':>10}{'compile':>10}{'cold wall':>11}{'warm wall':>11}")
    for job in jobs:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory(prefix="htc-coldstart-") as d:
                cache, tmp = Path(d) / "cache", Path(d)
                cold = run_job(JOBS[job], cache, tmp)
                warm = run_job(JOBS[job], cache, tmp)
            print(f"{job:<10}{cold[0]:>10.2f}{warm[0]:>10.2f}{cold[0] - warm[0]:>10.2f}{cold[1]:>11.1f}"
                  f"{warm[1]:>11.1f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
