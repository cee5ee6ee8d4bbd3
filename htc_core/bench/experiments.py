"""Transfer, GAC leave-one-out and ablation: wall time on the repository's runs, against one plain
``evaluate`` of HTC-Full + HTC-Reduced on the same runs in the same process (the unit of work the experiments
repeat). Target (issue 11): each experiment under 2 minutes on one core for ``sample_runs/``.

    OMP_NUM_THREADS=1 python -m htc_core.bench experiments                 # sample_runs/, 3 seeds
    OMP_NUM_THREADS=1 python -m htc_core.bench experiments --with-uala --tables   # + ../shared/data/uala-hotpotqa

BLAS is limited to one thread; the figures are measured, never asserted in tests.
"""

from __future__ import annotations

import argparse
import time

from . import checkout_root, shared_data_dir

TARGET_S = 120.0


def _load(with_uala: bool):
    from ..formats import load

    root = checkout_root()
    if root is None:
        raise SystemExit("bench experiments: needs a source checkout (sample_runs/)")
    paths = [str(root / "sample_runs")]
    uala = shared_data_dir() / "uala-hotpotqa"
    if with_uala:
        if not uala.is_dir():
            raise SystemExit(f"bench experiments: --with-uala but {uala} does not exist")
        paths.append(str(uala))
    ts, _ = load(paths)
    return ts.labeled(), paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_core.bench experiments", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--with-uala", action="store_true", help="add the UALA HotpotQA runs (no top-k alternatives)")
    ap.add_argument("--tables", action="store_true", help="print the result tables too")
    ap.add_argument("--only", choices=("transfer", "gac", "ablation"), action="append",
                    help="run only these experiments (repeatable)")
    args = ap.parse_args(argv)

    from threadpoolctl import threadpool_limits

    from ..calibration.ablation import ablation
    from ..calibration.evaluation import evaluate
    from ..calibration.gac import gac_leave_one_out
    from ..calibration.transfer import transfer

    ts, paths = _load(args.with_uala)
    print(f"data: {len(ts)} labeled runs from {', '.join(paths)}; seeds {args.seeds}; BLAS 1 thread")
    jobs = {"transfer": lambda: transfer(ts, by="dataset", seeds=args.seeds),
            "gac": lambda: gac_leave_one_out(ts, by="dataset", seeds=args.seeds),
            "ablation": lambda: ablation(ts, seeds=args.seeds)}
    with threadpool_limits(limits=1, user_api="blas"):
        evaluate(ts.take(range(60)), seeds=1, methods=["HTC-Reduced"])      # numba cache load, not timed
        t0 = time.perf_counter()
        evaluate(ts, seeds=args.seeds, methods=["HTC-Full", "HTC-Reduced"])
        ref = time.perf_counter() - t0
        print(f"reference: evaluate HTC-Full + HTC-Reduced on all {len(ts)} runs (one nested CV): {ref:.1f} s")
        print(f"{'experiment':<10} {'seconds':>8} {'x reference':>12} {'target':>8}")
        results = {}
        for name, job in jobs.items():
            if args.only and name not in args.only:
                continue
            t0 = time.perf_counter()
            results[name] = job()
            dt = time.perf_counter() - t0
            ok = "met" if dt < TARGET_S else "MISSED"
            print(f"{name:<10} {dt:8.1f} {dt / ref:12.1f} {f'< {TARGET_S:.0f} s':>8}  {ok}", flush=True)
    if args.tables:
        for name, res in results.items():
            print(f"\n== {name}\n{res.table()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
