"""Ingest benchmark: ``htc features`` end to end against the JSON parser alone, and its scaling with input size.

    python -m htc_core.bench ingest [--trajectories 3000] [--sizes 30000,300000,1000000] [--skip-scaling]

1. Parser speed. A synthetic htc-trace JSONL file in the issue-17 shape (3,000 trajectories x 10 steps x 50
   tokens, top-5 alternatives, logprobs written with 8 decimals as APIs do, about 110 MB) is generated under the
   temporary folder. In the same run, CPU time (``time.process_time``, best of ``--repeats``) of:
   reference ``json.loads`` of every line; reference ``orjson.loads`` of every line; ``formats.load`` (the
   reader: parse, checks, arrays); ``htc features FILE --out X.csv`` end to end in this process (reader, 48
   features, CSV written), after a warm-up on a small file (numba compiled, modules imported). The target is
   ``htc features`` <= 1.0x the ``json.loads`` pass.
2. Scaling. Files of N small trajectories (5 steps x 20 tokens, no alternatives, the issue's 1M case) for
   each N of ``--sizes``; ``htc features`` runs in a fresh process per size and its wall time, CPU time and
   peak resident memory (the child's own VmHWM) are printed, with the ``json.loads`` pass over the
   same file (CPU, in this process) as the floor.

Generated files stay in ``$TMPDIR/htc-bench-ingest`` (reused when present, never inside the checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

DIR = Path(tempfile.gettempdir()) / "htc-bench-ingest"


def _write_file(path: Path, n_traj: int, n_steps: int, n_tokens: int, k: int, seed: int = 0,
                block: int = 2000) -> Path:
    """htc-trace JSONL of random trajectories (values with 8 decimals), written in blocks."""
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".part")
    with open(tmp, "wb") as fh:
        for start in range(0, n_traj, block):
            m = min(block, n_traj - start)
            lp = np.round(np.log(rng.beta(4.0, 1.0, (m, n_steps, n_tokens)) + 1e-9), 8)
            top = None
            if k:
                gaps = rng.exponential(1.5, (m, n_steps, n_tokens, k - 1))
                first = np.maximum(lp, np.log(rng.uniform(0.3, 1.0, lp.shape)))
                top = np.round(np.concatenate([first[..., None], first[..., None] - np.cumsum(gaps, -1)], -1), 8)
            ok = rng.random(m) < 0.5
            lines = []
            for i in range(m):
                steps = [{"name": f"step {s}", "logprobs": lp[i, s].tolist(),
                          **({"top_logprobs": top[i, s].tolist()} if k else {})} for s in range(n_steps)]
                lines.append(orjson.dumps({"id": f"run-{start + i}", "dataset": "bench", "model": "synthetic",
                                           "success": bool(ok[i]), "steps": steps}))
            fh.write(b"\n".join(lines) + b"\n")
    tmp.rename(path)
    return path


def _cpu(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _lines(path: Path) -> list[bytes]:
    with open(path, "rb") as fh:
        return fh.readlines()


def parser_speed(print_fn=print, n_traj: int = 3000, repeats: int = 2) -> dict:
    from ..cli import main as htc_main
    from ..formats import load

    DIR.mkdir(exist_ok=True)
    path = _write_file(DIR / f"native-{n_traj}x10x50-top5.jsonl", n_traj, 10, 50, 5)
    small = _write_file(DIR / "native-50x10x50-top5.jsonl", 50, 10, 50, 5)
    out = DIR / "features.csv"
    htc_main(["features", str(small), "--out", str(out)])  # warm-up: numba compiled, modules imported
    size = path.stat().st_size
    print_fn(f"== parser speed: {path.name}, {size / 1e6:.0f} MB, {n_traj} trajectories, "
             f"{n_traj * 500:,} tokens, top-5 (CPU seconds, best of {repeats}) ==")
    lines = _lines(path)
    rows = {
        "reference json.loads per line": _cpu(lambda: [json.loads(x) for x in lines], repeats),
        "reference orjson.loads per line": _cpu(lambda: [orjson.loads(x) for x in lines], repeats),
    }
    del lines
    rows["formats.load (reader only)"] = _cpu(lambda: load(path), repeats)
    rows["htc features end to end"] = _cpu(lambda: htc_main(["features", str(path), "--out", str(out)]), repeats)
    floor = rows["reference json.loads per line"]
    for name, t in rows.items():
        print_fn(f"{name:34s} {t:7.2f} s  {size / 1e6 / t:7.1f} MB/s  {t / floor:5.2f}x json.loads")
    ratio = rows["htc features end to end"] / floor
    print_fn(f"htc features / json.loads CPU: {ratio:.2f}x (target <= 1.0x)")
    return {"mb": size / 1e6, **rows, "ratio": ratio, "calllog": calllog_speed(print_fn, repeats=repeats)}


def calllog_speed(print_fn=print, size_mb: float = 50, repeats: int = 2) -> dict:
    """The OpenAI call-log reader (``htc_core.synthetic.write_calllog``: Chat Completions responses with top-5
    token alternatives, one logged call per line) against the same parse references, CPU seconds."""
    from ..formats import load
    from ..synthetic import write_calllog

    path = DIR / f"calllog-{size_mb:g}MB.jsonl"
    if not path.exists():
        write_calllog(path, size_mb)
    size = path.stat().st_size
    print_fn(f"== call-log reader: {path.name}, {size / 1e6:.0f} MB (CPU seconds, best of {repeats}) ==")
    lines = _lines(path)
    rows = {
        "reference json.loads per line": _cpu(lambda: [json.loads(x) for x in lines], repeats),
        "reference orjson.loads per line": _cpu(lambda: [orjson.loads(x) for x in lines], repeats),
    }
    del lines
    rows["formats.load, openai-calllog"] = _cpu(lambda: load(path, format="openai-calllog"), repeats)
    floor = rows["reference json.loads per line"]
    for name, t in rows.items():
        print_fn(f"{name:34s} {t:7.2f} s  {size / 1e6 / t:7.1f} MB/s  {t / floor:5.2f}x json.loads")
    return rows


_CHILD = ("import atexit, re, sys\n"
          "def _peak():\n"
          "    s = open('/proc/self/status').read()\n"
          "    print('HTC_PEAK_KB', re.search(r'VmHWM:\\s+(\\d+)', s).group(1), file=sys.stderr)\n"
          "atexit.register(_peak)\n"
          "from htc_core.cli import main\n"
          "sys.exit(main(sys.argv[1:]))\n")


def _run_measured(argv: list[str]) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak resident MiB, exit code) of ``htc ARGV`` in a child process.

    The peak is the child's own ``VmHWM`` after exec (``ru_maxrss`` would also count the pages of this process
    at fork time, which holds the reference pass's decoded lines)."""
    t0 = time.perf_counter()
    root = str(Path(__file__).resolve().parents[2])  # this htc_core, not another installed one
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.stderr.close()
    if rc:
        print(err[-2000:], file=sys.stderr)
    peak = [int(x) for x in re.findall(r"HTC_PEAK_KB (\d+)", err)]
    return wall, ru.ru_utime + ru.ru_stime, (peak[-1] / 1024.0 if peak else float("nan")), rc


