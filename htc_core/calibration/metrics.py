"""Calibration metrics: ECE, Brier score, AUROC and the reliability curve.

Every binned quantity goes through ONE routine, :func:`bin_predictions`, so the
ECE is exactly the count-weighted gap of :func:`reliability_curve` (the
diagram and the number can never disagree). Bins follow scikit-learn's
``calibration_curve``: equal-width edges on [0, 1] (or quantile edges), right-
closed intervals ``(lo, hi]`` except the first, which also holds 0.

Public functions validate their inputs and raise ``ValueError`` naming the
argument and the value received. The ``fast_*`` helpers skip validation and
work on 2-D stacks of predictions (one row per candidate model); the nested
cross-validation uses them in its inner loop.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .bootstrap import check_resampling, percentile_intervals

__all__ = [
    "UndefinedMetricWarning",
    "BinnedStats",
    "ReliabilityCurve",
    "bin_predictions",
    "expected_calibration_error",
    "brier_score",
    "auroc",
    "reliability_curve",
    "wilson_interval",
]

STRATEGIES = ("uniform", "quantile")
INTERVALS = ("wilson", "bootstrap", None)


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for the given input (e.g. AUROC with one class); NaN is returned.

    Examples
    --------
    >>> import warnings
    >>> from htc_core.calibration.metrics import UndefinedMetricWarning, auroc
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     value = auroc([1, 1, 1], [0.2, 0.5, 0.9])
    >>> value, caught[0].category is UndefinedMetricWarning
    (nan, True)
    """


# ----------------------------------------------------------------- validation
def _as_1d(x, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of numbers, got {_short(x)}") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}")
    return arr


def _short(x) -> str:
    s = repr(x)
    return s if len(s) <= 80 else s[:77] + "..."


def check_metric_inputs(y_true, y_prob) -> tuple[np.ndarray, np.ndarray]:
    """``(y, p)`` as float 1-D arrays of the same length, labels in {0, 1} and probabilities in [0, 1], else
    ValueError."""
    y = _as_1d(y_true, "y_true")
    p = _as_1d(y_prob, "y_prob")
    if y.shape != p.shape:
        raise ValueError(f"y_true and y_prob must have the same length, got {len(y)} and {len(p)}")
    if y.size == 0:
        raise ValueError("y_true is empty; at least one prediction is needed")
    bad = ~((y == 0) | (y == 1))
    if bad.any():
        raise ValueError(f"y_true must contain only 0 and 1, got {float(y[bad][0])!r} at index {int(np.flatnonzero(bad)[0])}")
    badp = ~np.isfinite(p) | (p < 0) | (p > 1)
    if badp.any():
        i = int(np.flatnonzero(badp)[0])
        raise ValueError(f"y_prob must be probabilities in [0, 1], got {float(p[i])!r} at index {i}")
    return y, p


def check_n_bins(n_bins) -> int:
    """``n_bins`` as a positive int, else ValueError."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    return int(n_bins)


def check_strategy(strategy) -> str:
    """``strategy`` if it is one of ``STRATEGIES`` (binning), else ValueError."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    return strategy


