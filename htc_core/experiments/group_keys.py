"""The metadata columns that can define groups of runs in the cross-group experiments (``--by``).

A constant of its own so that the command line names the choices without importing the experiments (and
with them scipy, scikit-learn and pandas)."""

from __future__ import annotations

__all__ = ["GROUP_KEYS"]

GROUP_KEYS = ("dataset", "model", "framework")
