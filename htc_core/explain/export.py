"""One row per run for export: structural flags, the strongest reasons and the 48 features.

Used by ``htc score --explain`` and the dashboard's download; every text is plain (no markup). The reasons are
the same words :func:`~htc_core.explain.explain_trajectory` gives for each run, computed for all runs at once
(contributions, signal sums and percentiles as array operations), so exporting thousands of runs takes seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..features import REGISTRY
from ._common import group_names
from .flags import structural_flags
from .reasons import MIN_GROUP_REFERENCE, compare_with, reason_text
from .signals import signal_groups

__all__ = ["explain_runs"]


def _leads(model, signals) -> list[int]:
    """Per signal, the member of largest |weight| (ties: the first), as explain_trajectory names it."""
    w = np.abs(model.coef_[0])
    return [max(sig.members, key=lambda j: (w[j], -j)) for sig in signals]


def _percentiles(X: np.ndarray, y: np.ndarray, groups: np.ndarray, cols: list[int]):
    """[n, len(cols)] percentile of each run's value among its reference successes, n_ref and ref name per run."""
    n = len(X)
    pct = np.full((n, len(cols)), np.nan)
    n_ref = np.zeros(n, dtype=np.int64)
    names = np.empty(n, dtype=object)
    succ = y == 1
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        ref = succ & (groups == g)
        name = f"successful runs of {g}"
        if ref.sum() < MIN_GROUP_REFERENCE:
            ref, name = succ, "successful runs"
        n_ref[rows], names[rows] = int(ref.sum()), name
        if not ref.any():
            continue
        for k, c in enumerate(cols):
            sv = np.sort(X[ref, c])
            v = X[rows, c]
            below = np.searchsorted(sv, v, side="left")
            equal = np.searchsorted(sv, v, side="right") - below
            pct[rows, k] = 100.0 * (below + 0.5 * equal) / len(sv)
    return pct, n_ref, names


def _reasons_table(model, X: np.ndarray, labels, groups, n_reasons: int, min_abs: float) -> list[list[str]]:
    names = list(model.feature_names_in_)
    contrib = model.contributions(X)
    signals = signal_groups(X)
    leads = _leads(model, signals)
    member = np.zeros((len(names), len(signals)))
    for s_i, sig in enumerate(signals):
        member[list(sig.members), s_i] = 1.0
    C = contrib @ member
    y = np.full(len(X), np.nan) if labels is None else np.asarray(labels, dtype=np.float64)
    pct, n_ref, ref_names = _percentiles(X, y, group_names(groups), leads)
    display = [REGISTRY[names[j]].display_name if names[j] in REGISTRY else names[j] for j in range(len(names))]
    out = []
    for i in range(len(X)):
        order = np.argsort(-np.abs(C[i]), kind="stable")
        texts = []
        for s_i in order[:n_reasons]:
            if abs(C[i, s_i]) < min_abs:
                break
            sig, lead = signals[s_i], leads[s_i]
            others = [display[j] for j in sig.members if j != lead]
            words = compare_with(pct[i, s_i], int(n_ref[i]), ref_names[i])
            texts.append(reason_text(display[lead], sig.kind, others, float(X[i, lead]), words, float(C[i, s_i])))
        out.append(texts)
    return out


def explain_runs(ts, features, model=None, *, n_reasons: int = 3, min_abs_contribution: float = 0.05) -> pd.DataFrame:
    """Columns ``flags`` (in words, ``; ``-separated), ``reason_1`` .. ``reason_<n_reasons>`` (when ``model``, a
    fitted ``HTCCalibrator`` of the same features, is given; the reference is the successful runs of the same
    dataset, as in :func:`~htc_core.explain.explain_trajectory` with ``groups`` = dataset) and the features
    under their paper names, one row per trajectory of ``ts`` in order."""
    fm = features
    values = np.asarray(fm.values, dtype=np.float64)
    if len(values) != ts.n_trajectories:
        raise ValueError(f"features must have one row per trajectory ({ts.n_trajectories}), got {len(values)}")
    fl = structural_flags(ts)
    out = pd.DataFrame({"flags": ["; ".join(fl.of(i)) for i in range(ts.n_trajectories)]})
    if model is not None:
        cols = [list(fm.names).index(nm) for nm in model.feature_names_in_]
        reasons = _reasons_table(model, values[:, cols], ts.labels, ts.meta["dataset"], n_reasons,
                                 min_abs_contribution)
        for k in range(n_reasons):
            out[f"reason_{k + 1}"] = [r[k] if len(r) > k else "" for r in reasons]
    feats = pd.DataFrame(values, columns=list(fm.names))
    return pd.concat([out, feats], axis=1)
