"""Exclusive access to one DuckDB file from several threads and processes.

A thread lock per database file (shared by every ``Store`` object on it) plus
an ``fcntl`` lock file serialize the operations; :func:`connect` retries while
a program that ignores the lock file (a duckdb shell) holds the database.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from pathlib import Path
from typing import Any, Iterator

__all__ = ["StoreError", "thread_lock", "file_lock", "connect"]

_THREAD_LOCKS: dict[str, threading.RLock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


class StoreError(RuntimeError):
    """The store cannot do what was asked (the message says why)."""


def thread_lock(db_path: Path) -> threading.RLock:
    """The one re-entrant thread lock of the database file ``db_path``."""
    key = str(Path(db_path).resolve())
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(key, threading.RLock())


@contextlib.contextmanager
def file_lock(lock_path: Path, *, timeout: float, what: Path) -> Iterator[None]:
    """``lock_path`` held exclusively; waits up to ``timeout`` seconds for other processes, then raises
    :class:`StoreError` naming ``what`` (the database)."""
    with open(lock_path, "a+") as fh:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(f"the store {what} is busy (another process holds {lock_path} for more "
                                     f"than {timeout:.0f} s)") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


#: DuckDB settings of every store connection. ``max_vacuum_tasks = 0``: no row group merging at checkpoints.
#: Each committed chunk of an ingest (50,000 runs) leaves a row group smaller than DuckDB's 122,880; with
#: vacuuming on, a later checkpoint (the next chunk's commit, or any write's) reads the small row groups of every
#: table back and rewrites them merged, all at once: the ingest's peak memory grew with the run set (about 1 GB
#: at 300k runs, a jump of 800 MB on one commit of a 600k-row table). Without it the row groups stay at the
#: chunk's size; row groups emptied by a delete are still dropped (a partly deleted one keeps its tombstones).
DUCKDB_CONFIG = {"max_vacuum_tasks": 0}


def connect(db_path: Path, *, attempts: int = 50) -> Any:
    """A DuckDB connection to ``db_path`` (with :data:`DUCKDB_CONFIG`); retried while a process that ignores
    the lock file holds it."""
    import duckdb

    for attempt in range(attempts):
        try:
            return duckdb.connect(str(db_path), config=dict(DUCKDB_CONFIG))
        except duckdb.IOException as e:
            if attempt == attempts - 1 or "not a valid DuckDB database" in str(e):  # a corrupt file: no retry
                raise
            time.sleep(0.1)
