"""Transfer, GAC leave-one-out and ablation: wall time on the repository's runs, against one plain
``evaluate`` of HTC-Full + HTC-Reduced on the same runs in the same process (the unit of work the experiments
repeat). Target (issue 11): each experiment under 2 minutes on one core for ``sample_runs/``.

    OMP_NUM_THREADS=1 python -m htc_dev.bench experiments                 # sample_runs/, 3 seeds
    OMP_NUM_THREADS=1 python -m htc_dev.bench experiments --with-uala --tables   # + ../shared/data/uala-hotpotqa

BLAS is limited to one thread; the figures are measured, never asserted in tests. Each experiment is shown
with its wall time and its CPU time (``time.process_time``: the time it held a core; on a machine shared with
other jobs the wall time also counts the waits for a core).

``--kernel`` also times the L1 coordinate-descent kernel of the path solver (most of an ablation's time) on
a real subproblem of ``sample_runs/`` against the kernel as it was before (column ``j`` of H read with a
stride), in the same run, and checks that both give the same bits.
"""

from __future__ import annotations

import argparse
import time

from . import checkout_root, shared_data_dir

TARGET_S = 120.0


def load_sources(with_uala: bool):
    from htc_core.formats import load

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
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench experiments", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--with-uala", action="store_true", help="add the UALA HotpotQA runs (no top-k alternatives)")
    ap.add_argument("--tables", action="store_true", help="print the result tables too")
    ap.add_argument("--only", choices=("transfer", "gac", "ablation"), action="append",
                    help="run only these experiments (repeatable)")
    ap.add_argument("--kernel", action="store_true", help="time the L1 kernel against its strided reference too")
    args = ap.parse_args(argv)

    from threadpoolctl import threadpool_limits

    from htc_core.experiments.ablation import ablation
    from htc_core.calibration.evaluation import evaluate
    from htc_core.experiments.gac import gac_leave_one_out
    from htc_core.experiments.transfer import transfer

    ts, paths = load_sources(args.with_uala)
    print(f"data: {len(ts)} labeled runs from {', '.join(paths)}; seeds {args.seeds}; BLAS 1 thread")
    jobs = {"transfer": lambda: transfer(ts, by="dataset", seeds=args.seeds),
            "gac": lambda: gac_leave_one_out(ts, by="dataset", seeds=args.seeds),
            "ablation": lambda: ablation(ts, seeds=args.seeds)}
    with threadpool_limits(limits=1, user_api="blas"):
        evaluate(ts.take(range(60)), seeds=1, methods=["HTC-Reduced"])      # numba cache load, not timed
        if args.kernel:
            _kernel(ts)
        t0, c0 = time.perf_counter(), time.process_time()
        evaluate(ts, seeds=args.seeds, methods=["HTC-Full", "HTC-Reduced"])
        ref, ref_cpu = time.perf_counter() - t0, time.process_time() - c0
        print(f"reference: evaluate HTC-Full + HTC-Reduced on all {len(ts)} runs (one nested CV): {ref:.1f} s wall, "
              f"{ref_cpu:.1f} s CPU")
        print(f"{'experiment':<10} {'wall s':>8} {'CPU s':>8} {'CPU x reference':>16} {'target':>8}")
        results = {}
        for name, job in jobs.items():
            if args.only and name not in args.only:
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            results[name] = job()
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            ok = "met" if cpu < TARGET_S else "MISSED"
            print(f"{name:<10} {dt:8.1f} {cpu:8.1f} {cpu / ref_cpu:16.1f} {f'< {TARGET_S:.0f} s':>8}  {ok} (CPU)",
                  flush=True)
    if args.tables:
        for name, res in results.items():
            print(f"\n== {name}\n{res.table()}")
    return 0


def _kernel(ts) -> None:
    """The L1 kernel against its strided reference on a real subproblem (H, g at w = 0, 4/5 of the runs)."""
    import numpy as np
    from numba import njit

    from htc_core.calibration.pathsolver import logistic_hessian
    from htc_core.calibration.subproblem import l1_coordinate_step
    from htc_core.calibration.solvers import distinct_columns, standardize_params
    from htc_core.features import extract

    @njit(cache=False)
    def strided(H, g, w, alpha, inner_tol, max_sweeps):     # the kernel before: column j of H read with a stride
        d = w.shape[0]
        step, Hd = np.zeros(d), np.zeros(d)
        for _ in range(max_sweeps):
            biggest = 0.0
            for j in range(d):
                a = H[j, j]
                if a <= 1e-10:
                    continue
                u = w[j] - (g[j] + Hd[j] - a * step[j]) / a
                thr = alpha / a
                u = u - thr if u > thr else (u + thr if u < -thr else 0.0)
                change = (u - w[j]) - step[j]
                if change != 0.0:
                    step[j] += change
                    for m in range(d):
                        Hd[m] += change * H[m, j]
                    biggest = max(biggest, abs(change) * a)
            if biggest <= inner_tol:
                break
        return step

    X, y = extract(ts).values, ts.labels
    tr = np.arange(len(y)) % 5 != 0
    mean, scale = standardize_params(X[tr])
    Xs = (X[tr] - mean) / scale
    Xs = np.ascontiguousarray(np.column_stack([Xs[:, distinct_columns(Xs)], np.ones(int(tr.sum()))]))
    p = np.full(len(Xs), 0.5)
    H = logistic_hessian(Xs, p, np.empty_like(Xs))
    g = Xs.T @ (p - y[tr])
    w = np.zeros(Xs.shape[1])
    rows = []
    for alpha in (0.01, 1.0):
        args = (H, g, w, alpha, 1e-6, 1000)
        same = np.array_equal(strided(*args), l1_coordinate_step(*args))
        times = {}
        for name, fn in (("strided (before)", strided), ("contiguous (now)", l1_coordinate_step)):
            c0 = time.process_time()
            for _ in range(20):
                fn(*args)
            times[name] = (time.process_time() - c0) / 20 * 1e3
        rows.append((alpha, times, same))
    print(f"L1 kernel on {Xs.shape[1]} columns x {len(Xs)} runs (one Newton step's subproblem, up to 1000 sweeps), "
          "CPU ms per call:")
    for alpha, times, same in rows:
        (n1, t1), (n2, t2) = times.items()
        print(f"  alpha {alpha:<5g} {n1} {t1:.2f} ms, {n2} {t2:.2f} ms: {t1 / t2:.1f}x, same bits: {same}")


if __name__ == "__main__":
    raise SystemExit(main())
