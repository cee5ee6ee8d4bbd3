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


def within_diffs(values: np.ndarray, offsets: np.ndarray,
                 outer_offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Differences ``v[i+1] - v[i]`` inside each segment, in order.

    Returns the differences and their offsets, per segment or, when
    ``outer_offsets`` (segment offsets of outer groups, e.g. the steps of each
    trajectory) is given, pooled per outer group.
    """
    lens = np.diff(offsets)
    pairs = np.maximum(lens - 1, 0)
    if values.size < 2:
        d = np.zeros(0)
    else:
        d = values[1:] - values[:-1]
        cut = offsets[1:-1]
        cut = cut[(cut > 0) & (cut < values.size)] - 1  # differences that cross a segment boundary
        if cut.size:
            keep = np.ones(d.size, dtype=bool)
            keep[cut] = False
            d = d[keep]
    if outer_offsets is not None:
        pairs = seg_sum(pairs.astype(np.float64), outer_offsets).astype(np.int64)
    return d, np.concatenate([[0], np.cumsum(pairs)]).astype(np.int64)
