"""The dashboard at 10k / 100k / 1M runs: ingest, workspace, and each page's data and compute time.

    python -m htc_dev.bench dashboard_scale [--runs 10000,100000,1000000] [--reference-max 100000]
                                             [--skip-projection] [--skip-cv]

For each N, in a fresh process (so the peak memory is that size's own): N small synthetic runs (5 steps x 20
tokens, no alternatives: the issue-17 shape; ``htc_core.synthetic``), generated 50,000 at a time, then, timed
(wall seconds):

- ingest: ``Store.add_run_set`` of the generated chunks as they come (tokens, steps, metadata) with
  ``features_store.ColumnWriter`` (48 features, baselines, GAC score, flags) chunk by chunk in the same
  transaction; the peak resident memory right after it is printed (bounded by a chunk: flat in N);
- workspace: ``build_workspace`` (what opening the app costs), against the plain reference in the same process
  (what it cost before the columns were stored: the run set's tokens read back, then features and baselines
  recomputed), run up to ``--reference-max`` runs;
- Runs page: its DuckDB table (``sql_views.RunsTable``), the first page of 100 rows sorted by a confidence,
  a text search, counts per dataset/model, a histogram;
- Feature space: UMAP fitted on ``PROJECTION_FIT_CAP`` runs with the rest placed, the sampled frame and the
  WebGL figure (``--skip-projection`` leaves it out);
- Calibration: the stratified sample (``sampling.EVAL_CAP``), its tokens read from the store (only the sampled
  rows: ``Store.load_rows``; the peak resident memory during the read is printed), the cross-validated
  evaluation of the baselines and HTC-Reduced on it (1 seed, alphas 0.01,0.1,1,10), reliability bins in DuckDB;
- peak resident memory of the process (VmHWM).

The synthetic labels are random, so the metrics mean nothing; the times are the point. Stores are written
under the temporary folder and removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _peak_mib() -> float:
    s = Path("/proc/self/status").read_text()
    m = re.search(r"VmHWM:\s+(\d+)", s)
    return int(m.group(1)) / 1024.0 if m else float("nan")


def _rss_mib() -> float:
    m = re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text())
    return int(m.group(1)) / 1024.0 if m else float("nan")


def _reset_peak() -> None:
    """Start the peak (VmHWM) again from the current resident memory (Linux; nothing where it cannot)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


class _Timer:
    def __init__(self):
        self.rows: dict[str, float] = {}

    def __call__(self, name: str, fn):
        t0 = time.perf_counter()
        out = fn()
        self.rows[name] = time.perf_counter() - t0
        print(f"  {name:48s} {self.rows[name]:8.2f} s", file=sys.stderr, flush=True)
        return out


#: trajectories per generated (and stored) chunk
STORE_CHUNK = 50_000


def _synthetic_chunks(n: int, chunk: int):
    """N synthetic runs (5 steps x 20 tokens, no alternatives) as chunks generated one at a time (seeded per
    chunk), with dataset/model/question columns: the input never exists whole, as when a file is streamed."""
    from htc_core.synthetic import synthetic_trace_set

    for j, start in enumerate(range(0, n, chunk)):
        m = min(chunk, n - start)
        ts = synthetic_trace_set(m, 5, 20, k=0, seed=1 + j)
        i = np.arange(start, start + m)
        ts.meta["id"] = np.array([f"run-{v}" for v in i], dtype=object)
        ts.meta["dataset"] = np.array(["alpha", "beta", "gamma"], dtype=object)[i % 3]
        ts.meta["model"] = np.array(["m1", "m2"], dtype=object)[i % 2]
        ts.meta["question"] = np.array([f"question {v} about item {v % 97}" for v in i], dtype=object)
        yield ts


