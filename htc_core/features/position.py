"""Category B, Position (14 features): what the first and last steps reveal."""

from __future__ import annotations

import numpy as np

from .steps import FeatureContext

__all__ = ["FAMILY", "SPECS", "compute"]

FAMILY = "Position"

_STEP_FEATURES = [
    # suffix, symbol, step-stat attribute, short name (no "attention": these are statistics of the token
    # probabilities, the words htc_core.explain.measures uses), description
    ("attention_entropy", "H", "entropy", "entropy", "entropy of the normalized token confidences"),
    ("attention_concentration", "κ", "concentration", "concentration", "max token confidence over the step mean"),
    ("attention_spread", "ρ", "spread", "spread", "std over mean of the token confidences"),
    ("confidence_volatility", "ρ", "spread", "volatility", "same as spread, read as instability"),
    ("confidence_skewness", "skew", "skewness", "skewness", "skewness of the token confidences (n_t ≥ 2)"),
    ("top1_avg", "x", "top1", "top-1 probability, mean", "mean top-1 confidence"),
    ("topk_avg", "y", "topk", "top-k probability, mean", "mean top-k confidence"),
]

SPECS = []
for _where, _idx, _grp in (("first", "1", "2.1: First Step Specific"), ("last", "S", "2.2: Last Step Specific")):
    for _suffix, _sym, _attr, _short, _desc in _STEP_FEATURES:
        SPECS.append((f"{_where}_{_suffix}", _grp, f"{_where.capitalize()} step {_short}", f"{_sym}_{_idx}",
                      f"{_where.capitalize()} step: {_desc}."))


def compute(ctx: FeatureContext) -> dict[str, np.ndarray]:
    """The 14 Position features of every trajectory.

    What the first and the last step reveal: their entropy, concentration, spread, volatility, skewness and mean
    top-1 / top-k confidence.

    ``SPECS`` lists them (name, group, display name, formula, description) in the paper's order;
    :func:`htc_core.features.extract` calls every family's ``compute`` and places the columns.

    Parameters
    ----------
    ctx : FeatureContext
        The token confidences and step summaries of the runs (:func:`htc_core.features.build_context`).

    Returns
    -------
    dict of str to ndarray of shape (n_trajectories,)
        Feature name -> its values, for the 14 features of ``SPECS``.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features import build_context
    >>> from htc_core.features.position import SPECS, compute
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> values = compute(build_context(ts))
    >>> len(values) == len(SPECS) == 14
    True
    >>> values["first_top1_avg"][:3].round(3).tolist()
    [0.922, 0.937, 0.932]
    """
    st = ctx.steps
    out: dict[str, np.ndarray] = {}
    for where, idx in (("first", ctx.first_step), ("last", ctx.last_step)):
        for suffix, _sym, attr, _short, _desc in _STEP_FEATURES:
            out[f"{where}_{suffix}"] = getattr(st, attr)[idx]
    return out
