"""The Spark engine: ``common.map_batches`` inside ``DataFrame.mapInArrow``, one piece per partition.

``scheduler`` is a Spark master URL (``spark://host:7077``, ``yarn``, ``local[4]``); without it ``local[N]`` with
``workers`` cores. An active session (``spark-submit``, a notebook) is used as it is and left running.
Executors must see the input files at the same paths and import ``htc_core`` (installed there, or shipped with
``--py-files``). The driver takes the result
rows partition by partition in input order (``toLocalIterator``), so it holds about one piece at a time.
"""

from __future__ import annotations

from functools import partial

from ..report import LoadReport
from .common import PIECE_FIELDS, Task, map_batches, output_schema, split_inputs
from .driver import collect

EXTRA_HINT = 'pip install -e ".[spark]" (and Java 17+)'


def _session(scheduler: str | None, workers: int):
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise ImportError(f"--engine spark needs {EXTRA_HINT} ({e})") from None
    active = SparkSession.getActiveSession()
    if active is not None:  # spark-submit, a notebook: the caller's session, left running
        return active, False
    builder = SparkSession.builder.appName("htc").master(scheduler or f"local[{workers}]") \
        .config("spark.ui.enabled", "false").config("spark.sql.execution.arrow.pyspark.enabled", "true")
    return builder.getOrCreate(), True


def _results(df, schema):
    """One list of Arrow batches per piece, in piece order (each piece's meta row closes it)."""
    import pyarrow as pa

    rows = []
    for row in df.toLocalIterator(prefetchPartitions=True):
        rows.append(row.asDict())
        if row["_meta"] is not None:
            yield [pa.RecordBatch.from_pylist(rows, schema=schema)]
            rows = []


def _to_spark_schema(schema):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def run_spark(inputs, task: Task, out, *, scheduler: str | None = None, workers: int = 2, format: str = "auto",
              piece_bytes: int = 32 << 20):
    """The pieces as partitions of a Spark DataFrame through ``mapInArrow``, one piece per partition.

    Needs ``pyspark`` and Java 17+ (``pip install -e ".[spark]"``); an active session (``spark-submit``, a
    notebook) is used as it is and left running.

    Parameters
    ----------
    inputs : str, path-like or list of them
        Files or folders (the executors must see them at the same paths).
    task : Task
        What to compute.
    out : str or path-like
        The table (``.csv``, ``.parquet`` or ``.jsonl``), written on the driver incrementally and atomically.
    scheduler : str, optional
        A Spark master URL (``spark://host:7077``, ``yarn``, ``local[4]``); default ``local[workers]``.
    workers : int, default 2
        Cores of the default local master.
    format : str, default "auto"
        A reader's format, or ``auto``.
    piece_bytes : int, default 32 MiB
        Bytes of htc-trace JSONL per piece.

    Returns
    -------
    EngineResult

    Examples
    --------
    Spark is not installed in CI (pyspark is about 490 MB and needs Java), hence the run is skipped here:

    >>> import os, tempfile
    >>> from htc_core.engines import Task
    >>> from htc_core.engines.spark_engine import run_spark
    >>> out = os.path.join(tempfile.mkdtemp(), "features.csv")
    >>> run_spark(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], Task(), out, scheduler="local[2]").rows  # doctest: +SKIP
    8
    """
    report = LoadReport()
    pieces = split_inputs(inputs, format=format, piece_bytes=piece_bytes, report=report)
    spark, owned = _session(scheduler, workers)
    try:
        schema = output_schema(task)
        rows = [tuple(getattr(p, f) for f in PIECE_FIELDS) for p in pieces]
        rdd = spark.sparkContext.parallelize(rows, max(1, len(rows)))
        df = spark.createDataFrame(rdd, "index long, path string, start long, `end` long, format string")
        res = df.mapInArrow(partial(map_batches, task=task), _to_spark_schema(schema))
        n = spark.sparkContext.defaultParallelism
        return collect(pieces, _results(res, schema), out, task, engine="spark", workers=n, report=report)
    finally:
        if owned:
            spark.stop()


__all__ = ["run_spark"]
