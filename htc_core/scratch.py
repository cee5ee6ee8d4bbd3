"""Private scratch folders for uploads, removed on every path, including process death.

An upload is written to disk once (the readers stream from files) in a folder
``<tmp>/htc-upload-<pid>-<random>``. The folder is removed when the work ends, whatever the outcome; a process
killed mid-upload (SIGKILL, OOM, power loss) cannot do that, so every new scratch folder and every dashboard
start first removes the folders whose process is gone (``clean_stale``): the copy of private traces and its
disk space never outlive the next start. Folders of processes still running are left alone; folders of the
older naming (no pid) are removed once an hour old.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["PREFIX", "scratch_dir", "clean_stale"]

PREFIX = "htc-upload-"
# a folder without a pid in its name is stale once this old (seconds)
LEGACY_MAX_AGE = 3600


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _owner(name: str) -> int | None:
    head = name[len(PREFIX):].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def clean_stale(root: str | os.PathLike | None = None) -> list[Path]:
    """Remove the scratch folders left by processes that are gone.

    Folders of processes still running are left alone; folders of the older naming (no pid) are removed once
    an hour old.

    Parameters
    ----------
    root : str or path-like, optional
        The folder holding the scratch folders (default: the system's temporary folder).

    Returns
    -------
    list of pathlib.Path
        The folders removed.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.scratch import PREFIX, clean_stale
    >>> root = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(root, PREFIX + "999999999-abc"))    # no process has this pid
    >>> [p.name for p in clean_stale(root)]
    ['htc-upload-999999999-abc']
    """
    base = Path(root if root is not None else tempfile.gettempdir())
    removed = []
    try:
        candidates = [p for p in base.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    now = time.time()
    for p in candidates:
        try:
            if not p.is_dir() or p.is_symlink():
                continue
            pid = _owner(p.name)
            stale = (not _alive(pid)) if pid is not None else now - p.stat().st_mtime > LEGACY_MAX_AGE
        except OSError:
            continue
        if stale:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


@contextmanager
def scratch_dir(root: str | os.PathLike | None = None) -> Iterator[Path]:
    """A context manager: a private folder (mode 0700) for one upload, removed when the block ends however it ends.

    Stale folders of dead processes are removed first (:func:`clean_stale`).

    Parameters
    ----------
    root : str or path-like, optional
        Where to create it (default: the system's temporary folder).

    Yields
    ------
    pathlib.Path
        The folder, ``htc-upload-<pid>-<random>``.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.scratch import scratch_dir
    >>> with scratch_dir(tempfile.mkdtemp()) as folder:
    ...     oct(folder.stat().st_mode & 0o777), folder.name.startswith(f"htc-upload-{os.getpid()}-")
    ('0o700', True)
    >>> folder.exists()
    False
    """
    clean_stale(root)
    d = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=root))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
