"""HTC-GAM's shape functions as plottable curves, ordered by importance, with the data under them.

A shape function ``f_j`` is feature ``j``'s contribution to the logit as a function of its raw value
(centred: its mean over the training rows is 0). :func:`shape_curves` evaluates every non-zero shape
function of a fitted :class:`~htc_core.calibration.gam.HTCGAM` on a grid over its training range and
bins the given rows' values of the feature (the data density drawn under the curve). Importance is the
mean |contribution| over those rows (default), or the range of the curve (max - min on the grid):
decisions written down here, as the Feature weights page shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..features import FEATURE_NAMES, REGISTRY
from .inputs import check_matrix

__all__ = ["ShapeCurve", "ShapeCurves", "shape_curves", "IMPORTANCE"]

#: how the curves are ordered: mean |contribution| over the rows, or the curve's range
IMPORTANCE = ("mean_abs", "range")


@dataclass(frozen=True)
class ShapeCurve:
    """One feature's shape function on a grid (``x``, ``y`` in logits) and the density of the rows' values
    (``bin_edges``, ``counts``); ``importance``: the ordering measure, ``mean_abs`` and ``range`` both."""

    feature: str
    code: str
    display_name: str
    family: str
    x: np.ndarray
    y: np.ndarray
    bin_edges: np.ndarray
    counts: np.ndarray
    mean_abs: float
    range: float
    importance: float


@dataclass(frozen=True)
class ShapeCurves:
    """The curves of one fitted HTC-GAM, most important first; ``kind`` is the model's ("gam" or "linear":
    HTC-Reduced won the inner CV and there are no shape functions); ``n_rows``: rows behind the density."""

    curves: list[ShapeCurve]
    kind: str
    order_by: str
    n_rows: int

    def __len__(self) -> int:
        return len(self.curves)

    def to_frame(self) -> pd.DataFrame:
        """One row per curve: feature, code, display_name, family, mean_abs, range, importance."""
        return pd.DataFrame([{"feature": c.feature, "code": c.code, "display_name": c.display_name,
                              "family": c.family, "mean_abs": c.mean_abs, "range": c.range,
                              "importance": c.importance} for c in self.curves],
                            columns=["feature", "code", "display_name", "family", "mean_abs", "range", "importance"])

    def to_dict(self) -> dict:
        return {"kind": self.kind, "order_by": self.order_by, "n_rows": self.n_rows,
                "curves": [{"feature": c.feature, "x": c.x.tolist(), "y": c.y.tolist(),
                            "bin_edges": c.bin_edges.tolist(), "counts": c.counts.tolist(),
                            "mean_abs": c.mean_abs, "range": c.range} for c in self.curves]}


def _column(model, Xv: np.ndarray, name: str) -> np.ndarray:
    names = [str(n) for n in model.feature_names_in_]
    if Xv.shape[1] == len(FEATURE_NAMES) and name in FEATURE_NAMES and all(n in FEATURE_NAMES for n in names):
        return Xv[:, FEATURE_NAMES.index(name)]
    return Xv[:, names.index(name)]


def shape_curves(model, X, *, order_by: str = "mean_abs", n_grid: int = 100, n_bins: int = 30,
                 min_importance: float = 1e-6) -> ShapeCurves:
    """The non-zero shape functions of a fitted ``HTCGAM`` on ``X`` (the rows it was fitted on, or any rows
    with its features), most important first. A shape function whose importance is below
    ``min_importance`` logits (penalized flat) is left out."""
    if order_by not in IMPORTANCE:
        raise ValueError(f"order_by must be one of {IMPORTANCE}, got {order_by!r}")
    for name, v, lo in (("n_grid", n_grid, 2), ("n_bins", n_bins, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if not hasattr(model, "kind_"):
        raise ValueError(f"model must be a fitted HTCGAM, got {model!r}")
    Xv = check_matrix(X)
    curves = []
    for sh in (model.shapes_ if model.kind_ == "gam" else []):
        col = _column(model, Xv, sh.name)
        col = col[np.isfinite(col)]
        gx, gy = sh.curve(int(n_grid))
        mean_abs = float(np.mean(np.abs(sh.value(col)))) if col.size else 0.0
        rng = float(np.max(gy) - np.min(gy))
        imp = mean_abs if order_by == "mean_abs" else rng
        if not np.any(sh.coef != 0) or imp < min_importance:
            continue
        lo, hi = sh.range
        counts, edges = np.histogram(np.clip(col, lo, hi), bins=int(n_bins), range=(lo, hi) if hi > lo else None)
        spec = REGISTRY.get(sh.name)
        curves.append(ShapeCurve(feature=sh.name, code=spec.code if spec else sh.name,
                                 display_name=spec.display_name if spec else sh.name,
                                 family=spec.family if spec else "", x=gx, y=gy, bin_edges=edges, counts=counts,
                                 mean_abs=mean_abs, range=rng, importance=imp))
    curves.sort(key=lambda c: (-c.importance, c.feature))
    return ShapeCurves(curves=curves, kind=str(model.kind_), order_by=order_by, n_rows=int(Xv.shape[0]))
