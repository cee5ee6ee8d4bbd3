"""Benchmark: what the hostile-value checks (issue 16) cost when reading.

    python -m htc_dev.bench hostile [--copies N]

On the project's own 2,000 recorded runs (``sample_runs/``, htc-trace JSONL), in the same run, on one core:

- reference: ``json.loads`` of every line and nothing else, the parse the native reader used before;
- reference: ``orjson.loads`` of every line and nothing else;
- ``htc_core.formats.load(format="native")``: the whole reader (parse, value checks, validation, arrays);
- the slow path: the same lines with a ``NaN`` in each (orjson refuses NaN, so every line goes to the ``json``
  fallback with the out-of-range hooks and the full value walk), against ``json.loads`` of those lines;
- a line where every one of the checks has to walk: ``first_bad_value`` over the largest decoded run, against
  ``json.dumps`` of it (a walk the writer does anyway).

``--bounded`` (issue 30, round three) runs the commands the round found unbounded, each in a new process, and
prints its peak resident memory and CPU time: ``htc monitor`` on N one-step runs (default 200,000; the round
used 1,000,000: 1.56 GB before), ``htc prefixes`` on one run of ``--long-steps`` steps (default 2,000: every
prefix, quadratic output, memory one batch), ``htc early-warning --max-steps 1000000000`` on 80 one-step runs
(killed at 21 GB before). The floor is ``htc features`` on the same one-step runs (reads them the same way).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import orjson


def _mbps(nbytes: int, seconds: float) -> float:
    return nbytes / 1e6 / seconds if seconds > 0 else float("inf")


def _time(fn) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(print_fn=print, copies: int = 1) -> dict:
    from htc_core.formats import load
    from htc_core.jsonvalues import first_bad_value
    from . import checkout_root

    root = checkout_root()
    if root is None:
        raise SystemExit("the hostile benchmark reads sample_runs/ of a source checkout")
    files = sorted((root / "sample_runs").rglob("*.jsonl"))
    files = [f for f in files if not any(p.startswith("_") for p in f.relative_to(root / "sample_runs").parts)]
    lines = [ln for f in files for ln in f.read_bytes().splitlines() if ln.strip()] * copies
    nan_lines = [ln.replace(b'"verbalized_confidence": null', b'"verbalized_confidence": NaN', 1) for ln in lines]
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        good, slow = Path(tmp) / "runs.jsonl", Path(tmp) / "nan.jsonl"
        good.write_bytes(b"\n".join(lines) + b"\n")
        slow.write_bytes(b"\n".join(nan_lines) + b"\n")
        nbytes = good.stat().st_size
        print_fn(f"sample_runs: {len(lines)} trajectories, {nbytes / 1e6:.1f} MB (htc-trace JSONL)")
        rows = [
            ("reference json.loads per line", _time(lambda: [json.loads(x) for x in lines])),
            ("reference orjson.loads per line", _time(lambda: [orjson.loads(x) for x in lines])),
            ("htc load, native (checks included)", _time(lambda: load(good, format="native"))),
            ("reference json.loads, NaN lines", _time(lambda: [json.loads(x) for x in nan_lines])),
            ("htc load, NaN lines (json + walk)", _time(lambda: load(slow, format="native"))),
        ]
        ts, rep = load(slow, format="native")
        if ts.n_trajectories != len(lines) or rep.errors:   # the benchmark's input must read back whole
            raise RuntimeError("the NaN-line input did not read back whole:\n" + rep.summary())
    for name, t in rows:
        out[name] = _mbps(nbytes, t)
        print_fn(f"{name:38s} {out[name]:8.1f} MB/s")
    biggest = max(lines, key=len)
    obj = json.loads(biggest)
    t_walk = _time(lambda: first_bad_value(obj))
    t_dump = _time(lambda: json.dumps(obj))
    out["walk_vs_dumps"] = t_walk / t_dump
    print_fn(f"value walk of the largest run ({len(biggest) / 1e3:.0f} KB): {t_walk * 1e3:.2f} ms, "
             f"json.dumps of it: {t_dump * 1e3:.2f} ms ({out['walk_vs_dumps']:.1f}x)")
    return out


def _child(args: list[str], cwd: str) -> tuple[float, float, int]:
    """(peak RSS in MB, CPU seconds, return code) of ``python -m htc_core ARGS`` in a new process."""
    import os
    import subprocess
    import sys

    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL).returncode; u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(u.ru_maxrss, u.ru_utime + u.ru_stime, r)")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "htc_core", *args], cwd=cwd, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]) / 1024, float(out[1]), int(out[2])


def _one_step_runs(path: Path, n: int, steps: int = 1) -> None:
    line = {"success": True, "steps": [{"logprobs": [-0.1, -0.5, -0.02]}] * steps}
    with open(path, "wb") as fh:
        for i in range(n):
            line["id"], line["success"] = f"r{i}", bool(i % 3)
            fh.write(orjson.dumps(line) + b"\n")


def bounded(print_fn=print, runs: int = 200_000, long_steps: int = 2_000) -> dict:
    """Peak memory and CPU of the commands round three found unbounded (see the module docstring)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        _one_step_runs(t / "many.jsonl", runs)
        _one_step_runs(t / "few.jsonl", 80)
        _one_step_runs(t / "long.jsonl", 1, steps=long_steps)
        probes = [
            (f"htc features, {runs:,} one-step runs (floor)", ["features", "many.jsonl", "--out", "f.csv"]),
            (f"htc monitor gac-prefix, {runs:,} one-step runs",
             ["monitor", "gac-prefix", "many.jsonl", "--out", "m.csv"]),
            (f"htc prefixes, one run of {long_steps:,} steps", ["prefixes", "long.jsonl", "--out", "p.jsonl"]),
            ("htc early-warning --max-steps 1e9, 80 one-step runs",
             ["early-warning", "few.jsonl", "--max-steps", "1000000000", "--seeds", "1"]),
        ]
        for name, args in probes:
            mb, cpu, rc = _child(args, tmp)
            out[name] = {"peak_mb": mb, "cpu_s": cpu, "rc": rc}
            print_fn(f"{name:52s} peak {mb:7.0f} MB  CPU {cpu:7.1f} s  rc {rc}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m htc_dev.bench hostile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--copies", type=int, default=1, help="repeat the 2,000 runs N times (default: 1)")
    p.add_argument("--bounded", action="store_true",
                   help="instead: peak memory and CPU of monitor, prefixes and early-warning on inputs that broke "
                        "them (round three), each in a new process")
    p.add_argument("--runs", type=int, default=200_000, help="--bounded: one-step runs for monitor (default 200,000)")
    p.add_argument("--long-steps", type=int, default=2_000,
                   help="--bounded: steps of the one long run for prefixes (default 2,000)")
    args = p.parse_args(argv)
    if args.bounded:
        bounded(runs=args.runs, long_steps=args.long_steps)
    else:
        run(copies=args.copies)
    return 0
