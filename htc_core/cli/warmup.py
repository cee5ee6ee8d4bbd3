"""``htc warmup``: compile the numba kernels now (once per machine), not in the first fit or page."""

from __future__ import annotations

import argparse
import sys
import time


def cmd_warmup(args: argparse.Namespace) -> int:
    from .. import kernels
    from ..numba_cache import cache_dir

    state = "loading them from the cache" if kernels.cache_is_warm() else "compiling (first time on this machine)"
    print(f"htc warmup: kernel cache {cache_dir()}; {state}", file=sys.stderr, flush=True)
    t0, c0 = time.perf_counter(), time.process_time()

    def report(name: str, wall: float, cpu: float) -> None:
        print(f"  {name}: {wall:.1f} s ({cpu:.1f} s CPU)", file=sys.stderr, flush=True)

    kernels.warm(report)
    print(f"htc warmup: ready in {time.perf_counter() - t0:.1f} s ({time.process_time() - c0:.1f} s CPU); later "
          "processes load the kernels from the cache", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser("warmup", help="compile the fitting kernels now (once per machine, ~7 s CPU)",
                       description="Compile htc's numba kernels (path solver, Bottom-10% baseline, live monitoring) "
                                   "into the kernel cache ($HTC_CACHE_DIR/numba, else ~/.cache/htc/numba), so that "
                                   "the first fit, evaluation, score or dashboard page of a fresh install does not "
                                   "wait for them. Run it once after installing (or in a container's build); with "
                                   "a warm cache it only loads them (well under a second).",
                       epilog="example: htc warmup", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=cmd_warmup)
