"""The selection's adapted scorer: the GAC adapted to the selection's labels on the Label page, as saved in the store
with its card (labels used, when). Once one exists it scores every run of the selection that no evaluation held
out, on every page (:mod:`~htc_core.app.shown` decides the shown number), named "adapted GAC, 34 labels,
2026-11-27 11:40 UTC".

The Label page's background refit writes the newest model under the setting ``label-model:<selection>``
(:func:`setting_key`); :func:`keep` saves a copy that no later refit replaces (the "Save the adapted model" button).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from . import session
from .workspace import Workspace

__all__ = ["AdaptedScorer", "adapted_scorer", "selection_key", "setting_key", "keep", "scorer_name", "SOURCE", "prior_of",
           "with_adapted",
           "model_file_text"]

#: the ``source`` of a confidence given by the adapted scorer (:class:`~htc_core.app.shown.Shown`)
SOURCE = "adapted"


def selection_key(ws: Workspace) -> str:
    """The selection's runs (not their labels): a short hash of the run keys."""
    h = hashlib.blake2b(digest_size=8)
    h.update("\x1f".join(map(str, ws.keys)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def setting_key(ws: Workspace) -> str:
    return f"label-model:{selection_key(ws)}"


def scorer_name(card: dict) -> str:
    """"adapted GAC, 34 labels, 2026-11-27 11:40 UTC" from a model card."""
    return f"adapted GAC, {card.get('labels_used', '?')} labels, {card.get('fitted', 'time unknown')}"


@dataclass
class AdaptedScorer:
    """The saved adapted model of a selection: ``model`` (an HTCCalibrator with the GAC as prior), its ``card``,
    its store id, and the selection's features in the model's confidence profile."""

    model: object
    card: dict
    model_id: str
    features: object

    @property
    def name(self) -> str:
        return scorer_name(self.card)

    def confidence(self, positions=None) -> np.ndarray:
        X = self.features if positions is None else self.features.take(np.asarray(positions, dtype=np.int64))
        return np.asarray(self.model.predict_proba(X)[:, 1], dtype=np.float64)

    def card_lines(self) -> list[str]:
        """The card, one line per fact (for a caption or an expander)."""
        c = self.card
        est = c.get("estimate_out_of_fold") or {}
        lines = [f"the shipped GAC adapted to {c.get('labels_used', '?')} labels of this selection on "
                 f"{c.get('fitted', '?')} (as `htc fit --prior gac`), choice: {c.get('adaptation') or '?'}",
                 f"saved in the store as model `{self.model_id}`"]
        if est.get("ece") is not None:
            num = lambda k: "–" if est.get(k) is None else f"{est[k]:.3f}"    # noqa: E731 (None: not defined yet)
            noise = ", corrected for the noise of the labels" if est.get("debiased") else ""
            lines.append(f"estimate on its labels, out of fold{noise}: ECE {num('ece')} (90% interval "
                         f"{num('ece_low')} to {num('ece_high')}), AUROC {num('auroc')}")
        return lines


def _load(data_dir: str, model_id: str):
    from ..calibration.calibrators import HTCCalibrator

    body = session.get_store(data_dir).load_model(model_id)
    return HTCCalibrator.from_dict(body, source=f"store model {model_id}"), body.get("card", {})


_LOADED: dict = {}      # (data dir, model id) -> (model, card); models are immutable once saved


def adapted_scorer(ws: Workspace) -> AdaptedScorer | None:
    """The selection's adapted scorer, or None while the selection has none (or the model has just been replaced
    by a newer refit)."""
    try:
        mid = session.store().get_setting(setting_key(ws))
    except Exception:           # a store that cannot be read is reported by the page's own guard
        return None
    if not mid:
        return None
    key = (session.data_dir(), mid)
    if key not in _LOADED:
        try:
            _LOADED[key] = _load(*key)
        except KeyError:
            return None
        if len(_LOADED) > 16:
            _LOADED.pop(next(iter(_LOADED)))
    model, card = _LOADED[key]
    same = (model.profile_, int(model.top_k_)) == (ws.profile, int(ws.top_k))
    X = ws.features if same else session.workspace_for_profile(model.profile_, model.top_k_).features
    return AdaptedScorer(model, card, mid, X)


def model_file_text(scorer: AdaptedScorer) -> str:
    """The model file (JSON, card included) that ``htc score --model`` reads."""
    body = scorer.model.to_dict()
    body["card"] = dict(scorer.card)
    return json.dumps(body, indent=1, allow_nan=False)


def keep(scorer: AdaptedScorer) -> str:
    """Save a copy of the adapted model in the store that no later refit replaces; returns its id."""
    return session.store().save_model(model_file_text(scorer), name=scorer.name)


def prior_of(scorer: AdaptedScorer):
    """The shipped GAC's sub-model the scorer was adapted from (the one of the scorer's profile)."""
    from ..calibration.adapt import named_prior
    from .experiments import shipped_gac

    want = (scorer.model.profile_, int(scorer.model.top_k_))
    gac = shipped_gac()
    for kind, m in gac.models.items():
        if m is not None and (m.profile_, int(m.top_k_)) == want:
            return named_prior(m, f"{gac.name}/{kind}")
    raise ValueError(f"the shipped GAC has no model of profile {want[0]!r}, top-k {want[1]}")


def with_adapted(ws: Workspace, evaluated):
    """The selection's evaluation with one more method, "adapted GAC": the GAC adapted to each outer-training
    part's labels and scored on the held-out part (same folds), i.e. the out-of-fold measure of the selection's
    adapted scorer, in Calibration's method list, table, diagrams and the HTML report. ``evaluated`` itself
    while the selection has no adapted scorer (or the evaluation none yet)."""
    import dataclasses

    from ..calibration.evaluation import EvaluationError, evaluate, merge_results
    from ..calibration.methods import PriorAdapted
    from .compute import computed

    scorer = adapted_scorer(ws)
    if scorer is None or evaluated is None or evaluated.result is None:
        return evaluated
    res, pos = evaluated.result, np.asarray(evaluated.positions)
    seeds = list(res.seeds)
    X, y = scorer.features.take(pos), ws.labels[pos]

    def run(progress):
        try:
            return evaluate(X, y, seeds=seeds, n_splits=res.n_splits, methods=[PriorAdapted(prior_of(scorer))],
                            progress=lambda d, t, m: progress(d / max(t, 1), m))
        except (EvaluationError, ValueError) as e:
            return str(e)

    key = session.cache_key("adapted-evaluation", scorer.model_id, tuple(seeds), res.n_splits, len(pos))
    extra = computed(key, "Evaluating the adapted GAC on the same folds", run)
    if isinstance(extra, str):
        return dataclasses.replace(evaluated, result=dataclasses.replace(res, notes=[*res.notes, extra]))
    try:
        merged = merge_results([res, extra])
    except ValueError as e:
        return dataclasses.replace(evaluated, result=dataclasses.replace(res, notes=[*res.notes, str(e)]))
    note = (f"adapted GAC: the shipped GAC adapted to each training part's labels (as `htc fit --prior gac`), scored "
            f"on the held-out part; the selection's scorer is this adaptation on all its labels: {scorer.name}")
    return dataclasses.replace(evaluated, result=dataclasses.replace(merged, notes=[*merged.notes, note]))
