"""Monitor benchmark (figures, never timed assertions): ``python -m htc_dev.bench monitor``.

Times ``Monitor.add_step`` for one step of 100 tokens with top-5 alternatives, after 1 and after 50
previous steps, pinned to one core, against the plain way of getting the same number in the same run:
cut the k-step prefix, ``extract`` its 48 features and ``predict_proba`` (O(trajectory) per step). Each
figure is the median over many single calls on fresh monitors holding exactly that many steps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from htc_core.calibration import HTCCalibrator
from htc_core.features import extract
from htc_core.monitor import Monitor
from htc_core.synthetic import synthetic_trace_set
from htc_core.traces.prefix import prefixes


def _model(n_tokens: int) -> HTCCalibrator:
    """HTC-Full fitted on synthetic runs (timing does not depend on the weights; every weight is non-zero)."""
    ts = synthetic_trace_set(300, n_steps=5, n_tokens=n_tokens, k=5, seed=1)
    fm = extract(ts)
    y = (fm.column("last_top1_avg") > np.median(fm.column("last_top1_avg"))).astype(int)
    return HTCCalibrator("full", alphas=(1.0,)).fit(fm, y)


def _steps(ts, i: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for s in range(ts.traj_offsets[i], ts.traj_offsets[i + 1]):
        a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
        out.append((np.ascontiguousarray(ts.logprob[a:b]), np.ascontiguousarray(ts.top_logprobs[a:b])))
    return out


def _time_add_step(model, steps, previous: int, reps: int, form) -> float:
    """Median seconds of the add_step that follows ``previous`` steps, in the given input form."""
    lp, top = form(*steps[previous])
    times = []
    for _ in range(reps):
        mon = Monitor(model)
        for p_lp, p_top in steps[:previous]:
            mon.add_step(p_lp, p_top)
        t = time.perf_counter_ns()
        mon.add_step(lp, top)
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) * 1e-9


def _time_reference(model, ts, previous: int, reps: int) -> float:
    one = ts.take([0])
    times = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        fm = extract(prefixes(one, previous + 1))
        model.predict_proba(fm)
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) * 1e-9


FORMS = {
    "numpy arrays": lambda lp, top: (lp, top),
    "Python lists": lambda lp, top: (lp.tolist(), top.tolist()),
    "OpenAI dict rows": lambda lp, top: (lp.tolist(), [[{"token": f"t{j}", "logprob": v} for j, v in enumerate(r)]
                                                        for r in top.tolist()]),
}


def bench_monitor(print_fn=print, n_tokens: int = 100, reps: int = 2000, pin: bool = True) -> dict:
    if pin and hasattr(os, "sched_setaffinity"):
        cpu = sorted(os.sched_getaffinity(0))[0]
        os.sched_setaffinity(0, {cpu})
        print_fn(f"pinned to CPU {cpu}")
    print_fn(f"== monitor: add_step of one {n_tokens}-token step with top-5 alternatives ==")
    model = _model(n_tokens)
    ts = synthetic_trace_set(1, n_steps=51, n_tokens=n_tokens, k=5, seed=2)
    steps = _steps(ts, 0)
    mon = Monitor(model)
    for lp, top in steps:                       # warm-up (loads the compiled kernel from numba's cache)
        mon.add_step(lp, top)
    worst = abs(mon.confidence - model.predict_proba(extract(ts))[0, 1])
    print_fn(f"check: after 51 steps the monitor and extract + predict_proba differ by {worst:.1e}")
    out: dict = {"check": worst}
    rows = [("input form", "after 1 step", "after 50 steps")]
    for name, form in FORMS.items():
        n = reps if name == "numpy arrays" else max(reps // 4, 50)
        t1 = _time_add_step(model, steps, 1, n, form)
        t50 = _time_add_step(model, steps, 50, max(n // 4, 50), form)
        out[name] = (t1, t50)
        rows.append((f"Monitor.add_step, {name}", f"{t1 * 1e6:.1f} µs", f"{t50 * 1e6:.1f} µs"))
    default = Monitor()                         # the shipped gac-prefix: two sub-models, routed per run
    gac = default.model                         # loaded once (a new Monitor per timed call, as above)
    for lp, top in steps:
        default.add_step(lp, top)
    for name in ("numpy arrays", "Python lists"):
        n = reps if name == "numpy arrays" else max(reps // 4, 50)
        t1 = _time_add_step(gac, steps, 1, n, FORMS[name])
        t50 = _time_add_step(gac, steps, 50, max(n // 4, 50), FORMS[name])
        out[f"default {name}"] = (t1, t50)
        rows.append((f"Monitor() default gac-prefix, {name}", f"{t1 * 1e6:.1f} µs", f"{t50 * 1e6:.1f} µs"))
    r1 = _time_reference(model, ts, 1, 200)
    r50 = _time_reference(model, ts, 50, 200)
    out["reference"] = (r1, r50)
    rows.append(("reference: prefix + extract + predict_proba", f"{r1 * 1e6:.0f} µs", f"{r50 * 1e6:.0f} µs"))
    a1, a50 = out["numpy arrays"]
    rows.append(("speed-up (numpy arrays)", f"{r1 / a1:.0f}x", f"{r50 / a50:.0f}x"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print_fn("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print_fn("targets: <= 50 µs per add_step on one core, the same after 1 and after 50 steps; the default "
             "Monitor() (gac-prefix) <= 20 µs per 100-token step (issue 29)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m htc_dev.bench monitor", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=100, help="tokens of the timed step (default: 100)")
    p.add_argument("--reps", type=int, default=2000, help="timed calls per figure (default: 2000)")
    p.add_argument("--no-pin", action="store_true", help="do not pin the process to one CPU")
    args = p.parse_args(argv)
    bench_monitor(n_tokens=args.tokens, reps=args.reps, pin=not args.no_pin)
    return 0
