"""The confidence a run is shown with, and the model that explains it: one rule for every page.

- A labeled run of a selection that can be evaluated: its **out-of-fold** confidence (first repeat of the
  cross-validated evaluation, the number Runs, Examples, the reliability drill-down, the export and the HTML
  report rank it by), explained by the fold model that produced it (kept by the evaluation,
  :meth:`~htc_core.calibration.results.EvaluationResult.fold_model`). The fit on the whole selection is the
  secondary, in-sample number.
- A run the evaluation did not hold out (an unlabeled run of a labeled selection, or one left out of a sampled
  evaluation): the calibrator fitted on the selection's labeled runs (for an unlabeled run that fit never saw it).
- A selection no calibrator can be fitted on: the shipped GAC's sub-model that scored the run (zero-shot).
- Once the selection has an adapted scorer (the GAC adapted to its labels on the Label page,
  :mod:`~htc_core.app.adapted_scorer`), it replaces the last two: every run no evaluation held out is scored by
  it, named with its card ("adapted GAC, 34 labels, 2026-11-27 11:40 UTC").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..calibration.evaluation import label_problem
from ..explain import TrajectoryExplanation, explain_trajectory
from . import experiments
from .adapted_scorer import SOURCE as ADAPTED
from .adapted_scorer import AdaptedScorer, adapted_scorer
from .compute import Evaluated
from .fits import fitted_model
from .session import workspace_for_profile
from .workspace import Workspace

__all__ = ["Shown", "shown_confidence", "evaluation_for", "evaluation_row", "METHOD_OF", "DIFFERS", "in_use", "InUse",
           "dataset_position", "combined", "PAIR",
           "open_side_by_side"]

METHOD_OF = {"reduced": "HTC-Reduced", "full": "HTC-Full", "gam": "HTC-GAM"}
#: the in-sample and the shown (out-of-fold) confidence differ visibly beyond this
DIFFERS = 0.2


@dataclass
class Shown:
    """One run's shown confidence. ``source``: 'out-of-fold', 'in-sample', 'not fitted on' (a run the
    selection's calibrator was not fitted on) or 'zero-shot' (the GAC); ``model`` explains ``confidence``
    exactly on ``features`` (the selection's features in the model's profile)."""

    method: str
    source: str
    model: object
    features: object
    confidence: float
    in_sample: float | None = None
    fold: int | None = None
    gac_kind: str | None = None
    #: what the live-monitor replay runs (the whole GAC, whose confidence may combine its sub-model with a
    #: training-free signal); None: ``model``
    curve_model: object = None
    #: the adapted scorer's name and card lines (source 'adapted')
    name: str | None = None
    card: tuple = ()

    @property
    def label(self) -> str:
        return self.name if self.source == ADAPTED and self.name else f"{self.method} ({self.source})"

    @property
    def headline(self) -> str:
        """The metric's label on the inspector: which number this is."""
        return f"confidence ({self.label})" if self.source == ADAPTED else f"{self.method} confidence ({self.source})"

    @property
    def differs(self) -> bool:
        """The in-sample fit's confidence differs from the shown one by more than :data:`DIFFERS`."""
        return self.in_sample is not None and abs(self.in_sample - self.confidence) > DIFFERS

    @property
    def what(self) -> str:
        """Which model this is, in one sentence (for a caption)."""
        if self.source == "out-of-fold":
            return (f"the {self.method} model of outer fold {self.fold + 1} of the cross-validated evaluation, "
                    "fitted without this run (the number Runs, Examples, the drill-down and the export show)")
        if self.source == "zero-shot":
            return f"the shipped GAC's model for runs {'with' if self.gac_kind == 'with_alternatives' else 'without'} " \
                   "alternatives (zero-shot: no calibrator can be fitted on this selection)"
        if self.source == ADAPTED:
            return f"the selection's scorer, {self.label}: " + "; ".join(self.card)
        if self.source == "not fitted on":
            return f"{self.method} fitted on the selection's labeled runs, which do not include this run"
        return (f"{self.method} fitted on the selection's labeled runs, this one included (in-sample: the "
                "evaluation has not held this run out)")

    def explain(self, ws: Workspace, position: int, **kwargs) -> TrajectoryExplanation:
        return explain_trajectory(self.model, self.features, position, labels=ws.labels,
                                  groups=ws.ts.meta["dataset"], ids=ws.ts.ids, **kwargs)


