"""The in-process engine: the pieces one after the other through ``common.map_batches`` (the reference the
Dask and Spark engines are tested against, next to the plain chunked reader of ``htc features``)."""

from __future__ import annotations

from ..report import LoadReport
from .common import Task, run_piece, split_inputs
from .driver import collect


def run_local(inputs, task: Task, out, *, scheduler: str | None = None, workers: int = 1, format: str = "auto",
              piece_bytes: int = 32 << 20):
    """The pieces one after the other in this process (``engines.run(..., engine="local")``).

    Parameters
    ----------
    inputs : str, path-like or list of them
        Files or folders.
    task : Task
        What to compute.
    out : str or path-like
        The table (``.csv``, ``.parquet`` or ``.jsonl``), written incrementally and atomically.
    scheduler : str, optional
        Ignored (one process).
    workers : int, default 1
        Ignored (one process).
    format : str, default "auto"
        A reader's format, or ``auto``.
    piece_bytes : int, default 32 MiB
        Bytes of htc-trace JSONL per piece.

    Returns
    -------
    EngineResult

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.engines import Task
    >>> from htc_core.engines.local import run_local
    >>> out = os.path.join(tempfile.mkdtemp(), "features.csv")
    >>> run_local(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], Task(), out, piece_bytes=20_000).to_dict()["pieces"]
    2
    """
    report = LoadReport()
    pieces = split_inputs(inputs, format=format, piece_bytes=piece_bytes, report=report)
    results = (run_piece(p, task) for p in pieces)
    return collect(pieces, results, out, task, engine="local", workers=1, report=report)


__all__ = ["run_local"]
