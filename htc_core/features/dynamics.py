"""Category A, Dynamics (19 features): how confidence evolves across steps."""

from __future__ import annotations

import numpy as np

from .segments import seg_max, seg_mean_std, seg_min, within_diffs
from .steps import EPS, FeatureContext

__all__ = ["FAMILY", "SPECS", "compute"]

FAMILY = "Dynamics"

# (name, group, display name, formula, description)
SPECS = [
    ("top1_gradient_mean", "1.1: Cross-step Gradients", "Top-1 gradient, mean", "mean(Δx_t), t=1..S-1",
     "Average step-to-step change of the mean top-1 confidence."),
    ("top1_gradient_std", "1.1: Cross-step Gradients", "Top-1 gradient, std", "std(Δx_t), t=1..S-1",
     "Variability of step-to-step changes of top-1 confidence (oscillation)."),
    ("top1_gradient_max", "1.1: Cross-step Gradients", "Top-1 gradient, max", "max(Δx_t)",
     "Largest single upward jump in top-1 confidence."),
    ("top1_gradient_min", "1.1: Cross-step Gradients", "Top-1 gradient, min", "min(Δx_t)",
     "Largest downward collapse of top-1 confidence."),
    ("top1_gradient_trend", "1.1: Cross-step Gradients", "Top-1 gradient trend", "Δx_{S-1} - Δx_1 (S ≥ 3)",
     "Acceleration or deceleration of belief formation."),
    ("topk_gradient_mean", "1.1: Cross-step Gradients", "Top-k gradient, mean", "mean(Δy_t), t=1..S-1",
     "Average step-to-step change of the mean top-k confidence."),
    ("topk_gradient_std", "1.1: Cross-step Gradients", "Top-k gradient, std", "std(Δy_t)",
     "Variability of step-to-step changes of top-k confidence."),
    ("topk_gradient_max", "1.1: Cross-step Gradients", "Top-k gradient, max", "max(Δy_t)",
     "Largest single upward jump in top-k confidence."),
    ("topk_gradient_min", "1.1: Cross-step Gradients", "Top-k gradient, min", "min(Δy_t)",
     "Largest downward collapse of top-k confidence."),
    ("topk_gradient_trend", "1.1: Cross-step Gradients", "Top-k gradient trend", "Δy_{S-1} - Δy_1 (S ≥ 3)",
     "Acceleration or deceleration of top-k consensus."),
    ("token_gradient_mean", "1.2: Token-level Gradients", "Token gradient, mean", "mean(r_{t,i+1} - r_{t,i}), pooled over steps",
     "Average change between consecutive token confidences within steps."),
    ("token_gradient_std", "1.2: Token-level Gradients", "Token gradient, std", "std(r_{t,i+1} - r_{t,i})",
     "Dithering vs sharp pruning inside steps."),
    ("token_gradient_max", "1.2: Token-level Gradients", "Token gradient, max", "max(r_{t,i+1} - r_{t,i})",
     "Largest token-to-token rise in confidence."),
    ("token_gradient_min", "1.2: Token-level Gradients", "Token gradient, min", "min(r_{t,i+1} - r_{t,i})",
     "Largest token-to-token drop in confidence."),
    ("step_progression_entropy", "1.3: Step Progression", "Entropy progression (CV)", "std(H_t) / (mean(H_t) + ε)",
     "Coefficient of variation of the step entropies."),
    ("step_progression_concentration", "1.3: Step Progression", "Concentration progression (CV)",
     "std(κ_t) / (mean(κ_t) + ε)", "Coefficient of variation of the step concentrations."),
    ("step_progression_spread", "1.3: Step Progression", "Spread progression (CV)", "std(ρ_t) / (mean(ρ_t) + ε)",
     "Coefficient of variation of the step spreads."),
    ("top1_confidence_change", "1.4: Confidence Change", "Top-1 confidence change", "x_S - x_1",
     "Overall strengthening or weakening of top-1 confidence from first to last step."),
    ("topk_confidence_change", "1.4: Confidence Change", "Top-k confidence change", "y_S - y_1",
     "Overall strengthening or weakening of top-k confidence from first to last step."),
]


def _gradient_block(values: np.ndarray, traj_offsets: np.ndarray, prefix: str) -> dict[str, np.ndarray]:
    d, off = within_diffs(values, traj_offsets)
    n_pairs = np.diff(off)
    mean, std = seg_mean_std(d, off)
    out = {
        f"{prefix}_gradient_mean": mean,
        f"{prefix}_gradient_std": std,
        f"{prefix}_gradient_max": seg_max(d, off),
        f"{prefix}_gradient_min": seg_min(d, off),
    }
    trend = np.zeros(len(n_pairs))
    ok = n_pairs >= 2  # S >= 3
    if ok.any():
        trend[ok] = d[off[1:][ok] - 1] - d[off[:-1][ok]]
    out[f"{prefix}_gradient_trend"] = trend
    return out


def compute(ctx: FeatureContext) -> dict[str, np.ndarray]:
    """The 19 Dynamics features of every trajectory.

    How confidence evolves across steps: the cross-step gradients of the mean top-1 and top-k confidence, the
    within-step token gradients, the progression of entropy, concentration and spread, and the change from the first
    to the last step.

    ``SPECS`` lists them (name, group, display name, formula, description) in the paper's order;
    :func:`htc_core.features.extract` calls every family's ``compute`` and places the columns.

    Parameters
    ----------
    ctx : FeatureContext
        The token confidences and step summaries of the runs (:func:`htc_core.features.build_context`).

    Returns
    -------
    dict of str to ndarray of shape (n_trajectories,)
        Feature name -> its values, for the 19 features of ``SPECS``.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features import build_context
    >>> from htc_core.features.dynamics import SPECS, compute
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> values = compute(build_context(ts))
    >>> len(values) == len(SPECS) == 19
    True
    >>> values["top1_gradient_mean"][:3].round(3).tolist()
    [0.046, 0.016, 0.024]
    """
    ts, st = ctx.ts, ctx.steps
    out: dict[str, np.ndarray] = {}
    out.update(_gradient_block(st.top1, ts.traj_offsets, "top1"))
    out.update(_gradient_block(st.topk, ts.traj_offsets, "topk"))
    d, off = within_diffs(ctx.conf.r, ts.step_offsets, ts.traj_offsets)
    mean, std = seg_mean_std(d, off)
    out["token_gradient_mean"] = mean
    out["token_gradient_std"] = std
    out["token_gradient_max"] = seg_max(d, off)
    out["token_gradient_min"] = seg_min(d, off)
    for name, arr in (("entropy", st.entropy), ("concentration", st.concentration), ("spread", st.spread)):
        m, s = seg_mean_std(arr, ts.traj_offsets)
        out[f"step_progression_{name}"] = s / (m + EPS)
    first, last = ctx.first_step, ctx.last_step
    out["top1_confidence_change"] = st.top1[last] - st.top1[first]
    out["topk_confidence_change"] = st.topk[last] - st.topk[first]
    return out
