"""Segment reductions over offsets: the vectorized building blocks of every feature.

A segment is ``values[offsets[j]:offsets[j + 1]]``. Empty segments give the
``empty`` fill value (``np.*.reduceat`` alone would return a neighbour's value).
"""

from __future__ import annotations

import numpy as np


def _starts(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lens = np.diff(offsets)
    nz = lens > 0
    return offsets[:-1][nz], nz


def seg_sum(values: np.ndarray, offsets: np.ndarray, empty: float = 0.0) -> np.ndarray:
    out = np.full(len(offsets) - 1, empty, dtype=np.float64)
    starts, nz = _starts(offsets)
    if starts.size:
        out[nz] = np.add.reduceat(values, starts)
    return out


def seg_max(values: np.ndarray, offsets: np.ndarray, empty: float = 0.0) -> np.ndarray:
    out = np.full(len(offsets) - 1, empty, dtype=np.float64)
    starts, nz = _starts(offsets)
    if starts.size:
        out[nz] = np.maximum.reduceat(values, starts)
    return out


def seg_min(values: np.ndarray, offsets: np.ndarray, empty: float = 0.0) -> np.ndarray:
    out = np.full(len(offsets) - 1, empty, dtype=np.float64)
    starts, nz = _starts(offsets)
    if starts.size:
        out[nz] = np.minimum.reduceat(values, starts)
    return out


def seg_mean(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    lens = np.diff(offsets)
    s = seg_sum(values, offsets)
    return np.divide(s, lens, out=np.zeros_like(s), where=lens > 0)


def seg_mean_std(values: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population standard deviation (ddof=0) per segment, two-pass for accuracy."""
    lens = np.diff(offsets)
    mu = seg_mean(values, offsets)
    dev = values - np.repeat(mu, lens)
    var = seg_sum(dev * dev, offsets)
    var = np.divide(var, lens, out=np.zeros_like(var), where=lens > 0)
    return mu, np.sqrt(var)


def offsets_from_index(index: np.ndarray, n_segments: int) -> np.ndarray:
    """Offsets of a sorted segment index (e.g. trajectory of every pooled value)."""
    counts = np.bincount(index, minlength=n_segments) if index.size else np.zeros(n_segments, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def within_diffs(values: np.ndarray, offsets: np.ndarray, outer_of_segment: np.ndarray | None = None,
                 n_outer: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Differences ``v[i+1] - v[i]`` inside each segment.

    Returns the differences and their offsets grouped by ``outer_of_segment``
    (for token differences pooled per trajectory) or by segment.
    """
    lens = np.diff(offsets)
    seg_of = np.repeat(np.arange(len(lens)), lens)
    if values.size < 2:
        d = np.zeros(0)
        keep_seg = np.zeros(0, dtype=np.int64)
    else:
        same = seg_of[1:] == seg_of[:-1]
        d = (values[1:] - values[:-1])[same]
        keep_seg = seg_of[:-1][same]
    if outer_of_segment is None:
        return d, offsets_from_index(keep_seg, len(lens))
    return d, offsets_from_index(outer_of_segment[keep_seg], int(n_outer))
