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
    """One reliability curve per method (the metrics module's binning, so it agrees with the ECE of the same
    ``strategy``: "uniform" = equal-width bins on [0, 1], "quantile" = equal-mass bins)."""
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
    """ECE, Brier and AUROC of every method inside every group (AUROC NaN with one class).

    Columns: group, method, n, success_rate, ece, brier, auroc, note; with ``n_boot`` > 0 also the 95%
    percentile bootstrap interval of each metric over ``n_boot`` resamples of the group's runs
    (``ece_low``, ``ece_high``, ``brier_low``, ... from ``calibration.comparison.metric_intervals``; one
    resample per group and method for all its metrics; ``random_state`` as scikit-learn's, ``seed`` its
    deprecated old name).
    """
    from ..calibration.bootstrap import renamed_seed
    from ..calibration.comparison import metric_intervals

    random_state = renamed_seed(seed, random_state)
    y = np.asarray(labels, dtype=np.float64)
    g = group_names(groups)
    preds = {name: np.asarray(p, dtype=np.float64) for name, p in predictions.items()}
    rows = []
    for grp in sorted(set(g)):
        m = (g == grp) & np.isfinite(y)
        for name, p in preds.items():
            mm = m & np.isfinite(p)
            if mm.any():
                row = _metric_row(grp, name, y[mm], p[mm])
                if n_boot:
                    iv = metric_intervals(y[mm], p[mm], n_boot=n_boot, random_state=random_state)
                    for met in ("ece", "brier", "auroc"):
                        row[f"{met}_low"], row[f"{met}_high"] = iv[met][1], iv[met][2]
                rows.append(row)
    extra = [f"{m}_{b}" for m in ("ece", "brier", "auroc") for b in ("low", "high")] if n_boot else []
    return pd.DataFrame(rows, columns=GROUP_METRIC_COLUMNS + extra)


def group_curves(labels, prediction, groups, *, n_bins: int = 10) -> dict[str, ReliabilityCurve]:
    """One reliability curve of ``prediction`` per group (groups without a labeled prediction left out)."""
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
    """Weights of one calibrator per group: ``weights`` [groups x features] and why groups were skipped."""

    variant: str
    weights: pd.DataFrame
    skipped: dict = field(default_factory=dict)


def dataset_weights(X, labels, groups, *, variant: str = "full", min_per_class: int = 5,
                    alphas: Sequence[float] | None = None) -> DatasetWeights:
    """Fit one HTC calibrator per group (e.g. dataset) and collect the weights."""
    Xv = check_matrix(X)
    y = np.asarray(labels, dtype=np.float64)
    g = group_names(groups)
    rows, index, skipped = [], [], {}
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
    names = list(FEATURE_NAMES) if Xv.shape[1] == len(FEATURE_NAMES) else [f"x{i}" for i in range(Xv.shape[1])]
    w = pd.DataFrame(np.array(rows).reshape(len(rows), Xv.shape[1]), index=index, columns=names)
    return DatasetWeights(variant=variant, weights=w, skipped=skipped)
