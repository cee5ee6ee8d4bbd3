"""Selective prediction and ranking views of a confidence: risk-coverage, ROC, and bootstrap intervals.

- :func:`risk_coverage_curve`: keep the runs whose confidence is at least a threshold; for every threshold,
  the share kept (coverage) and the success rate of the kept runs (selective accuracy). The question it answers:
  "if I only trust runs above t, how many do I keep and how many of those are right?"
- :func:`roc_curve`: false- and true-positive rates of "success" for every threshold (success is the positive
  class, as in :func:`~htc_core.calibration.metrics.auroc`).
- :func:`bootstrap_interval`: a percentile bootstrap interval of any metric of (y, p), resampling runs.

Inputs are validated like the metrics (finite probabilities in [0, 1], 0/1 labels of the same length).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from .bootstrap import check_resampling, percentile_intervals, renamed_seed
from .metrics import check_metric_inputs

__all__ = ["RiskCoverage", "risk_coverage_curve", "roc_curve", "bootstrap_interval"]


@dataclass
class RiskCoverage:
    """The risk-coverage curve of a confidence (what :func:`risk_coverage_curve` returns).

    Point ``i`` keeps the runs whose confidence is at least ``threshold[i]``. Thresholds descend, so coverage
    rises.

    Parameters
    ----------
    threshold : ndarray of shape (m,)
        The distinct confidences, descending.
    coverage : ndarray of shape (m,)
        Share of the runs kept.
    accuracy : ndarray of shape (m,)
        Success rate among the kept runs (the selective accuracy).
    kept : ndarray of int, shape (m,)
        How many runs are kept.
    base_rate : float
        Success rate of all runs (the accuracy at full coverage).
    aurc : float
        Area under the risk (1 - accuracy) vs coverage curve; lower is better.

    Examples
    --------
    >>> from htc_core.calibration import risk_coverage_curve
    >>> rc = risk_coverage_curve([1, 0, 1, 1, 0], [0.9, 0.2, 0.6, 0.8, 0.7])
    >>> rc.threshold.tolist(), rc.kept.tolist(), rc.base_rate, round(rc.aurc, 4)
    ([0.9, 0.8, 0.7, 0.6, 0.2], [1, 2, 3, 4, 5], 0.6, 0.1967)
    """

    threshold: np.ndarray
    coverage: np.ndarray
    accuracy: np.ndarray
    kept: np.ndarray
    base_rate: float
    aurc: float

    def at_threshold(self, t: float) -> tuple[float, float, int]:
        """(coverage, accuracy, kept) when runs with confidence >= ``t`` are kept (accuracy NaN if none).

        Parameters
        ----------
        t : float
            The keep-threshold (need not be one of ``threshold``).

        Returns
        -------
        coverage : float
            Share of the runs kept.
        accuracy : float
            Success rate among them, NaN when none is kept.
        kept : int
            How many are kept.

        Examples
        --------
        >>> from htc_core.calibration import risk_coverage_curve
        >>> rc = risk_coverage_curve([1, 0, 1, 1, 0], [0.9, 0.2, 0.6, 0.8, 0.7])
        >>> rc.at_threshold(0.65)          # keeps 0.9, 0.8, 0.7: two of three succeeded
        (0.6, 0.6666666666666666, 3)
        >>> rc.at_threshold(0.95)
        (0.0, nan, 0)
        """
        idx = np.flatnonzero(self.threshold >= t)
        if idx.size == 0:
            return 0.0, float("nan"), 0
        i = idx[-1]
        return float(self.coverage[i]), float(self.accuracy[i]), int(self.kept[i])

    def threshold_for_accuracy(self, target: float) -> float | None:
        """The lowest threshold whose kept runs reach ``target`` accuracy (the widest coverage), or None.

        Parameters
        ----------
        target : float
            The selective accuracy wanted.

        Returns
        -------
        float or None
            The threshold, or None when no threshold reaches ``target``.

        Examples
        --------
        >>> from htc_core.calibration import risk_coverage_curve
        >>> rc = risk_coverage_curve([1, 0, 1, 1, 0], [0.9, 0.2, 0.6, 0.8, 0.7])
        >>> rc.threshold_for_accuracy(0.75), rc.threshold_for_accuracy(1.0), rc.threshold_for_accuracy(1.01)
        (0.6, 0.8, None)
        """
        ok = np.flatnonzero(self.accuracy >= target)
        return float(self.threshold[ok[-1]]) if ok.size else None

    def to_frame(self) -> pd.DataFrame:
        """The curve as a table, one row per threshold.

        Returns
        -------
        DataFrame
            Columns ``threshold``, ``coverage``, ``accuracy``, ``kept``.

        Examples
        --------
        >>> from htc_core.calibration import risk_coverage_curve
        >>> rc = risk_coverage_curve([1, 0, 1, 1, 0], [0.9, 0.2, 0.6, 0.8, 0.7])
        >>> rc.to_frame().round(3)
           threshold  coverage  accuracy  kept
        0        0.9       0.2     1.000     1
        1        0.8       0.4     1.000     2
        2        0.7       0.6     0.667     3
        3        0.6       0.8     0.750     4
        4        0.2       1.0     0.600     5
        """
        return pd.DataFrame({"threshold": self.threshold, "coverage": self.coverage, "accuracy": self.accuracy,
                             "kept": self.kept})


def risk_coverage_curve(y_true, y_prob) -> RiskCoverage:
    """Coverage and selective accuracy for every distinct confidence used as the keep-threshold.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 outcomes.
    y_prob : array-like of shape (n,)
        Confidences.

    Returns
    -------
    RiskCoverage
        ``threshold``, ``coverage``, ``accuracy``, ``aurc``, ``to_frame()``.

    Examples
    --------
    >>> from htc_core.calibration import risk_coverage_curve
    >>> y, p = [1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8]
    >>> risk_coverage_curve(y, p).coverage.tolist()
    [0.25, 0.5, 0.75, 1.0]
    """
    y, p = check_metric_inputs(y_true, y_prob)
    order = np.argsort(-p, kind="stable")
    ps, ys = p[order], y[order]
    last_of_tie = np.r_[ps[1:] != ps[:-1], True]          # thresholds between distinct values only
    kept = np.arange(1, len(p) + 1)[last_of_tie]
    correct = np.cumsum(ys)[last_of_tie]
    coverage = kept / len(p)
    accuracy = correct / kept
    risk = 1.0 - accuracy
    cov0 = np.r_[0.0, coverage]
    aurc = float(np.sum(np.diff(cov0) * risk))
    return RiskCoverage(threshold=ps[last_of_tie], coverage=coverage, accuracy=accuracy, kept=kept,
                        base_rate=float(y.mean()), aurc=aurc)


def roc_curve(y_true, y_prob) -> pd.DataFrame:
    """The ROC curve, starting at (0, 0) with threshold +inf; ties are one point.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 outcomes.
    y_prob : array-like of shape (n,)
        Scores.

    Returns
    -------
    DataFrame
        Columns ``threshold``, ``fpr``, ``tpr`` (NaN rates when one class is missing).

    Examples
    --------
    >>> from htc_core.calibration import roc_curve
    >>> y, p = [1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8]
    >>> roc_curve(y, p)["tpr"].tolist()
    [0.0, 0.3333333333333333, 0.6666666666666666, 1.0, 1.0]
    """
    y, p = check_metric_inputs(y_true, y_prob)
    order = np.argsort(-p, kind="stable")
    ps, ys = p[order], y[order]
    last_of_tie = np.r_[ps[1:] != ps[:-1], True]
    tp = np.cumsum(ys)[last_of_tie]
    fp = np.cumsum(1.0 - ys)[last_of_tie]
    n_pos, n_neg = ys.sum(), len(ys) - ys.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.r_[0.0, tp / n_pos] if n_pos else np.full(len(tp) + 1, np.nan)
        fpr = np.r_[0.0, fp / n_neg] if n_neg else np.full(len(fp) + 1, np.nan)
    return pd.DataFrame({"threshold": np.r_[np.inf, ps[last_of_tie]], "fpr": fpr, "tpr": tpr})


def bootstrap_interval(metric: Callable[[np.ndarray, np.ndarray], float], y_true, y_prob, *,
                       n_boot: int = 1000, level: float = 0.95, random_state=0,
                       seed=None) -> tuple[float, float, float]:
    """A metric on all runs and its percentile bootstrap interval over resamples of the runs.

    Resamples where the metric is undefined are left out. The resampling is HTC's one bootstrap engine
    (:func:`~htc_core.calibration.bootstrap.percentile_intervals`, over :func:`scipy.stats.bootstrap`); the
    metric is called once per resample (any Python function of (y, p)).

    Parameters
    ----------
    metric : callable
        ``metric(y, p) -> float``.
    y_true, y_prob : array-like of shape (n,)
        Outcomes and confidences.
    n_boot : int, default=1000
        Resamples.
    level : float, default=0.95
        The interval's level.
    random_state : int, Generator, RandomState or None, default=0
        The resampling seed (scikit-learn's convention).
    seed : int, optional
        Deprecated old name of ``random_state``.

    Returns
    -------
    value : float
        The metric on all runs.
    low, high : float
        The interval's bounds.

    Raises
    ------
    ValueError
        If the inputs are not valid outcomes and probabilities, or ``n_boot`` / ``level`` are out of range.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.calibration import bootstrap_interval
    >>> value, low, high = bootstrap_interval(htc.brier_score, np.array([1, 0, 1, 1] * 10),
    ...                                       np.array([0.9, 0.2, 0.6, 0.8] * 10), n_boot=200)
    >>> round(value, 4), round(low, 3), round(high, 3)
    (0.0625, 0.047, 0.081)
    """
    y, p = check_metric_inputs(y_true, y_prob)
    n_boot, level = check_resampling(n_boot, level)
    random_state = renamed_seed(seed, random_state)

    def stat(idx):
        return np.array([metric(y[i], p[i]) for i in idx], dtype=np.float64)

    iv = percentile_intervals(stat, (y.size,), n_boot=n_boot, level=level, random_state=random_state)
    return iv.triple(0)
