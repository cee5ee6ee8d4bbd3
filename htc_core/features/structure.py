"""Category D, Structure (5 features): the form factor of a trajectory."""

from __future__ import annotations

import numpy as np

from .segments import seg_mean_std
from .steps import FeatureContext

__all__ = ["FAMILY", "SPECS", "compute"]

FAMILY = "Structure"

SPECS = [
    ("normalized_step_count", "4.1: Structural Metrics", "Number of steps / 10", "S / 10",
     "Normalized trajectory length: the number of steps / 10."),
    ("first_token_count", "4.1: Structural Metrics", "First step tokens", "n_1", "Number of tokens in the first step."),
    ("last_token_count", "4.1: Structural Metrics", "Last step tokens", "n_S", "Number of tokens in the last step."),
    ("avg_tokens_per_step", "4.1: Structural Metrics", "Tokens per step, mean", "(Σ_t n_t) / S",
     "Average token count per step."),
    ("std_tokens_per_step", "4.1: Structural Metrics", "Tokens per step, std", "std(n_t)",
     "Variation in token counts across steps."),
]


def compute(ctx: FeatureContext) -> dict[str, np.ndarray]:
    """The 5 Structure features of every trajectory.

    The form factor of a trajectory: its length and token counts.

    ``SPECS`` lists them (name, group, display name, formula, description) in the paper's order;
    :func:`htc_core.features.extract` calls every family's ``compute`` and places the columns.

    Parameters
    ----------
    ctx : FeatureContext
        The token confidences and step summaries of the runs (:func:`htc_core.features.build_context`).

    Returns
    -------
    dict of str to ndarray of shape (n_trajectories,)
        Feature name -> its values, for the 5 features of ``SPECS``.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features import build_context
    >>> from htc_core.features.structure import SPECS, compute
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> values = compute(build_context(ts))
    >>> len(values) == len(SPECS) == 5
    True
    >>> values["first_token_count"][:3].tolist()
    [26.0, 26.0, 25.0]
    """
    ts, st = ctx.ts, ctx.steps
    m, s = seg_mean_std(st.n, ts.traj_offsets)
    return {
        "normalized_step_count": ts.steps_per_trajectory.astype(np.float64) / 10.0,
        "first_token_count": st.n[ctx.first_step],
        "last_token_count": st.n[ctx.last_step],
        "avg_tokens_per_step": m,
        "std_tokens_per_step": s,
    }