# ------------------------------------------------------------------- binning
@dataclass(frozen=True)
class BinnedStats:
    """Per-bin sums of one binning (the single source of every binned metric).

    Made by :func:`bin_predictions`; the expected calibration error and the reliability curve are read off
    these sums, so they can never disagree.

    Parameters
    ----------
    edges : ndarray of shape (n_bins + 1,)
        The bin edges; bin ``b`` holds the predictions in ``(edges[b], edges[b + 1]]`` (the first bin also
        holds ``edges[0]``).
    bin_ids : ndarray of int, shape (n,)
        The bin of every prediction.
    count : ndarray of int, shape (n_bins,)
        Predictions per bin.
    sum_prob : ndarray of shape (n_bins,)
        Sum of the predicted probabilities per bin.
    sum_true : ndarray of shape (n_bins,)
        Sum of the 0/1 outcomes per bin (the successes).

    Examples
    --------
    >>> from htc_core.calibration.metrics import bin_predictions
    >>> b = bin_predictions([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5)
    >>> b.count.tolist(), b.sum_true.tolist()
    ([1, 0, 1, 1, 1], [0.0, 0.0, 1.0, 1.0, 1.0])
    """

    edges: np.ndarray        # [n_bins + 1]
    bin_ids: np.ndarray      # [n] bin of every prediction
    count: np.ndarray        # [n_bins] int
    sum_prob: np.ndarray     # [n_bins]
    sum_true: np.ndarray     # [n_bins]

    @property
    def n(self) -> int:
        """Number of predictions binned.

        Examples
        --------
        >>> from htc_core.calibration.metrics import bin_predictions
        >>> bin_predictions([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).n
        4
        """
        return int(self.count.sum())

    @property
    def mean_confidence(self) -> np.ndarray:
        """Mean predicted probability per bin (NaN for an empty bin).

        Examples
        --------
        >>> from htc_core.calibration.metrics import bin_predictions
        >>> bin_predictions([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).mean_confidence.round(2).tolist()
        [0.2, nan, 0.6, 0.8, 0.9]
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, self.sum_prob / np.maximum(self.count, 1), np.nan)

    @property
    def accuracy(self) -> np.ndarray:
        """Observed success rate per bin (NaN for an empty bin).

        Examples
        --------
        >>> from htc_core.calibration.metrics import bin_predictions
        >>> bin_predictions([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).accuracy.tolist()
        [0.0, nan, 1.0, 1.0, 1.0]
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, self.sum_true / np.maximum(self.count, 1), np.nan)

    def ece(self) -> float:
        """Expected calibration error of this binning (what :func:`expected_calibration_error` returns).

        Returns
        -------
        float
            ``sum over bins |sum_true - sum_prob| / n``, the count-weighted gap between accuracy and
            confidence.

        Examples
        --------
        >>> from htc_core.calibration.metrics import bin_predictions
        >>> round(bin_predictions([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).ece(), 4)
        0.225
        """
        # sum_m |B_m|/N * |acc_m - conf_m| == sum_m |sum_true_m - sum_prob_m| / N
        return float(np.abs(self.sum_true - self.sum_prob).sum() / self.n)


def _edges(p: np.ndarray, n_bins: int, strategy: str) -> np.ndarray:
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    return np.percentile(p, np.linspace(0.0, 100.0, n_bins + 1))


def bin_predictions(y_true, y_prob, *, n_bins: int = 10, strategy: str = "uniform") -> BinnedStats:
    """Assign predictions to bins; the one binning routine behind ECE and the reliability curve.

    Bins follow scikit-learn's ``calibration_curve``: a bin is the right-closed interval ``(lo, hi]``, the
    first one also holding its lower edge.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 outcomes.
    y_prob : array-like of shape (n,)
        Confidences in [0, 1].
    n_bins : int, default=10
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins on [0, 1] or equal-mass bins (edges at the quantiles of ``y_prob``).

    Returns
    -------
    BinnedStats
        The edges, the bin of every prediction and the per-bin count, sum of probabilities and of outcomes.

    Raises
    ------
    ValueError
        If a label is not 0/1, a probability lies outside [0, 1], the lengths differ, ``n_bins`` is not a
        positive integer or ``strategy`` is unknown.

    Examples
    --------
    >>> from htc_core.calibration.metrics import bin_predictions
    >>> b = bin_predictions([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5)
    >>> b.bin_ids.tolist(), b.count.tolist()
    ([4, 0, 2, 3], [1, 0, 1, 1, 1])
    """
    y, p = check_metric_inputs(y_true, y_prob)
    n_bins = check_n_bins(n_bins)
    strategy = check_strategy(strategy)
    return _bin(y, p, n_bins, strategy)


def _bin(y: np.ndarray, p: np.ndarray, n_bins: int, strategy: str) -> BinnedStats:
    edges = _edges(p, n_bins, strategy)
    ids = np.searchsorted(edges[1:-1], p)   # same rule as sklearn.calibration.calibration_curve
    return BinnedStats(
        edges=edges,
        bin_ids=ids,
        count=np.bincount(ids, minlength=n_bins),
        sum_prob=np.bincount(ids, weights=p, minlength=n_bins),
        sum_true=np.bincount(ids, weights=y, minlength=n_bins),
    )


# ------------------------------------------------------------------- metrics
def expected_calibration_error(y_true, y_prob, *, n_bins: int = 10, strategy: str = "uniform") -> float:
    """Expected calibration error: sum over bins of ``|B|/N * |accuracy(B) - confidence(B)|`` (lower is better).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 outcomes.
    y_prob : array-like of shape (n,)
        Confidences in [0, 1].
    n_bins : int, default=10
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins on [0, 1] (the paper's and DESIGN.md's default) or equal-mass bins.

    Returns
    -------
    float

    Examples
    --------
    >>> import htc_core as htc
    >>> y, p = [1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8]
    >>> round(htc.expected_calibration_error(y, p), 4)
    0.225
    """
    return bin_predictions(y_true, y_prob, n_bins=n_bins, strategy=strategy).ece()


