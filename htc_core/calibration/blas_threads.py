"""One BLAS thread around the path solver's fits.

The path solver's products (``X.T @ r`` on a few thousand runs x 48 features) are far too small for a
multi-threaded BLAS: with OpenBLAS's default threads, one fit of HTC-Reduced on the 2,000 sample runs took
2.7 s CPU against 0.25 s on one thread (issue 29, measured on the 2-core machine), and on a busy machine the
threads mostly wait for each other. :func:`one_blas_thread` limits BLAS to one thread (threadpoolctl, a
scikit-learn dependency) for the duration of a block and restores the previous limits after it. Nested and
concurrent blocks (the dashboard fits in threads) share one limit: the last one out restores it. Measured with
OpenBLAS 0.3.31 (pthreads): a thread other than the main one cannot raise the thread count again, so when the
last block to leave runs in a worker thread the limit of one stays (the dashboard sets one BLAS thread for the
whole server anyway).
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["one_blas_thread"]

_LOCK = threading.Lock()
_STATE = {"depth": 0, "limiter": None}


def _enter() -> None:
    with _LOCK:
        _STATE["depth"] += 1
        if _STATE["depth"] > 1:
            return
        try:
            from threadpoolctl import threadpool_limits

            _STATE["limiter"] = threadpool_limits(limits=1, user_api="blas")
        except Exception:  # pragma: no cover - threadpoolctl ships with scikit-learn; no BLAS found
            _STATE["limiter"] = None


def _exit() -> None:
    with _LOCK:
        _STATE["depth"] -= 1
        if _STATE["depth"] == 0 and _STATE["limiter"] is not None:
            _STATE["limiter"].restore_original_limits()
            _STATE["limiter"] = None


@contextlib.contextmanager
def one_blas_thread():
    """BLAS on one thread inside the block (see the module doc).

    Returns
    -------
    contextmanager
        Enter it with ``with``; the previous limits are back when the last of the nested blocks is left.

    Examples
    --------
    >>> import numpy as np
    >>> from threadpoolctl import threadpool_info
    >>> from htc_core.calibration.blas_threads import one_blas_thread
    >>> def blas_threads():
    ...     return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})
    >>> before = blas_threads()
    >>> with one_blas_thread():
    ...     inside = blas_threads()
    >>> inside, blas_threads() == before
    ([1], True)
    """
    _enter()
    try:
        yield
    finally:
        _exit()
