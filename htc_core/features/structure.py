"""Category D, Structure (5 features): the form factor of a trajectory."""

from __future__ import annotations

import numpy as np

from .segments import seg_mean_std
from .steps import FeatureContext

FAMILY = "Structure"

SPECS = [
    ("normalized_step_count", "4.1: Structural Metrics", "Step count / 10", "S / 10", "Normalized trajectory length."),
    ("first_token_count", "4.1: Structural Metrics", "First step tokens", "n_1", "Number of tokens in the first step."),
    ("last_token_count", "4.1: Structural Metrics", "Last step tokens", "n_S", "Number of tokens in the last step."),
    ("avg_tokens_per_step", "4.1: Structural Metrics", "Tokens per step, mean", "(Σ_t n_t) / S",
     "Average token count per step."),
    ("std_tokens_per_step", "4.1: Structural Metrics", "Tokens per step, std", "std(n_t)",
     "Variation in token counts across steps."),
]


def compute(ctx: FeatureContext) -> dict[str, np.ndarray]:
    ts, st = ctx.ts, ctx.steps
    m, s = seg_mean_std(st.n, ts.traj_offsets)
    return {
        "normalized_step_count": ts.steps_per_trajectory.astype(np.float64) / 10.0,
        "first_token_count": st.n[ctx.first_step],
        "last_token_count": st.n[ctx.last_step],
        "avg_tokens_per_step": m,
        "std_tokens_per_step": s,
    }