def brier_score(y_true, y_prob) -> float:
    """Mean squared difference between the predicted probability and the 0/1 outcome (lower is better).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 outcomes.
    y_prob : array-like of shape (n,)
        Confidences in [0, 1].

    Returns
    -------
    float

    Examples
    --------
    >>> import htc_core as htc
    >>> y, p = [1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8]
    >>> round(htc.brier_score(y, p), 4)
    0.0625
    """
    y, p = check_metric_inputs(y_true, y_prob)
    return float(np.mean((p - y) ** 2))


def auroc(y_true, y_prob) -> float:
    """Area under the ROC curve (ties count one half).

    With a single class the AUROC is undefined: an ``UndefinedMetricWarning`` is issued and NaN returned.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 outcomes.
    y_prob : array-like of shape (n,)
        Scores (higher = more likely a success).

    Returns
    -------
    float

    Examples
    --------
    >>> import htc_core as htc
    >>> y, p = [1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8]
    >>> htc.auroc(y, p)
    1.0
    """
    y, p = check_metric_inputs(y_true, y_prob)
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.size:
        warnings.warn(
            f"AUROC is undefined when y_true holds one class only (got {n_pos} positives of {y.size}); "
            "returning NaN", UndefinedMetricWarning, stacklevel=2)
        return float("nan")
    return float(fast_auroc(y[None, :], p[None, :])[0])


# --------------------------------------------------------- reliability curve
def wilson_interval(successes, n, *, z: float = 1.959963984540054) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion (NaN where n == 0).

    Parameters
    ----------
    successes : array-like
        Successes per cell.
    n : array-like
        Trials per cell.
    z : float, default=1.96
        The normal quantile (1.96: a 95% interval).

    Returns
    -------
    lower, upper : ndarray
        The bounds, one per cell.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> lo, hi = htc.wilson_interval(np.array([8]), np.array([10]))
    >>> round(float(lo[0]), 3), round(float(hi[0]), 3)
    (0.49, 0.943)
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ph = k / n
        den = 1.0 + z * z / n
        centre = (ph + z * z / (2 * n)) / den
        half = z * np.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n)) / den
    lo = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    hi = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return lo, hi


