"""Category C, Stability (10 features): do step signals converge consistently."""

from __future__ import annotations

import numpy as np

from .segments import seg_mean_std
from .steps import FeatureContext

__all__ = ["FAMILY", "SPECS", "compute"]

FAMILY = "Stability"

SPECS = [
    ("attention_entropy_mean", "3.1: Attention Stability", "Entropy, mean over steps", "mean(H_t)",
     "Average dispersion of the step distributions."),
    ("attention_entropy_std", "3.1: Attention Stability", "Entropy, std over steps", "std(H_t)",
     "How much the step entropy fluctuates."),
    ("attention_concentration_mean", "3.1: Attention Stability", "Concentration, mean over steps", "mean(κ_t)",
     "Average peakedness of the steps."),
    ("attention_concentration_std", "3.1: Attention Stability", "Concentration, std over steps", "std(κ_t)",
     "How much the peakedness fluctuates."),
    ("attention_spread_mean", "3.1: Attention Stability", "Spread, mean over steps", "mean(ρ_t)",
     "Average relative variability of the steps."),
    ("attention_spread_std", "3.1: Attention Stability", "Spread, std over steps", "std(ρ_t)",
     "How much the relative variability fluctuates."),
    ("token_volatility_mean", "3.2: Token-level Stability", "Token volatility, mean", "mean(ρ_t)",
     "Average token-level volatility across steps."),
    ("token_volatility_std", "3.2: Token-level Stability", "Token volatility, std", "std(ρ_t)",
     "Step-to-step variation of volatility."),
    ("token_skewness_mean", "3.2: Token-level Stability", "Token skewness, mean", "mean(skew_t)",
     "Average asymmetry of the token confidences."),
    ("token_skewness_std", "3.2: Token-level Stability", "Token skewness, std", "std(skew_t)",
     "Variation of asymmetry over steps."),
]


def compute(ctx: FeatureContext) -> dict[str, np.ndarray]:
    """The 10 Stability features of every trajectory.

    Whether the step signals converge consistently: the mean and standard deviation over steps of the entropy,
    concentration, spread, volatility and skewness.

    ``SPECS`` lists them (name, group, display name, formula, description) in the paper's order;
    :func:`htc_core.features.extract` calls every family's ``compute`` and places the columns.

    Parameters
    ----------
    ctx : FeatureContext
        The token confidences and step summaries of the runs (:func:`htc_core.features.build_context`).

    Returns
    -------
    dict of str to ndarray of shape (n_trajectories,)
        Feature name -> its values, for the 10 features of ``SPECS``.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features import build_context
    >>> from htc_core.features.stability import SPECS, compute
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> values = compute(build_context(ts))
    >>> len(values) == len(SPECS) == 10
    True
    >>> values["attention_entropy_mean"][:3].round(3).tolist()
    [2.82, 2.865, 2.802]
    """
    st, off = ctx.steps, ctx.ts.traj_offsets
    out: dict[str, np.ndarray] = {}
    for name, arr in (("attention_entropy", st.entropy), ("attention_concentration", st.concentration),
                      ("attention_spread", st.spread), ("token_volatility", st.spread),
                      ("token_skewness", st.skewness)):
        m, s = seg_mean_std(arr, off)
        out[f"{name}_mean"] = m
        out[f"{name}_std"] = s
    return out
