"""The sum of the k lowest values of each segment, compiled with numba (the ``Bottom-10%`` baseline).

A max-heap holds the k lowest values seen so far (O(n log k) per segment); it is then heap-sorted and summed in
ascending order, one value after the other: the same additions in the same order as summing
``np.sort(segment)[:k]``, so the same result to the last bit. NaN sorts last, as in ``np.sort``. numba's own
``np.sort``, used here before, cost ~1.4 s CPU to compile in a fresh install (issue 29); these loops ~0.2 s.
Imported on first use (numba's import is not free).
"""

from __future__ import annotations

import numpy as np

from ..numba_cache import njit

__all__ = ["lowest_sums"]


@njit(cache=True)
def _before(x, y):
    """``x`` sorts before ``y`` (NaN last)."""
    return x < y or (np.isnan(y) and not np.isnan(x))


@njit(cache=True)
def _sift_down(h, j, n):
    """Restore the max-heap order of ``h[:n]`` below position ``j``."""
    while True:
        c = 2 * j + 1
        if c >= n:
            return
        if c + 1 < n and _before(h[c], h[c + 1]):
            c += 1
        if not _before(h[j], h[c]):
            return
        h[j], h[c] = h[c], h[j]
        j = c


@njit(cache=True)
def lowest_sums(r, off, k):
    """``out[i]``: the sum, in ascending order, of the ``min(k[i], len)`` lowest values of ``r[off[i]:off[i+1]]``
    (0 for an empty segment). r float64, off and k int64, all C-contiguous.

    Compiled with numba (cached on disk after the first call); the result equals
    ``np.sort(r[off[i]:off[i+1]])[:k[i]].sum()`` summed in ascending order, to the last bit.

    Parameters
    ----------
    r : ndarray of float64, shape (n,)
        The values of all segments, one after the other.
    off : ndarray of int64, shape (m + 1,)
        Segment ``i`` is ``r[off[i]:off[i+1]]`` (non-decreasing, ``off[0] = 0``, ``off[-1] = n``).
    k : ndarray of int64, shape (m,)
        How many of the lowest values to sum per segment (0 or less: the sum is 0).

    Returns
    -------
    ndarray of float64, shape (m,)
        The sums (NaN sorts last, as in ``np.sort``, so it enters a sum only when fewer than ``k`` values
        are not NaN).

    Examples
    --------
    Three segments (the token probabilities of three runs; the last one empty):

    >>> import numpy as np
    >>> from htc_core.calibration.lowest_sums import lowest_sums
    >>> r = np.array([0.9, 0.5, 0.8, 0.2, 0.4, 0.6])
    >>> lowest_sums(r, np.array([0, 3, 6, 6]), np.array([2, 1, 3])).round(2).tolist()
    [1.3, 0.2, 0.0]
    """
    out = np.zeros(len(off) - 1)
    for i in range(len(off) - 1):
        a, b = off[i], off[i + 1]
        kk = min(k[i], b - a)
        if kk <= 0:
            continue
        heap = r[a:a + kk].copy()
        for j in range(kk // 2 - 1, -1, -1):
            _sift_down(heap, j, kk)
        for j in range(a + kk, b):
            if _before(r[j], heap[0]):
                heap[0] = r[j]
                _sift_down(heap, 0, kk)
        for end in range(kk - 1, 0, -1):          # heap sort: ascending
            heap[0], heap[end] = heap[end], heap[0]
            _sift_down(heap, 0, end)
        total = 0.0
        for j in range(kk):
            total += heap[j]
        out[i] = total
    return out