@dataclass(frozen=True)
class ReliabilityCurve:
    """Reliability diagram data; empty bins have count 0 and NaN statistics.

    Made by :func:`reliability_curve`.

    Parameters
    ----------
    edges : ndarray of shape (n_bins + 1,)
        The bin edges (bins ``(edges[b], edges[b + 1]]``, the first one closed).
    mean_confidence : ndarray of shape (n_bins,)
        Mean predicted probability per bin.
    accuracy : ndarray of shape (n_bins,)
        Observed success rate per bin.
    count : ndarray of int, shape (n_bins,)
        Predictions per bin.
    lower, upper : ndarray of shape (n_bins,)
        The interval of each bin's accuracy (NaN where there is none).
    strategy : {"uniform", "quantile"}, default="uniform"
        The binning that made the edges.
    interval : {"wilson", "bootstrap"} or None, default="wilson"
        How ``lower`` and ``upper`` were computed.
    confidence_level : float, default=0.95
        The level of the interval.
    meta : dict, optional
        Free-form information about the curve (empty by default).

    Examples
    --------
    >>> import htc_core as htc
    >>> curve = htc.reliability_curve([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5)
    >>> curve.accuracy.tolist(), curve.lower.round(3).tolist()
    ([0.0, nan, 1.0, 1.0, 1.0], [0.0, nan, 0.207, 0.207, 0.207])
    """

    edges: np.ndarray             # [n_bins + 1]
    mean_confidence: np.ndarray   # [n_bins]
    accuracy: np.ndarray          # [n_bins]
    count: np.ndarray             # [n_bins]
    lower: np.ndarray             # [n_bins] interval of the accuracy
    upper: np.ndarray
    strategy: str = "uniform"
    interval: str | None = "wilson"
    confidence_level: float = 0.95
    meta: dict = field(default_factory=dict)

    @property
    def n_bins(self) -> int:
        """Number of bins (empty ones included).

        Examples
        --------
        >>> import htc_core as htc
        >>> htc.reliability_curve([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).n_bins
        5
        """
        return len(self.count)

    @property
    def n(self) -> int:
        """Number of predictions in the curve.

        Examples
        --------
        >>> import htc_core as htc
        >>> htc.reliability_curve([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).n
        4
        """
        return int(self.count.sum())

    @property
    def centers(self) -> np.ndarray:
        """Midpoint of every bin.

        Examples
        --------
        >>> import htc_core as htc
        >>> htc.reliability_curve([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).centers.round(2).tolist()
        [0.1, 0.3, 0.5, 0.7, 0.9]
        """
        return (self.edges[:-1] + self.edges[1:]) / 2

    @property
    def gap(self) -> np.ndarray:
        """``accuracy - mean_confidence`` per bin: positive where the model is under-confident.

        Examples
        --------
        >>> import htc_core as htc
        >>> htc.reliability_curve([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).gap.round(2).tolist()
        [-0.2, nan, 0.4, 0.2, 0.1]
        """
        return self.accuracy - self.mean_confidence

    @property
    def ece(self) -> float:
        """Count-weighted ``|accuracy - confidence|`` over the bins (equals :func:`expected_calibration_error`).

        Examples
        --------
        >>> import htc_core as htc
        >>> y, p = [1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8]
        >>> curve = htc.reliability_curve(y, p, n_bins=5)
        >>> round(curve.ece, 4), round(htc.expected_calibration_error(y, p, n_bins=5), 4)
        (0.225, 0.225)
        """
        nz = self.count > 0
        return float(np.sum(self.count[nz] * np.abs(self.gap[nz])) / self.n)

    def bin_of(self, y_prob) -> np.ndarray:
        """The bin of each prediction under this curve's edges, by the rule that filled ``count``.

        A bin is ``(edge_b, edge_b+1]``, the first one closed; a prediction that is not finite gets -1.

        Parameters
        ----------
        y_prob : array-like
            Predicted probabilities (flattened).

        Returns
        -------
        ndarray of int
            The bin index of each prediction, -1 where it is not finite.

        Examples
        --------
        >>> import htc_core as htc
        >>> curve = htc.reliability_curve([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5)
        >>> curve.bin_of([0.1, 0.5, float("nan")]).tolist()
        [0, 2, -1]
        """
        p = np.asarray(y_prob, dtype=np.float64).reshape(-1)
        ids = np.searchsorted(self.edges[1:-1], p)
        return np.where(np.isfinite(p), ids, -1)

    def to_dict(self) -> dict:
        """The curve as plain JSON values (NaN becomes None); ``meta`` is left out.

        Returns
        -------
        dict
            ``edges``, ``mean_confidence``, ``accuracy``, ``count``, ``lower``, ``upper`` as lists, and
            ``strategy``, ``interval``, ``confidence_level``.

        Examples
        --------
        >>> import htc_core as htc
        >>> d = htc.reliability_curve([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=5).to_dict()
        >>> d["count"], d["accuracy"]
        ([1, 0, 1, 1, 1], [0.0, None, 1.0, 1.0, 1.0])
        """
        def lst(a):
            return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, dtype=float)]
        return {
            "edges": lst(self.edges), "mean_confidence": lst(self.mean_confidence), "accuracy": lst(self.accuracy),
            "count": [int(c) for c in self.count], "lower": lst(self.lower), "upper": lst(self.upper),
            "strategy": self.strategy, "interval": self.interval, "confidence_level": self.confidence_level,
        }


