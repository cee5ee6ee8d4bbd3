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
    """Mergeable sufficient statistics of (outcome, confidence) pairs; see the module docstring."""

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
        return int(self.count.sum())

    def update(self, y_true, y_prob) -> "MetricState":
        """Add a chunk of outcomes (0/1) and confidences ([0, 1]); returns self."""
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
        """A new state holding both (states of disjoint chunks)."""
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
        n = self._need_rows()
        return float(np.sum(np.abs(self.sum_p - self.sum_y)) / n)

    def brier_score(self) -> float:
        return self.sq_error / self._need_rows()

    def auroc(self) -> float:
        """Probability that a success outranks a failure (ties one half); NaN when one class is missing."""
        self._need_rows()
        n_pos, n_neg = self.pos.sum(), self.neg.sum()
        if n_pos == 0 or n_neg == 0:
            return float("nan")
        neg_below = np.cumsum(self.neg) - self.neg
        return float(np.sum(self.pos * (neg_below + 0.5 * self.neg)) / (n_pos * n_neg))

    def to_dict(self) -> dict:
        return {"n": self.n, "ece": self.expected_calibration_error(), "brier": self.brier_score(),
                "auroc": self.auroc()}
