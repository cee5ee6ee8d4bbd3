"""Feature-extraction benchmark (figures, never timed assertions): ``python -m htc_dev.bench features``.

Each figure is measured in the same run as a plain reference, so the ratios
hold on a noisy shared machine even when absolute times move.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from htc_core.features import extract
from htc_core.synthetic import synthetic_trace_set
from htc_core.traces import TraceSet



def _load_oracle():
    from htc_core.features import reference

    return reference


def _oracle_inputs(ts: TraceSet, n: int) -> list:
    out = []
    for i in range(n):
        steps = []
        for s in range(ts.traj_offsets[i], ts.traj_offsets[i + 1]):
            a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
            steps.append((ts.logprob[a:b].tolist(), ts.top_logprobs[a:b].tolist() if ts.k else None))
        out.append(steps)
    return out


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_features(print_fn=print, n_traj: int = 10_000, repeats: int = 3, oracle_traj: int = 200) -> dict:
    print_fn(f"== features: synthetic {n_traj} trajectories x 10 steps x 50 tokens, top-5 alternatives ==")
    t0 = time.perf_counter()
    ts = synthetic_trace_set(n_traj)
    print_fn(f"built trace set: {ts.n_tokens:,} tokens in {time.perf_counter() - t0:.1f} s "
             f"({ts.memory_bytes() / 2**20:.0f} MiB of arrays)")
    extract(ts.take(np.arange(10)))  # warm-up
    times = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        fm = extract(ts)
        times.append(time.perf_counter() - t)
    best = min(times)
    vec_tps = ts.n_tokens / best
    print_fn(f"vectorized extractor: best of {repeats} {best:.3f} s -> {vec_tps / 1e6:.2f} M tokens/s "
             f"(target >= 5 M tokens/s)")
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    extract(ts)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    total_peak = (ts.memory_bytes() + peak) / 2**20
    print_fn(f"memory: trace set arrays {ts.memory_bytes() / 2**20:.0f} MiB + extraction peak {peak / 2**20:.0f} MiB "
             f"= {total_peak:.0f} MiB (target <= 1024 MiB for 5 M tokens with top-5); process max RSS {_rss_mb():.0f} MiB")
    result = {"tokens": ts.n_tokens, "vectorized_tokens_per_s": vec_tps, "peak_mib": total_peak}
    oracle = _load_oracle()
    if oracle is None:
        return result
    sub = ts.take(np.arange(oracle_traj))
    inputs = _oracle_inputs(sub, oracle_traj)
    t = time.perf_counter()
    ref = [oracle.features(steps, k=5) for steps in inputs]
    loop_s = time.perf_counter() - t
    loop_tps = sub.n_tokens / loop_s
    agree = np.max(np.abs(np.asarray(ref) - fm.values[:oracle_traj]))
    print_fn(f"plain-loop oracle: {oracle_traj} trajectories ({sub.n_tokens:,} tokens) in {loop_s:.2f} s -> "
             f"{loop_tps / 1e6:.3f} M tokens/s; max |difference| {agree:.1e}")
    print_fn(f"ratio vectorized / loop: {vec_tps / loop_tps:.0f}x (target >= 20x)")
    result.update(loop_tokens_per_s=loop_tps, ratio=vec_tps / loop_tps)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m htc_dev.bench features", description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=10_000, help="synthetic trajectories (default 10,000)")
    args = parser.parse_args(argv)
    if os.environ.get("OMP_NUM_THREADS") is None:
        print("note: set OMP_NUM_THREADS=1 for one-core figures", file=sys.stderr)
    bench_features(n_traj=args.trajectories)
    return 0


if __name__ == "__main__":
    sys.exit(main())
