"""Learning curves on the repository's runs: wall time of ``learning_curve`` with the default sizes, split by
method, against its own HTC-Full + HTC-Reduced fits in the same run (the plain reference: the two linear
calibrators on the same draws). Target (issue 11): under 10 minutes on one core for ``sample_runs/``.

    OMP_NUM_THREADS=1 python -m htc_dev.bench learning                    # sample_runs/, sizes 50,100,200,400
    OMP_NUM_THREADS=1 python -m htc_dev.bench learning --with-uala        # + ../shared/data/uala-hotpotqa

BLAS and PyTorch use one thread; the machine's load average is printed next to the figures, which are
measured, never asserted in tests. Needs the [learning] extra for the MLP, XGBoost, LSTM and Transformer.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

TARGET_S = 600.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench learning", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50,100,200,400")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--methods", default=None, help="comma-separated (default: all)")
    ap.add_argument("--with-uala", action="store_true", help="add the UALA HotpotQA runs (no top-k alternatives)")
    ap.add_argument("--tables", action="store_true", help="print the result tables too")
    args = ap.parse_args(argv)

    from threadpoolctl import threadpool_limits

    from htc_core.experiments.learning_curve import learning_curve
    from .experiments import load_sources

    ts, paths = load_sources(args.with_uala)
    sizes = [int(s) for s in args.sizes.split(",")]
    methods = None if args.methods is None else args.methods.split(",")
    print(f"data: {len(ts)} labeled runs from {', '.join(paths)}; sizes {sizes}; {args.folds} folds x "
          f"{args.repeats} repeat(s); BLAS and torch 1 thread; load average at start {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    with threadpool_limits(limits=1, user_api="blas"):
        learning_curve(ts.take(range(200)), sizes=[20], folds=2, methods=["HTC-Reduced"])   # numba cache load
        t0 = time.perf_counter()
        res = learning_curve(ts, sizes=sizes, repeats=args.repeats, folds=args.folds, methods=methods,
                             progress=lambda d, t, m: print(f"  fit {d}/{t} ({m}) at {time.perf_counter() - t0:.0f} s",
                                                            file=sys.stderr, flush=True))
        total = time.perf_counter() - t0
    per = res.rows.groupby("method", sort=False)["seconds"].sum()
    ref = float(per.get("HTC-Full", 0.0) + per.get("HTC-Reduced", 0.0))
    print(f"{'method':<13} {'seconds':>8} {'x HTC-Full+Reduced':>19}")
    for m, s in per.items():
        print(f"{m:<13} {s:8.1f} {s / ref if ref else float('nan'):19.1f}")
    ok = "met" if total < TARGET_S else "MISSED"
    print(f"total: {total:.1f} s (target < {TARGET_S:.0f} s: {ok}); load average at end {os.getloadavg()[0]:.1f}")
    if args.tables:
        print(res.table())
    return 0
