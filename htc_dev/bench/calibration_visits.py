"""Part of the dashboard benchmark: the Calibration page on the sample runs, first visit and later visits.

1. first visit: an empty result cache, a store holding the sample runs (features cached at load), the Runs
   page drawn first (where a user lands; the app starts the evaluation in its background job), then the
   Calibration page run until complete (all methods, the alpha grid the caller set, the dashboard's default
   3 CV repeats); the landing page's time and the job's own compute time are reported beside it;
2. a later visit in the same session;
3. a reload: a new session in the same server process (the results are in memory);
4. a restart: the in-memory cache emptied (a new server process), the evaluation read back from the store.

Each time is the page script's run time (AppTest). Importing Streamlit here is fine: ``htc_dev.bench`` is
not part of the core.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def _visit(at) -> float:
    t0 = time.perf_counter()
    at.switch_page("pages/calibration.py")
    at.run()
    dt = time.perf_counter() - t0
    if at.exception or at.error:
        raise RuntimeError(f"Calibration: {[e.value for e in at.exception] + [e.value for e in at.error]}")
    return dt


def calibration_visits(data_dir: Path, samples: Path, app: Path, *, seeds: int = 3) -> dict:
    """Seconds of each visit (see the module doc) and what the evaluation covered."""
    from streamlit.testing.v1 import AppTest

    from htc_core.app import compute

    os.environ["HTC_DATA_DIR"] = str(data_dir)
    os.environ["HTC_SAMPLE_DIR"] = str(samples)

    from htc_core.app import jobs

    def session():
        at = AppTest.from_file(str(app), default_timeout=3600)
        at.session_state["htc_seeds"] = seeds
        at.run()                      # the Runs page first, as a user lands on it (the app starts the evaluation)
        return at

    compute.fit_registry.clear()
    before = compute.CACHE_STATS.copy()
    t0 = time.perf_counter()
    at = session()
    landing = time.perf_counter() - t0
    first = _visit(at)
    parts = (compute.CACHE_STATS - before)["evaluation parts"]
    job_s = next((s for label, s in reversed(jobs.FINISHED) if label == "Cross-validated evaluation"), float("nan"))
    table = at.dataframe[0].value
    later = _visit(at)
    reload = _visit(session())
    compute.fit_registry.clear()
    restart = _visit(session())
    return {"first_s": first, "landing_s": landing, "job_s": job_s, "later_s": later, "reload_s": reload,
            "restart_s": restart, "parts_computed": parts,
            "methods": len(table), "alphas": "paper (15)" if compute.ALPHAS is None else len(compute.ALPHAS)}


def serial_evaluation(samples: Path) -> float:
    """Seconds of the dashboard's evaluation (all methods, 3 repeats, its alpha grid) with ``n_jobs=1``."""
    from htc_core.app.compute import ALPHAS
    from htc_core.calibration.evaluation import evaluate
    from htc_core.formats import load

    ts, _ = load(str(samples))
    t0 = time.perf_counter()
    evaluate(ts, seeds=3, n_jobs=1, **({} if ALPHAS is None else {"alphas": ALPHAS}))
    return time.perf_counter() - t0
