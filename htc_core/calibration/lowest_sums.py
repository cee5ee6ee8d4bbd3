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
    (0 for an empty segment). r float64, off and k int64, all C-contiguous."""
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
