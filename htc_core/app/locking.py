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


def connect(db_path: Path, *, attempts: int = 50) -> Any:
    """A DuckDB connection to ``db_path``; retried while a process that ignores the lock file holds it."""
    import duckdb

    for attempt in range(attempts):
        try:
            return duckdb.connect(str(db_path))
        except duckdb.IOException as e:
            if attempt == attempts - 1 or "not a valid DuckDB database" in str(e):  # a corrupt file: no retry
                raise
            time.sleep(0.1)
