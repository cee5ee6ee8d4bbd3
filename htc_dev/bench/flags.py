"""Structural flags over the trace set's columns against the per-run reference loop, same runs, same process.

    python -m htc_dev.bench flags [--copies 25] [--synthetic 100000]

Two inputs: the 2,000 sample runs (real step texts, observations, answers) concatenated ``--copies`` times, and
``--synthetic`` runs without text (the issue-17 shape: what a million logged runs without step texts cost).
For each, wall seconds (best of 2) and microseconds per run of ``explain.structural_flags`` and of
``explain.flags.structural_flags_loop`` (the per-run loop it replaced), and whether their frames are
identical.
"""

from __future__ import annotations

import argparse
import sys
import time


def _best(fn, repeats: int = 2) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m htc_dev.bench flags", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--copies", type=int, default=25, help="copies of the sample runs (default 25: 50,000 runs)")
    p.add_argument("--synthetic", type=int, default=100_000, help="synthetic runs without text (default 100,000)")
    args = p.parse_args(argv)
    if args.copies < 1 or args.synthetic < 1:
        raise SystemExit(f"--copies and --synthetic must be positive, got {args.copies} and {args.synthetic}")
    from htc_core.explain.flags import structural_flags
    from htc_core.explain.flags import structural_flags_loop
    from htc_core.formats import load
    from htc_core.synthetic import synthetic_trace_set
    from htc_core.traces import concat
    from . import checkout_root

    inputs = []
    root = checkout_root()
    if root is not None and (root / "sample_runs").is_dir():
        ts, _ = load(root / "sample_runs")
        inputs.append((f"sample runs x{args.copies}", concat([ts] * args.copies)))
    inputs.append(("synthetic, no text", synthetic_trace_set(args.synthetic, 5, 20, k=0, seed=1)))
    print(f"{'input':24s}{'runs':>10s}{'columns s':>11s}{'loop s':>9s}{'us/run':>9s}{'loop us/run':>13s}"
          f"{'speed-up':>10s}  identical")
    for name, ts in inputs:
        t_fast, fast = _best(lambda: structural_flags(ts))
        t_loop, ref = _best(lambda: structural_flags_loop(ts))
        same = fast.frame.equals(ref.frame) and fast.available == ref.available
        n = len(ts)
        print(f"{name:24s}{n:>10,d}{t_fast:>11.2f}{t_loop:>9.2f}{t_fast / n * 1e6:>9.1f}{t_loop / n * 1e6:>13.1f}"
              f"{t_loop / t_fast:>9.1f}x  {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
