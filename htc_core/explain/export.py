"""One row per run for export: structural flags, the strongest reasons and the 48 features.

Used by ``htc score --explain`` and the dashboard's download; every text is plain (no markup). The reasons are
the same words :func:`~htc_core.explain.explain_trajectory` gives for each run, computed for all runs at once
(contributions, signal sums and percentiles as array operations), so exporting thousands of runs takes seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .inputs import group_names
from .flags import structural_flags
from .measures import format_apart
from .reasons import MIN_GROUP_REFERENCE, ModelReading, reason_text, reference_name, signal_name
from .signals import signal_groups

__all__ = ["explain_runs", "run_reasons"]


def _leads(model, signals) -> list[int]:
    """Per signal, the member of largest |weight| (ties: the first), as explain_trajectory names it."""
    w = np.abs(model.coef_[0])
    return [max(sig.members, key=lambda j: (w[j], -j)) for sig in signals]


def _percentiles(X: np.ndarray, y: np.ndarray, groups: np.ndarray):
    """[n, d] percentile of each run's value among its reference runs, n_ref and ref name per run (the reference
    of :func:`~htc_core.explain.reasons.reference_mask`)."""
    n, d = X.shape
    pct = np.full((n, d), np.nan)
    n_ref = np.zeros(n, dtype=np.int64)
    names = np.empty(n, dtype=object)
    succ = y == 1
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        ref = succ & (groups == g)
        name = reference_name(g)
        if ref.sum() < MIN_GROUP_REFERENCE:
            ref, name = succ, reference_name()
        if not ref.any():
            ref, name = np.ones(n, dtype=bool), reference_name(successful=False)
        n_ref[rows], names[rows] = int(ref.sum()), name
        if not ref.any():
            continue
        for c in range(d):
            sv = np.sort(X[ref, c])
            v = X[rows, c]
            below = np.searchsorted(sv, v, side="left")
            equal = np.searchsorted(sv, v, side="right") - below
            pct[rows, c] = 100.0 * (below + 0.5 * equal) / len(sv)
    return pct, n_ref, names


def run_reasons(X: np.ndarray, labels, groups, models, which, *, n_reasons: int = 3,
                min_abs_contribution: float = 0.05) -> list[list[str]]:
    """The strongest reasons of every row of ``X``, each row explained by its own model.

    Row ``i`` is explained by ``models[which[i]]`` in the words :func:`~htc_core.explain.explain_trajectory`
    gives with the same model on the same rows: the signals and the reference runs (the successful runs of the
    row's group, else all successful runs, else all runs) are taken over all rows of ``X``. Several models: e.g. the fold models of a cross-validated evaluation,
    so that each out-of-fold confidence is explained by the model that gave it.

    Parameters
    ----------
    X : array-like of shape (n_runs, n_features)
        The features, columns in the models' feature order (``feature_names_in_``).
    labels : array-like of shape (n_runs,) or None
        1 success, 0 failure, NaN unlabeled (the successful-run reference); None: every run is the reference.
    groups : array-like of shape (n_runs,)
        Each run's group (its dataset): a run is compared with the successful runs of its group when the
        group has enough of them, else with all successful runs.
    models : sequence of HTCCalibrator
        Fitted models of the same features.
    which : array-like of int, shape (n_runs,)
        The index into ``models`` of each row's model; negative: no model, no reason.
    n_reasons : int, default 3
        The most reasons per row, strongest first.
    min_abs_contribution : float, default 0.05
        Signals whose contribution to the logit is smaller in magnitude give no reason.

    Returns
    -------
    list of list of str
        One list of reasons per row (empty for a row without a model).

    Raises
    ------
    ValueError
        If ``which`` has another length than ``X``.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs
    >>> fm = extract(ts)
    >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    >>> import numpy as np
    >>> from htc_core.explain.export import run_reasons
    >>> which = np.zeros(ts.n_trajectories, dtype=int)
    >>> which[1] = -1                                         # run 1: no model
    >>> reasons = run_reasons(fm.values, ts.labels, ts.meta["dataset"], [model], which, n_reasons=1)
    >>> len(reasons), reasons[1]
    (8, [])
    >>> print(reasons[0][0])
    Token gradient, max (one signal of 23 correlated features) is 0.532, higher than in the typical successful run
    (higher than all 3 successful runs); the model reads higher values as a sign of success, and 0.532 is above
    the average of the runs it was fitted on (0.392), but the run's 22 other correlated features pull the other
    way: together they lower the confidence (logit -0.92).
    """
    X = np.asarray(X, dtype=np.float64)
    which = np.asarray(which, dtype=np.int64).reshape(-1)
    if len(which) != len(X):
        raise ValueError(f"which must have one entry per row of X ({len(X)}), got {len(which)}")
    signals = signal_groups(X)
    y = np.full(len(X), np.nan) if labels is None else np.asarray(labels, dtype=np.float64)
    pct, n_ref, ref_names = _percentiles(X, y, group_names(groups))
    out: list[list[str]] = [[] for _ in range(len(X))]
    for k, model in enumerate(models):
        rows = np.flatnonzero(which == k)
        if len(rows) == 0:
            continue
        names = list(model.feature_names_in_)
        member = np.zeros((len(names), len(signals)))
        for s_i, sig in enumerate(signals):
            member[list(sig.members), s_i] = 1.0
        C = model.contributions(X[rows]) @ member
        cap = getattr(model, "cap_factor", None)       # a soft logit bound: contributions add up to the logit
        if cap is not None:
            C *= cap(X[rows])[:, None]
        leads = _leads(model, signals)
        for r_i, i in enumerate(rows):
            out[i] = _row_reasons(C[r_i], X[i], pct[i], f"{ref_names[i]}", int(n_ref[i]), signals, leads, model,
                                  n_reasons, min_abs_contribution)
    return out


def _row_reasons(c, x, pct, ref_name, n_ref, signals, leads, model, n_reasons, min_abs) -> list[str]:
    """The reasons of one row: its strongest signals' contributions ``c`` in words (as explain_trajectory's)."""
    names = list(model.feature_names_in_)
    texts = []
    for s_i in np.argsort(-np.abs(c), kind="stable")[:n_reasons]:
        if abs(c[s_i]) < min_abs:
            break
        sig, lead = signals[s_i], leads[s_i]
        mu = float(model.mean_[lead])
        net = sum(sig.sign_of(j) * sig.sign_of(lead) * float(model.coef_[0][j]) for j in sig.members)
        shown, centre = format_apart(names[lead], x[lead], mu)
        reading = ModelReading(weight=net, offset=float(x[lead] - mu), centre=centre, n_members=len(sig.members))
        texts.append(reason_text(signal_name(names[lead], len(sig.members)), shown,
                                 float(pct[lead]), n_ref, ref_name, float(c[s_i]), reading))
    return texts


def explain_runs(ts, features, model=None, *, models=None, which=None, n_reasons: int = 3,
                 min_abs_contribution: float = 0.05) -> pd.DataFrame:
    """One row per run for export: its structural flags, its strongest reasons and its features.

    What ``htc score --explain`` and the dashboard's download write. Every text is plain (no markup).

    Parameters
    ----------
    ts : TraceSet
        The runs.
    features : FeatureMatrix
        Their features (:func:`htc_core.features.extract` of ``ts``).
    model : HTCCalibrator or None, default None
        A model fitted on the same features: its reasons fill ``reason_1`` .. ``reason_<n_reasons>``. The
        reference is the successful runs of the same dataset, as in
        :func:`~htc_core.explain.explain_trajectory` with ``groups`` = dataset.
    models : sequence of HTCCalibrator or None, default None
        Several models instead of ``model`` (e.g. the fold models of an evaluation), with ``which``.
    which : array-like of int or None, default None
        With ``models``: the index of each run's model, as in :func:`run_reasons`.
    n_reasons : int, default 3
        The number of reason columns (an empty string where a run has fewer reasons).
    min_abs_contribution : float, default 0.05
        Signals whose contribution to the logit is smaller in magnitude give no reason.

    Returns
    -------
    pandas.DataFrame
        Column ``flags`` (in words, ``"; "``-separated), the reason columns when a model is given, then the
        features under their paper names; one row per trajectory of ``ts`` in order.

    Raises
    ------
    ValueError
        If ``features`` has another number of rows than ``ts`` has trajectories.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs
    >>> fm = extract(ts)
    >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    >>> from htc_core.explain.export import explain_runs
    >>> table = explain_runs(ts, fm, model, n_reasons=2)
    >>> table.shape, list(table.columns[:4])
    ((8, 51), ['flags', 'reason_1', 'reason_2', 'top1_gradient_mean'])
    >>> print(table.loc[4, "reason_1"])
    Tokens per step, mean (one signal of 3 correlated features) is 13.5 tokens, higher than in the typical
    successful run (higher than all 3 successful runs); the model reads higher values as a sign of failure, and
    13.5 tokens is above the average of the runs it was fitted on (12.7 tokens), so this lowers the confidence
    (logit -1.15).
    """
    fm = features
    values = np.asarray(fm.values, dtype=np.float64)
    if len(values) != ts.n_trajectories:
        raise ValueError(f"features must have one row per trajectory ({ts.n_trajectories}), got {len(values)}")
    fl = structural_flags(ts)
    out = pd.DataFrame({"flags": ["; ".join(fl.of(i)) for i in range(ts.n_trajectories)]})
    if model is not None:
        models, which = [model], np.zeros(len(values), dtype=np.int64)
    if models:
        cols = [list(fm.names).index(nm) for nm in models[0].feature_names_in_]
        reasons = run_reasons(values[:, cols], ts.labels, ts.meta["dataset"], models, which, n_reasons=n_reasons,
                              min_abs_contribution=min_abs_contribution)
        for k in range(n_reasons):
            out[f"reason_{k + 1}"] = [r[k] if len(r) > k else "" for r in reasons]
    feats = pd.DataFrame(values, columns=list(fm.names))
    return pd.concat([out, feats], axis=1)
