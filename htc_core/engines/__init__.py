"""Scale-out engines: the same per-piece function in-process, on Dask and on Spark (issue 17 item 4).

    from htc_core.engines import Task, run
    result = run(["runs/"], Task("features"), "features.parquet", engine="dask", workers=2)

``common`` holds the function over Arrow record batches (``map_batches``) and the driver (``Collector``);
``local``, ``dask_engine`` and ``spark_engine`` only schedule it. Dask and Spark are optional extras
(``pip install -e ".[cluster]"``, ``pip install pyspark``) imported only when their engine is asked for.
"""

from __future__ import annotations

ENGINES = ("local", "dask", "spark")


def run(inputs, task, out, *, engine: str = "local", scheduler: str | None = None, workers: int = 2,
        format: str = "auto", piece_bytes: int | None = None):
    """Compute ``task`` over ``inputs`` with ``engine`` and write the table to ``out`` incrementally.

    The input files are cut into pieces of whole runs; each piece is read, featurized (and scored) on its own,
    and the rows are appended to ``out`` in input order, so memory stays flat in the data size. The three
    engines give identical rows.

    Parameters
    ----------
    inputs : str, Path or list of them
        Trace files or directories, as :func:`htc_core.load` takes them.
    task : Task
        What to compute per piece (``htc_core.engines.common.Task``: features, or scores of a model file).
    out : str or Path
        The output table: ``.csv``, ``.parquet`` or ``.jsonl``; replaced atomically when complete.
    engine : {"local", "dask", "spark"}
        Where the pieces run: this process, a Dask cluster (the ``[cluster]`` extra) or Spark (``[spark]``).
    scheduler : str or None
        The Dask scheduler / Spark master address; None starts a local one with ``workers`` workers.
    workers : int
        Number of local workers when ``scheduler`` is None.
    format : str
        The input format (``"auto"`` detects it per file).
    piece_bytes : int or None
        Bytes of htc-trace JSONL per piece; None sizes the pieces to the data and the workers
        (``common.sized_piece_bytes``).

    Returns
    -------
    EngineResult
        The engine, the output path, the number of rows written and of pieces, the merged load report and
        the merged streaming metrics (scores of labeled runs).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from htc_core.engines import run
    >>> from htc_core.engines.common import Task
    >>> out = Path(tempfile.mkdtemp()) / "features.csv"
    >>> result = run(["sample_runs/units/units_SmolLM2-135M-greedy.jsonl"], Task("features"), out)
    >>> result.rows, out.read_text().splitlines()[0].split(",")[0]
    (250, 'id')
    """
    from .common import DEFAULT_PIECE_BYTES, sized_piece_bytes

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if engine == "local":
        from .local import run_local as fn
    elif engine == "dask":
        from .dask_engine import run_dask as fn
    else:
        from .spark_engine import run_spark as fn
    if piece_bytes is None and engine != "dask":    # the Dask engine sizes them to the workers its cluster has
        piece_bytes = DEFAULT_PIECE_BYTES if engine == "local" else sized_piece_bytes(inputs, workers)
    return fn(inputs, task, out, scheduler=scheduler, workers=workers, format=format, piece_bytes=piece_bytes)


def __getattr__(name: str):
    if name in ("Task", "Piece", "map_batches", "split_inputs", "output_schema"):
        from . import common

        return getattr(common, name)
    if name == "EngineResult":
        from .driver import EngineResult

        return EngineResult
    raise AttributeError(name)


__all__ = ["ENGINES", "run", "Task", "Piece", "EngineResult", "map_batches", "split_inputs", "output_schema"]
