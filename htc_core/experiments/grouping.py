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

# score_metrics, mean_std and finite_or_none are helpers of the experiments' modules, not part of the interface
__all__ = ["GROUP_KEYS", "GroupedData", "grouped_data", "has_alternatives", "fit_rows", "direct_train"]

UNKNOWN_GROUP = "(unknown)"
VARIANT_NAMES = {"full": "HTC-Full", "reduced": "HTC-Reduced"}


@dataclass
class GroupedData:
    """Labeled runs of a TraceSet with their group and features (made by :func:`grouped_data`).

    Parameters
    ----------
    by : str
        The grouping column (one of ``GROUP_KEYS``).
    y : numpy.ndarray
        The 0/1 labels of the runs kept.
    groups : numpy.ndarray of str
        The group of each run ("(unknown)" where the column is empty).
    names : list of str
        The usable groups, sorted.
    n_runs : dict of str to int
        Runs per usable group.
    positive_rate : dict of str to float
        Success rate per usable group.
    features : dict of str to numpy.ndarray
        Profile -> the runs' ``[n, 48]`` features (computed once per profile).
    alternatives : numpy.ndarray of bool
        Whether each run carries top-k alternatives.
    feature_names : list of str
        The feature names, in column order.
    top_k : int
        The alternatives per token the features used.
    ids : numpy.ndarray
        The runs' ids.
    meta : pandas.DataFrame or None, default None
        The runs' metadata (passed to the fits).
    notes : list of str, default []
        What was left out and why.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.grouping import grouped_data
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> data = grouped_data(ts, by="dataset")
    >>> data.names, data.n_runs, data.features["paper"].shape
    (['facts', 'lists'], {'facts': 16, 'lists': 16}, (32, 48))
    """

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
        """The row positions of one group's runs.

        Parameters
        ----------
        group : str
            A group name.

        Returns
        -------
        numpy.ndarray of int
            Positions into ``y``, ``features`` and ``groups`` (empty for an unknown group).

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.grouping import grouped_data
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> rows = grouped_data(ts, by="dataset").rows("lists")
        >>> len(rows), rows[:3]
        (16, array([16, 17, 18]))
        """
        return np.flatnonzero(self.groups == group)


def finite_or_none(x) -> float | None:
    """``x`` as a float for a JSON result file, or None where it is missing or not finite."""
    return None if x is None or not np.isfinite(x) else float(x)


