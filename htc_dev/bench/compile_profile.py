"""Where a first fit's compile goes, kernel by kernel (issue 29, item 3): ``python -m htc_dev.bench coldstart
--kernels``.

One new process with an empty kernel cache (``HTC_CACHE_DIR`` pointed at a new folder) fits HTC-Reduced and
HTC-Full on ``sample_runs/arithmetic/`` while a listener on numba's compile events (``numba.core.event``,
``numba:compile``) adds up the CPU time of this process spent compiling each function, inclusive of the
functions compiled inside it (a kernel's callees, numba's own implementations of ``np.empty`` and the like).
Printed: the CPU seconds of the fits (compile included) and each compiled function's inclusive seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys, time
from collections import defaultdict
from numba.core import event

class Compiles(event.Listener):
    def __init__(self):
        self.stack, self.seconds = [], defaultdict(float)
    def on_start(self, ev):
        self.stack.append((ev.data["dispatcher"].py_func.__qualname__, time.process_time()))
    def on_end(self, ev):
        name, t0 = self.stack.pop()
        self.seconds[name] += time.process_time() - t0

listener = Compiles()
event.register("numba:compile", listener)
import htc_core as htc
ts, _ = htc.load(sys.argv[1])
fm = htc.extract(ts)
t0 = time.process_time()
for variant in ("reduced", "full"):
    htc.HTCCalibrator(variant=variant).fit(fm, ts.labels)
print(json.dumps({"fits": time.process_time() - t0, "kernels": dict(listener.seconds)}))
"""


def kernel_seconds(data: Path | None = None) -> dict:
    """{"fits": CPU seconds of the two fits, "kernels": {function: inclusive compile CPU seconds}}."""
    data = data or ROOT / "sample_runs" / "arithmetic"
    with tempfile.TemporaryDirectory(prefix="htc-compile-") as d:
        env = dict(os.environ, HTC_CACHE_DIR=d, PYTHONPATH=str(ROOT))
        env.pop("NUMBA_CACHE_DIR", None)
        p = subprocess.run([sys.executable, "-c", CHILD, str(data)], cwd=ROOT, env=env, capture_output=True,
                           text=True)
    if p.returncode != 0:
        raise RuntimeError(f"the profiled fit failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def print_kernels(print_fn=print) -> dict:
    """Print :func:`kernel_seconds`, largest first, with the load average."""
    print_fn(f"load average {os.getloadavg()[0]:.1f}; compile CPU per function, inclusive of what it compiles "
             f"inside it (one new process, empty cache, HTC-Reduced + HTC-Full on sample_runs/arithmetic)")
    out = kernel_seconds()
    for name, sec in sorted(out["kernels"].items(), key=lambda kv: -kv[1]):
        print_fn(f"  {sec:6.2f}  {name}")
    print_fn(f"the two fits, compile included: {out['fits']:.2f} s CPU")
    return out
