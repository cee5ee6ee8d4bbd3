"""What the cross-group experiments share (transfer, GAC leave-one-group-out): runs split into groups by a
metadata column, the features computed once, DirectTrain (the honest nested CV of one group) and the
guarded fit on the rows of some groups only.

Features are per trajectory (nothing is pooled across runs at extraction), so extracting them once for all
groups leaks nothing; the scaler and the alpha selection live inside each fit and see only its rows.
:func:`fit_rows` refuses a training index that holds a row of a forbidden (target / held-out) group, so a
protocol error fails loudly instead of leaking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..calibration.evaluation import EvaluationError, evaluate, label_problem, seed_list
from ..calibration.general import has_alternatives
from ..calibration.metrics import fast_auroc, fast_brier, fast_ece
from ..calibration.results import METRICS
from ..calibration.solvers import DEFAULT_ALPHAS
from .group_keys import GROUP_KEYS

__all__ = ["GROUP_KEYS", "GroupedData", "grouped_data", "has_alternatives", "fit_rows", "direct_train",
           "score_metrics", "mean_std", "seed_list",
           "finite_or_none"]

UNKNOWN_GROUP = "(unknown)"
VARIANT_NAMES = {"full": "HTC-Full", "reduced": "HTC-Reduced"}


@dataclass
class GroupedData:
    """Labeled runs of a TraceSet with their group and features (one feature matrix per profile asked for)."""

    by: str
    y: np.ndarray
    groups: np.ndarray                 # group name per run
    names: list                        # the usable groups, in sorted order
    n_runs: dict                       # group -> runs (usable groups only)
    positive_rate: dict                # group -> success rate
    features: dict                     # profile -> [n, 48]
    alternatives: np.ndarray           # bool per run: carries top-k alternatives
    feature_names: list
    top_k: int
    ids: np.ndarray
    meta: object = None
    notes: list = field(default_factory=list)

    def rows(self, group: str) -> np.ndarray:
        return np.flatnonzero(self.groups == group)


def finite_or_none(x) -> float | None:
    """``x`` as a float for a JSON result file, or None where it is missing or not finite."""
    return None if x is None or not np.isfinite(x) else float(x)


def grouped_data(ts, *, by: str, profiles: Sequence[str] = ("paper",), top_k: int = 5,
                 min_groups: int = 2, what: str = "this experiment") -> GroupedData:
    """Validate ``ts`` and ``by``, drop unlabeled runs and groups whose labels cannot be evaluated (each with a
    note), and compute the features once per profile."""
    from ..features import extract
    from ..traces import TraceSet

    if not isinstance(ts, TraceSet):
        raise ValueError(f"data must be a TraceSet (the runs with their {by} metadata), got {type(ts).__name__}")
    if by not in GROUP_KEYS:
        raise ValueError(f"by must be one of {GROUP_KEYS}, got {by!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer, got {top_k!r}")
    notes: list[str] = []
    y_all = ts.labels
    n_unlab = int(np.isnan(y_all).sum())
    if n_unlab:
        notes.append(f"{n_unlab} unlabeled runs left out")
        ts = ts.labeled()
    col = ts.meta[by] if by in ts.meta.columns else None
    groups = np.array([UNKNOWN_GROUP if v is None or v != v or str(v) == "" else str(v)
                       for v in (col if col is not None else [None] * len(ts))], dtype=object)
    y = ts.labels
    keep = []
    for g in sorted(set(groups)):
        why = label_problem(y[groups == g])
        if why:
            notes.append(f"{by} {g!r} left out: {why}")
        else:
            keep.append(g)
    if len(keep) < min_groups:
        raise EvaluationError(f"cannot run {what}: it needs at least {min_groups} {by} groups with evaluable labels, "
                              f"got {len(keep)} ({', '.join(repr(g) for g in keep) or 'none'})"
                              + ("; " + "; ".join(notes) if notes else ""))
    mask = np.isin(groups, keep)
    if not mask.all():
        ts, groups, y = ts.filter(mask), groups[mask], y[mask]
    features, names = {}, []
    for p in dict.fromkeys(profiles):
        fm = extract(ts, profile=p, top_k=int(top_k))
        features[p], names = fm.values, list(fm.names)
    return GroupedData(by=by, y=y, groups=groups, names=keep, n_runs={g: int((groups == g).sum()) for g in keep},
                       positive_rate={g: float(y[groups == g].mean()) for g in keep}, features=features,
                       alternatives=has_alternatives(ts), feature_names=names, top_k=int(top_k), ids=ts.ids,
                       meta=ts.meta, notes=notes)


def fit_rows(data: GroupedData, profile: str, variant: str, rows: np.ndarray, *, forbidden: Sequence[str],
             seed: int, alphas=DEFAULT_ALPHAS, inner_folds: int = 5, max_iter: int = 1000):
    """An :class:`HTCCalibrator` fitted on ``rows`` only; a row of a ``forbidden`` group is a protocol error."""
    from ..calibration.calibrators import HTCCalibrator

    leaked = np.isin(data.groups[rows], list(forbidden))
    if leaked.any():
        raise RuntimeError(f"protocol violation: {int(leaked.sum())} training rows belong to the evaluated "
                           f"group(s) {list(forbidden)}")
    cal = HTCCalibrator(variant=variant, alphas=alphas, inner_folds=inner_folds, random_state=seed,
                        max_iter=max_iter, profile=profile, top_k=data.top_k)
    return cal.fit(data.features[profile][rows], data.y[rows], feature_names=data.feature_names,
                   meta=data.meta.iloc[rows] if data.meta is not None else None)


def score_metrics(y: np.ndarray, p: np.ndarray) -> dict:
    P = np.asarray(p, dtype=np.float64)[None, :]
    return {"ece": float(fast_ece(y, P)[0]), "brier": float(fast_brier(y, P)[0]), "auroc": float(fast_auroc(y, P)[0])}


def mean_std(values) -> dict:
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0}


def direct_train(data: GroupedData, group: str, variants: Sequence[str], *, seeds: list[int], profile: str = "paper",
                 n_splits: int = 5, alphas=DEFAULT_ALPHAS, inner_folds: int = 5, max_iter: int = 1000,
                 progress: Callable | None = None) -> dict:
    """DirectTrain on one group: ``evaluate`` (outer CV, alpha by inner CV) on that group's rows only.
    Returns variant -> {"ece": {"mean", "std"}, ..., "n_features": {...}}."""
    rows = data.rows(group)
    methods = [VARIANT_NAMES[v] for v in variants]
    res = evaluate(data.features[profile][rows], data.y[rows], seeds=seeds, n_splits=n_splits, alphas=alphas,
                   inner_folds=inner_folds, methods=methods, max_iter=max_iter, profile=profile, top_k=data.top_k,
                   progress=progress)
    return {v: {k: dict(res.summary[VARIANT_NAMES[v]][k]) for k in (*METRICS, "n_features")} for v in variants}
