"""Benchmarks that print figures (never timed assertions): ``python -m htc_core.bench [features|all]``.

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

from .features import extract
from .traces import TraceSet, _empty_meta


def synthetic_trace_set(n_traj: int = 10_000, n_steps: int = 10, n_tokens: int = 50, k: int = 5,
                        seed: int = 0) -> TraceSet:
    """Random trace set of n_traj x n_steps x n_tokens tokens with k sorted alternatives (vectorized)."""
    rng = np.random.default_rng(seed)
    n = n_traj * n_steps * n_tokens
    logprob = np.log(rng.beta(4.0, 1.0, n) + 1e-12)
    top = np.empty((n, k))
    if k:
        top[:, 0] = np.maximum(logprob, np.log(rng.uniform(0.3, 1.0, n)))
        gaps = rng.exponential(1.5, (n, k - 1)) if k > 1 else np.zeros((n, 0))
        top[:, 1:] = top[:, :1] - np.cumsum(gaps, axis=1)
    meta = _empty_meta(n_traj)
    meta["id"] = np.array([f"syn-{i}" for i in range(n_traj)], dtype=object)
    meta["success"] = pd.array(rng.random(n_traj) < 0.5, dtype="boolean")
    return TraceSet(
        logprob=logprob,
        top_logprobs=top,
        step_offsets=np.arange(0, n + 1, n_tokens, dtype=np.int64),
        traj_offsets=np.arange(0, n_traj * n_steps + 1, n_steps, dtype=np.int64),
        meta=meta,
    )


def _load_oracle():
    tests = Path(__file__).resolve().parents[1] / "tests"
    if not (tests / "oracle.py").is_file():
        return None
    sys.path.insert(0, str(tests))
    try:
        return importlib.import_module("oracle")
    finally:
        sys.path.pop(0)


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
        print_fn("loop oracle: tests/oracle.py not found (run from a source checkout for the ratio)")
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
    parser = argparse.ArgumentParser(prog="python -m htc_core.bench", description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="all", choices=["features", "calibration", "formats", "all"])
    parser.add_argument("--trajectories", type=int, default=10_000, help="synthetic trajectories for 'features'")
    args = parser.parse_args(argv)
    if os.environ.get("OMP_NUM_THREADS") is None:
        print("note: set OMP_NUM_THREADS=1 for one-core figures", file=sys.stderr)
    if args.what in ("features", "all"):
        bench_features(n_traj=args.trajectories)
    for name in ("calibration", "formats"):
        if args.what in (name, "all"):
            try:
                mod = importlib.import_module(f"htc_core.bench_{name}")
            except ImportError:
                print(f"== {name}: benchmark not available ==")
                continue
            mod.run(print_fn=print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
