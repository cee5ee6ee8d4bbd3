"""Views of an evaluation by group, and one calibrator per group.

- :func:`reliability_curves`: one reliability curve per method (the metrics
  module's binning, so the diagram agrees with the ECE).
- :func:`group_metrics`, :func:`group_curves`: ECE, Brier, AUROC and
  reliability inside every group (model, framework, dataset).
- :func:`dataset_weights`: one HTC calibrator fitted per group, its weights.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..calibration.calibrators import DEFAULT_ALPHAS, HTCCalibrator
from ..calibration.metrics import ReliabilityCurve, auroc, brier_score, expected_calibration_error, reliability_curve
from ..features import FEATURE_NAMES
from .inputs import check_matrix, group_names

__all__ = ["reliability_curves", "group_metrics", "group_curves", "DatasetWeights", "dataset_weights"]

GROUP_METRIC_COLUMNS = ["group", "method", "n", "success_rate", "ece", "brier", "auroc", "note"]


def reliability_curves(labels, predictions: Mapping[str, np.ndarray], *, n_bins: int = 10,
                       interval: str | None = "wilson", strategy: str = "uniform") -> dict[str, ReliabilityCurve]:
    """One reliability curve per method, binned as the metrics module bins, so it agrees with the ECE.

    Parameters
    ----------
    labels : array-like of shape (n_runs,)
        1 success, 0 failure, NaN unlabeled (left out).
    predictions : mapping of str to array-like of shape (n_runs,)
        Confidences by method name; non-finite ones are left out.
    n_bins : int, default 10
        The number of bins.
    interval : str or None, default "wilson"
        The confidence interval of each bin's success rate (as
        :func:`~htc_core.calibration.metrics.reliability_curve`); None: none.
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width bins on [0, 1] or equal-mass bins, as the ECE of the same strategy.

    Returns
    -------
    dict of str to ReliabilityCurve
        By method; a method without a labeled, finite prediction is left out.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)           # calibrated by construction
    >>> from htc_core.explain.groups import reliability_curves
    >>> curves = reliability_curves(y, {"raw": p, "shifted": np.clip(p + 0.2, 0, 1)}, n_bins=5)
    >>> curves["raw"].count
    array([37, 33, 40, 35, 55])
    >>> round(curves["raw"].ece, 3), round(curves["shifted"].ece, 3)
    (0.041, 0.206)
    """
    y = np.asarray(labels, dtype=np.float64)
    out = {}
    for name, p in predictions.items():
        p = np.asarray(p, dtype=np.float64)
        ok = np.isfinite(p) & np.isfinite(y)
        if ok.sum() == 0:
            continue
        out[name] = reliability_curve(y[ok], p[ok], n_bins=n_bins, interval=interval, strategy=strategy)
    return out


def _metric_row(group: str, method: str, y: np.ndarray, p: np.ndarray) -> dict:
    """ECE, Brier and AUROC of one method on one group (AUROC NaN with a note when one outcome only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        met = {"ece": expected_calibration_error(y, p), "brier": brier_score(y, p), "auroc": auroc(y, p)}
    note = "AUROC undefined: one outcome only" if not np.isfinite(met["auroc"]) else ""
    return {"group": group, "method": method, "n": int(len(y)), "success_rate": float(y.mean()), **met, "note": note}


def group_metrics(labels, predictions: Mapping[str, np.ndarray], groups, *, n_boot: int = 0,
                  random_state=0, seed=None) -> pd.DataFrame:
    """ECE, Brier and AUROC of every method inside every group.

    Parameters
    ----------
    labels : array-like of shape (n_runs,)
        1 success, 0 failure, NaN unlabeled (left out).
    predictions : mapping of str to array-like of shape (n_runs,)
        Confidences by method name; non-finite ones are left out.
    groups : array-like of shape (n_runs,)
        Each run's group (model, framework, dataset, ...); a missing group is ``"(none)"``.
    n_boot : int, default 0
        With ``n_boot > 0``, also the 95% percentile bootstrap interval of each metric over ``n_boot``
        resamples of the group's runs (:func:`~htc_core.calibration.comparison.paired_metric_intervals`: one
        resample per group for all its metrics and every method scored on the same runs).
    random_state : int, numpy.random.Generator or None, default 0
        The bootstrap's randomness, as scikit-learn's ``random_state``.
    seed : int or None, default None
        Deprecated old name of ``random_state``.

    Returns
    -------
    pandas.DataFrame
        One row per group and method: group, method, n, success_rate, ece, brier, auroc, note (AUROC is NaN,
        with a note, when a group has one outcome only); with ``n_boot`` also ``ece_low``, ``ece_high``,
        ``brier_low``, ``brier_high``, ``auroc_low``, ``auroc_high``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)           # calibrated by construction
    >>> groups = np.where(np.arange(200) < 100, "facts", "lists")
    >>> from htc_core.explain.groups import group_metrics
    >>> group_metrics(y, {"raw": p}, groups).round(3)
       group method    n  success_rate    ece  brier  auroc note
    0  facts    raw  100          0.48  0.145  0.165  0.851
    1  lists    raw  100          0.53  0.067  0.142  0.879
    >>> with_intervals = group_metrics(y, {"raw": p}, groups, n_boot=50)
    >>> list(with_intervals.columns[-6:])
    ['ece_low', 'ece_high', 'brier_low', 'brier_high', 'auroc_low', 'auroc_high']
    """
    from ..calibration.bootstrap import renamed_seed

    random_state = renamed_seed(seed, random_state)
    y = np.asarray(labels, dtype=np.float64)
    g = group_names(groups)
    preds = {name: np.asarray(p, dtype=np.float64) for name, p in predictions.items()}
    rows = []
    for grp in sorted(set(g)):
        m = (g == grp) & np.isfinite(y)
        masks = {name: m & np.isfinite(p) for name, p in preds.items()}
        ivs = _group_intervals(y, preds, masks, n_boot, random_state) if n_boot else {}
        for name, p in preds.items():
            mm = masks[name]
            if mm.any():
                row = _metric_row(grp, name, y[mm], p[mm])
                for met in ("ece", "brier", "auroc") if n_boot else ():
                    row[f"{met}_low"], row[f"{met}_high"] = ivs[name][met][1], ivs[name][met][2]
                rows.append(row)
    extra = [f"{m}_{b}" for m in ("ece", "brier", "auroc") for b in ("low", "high")] if n_boot else []
    return pd.DataFrame(rows, columns=GROUP_METRIC_COLUMNS + extra)


def _group_intervals(y, preds: dict, masks: dict, n_boot: int, random_state) -> dict:
    """Bootstrap intervals of every method of one group: the methods scored on the same runs (the usual case)
    share one resample of them (:func:`~htc_core.calibration.comparison.paired_metric_intervals`)."""
    from ..calibration.comparison import paired_metric_intervals

    same_runs: dict[bytes, list[str]] = {}
    for name, mm in masks.items():
        if mm.any():
            same_runs.setdefault(np.packbits(mm).tobytes(), []).append(name)
    out = {}
    for names in same_runs.values():
        mm = masks[names[0]]
        out.update(paired_metric_intervals(y[mm], {n: preds[n][mm] for n in names}, n_boot=n_boot,
                                           random_state=random_state))
    return out


def group_curves(labels, prediction, groups, *, n_bins: int = 10) -> dict[str, ReliabilityCurve]:
    """One reliability curve of ``prediction`` per group.

    Parameters
    ----------
    labels : array-like of shape (n_runs,)
        1 success, 0 failure, NaN unlabeled (left out).
    prediction : array-like of shape (n_runs,)
        The confidences of one method.
    groups : array-like of shape (n_runs,)
        Each run's group; a missing group is ``"(none)"``.
    n_bins : int, default 10
        Equal-width bins of each curve.

    Returns
    -------
    dict of str to ReliabilityCurve
        By group, sorted; groups without a labeled, finite prediction are left out.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)           # calibrated by construction
    >>> groups = np.where(np.arange(200) < 100, "facts", "lists")
    >>> from htc_core.explain.groups import group_curves
    >>> curves = group_curves(y, p, groups, n_bins=5)
    >>> sorted(curves), curves["facts"].n, curves["facts"].count
    (['facts', 'lists'], 100, array([19, 15, 17, 22, 27]))
    """
    y = np.asarray(labels, dtype=np.float64)
    p = np.asarray(prediction, dtype=np.float64)
    g = group_names(groups)
    out = {}
    for grp in sorted(set(g)):
        m = (g == grp) & np.isfinite(y) & np.isfinite(p)
        if m.any():
            out[grp] = reliability_curve(y[m], p[m], n_bins=n_bins)
    return out


@dataclass
class DatasetWeights:
    """Weights of one HTC calibrator per group (made by :func:`dataset_weights`).

    Parameters
    ----------
    variant : str
        The calibrators' ``HTCCalibrator`` variant.
    weights : pandas.DataFrame
        One row per fitted group, one column per feature (the paper's names for the 48 features, ``x0``,
        ``x1``, ... otherwise).
    skipped : dict of str to str
        Why a group got no calibrator.
    fits : pandas.DataFrame or None, default None
        One row per fitted group (same index as ``weights``): n (labeled runs), successes, alpha (the
        regularization strength its inner CV chose; larger shrinks every weight toward zero).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.explain.groups import dataset_weights
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 3))
    >>> y = (X[:, 0] + rng.normal(size=120) > 0).astype(float)
    >>> groups = ["facts"] * 60 + ["lists"] * 54 + ["docs"] * 6
    >>> dw = dataset_weights(X, y, groups, alphas=(1.0,))
    >>> dw.variant, list(dw.weights.index), list(dw.skipped)
    ('full', ['facts', 'lists'], ['docs'])
    """

    variant: str
    weights: pd.DataFrame
    skipped: dict = field(default_factory=dict)
    fits: pd.DataFrame | None = None


def dataset_weights(X, labels, groups, *, variant: str = "full", min_per_class: int = 5,
                    alphas: Sequence[float] | None = None) -> DatasetWeights:
    """Fit one HTC calibrator per group (e.g. dataset) and collect the weights.

    Parameters
    ----------
    X : FeatureMatrix or array-like of shape (n_runs, n_features)
        The features.
    labels : array-like of shape (n_runs,)
        1 success, 0 failure, NaN unlabeled (left out).
    groups : array-like of shape (n_runs,)
        Each run's group; a missing group is ``"(none)"``.
    variant : str, default "full"
        The ``HTCCalibrator`` variant.
    min_per_class : int, default 5
        A group with fewer successes or failures is skipped (with the reason in ``skipped``).
    alphas : sequence of float or None, default None
        The regularization strengths the calibrators choose from; None: the calibrator's default.

    Returns
    -------
    DatasetWeights
        The weights by group and the skipped groups.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.explain.groups import dataset_weights
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 3))
    >>> y = (X[:, 0] + rng.normal(size=120) > 0).astype(float)
    >>> groups = ["facts"] * 60 + ["lists"] * 54 + ["docs"] * 6
    >>> dw = dataset_weights(X, y, groups, alphas=(1.0,))
    >>> dw.weights.round(2)
             x0    x1    x2
    facts  2.03 -0.21  0.15
    lists  1.82  0.57  0.21
    >>> dw.skipped["docs"]
    '4 successes and 2 failures; at least 5 of each are needed to fit a calibrator'
    >>> dw.fits
            n  successes  alpha
    facts  60         29    1.0
    lists  54         25    1.0
    """
    Xv = check_matrix(X)
    y = np.asarray(labels, dtype=np.float64)
    g = group_names(groups)
    rows, index, skipped, fits = [], [], {}, []
    for grp in sorted(set(g)):
        m = (g == grp) & np.isfinite(y)
        n_pos = int(y[m].sum())
        n_neg = int(m.sum()) - n_pos
        if min(n_pos, n_neg) < min_per_class:
            skipped[grp] = (f"{n_pos} successes and {n_neg} failures; at least {min_per_class} of each are "
                            "needed to fit a calibrator")
            continue
        cal = HTCCalibrator(variant=variant, alphas=alphas or DEFAULT_ALPHAS).fit(Xv[m], y[m])
        rows.append(cal.coef_[0])
        index.append(grp)
        fits.append({"n": int(m.sum()), "successes": n_pos, "alpha": float(cal.alpha_)})
    names = list(FEATURE_NAMES) if Xv.shape[1] == len(FEATURE_NAMES) else [f"x{i}" for i in range(Xv.shape[1])]
    w = pd.DataFrame(np.array(rows).reshape(len(rows), Xv.shape[1]), index=index, columns=names)
    return DatasetWeights(variant=variant, weights=w, skipped=skipped,
                          fits=pd.DataFrame(fits, index=index, columns=["n", "successes", "alpha"]))
