"""The Dask engine: the per-piece function of ``common`` (``run_piece``, what ``map_batches`` runs per piece) on
``dask.distributed`` workers, one task per piece (``client.submit``).

With ``scheduler`` (``tcp://host:8786``) the pieces go to that cluster; the workers must see the input files at
the same paths (a shared file system) and have htc-calibration installed. Without it a ``LocalCluster`` of
``workers`` processes (one thread each: the feature maths holds the GIL in places) is started and closed
afterwards, with no dashboard and its background monitors turned down (``QUIET_LOCAL_CLUSTER``). At most
``2 * workers + 2`` pieces are in flight, and results are taken in input order and written as they come, so the
driver's memory is bounded by a few pieces whatever the input size. A task carries only the piece's path and
byte range; the worker reads the bytes itself, and a features piece comes back as Arrow columns made from numpy
buffers (the worker never imports pandas for it).
"""

from __future__ import annotations

from collections import deque

from contextlib import ExitStack, contextmanager

from ..report import LoadReport
from .common import Task, run_piece, sized_piece_bytes, split_inputs
from .driver import collect

EXTRA_HINT = 'pip install -e ".[cluster]"'

#: what the LocalCluster started here turns down, in its scheduler (this process) and its workers: the workers'
#: statistical profiler (a thread sampling the running task every 10 ms, for a dashboard nobody opens here), the
# event-loop tick (every 20 ms in every process), the system monitor (psutil every 0.5 s), the memory monitor
# (every 0.1 s; 1 s still stops a worker before it swaps) and work stealing (the pieces are independent root
# tasks held back by the scheduler's queue, so there is nothing to steal). Measured on an idle cluster of one
# worker: 0.26 s CPU per 10 s wall with dask's defaults, 0.07 s with these (summed over the processes); the
# profiler alone took about 5% of a worker's CPU while it computed pieces. A cluster given by ``scheduler``
# keeps its own settings.
QUIET_LOCAL_CLUSTER = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.scheduler.work-stealing": False,
}


@contextmanager
def local_cluster(workers: int):
    """A ``LocalCluster`` of ``workers`` processes as the engine starts it, closed at the end of the block.

    One thread per worker, no dashboard, the background monitors turned down (``QUIET_LOCAL_CLUSTER``, set
    while the cluster runs). Needs the ``cluster`` extra.

    Parameters
    ----------
    workers : int
        Worker processes.

    Yields
    ------
    distributed.LocalCluster

    Examples
    --------
    >>> from htc_core.engines.dask_engine import local_cluster
    >>> with local_cluster(1) as cluster:
    ...     len(cluster.workers)
    1
    """
    try:
        import dask
        from distributed import LocalCluster
    except ImportError as e:
        raise ImportError(f"--engine dask needs {EXTRA_HINT} ({e})") from None
    # no dashboard (bokeh's import and its updates), the scheduler's plain HTTP routes on a free port
    with dask.config.set(QUIET_LOCAL_CLUSTER), LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                            dashboard_address=":0",
                                                            scheduler_kwargs={"dashboard": False}) as cluster:
        yield cluster


def _client(scheduler: str | None, workers: int, stack: ExitStack):
    try:
        from distributed import Client
    except ImportError as e:
        raise ImportError(f"--engine dask needs {EXTRA_HINT} ({e})") from None
    if not scheduler:
        scheduler = stack.enter_context(local_cluster(workers))
    return stack.enter_context(Client(scheduler))


def _ordered(client, pieces, task: Task, window: int):
    pending = deque()
    it = iter(pieces)
    for p in it:
        pending.append(client.submit(run_piece, p, task, pure=False))
        if len(pending) >= window:
            break
    while pending:
        fut = pending.popleft()
        res = fut.result()
        fut.release()
        nxt = next(it, None)
        if nxt is not None:
            pending.append(client.submit(run_piece, nxt, task, pure=False))
        yield res


def run_dask(inputs, task: Task, out, *, scheduler: str | None = None, workers: int = 2, format: str = "auto",
             piece_bytes: int | None = None):
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
    piece_bytes : int, optional
        Bytes of htc-trace JSONL per piece; by default sized to the data and to the workers the cluster has
        (``common.sized_piece_bytes``: about 4 pieces per worker, 1 to 32 MiB).

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
    ...     result = run_dask(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], Task(), out, scheduler=cluster.scheduler_address)
    >>> result.engine, result.workers, result.rows
    ('dask', 1, 8)
    """
    report = LoadReport()
    with ExitStack() as stack:
        client = _client(scheduler, workers, stack)
        n = len(client.scheduler_info().get("workers", {})) or workers
        if piece_bytes is None:
            piece_bytes = sized_piece_bytes(inputs, n)
        pieces = split_inputs(inputs, format=format, piece_bytes=piece_bytes, report=report)
        return collect(pieces, _ordered(client, pieces, task, 2 * n + 2), out, task, engine="dask", workers=n,
                       report=report)


__all__ = ["run_dask", "local_cluster", "QUIET_LOCAL_CLUSTER"]
