"""Getting runs into the store: uploaded files (:func:`ingest`) and the shipped sample runs
(:func:`ensure_samples`).

Both read files with :func:`htc_core.formats.load` (any supported format),
store the valid part as run sets and, for uploads, cache the features at once
so the first page visit does not pay for them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence


from ..formats import SUFFIXES, iter_chunks, load
from ..report import LoadReport
from .features_store import ColumnWriter
from .store import AddResult, Store
from .store_append import append_run_set
from .store_write import ChunkShapeError

__all__ = ["ingest", "ensure_samples", "sample_files", "store_trace_set", "append_trace_set"]

SAMPLES_LOADED = "samples_loaded"      # settings key: the sample runs were loaded once (never again)


def ingest(store: Store, paths: Sequence[str | os.PathLike], *, name: str, labels: str | os.PathLike | None = None,
           fields: dict | None = None, format: str = "auto", profile: str = "paper", top_k: int = 5,
           progress: Callable[[float, str], None] | None = None) -> tuple[AddResult | None, LoadReport]:
    """Read files (any supported format, optional labels file), store them as one run set and keep its per-run
    columns (48 features, baselines, GAC scores, flags: ``features_store``), streamed chunk by chunk
    (``formats.iter_chunks``, 50,000 trajectories): reading, storing and the columns in one pass and one
    transaction, memory bounded by a chunk for htc-trace JSONL. ``fields`` (dataset/model/framework) fill what the
    files leave empty. ``progress(fraction, message)`` is called between the stages."""

    def tick(f: float, msg: str) -> None:
        if progress is not None:
            progress(f, msg)

    defaults = {k: v for k, v in (fields or {}).items() if v}
    tick(0.05, f"reading {len(paths)} file(s)")
    reader = iter_chunks(list(paths), format=format, labels=labels, defaults=defaults or None)
    try:
        res = _store_chunks(store, reader, reader.report, name, fields, profile, top_k, tick)
        report = reader.report
    except ChunkShapeError:      # files with different k or token strings: read whole (padded), then stored
        ts, report = load(list(paths), format=format, labels=labels, defaults=defaults or None)
        res = _store_chunks(store, ts, report, name, fields, profile, top_k, tick)
    if not res.kept:
        tick(1.0, "nothing to store")
        return None, report
    tick(1.0, f"stored {res.kept:,} trajectories")
    return res, report


def store_trace_set(store: Store, ts, report: LoadReport, *, name: str, profile: str = "paper",
                    top_k: int = 5) -> AddResult:
    """Store a trace set already read (``htc serve``'s traces) as one run set with its per-run columns."""
    return _store_chunks(store, ts, report, name, None, profile, top_k, lambda f, msg: None)


def append_trace_set(store: Store, run_set_id: str, ts, report: LoadReport, *, profile: str = "paper",
                     top_k: int = 5) -> int:
    """Append a trace set already read to a stored run set (same id) with its per-run columns, in one
    transaction whose work is the new runs' (``htc serve``'s flushes); returns the runs kept."""
    cols = ColumnWriter(store, run_set_id, profile=profile, top_k=top_k, append=True)
    kept, _ = append_run_set(store, run_set_id, ts, report=report, on_chunk=cols, on_finish=cols.finish)
    return kept


def _store_chunks(store: Store, data, report: LoadReport, name: str, fields, profile: str, top_k: int,
                  tick) -> AddResult:
    """Tokens and per-run columns of ``data`` (TraceSet chunks) in one pass and one transaction."""
    cols = ColumnWriter(store, profile=profile, top_k=top_k)
    done = [0]

    def on_chunk(con, run_set_id, part, start):
        cols(con, run_set_id, part, start)
        done[0] += part.n_trajectories
        tick(0.5, f"stored {done[0]:,} trajectories with their features")

    return store.add_run_set(data, name=name, report=report, fields=fields, on_chunk=on_chunk,
                             on_finish=cols.finish)


def ensure_samples(store: Store, sample_dir: str | os.PathLike | None) -> tuple[str, list[AddResult]]:
    """On the first start with an empty store, load the shipped sample runs (one run set per file, sub-folders
    included, entries starting with '_' or '.' skipped).

    Returns (status, results); status is 'loaded', 'present' (the store already has data or the
    samples were loaded before), 'missing' (no sample folder or no files in it) or 'failed'.
    """
    if store.get_setting(SAMPLES_LOADED) == "1" or store.run_set_ids():
        return "present", []
    folder = Path(sample_dir) if sample_dir is not None else None
    files = sample_files(folder) if folder is not None and folder.is_dir() else []
    if not files:
        return "missing", []
    results = []
    for f in files:
        ts, rep = load(f)
        if ts.n_trajectories:
            results.append(store.add_run_set(ts, name=f"sample: {f.name}", report=rep))
    store.set_setting(SAMPLES_LOADED, "1")
    return ("loaded" if results else "failed"), results


def sample_files(folder: Path, suffixes: tuple = SUFFIXES) -> list[Path]:
    """Trace files under ``folder`` (sub-folders too), skipping entries whose name starts with '_' or '.'."""
    out = []
    for p in sorted(Path(folder).iterdir()):
        if p.name.startswith(("_", ".")):
            continue
        if p.is_dir():
            out.extend(sample_files(p, suffixes))
        elif p.is_file() and p.name.endswith(suffixes):
            out.append(p)
    return out
