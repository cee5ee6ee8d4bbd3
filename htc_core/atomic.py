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
    """An output file that cannot be written (the message names the file and why).

    Examples
    --------
    >>> import tempfile
    >>> from htc_core.atomic import OutputError, check_writable
    >>> try:
    ...     check_writable(tempfile.gettempdir())
    ... except OutputError as err:
    ...     print(str(err).endswith("it is a directory"))
    True
    """


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(target: str | os.PathLike) -> Path:
    """``target`` as a Path once it is known that a file can be written there.

    Called before any computation so that a bad ``--out`` fails at once: creates the target's folder, refuses a
    directory or a read-only file, and creates (and removes) a temporary file there.

    Parameters
    ----------
    target : str or path-like
        The file to be written.

    Returns
    -------
    pathlib.Path
        The target; ``OutputError`` saying why when it cannot be written.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.atomic import check_writable
    >>> folder = tempfile.mkdtemp()
    >>> check_writable(os.path.join(folder, "new", "scores.csv")).name
    'scores.csv'
    >>> os.path.isdir(os.path.join(folder, "new"))
    True
    """
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
    """A context manager: a temporary path next to ``target``, renamed onto it when the block succeeds.

    The rename (``os.replace``) is atomic; when the block raises, the temporary file is removed and the
    previous ``target`` is left byte-for-byte intact. The new file gets the permissions of the file it
    replaces, or the usual ``0o666 & ~umask``.

    Parameters
    ----------
    target : str or path-like
        The file to (re)write.

    Yields
    ------
    pathlib.Path
        The temporary file (hidden: ``.NAME.*.htc-tmp``) to write.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.atomic import atomic_path
    >>> target = os.path.join(tempfile.mkdtemp(), "table.csv")
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("id,p\\na,0.5\\n")
    ...     os.path.exists(target)                  # not yet
    False
    >>> open(target).read().splitlines()
    ['id,p', 'a,0.5']
    """
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
    """A context manager: ``open(target, mode)`` whose content replaces ``target`` only when the block succeeds.

    The file is closed and synced to disk before the rename (:func:`atomic_path`).

    Parameters
    ----------
    target : str or path-like
        The file to (re)write.
    mode : {"w", "wb"}, default "w"
        Text or binary.
    encoding : str, default "utf-8"
        The text encoding (text mode).
    newline : str, optional
        As ``open``'s (text mode).

    Yields
    ------
    file object
        The open temporary file.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.atomic import atomic_open, write_text
    >>> target = write_text(os.path.join(tempfile.mkdtemp(), "notes.txt"), "kept")
    >>> try:
    ...     with atomic_open(target) as fh:
    ...         _ = fh.write("half-written")
    ...         raise RuntimeError("the run failed")
    ... except RuntimeError:
    ...     pass
    >>> open(target).read()                         # the previous content, intact
    'kept'
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(target) as tmp:
        kw = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
        with open(tmp, mode, **kw) as fh:
            yield fh


def write_text(target: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` atomically.

    Parameters
    ----------
    target : str or path-like
        The file.
    text : str
        Its new content.
    encoding : str, default "utf-8"
        The text encoding.

    Returns
    -------
    pathlib.Path
        The target.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.atomic import write_text
    >>> path = write_text(os.path.join(tempfile.mkdtemp(), "model.json"), '{"format": "htc"}')
    >>> path.read_text()
    '{"format": "htc"}'
    """
    with atomic_open(target, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(target)


def write_bytes(target: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` atomically.

    Parameters
    ----------
    target : str or path-like
        The file.
    data : bytes
        Its new content.

    Returns
    -------
    pathlib.Path
        The target.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.atomic import write_bytes
    >>> write_bytes(os.path.join(tempfile.mkdtemp(), "blob.bin"), b"\\x00\\x01").read_bytes()
    b'\\x00\\x01'
    """
    with atomic_open(target, "wb") as fh:
        fh.write(data)
    return Path(target)
