"""One row per run for export: structural flags, the strongest reasons and the 48 features.

Used by ``htc score --explain`` and the dashboard's download; every text is plain (no markup). The reasons are
the same words :func:`~htc_core.explain.explain_trajectory` gives for each run, computed for all runs at once
(contributions, signal sums and percentiles as array operations), so exporting thousands of runs takes seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..bidi import isolate
from ..features import REGISTRY
from .inputs import group_names
from .flags import structural_flags
from .reasons import MIN_GROUP_REFERENCE, compare_with, data_z, direction_of, reason_text, signal_name
from .signals import signal_groups

__all__ = ["explain_runs", "run_reasons"]


def _leads(model, signals) -> list[int]:
    """Per signal, the member of largest |weight| (ties: the first), as explain_trajectory names it."""
    w = np.abs(model.coef_[0])
    return [max(sig.members, key=lambda j: (w[j], -j)) for sig in signals]


def _percentiles(X: np.ndarray, y: np.ndarray, groups: np.ndarray):
    """[n, d] percentile of each run's value among its reference successes, n_ref and ref name per run."""
    n, d = X.shape
    pct = np.full((n, d), np.nan)
    n_ref = np.zeros(n, dtype=np.int64)
    names = np.empty(n, dtype=object)
    succ = y == 1
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        ref = succ & (groups == g)
        name = f"successful runs of {isolate(g)}"   # an untrusted name: bidi-isolated
        if ref.sum() < MIN_GROUP_REFERENCE:
            ref, name = succ, "successful runs"
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
    """The reasons of every row of ``X`` (columns in the models' feature order), row ``i`` explained by
    ``models[which[i]]`` (``which[i] < 0``: no model, no reason), each in the words
    :func:`~htc_core.explain.explain_trajectory` gives with the same model on the same rows: signals, typical
    run and successful-run references are taken over all rows of ``X``. Several models: e.g. the fold models
    of a cross-validated evaluation, so that each out-of-fold confidence is explained by its own model."""
    X = np.asarray(X, dtype=np.float64)
    which = np.asarray(which, dtype=np.int64).reshape(-1)
    if len(which) != len(X):
        raise ValueError(f"which must have one entry per row of X ({len(X)}), got {len(which)}")
    signals = signal_groups(X)
    mean, sd = data_z(X)
    Z = (X - mean) / sd
    y = np.full(len(X), np.nan) if labels is None else np.asarray(labels, dtype=np.float64)
    pct, n_ref, ref_names = _percentiles(X, y, group_names(groups))
    out: list[list[str]] = [[] for _ in range(len(X))]
    for k, model in enumerate(models):
        rows = np.flatnonzero(which == k)
        if len(rows) == 0:
            continue
        names = list(model.feature_names_in_)
        display = [REGISTRY[nm].display_name if nm in REGISTRY else nm for nm in names]
        member = np.zeros((len(names), len(signals)))
        for s_i, sig in enumerate(signals):
            member[list(sig.members), s_i] = 1.0
        C = model.contributions(X[rows]) @ member
        cap = getattr(model, "cap_factor", None)       # a soft logit bound: contributions add up to the logit
        if cap is not None:
            C *= cap(X[rows])[:, None]
        leads = _leads(model, signals)
        for r_i, i in enumerate(rows):
            out[i] = _row_reasons(C[r_i], Z[i], X[i], pct[i], f"{ref_names[i]}", int(n_ref[i]), signals, leads,
                                  display, n_reasons, min_abs_contribution)
    return out


def _row_reasons(c, z, x, pct, ref_name, n_ref, signals, leads, display, n_reasons, min_abs) -> list[str]:
    texts = []
    for s_i in np.argsort(-np.abs(c), kind="stable")[:n_reasons]:
        if abs(c[s_i]) < min_abs:
            break
        sig, lead = signals[s_i], leads[s_i]
        oriented = np.array([sig.sign_of(j) * sig.sign_of(lead) * z[j] for j in sig.members])
        words = compare_with(pct[lead], n_ref, ref_name)
        texts.append(reason_text(signal_name_of(lead, display, sig), float(x[lead]), direction_of(oriented), words,
                                 float(c[s_i])))
    return texts


def signal_name_of(lead: int, display, sig) -> str:
    from ..features import FEATURE_NAMES

    name = FEATURE_NAMES[lead] if len(display) == len(FEATURE_NAMES) else display[lead]
    return signal_name(name, len(sig.members))


def explain_runs(ts, features, model=None, *, models=None, which=None, n_reasons: int = 3,
                 min_abs_contribution: float = 0.05) -> pd.DataFrame:
    """Columns ``flags`` (in words, ``; ``-separated), ``reason_1`` .. ``reason_<n_reasons>`` (when ``model``, a
    fitted ``HTCCalibrator`` of the same features, is given, or ``models`` with ``which``, the index of the
    model of each run as in :func:`run_reasons`; the reference is the successful runs of the same dataset, as
    in :func:`~htc_core.explain.explain_trajectory` with ``groups`` = dataset) and the features under their
    paper names, one row per trajectory of ``ts`` in order."""
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
