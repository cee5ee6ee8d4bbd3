"""The Dask engine: ``common.map_batches`` on ``dask.distributed`` workers, one task per piece (``client.map``).

With ``scheduler`` (``tcp://host:8786``) the pieces go to that cluster; the workers must see the input files at
the same paths (a shared file system) and have htc-calibration installed. Without it a ``LocalCluster`` of
``workers`` processes (one thread each: the feature maths holds the GIL in places) is started and closed
afterwards. At most ``2 * workers + 2`` pieces are in flight, and results are taken in input order and written
as they come, so the driver's memory is bounded by a few pieces whatever the input size.
"""

from __future__ import annotations

from collections import deque

from ..report import LoadReport
from .common import Task, map_batches, pieces_batch, split_inputs
from .driver import collect

EXTRA_HINT = 'pip install -e ".[cluster]"'


def _piece_task(piece, task: Task) -> list:
    return list(map_batches([pieces_batch([piece])], task))


def _client(scheduler: str | None, workers: int):
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise ImportError(f"--engine dask needs {EXTRA_HINT} ({e})") from None
    if scheduler:
        return Client(scheduler), None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    return Client(cluster), cluster


def _ordered(client, pieces, task: Task, window: int):
    pending = deque()
    it = iter(pieces)
    for p in it:
        pending.append(client.submit(_piece_task, p, task, pure=False))
        if len(pending) >= window:
            break
    while pending:
        fut = pending.popleft()
        res = fut.result()
        fut.release()
        nxt = next(it, None)
        if nxt is not None:
            pending.append(client.submit(_piece_task, nxt, task, pure=False))
        yield res


def run_dask(inputs, task: Task, out, *, scheduler: str | None = None, workers: int = 2, format: str = "auto",
             piece_bytes: int = 32 << 20):
    """The pieces as Dask tasks on a ``dask.distributed`` cluster, one task per piece (``engine="dask"``).

    At most ``2 * workers + 2`` pieces are in flight and the results are written in input order as they come.
    Needs the ``cluster`` extra (``pip install -e ".[cluster]"``).

    Parameters
    ----------
    inputs : str, path-like or list of them
        Files or folders (the workers must see them at the same paths).
    task : Task
        What to compute.
    out : str or path-like
        The table (``.csv``, ``.parquet`` or ``.jsonl``), written incrementally and atomically.
    scheduler : str, optional
        The scheduler's address (``tcp://host:8786``); without it a ``LocalCluster`` of ``workers`` processes
        is started and closed afterwards.
    workers : int, default 2
        Processes of the local cluster.
    format : str, default "auto"
        A reader's format, or ``auto``.
    piece_bytes : int, default 32 MiB
        Bytes of htc-trace JSONL per piece.

    Returns
    -------
    EngineResult

    Examples
    --------
    An in-process Dask cluster (threads of this process: no worker processes to start):

    >>> import os, tempfile
    >>> from distributed import LocalCluster
    >>> from htc_core.engines import Task
    >>> from htc_core.engines.dask_engine import run_dask
    >>> out = os.path.join(tempfile.mkdtemp(), "features.csv")
    >>> with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
    ...     result = run_dask(["sample_runs/gemma3/units_Gemma3-270M-greedy.jsonl"], Task(), out, scheduler=cluster.scheduler_address)
    >>> result.engine, result.workers, result.rows
    ('dask', 1, 8)
    """
    report = LoadReport()
    pieces = split_inputs(inputs, format=format, piece_bytes=piece_bytes, report=report)
    client, cluster = _client(scheduler, workers)
    try:
        n = len(client.scheduler_info().get("workers", {})) or workers
        return collect(pieces, _ordered(client, pieces, task, 2 * n + 2), out, task, engine="dask", workers=n,
                       report=report)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


__all__ = ["run_dask"]
