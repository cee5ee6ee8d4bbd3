"""The 48 HTC features (paper Appendix, Listing FEATURE_MAP_FINAL_STABLE), computed vectorized.

>>> from htc_core.features import extract, REGISTRY
>>> fm = extract(trace_set)            # FeatureMatrix, fm.values is [n_trajectories, 48]
>>> REGISTRY["last_top1_avg"].formula
'x_S'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..traces import TraceSet
from . import dynamics, position, stability, structure
from .registry import FAMILIES, FeatureSpec
from .steps import EPS, FeatureContext, StepStats, build_context, step_stats

_MODULES = (dynamics, position, stability, structure)


def _build_registry() -> dict[str, FeatureSpec]:
    reg: dict[str, FeatureSpec] = {}
    i = 0
    for mod in _MODULES:
        for name, group, display, formula, desc in mod.SPECS:
            reg[name] = FeatureSpec(i, name, mod.FAMILY, group, display, formula, desc)
            i += 1
    return reg


REGISTRY: dict[str, FeatureSpec] = _build_registry()
FEATURE_NAMES: tuple[str, ...] = tuple(REGISTRY)
N_FEATURES = len(FEATURE_NAMES)


def get_feature(name: str) -> FeatureSpec:
    """The registered feature ``name`` (also accepts codes such as 'F31')."""
    if isinstance(name, str) and name.upper().startswith("F") and name[1:].isdigit():
        i = int(name[1:])
        if 0 <= i < N_FEATURES:
            return REGISTRY[FEATURE_NAMES[i]]
    if name not in REGISTRY:
        raise ValueError(f"unknown feature {name!r}; valid features: {', '.join(FEATURE_NAMES)}")
    return REGISTRY[name]


def family_of(name: str) -> str:
    return get_feature(name).family


@dataclass
class FeatureMatrix:
    """Result of feature extraction: one row per trajectory, columns in the paper's order."""

    values: np.ndarray          # float64 [n_trajectories, 48]
    ids: np.ndarray             # object [n_trajectories]
    profile: str
    top_k: int
    names: tuple[str, ...] = FEATURE_NAMES

    def __len__(self) -> int:
        return self.values.shape[0]

    def column(self, name: str) -> np.ndarray:
        return self.values[:, get_feature(name).index]

    def to_frame(self, meta: pd.DataFrame | None = None) -> pd.DataFrame:
        df = pd.DataFrame(self.values, columns=list(self.names))
        if meta is not None:
            head = meta[["id", "dataset", "model", "success"]].reset_index(drop=True)
            df = pd.concat([head, df], axis=1)
        else:
            df.insert(0, "id", self.ids)
        return df

    def take(self, indices) -> "FeatureMatrix":
        idx = np.asarray(indices)
        return FeatureMatrix(self.values[idx], self.ids[idx], self.profile, self.top_k, self.names)


def extract(ts: TraceSet, *, profile: str = "paper", top_k: int = 5) -> FeatureMatrix:
    """Compute the 48 features of every trajectory in ``ts``.

    Cost is O(total tokens): per-step statistics come from segment reductions
    over the step offsets, per-trajectory features from reductions over the
    trajectory offsets; there is no Python loop over trajectories or tokens.
    """
    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    if np.any(ts.steps_per_trajectory == 0):
        bad = ts.ids[ts.steps_per_trajectory == 0][:3]
        raise ValueError(f"every trajectory needs at least one step; empty: {list(bad)}")
    if np.any(ts.tokens_per_step == 0):
        raise ValueError("every step needs at least one token (readers drop empty steps)")
    ctx = build_context(ts, profile=profile, top_k=top_k)
    values = np.empty((ts.n_trajectories, N_FEATURES), dtype=np.float64)
    for mod in _MODULES:
        for name, arr in mod.compute(ctx).items():
            values[:, REGISTRY[name].index] = arr
    return FeatureMatrix(values=values, ids=ts.ids, profile=profile, top_k=top_k)


__all__ = [
    "REGISTRY", "FEATURE_NAMES", "N_FEATURES", "FAMILIES", "FeatureSpec", "FeatureMatrix", "FeatureContext",
    "StepStats", "EPS", "extract", "get_feature", "family_of", "build_context", "step_stats",
]
