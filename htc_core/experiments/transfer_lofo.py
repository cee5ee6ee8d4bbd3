"""Choosing the GAC's transfer method: leave-one-family-out over model x task (an experiment, not a model).

A *family* is a task run by one model family (:func:`~htc_core.experiments.transfer_families.family_groups`).
For every family, the by-kind GAC is fitted on the runs of all the other families and the held-out family is
scored zero-shot by each candidate transfer method (:mod:`htc_core.experiments.transfer_candidates`);
:func:`leave_one_family_out` collects their metrics into a
:class:`~htc_core.experiments.transfer_choice.TransferChoice`, whose rule picks the method a GAC file ships
(:func:`~htc_core.experiments.transfer_entry.fit_transfer` fits it on all runs).
``TransferChoice.estimates`` holds, per family and ranker, SUMMA's label-free AUROC estimate next to the true one.

Next to them, each training-free signal's AUROC on the held-out family, and the shift measurements the
expected-error range is built from (:mod:`htc_core.experiments.transfer_range`). No held-out label reaches a fit:
the candidates see the held-out *features* only (as a user's unlabeled runs), labels only score them.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..calibration.transfer_methods import SIGNALS, em_prior
from .grouping import score_metrics
from .transfer_candidates import EXPERIMENT_ALPHAS, finite_auroc, held_out_confidences
from .transfer_choice import METHODS, RATE_SOURCE, SET_LEVEL, SET_MIN_RUNS, TransferChoice
from .transfer_families import prepare

__all__ = ["leave_one_family_out"]


def _rate_gaps(p: np.ndarray, train_rate: float) -> dict:
    """|mean confidence - training rate| and |EM base rate - training rate| of one method's confidences."""
    return {"rate_gap": abs(float(p.mean()) - train_rate), "em_gap": abs(em_prior(p, train_rate).prior - train_rate)}



def leave_one_family_out(ts, *, seed: int = 42, inner_folds: int = 3, alphas=EXPERIMENT_ALPHAS,
                         progress: Callable[[int, int, str], None] | None = None,
                         set_min_runs: int = SET_MIN_RUNS, families: list | None = None) -> TransferChoice:
    """Every transfer method on every held-out family: the GAC fitted on the other families, scored zero-shot.

    No held-out label reaches a fit: the candidates see the held-out features only; labels only score them.
    Families with one outcome are skipped.

    Parameters
    ----------
    ts : TraceSet or dict
        Labeled runs, or what :func:`~htc_core.experiments.transfer_families.prepare` made of them.
    seed : int, default 42
        The inner folds' random state.
    inner_folds : int, default 3
        Folds of the inner alpha selection.
    alphas : sequence of float, default (0.01, 0.1, 1.0, 5.0, 20.0, 50.0)
        The regularization strengths chosen from.
    progress : callable or None, default None
        ``progress(done, total, family)`` after each held-out family.
    set_min_runs : int, default 50
        The fewest held-out runs on which a ``SET_LEVEL`` method acts (below it, it keeps the per-run
        confidences).
    families : list of str or None, default None
        Hold out only these families (each still fitted on all the others); default every family.

    Returns
    -------
    TransferChoice
        The metrics by family and method, the signals' AUROC, the shifts and the held-out confidences.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.transfer_lofo import leave_one_family_out
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 families, 16 runs each
    >>> choice = leave_one_family_out(ts, alphas=(1.0,), inner_folds=2)
    >>> choice.summary()[["ece_mean", "auroc_mean"]].round(3).loc[["gac", "signal", "stack-oof"]]
               ece_mean  auroc_mean
    method
    gac           0.443       0.448
    signal        0.333       0.733
    stack-oof     0.549       0.448
    >>> choice.best()
    'signal'
    """
    d = {**(ts if isinstance(ts, dict) else prepare(ts)), "set_min_runs": int(set_min_runs)}
    fams = [g for g in sorted(set(d["groups"])) if len(set(d["y"][d["groups"] == g])) == 2
            and (families is None or g in families)]
    rows, shifts, aur, chosen, estimates = [], [], {}, {}, []
    preds = {m: np.full(len(d["y"]), np.nan) for m in METHODS}
    for i, g in enumerate(fams):
        te = np.flatnonzero(d["groups"] == g)
        y = d["y"][te]
        p, shift, _, name = held_out_confidences(d, g, seed, {"inner_folds": inner_folds, "alphas": alphas})
        estimates += [{"family": g, **r} for r in shift.pop("estimates")]
        chosen[g] = name
        for m in METHODS:
            preds[m][te] = p[m]
            # a set-level method's shift measures are its per-run confidences' (as GeneralCalibrator.assess takes them)
            rows.append({"family": g, "method": m, "n": len(te), **score_metrics(y, p[m]),
                         **_rate_gaps(p[RATE_SOURCE.get(m, "stack-oof" if m in SET_LEVEL else m)],
                                      shift["train_rate"])})
        shifts.append({"family": g, "n": len(te), "rate": float(y.mean()), **shift})
        aur[g] = {s: finite_auroc(y, d["signals"][s].to_numpy()[te]) for s in SIGNALS}
        if progress is not None:
            progress(i + 1, len(fams), g)
    out = TransferChoice(pd.DataFrame(rows), pd.DataFrame(shifts), pd.DataFrame(aur).T, chosen, preds, d["groups"],
                         pd.DataFrame(estimates), int(set_min_runs))
    return _rebase_small_sets(out)


def _rebase_small_sets(choice: TransferChoice) -> TransferChoice:
    """Below ``set_min_runs`` a set-level method keeps the shipped per-run confidences: those of
    :meth:`~htc_core.experiments.transfer_choice.TransferChoice.best` (measured as ``stack-oof``'s, replaced here by
    the best's rows and predictions where they differ)."""
    base = choice.best()
    if base == "stack-oof":
        return choice
    r = choice.rows.copy()
    for fam, n in choice.shifts[["family", "n"]].itertuples(index=False):
        src = r[(r.family == fam) & (r.method == base)].iloc[0]
        rows = np.flatnonzero(choice.groups == fam)
        for m in SET_LEVEL:
            i = r.index[(r.family == fam) & (r.method == m)][0]
            cols = src.index.drop(["method"]) if n < choice.set_min_runs else ["rate_gap", "em_gap"]
            r.loc[i, cols] = src[cols]
            if n < choice.set_min_runs:
                choice.predictions[m][rows] = choice.predictions[base][rows]
    choice.rows = r
    return choice
