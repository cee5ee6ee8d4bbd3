"""The feature registry: each of the 48 features registered once, in the paper's order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

FAMILIES = ("Dynamics", "Position", "Stability", "Structure")


@dataclass(frozen=True)
class FeatureSpec:
    index: int          # F0..F47
    name: str           # the paper's name (FEATURE_MAP_FINAL_STABLE)
    family: str         # Dynamics / Position / Stability / Structure
    group: str          # the sub-group of the paper's listing
    display_name: str
    formula: str        # formula text (paper notation)
    description: str

    @property
    def code(self) -> str:
        return f"F{self.index}"


# family -> function(ctx) -> {name: array[n_trajectories]}
FamilyCompute = Callable[["object"], dict[str, np.ndarray]]
