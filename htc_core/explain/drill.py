"""Which runs sit in a bin of a binned plot (reliability diagram, confidence histogram): the drill-down.

A plot shows counts; a user who clicks a bin wants the runs behind it. The bins come from the same rule
as the plotted statistics (``ReliabilityCurve.bin_of``: ``(edge_b, edge_b+1]``, the first bin closed, as
``metrics.bin_predictions``), so the runs listed for a bin are exactly the ``n`` the plot shows for it.
Positions index the arrays the bins were computed from (the evaluation's rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from ..calibration.metrics import ReliabilityCurve, reliability_curve

__all__ = ["BinnedRuns", "binned_runs", "reliability_members", "OUTCOMES"]

#: outcome names of the histogram's bars, by label value (NaN: unlabeled)
OUTCOMES = ("failure", "success", "unlabeled")


def _outcome_codes(labels: np.ndarray) -> np.ndarray:
    """0 failure, 1 success, 2 unlabeled (anything that is not 0 or 1)."""
    return np.where(labels == 1, 1, np.where(labels == 0, 0, 2))


@dataclass(frozen=True)
class BinnedRuns:
    """Runs assigned to the bins of one confidence array.

    ``bin_ids[i]``: run ``i``'s bin (-1: not binned, i.e. its confidence, or for a reliability curve its
    label, is missing); ``outcome[i]``: 0 failure, 1 success, 2 unlabeled; ``edges``: the bin edges.
    """

    name: str
    edges: np.ndarray
    bin_ids: np.ndarray
    outcome: np.ndarray
    confidence: np.ndarray

    @property
    def n_bins(self) -> int:
        return len(self.edges) - 1

    def _check_bin(self, b) -> int:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 0 <= b < self.n_bins:
            raise ValueError(f"b must be a bin index in 0..{self.n_bins - 1}, got {b!r}")
        return int(b)

    def members(self, b: int, outcome: str | None = None) -> np.ndarray:
        """Positions of the runs in bin ``b`` (of one outcome, ``"success"``/``"failure"``/``"unlabeled"``,
        or all), by increasing confidence."""
        b = self._check_bin(b)
        m = self.bin_ids == b
        if outcome is not None:
            if outcome not in OUTCOMES:
                raise ValueError(f"outcome must be one of {OUTCOMES} or None, got {outcome!r}")
            m &= self.outcome == OUTCOMES.index(outcome)
        pos = np.flatnonzero(m)
        return pos[np.argsort(self.confidence[pos], kind="stable")]

    def counts(self, outcome: str | None = None) -> np.ndarray:
        """Runs per bin (of one outcome, or all)."""
        m = self.bin_ids >= 0
        if outcome is not None:
            m &= self.outcome == OUTCOMES.index(outcome)
        return np.bincount(self.bin_ids[m], minlength=self.n_bins)

    def label(self, b: int) -> str:
        b = self._check_bin(b)
        lo, hi = self.edges[b], self.edges[b + 1]
        return f"{'[' if b == 0 else '('}{lo:.2f}, {hi:.2f}]"

    def to_frame(self) -> pd.DataFrame:
        """One row per bin: bin, label, lower, upper, n, successes, failures, unlabeled."""
        return pd.DataFrame({"bin": np.arange(self.n_bins), "label": [self.label(b) for b in range(self.n_bins)],
                             "lower": self.edges[:-1], "upper": self.edges[1:], "n": self.counts(),
                             "successes": self.counts("success"), "failures": self.counts("failure"),
                             "unlabeled": self.counts("unlabeled")})


def _check_arrays(confidence, labels) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(confidence, dtype=np.float64).reshape(-1)
    y = np.full(c.shape, np.nan) if labels is None else np.asarray(labels, dtype=np.float64).reshape(-1)
    if y.shape != c.shape:
        raise ValueError(f"labels must have one entry per confidence ({c.size}), got {y.size}")
    return c, y


def binned_runs(confidence, labels=None, *, n_bins: int = 20, name: str = "") -> BinnedRuns:
    """Equal-width bins on [0, 1] of ``confidence`` (a histogram's bars, split by outcome): every run with a
    finite confidence is binned, labeled or not."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    c, y = _check_arrays(confidence, labels)
    edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
    ids = np.searchsorted(edges[1:-1], np.clip(c, 0.0, 1.0))
    ids = np.where(np.isfinite(c), ids, -1)
    return BinnedRuns(name=name, edges=edges, bin_ids=ids, outcome=_outcome_codes(y), confidence=c)


def reliability_members(labels, predictions: Mapping[str, np.ndarray],
                        curves: Mapping[str, ReliabilityCurve] | None = None, *,
                        n_bins: int = 10) -> dict[str, BinnedRuns]:
    """For each method, the runs behind each bin of its reliability curve (``curves`` as returned by
    ``reliability_curves(labels, predictions)``; computed here when not given). Runs without a label or a
    finite prediction are in no bin, as in the curve; ``counts()`` equals the curve's ``count``."""
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    out = {}
    for name, p in predictions.items():
        c, _ = _check_arrays(p, y)
        ok = np.isfinite(c) & np.isfinite(y)
        curve = (curves or {}).get(name)
        if curve is None:
            if not ok.any():
                continue
            curve = reliability_curve(y[ok], c[ok], n_bins=n_bins, interval=None)
        ids = np.where(ok, curve.bin_of(np.where(ok, c, 0.0)), -1)
        out[name] = BinnedRuns(name=name, edges=np.asarray(curve.edges), bin_ids=ids, outcome=_outcome_codes(y),
                               confidence=c)
    return out
