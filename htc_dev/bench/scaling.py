"""Scaling benchmark: ``htc features`` in one process against Dask with 1 and 2 workers, 10k / 100k / 1M runs.

    python -m htc_dev.bench scaling [--sizes 10000,100000,1000000] [--engines local,dask1,dask2]

For each N, an htc-trace JSONL file of N small trajectories (5 steps x 20 tokens, no alternatives, 8-decimal
logprobs: the issue-17 shape, the same files as ``bench ingest``) in ``$TMPDIR/htc-bench-ingest``. In the same
run, per size:

- the floor: a stdlib ``json.loads`` pass over the file's lines (CPU seconds, this process, streamed);
- ``local``: ``htc features FILE --out X.parquet`` (the chunked single-process reader);
- ``daskW``: ``htc features FILE --out X.parquet --engine dask --workers W`` (a LocalCluster of W worker
  processes, started and closed inside the command, so its start-up is in the time).

Each command runs in a fresh process; its wall time and the peak of the summed resident memory of its whole
process tree (the driver and the Dask scheduler and workers; sampled every 0.2 s with psutil) are printed, with
the ratio of the wall time to the ``json.loads`` floor. The outputs are checked to hold the same rows. Needs
the ``[cluster]`` extra for the Dask rows. Wall times on a shared machine are noisy: compare rows of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from .ingest import DIR, write_file

ENGINES = ("local", "dask1", "dask2")


def _floor(path: Path) -> float:
    t0 = time.process_time()
    with open(path, "rb") as fh:
        for line in fh:
            json.loads(line)
    return time.process_time() - t0


def _tree_rss(proc, cpu: dict | None = None) -> int:
    """Summed RSS of ``proc`` and its descendants; ``cpu`` (pid -> user + system seconds) gets each process's
    latest CPU time (so the tree's CPU is the sum of the last samples: up to one sampling interval short per
    process)."""
    import psutil

    total = 0
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
            if cpu is not None:
                t = p.cpu_times()
                cpu[p.pid] = max(cpu.get(p.pid, 0.0), t.user + t.system)
        except psutil.Error:
            pass
    return total


def _measured(argv: list[str], children: list | None = None) -> tuple[float, float, int, float]:
    """(wall s, peak tree RSS MiB, exit code, CPU s of the process tree) of ``htc ARGV`` in a fresh process; the
    driver's CPU is exact (its rusage at exit, its own share), the scheduler's and workers' sampled every 0.1 s.
    ``children`` gets the sampled CPU seconds of each descendant process (the Dask workers among them)."""
    import psutil

    root = str(Path(__file__).resolve().parents[2])  # this htc_core, not another installed one
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    popen = subprocess.Popen([sys.executable, "-m", "htc_core", *argv], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=env)
    proc, peak, done, cpu = psutil.Process(popen.pid), [0], threading.Event(), {}

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(proc, cpu))
            done.wait(0.1)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    err = popen.stderr.read()
    _, status, ru = os.wait4(popen.pid, 0)
    popen.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    if popen.returncode:
        print(err.decode(errors="replace")[-2000:], file=sys.stderr)
    # the driver's rusage counts the children it reaped too: take the sampled descendants out of it when they
    # are inside (driver total >= its own last sample + theirs), else add them
    driver_own = cpu.pop(popen.pid, 0.0)
    others = sum(cpu.values())
    if children is not None:
        children.extend(sorted(cpu.values(), reverse=True))
    driver = ru.ru_utime + ru.ru_stime
    total = driver if driver >= driver_own + others - 0.5 else driver + others
    return wall, peak[0] / 2**20, popen.returncode, total


def _argv(engine: str, path: Path, out: Path) -> list[str]:
    argv = ["features", str(path), "--out", str(out)]
    if engine.startswith("dask"):
        argv += ["--engine", "dask", "--workers", engine[4:]]
    return argv


def scaling(print_fn=print, sizes=(10_000, 100_000, 1_000_000), engines=ENGINES) -> list[dict]:
    import pyarrow.parquet as pq

    DIR.mkdir(exist_ok=True)
    print_fn("== scaling: N trajectories x 5 steps x 20 tokens, no alternatives; htc features in a fresh process "
             "per row; peak = summed RSS of the process tree (driver + Dask scheduler and workers) ==")
    print_fn(f"load average {os.getloadavg()[0]:.1f}")
    print_fn(f"{'N':>10s} {'MB':>6s} {'engine':>12s} {'wall s':>8s} {'CPU s':>7s} {'CPU/wall':>8s} {'peak MiB':>9s} "
             f"{'json.loads CPU s':>17s} {'wall/json':>10s} {'rows ok':>8s}")
    out = []
    for n in sizes:
        path = write_file(DIR / f"native-{n}x5x20.jsonl", n, 5, 20, 0)
        floor = _floor(path)
        mb = path.stat().st_size / 1e6
        for engine in engines:
            res = DIR / f"scaling-{engine}.parquet"
            kids: list = []
            wall, peak, rc, cpu = _measured(_argv(engine, path, res), kids)
            rows = pq.ParquetFile(res).metadata.num_rows if rc == 0 else -1
            workers = kids[:int(engine[4:])] if engine.startswith("dask") else []
            row = {"n": n, "mb": mb, "engine": engine, "wall_s": wall, "cpu_s": cpu, "peak_mib": peak,
                   "worker_cpu_s": workers,
                   "json_cpu_s": floor,
                   "ratio": wall / floor, "rows": rows, "rc": rc}
            out.append(row)
            print_fn(f"{n:>10,d} {mb:6.0f} {engine:>12s} {wall:8.1f} {cpu:7.1f} {cpu / wall:8.2f} {peak:9.0f} {floor:17.1f} "
                     f"{wall / floor:10.2f} "
                     f"{str(rows == n):>8s}" + ("" if rc == 0 else f"  (exit {rc})")
                     + (f"  workers' CPU s: {', '.join(f'{w:.1f}' for w in workers)}, driver (with the scheduler) "
                        f"{cpu - sum(kids):.1f}" if workers else ""))
        by = {r["engine"]: r["wall_s"] for r in out if r["n"] == n}
        if "dask1" in by and "dask2" in by:
            cp = {r["engine"]: r["cpu_s"] for r in out if r["n"] == n}
            wk = {r["engine"]: r["worker_cpu_s"] for r in out if r["n"] == n}
            if len(wk["dask1"]) == 1 and len(wk["dask2"]) == 2 and max(wk["dask2"]) > 0:
                print_fn(f"{'':>10s} the workers' share on dedicated cores: 1 worker {wk['dask1'][0]:.1f} s CPU, 2 workers "
                         f"{max(wk['dask2']):.1f} s on the busier one: {wk['dask1'][0] / max(wk['dask2']):.2f}x "
                         "(what 2 free cores would give the pieces' work; the driver's reading and writing stays serial)")
            print_fn(f"{'':>10s} dask 2 workers vs 1: {by['dask1'] / by['dask2']:.2f}x faster (wall), CPU "
                     f"{cp['dask2'] / cp['dask1']:.2f}x of 1 worker's; load average {os.getloadavg()[0]:.1f} (CPU/wall: "
                     f"the cores the process tree kept busy on average; on a machine shared with other jobs a second "
                     f"worker can only help as far as a core is free)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m htc_dev.bench scaling", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000,1000000", help="trajectories per file (default: 10k,100k,1M)")
    p.add_argument("--engines", default=",".join(ENGINES),
                   help="local (htc features, = --engine local), dask1, dask2 (default: all three)")
    args = p.parse_args(argv)
    engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    bad = [e for e in engines if e not in ENGINES]
    if bad:
        p.error(f"unknown engine(s) {bad}; valid: {', '.join(ENGINES)}")
    if any(e.startswith("dask") for e in engines):
        try:
            import distributed  # noqa: F401
        except ImportError:
            p.error('the Dask rows need pip install -e ".[cluster]"')
    scaling(sizes=tuple(int(s) for s in args.sizes.split(",") if s.strip()), engines=engines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