def scaling(print_fn=print, sizes=(30_000, 300_000, 1_000_000), chunk: int = 50_000) -> list[dict]:
    DIR.mkdir(exist_ok=True)
    print_fn(f"== scaling: N trajectories x 5 steps x 20 tokens, no alternatives; htc features --chunk-size "
             f"{chunk:,} in a fresh process per size ==")
    print_fn(f"{'N':>10s} {'MB':>7s} {'wall s':>8s} {'CPU s':>8s} {'peak RSS MiB':>13s} {'json.loads CPU s':>17s} "
             f"{'ratio':>6s} {'CPU us/traj':>12s}")
    out = []
    for n in sizes:
        path = _write_file(DIR / f"native-{n}x5x20.jsonl", n, 5, 20, 0)
        csv = DIR / "scaling.csv"
        wall, cpu, rss, rc = _run_measured(["features", str(path), "--out", str(csv), "--chunk-size", str(chunk)])
        floor = _cpu(lambda: [json.loads(x) for x in _lines(path)], 1)
        row = {"n": n, "mb": path.stat().st_size / 1e6, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss,
               "json_cpu_s": floor, "rc": rc}
        out.append(row)
        print_fn(f"{n:>10,d} {row['mb']:7.0f} {wall:8.1f} {cpu:8.1f} {rss:13.0f} {floor:17.1f} {cpu / floor:6.2f} "
                 f"{cpu / n * 1e6:12.1f}" + ("" if rc == 0 else f"  (exit {rc})"))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m htc_core.bench ingest", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trajectories", type=int, default=3000, help="parser-speed file size (default 3,000)")
    p.add_argument("--repeats", type=int, default=2, help="repeats of each parser-speed figure (default 2)")
    p.add_argument("--sizes", default="30000,300000,1000000", help="scaling sizes (default 30000,300000,1000000)")
    p.add_argument("--chunk-size", type=int, default=50_000, help="htc features --chunk-size for scaling")
    p.add_argument("--skip-parser", action="store_true", help="only the scaling figures")
    p.add_argument("--skip-scaling", action="store_true", help="only the parser-speed figures")
    args = p.parse_args(argv)
    if not args.skip_parser:
        parser_speed(n_traj=args.trajectories, repeats=args.repeats)
    if not args.skip_scaling:
        scaling(sizes=tuple(int(s) for s in args.sizes.split(",") if s.strip()), chunk=args.chunk_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
