"""Segment reductions over offsets: the vectorized building blocks of every feature.

A segment is ``values[offsets[j]:offsets[j + 1]]``. Empty segments give the
``empty`` fill value (``np.*.reduceat`` alone would return a neighbour's value).
"""

from __future__ import annotations

import numpy as np

__all__ = ["seg_sum", "seg_max", "seg_min", "seg_mean", "seg_mean_std", "offsets_from_index", "within_diffs"]


def _starts(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lens = np.diff(offsets)
    nz = lens > 0
    return offsets[:-1][nz], nz


def seg_sum(values: np.ndarray, offsets: np.ndarray, empty: float = 0.0) -> np.ndarray:
    """The sum of every segment.

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        The values, segment after segment.
    offsets : ndarray of int of shape (n_segments + 1,)
        Segment j is ``values[offsets[j]:offsets[j + 1]]``.
    empty : float, default 0.0
        The value of an empty segment.

    Returns
    -------
    ndarray of float64 of shape (n_segments,)

    Examples
    --------
    >>> from htc_core.features.segments import seg_sum
    >>> import numpy as np
    >>> values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> offsets = np.array([0, 2, 2, 5])          # segments [1, 2], [], [3, 4, 5]
    >>> seg_sum(values, offsets).tolist()
    [3.0, 0.0, 12.0]
    """
    out = np.full(len(offsets) - 1, empty, dtype=np.float64)
    starts, nz = _starts(offsets)
    if starts.size:
        out[nz] = np.add.reduceat(values, starts)
    return out


def seg_max(values: np.ndarray, offsets: np.ndarray, empty: float = 0.0) -> np.ndarray:
    """The maximum of every segment.

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        The values, segment after segment.
    offsets : ndarray of int of shape (n_segments + 1,)
        Segment j is ``values[offsets[j]:offsets[j + 1]]``.
    empty : float, default 0.0
        The value of an empty segment.

    Returns
    -------
    ndarray of float64 of shape (n_segments,)

    Examples
    --------
    >>> from htc_core.features.segments import seg_max
    >>> import numpy as np
    >>> values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> offsets = np.array([0, 2, 2, 5])          # segments [1, 2], [], [3, 4, 5]
    >>> seg_max(values, offsets).tolist()
    [2.0, 0.0, 5.0]
    """
    out = np.full(len(offsets) - 1, empty, dtype=np.float64)
    starts, nz = _starts(offsets)
    if starts.size:
        out[nz] = np.maximum.reduceat(values, starts)
    return out


def seg_min(values: np.ndarray, offsets: np.ndarray, empty: float = 0.0) -> np.ndarray:
    """The minimum of every segment.

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        The values, segment after segment.
    offsets : ndarray of int of shape (n_segments + 1,)
        Segment j is ``values[offsets[j]:offsets[j + 1]]``.
    empty : float, default 0.0
        The value of an empty segment.

    Returns
    -------
    ndarray of float64 of shape (n_segments,)

    Examples
    --------
    >>> from htc_core.features.segments import seg_min
    >>> import numpy as np
    >>> values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> offsets = np.array([0, 2, 2, 5])          # segments [1, 2], [], [3, 4, 5]
    >>> seg_min(values, offsets, empty=np.nan).tolist()
    [1.0, nan, 3.0]
    """
    out = np.full(len(offsets) - 1, empty, dtype=np.float64)
    starts, nz = _starts(offsets)
    if starts.size:
        out[nz] = np.minimum.reduceat(values, starts)
    return out


def seg_mean(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The mean of every segment (0 for an empty one).

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        The values, segment after segment.
    offsets : ndarray of int of shape (n_segments + 1,)
        Segment j is ``values[offsets[j]:offsets[j + 1]]``.

    Returns
    -------
    ndarray of float64 of shape (n_segments,)

    Examples
    --------
    >>> from htc_core.features.segments import seg_mean
    >>> import numpy as np
    >>> values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> offsets = np.array([0, 2, 2, 5])          # segments [1, 2], [], [3, 4, 5]
    >>> seg_mean(values, offsets).tolist()
    [1.5, 0.0, 4.0]
    """
    lens = np.diff(offsets)
    s = seg_sum(values, offsets)
    return np.divide(s, lens, out=np.zeros_like(s), where=lens > 0)


def seg_mean_std(values: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population standard deviation (ddof=0) per segment, two-pass for accuracy.

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        The values, segment after segment.
    offsets : ndarray of int of shape (n_segments + 1,)
        Segment j is ``values[offsets[j]:offsets[j + 1]]``.

    Returns
    -------
    mean : ndarray of float64 of shape (n_segments,)
        0 for an empty segment.
    std : ndarray of float64 of shape (n_segments,)
        0 for an empty segment.

    Examples
    --------
    >>> from htc_core.features.segments import seg_mean_std
    >>> import numpy as np
    >>> values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> offsets = np.array([0, 2, 2, 5])          # segments [1, 2], [], [3, 4, 5]
    >>> [a.round(3).tolist() for a in seg_mean_std(values, offsets)]
    [[1.5, 0.0, 4.0], [0.5, 0.0, 0.816]]
    """
    lens = np.diff(offsets)
    mu = seg_mean(values, offsets)
    dev = values - np.repeat(mu, lens)
    var = seg_sum(dev * dev, offsets)
    var = np.divide(var, lens, out=np.zeros_like(var), where=lens > 0)
    return mu, np.sqrt(var)


def offsets_from_index(index: np.ndarray, n_segments: int) -> np.ndarray:
    """Offsets of a sorted segment index (e.g. the trajectory of every pooled value).

    Parameters
    ----------
    index : ndarray of int of shape (n_values,)
        The segment of every value, sorted ascending.
    n_segments : int
        The number of segments (those after the last index are empty).

    Returns
    -------
    ndarray of int64 of shape (n_segments + 1,)

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.features.segments import offsets_from_index
    >>> offsets_from_index(np.array([0, 0, 2, 2, 2]), 4).tolist()
    [0, 2, 2, 5, 5]
    """
    counts = np.bincount(index, minlength=n_segments) if index.size else np.zeros(n_segments, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def within_diffs(values: np.ndarray, offsets: np.ndarray,
                 outer_offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Differences ``v[i+1] - v[i]`` inside each segment, in order (none across a segment boundary).

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        The values, segment after segment.
    offsets : ndarray of int of shape (n_segments + 1,)
        The segments (e.g. the steps: token offsets).
    outer_offsets : ndarray of int, optional
        Segment offsets of outer groups (e.g. the steps of each trajectory): the differences are then pooled
        per outer group.

    Returns
    -------
    diffs : ndarray of float64
        The differences, segment after segment.
    diff_offsets : ndarray of int64
        Their offsets, per segment or, with ``outer_offsets``, per outer group.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.features.segments import within_diffs
    >>> values = np.array([1.0, 4.0, 2.0, 2.0, 5.0, 9.0])
    >>> d, off = within_diffs(values, np.array([0, 2, 6]))      # segments [1, 4] and [2, 2, 5, 9]
    >>> d.tolist(), off.tolist()
    ([3.0, 0.0, 3.0, 4.0], [0, 1, 4])
    >>> d, off = within_diffs(values, np.array([0, 2, 4, 6]), outer_offsets=np.array([0, 2, 3]))
    >>> d.tolist(), off.tolist()
    ([3.0, 0.0, 4.0], [0, 2, 3])
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
