"""Scoring with an HTC-GAM model file, numpy only: the B-spline basis, the shape functions and the model file.

An HTC-GAM (:class:`~htc_core.calibration.gam.HTCGAM`) scores a run by ``sigmoid(b + sum_j f_j(x_j))``: each
shape function ``f_j`` is a cubic B-spline of one feature, flat beyond the training range (the feature is
clipped to it) and centred on the training rows; when HTC-Reduced won the inner CV the file holds that linear
model instead. This module is the one place of that maths and of the file's fields and checks:

- :func:`bspline_basis`: the B-spline basis by the Cox-de Boor recursion, written from its definition with
  numpy (scipy's ``BSpline.design_matrix`` gives the same numbers to the bit: ``tests/test_gam_scoring.py``).
- :class:`ShapeFunction`: one feature's fitted function; the estimator's ``contributions``, ``predict_proba``
  and its fit (the training design matrix) use the same basis.
- the JSON model file (``"format": "htc-gam"``): its writer and its reader (fields and checks below).
- :class:`GAMScorer`: the file read for scoring only (``htc score``, ``htc monitor``, ``htc serve``, the
  scale-out workers: :func:`htc_core.calibration.models.load_scorer`). It scores exactly as the estimator,
  to the last bit, without importing scikit-learn or scipy (about 1 s of CPU at the start of a process), and
  cannot be fitted.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .file_scorer import FileScorer
from .inputs import align_columns, check_finite, unpack_features_and_names
from .linear_scoring import LinearScorer, check_feature_profile
from .model_file import (ALPHA_RANGE, MAX_ABS_MEAN, MAX_ABS_WEIGHT, InvalidModelField, checked_feature_names,
                         checked_number, checked_profile, checked_vector, parse_model_dict)

__all__ = ["bspline_basis", "ShapeFunction", "GAMScorer", "DEGREE", "SELECT", "GAM_FORMAT", "GAM_FORMAT_VERSION"]

# the shape functions' degree (cubic)
DEGREE = 3
# HTCGAM(select=...): GAM vs HTC-Reduced by inner CV, always the GAM, always HTC-Reduced
SELECT = ("cv", "gam", "linear")


# ================================================================ the basis
def bspline_basis(x, knots, degree: int = DEGREE) -> np.ndarray:
    """The dense B-spline design matrix of ``x``: row i holds every basis function of the knots at ``x[i]``.

    The Cox-de Boor recursion, from its definition: ``B[i, 0](x) = 1`` on the knot interval
    ``t[i] <= x < t[i + 1]``, and ``B[i, j](x) = w[i] (x - t[i]) + w[i + 1] (t[i + j + 1] - x)`` with
    ``w[i] = B[i, j - 1](x) / (t[i + j] - t[i])`` (a term of two equal knots is 0). Only the ``degree + 1``
    functions that are not zero on the interval of ``x`` are computed. A value outside the base interval
    ``[t[degree], t[-degree - 1]]`` is evaluated on the end interval's polynomials (extrapolated), and the right
    end ``t[-degree - 1]`` belongs to the last interval. This is what ``scipy.interpolate.BSpline.design_matrix(x,
    knots, degree, extrapolate=True).toarray()`` gives, to the bit (held by ``tests/test_gam_scoring.py``).

    Parameters
    ----------
    x : array-like of shape (n,)
        The points; NaN or infinity raises ``ValueError("Array must not contain infs or nans.")``.
    knots : array-like of shape (m + degree + 1,)
        The full knot vector, non-decreasing, at least ``2 * degree + 2`` knots.
    degree : int, default=3
        The splines' degree.

    Returns
    -------
    ndarray of shape (n, m)
        ``m = len(knots) - degree - 1`` basis functions; each row sums to 1 on the base interval.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.gam_scoring import bspline_basis
    >>> B = bspline_basis([0.0, 0.5, 2.0], np.arange(-3.0, 6.0))
    >>> B.shape, np.round(B[1], 4).tolist()
    ((3, 5), [0.0208, 0.4792, 0.4792, 0.0208, 0.0])
    """
    x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    t = np.ascontiguousarray(knots, dtype=np.float64)
    if not np.isfinite(x).all() or not np.isfinite(t).all():
        raise ValueError("Array must not contain infs or nans.")
    if t.ndim != 1 or np.any(t[1:] < t[:-1]) or t.size < 2 * degree + 2:
        raise ValueError(f"knots must be a non-decreasing 1-D array of at least {2 * degree + 2} numbers for "
                         f"degree {degree}, got {t.size}")
    m = t.size - degree - 1
    # the knot interval of each point: t[ell] <= x < t[ell + 1], the end intervals for points beyond them
    ell = np.clip(np.searchsorted(t, x, side="right") - 1, degree, m - 1)
    h = _nonzero_basis(x, t, ell, degree)
    out = np.zeros((x.size, m))
    flat = (np.arange(x.size) * m + ell - degree)[:, None] + np.arange(degree + 1)   # row i, columns ell-degree..ell
    out.reshape(-1)[flat] = h
    return out


def _nonzero_basis(x: np.ndarray, t: np.ndarray, ell: np.ndarray, degree: int) -> np.ndarray:
    """[n, degree + 1]: ``B[ell - degree + r, degree](x)`` for r = 0..degree, by raising the degree one at a time."""
    h = np.zeros((x.size, degree + 1))
    h[:, 0] = 1.0                                  # degree 0: the indicator of the interval
    for j in range(1, degree + 1):                 # degree j from degree j - 1: h[:, :j] -> h[:, :j + 1]
        prev = h[:, :j].copy()
        h[:, 0] = 0.0
        for r in range(1, j + 1):                  # B[ell - j + r, j]'s two terms
            right, left = t[ell + r], t[ell + r - j]
            span = right - left
            same = span == 0.0
            w = prev[:, r - 1] / np.where(same, 1.0, span)
            w[same] = 0.0
            h[:, r - 1] += w * (right - x)
            h[:, r] = np.where(same, 0.0, w * (x - left))
    return h


def basis(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """[n, m] cubic B-spline design matrix of ``x`` clipped to the base interval (flat beyond the data).

    The shape functions' basis, at fit (:class:`~htc_core.calibration.gam.HTCGAM`'s training design) and at
    scoring alike: ``x`` is clipped to ``[knots[3], knots[-4]]`` (infinity to an end; NaN raises ValueError),
    then :func:`bspline_basis`."""
    lo, hi = knots[DEGREE], knots[-DEGREE - 1]
    return bspline_basis(np.clip(x, lo, hi), knots, DEGREE)


def shape_contributions(X: np.ndarray, shapes: list, feature_names) -> np.ndarray:
    """[n, d]: each shape function's value on its column of ``X`` (in ``feature_names``' order), 0 elsewhere.

    The GAM's scoring, shared by :meth:`HTCGAM.contributions <htc_core.calibration.gam.HTCGAM.contributions>`
    and :class:`GAMScorer`: the logit is ``shape_contributions(...).sum(axis=1) + intercept``."""
    out = np.zeros_like(X)
    index = {str(n): j for j, n in enumerate(feature_names)}
    for s in shapes:
        j = index[s.name]
        out[:, j] = s.value(X[:, j])
    return out


# ================================================================ the shape functions
class ShapeFunction:
    """One feature's fitted shape function: ``value(x)`` is its contribution to the logit.

    A cubic B-spline, flat beyond the training range and centred on the training rows (mean value 0 there).
    :meth:`HTCGAM.shape <htc_core.calibration.gam.HTCGAM.shape>` returns it.

    Parameters
    ----------
    name : str
        The feature.
    knots : ndarray of shape (m + 4,)
        The full knot vector of the cubic basis (strictly increasing).
    coef : ndarray of shape (m,)
        The spline coefficients.
    offset : float
        Subtracted from the spline so that the mean value on the training rows is 0.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.gam import HTCGAM
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(htc.extract(ts), ts.labels)
    >>> f = gam.shape("top1_gradient_mean")
    >>> f.name, len(f.coef) == len(f.knots) - 4
    ('top1_gradient_mean', True)
    """

    def __init__(self, name: str, knots: np.ndarray, coef: np.ndarray, offset: float):
        self.name, self.knots, self.coef, self.offset = name, knots, coef, float(offset)

    @property
    def range(self) -> tuple[float, float]:
        """The training range of the feature: the function is flat beyond it.

        Returns
        -------
        tuple of float
            ``(low, high)``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(htc.extract(ts), ts.labels)
        >>> f = gam.shape("top1_gradient_mean")
        >>> lo, hi = f.range
        >>> bool(lo < hi), bool(f.value([lo - 1.0])[0] == f.value([lo])[0])
        (True, True)
        """
        return float(self.knots[DEGREE]), float(self.knots[-DEGREE - 1])

    def value(self, x) -> np.ndarray:
        """The function's value, the contribution to the logit, at feature values ``x``.

        Parameters
        ----------
        x : float or array-like
            Values of the feature (clipped to :attr:`range`).

        Returns
        -------
        ndarray of shape (n,)
            One value per entry of ``x`` (flattened).

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(htc.extract(ts), ts.labels)
        >>> f = gam.shape("top1_gradient_mean")
        >>> f.value([0.0, 0.1]).shape
        (2,)
        """
        return basis(np.asarray(x, dtype=np.float64).reshape(-1), self.knots) @ self.coef - self.offset

    def curve(self, n: int = 100) -> tuple[np.ndarray, np.ndarray]:
        """The function on an even grid over the training range, for plotting.

        Parameters
        ----------
        n : int, default=100
            Points of the grid.

        Returns
        -------
        grid : ndarray of shape (n,)
            From ``range[0]`` to ``range[1]``.
        values : ndarray of shape (n,)
            :meth:`value` on the grid.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(htc.extract(ts), ts.labels)
        >>> f = gam.shape("top1_gradient_mean")
        >>> grid, values = f.curve(5)
        >>> grid.shape, values.shape, bool(grid[0] == f.range[0])
        ((5,), (5,), True)
        """
        lo, hi = self.range
        grid = np.linspace(lo, hi, n)
        return grid, self.value(grid)

    def to_dict(self) -> dict:
        """The function as the GAM model file holds it (one entry of ``shapes``).

        Returns
        -------
        dict
            ``name``, ``knots``, ``coef`` and ``offset`` (plain floats).

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(htc.extract(ts), ts.labels)
        >>> f = gam.shape("top1_gradient_mean")
        >>> sorted(f.to_dict())
        ['coef', 'knots', 'name', 'offset']
        """
        return {"name": self.name, "knots": [float(v) for v in self.knots], "coef": [float(v) for v in self.coef],
                "offset": self.offset}


# ================================================================ the model file
# The JSON model file of :class:`~htc_core.calibration.gam.HTCGAM` (``"format": "htc-gam"``; never pickle).
#
# Fields: format, format_version, htc_version, variant ("gam"), kind ("gam" or "linear"), profile, top_k,
# feature_names (every input column, in the paper's order), the fit options (alphas, linear_alphas, n_knots,
# ridge, dedup_threshold, select, inner_folds, random_state, max_iter, tol), alpha, intercept, shapes (GAM:
# per feature with a shape function: name, knots, coef, offset), linear (linear: the embedded HTC-Reduced model
# file, checked by :mod:`htc_core.calibration.model_file`), training, cv_results.
#
# Every number is checked as the HTC model file checks its own: knots finite and strictly increasing with
# ``len(coef) == len(knots) - 4``, coefficients, offsets and the intercept bounded, names known and unique.
# Problems raise ``ValueError("<source> is not a valid HTC-GAM model file: <why>")``.
GAM_FORMAT = "htc-gam"
GAM_FORMAT_VERSION = 1
MAX_KNOTS = 1000
REQUIRED = ("kind", "feature_names", "alpha", "intercept", "profile", "top_k")


def gam_to_dict(model) -> dict:
    """The ``"htc-gam"`` model file's JSON object of a fitted :class:`~htc_core.calibration.gam.HTCGAM` (fields
    above)."""
    from .._version import __version__

    return {
        "format": GAM_FORMAT, "format_version": GAM_FORMAT_VERSION, "htc_version": __version__,
        "variant": "gam", "kind": model.kind_, "profile": model.profile_, "top_k": int(model.top_k_),
        "feature_names": [str(n) for n in model.feature_names_in_],
        "alphas": [float(a) for a in np.ravel(model.alphas)],
        "linear_alphas": [float(a) for a in np.ravel(model.linear_alphas)],
        "n_knots": int(model.n_knots), "ridge": float(model.ridge), "dedup_threshold": float(model.dedup_threshold),
        "select": model.select, "inner_folds": int(model.inner_folds), "random_state": model.random_state,
        "max_iter": int(model.max_iter), "tol": float(model.tol),
        "alpha": float(model.alpha_), "intercept": float(model.intercept_),
        "shapes": [s.to_dict() for s in model.shapes_],
        "linear": model.linear_.to_dict() if model.kind_ == "linear" else None,
        "training": model.training_summary_, "cv_results": model.cv_results_,
    }


def parse_gam_dict(obj: Any, *, source: str = "model", linear: Callable[[dict, dict], Any] = LinearScorer
                   ) -> tuple[dict, dict]:
    """Validate an HTC-GAM file's JSON object; return (constructor parameters, learned attributes).

    ``linear(params, state)`` makes the embedded HTC-Reduced model of a file whose ``kind`` is ``"linear"``
    (from its own file's parameters and attributes): a :class:`~htc_core.calibration.linear_scoring.LinearScorer`
    by default, an ``HTCCalibrator`` for the estimator."""
    try:
        return _parse(obj, source, linear)
    except InvalidModelField as e:
        raise ValueError(f"{source} is not a valid HTC-GAM model file: {e}") from None


def _parse(obj: Any, source: str, linear: Callable[[dict, dict], Any]) -> tuple[dict, dict]:

    if not isinstance(obj, dict) or obj.get("format") != GAM_FORMAT:
        got = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        raise InvalidModelField(f"expected a JSON object with \"format\": \"{GAM_FORMAT}\", got {got!r}")
    ver = obj.get("format_version")
    if isinstance(ver, bool) or not isinstance(ver, int) or not 1 <= ver <= GAM_FORMAT_VERSION:
        raise InvalidModelField(f"unsupported format_version {ver!r} (this htc reads version {GAM_FORMAT_VERSION})")
    for key in REQUIRED:
        if key not in obj:
            raise InvalidModelField(f"missing field {key!r}")
    names = checked_feature_names(obj["feature_names"])
    profile, top_k = checked_profile(obj)
    params = _options(obj, SELECT)
    params.update(profile=profile, top_k=top_k)
    alpha = checked_number(obj, "alpha", *ALPHA_RANGE)
    intercept = checked_number(obj, "intercept", -MAX_ABS_WEIGHT, MAX_ABS_WEIGHT)
    kind = obj["kind"]
    state = dict(kind_=kind, alpha_=alpha, intercept_=intercept, feature_names_in_=np.array(names, dtype=object),
                 n_features_in_=len(names), profile_=profile, top_k_=top_k, classes_=np.array([0, 1]),
                 training_summary_=obj.get("training") or {}, cv_results_=obj.get("cv_results"),
                 htc_version_=obj.get("htc_version"), shapes_=[], linear_=None)
    if kind == "linear":
        try:
            p, s = parse_model_dict(obj.get("linear"), source="its field linear")
        except ValueError as e:
            raise InvalidModelField(str(e)) from None
        model = linear(p, s)
        if [str(n) for n in model.feature_names_in_] != names or (model.profile_, model.top_k_) != (profile, top_k):
            raise InvalidModelField("the embedded linear model's feature_names, profile or top_k differ from the file's")
        state["linear_"] = model
    elif kind == "gam":
        shapes = obj.get("shapes")
        if not isinstance(shapes, list):
            raise InvalidModelField("shapes must be a list (one object per feature with a shape function)")
        seen: set[str] = set()
        for i, sh in enumerate(shapes):
            state["shapes_"].append(_shape(sh, i, set(names), seen, DEGREE, ShapeFunction))
    else:
        raise InvalidModelField(f"kind must be 'gam' or 'linear', got {kind!r}")
    return params, state


def _options(obj: dict, select_values) -> dict:
    out: dict[str, Any] = {}
    for key, lo, hi, default in (("n_knots", 2, MAX_KNOTS, 6), ("inner_folds", 2, 100, 5),
                                 ("max_iter", 1, 10**6, 25)):
        v = obj.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise InvalidModelField(f"{key} must be an integer in [{lo}, {hi}], got {v!r}")
        out[key] = v
    rs = obj.get("random_state", 42)
    if rs is not None and (isinstance(rs, bool) or not isinstance(rs, int) or not 0 <= rs < 2**32):
        raise InvalidModelField(f"random_state must be null or an integer in [0, 2**32), got {rs!r}")
    out["random_state"] = rs
    for key, lo, hi, default in (("ridge", 1e-12, 1e6, 0.1), ("dedup_threshold", 1e-12, 1.0, 0.999),
                                 ("tol", 1e-15, 0.5, 1e-6)):
        out[key] = checked_number(obj, key, lo, hi) if key in obj else default
    for key in ("alphas", "linear_alphas"):
        v = obj.get(key)
        if v is not None:
            checked_vector(v, key, len(v) if isinstance(v, list) else -1, *ALPHA_RANGE)
            if not v:
                raise InvalidModelField(f"{key} must be a non-empty list of numbers")
            out[key] = tuple(float(a) for a in v)
    sel = obj.get("select", "cv")
    if sel not in select_values:
        raise InvalidModelField(f"select must be one of {select_values}, got {sel!r}")
    out["select"] = sel
    return out


def _shape(sh: Any, i: int, names: set, seen: set, degree: int, ShapeFunction):
    where = f"shapes[{i}]"
    if not isinstance(sh, dict) or not {"name", "knots", "coef", "offset"} <= set(sh):
        raise InvalidModelField(f"{where} must be an object with name, knots, coef and offset")
    name = sh["name"]
    if not isinstance(name, str) or name not in names:
        raise InvalidModelField(f"{where}.name must be one of feature_names, got {name!r}")
    if name in seen:
        raise InvalidModelField(f"{where}.name {name!r} has two shape functions")
    seen.add(name)
    knots_in = sh["knots"]
    n = len(knots_in) if isinstance(knots_in, list) else -1
    if not 2 * degree + 2 <= n <= MAX_KNOTS + 2 * degree:
        raise InvalidModelField(f"{where}.knots must be a list of {2 * degree + 2} to {MAX_KNOTS + 2 * degree} numbers")
    knots = checked_vector(knots_in, f"{where}.knots", n, -MAX_ABS_MEAN, MAX_ABS_MEAN)
    if not np.all(np.diff(knots) > 0):
        j = int(np.flatnonzero(np.diff(knots) <= 0)[0])
        raise InvalidModelField(f"{where}.knots must increase strictly; knots[{j + 1}] = {knots[j + 1]!r} follows {knots[j]!r}")
    coef = checked_vector(sh["coef"], f"{where}.coef", n - degree - 1, -MAX_ABS_WEIGHT, MAX_ABS_WEIGHT)
    off = sh["offset"]
    if isinstance(off, bool) or not isinstance(off, (int, float)) or not math.isfinite(off) \
            or abs(off) > MAX_ABS_WEIGHT:
        raise InvalidModelField(f"{where}.offset must be a finite number in [-{MAX_ABS_WEIGHT:g}, {MAX_ABS_WEIGHT:g}], "
                       f"got {off!r}")
    return ShapeFunction(name, knots, coef, float(off))



# ================================================================ the scorer
def check_gam_rows(values, n_features: int, estimator: str = "HTCGAM") -> np.ndarray:
    """``values`` (in the model's column order) as a finite C-ordered float64 [n, d] array, with the messages of
    the estimator's check (scikit-learn's ``check_array``, then ``check_finite``; ``estimator`` is the class
    named), without scikit-learn."""
    try:
        X = np.asarray(values, dtype=np.float64, order="C")
    except (TypeError, ValueError) as e:
        raise ValueError(str(e)) from None
    if X.ndim < 2:
        what = "scalar" if X.ndim == 0 else "1D"
        raise ValueError(f"Expected 2D array, got {what} array instead:\narray={X}.\nReshape your data either using "
                         "array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) if it "
                         "contains a single sample.")
    if X.ndim > 2:
        raise ValueError(f"Found array with dim {X.ndim}, while dim <= 2 is required.")
    for axis, what in ((0, "sample"), (1, "feature")):
        if X.shape[axis] < 1:
            raise ValueError(f"Found array with 0 {what}(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but {estimator} is expecting {n_features} features as "
                         "input.")
    check_finite(X)
    return X


class GAMScorer(FileScorer):
    """A fitted HTC-GAM read from its file (``htc fit --variant gam``, ``HTCGAM.save``), for scoring only.

    Scores exactly as :class:`~htc_core.calibration.gam.HTCGAM` (the same shape functions, basis and sum; a file
    whose ``kind`` is ``"linear"`` scores with its embedded HTC-Reduced model as a
    :class:`~htc_core.calibration.linear_scoring.LinearScorer`), with the same learned attributes (``kind_``,
    ``shapes_``, ``linear_``, ``intercept_``, ``feature_names_in_``, ``profile_``, ``top_k_``,
    ``training_summary_``, ...), with numpy alone: no scikit-learn or scipy. Load an ``HTCGAM`` instead to
    refit or explain the model.

    Parameters
    ----------
    params : dict
        The constructor parameters recorded in the file (``alphas``, ``n_knots``, ``select``, ...), set as
        attributes.
    state : dict
        The learned attributes (``kind_``, ``shapes_``, ``intercept_``, ...), set as attributes.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.gam import HTCGAM
    >>> from htc_core.calibration.gam_scoring import GAMScorer
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> fm = htc.extract(ts)
    >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
    >>> scorer = GAMScorer.from_dict(gam.to_dict())
    >>> bool((scorer.predict_proba(fm) == gam.predict_proba(fm)).all())
    True
    """

    variant = "gam"

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "GAMScorer":
        """The scorer of an HTC-GAM model file's JSON object, checked as ``HTCGAM.from_dict`` checks it.

        Parameters
        ----------
        obj : dict
            The object of an HTC-GAM model file.
        source : str, default="model"
            What ``obj`` came from, named in the error messages.

        Returns
        -------
        GAMScorer
            The scorer; anything invalid raises the ValueError ``HTCGAM.from_dict`` raises.

        Examples
        --------
        >>> from htc_core.calibration.gam_scoring import GAMScorer
        >>> GAMScorer.from_dict({"format": "htc-gam", "format_version": 9}, source="upload.json")
        Traceback (most recent call last):
        ...
        ValueError: upload.json is not a valid HTC-GAM model file: unsupported format_version 9 (this htc reads version 1)
        """
        return cls(*parse_gam_dict(obj, source=source))

    def checked(self, X, estimator: str = "HTCGAM") -> np.ndarray:
        """The model's columns of X (found by name when X has names), as a finite float64 array.

        Parameters
        ----------
        X : FeatureMatrix or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.
        estimator : str, default="HTCGAM"
            The estimator the messages name (``"HTCCalibrator"`` for the linear kind's check).

        Returns
        -------
        ndarray of shape (n_runs, d)
            C-ordered float64, d = ``n_features_in_``; a ValueError says what is wrong otherwise (the
            estimator's messages).

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.gam_scoring import GAMScorer
        >>> scorer = GAMScorer({}, {"n_features_in_": 2, "feature_names_in_": np.array(["a", "b"]),
        ...                         "profile_": "paper", "top_k_": 5})
        >>> scorer.checked([[1, 2]]).dtype
        dtype('float64')
        >>> scorer.checked([[1, np.nan]])
        Traceback (most recent call last):
        ...
        ValueError: X contains NaN or infinity: nan at row 0, column 1 (features must be finite)
        """
        values, names, of_matrix = unpack_features_and_names(X)
        check_feature_profile(of_matrix, self.profile_, self.top_k_)
        return check_gam_rows(align_columns(values, names, [str(n) for n in self.feature_names_in_]),
                              self.n_features_in_, estimator)

    def decision_function(self, X) -> np.ndarray:
        """Logit of the calibrated confidence: the intercept plus every shape function's value.

        Parameters
        ----------
        X : FeatureMatrix or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)
            The logit, ``HTCGAM.decision_function``'s to the bit (the linear model's where it won the inner CV).

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> from htc_core.calibration.gam_scoring import GAMScorer
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> z = GAMScorer.from_dict(gam.to_dict()).decision_function(fm)
        >>> bool((z == gam.decision_function(fm)).all())
        True
        """
        if self.kind_ == "linear":    # checked as HTCCalibrator checks (an empty X is refused, as there)
            self.checked(X, estimator="HTCCalibrator")
            return self.linear_.decision_function(X)
        return shape_contributions(self.checked(X), self.shapes_, self.feature_names_in_).sum(axis=1) + self.intercept_

    @property
    def display_name(self) -> str:
        """The model's name in tables and plots: "HTC-GAM", or says HTC-Reduced won the inner CV.

        Returns
        -------
        str
            ``"HTC-GAM"`` or ``"HTC-GAM (linear: HTC-Reduced won the inner CV)"``, as the estimator's.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> from htc_core.calibration.gam_scoring import GAMScorer
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="linear").fit(htc.extract(ts), ts.labels)
        >>> GAMScorer.from_dict(gam.to_dict()).display_name
        'HTC-GAM (linear: HTC-Reduced won the inner CV)'
        """
        return "HTC-GAM" if self.kind_ == "gam" else "HTC-GAM (linear: HTC-Reduced won the inner CV)"

    def __repr__(self) -> str:
        return f"GAMScorer(kind={self.kind_!r}, alpha={self.alpha_:g})"