def one_size(n: int, *, reference: bool, projection: bool, cv: bool = True) -> dict:
    from htc_core.app import sql_views
    from htc_core.app.features_store import ColumnWriter
    from htc_core.app.projection import PROJECTION_FIT_CAP, SCATTER_CAP, project
    from htc_core.app.sampling import EVAL_CAP, stratified_sample
    from htc_core.app.store import Store
    from htc_core.app.views import projection_frame
    from htc_core.app.workspace import build_workspace
    from htc_core.calibration.baselines import baseline_confidences
    from htc_core.calibration.evaluation import evaluate
    from htc_core.features import extract

    t = _Timer()
    root = Path(tempfile.mkdtemp(prefix="htc-bench-scale-"))
    try:
        store = Store(root / "store")
        cols = ColumnWriter(store)
        res = t("ingest: streamed chunks, tokens + per-run columns",
                lambda: store.add_run_set(_synthetic_chunks(n, STORE_CHUNK), name="bench", on_chunk=cols,
                                          on_finish=cols.finish))
        peak_ingest = _peak_mib()
        ws = t("workspace: build_workspace (stored columns)", lambda: build_workspace(store))
        t("workspace: content key (cache key of every page)", ws.content_digest)
        if reference:
            def old():
                full = store.load_run_set(res.run_set_id)
                return extract(full), baseline_confidences(full)

            t("workspace: reference (tokens read, recomputed)", old)
        table = t("runs: DuckDB table", lambda: sql_views.RunsTable(ws))
        t("runs: page 1 sorted by GlobalTrace-TP", lambda: table.page(sort="GlobalTrace-TP", descending=True,
                                                                       confidence="GlobalTrace-TP", limit=100))
        t("runs: text search + label + flag filter", lambda: table.page(text="item 42", label="success", limit=100))
        t("runs: page 500 of the GAC confidence", lambda: table.page(confidence="GAC", sort="GAC", limit=100,
                                                                      offset=min(49_900, max(0, n - 100))))
        t("runs: counts per dataset and model", lambda: table.counts())
        t("runs: histogram (20 bins)", lambda: table.histogram("GlobalTrace-TP"))
        if projection:
            proj = t(f"feature space: UMAP fit on {min(n, PROJECTION_FIT_CAP):,} + place",
                     lambda: project(ws.features, method="umap", fit_cap=PROJECTION_FIT_CAP))
            from htc_core.viz.plots import projection_scatter

            frame = t(f"feature space: frame of <= {SCATTER_CAP:,} points",
                      lambda: projection_frame(ws, proj, None, cap=SCATTER_CAP))
            t("feature space: WebGL figure", lambda: projection_scatter(frame, color="dataset").to_dict())
        pos = np.flatnonzero(np.isfinite(ws.labels))
        pos = t("calibration: stratified sample", lambda: stratified_sample(pos, ws.labels[pos], EVAL_CAP))
        peak_before, rss_before = _peak_mib(), _rss_mib()
        _reset_peak()
        sub = t(f"calibration: tokens of {len(pos):,} runs from the store", lambda: ws.ts.take(pos))
        peak_sample = _peak_mib()
        if cv:
            ev = t("calibration: nested CV (baselines + HTC-Reduced)",
                   lambda: evaluate(sub, seeds=1, alphas=(0.01, 0.1, 1, 10),
                                    methods=["GlobalTrace-TP", "LastStep-TP", "HTC-Reduced"]))
            t("calibration: reliability bins (DuckDB)", lambda: sql_views.reliability_bins(ev.oof["HTC-Reduced"],
                                                                                            ev.labels))
        return {"n": n, "times": t.rows, "peak_mib": max(peak_before, _peak_mib()), "peak_ingest_mib": peak_ingest,
                "peak_sample_mib": peak_sample, "rss_before_sample_mib": rss_before}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m htc_dev.bench dashboard_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", default="10000,100000,1000000", help="sizes (default 10000,100000,1000000)")
    p.add_argument("--reference-max", type=int, default=100_000,
                   help="largest size at which the old workspace path is also timed (default 100,000)")
    p.add_argument("--skip-projection", action="store_true", help="leave the Feature space projection out")
    p.add_argument("--skip-cv", action="store_true",
                   help="leave the nested CV out (it runs on the same capped sample at every size)")
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)   # the child process of one size
    args = p.parse_args(argv)
    if args.one is not None:
        out = one_size(args.one, reference=args.one <= args.reference_max, projection=not args.skip_projection,
                       cv=not args.skip_cv)
        print("HTC_SCALE " + json.dumps(out))
        return 0
    sizes = [int(s) for s in args.runs.split(",") if s.strip()]
    if not sizes or min(sizes) < 10:
        raise SystemExit(f"--runs must list sizes of at least 10, got {args.runs!r}")
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    results = []
    for n in sizes:
        print(f"== {n:,} runs (5 steps x 20 tokens, no alternatives), fresh process ==", flush=True)
        cmd = [sys.executable, "-m", "htc_dev.bench", "dashboard_scale", "--one", str(n),
               "--reference-max", str(args.reference_max)] + (["--skip-projection"] if args.skip_projection else []) \
            + (["--skip-cv"] if args.skip_cv else [])
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
        line = [x for x in proc.stdout.splitlines() if x.startswith("HTC_SCALE ")]
        if proc.returncode or not line:
            print(f"  failed (exit {proc.returncode})")
            continue
        results.append(json.loads(line[-1][len("HTC_SCALE "):]))
    if not results:
        return 1
    names = list(dict.fromkeys(k for r in results for k in r["times"]))
    print("\n" + f"{'wall seconds':50s}" + "".join(f"{r['n']:>12,d}" for r in results))
    for k in names:
        print(f"{k:50s}" + "".join(f"{r['times'][k]:12.2f}" if k in r["times"] else f"{'-':>12s}" for r in results))
    print(f"{'peak resident memory after the ingest (MiB)':50s}"
          + "".join(f"{r['peak_ingest_mib']:12.0f}" for r in results))
    print(f"{'resident memory before the Calibration sample read':50s}"
          + "".join(f"{r['rss_before_sample_mib']:12.0f}" for r in results))
    print(f"{'peak resident memory, Calibration sample read (MiB)':50s}"
          + "".join(f"{r['peak_sample_mib']:12.0f}" for r in results))
    print(f"{'peak resident memory (MiB)':50s}" + "".join(f"{r['peak_mib']:12.0f}" for r in results))
    for r in results:
        ref = r["times"].get("workspace: reference (tokens read, recomputed)")
        if ref:
            print(f"workspace at {r['n']:,}: {r['times']['workspace: build_workspace (stored columns)']:.2f} s "
                  f"vs {ref:.2f} s recomputed ({ref / r['times']['workspace: build_workspace (stored columns)']:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
