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

# outcome names of the histogram's bars, by label value (NaN: unlabeled)
OUTCOMES = ("failure", "success", "unlabeled")


def _outcome_codes(labels: np.ndarray) -> np.ndarray:
    """0 failure, 1 success, 2 unlabeled (anything that is not 0 or 1)."""
    return np.where(labels == 1, 1, np.where(labels == 0, 0, 2))


@dataclass(frozen=True)
class BinnedRuns:
    """Runs assigned to the bins of one confidence array.

    Made by :func:`binned_runs` (a histogram's bins) or :func:`reliability_members` (a reliability curve's).

    Parameters
    ----------
    name : str
        The method whose confidences were binned (a plot's trace name).
    edges : numpy.ndarray
        The ``n_bins + 1`` bin edges, increasing.
    bin_ids : numpy.ndarray of int
        ``bin_ids[i]``: run ``i``'s bin; -1 when it is not binned (its confidence, or for a reliability curve
        its label, is missing).
    outcome : numpy.ndarray of int
        ``outcome[i]``: 0 failure, 1 success, 2 unlabeled (the index into ``OUTCOMES``).
    confidence : numpy.ndarray of float
        The binned confidences, one per run.

    Examples
    --------
    >>> from htc_core.explain.drill import binned_runs
    >>> bins = binned_runs([0.05, 0.42, 0.48, 0.9], [0, 1, 0, 1], n_bins=4, name="HTC")
    >>> bins.name, bins.n_bins
    ('HTC', 4)
    >>> bins.bin_ids
    array([0, 1, 1, 3])
    """

    name: str
    edges: np.ndarray
    bin_ids: np.ndarray
    outcome: np.ndarray
    confidence: np.ndarray

    @property
    def n_bins(self) -> int:
        """The number of bins (one less than the number of edges).

        Returns
        -------
        int
            ``len(edges) - 1``.

        Examples
        --------
        >>> from htc_core.explain.drill import binned_runs
        >>> binned_runs([0.2, 0.7], n_bins=5).n_bins
        5
        """
        return len(self.edges) - 1

    def _check_bin(self, b) -> int:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 0 <= b < self.n_bins:
            raise ValueError(f"b must be a bin index in 0..{self.n_bins - 1}, got {b!r}")
        return int(b)

    def members(self, b: int, outcome: str | None = None) -> np.ndarray:
        """Positions of the runs in bin ``b``, by increasing confidence.

        Parameters
        ----------
        b : int
            The bin index, ``0 <= b < n_bins``.
        outcome : {"success", "failure", "unlabeled"} or None, default None
            Only the runs of this outcome; None: all runs of the bin.

        Returns
        -------
        numpy.ndarray of int
            Positions into the arrays the bins were computed from.

        Raises
        ------
        ValueError
            If ``b`` is not a bin index or ``outcome`` is not one of ``OUTCOMES``.

        Examples
        --------
        >>> from htc_core.explain.drill import binned_runs
        >>> bins = binned_runs([0.05, 0.48, 0.42, 0.9], [0, 0, 1, 1], n_bins=4)
        >>> bins.members(1)
        array([2, 1])
        >>> bins.members(1, "success")
        array([2])
        """
        b = self._check_bin(b)
        m = self.bin_ids == b
        if outcome is not None:
            if outcome not in OUTCOMES:
                raise ValueError(f"outcome must be one of {OUTCOMES} or None, got {outcome!r}")
            m &= self.outcome == OUTCOMES.index(outcome)
        pos = np.flatnonzero(m)
        return pos[np.argsort(self.confidence[pos], kind="stable")]

    def counts(self, outcome: str | None = None) -> np.ndarray:
        """Runs per bin.

        Parameters
        ----------
        outcome : {"success", "failure", "unlabeled"} or None, default None
            Count only the runs of this outcome; None: all binned runs.

        Returns
        -------
        numpy.ndarray of int
            One count per bin.

        Examples
        --------
        >>> from htc_core.explain.drill import binned_runs
        >>> bins = binned_runs([0.05, 0.42, 0.48, 0.9], [0, 1, 0, 1], n_bins=4)
        >>> bins.counts()
        array([1, 2, 0, 1])
        >>> bins.counts("failure")
        array([1, 1, 0, 0])
        """
        m = self.bin_ids >= 0
        if outcome is not None:
            m &= self.outcome == OUTCOMES.index(outcome)
        return np.bincount(self.bin_ids[m], minlength=self.n_bins)

    def label(self, b: int) -> str:
        """The interval of bin ``b`` as text: ``(lower, upper]``, the first bin closed on the left.

        Parameters
        ----------
        b : int
            The bin index, ``0 <= b < n_bins``.

        Returns
        -------
        str
            The interval with two decimals.

        Examples
        --------
        >>> from htc_core.explain.drill import binned_runs
        >>> bins = binned_runs([0.3], n_bins=4)
        >>> bins.label(0), bins.label(1)
        ('[0.00, 0.25]', '(0.25, 0.50]')
        """
        b = self._check_bin(b)
        lo, hi = self.edges[b], self.edges[b + 1]
        return f"{'[' if b == 0 else '('}{lo:.2f}, {hi:.2f}]"

    def to_frame(self) -> pd.DataFrame:
        """One row per bin: the bin's interval and its runs by outcome.

        Returns
        -------
        pandas.DataFrame
            Columns ``bin``, ``label``, ``lower``, ``upper``, ``n``, ``successes``, ``failures``,
            ``unlabeled``.

        Examples
        --------
        >>> from htc_core.explain.drill import binned_runs
        >>> binned_runs([0.05, 0.42, 0.48, 0.9], [0, 1, 0, 1], n_bins=4).to_frame()
           bin         label  lower  upper  n  successes  failures  unlabeled
        0    0  [0.00, 0.25]   0.00   0.25  1          0         1          0
        1    1  (0.25, 0.50]   0.25   0.50  2          1         1          0
        2    2  (0.50, 0.75]   0.50   0.75  0          0         0          0
        3    3  (0.75, 1.00]   0.75   1.00  1          1         0          0
        """
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
    """Equal-width bins on [0, 1] of ``confidence``: a confidence histogram's bars, split by outcome.

    Every run with a finite confidence is binned, labeled or not; a confidence outside [0, 1] goes to the
    first or last bin.

    Parameters
    ----------
    confidence : array-like of shape (n_runs,)
        The confidences.
    labels : array-like of shape (n_runs,) or None, default None
        1 success, 0 failure, anything else (NaN) unlabeled; None: every run unlabeled.
    n_bins : int, default 20
        The number of equal-width bins.
    name : str, default ""
        The method's name, kept in the result.

    Returns
    -------
    BinnedRuns
        The runs of each bin.

    Raises
    ------
    ValueError
        If ``n_bins`` is not a positive integer or ``labels`` has another length than ``confidence``.

    Examples
    --------
    >>> from htc_core.explain.drill import binned_runs
    >>> bins = binned_runs([0.05, 0.42, 0.48, 0.9, float("nan")], [0, 1, 0, 1, 1], n_bins=4)
    >>> bins.counts(), bins.members(1)
    (array([1, 2, 0, 1]), array([1, 2]))
    """
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
    """For each method, the runs behind each bin of its reliability curve.

    Runs without a label or a finite prediction are in no bin, as in the curve, so ``counts()`` equals the
    curve's ``count``.

    Parameters
    ----------
    labels : array-like of shape (n_runs,)
        1 success, 0 failure, NaN unlabeled.
    predictions : mapping of str to array-like of shape (n_runs,)
        Confidences by method name.
    curves : mapping of str to ReliabilityCurve or None, default None
        The plotted curves (as :func:`htc_core.explain.groups.reliability_curves` returns them); a method's
        curve is computed here when it is not given.
    n_bins : int, default 10
        Bins of the curves computed here.

    Returns
    -------
    dict of str to BinnedRuns
        By method name; a method with no labeled, finite prediction is left out.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.explain.drill import reliability_members
    >>> members = reliability_members([0, 1, 0, 1, 1], {"raw": np.array([0.1, 0.8, 0.3, 0.7, np.nan])},
    ...                               n_bins=2)
    >>> members["raw"].counts(), members["raw"].members(1)
    (array([2, 2]), array([3, 1]))
    """
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
