"""Category B, Position (14 features): what the first and last steps reveal."""

from __future__ import annotations

import numpy as np

from .steps import FeatureContext

FAMILY = "Position"

_STEP_FEATURES = [
    # suffix, symbol, step-stat attribute, description
    ("attention_entropy", "H", "entropy", "entropy of the normalized token confidences"),
    ("attention_concentration", "κ", "concentration", "max token confidence over the step mean"),
    ("attention_spread", "ρ", "spread", "std over mean of the token confidences"),
    ("confidence_volatility", "ρ", "spread", "same as spread, read as instability"),
    ("confidence_skewness", "skew", "skewness", "skewness of the token confidences (n_t ≥ 2)"),
    ("top1_avg", "x", "top1", "mean top-1 confidence"),
    ("topk_avg", "y", "topk", "mean top-k confidence"),
]

SPECS = []
for _where, _idx, _grp in (("first", "1", "2.1: First Step Specific"), ("last", "S", "2.2: Last Step Specific")):
    for _suffix, _sym, _attr, _desc in _STEP_FEATURES:
        SPECS.append((f"{_where}_{_suffix}", _grp,
                      f"{_where.capitalize()} step {_suffix.replace('_', ' ')}", f"{_sym}_{_idx}",
                      f"{_where.capitalize()} step: {_desc}."))


def compute(ctx: FeatureContext) -> dict[str, np.ndarray]:
    st = ctx.steps
    out: dict[str, np.ndarray] = {}
    for where, idx in (("first", ctx.first_step), ("last", ctx.last_step)):
        for suffix, _sym, attr, _desc in _STEP_FEATURES:
            out[f"{where}_{suffix}"] = getattr(st, attr)[idx]
    return out
