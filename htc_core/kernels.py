"""Compile htc_core's numba kernels ahead of their first use: ``htc warmup``, and the dashboard at start.

A fresh install (a new checkout, wheel or container: an empty kernel cache, :mod:`htc_core.numba_cache`)
compiles each kernel the first time it runs, once per machine; later processes load it from the cache in
milliseconds. :func:`warm` runs every kernel family once on a few made-up numbers, so that the compile happens
now, with a visible status, and not in the middle of a fit or a page. Measured on the shared 2-core machine at
load average 5-9 (docs/benchmarks-coldstart.md): the path solver ~3.3 s CPU, live monitoring ~2.8 s, the
Bottom-10% heap ~0.7 s (compiled only for more than ``baselines.SORTED_RUNS`` runs; fewer are sorted with
numpy); with a warm cache they load in about a second.

The dashboard calls :func:`start_background` once per server process (a daemon thread) for the families its
pages run (:data:`PAGES`: the path solver), and shows :func:`status_text` in its sidebar and in the Calibration
page's wait while it runs. A fit that needs a kernel while the thread compiles it waits for numba's compiler
lock and then uses the compiled kernel (never a second compile).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Callable

__all__ = ["FAMILIES", "PAGES", "FIRST_COMPILE_S", "warm", "start_background", "wait_background", "status_text",
           "cache_is_warm"]


def _path_solver() -> None:
    import numpy as np

    from .calibration.solvers import fit_path

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    X = np.column_stack([X, X[:, 0] + X[:, 1]])      # an exact dependency, as in the HTC features
    y = (rng.random(60) < 0.5).astype(np.float64)
    for penalty in ("l1", "l2"):
        fit_path(X, y, (1.0, 0.01), penalty)


def _lowest_sums() -> None:
    import numpy as np

    from .calibration.lowest_sums import lowest_sums

    lowest_sums(np.array([0.5, 0.25, 0.75]), np.array([0, 3], dtype=np.int64), np.array([2], dtype=np.int64))


def _monitor() -> None:
    import numpy as np

    from .monitor import Monitor

    m = Monitor()
    lp = np.log(np.linspace(0.3, 0.9, 8))
    m.add_step(lp, np.sort(np.log(np.linspace(0.01, 0.9, 40))).reshape(8, 5)[:, ::-1].copy())


# kernel family -> what compiles it (every kernel of htc_core that a command or page calls)
FAMILIES: dict[str, Callable[[], None]] = {
    "path solver (fit, evaluate, Calibration)": _path_solver,
    "Bottom-10% baseline": _lowest_sums,
    "live monitoring (Monitor)": _monitor,
}
# CPU seconds of each family's first compile, measured on the 2-core machine (docs/benchmarks-coldstart.md)
FIRST_COMPILE_S = {"path solver (fit, evaluate, Calibration)": 3.5, "Bottom-10% baseline": 0.7,
                   "live monitoring (Monitor)": 3.0}

# the families the dashboard's pages run (its background warm-up compiles these only: the others, compiled in
# the same process while a first page evaluates, took the CPU and the GIL from it; the OTLP sink's Monitor
# compiles its kernels on its first run, ~3 s CPU once per machine, and Bottom-10% runs the heap kernel only
# beyond ``baselines.SORTED_RUNS`` runs)
PAGES = ("path solver (fit, evaluate, Calibration)",)

_RUN = threading.Lock()
_START = threading.Lock()
_STATE: dict = {"current": None, "since": 0.0, "done": {}, "error": None, "thread": None, "first": None,
               "wanted": tuple(FAMILIES)}


def cache_is_warm() -> bool:
    """Whether the kernel cache already holds the path solver's L1 kernels (a cheap look at one file name).

    It looks where numba keeps them: under ``NUMBA_CACHE_DIR`` when that is set (numba's own variable, which
    then wins over htc's folder: :mod:`htc_core.numba_cache`), else in :func:`htc_core.numba_cache.cache_dir`.

    Returns
    -------
    bool
        False on a fresh install (or a fresh ``NUMBA_CACHE_DIR``).

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from htc_core.kernels import cache_is_warm
    >>> with mock.patch.dict(os.environ, {"NUMBA_CACHE_DIR": tempfile.mkdtemp()}):
    ...     cache_is_warm()                          # an empty numba cache folder
    False
    """
    return any(kernel_cache_folder().glob("*_best_on_segment-*.nbi"))


def kernel_cache_folder() -> Path:
    """The folder that holds (or will hold) the compiled kernels of ``htc_core/calibration``.

    With ``NUMBA_CACHE_DIR`` set, numba's user-provided locator is used: the folder is
    ``$NUMBA_CACHE_DIR/<source folder name>_<sha1 of the source folder's absolute path>`` (numba's layout, as
    its ``UserProvidedCacheLocator`` names it); else htc's ``cache_dir()/htc_core.calibration``.
    """
    env = os.environ.get("NUMBA_CACHE_DIR")
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calibration")   # as numba's abspath
    if env:
        digest = hashlib.sha1(source.encode()).hexdigest()
        return Path(env) / f"{os.path.basename(source)}_{digest}"    # numba joins it as given
    from .numba_cache import cache_dir

    return cache_dir() / "htc_core.calibration"


def warm(report: Callable[[str, float, float], None] | None = None, families=None) -> dict[str, float]:
    """Compile (or load) the kernel families (``htc warmup``: every one).

    Concurrent callers run one after the other (the second finds the kernels ready). With an empty cache the
    path solver compiles for about 3.5 s of CPU, all three families for about 7 s; later calls, in this or
    another process, take about a second.

    Parameters
    ----------
    report : callable, optional
        ``report(family, wall seconds, CPU seconds of this thread)``, called after each family.
    families : sequence of str, optional
        Names of ``FAMILIES`` to compile, in this order (default: every one).

    Returns
    -------
    dict of str to float
        Family (``FAMILIES``) -> the wall seconds it took in this call.

    Raises
    ------
    ValueError
        If a name of ``families`` is not a key of ``FAMILIES``.

    Examples
    --------
    >>> from htc_core.kernels import FAMILIES, warm
    >>> done = []
    >>> seconds = warm(report=lambda family, wall, cpu: done.append(family))
    >>> list(seconds) == done == list(FAMILIES)
    True
    >>> list(warm(families=["Bottom-10% baseline"]))
    ['Bottom-10% baseline']
    """
    names = tuple(FAMILIES) if families is None else tuple(families)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown kernel families {unknown}; known: {list(FAMILIES)}")
    out: dict[str, float] = {}
    with _RUN:
        if _STATE["first"] is None:
            _STATE["first"] = not cache_is_warm()
        _STATE["wanted"] = names
        for name in names:
            fn = FAMILIES[name]
            _STATE["current"], _STATE["since"] = name, time.monotonic()
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                fn()
            finally:
                _STATE["current"] = None
            out[name] = _STATE["done"][name] = time.perf_counter() - t0
            if report is not None:
                report(name, out[name], time.thread_time() - c0)
    return out


def _background(families) -> None:
    try:
        warm(families=families)
    except Exception as e:  # noqa: BLE001 - a failed warm-up only means the first fit compiles (and says why)
        _STATE["error"] = f"{type(e).__name__}: {e}"


def start_background(families=PAGES) -> bool:
    """Start :func:`warm` in a daemon thread, once per process (what the dashboard does at start).

    Parameters
    ----------
    families : sequence of str, default=PAGES
        The families to compile: by default what the dashboard's pages run (``PAGES``: the path solver).

    Returns
    -------
    bool
        True when this call started it; False when it was started before in this process.

    Examples
    --------
    >>> from htc_core.kernels import PAGES, start_background, wait_background
    >>> _ = start_background()
    >>> start_background()                  # once per process
    False
    >>> done, error = wait_background()
    >>> set(PAGES) <= set(done) and error is None
    True
    """
    with _START:
        if _STATE["thread"] is not None:
            return False
        _STATE["thread"] = threading.Thread(target=_background, args=(families,), name="htc-kernel-warmup",
                                            daemon=True)
    _STATE["thread"].start()
    return True


def wait_background(timeout: float | None = None) -> tuple[dict[str, float], str | None]:
    """Wait for the background warm-up (if started).

    Parameters
    ----------
    timeout : float, optional
        Seconds to wait at most (default: until it ends).

    Returns
    -------
    done : dict of str to float
        Seconds per family done so far.
    error : str or None
        Why the warm-up failed, or None.

    Examples
    --------
    >>> from htc_core.kernels import start_background, wait_background
    >>> _ = start_background()
    >>> done, error = wait_background(timeout=120)
    >>> error is None
    True
    """
    thread = _STATE["thread"]
    if thread is not None:
        thread.join(timeout)
    return dict(_STATE["done"]), _STATE["error"]


def status_text() -> str | None:
    """What the background warm-up does now, for a person (the dashboard's sidebar shows it).

    Returns
    -------
    str or None
        For example ``"Loading the compiled kernels: path solver ..."``; None when it is not compiling
        anything.

    Examples
    --------
    >>> from htc_core.kernels import status_text, wait_background
    >>> _ = wait_background()
    >>> status_text() is None                # nothing runs now
    True
    """
    name = _STATE["current"]
    if name is None:
        return None
    elapsed = time.monotonic() - _STATE["since"]
    if not _STATE["first"]:
        return f"Loading the compiled kernels: {name}…"
    left = [FIRST_COMPILE_S[n] for n in _STATE["wanted"] if n not in _STATE["done"]]
    est = max(sum(left) - elapsed, 1.0)
    return (f"Preparing the fitting kernels (first start on this machine, once): {name}, about {est:.0f} s "
            f"left ({elapsed:.0f} s so far)")
