"""View models of the GAC's applicability check (Runs page) and of "adapt the GAC with these N labels"
(Calibration page). The work is :mod:`htc_core.calibration.shift` and :mod:`~htc_core.experiments.adapt_curve`'s;
each result is computed once per selection through :func:`~htc_core.app.compute.computed`."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..experiments.adapt_curve import LabelComparison, compare_on_labels
from ..calibration.models import DEFAULT_GAC
from ..calibration.shift import ShiftReport, shift_check
from . import compute
from .experiments import shipped_gac
from .session import cache_key
from .workspace import Workspace

__all__ = ["gac_shift", "gac_expected", "adapt_comparison", "AdaptView", "adapt_view", "MIN_LABELS"]

#: the section is offered from 2 runs of each outcome (fewer cannot be compared out of fold)
MIN_LABELS = 2


#: the applicability check reads the tokens of at most this many runs (a seeded uniform sample above it: a
#: mean shift measured on 20,000 runs has a standard error under 0.01 training sd)
SHIFT_SAMPLE = 20_000


def _shift_sample(ws: Workspace):
    """The selection as a TraceSet for the shift check (a seeded sample of :data:`SHIFT_SAMPLE` runs above it)."""
    import numpy as np

    n = len(ws)
    pos = np.arange(n) if n <= SHIFT_SAMPLE else np.sort(np.random.default_rng(0).choice(n, SHIFT_SAMPLE,
                                                                                          replace=False))
    return ws.ts.take(pos)


def gac_shift(ws: Workspace, name: str = DEFAULT_GAC) -> ShiftReport:
    """How far the selection lies from the shipped GAC's training data (per sub-model)."""
    def run(progress):
        progress(0.2, f"comparing {len(ws):,} runs with the training statistics")
        return shift_check(shipped_gac(name), _shift_sample(ws), name=name.upper())

    return compute.computed(cache_key("gac-shift", name), f"Applicability of the shipped {name.upper()}", run)


def gac_expected(ws: Workspace, name: str = DEFAULT_GAC):
    """The shipped GAC's applicability verdict and expected ECE range on the selection
    (:meth:`~htc_core.calibration.general.GeneralCalibrator.assess`)."""
    def run(progress):
        progress(0.2, f"measuring the shift of {len(ws):,} runs from the training data")
        gac, ts = shipped_gac(name), _shift_sample(ws)
        rep = shift_check(gac, ts, name=name.upper())
        # the dashboard shows each run scored on its own (experiments.gac_scores): the range for those scores
        return gac.assess(rep, gac.kinds(ts) == "with_alternatives", gac.predict_proba_traces(ts, set_level=False)[:, 1])

    return compute.computed(cache_key("gac-expected", name), f"Expected error of the shipped {name.upper()}", run)


def adapt_comparison(ws: Workspace, positions, name: str = DEFAULT_GAC) -> LabelComparison:
    """Zero-shot, from scratch and adapted on the labeled runs ``positions`` of the selection (out of fold)."""
    def run(progress):
        progress(0.1, f"cross-validating three calibrators on {len(positions):,} labeled runs")
        return compare_on_labels(ws.ts.take(positions), prior=shipped_gac(name))

    return compute.computed(cache_key("gac-adapt", name), f"Adapting the shipped {name.upper()}", run)


@dataclass
class AdaptView:
    offered: bool
    reason: str | None           # why the section is not offered
    n_labels: int


def adapt_view(ws: Workspace, n_labeled: int, n_pos: int) -> AdaptView:
    if min(n_pos, n_labeled - n_pos) < MIN_LABELS:
        return AdaptView(False, f"it needs at least {MIN_LABELS} successes and {MIN_LABELS} failures among the "
                                f"labeled runs ({n_pos} and {n_labeled - n_pos} here)", n_labeled)
    return AdaptView(True, None, n_labeled)


def metrics_table(cmp: LabelComparison) -> pd.DataFrame:
    t = cmp.metrics.rename(columns={"ece": "ECE ↓", "brier": "Brier ↓", "auroc": "AUROC ↑"})
    return t.round(4)


def shift_table(rep: ShiftReport, k: int = 5) -> pd.DataFrame:
    w = rep.worst(k)
    return pd.DataFrame({"GAC model": w.part, "feature": w.feature, "training mean": w.train_mean,
                         "training sd": w.train_std, "these runs' mean": w.scored_mean,
                         "shift (sd)": w["shift"].round(2), "moved": w.moved})
