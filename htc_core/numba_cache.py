"""Where numba keeps the compiled kernels of htc_core: a user cache folder keyed by content, not by path.

numba's own ``cache=True`` writes next to the source (``__pycache__``) and keys the files by the source's
absolute folder, so every new checkout, wheel install or container compiled the kernels again (about 20-45 s
CPU for the path solver, the incremental features and the lowest-group baseline). The kernels of this package
are cached instead in

    $HTC_CACHE_DIR/numba, else the platform's user cache folder + htc/numba
    (~/.cache/htc/numba on Linux, ~/Library/Caches/htc/numba on macOS, %LOCALAPPDATA%/htc/Cache/numba)

under the module's name inside the package (``htc_core.calibration``), so a second checkout or install of the
same code finds them. The freshness stamp is a hash of the source of every module of the same folder that
defines kernels (a kernel compiles the kernels it calls into itself, possibly from another module of the
folder: numba's own stamp, the hash of one file, did not see an edit there and ran stale code). numba checks
the Python version, the numba version and the CPU in the cache index itself.

``NUMBA_CACHE_DIR`` set by the user wins (numba's own locator, as documented by numba). A cache folder that
cannot be written falls back to numba's usual places. Kernel modules take ``njit`` from here: the locator is
installed before their first decoration, whatever was imported first.
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path

from numba import njit
from numba.core import caching, config

# njit (numba's, for our kernel modules), install, kernel_files, folder_stamp and PackageCacheLocator are the
# caching mechanism itself: the package's own helpers (not public)
__all__ = ["cache_dir"]

PACKAGE_ROOT = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """The folder of htc_core's compiled kernels (see the module doc).

    ``$HTC_CACHE_DIR/numba``, else the platform's user cache folder + ``htc/numba`` (``~/.cache/htc/numba`` on
    Linux, ``~/Library/Caches/htc/numba`` on macOS, ``%LOCALAPPDATA%/htc/Cache/numba`` on Windows). Removing
    it makes the next process compile the kernels again.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from htc_core.numba_cache import cache_dir
    >>> with mock.patch.dict(os.environ, {"HTC_CACHE_DIR": "/srv/htc-cache"}):
    ...     cache_dir().as_posix()
    '/srv/htc-cache/numba'
    """
    env = os.environ.get("HTC_CACHE_DIR")
    if env:
        return Path(env).expanduser() / "numba"
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "htc" / "Cache"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches" / "htc"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "htc"
    return base / "numba"


@lru_cache(maxsize=None)
def folder_stamp(folder: str, files: tuple, stats: tuple) -> str:
    """sha256 of the named files' contents (``stats``: their mtimes and sizes, so that an edit made while the
    process runs is hashed again)."""
    h = hashlib.sha256()
    for name in files:
        h.update(name.encode())
        h.update((Path(folder) / name).read_bytes())
    return h.hexdigest()


@lru_cache(maxsize=None)
def kernel_files(folder: Path) -> tuple:
    """The modules of ``folder`` that define numba kernels (their source is the freshness stamp)."""
    return tuple(sorted(p.name for p in folder.glob("*.py") if b"njit" in p.read_bytes()))


class PackageCacheLocator(caching._CacheLocator):
    """numba cache locator for the kernels of htc_core (module doc); ``None`` for any other function."""

    def __init__(self, py_func, py_file: Path):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        rel = py_file.parent.relative_to(PACKAGE_ROOT.parent)
        self._cache_path = str(cache_dir() / ".".join(rel.parts))

    def get_cache_path(self):
        """The cache folder of this module's folder (numba's locator interface)."""
        return self._cache_path

    def get_source_stamp(self):
        """The folder stamp: a hash of every kernel module of the folder (numba's locator interface)."""
        folder = self._py_file.parent
        files = kernel_files(folder)
        stats = tuple((st.st_mtime_ns, st.st_size) for st in ((folder / f).stat() for f in files))
        return folder_stamp(str(folder), files, stats)

    def get_disambiguator(self):
        """The kernel's first line, telling apart kernels of one module (numba's locator interface)."""
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        """A locator for a kernel of htc_core; None for other functions, under NUMBA_CACHE_DIR or when unwritable."""
        if config.CACHE_DIR:
            return None                              # the user's NUMBA_CACHE_DIR wins
        try:
            path = Path(py_file).resolve()
            path.relative_to(PACKAGE_ROOT)
        except (OSError, ValueError):
            return None                              # not ours
        self = cls(py_func, path)
        try:
            self.ensure_cache_path()
        except OSError:
            return None                              # not writable: numba's usual places
        return self


def install() -> None:
    """Put :class:`PackageCacheLocator` first in numba's locator list (once)."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")   # renamed in numba 0.61
    classes = impl._locator_classes
    if PackageCacheLocator not in classes:
        classes.insert(0, PackageCacheLocator)


install()