def evaluation_row(evaluated: Evaluated | None, position: int) -> int | None:
    """The row of workspace run ``position`` in the evaluation, or None when it was not evaluated."""
    if evaluated is None or evaluated.result is None:
        return None
    hit = np.flatnonzero(np.asarray(evaluated.positions) == int(position))
    return int(hit[0]) if hit.size else None


def evaluation_for(ws: Workspace, position: int, variant: str) -> Evaluated | None:
    """The evaluation whose fold model explains run ``position``: when a labeled run's out-of-fold confidence
    is not computed yet, this waits for it (with the background evaluation's progress bar); None when the run
    can have none (unlabeled, HTC-GAM, a selection that cannot be evaluated)."""
    from ..calibration.evaluation import EvaluationError
    from .compute import cached_evaluation, evaluation

    ev = cached_evaluation()
    if variant == "gam" or not np.isfinite(ws.labels[position]) or label_problem(ws.labels) is not None:
        return ev
    if ev is not None and ev.result is not None and METHOD_OF[variant] in ev.result.fold_models:
        return ev
    try:
        return evaluation(ws)
    except EvaluationError:
        return ev


def _score(model, features, position: int) -> float:
    return float(model.predict_proba(features.values[position:position + 1])[0, 1])


def _adapted(scorer: AdaptedScorer, position: int) -> Shown:
    return Shown(method="adapted GAC", source=ADAPTED, model=scorer.model, features=scorer.features,
                 confidence=float(scorer.confidence([position])[0]), curve_model=scorer.model, name=scorer.name,
                 card=tuple(scorer.card_lines()))


def shown_confidence(ws: Workspace, position: int, variant: str, evaluated: Evaluated | None) -> Shown:
    """The confidence run ``position`` is shown with under ``variant`` ('reduced', 'full', 'gam'), and its model."""
    scorer = adapted_scorer(ws)
    if label_problem(ws.labels, for_evaluation=False) is not None:
        if scorer is not None:
            return _adapted(scorer, position)
        model, X, kind = experiments.gac_model_for(ws, position)
        conf = float(np.asarray(experiments.gac_scores(ws).confidence)[position])   # the Runs page's number
        return Shown(method="GAC", source="zero-shot", model=model, features=X, confidence=conf, gac_kind=kind,
                     curve_model=experiments.shipped_gac())
    method = METHOD_OF[variant]
    fit = fitted_model(ws, variant)
    in_sample = _score(fit, ws.features, position)
    row = evaluation_row(evaluated, position)
    fold = None if row is None or variant == "gam" else evaluated.result.fold_model(method, row)
    if fold is not None:
        return Shown(method=method, source="out-of-fold", model=fold, features=ws.features,
                     confidence=float(evaluated.result.oof[method][row]), in_sample=in_sample,
                     fold=int(evaluated.result.folds[0, row]))
    if scorer is not None and not np.isfinite(ws.labels[position]):
        return _adapted(scorer, position)
    source = "in-sample" if np.isfinite(ws.labels[position]) else "not fitted on"
    return Shown(method=method, source=source, model=fit, features=ws.features, confidence=in_sample)


@dataclass
class InUse:
    """Every run's shown confidence under one method at once: ``confidence`` [n], ``source`` [n] and the
    model of each (``models[which[i]]``, explaining on the selection's features ``features[which[i]]``: the
    GAC's two models use two confidence profiles), for tables and exports."""

    method: str
    confidence: np.ndarray
    source: np.ndarray
    models: list
    which: np.ndarray
    features: list
    #: the adapted scorer's name where ``source`` is 'adapted'
    adapted_name: str = ""

    def scorer_names(self) -> list[str]:
        """Each run's scorer in words: "HTC-Reduced (out-of-fold)", "adapted GAC, 34 labels, ..."."""
        return [self.adapted_name if s == ADAPTED else f"{self.method} ({s})" for s in self.source]


