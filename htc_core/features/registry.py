"""The feature registry: each of the 48 features registered once, in the paper's order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["FAMILIES", "FeatureSpec"]

FAMILIES = ("Dynamics", "Position", "Stability", "Structure")


@dataclass(frozen=True)
class FeatureSpec:
    """One registered feature: its place, names, family and formula (``htc_core.features.REGISTRY`` values).

    Parameters
    ----------
    index : int
        Its column in the feature matrix (F0 ... F47).
    name : str
        The paper's name (listing FEATURE_MAP_FINAL_STABLE).
    family : str
        Dynamics, Position, Stability or Structure (``FAMILIES``).
    group : str
        The sub-group of the paper's listing.
    display_name : str
        A short name for tables and figures.
    formula : str
        The formula in the paper's notation.
    description : str
        What it measures, in one sentence.

    Examples
    --------
    >>> from htc_core.features import REGISTRY
    >>> spec = REGISTRY["first_top1_avg"]
    >>> spec.code, spec.family, spec.formula
    ('F24', 'Position', 'x_1')
    >>> spec.description
    'First step: mean top-1 confidence.'
    """

    index: int
    name: str
    family: str
    group: str
    display_name: str
    formula: str
    description: str

    @property
    def code(self) -> str:
        """The feature's code, ``F`` and its index.

        Returns
        -------
        str

        Examples
        --------
        >>> from htc_core.features import REGISTRY
        >>> REGISTRY["normalized_step_count"].code
        'F43'
        """
        return f"F{self.index}"


# family -> function(ctx) -> {name: array[n_trajectories]}
FamilyCompute = Callable[["object"], dict[str, np.ndarray]]
