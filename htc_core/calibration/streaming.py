"""Metrics from sufficient statistics: feed predictions chunk by chunk (or on many workers) and merge.

:class:`MetricState` keeps, for equal-width bins, the count, the sum of confidences and the sum of outcomes
(the ECE and the reliability curve), the sums for the Brier score, and the number of successes and failures at
every distinct confidence (the AUROC, exactly: ties count one half, as in
:func:`~htc_core.calibration.metrics.auroc`). States of disjoint chunks merge by addition, in any order, and the
results equal the one-shot metrics on all rows to rounding (1e-12). Memory grows with the number of distinct
confidence values, not with the number of rows once scores repeat; equal-mass (quantile) bins cannot be merged
exactly and are not offered here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .metrics import check_metric_inputs, check_n_bins

__all__ = ["MetricState"]


@dataclass
class MetricState:
    """Mergeable sufficient statistics of (outcome, confidence) pairs; see the module docstring.

    Start empty (``MetricState(n_bins)``), feed chunks with :meth:`update`, combine the states of disjoint
    chunks with :meth:`merge`, then read the metrics. The other parameters are the statistics themselves
    (left out, they start at zero).

    Parameters
    ----------
    n_bins : int, default=10
        Equal-width bins of the ECE (as :func:`~htc_core.calibration.metrics.expected_calibration_error`).
    count : ndarray of shape (n_bins,), optional
        Predictions per bin.
    sum_p : ndarray of shape (n_bins,), optional
        Sum of the confidences per bin.
    sum_y : ndarray of shape (n_bins,), optional
        Sum of the outcomes per bin.
    sq_error : float, default=0.0
        Sum of the squared errors (the Brier score's numerator).
    scores : ndarray, optional
        The distinct confidences seen, ascending.
    pos : ndarray, optional
        Successes at each distinct confidence.
    neg : ndarray, optional
        Failures at each distinct confidence.

    Examples
    --------
    Two chunks (on two workers, say), merged: the metrics equal the one-shot ones on all five rows.

    >>> import htc_core as htc
    >>> from htc_core.calibration import MetricState
    >>> a = MetricState().update([1, 0, 1], [0.9, 0.2, 0.6])
    >>> b = MetricState().update([1, 0], [0.8, 0.6])
    >>> merged = a.merge(b)
    >>> y, p = [1, 0, 1, 1, 0], [0.9, 0.2, 0.6, 0.8, 0.6]
    >>> round(merged.expected_calibration_error(), 6) == round(htc.expected_calibration_error(y, p), 6)
    True
    >>> round(merged.auroc(), 4), round(htc.auroc(y, p), 4)
    (0.9167, 0.9167)
    """

    n_bins: int = 10
    count: np.ndarray = field(default=None, repr=False)
    sum_p: np.ndarray = field(default=None, repr=False)
    sum_y: np.ndarray = field(default=None, repr=False)
    sq_error: float = 0.0
    scores: np.ndarray = field(default=None, repr=False)   # distinct confidences, ascending
    pos: np.ndarray = field(default=None, repr=False)      # successes at each distinct confidence
    neg: np.ndarray = field(default=None, repr=False)      # failures at each distinct confidence

    def __post_init__(self) -> None:
        self.n_bins = check_n_bins(self.n_bins)
        for name in ("count", "sum_p", "sum_y"):
            if getattr(self, name) is None:
                setattr(self, name, np.zeros(self.n_bins))
        if self.scores is None:
            self.scores, self.pos, self.neg = np.zeros(0), np.zeros(0), np.zeros(0)

    @property
    def n(self) -> int:
        """Number of predictions fed so far.

        Examples
        --------
        >>> from htc_core.calibration import MetricState
        >>> state = MetricState().update([1, 0, 1], [0.9, 0.2, 0.6]).update([1, 0], [0.8, 0.6])
        >>> state.n
        5
        """
        return int(self.count.sum())

    def update(self, y_true, y_prob) -> "MetricState":
        """Add a chunk of outcomes (0/1) and confidences ([0, 1]); returns self.

        Parameters
        ----------
        y_true : array-like of shape (n,)
            0/1 outcomes.
        y_prob : array-like of shape (n,)
            Confidences in [0, 1].

        Returns
        -------
        MetricState
            This state, updated in place (so calls chain).

        Raises
        ------
        ValueError
            If the chunk is not valid outcomes and probabilities of the same length (as the metrics).

        Examples
        --------
        >>> from htc_core.calibration import MetricState
        >>> state = MetricState(n_bins=5)
        >>> state.update([1, 0, 1], [0.9, 0.2, 0.6]).count.tolist()
        [1.0, 0.0, 1.0, 0.0, 1.0]
        """
        y, p = check_metric_inputs(y_true, y_prob)
        b = np.searchsorted(np.linspace(0.0, 1.0, self.n_bins + 1)[1:-1], p)   # the metrics' uniform bins
        self.count += np.bincount(b, minlength=self.n_bins)
        self.sum_p += np.bincount(b, weights=p, minlength=self.n_bins)
        self.sum_y += np.bincount(b, weights=y, minlength=self.n_bins)
        self.sq_error += float(np.sum((p - y) ** 2))
        uniq, inv = np.unique(p, return_inverse=True)
        self._add_scores(uniq, np.bincount(inv, weights=y), np.bincount(inv, weights=1.0 - y))
        return self

    def _add_scores(self, scores: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> None:
        allv = np.concatenate([self.scores, scores])
        uniq, inv = np.unique(allv, return_inverse=True)
        self.pos = np.bincount(inv, weights=np.concatenate([self.pos, pos]), minlength=len(uniq))
        self.neg = np.bincount(inv, weights=np.concatenate([self.neg, neg]), minlength=len(uniq))
        self.scores = uniq

    def merge(self, other: "MetricState") -> "MetricState":
        """A new state holding both (states of disjoint chunks).

        Parameters
        ----------
        other : MetricState
            The state of another chunk, with the same ``n_bins``.

        Returns
        -------
        MetricState
            A new state; neither input is changed.

        Raises
        ------
        ValueError
            If ``other`` is not a MetricState with the same ``n_bins``.

        Examples
        --------
        >>> from htc_core.calibration import MetricState
        >>> a = MetricState().update([1, 0, 1], [0.9, 0.2, 0.6])
        >>> b = MetricState().update([1, 0], [0.8, 0.6])
        >>> a.merge(b).n, a.n, b.n
        (5, 3, 2)
        """
        if not isinstance(other, MetricState) or other.n_bins != self.n_bins:
            raise ValueError(f"can only merge a MetricState with n_bins={self.n_bins}, got {other!r}")
        out = MetricState(self.n_bins, self.count + other.count, self.sum_p + other.sum_p,
                          self.sum_y + other.sum_y, self.sq_error + other.sq_error,
                          self.scores.copy(), self.pos.copy(), self.neg.copy())
        out._add_scores(other.scores, other.pos, other.neg)
        return out

    def _need_rows(self) -> int:
        if self.n == 0:
            raise ValueError("the state holds no predictions yet")
        return self.n

    def expected_calibration_error(self) -> float:
        """Equal-width ECE of all predictions fed.

        Returns
        -------
        float
            As :func:`~htc_core.calibration.metrics.expected_calibration_error` with ``n_bins`` uniform bins.

        Raises
        ------
        ValueError
            If the state holds no predictions.

        Examples
        --------
        >>> from htc_core.calibration import MetricState
        >>> state = MetricState().update([1, 0, 1], [0.9, 0.2, 0.6]).update([1, 0], [0.8, 0.6])
        >>> round(state.expected_calibration_error(), 4)
        0.14
        """
        n = self._need_rows()
        return float(np.sum(np.abs(self.sum_p - self.sum_y)) / n)

    def brier_score(self) -> float:
        """Brier score of all predictions fed.

        Returns
        -------
        float
            Mean squared difference between confidence and outcome.

        Raises
        ------
        ValueError
            If the state holds no predictions.

        Examples
        --------
        >>> from htc_core.calibration import MetricState
        >>> state = MetricState().update([1, 0, 1], [0.9, 0.2, 0.6]).update([1, 0], [0.8, 0.6])
        >>> round(state.brier_score(), 4)
        0.122
        """
        return self.sq_error / self._need_rows()

    def auroc(self) -> float:
        """Probability that a success outranks a failure (ties one half); NaN when one class is missing.

        Unlike :func:`~htc_core.calibration.metrics.auroc`, no warning is issued for a single class.

        Returns
        -------
        float
            The exact AUROC of all predictions fed.

        Raises
        ------
        ValueError
            If the state holds no predictions.

        Examples
        --------
        >>> from htc_core.calibration import MetricState
        >>> state = MetricState().update([1, 0, 1], [0.9, 0.2, 0.6]).update([1, 0], [0.8, 0.6])
        >>> round(state.auroc(), 4)
        0.9167
        """
        self._need_rows()
        n_pos, n_neg = self.pos.sum(), self.neg.sum()
        if n_pos == 0 or n_neg == 0:
            return float("nan")
        neg_below = np.cumsum(self.neg) - self.neg
        return float(np.sum(self.pos * (neg_below + 0.5 * self.neg)) / (n_pos * n_neg))

    def to_dict(self) -> dict:
        """The number of predictions and the three metrics, as plain values.

        Returns
        -------
        dict
            ``n``, ``ece``, ``brier``, ``auroc``.

        Raises
        ------
        ValueError
            If the state holds no predictions.

        Examples
        --------
        >>> from htc_core.calibration import MetricState
        >>> state = MetricState().update([1, 0, 1], [0.9, 0.2, 0.6]).update([1, 0], [0.8, 0.6])
        >>> {k: round(v, 4) for k, v in state.to_dict().items()}
        {'n': 5, 'ece': 0.14, 'brier': 0.122, 'auroc': 0.9167}
        """
        return {"n": self.n, "ece": self.expected_calibration_error(), "brier": self.brier_score(),
                "auroc": self.auroc()}