def in_use(ws: Workspace, positions, variant: str, evaluated: Evaluated | None) -> InUse:
    """:func:`shown_confidence` for the runs ``positions`` at once (fold models for the evaluated runs, the
    selection's adapted scorer or else its fit for the rest, the GAC when nothing can be fitted)."""
    pos = np.asarray(positions, dtype=np.int64)
    scorer = adapted_scorer(ws)
    if label_problem(ws.labels, for_evaluation=False) is not None:
        if scorer is not None:
            return InUse(method="adapted GAC", confidence=scorer.confidence(pos),
                         source=np.full(len(pos), ADAPTED, dtype=object), models=[scorer.model],
                         which=np.zeros(len(pos), dtype=np.int64), features=[scorer.features], adapted_name=scorer.name)
        scores = experiments.gac_scores(ws)
        gac = experiments.shipped_gac()
        kinds = np.asarray(scores.kind, dtype=object)[pos]
        names = sorted(gac.models)
        models = [gac.models[k] for k in names]
        return InUse(method="GAC", confidence=np.asarray(scores.confidence, dtype=np.float64)[pos],
                     source=np.full(len(pos), "zero-shot", dtype=object), models=models,
                     which=np.array([names.index(str(k)) for k in kinds], dtype=np.int64),
                     features=[workspace_for_profile(m.profile_, m.top_k_).features for m in models])
    use = combined(ws, pos, METHOD_OF[variant], fitted_model(ws, variant), evaluated)
    rest = np.flatnonzero(use.source == "not fitted on")
    if scorer is not None and len(rest):
        use.confidence[rest] = scorer.confidence(pos[rest])
        use.source[rest] = ADAPTED
        use.which[rest] = len(use.models)
        use.models.append(scorer.model)
        use.features.append(scorer.features)
        use.adapted_name = scorer.name
    return use


def combined(ws: Workspace, positions, method: str, fit, evaluated: Evaluated | None) -> InUse:
    """:class:`InUse` of ``method`` for the runs ``positions``: the evaluation's out-of-fold confidence and fold
    model where it held the run out, the selection's fit ``fit`` elsewhere."""
    pos = np.asarray(positions, dtype=np.int64)
    conf = fit.predict_proba(ws.features.values[pos])[:, 1]
    source = np.where(np.isfinite(ws.labels[pos]), "in-sample", "not fitted on").astype(object)
    models, which = [fit], np.zeros(len(pos), dtype=np.int64)
    res = None if evaluated is None else evaluated.result
    if res is not None and res.fold_models.get(method):
        row_of = {int(p): r for r, p in enumerate(evaluated.positions)}
        rows = np.array([row_of.get(int(p), -1) for p in pos])
        held = rows >= 0
        conf[held] = res.oof[method][rows[held]]
        source[held] = "out-of-fold"
        which[held] = 1 + res.folds[0, rows[held]]
        models += list(res.fold_models[method])
    return InUse(method=method, confidence=conf, source=source, models=models, which=which,
                 features=[ws.features] * len(models))


def dataset_position(ws: Workspace, position: int, variant: str, evaluated: Evaluated | None):
    """Where run ``position``'s shown confidence stands among the shown confidences of its dataset
    (:class:`~htc_core.explain.GroupPosition`): the same numbers the Runs page lists."""
    from ..explain import GroupPosition, percentile_of

    ds = ws.ts.meta["dataset"].astype(object).fillna("(none)").to_numpy()
    same = np.flatnonzero(ds == ds[position])
    conf = in_use(ws, same, variant, evaluated).confidence
    value = float(conf[np.flatnonzero(same == position)[0]])
    return GroupPosition(group=str(ds[position]), confidence=conf, labels=ws.labels[same], value=value,
                         percentile=percentile_of(value, conf))


#: session key: the two workspace keys the Side by side page opens with
PAIR = "htc_pair"


def open_side_by_side(key_a: str, key_b: str) -> None:
    """Open the Side by side page on two runs (e.g. a flipped pair of Compare run sets)."""
    import streamlit as st

    from .session import PAGES

    st.session_state[PAIR] = (str(key_a), str(key_b))
    st.switch_page(PAGES["side_by_side"])
