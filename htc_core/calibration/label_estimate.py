"""What the labels so far say about the adapted model: its ECE and AUROC from partial labels, and when to stop.

The labeling loop (:mod:`htc_core.calibration.active`: the Label page, ``htc label next``) scores each labeled run
out of fold (:func:`~htc_core.calibration.active.out_of_fold`: the prior adapted to the *other* labeled runs).
:func:`estimate` gives ECE and AUROC of those confidences with a bootstrap interval over the labeled runs, the ECE
corrected for the noise of the labels (an ECE measured on 30 runs is about 0.18 for a perfectly calibrated model;
``debias=False``: the plain one), weighted when the labels were drawn unevenly
(:func:`~htc_core.calibration.active.label_weights`); :func:`binned_ece` is the ECE of many resamples at once and
:func:`weighted_metrics` the weighted ECE and AUROC of one sample; :func:`stop_suggestion` says when the ECE
interval is narrow enough. Measured in docs/labeling.md.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .metrics import auroc

__all__ = ["estimate", "Estimate", "stop_suggestion", "weighted_metrics", "binned_ece", "NOISE_SIMULATIONS"]

# simulated outcome draws behind the noise correction of :func:`estimate`'s ECE
NOISE_SIMULATIONS = 40


@dataclass
class Estimate:
    """ECE and AUROC of the adapted model on the labels so far (out-of-fold), with bootstrap intervals.

    Made by :func:`estimate`.

    Parameters
    ----------
    n : int
        Labeled runs measured.
    ece, ece_low, ece_high : float
        The ECE and its interval.
    auroc, auroc_low, auroc_high : float
        The AUROC and its interval.
    oof : ndarray of shape (n_runs,)
        The out-of-fold confidences (NaN where unlabeled).
    debiased : bool, default=False
        Whether the ECE and its interval are corrected for the noise of the labels (:func:`estimate`).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.label_estimate import Estimate
    >>> est = Estimate(30, 0.08, 0.05, 0.14, 0.8, 0.7, 0.9, np.zeros(30))
    >>> round(est.ece_width, 2)
    0.09
    """

    n: int
    ece: float
    ece_low: float
    ece_high: float
    auroc: float
    auroc_low: float
    auroc_high: float
    oof: np.ndarray
    debiased: bool = False

    @property
    def ece_width(self) -> float:
        """The width of the ECE interval (what :func:`stop_suggestion` compares with its target).

        Returns
        -------
        float
            ``ece_high - ece_low`` (NaN with fewer than 2 labels).

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.label_estimate import Estimate
        >>> Estimate(30, 0.08, 0.05, 0.14, 0.8, 0.7, 0.9, np.zeros(30)).ece_width
        0.09...
        """
        return float(self.ece_high - self.ece_low)

    def to_dict(self) -> dict:
        """The estimate as a JSON object (NaN as None; the out-of-fold confidences left out).

        Returns
        -------
        dict
            ``n``, ``ece``, ``ece_low``, ``ece_high``, ``auroc``, ``auroc_low`` and ``auroc_high``.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.label_estimate import Estimate
        >>> Estimate(1, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.zeros(1)).to_dict()["ece"] is None
        True
        """
        return {k: (None if not np.isfinite(v) else float(v)) if isinstance(v, float) else v
                for k, v in self.__dict__.items() if k != "oof"}


def estimate(y, oof, *, n_boot: int = 200, random_state=42, level: float = 0.9, seed=None,
             weights=None, debias: bool = True, n_sim: int = NOISE_SIMULATIONS) -> Estimate:
    """ECE and AUROC of out-of-fold confidences ``oof`` on labels ``y`` (both NaN where unlabeled), with a
    percentile bootstrap interval (``level``) over the labeled runs: both metrics from the same resamples
    (HTC's one bootstrap engine, :func:`~htc_core.calibration.bootstrap.percentile_intervals`; resamples with
    one outcome are left out of the AUROC's).

    **Debiased ECE** (``debias=True``, the default: the Label page, ``htc label``, the benchmark). An ECE measured
    on few runs is biased upward by the noise of the outcomes alone: a perfectly calibrated model scores about 0.18
    on 30 runs (10 bins). The ECE shown is the measured one minus the ECE that sampling noise alone gives on the
    same runs, simulated by drawing outcomes ``y* ~ Bernoulli(oof)`` from the confidences themselves (the mean over
    ``n_sim`` draws), floored at 0; every bootstrap resample is corrected the same way (the simulated outcomes
    resampled with the runs), so the interval is that of the corrected ECE. Measured in docs/labeling.md: the
    plain interval held the adapted model's ECE on held-out runs in 22-60% of draws, the corrected one in about
    the nominal share. ``debias=False`` gives the plain ECE of the labeled runs and its percentile interval.

    Parameters
    ----------
    y : array-like of shape (n_runs,)
        Labels, NaN where unlabeled.
    oof : array-like of shape (n_runs,)
        Out-of-fold confidences (:func:`~htc_core.calibration.active.out_of_fold`), NaN where unlabeled.
    n_boot : int, default=200
        Bootstrap resamples.
    random_state : int, default=42
        Seed of the resamples (and of the simulated outcomes).
    level : float, default=0.9
        Level of the intervals.
    seed : int, optional
        The deprecated old name of ``random_state``.
    weights : array-like of shape (n_runs,), optional
        Each labeled run's weight (:func:`~htc_core.calibration.active.label_weights`): the ECE and AUROC of every
        run, estimated from labels drawn unevenly (a weighted ECE, ``sum over bins |sum w (y - p)| / sum w``, and a
        weighted AUROC; each resample carries its runs' weights). None: every label counts once.
    debias : bool, default=True
        Subtract the ECE expected from the noise of the labels alone (above); False: the plain ECE.
    n_sim : int, default=NOISE_SIMULATIONS
        Simulated outcome draws behind that correction.

    Returns
    -------
    Estimate
        ECE and AUROC with their intervals (NaN below 2 labeled runs).

    Examples
    --------
    >>> from htc_core.calibration.label_estimate import estimate
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(60) < 0.6).astype(float)
    >>> oof = np.clip(0.6 + 0.3 * (y - 0.6) + 0.1 * rng.normal(size=60), 0.01, 0.99)
    >>> est = estimate(y, oof, n_boot=100)
    >>> est.n, bool(est.ece_low <= est.ece <= est.ece_high), bool(est.auroc > 0.5), est.debiased
    (60, True, True, True)
    >>> plain = estimate(y, oof, n_boot=100, debias=False)
    >>> bool(plain.ece > est.ece)                 # the plain ECE carries the noise of 60 labels
    True
    """
    from .bootstrap import check_resampling, percentile_intervals, renamed_seed
    from .metrics import bin_predictions

    n_boot, level = check_resampling(n_boot, level)
    random_state = renamed_seed(seed, random_state)
    if isinstance(n_sim, bool) or not isinstance(n_sim, (int, np.integer)) or n_sim < 1:
        raise ValueError(f"n_sim must be a positive integer, got {n_sim!r}")
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(oof, dtype=np.float64)
    m = np.isfinite(y) & np.isfinite(p)
    yy, pp = y[m], p[m]
    ww = np.ones(len(yy)) if weights is None else np.asarray(weights, dtype=np.float64)[m]
    nan = float("nan")
    if len(yy) < 2:
        return Estimate(len(yy), nan, nan, nan, nan, nan, nan, p, debiased=bool(debias))
    bins = bin_predictions(yy, pp).bin_ids
    sim = (np.random.default_rng(random_state).random((int(n_sim), len(yy))) < pp).astype(np.float64)

    def stat(idx):
        y_, p_, w_, b_ = yy[idx], pp[idx], ww[idx], bins[idx]
        ece = binned_ece(y_, p_, w_, b_)
        rows = [binned_ece(y_, p_, w_, b_, per_bin_debias=True), np.maximum(
            ece - np.mean([binned_ece(draw[idx], p_, w_, b_) for draw in sim], axis=0), 0.0)] if debias else [ece, ece]
        if weights is not None:
            return np.array(rows + [[weighted_metrics(yy[d], pp[d], ww[d])[1] for d in idx]])
        return np.array(rows + [[auroc(yy[d], pp[d]) for d in idx]])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = percentile_intervals(stat, (len(yy),), n_boot=n_boot, level=level, random_state=random_state)
    point, _, high = iv.triple(0)
    low = min(iv.triple(1)[1], iv.triple(0)[1])
    return Estimate(len(yy), point, low, high, *iv.triple(2), p, debiased=bool(debias))


def binned_ece(y, p, w, bins, n_bins: int = 10, *, per_bin_debias: bool = False) -> np.ndarray:
    """The (weighted) ECE of every row at once: ``sum over bins |sum w (y - p)| / sum w`` along the last axis.

    The bins are given (``bin_predictions(...).bin_ids``, the same equal-width bins as
    :func:`~htc_core.calibration.metrics.expected_calibration_error`), so rows that share runs (bootstrap
    resamples, simulated outcomes) share their bins.

    Parameters
    ----------
    y : ndarray of shape (..., n)
        Outcomes (0/1); may have more leading axes than the others (they broadcast).
    p, w : ndarray of shape (..., n)
        Confidences and weights.
    bins : ndarray of int, shape (..., n)
        Every run's bin, in ``[0, n_bins)``.
    n_bins : int, default=10
        Number of bins.
    per_bin_debias : bool, default=False
        Correct every bin's gap for the noise of its outcomes had the model been calibrated there:
        ``sqrt(max(0, gap^2 - sum w^2 p (1 - p)))`` (what :func:`estimate` shows).

    Returns
    -------
    ndarray of shape y.shape[:-1]
        The ECE of every row.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.label_estimate import binned_ece
    >>> y, p = np.array([1.0, 0, 1, 1]), np.array([0.9, 0.2, 0.6, 0.8])
    >>> round(float(binned_ece(y, p, np.ones(4), np.array([8, 1, 5, 7]))), 4)
    0.225
    """
    y, p, w, bins = np.broadcast_arrays(np.asarray(y, float), np.asarray(p, float), np.asarray(w, float),
                                        np.asarray(bins))
    lead, n = y.shape[:-1], y.shape[-1]
    rows = int(np.prod(lead)) if lead else 1
    idx = (np.arange(rows)[:, None] * n_bins + bins.reshape(rows, n)).ravel()
    gap = np.abs(np.bincount(idx, weights=(w * (y - p)).reshape(-1), minlength=rows * n_bins).reshape(rows, n_bins))
    if per_bin_debias:
        var = np.bincount(idx, weights=(w * w * p * (1 - p)).reshape(-1), minlength=rows * n_bins)
        gap = np.sqrt(np.maximum(gap ** 2 - var.reshape(rows, n_bins), 0.0))
    return (gap.sum(axis=1) / w.reshape(rows, n).sum(axis=1)).reshape(lead)


def weighted_metrics(y, p, w) -> tuple[float, float]:
    """(ECE, AUROC) of confidences ``p`` on outcomes ``y``, each run counted ``w`` times: the ECE over the same 10
    equal-width bins as :func:`~htc_core.calibration.metrics.expected_calibration_error` (``sum over bins
    |sum w (y - p)| / sum w``), the AUROC with every pair weighted ``w_i w_j`` (NaN with one outcome). Equal
    weights give the unweighted metrics.

    Parameters
    ----------
    y, p, w : ndarray of shape (n,)
        Outcomes (0/1), confidences, positive weights.

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.label_estimate import weighted_metrics
    >>> y, p = np.array([1.0, 0, 1, 1]), np.array([0.9, 0.2, 0.6, 0.8])
    >>> [round(v, 4) for v in weighted_metrics(y, p, np.ones(4))]
    [0.225, 1.0]
    """
    from sklearn.metrics import roc_auc_score

    from .metrics import bin_predictions

    b = bin_predictions(y, p).bin_ids
    gap = np.bincount(b, weights=w * (y - p), minlength=10)
    ece = float(np.abs(gap).sum() / w.sum())
    return ece, float(roc_auc_score(y, p, sample_weight=w)) if 0 < y.sum() < len(y) else float("nan")


def stop_suggestion(est: Estimate, *, width: float = 0.05, ece_below: float | None = 0.10,
                    min_labels: int = 20) -> str:
    """A sentence: keep labeling, or enough labels (the ECE known within ``width``, or below ``ece_below``).

    The interval is the estimate's (:func:`estimate`): with ``debias`` (the page's), that of the ECE corrected for
    the noise of the labels, whose 90% interval held the adapted model's ECE on held-out runs in at least the
    nominal share of draws (docs/labeling.md); the sentence names which ECE it is. Two ways to be done: the
    interval is narrower than ``width`` (the ECE is known), or its upper end is below ``ece_below`` (whatever the
    exact value, the model is calibrated that well). The second is the one a few dozen labels can reach: an
    honest interval of a 10-bin ECE stays wider than 0.05 up to about 200 labels.

    Parameters
    ----------
    est : Estimate
        The current estimate.
    width : float, default=0.05
        The target width of the ECE interval.
    ece_below : float or None, default=0.10
        Enough labels as soon as the interval's upper end is at most this; None: only the width counts.
    min_labels : int, default=20
        Labels needed before the interval is trusted at all.

    Returns
    -------
    str
        Starts with "keep labeling" or "enough labels".

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.label_estimate import Estimate, stop_suggestion
    >>> est = Estimate(40, 0.08, 0.05, 0.14, 0.8, 0.7, 0.9, np.zeros(40), debiased=True)
    >>> print(stop_suggestion(est))  # doctest: +NORMALIZE_WHITESPACE
    keep labeling: the interval of the ECE (corrected for the noise of 40 labels) is 0.050-0.140 after 40 labels
    (done when it is narrower than 0.05 or its upper end is below 0.1)
    >>> print(stop_suggestion(est, width=0.1))  # doctest: +NORMALIZE_WHITESPACE
    enough labels: the interval of the ECE (corrected for the noise of 40 labels) is 0.090 wide (narrower than 0.1)
    after 40 labels
    >>> low = Estimate(100, 0.02, 0.0, 0.072, 0.8, 0.7, 0.9, np.zeros(100), debiased=True)
    >>> print(stop_suggestion(low))  # doctest: +NORMALIZE_WHITESPACE
    enough labels: the ECE (corrected for the noise of 100 labels) is at most 0.072 (90% interval 0.000-0.072,
    below 0.1) after 100 labels
    """
    if est.n < min_labels or not np.isfinite(est.ece_width):
        return f"keep labeling: {est.n} labels so far; the estimate needs at least {min_labels}"
    noise = f"(corrected for the noise of {est.n} labels)" if est.debiased else ""
    what = f"the interval of the ECE {noise}" if est.debiased else "the interval of the plain ECE"
    if est.ece_width <= width:
        return f"enough labels: {what} is {est.ece_width:.3f} wide (narrower than {width:g}) after {est.n} labels"
    if ece_below is not None and est.ece_high <= ece_below:
        ece = f"the ECE {noise}" if est.debiased else "the plain ECE"
        return (f"enough labels: {ece} is at most {est.ece_high:.3f} (90% interval {est.ece_low:.3f}-"
                f"{est.ece_high:.3f}, below {ece_below:g}) after {est.n} labels")
    done = f"narrower than {width:g}" + (f" or its upper end is below {ece_below:g}" if ece_below is not None else "")
    return (f"keep labeling: {what} is {est.ece_low:.3f}-{est.ece_high:.3f} after {est.n} labels "
            f"(done when it is {done})")
