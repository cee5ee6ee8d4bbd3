"""The Label page's numbers (no Streamlit): the queue's next runs, the adapted model, its estimate with a bootstrap
interval, the zero-shot vs adapted reliability curves, the stop suggestion, and a run's outcome evidence.

Everything is computed by :mod:`htc_core.calibration.active` (the same loop as ``htc label next``); this module
only assembles it for one selection. :mod:`~htc_core.app.label_glue` runs :func:`compute_queue` in a background
job after each label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from ..calibration.active import linear_prior, out_of_fold, queue_step
from ..calibration.label_estimate import estimate, stop_suggestion
from ..calibration.metrics import reliability_curve

__all__ = ["LabelQueueView", "compute_queue", "evidence", "Evidence", "model_card", "MIN_FOR_ESTIMATE"]

#: labels (of both outcomes) before the page shows an estimate
MIN_FOR_ESTIMATE = 4


@dataclass
class LabelQueueView:
    """One refit of the queue for a selection (positions index the selection's runs)."""

    positions: np.ndarray            # proposed next runs, in order
    scores: np.ndarray               # every run's current confidence (adapted, or the prior's)
    zero_shot: np.ndarray            # every run's zero-shot (prior) confidence
    adapted: bool
    n_labeled: int
    estimate: object | None = None   # label_estimate.Estimate of the adapted model (out-of-fold), or None
    zero_shot_estimate: object | None = None
    curves: dict = field(default_factory=dict)      # "GAC zero-shot" / "GAC adapted" -> ReliabilityCurve
    stop: str = ""
    model: object | None = None      # the adapted HTCCalibrator (None while not adapted)
    choice: str = ""
    created: str = ""
    notes: list = field(default_factory=list)


def compute_queue(X, y, prior, *, n: int = 10, seed: int = 42, stop_width: float = 0.05,
                  progress=None) -> LabelQueueView:
    """Adapt ``prior`` to the labels ``y`` (NaN = unlabeled) of the runs ``X``, propose the next ``n`` runs, and
    estimate the adapted model's ECE/AUROC from out-of-fold predictions with a bootstrap interval (the labels weighted
    as the queue's refit weighs them, :func:`~htc_core.calibration.active.step_weights`)."""
    prior = linear_prior(prior, X)
    y = np.asarray(y, dtype=np.float64)
    zero = np.asarray(prior.predict_proba(X)[:, 1], dtype=np.float64)
    step = queue_step(X, y, prior, n=n, seed=seed)
    if progress is not None:
        progress(0.3, "adapted")
    view = LabelQueueView(step.positions, step.scores, zero, step.adapted, step.n_labeled, notes=list(step.notes),
                          created=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    if step.adapted:
        view.model = step.model
        view.choice = str(step.model.adaptation_.get("choice", ""))
    lab = np.isfinite(y)
    pos = int(np.sum(y[lab] == 1))
    if min(pos, int(lab.sum()) - pos) >= 2 and lab.sum() >= MIN_FOR_ESTIMATE:
        w = step.weights          # the queue's labels weighted as its refit weighs them (None: unweighted)
        oof = out_of_fold(X, y, prior, folds=5, seed=seed, weights=w)
        view.estimate = estimate(y, oof, random_state=seed, weights=w)
        view.zero_shot_estimate = estimate(y, np.where(lab, zero, np.nan), random_state=seed, weights=w)
        view.curves = {"GAC zero-shot": reliability_curve(y[lab], zero[lab]),
                       "GAC adapted (out-of-fold)": reliability_curve(y[lab], oof[lab])}
        view.stop = stop_suggestion(view.estimate, width=stop_width)
    else:
        view.stop = (f"keep labeling: {int(lab.sum())} labels so far; the estimate needs at least two successes "
                     "and two failures")
    if progress is not None:
        progress(1.0, "estimated")
    return view


def model_card(view: LabelQueueView, *, selection: str) -> dict:
    """The adapted model's JSON with its card: labels used, when, the adaptation's choice and the estimate."""
    body = view.model.to_dict()
    est = view.estimate.to_dict() if view.estimate is not None else None
    body["card"] = {"title": "GAC adapted on the dashboard's Label page", "selection": selection,
                    "labels_used": int(view.n_labeled), "fitted": view.created, "adaptation": view.choice,
                    "estimate_out_of_fold": est}
    return body


@dataclass
class Evidence:
    """What decides a run's outcome, first on the Label bar: final answer, gold, flags, last observation."""

    answer: str | None
    gold: str | None
    question: str | None
    flags: list
    last_observation: str | None
    last_error: str | None
    success: bool | None


def evidence(view, flags: list) -> Evidence:
    """From a :class:`~htc_core.app.trajectory_view.TrajectoryView` and the run's raised structural flags."""
    obs = next((s.observation for s in reversed(view.steps) if s.observation), None)
    err = next((s.error for s in reversed(view.steps) if s.error), None)
    return Evidence(view.answer, view.gold, view.question, list(flags), obs, err, view.success)
