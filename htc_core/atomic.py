"""Writing output files atomically: the one helper every command that writes a file uses.

``atomic_path(target)`` gives a temporary path in the target's folder; when the block ends without an
exception the temporary file is renamed onto the target (``os.replace``, atomic on POSIX and Windows), else it
is removed. A failed run, a full disk, an exception half-way or Ctrl-C leaves the previous file byte-for-byte
intact. A process killed mid-write leaves a hidden ``.NAME.*.htc-tmp`` file next to the target (never a
truncated target); directory scans skip names starting with '.'.

``check_writable(target)`` is called before any computation so that a bad ``--out`` fails at once: it creates
the target's folder, refuses a directory or a read-only file, and creates (and removes) a temporary file there.

The new file gets the permissions of the file it replaces, or the usual ``0o666 & ~umask``.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

__all__ = ["OutputError", "check_writable", "atomic_path", "atomic_open", "write_text", "write_bytes"]

TMP_SUFFIX = ".htc-tmp"


class OutputError(OSError):
    """An output file that cannot be written (the message names the file and why)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(target: str | os.PathLike) -> Path:
    """``target`` as a Path once it is known that a file can be written there; else OutputError saying why."""
    path = Path(target)
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"cannot write {path}: the file exists and is read-only")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(tmp)
    return path


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """A temporary path next to ``target``, renamed onto it when the block succeeds (removed otherwise)."""
    path = check_writable(target)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        _fsync(tmp)  # the data is on disk before the name points at it
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_open(target: str | os.PathLike, mode: str = "w", *, encoding: str | None = "utf-8",
                newline: str | None = None) -> Iterator[IO]:
    """``open(target, mode)`` whose content replaces ``target`` only when the block succeeds (closed and
    synced to disk first)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(target) as tmp:
        kw = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
        with open(tmp, mode, **kw) as fh:
            yield fh


def write_text(target: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` atomically; returns the target path."""
    with atomic_open(target, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(target)


def write_bytes(target: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` atomically; returns the target path."""
    with atomic_open(target, "wb") as fh:
        fh.write(data)
    return Path(target)
