"""HTC-GAM's speed budget (issue 14): ``htc evaluate`` on 500 runs with HTC-GAM under 30 s on one core, against
the same ``evaluate`` of the default table (HTC-Full, HTC-Reduced, the baselines) on the same runs in the same
process; then HTC-GAM next to HTC-Reduced on every run given (the README's figures).

    OMP_NUM_THREADS=1 python -m htc_dev.bench gam                      # 500 of sample_runs/, then all 2,000
    OMP_NUM_THREADS=1 python -m htc_dev.bench gam --with-uala          # + ../shared/data/uala-hotpotqa (own table)

BLAS is limited to one thread; the figures are measured, never asserted in tests.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from . import checkout_root, shared_data_dir

TARGET_S = 30.0
N_BUDGET = 500


def _sample(ts, n: int, seed: int = 0):
    """``n`` labeled runs drawn at random (fixed seed), stratified by nothing: the budget's 500 runs."""
    rng = np.random.default_rng(seed)
    return ts.take(np.sort(rng.choice(len(ts), size=min(n, len(ts)), replace=False)))


def _table(res, name: str) -> None:
    print(f"\n{name}: mean over {len(res.seeds)} repeat(s) of pooled out-of-fold metrics")
    print(f"  {'method':<12} {'ECE':>7} {'Brier':>7} {'AUROC':>7}")
    for m in ("HTC-Full", "HTC-Reduced", "HTC-GAM"):
        if m in res.summary:
            s = res.summary[m]
            print(f"  {m:<12} {s['ece']['mean']:7.4f} {s['brier']['mean']:7.4f} {s['auroc']['mean']:7.4f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench gam", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="CV repeats, as htc evaluate (default 3)")
    ap.add_argument("--with-uala", action="store_true", help="also compare on the UALA HotpotQA runs")
    ap.add_argument("--budget-only", action="store_true", help="only the 500-run timing")
    args = ap.parse_args(argv)

    from threadpoolctl import threadpool_limits

    from htc_core.calibration.evaluation import evaluate
    from htc_core.calibration.methods import METHODS
    from htc_core.formats import load

    root = checkout_root()
    if root is None:
        raise SystemExit("bench gam: needs a source checkout (sample_runs/)")
    ts = load(str(root / "sample_runs"))[0].labeled()
    default = [m for m in METHODS.values() if m.in_default_table]
    with_gam = default + [METHODS["HTC-GAM"]]
    sets = {"sample_runs": ts}
    if args.with_uala:
        uala = shared_data_dir() / "uala-hotpotqa"
        if not uala.is_dir():
            raise SystemExit(f"bench gam: --with-uala but {uala} does not exist")
        sets["uala-hotpotqa"] = load(str(uala))[0].labeled()
    with threadpool_limits(limits=1, user_api="blas"):
        sub = _sample(ts, N_BUDGET)
        evaluate(sub.take(range(60)), seeds=1, methods=["HTC-Reduced", "HTC-GAM"])   # numba cache load, not timed
        t0 = time.perf_counter()
        evaluate(sub, seeds=args.seeds, methods=default)
        ref = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = evaluate(sub, seeds=args.seeds, methods=with_gam)
        dt = time.perf_counter() - t0
        ok = "met" if dt < TARGET_S else "MISSED"
        print(f"evaluate, {len(sub)} sample_runs runs, {args.seeds} seeds, BLAS 1 thread:")
        print(f"  default table (reference)   {ref:6.1f} s")
        print(f"  default table + HTC-GAM     {dt:6.1f} s   target < {TARGET_S:.0f} s: {ok}")
        _table(res, f"{len(sub)} sample_runs runs")
        if args.budget_only:
            return 0
        for name, data in sets.items():
            t0 = time.perf_counter()
            res = evaluate(data, seeds=args.seeds, methods=["HTC-Full", "HTC-Reduced", "HTC-GAM"])
            _table(res, f"{name}: {len(data)} runs ({time.perf_counter() - t0:.0f} s)")
    return 0
