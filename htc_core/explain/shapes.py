"""HTC-GAM's shape functions as plottable curves, ordered by importance, with the data under them.

A shape function ``f_j`` is feature ``j``'s contribution to the logit as a function of its raw value
(centred: its mean over the training rows is 0). :func:`shape_curves` evaluates every non-zero shape
function of a fitted :class:`~htc_core.calibration.gam.HTCGAM` on a grid over its training range and
bins the given rows' values of the feature (the data density drawn under the curve). Importance is the
mean ``|contribution|`` over those rows (default), or the range of the curve (max - min on the grid):
decisions written down here, as the Feature weights page shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..features import FEATURE_NAMES, REGISTRY
from .inputs import check_matrix

__all__ = ["ShapeCurve", "ShapeCurves", "shape_curves", "IMPORTANCE"]

# how the curves are ordered: mean ``|contribution|`` over the rows, or the curve's range
IMPORTANCE = ("mean_abs", "range")


@dataclass(frozen=True)
class ShapeCurve:
    """One feature's shape function on a grid and the density of the rows' values under it.

    Parameters
    ----------
    feature : str
        The feature's name (as the model knows it).
    code : str
        The feature's short code (the paper's; the name for a feature not registered).
    display_name : str
        The feature's name in words (the name for a feature not registered).
    family : str
        The feature's family ("" for a feature not registered).
    x : numpy.ndarray
        The grid over the feature's training range.
    y : numpy.ndarray
        The shape function on the grid, in logits (centred on the training rows).
    bin_edges : numpy.ndarray
        The edges of the density's bins.
    counts : numpy.ndarray of int
        Rows per bin (values outside the training range clipped to it).
    mean_abs : float
        Mean ``|contribution|`` over the rows.
    range : float
        Max - min of the curve on the grid.
    importance : float
        The ordering measure: ``mean_abs`` or ``range``.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.gam import HTCGAM
    >>> from htc_core.explain.shapes import shape_curves
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(200, 3))
    >>> y = (rng.uniform(size=200) < 1 / (1 + np.exp(1.5 - X[:, 0] ** 2))).astype(float)   # U-shaped in x0
    >>> model = HTCGAM(select="gam", alphas=(4.0,), n_knots=5).fit(X, y)
    >>> curves = shape_curves(model, X, n_grid=50, n_bins=10)
    >>> top = curves.curves[0]
    >>> top.feature, top.x.shape, int(top.counts.sum())
    ('x0', (50,), 200)
    >>> round(top.mean_abs, 3), round(top.range, 3)
    (0.519, 1.814)
    """

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
    """The shape curves of one fitted HTC-GAM, most important first (made by :func:`shape_curves`).

    Parameters
    ----------
    curves : list of ShapeCurve
        The non-flat shape functions, most important first.
    kind : str
        The model's kind: "gam", or "linear" when HTC-Reduced won the inner CV (then there are no curves).
    order_by : {"mean_abs", "range"}
        The importance the curves are ordered by.
    n_rows : int
        The rows behind the densities.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.gam import HTCGAM
    >>> from htc_core.explain.shapes import shape_curves
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(200, 3))
    >>> y = (rng.uniform(size=200) < 1 / (1 + np.exp(1.5 - X[:, 0] ** 2))).astype(float)   # U-shaped in x0
    >>> model = HTCGAM(select="gam", alphas=(4.0,), n_knots=5).fit(X, y)
    >>> curves = shape_curves(model, X, n_grid=50, n_bins=10)
    >>> curves.kind, curves.order_by, curves.n_rows, len(curves)
    ('gam', 'mean_abs', 200, 3)
    """

    curves: list[ShapeCurve]
    kind: str
    order_by: str
    n_rows: int

    def __len__(self) -> int:
        return len(self.curves)

    def to_frame(self) -> pd.DataFrame:
        """One row per curve: its feature and importance.

        Returns
        -------
        pandas.DataFrame
            Columns feature, code, display_name, family, mean_abs, range, importance; most important first.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.gam import HTCGAM
        >>> from htc_core.explain.shapes import shape_curves
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-2, 2, size=(200, 3))
        >>> y = (rng.uniform(size=200) < 1 / (1 + np.exp(1.5 - X[:, 0] ** 2))).astype(float)   # U-shaped in x0
        >>> model = HTCGAM(select="gam", alphas=(4.0,), n_knots=5).fit(X, y)
        >>> curves = shape_curves(model, X, n_grid=50, n_bins=10)
        >>> curves.to_frame()[["feature", "mean_abs", "range"]].round(3)
          feature  mean_abs  range
        0      x0     0.519  1.814
        1      x1     0.145  0.579
        2      x2     0.112  0.445
        """
        return pd.DataFrame([{"feature": c.feature, "code": c.code, "display_name": c.display_name,
                              "family": c.family, "mean_abs": c.mean_abs, "range": c.range,
                              "importance": c.importance} for c in self.curves],
                            columns=["feature", "code", "display_name", "family", "mean_abs", "range", "importance"])

    def to_dict(self) -> dict:
        """The curves as plain JSON-ready values (lists, not arrays).

        Returns
        -------
        dict
            Keys kind, order_by, n_rows and curves (each with feature, x, y, bin_edges, counts, mean_abs,
            range).

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.gam import HTCGAM
        >>> from htc_core.explain.shapes import shape_curves
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-2, 2, size=(200, 3))
        >>> y = (rng.uniform(size=200) < 1 / (1 + np.exp(1.5 - X[:, 0] ** 2))).astype(float)   # U-shaped in x0
        >>> model = HTCGAM(select="gam", alphas=(4.0,), n_knots=5).fit(X, y)
        >>> curves = shape_curves(model, X, n_grid=50, n_bins=10)
        >>> d = curves.to_dict()
        >>> sorted(d), sorted(d["curves"][0])
        (['curves', 'kind', 'n_rows', 'order_by'], ['bin_edges', 'counts', 'feature', 'mean_abs', 'range', 'x', 'y'])
        """
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
    """The non-zero shape functions of a fitted HTC-GAM, with the data under them, most important first.

    Parameters
    ----------
    model : HTCGAM
        A fitted :class:`~htc_core.calibration.gam.HTCGAM`.
    X : FeatureMatrix or array-like of shape (n_runs, n_features)
        The rows it was fitted on, or any rows with its features: the density and the importance.
    order_by : {"mean_abs", "range"}, default "mean_abs"
        Importance as the mean ``|contribution|`` over the rows, or as the curve's range on the grid.
    n_grid : int, default 100
        Grid points of each curve (at least 2).
    n_bins : int, default 30
        Bins of each density (at least 1).
    min_importance : float, default 1e-6
        A shape function less important than this (in logits; penalized flat) is left out.

    Returns
    -------
    ShapeCurves
        The curves; none when the model is linear (HTC-Reduced won its inner CV).

    Raises
    ------
    ValueError
        If ``order_by``, ``n_grid`` or ``n_bins`` is invalid, or ``model`` is not a fitted HTCGAM.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.gam import HTCGAM
    >>> from htc_core.explain.shapes import shape_curves
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(200, 3))
    >>> y = (rng.uniform(size=200) < 1 / (1 + np.exp(1.5 - X[:, 0] ** 2))).astype(float)   # U-shaped in x0
    >>> model = HTCGAM(select="gam", alphas=(4.0,), n_knots=5).fit(X, y)
    >>> curves = shape_curves(model, X, n_grid=50, n_bins=10)
    >>> [c.feature for c in curves.curves]
    ['x0', 'x1', 'x2']
    >>> ranged = shape_curves(model, X, order_by="range")
    >>> [round(c.importance, 3) for c in ranged.curves]
    [1.814, 0.579, 0.445]
    """
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
