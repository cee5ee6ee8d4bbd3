"""The dashboard's experiment computations (transfer matrix, ablation, learning curves) and the shipped GAC's zero-shot
scores, each run once per selection through :func:`~htc_core.app.compute.computed` (progress bar, shared
cache). Nothing is computed here: the work is :mod:`htc_core.calibration`'s."""

from __future__ import annotations

import streamlit as st

from ..experiments.ablation import AblationResult, ablation
from ..calibration.general import GACScores, GeneralCalibrator
from ..calibration.models import DEFAULT_GAC, load_model, shipped_models
from ..experiments.transfer import TransferResult, transfer
from . import compute
from .session import cache_key, settings
from .workspace import Workspace

__all__ = ["shipped_gac", "gac_scores", "gac_card", "transfer_matrix", "ablation_result", "learning_curve_result",
           "cached_learning_curve", "available_curve_methods"]


@st.cache_resource(show_spinner=False)
def shipped_gac(name: str = DEFAULT_GAC) -> GeneralCalibrator:
    return load_model(name)


def gac_card(name: str = DEFAULT_GAC) -> dict:
    return next((m.card for m in shipped_models() if m.name == name), {})


def gac_scores(ws: Workspace, name: str = DEFAULT_GAC) -> GACScores:
    """The shipped GAC's zero-shot confidence for every run of the selection (labels not needed)."""
    if ws.stored is not None and ws.stored.gac_model == name:   # scored (run by run) when the runs were stored
        return GACScores(name=name, variant=shipped_gac(name).variant, ids=ws.ts.ids, confidence=ws.stored.gac,
                         kind=ws.stored.gac_kind)

    def run(progress):
        progress(0.2, f"scoring {len(ws):,} runs")
        # run by run, as stored and as htc score does: a number that does not depend on the selection
        return shipped_gac(name).score_traces(ws.ts, set_level=False)

    return compute.computed(cache_key("gac", name), f"Scoring with the shipped {name.upper()}", run, units=len(ws))


def _alphas() -> dict:
    return {} if compute.ALPHAS is None else {"alphas": compute.ALPHAS}


def transfer_matrix(ws: Workspace, by: str) -> TransferResult:
    """Transfer matrix of the labeled runs of the selection grouped by ``by`` (raises EvaluationError)."""
    s = settings()
    pos = compute.labeled_positions(ws)

    def run(progress):
        return transfer(ws.ts.take(pos), by=by, seeds=s["seeds"], profile=s["profile"], top_k=s["top_k"],
                        **_alphas(), progress=lambda d, t, m: progress(d / max(t, 1), m))

    return compute.computed(cache_key("transfer", by, s["seeds"], compute.ALPHAS), f"Transfer matrix by {by}", run,
                            units=len(pos))


def ablation_result(ws: Workspace) -> AblationResult:
    """The 15-combination ablation of the labeled runs of the selection (raises EvaluationError)."""
    s = settings()
    pos = compute.labeled_positions(ws)

    def run(progress):
        return ablation(ws.ts.take(pos), seeds=s["seeds"], profile=s["profile"], top_k=s["top_k"], **_alphas(),
                        progress=lambda d, t, m: progress(d / max(t, 1), m))

    return compute.computed(cache_key("ablation", s["seeds"], compute.ALPHAS), "Feature-family ablation", run,
                            units=len(pos))


def cached_transfer(by: str) -> TransferResult | None:
    return compute.cached_result(cache_key("transfer", by, settings()["seeds"], compute.ALPHAS))


def cached_ablation() -> AblationResult | None:
    return compute.cached_result(cache_key("ablation", settings()["seeds"], compute.ALPHAS))


def available_curve_methods() -> tuple[list[str], list[str]]:
    """(learning-curve methods runnable here, those skipped because the [learning] extra is missing)."""
    from ..experiments.learning import MissingExtraError
    from ..experiments.learning_curve import CURVE_METHODS, resolve_curve_methods

    ok, missing = [], []
    for name in CURVE_METHODS:
        try:
            resolve_curve_methods([name])
            ok.append(name)
        except MissingExtraError:
            missing.append(name)
    return ok, missing


def curve_sizes(n_labeled: int) -> tuple[int, ...]:
    """The default sizes (50, 100, 200, 400) that fit in a training part of 5 outer folds (4/5 of the runs)."""
    room = int(0.8 * n_labeled)
    return tuple(s for s in (50, 100, 200, 400) if s <= room) or (max(10, room),)


def learning_curve_result(ws: Workspace, sizes: tuple[int, ...], methods: tuple[str, ...]):
    """Learning curves of the labeled runs of the selection (one repeat of 5 outer folds; raises
    EvaluationError)."""
    from ..experiments.learning_curve import learning_curve

    pos = compute.labeled_positions(ws)

    def run(progress):
        return learning_curve(ws.ts.take(pos), sizes=sizes, repeats=1, folds=5, methods=list(methods),
                              progress=lambda d, t, m: progress(d / max(t, 1), m))

    return compute.computed(cache_key("learning_curve", sizes, methods), "Learning curves", run, units=len(pos))


def cached_learning_curve(sizes: tuple[int, ...], methods: tuple[str, ...]):
    return compute.cached_result(cache_key("learning_curve", sizes, methods))


def gac_model_for(ws: Workspace, position: int):
    """(the shipped GAC's sub-model that scores run ``position``, the selection's features in that model's
    profile, the kind) for explaining a run no calibrator can be fitted for."""
    from . import session

    gac = shipped_gac()
    kind = str(ws.stored.gac_kind[position]) if ws.stored is not None else str(gac.kinds(ws.ts.take([position]))[0])
    model = gac.models[kind]
    return model, session.workspace_for_profile(model.profile_, model.top_k_).features, kind


GAC_NOTE = ("the shipped General Agent Calibrator (GAC-Reduced), zero-shot: pre-trained on other datasets and "
            "never fitted on these runs; runs with top-k alternatives are scored by its model for them, runs "
            "without by its model that ignores alternatives (see `htc models gac`)")
LABELS_HOWTO = ("add outcome labels: upload a labels file (CSV or JSONL with `id` and `success`) together with "
                "the runs on the Runs page, or join them on the command line with "
                "`htc import runs.jsonl --labels outcomes.csv --out labeled.jsonl`")
