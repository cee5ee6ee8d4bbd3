"""One run's explanation: ``explain_trajectory`` per run on the sample runs, and a digest of everything it says.

    python -m htc_dev.bench explain [--runs 40] [--repeats 3] [--digest]

For sample_runs/units (500 runs) and sample_runs/gemma3 (96 runs), HTC-Reduced and HTC-Full fitted on all runs
of the set: CPU milliseconds per ``explain_trajectory`` call (best of ``--repeats`` passes over the first
``--runs`` runs, this process only; the first call of a run set also groups its features into signals, printed
apart). ``--digest`` adds a SHA-256 over every run's explanation (reasons, summary, confidence, both tables at
17 significant digits with their dtypes): the same digest before and after a change means the same output to
the bit.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time

SETS = ("sample_runs/units", "sample_runs/gemma3")


def digest(e) -> str:
    """SHA-256 of one explanation: its scalars, reasons, summary, and both tables with their dtypes."""
    h = hashlib.sha256()
    h.update(repr((e.index, e.id, e.variant, e.intercept, e.logit, e.confidence, e.reasons, e.n_reference,
                   e.reference, e.cap_factor, e.summary)).encode())
    for frame in (e.table, e.signals):
        h.update(frame.to_csv(float_format="%.17g").encode())
        h.update(repr(list(frame.dtypes)).encode())
    return h.hexdigest()


def _one_set(root, path: str, variant: str, args) -> None:
    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.explain import explain_trajectory
    from htc_core.features import extract
    from htc_core.formats import load

    ts, _ = load(root / path)
    fm = extract(ts)
    model = HTCCalibrator(variant=variant).fit(fm, ts.labels)
    kw = dict(labels=ts.labels, groups=ts.meta["dataset"], ids=ts.ids)
    t0 = time.process_time()
    explain_trajectory(model, fm, 0, **kw)
    first = (time.process_time() - t0) * 1000
    n = min(args.runs, ts.n_trajectories)
    passes = []
    for _ in range(args.repeats):
        t0 = time.process_time()
        for i in range(n):
            explain_trajectory(model, fm, i, **kw)
        passes.append((time.process_time() - t0) / n * 1000)
    print(f"{path} ({ts.n_trajectories} runs) HTC-{variant.title()}: {min(passes):.2f} ms/run CPU (best of "
          f"{args.repeats} x {n} runs; passes {', '.join(f'{p:.1f}' for p in passes)}); first call {first:.1f} ms",
          flush=True)
    if args.digest:
        runs = "".join(digest(explain_trajectory(model, fm, i, **kw)) for i in range(ts.n_trajectories))
        print(f"  digest of all {ts.n_trajectories} explanations: {hashlib.sha256(runs.encode()).hexdigest()}",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    from . import checkout_root

    p = argparse.ArgumentParser(prog="python -m htc_dev.bench explain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=40, help="runs timed per pass (default 40)")
    p.add_argument("--repeats", type=int, default=3, help="passes; the best counts (default 3)")
    p.add_argument("--digest", action="store_true", help="also print a SHA-256 over every run's explanation")
    args = p.parse_args(argv)
    root = checkout_root()
    if root is None:
        p.error("needs a source checkout (sample_runs/)")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for path in SETS:
        for variant in ("reduced", "full"):
            _one_set(root, path, variant, args)
    return 0