def reliability_curve(y_true, y_prob, *, n_bins: int = 10, strategy: str = "uniform",
                      interval: str | None = "wilson", confidence_level: float = 0.95,
                      n_bootstrap: int = 1000, random_state: int | None = 42) -> ReliabilityCurve:
    """Per-bin mean confidence, accuracy and count, with an interval for the accuracy.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 outcomes.
    y_prob : array-like of shape (n,)
        Confidences in [0, 1].
    n_bins : int, default=10
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        The binning (as :func:`expected_calibration_error`).
    interval : {"wilson", "bootstrap"} or None, default="wilson"
        Wilson score interval per bin; percentile intervals of ``n_bootstrap`` resamples (bins kept
        fixed); or NaN bounds.
    confidence_level : float, default=0.95
        The level of the intervals, in (0, 1).
    n_bootstrap : int, default=1000
        Resamples of the bootstrap interval (ignored otherwise).
    random_state : int or None, default=42
        Seed of the bootstrap resamples (ignored otherwise).

    Returns
    -------
    ReliabilityCurve
        ``edges``, ``mean_confidence``, ``accuracy``, ``count``, ``lower``, ``upper`` (empty bins: count 0,
        NaN statistics).

    Examples
    --------
    >>> import htc_core as htc
    >>> y, p = [1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8]
    >>> htc.reliability_curve(y, p, n_bins=5).count.tolist()
    [1, 0, 1, 1, 1]
    """
    y, p = check_metric_inputs(y_true, y_prob)
    n_bins = check_n_bins(n_bins)
    strategy = check_strategy(strategy)
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}")
    if not (isinstance(confidence_level, (int, float)) and 0 < confidence_level < 1):
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    b = _bin(y, p, n_bins, strategy)
    acc = b.accuracy
    if interval == "wilson":
        from statistics import NormalDist

        z = NormalDist().inv_cdf(0.5 + confidence_level / 2)
        lo, hi = wilson_interval(b.sum_true, b.count, z=z)
    elif interval == "bootstrap":
        n_boot, level = check_resampling(n_bootstrap, confidence_level, minimum=1, name="n_bootstrap")
        lo, hi = _bootstrap_bin_accuracy(y, b.bin_ids, n_bins, n_boot, level, random_state)
        lo = np.where(b.count > 0, lo, np.nan)
        hi = np.where(b.count > 0, hi, np.nan)
    else:
        lo = np.full(n_bins, np.nan)
        hi = np.full(n_bins, np.nan)
    return ReliabilityCurve(edges=b.edges, mean_confidence=b.mean_confidence, accuracy=acc, count=b.count,
                            lower=lo, upper=hi, strategy=strategy, interval=interval,
                            confidence_level=float(confidence_level))


def _bootstrap_bin_accuracy(y, bin_ids, n_bins: int, n_boot: int, level: float, random_state):
    """Percentile interval of every bin's accuracy over resamples of the runs, the bins kept fixed (a resample
    that leaves a bin empty is left out for that bin): HTC's one bootstrap engine."""
    def stat(idx):
        m = idx.shape[0]
        flat = (np.arange(m)[:, None] * n_bins + bin_ids[idx]).ravel()
        cnt = np.bincount(flat, minlength=m * n_bins).reshape(m, n_bins)
        tru = np.bincount(flat, weights=y[idx].ravel(), minlength=m * n_bins).reshape(m, n_bins)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(cnt > 0, tru / np.maximum(cnt, 1), np.nan).T

    iv = percentile_intervals(stat, (y.size,), n_boot=n_boot, level=level, random_state=random_state)
    return iv.low, iv.high


# ------------------------------------------- fast, unvalidated, row-stacked
def fast_brier(y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Brier score of every row of ``P`` [m, n] against ``y`` [n]."""
    d = P - y
    return np.einsum("ij,ij->i", d, d) / y.size


def fast_ece(y: np.ndarray, P: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Equal-width ECE of every row of ``P`` [m, n] (same bins as :func:`_bin`)."""
    m, n = P.shape
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ids = np.searchsorted(edges[1:-1], P.ravel()).reshape(m, n) + (np.arange(m) * n_bins)[:, None]
    s = np.bincount(ids.ravel(), weights=(P - y).ravel(), minlength=m * n_bins).reshape(m, n_bins)
    return np.abs(s).sum(axis=1) / n


def fast_auroc(y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """AUROC (Mann-Whitney, ties = 1/2) of every row of ``P`` [m, n]; ``y`` is [n] or [1, n]."""
    y = np.asarray(y).reshape(-1)
    P = np.atleast_2d(P)
    m, n = P.shape
    n_pos = y.sum()
    n_neg = n - n_pos
    if n_pos == 0 or n_neg == 0:
        return np.full(m, np.nan)
    order = np.argsort(P, axis=1, kind="mergesort")
    sp = np.take_along_axis(P, order, axis=1)
    # average ranks over ties: for each run of equal values, rank = mean of positions
    new_run = np.ones((m, n), dtype=bool)
    new_run[:, 1:] = sp[:, 1:] != sp[:, :-1]
    run_id = np.cumsum(new_run, axis=1) - 1 + (np.arange(m) * n)[:, None]
    pos = np.broadcast_to(np.arange(1, n + 1, dtype=np.float64), (m, n))
    rid = run_id.ravel()
    run_sum = np.bincount(rid, weights=pos.ravel(), minlength=m * n)
    run_cnt = np.bincount(rid, minlength=m * n)
    ranks_sorted = (run_sum[rid] / np.maximum(run_cnt[rid], 1)).reshape(m, n)
    ys = y[order]
    rank_pos = np.einsum("ij,ij->i", ranks_sorted, ys)
    return (rank_pos - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
