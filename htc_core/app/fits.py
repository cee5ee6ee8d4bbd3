"""The dashboard's cached fits and views of the selection: HTC-Full/-Reduced, HTC-GAM, the early-warning
prefix evaluation and per-dataset weights, each computed once through :func:`htc_core.app.compute.computed`
(keyed by the selection's content and the settings). The Feature space projection runs in a background job
instead: :mod:`htc_core.app.projection_job`."""

from __future__ import annotations

from ..calibration.calibrators import HTCCalibrator
from ..explain import DatasetWeights
from ..explain import dataset_weights as _dataset_weights
from . import compute
from .compute import alpha_options, cached_result, computed, evaluation_positions, fit_positions, labeled_positions
from .sampling import EVAL_CAP, FIT_CAP
from .session import cache_key, settings
from .workspace import Workspace


def fitted_gam(ws: Workspace, *, select: str = "cv", run: bool = True):
    """HTC-GAM fitted on every labeled trajectory of the selection (cached; None when not computed yet and
    ``run`` is False). ``select="cv"``: shape functions or HTC-Reduced by inner CV (the model the inspector
    explains with); ``"gam"``: the shape functions even when HTC-Reduced would win (to look at them)."""
    from ..calibration.gam import HTCGAM
    from ..calibration.solvers import DEFAULT_ALPHAS

    key = cache_key("fit", "gam", select, compute.ALPHAS, FIT_CAP)
    hit = cached_result(key)
    if hit is not None or not run:
        return hit
    s = settings()
    pos = fit_positions(ws)
    linear = fitted_model(ws, "reduced")     # the cached HTC-Reduced fit is HTC-GAM's linear candidate

    def fn(progress):
        progress(0.1, f"shape functions vs HTC-Reduced by inner CV over {len(pos):,} labeled trajectories")
        return HTCGAM(select=select, linear_alphas=compute.ALPHAS or DEFAULT_ALPHAS, profile=s["profile"],
                      top_k=s["top_k"]).fit(ws.features.take(pos), ws.labels[pos], meta=ws.ts.meta.iloc[pos],
                                            linear=linear)

    return computed(key, "Fitting HTC-GAM", fn, units=len(pos))


def fitted_model(ws: Workspace, variant: str):
    """HTC-Full or HTC-Reduced (an ``HTCCalibrator``), or HTC-GAM (``variant="gam"``, an ``HTCGAM`` chosen
    by inner CV), fitted on every labeled trajectory of the selection (cached)."""
    if variant == "gam":
        return fitted_gam(ws)
    s = settings()
    pos = fit_positions(ws)

    def run(progress):
        progress(0.1, f"alpha selection over {len(pos):,} labeled trajectories")
        return HTCCalibrator(variant=variant, profile=s["profile"], top_k=s["top_k"], **alpha_options()).fit(
            ws.features.take(pos), ws.labels[pos], meta=ws.ts.meta.iloc[pos])

    return computed(cache_key("fit", variant, compute.ALPHAS, FIT_CAP), f"Fitting HTC-{variant.capitalize()}", run,
                    units=len(pos))


def early_warning(ws: Workspace, *, run: bool = True):
    """The prefix evaluation of the labeled part of the selection (cached; None when not computed yet and
    ``run`` is False): ``htc_core.calibration.prefixes.early_warning`` with the dashboard's settings."""
    from ..calibration.prefixes import early_warning as _early_warning

    s = settings()
    key = cache_key("early_warning", s["seeds"], compute.ALPHAS, EVAL_CAP)
    hit = cached_result(key)
    if hit is not None or not run:
        return hit
    pos = evaluation_positions(ws)

    def fn(progress):
        return _early_warning(ws.ts.take(pos), seeds=s["seeds"], profile=s["profile"], top_k=s["top_k"],
                              progress=lambda done, total, msg: progress(done / total, msg), **alpha_options())

    return computed(key, "Early warning: evaluating every prefix length", fn, units=len(pos))


def dataset_weights(ws: Workspace, variant: str) -> DatasetWeights:
    """One calibrator per dataset of the selection, their weights (cached)."""
    pos = labeled_positions(ws)

    def run(progress):
        progress(0.1, "one calibrator per dataset")
        return _dataset_weights(ws.features.values[pos], ws.labels[pos],
                                ws.ts.meta["dataset"].to_numpy(dtype=object)[pos], variant=variant,
                                alphas=compute.ALPHAS)

    return computed(cache_key("dataset_weights", variant, compute.ALPHAS), "Per-dataset weights", run,
                    units=len(pos))
