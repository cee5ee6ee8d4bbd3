"""The in-process engine: the pieces one after the other through ``common.map_batches`` (the reference the
Dask and Spark engines are tested against, next to the plain chunked reader of ``htc features``)."""

from __future__ import annotations

from ..report import LoadReport
from .common import Task, map_batches, pieces_batch, split_inputs
from .driver import collect


def run_local(inputs, task: Task, out, *, scheduler: str | None = None, workers: int = 1, format: str = "auto",
              piece_bytes: int = 32 << 20):
    """See ``engines.run``; ``scheduler`` and ``workers`` are ignored (one process)."""
    report = LoadReport()
    pieces = split_inputs(inputs, format=format, piece_bytes=piece_bytes, report=report)
    results = (list(map_batches([pieces_batch([p])], task)) for p in pieces)
    return collect(pieces, results, out, task, engine="local", workers=1, report=report)


__all__ = ["run_local"]