def grouped_data(ts, *, by: str, profiles: Sequence[str] = ("paper",), top_k: int = 5,
                 min_groups: int = 2, what: str = "this experiment") -> GroupedData:
    """Split labeled runs into groups by a metadata column and compute their features once.

    Unlabeled runs and groups whose labels cannot be evaluated (too few runs, one outcome) are left out, each
    with a note. Features are per trajectory, so computing them once for all groups leaks nothing.

    Parameters
    ----------
    ts : TraceSet
        The runs, with their metadata.
    by : {"dataset", "model", "framework"}
        The grouping column.
    profiles : sequence of str, default ("paper",)
        The token-confidence profiles to compute features for.
    top_k : int, default 5
        Alternatives per token in the features.
    min_groups : int, default 2
        The fewest usable groups.
    what : str, default "this experiment"
        The experiment's name in the error message.

    Returns
    -------
    GroupedData
        The usable runs, their groups and features.

    Raises
    ------
    ValueError
        If ``ts`` is not a TraceSet, or ``by`` or ``top_k`` is invalid.
    EvaluationError
        If fewer than ``min_groups`` groups have evaluable labels.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.grouping import grouped_data
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> data = grouped_data(ts, by="dataset")
    >>> data.positive_rate
    {'facts': 0.375, 'lists': 0.3125}
    >>> grouped_data(ts.take(range(8)), by="dataset")
    Traceback (most recent call last):
    ...
    htc_core.calibration.evaluation.EvaluationError: cannot run this experiment: it needs at least 2 dataset groups ...
    """
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
    """An HTC calibrator fitted on ``rows`` only, refusing any row of a ``forbidden`` group.

    The guard of the cross-group protocols: a training index that holds a row of the evaluated (target or
    held-out) group fails loudly instead of leaking.

    Parameters
    ----------
    data : GroupedData
        The grouped runs.
    profile : str
        The feature profile (a key of ``data.features``).
    variant : {"full", "reduced"}
        The HTC variant.
    rows : numpy.ndarray of int
        The training rows.
    forbidden : sequence of str
        The groups no training row may belong to.
    seed : int
        The inner folds' random state.
    alphas : sequence of float, default DEFAULT_ALPHAS
        The regularization strengths chosen from by inner CV.
    inner_folds : int, default 5
        Folds of the inner CV.
    max_iter : int, default 1000
        The solver's iteration limit.

    Returns
    -------
    HTCCalibrator
        Fitted on the rows.

    Raises
    ------
    RuntimeError
        If a training row belongs to a ``forbidden`` group.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.grouping import grouped_data, fit_rows
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> data = grouped_data(ts, by="dataset")
    >>> model = fit_rows(data, "paper", "reduced", data.rows("facts"), forbidden=["lists"], seed=0, alphas=(1.0,),
    ...                  inner_folds=3)
    >>> model.predict_proba(data.features["paper"][data.rows("lists")]).shape
    (16, 2)
    >>> fit_rows(data, "paper", "reduced", data.rows("facts"), forbidden=["facts"], seed=0)
    Traceback (most recent call last):
    ...
    RuntimeError: protocol violation: 16 training rows belong to the evaluated group(s) ['facts']
    """
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
    """ECE, Brier and AUROC of one prediction vector (the fast kernels), as a dict of floats."""
    P = np.asarray(p, dtype=np.float64)[None, :]
    return {"ece": float(fast_ece(y, P)[0]), "brier": float(fast_brier(y, P)[0]), "auroc": float(fast_auroc(y, P)[0])}


def mean_std(values) -> dict:
    """``{"mean", "std"}`` of ``values`` (sample std, 0 for a single value)."""
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0}


def direct_train(data: GroupedData, group: str, variants: Sequence[str], *, seeds: list[int], profile: str = "paper",
                 n_splits: int = 5, alphas=DEFAULT_ALPHAS, inner_folds: int = 5, max_iter: int = 1000,
                 progress: Callable | None = None) -> dict:
    """DirectTrain on one group: the honest nested CV (:func:`~htc_core.calibration.evaluation.evaluate`) on
    that group's rows only.

    Parameters
    ----------
    data : GroupedData
        The grouped runs.
    group : str
        The group evaluated.
    variants : sequence of str
        HTC variants ("full", "reduced").
    seeds : list of int
        The repeats' seeds.
    profile : str, default "paper"
        The feature profile.
    n_splits : int, default 5
        Outer folds.
    alphas : sequence of float, default DEFAULT_ALPHAS
        The regularization strengths chosen from by inner CV.
    inner_folds : int, default 5
        Folds of the inner CV.
    max_iter : int, default 1000
        The solver's iteration limit.
    progress : callable or None, default None
        ``progress(done, total, message)``, as :func:`~htc_core.calibration.evaluation.evaluate`.

    Returns
    -------
    dict
        Variant -> {"ece", "brier", "auroc", "n_features"} -> {"mean", "std"} over the repeats.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.grouping import grouped_data, direct_train
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> data = grouped_data(ts, by="dataset")
    >>> scores = direct_train(data, "lists", ["reduced"], seeds=[42], n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> round(scores["reduced"]["auroc"]["mean"], 3), scores["reduced"]["n_features"]
    (0.782, {'mean': 3.0, 'std': 1.0})
    """
    rows = data.rows(group)
    methods = [VARIANT_NAMES[v] for v in variants]
    res = evaluate(data.features[profile][rows], data.y[rows], seeds=seeds, n_splits=n_splits, alphas=alphas,
                   inner_folds=inner_folds, methods=methods, max_iter=max_iter, profile=profile, top_k=data.top_k,
                   progress=progress)
    return {v: {k: dict(res.summary[VARIANT_NAMES[v]][k]) for k in (*METRICS, "n_features")} for v in variants}
