"""The JSON model file of :class:`~htc_core.calibration.gam.HTCGAM` (``"format": "htc-gam"``; never pickle).

Fields: format, format_version, htc_version, variant ("gam"), kind ("gam" or "linear"), profile, top_k,
feature_names (every input column, in the paper's order), the fit options (alphas, linear_alphas, n_knots,
ridge, dedup_threshold, select, inner_folds, random_state, max_iter, tol), alpha, intercept, shapes (GAM:
per feature with a shape function: name, knots, coef, offset), linear (linear: the embedded HTC-Reduced model
file, checked by :mod:`htc_core.calibration.model_file`), training, cv_results.

Every number is checked as the HTC model file checks its own: knots finite and strictly increasing with
``len(coef) == len(knots) - 4``, coefficients, offsets and the intercept bounded, names known and unique.
Problems raise ``ValueError("<source> is not a valid HTC-GAM model file: <why>")``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .model_file import (ALPHA_RANGE, MAX_ABS_MEAN, MAX_ABS_WEIGHT, _feature_names, _Invalid, _number, _profile,
                         _vector, parse_model_dict)

__all__ = ["GAM_FORMAT", "GAM_FORMAT_VERSION", "gam_to_dict", "parse_gam_dict"]

GAM_FORMAT = "htc-gam"
GAM_FORMAT_VERSION = 1
MAX_KNOTS = 1000
REQUIRED = ("kind", "feature_names", "alpha", "intercept", "profile", "top_k")


def gam_to_dict(model) -> dict:
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


def parse_gam_dict(obj: Any, *, source: str = "model") -> tuple[dict, dict]:
    """Validate an HTC-GAM file's JSON object; return (constructor parameters, learned attributes)."""
    try:
        return _parse(obj, source)
    except _Invalid as e:
        raise ValueError(f"{source} is not a valid HTC-GAM model file: {e}") from None


def _parse(obj: Any, source: str) -> tuple[dict, dict]:
    from .gam_basis import DEGREE, SELECT, ShapeFunction

    if not isinstance(obj, dict) or obj.get("format") != GAM_FORMAT:
        got = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        raise _Invalid(f"expected a JSON object with \"format\": \"{GAM_FORMAT}\", got {got!r}")
    ver = obj.get("format_version")
    if isinstance(ver, bool) or not isinstance(ver, int) or not 1 <= ver <= GAM_FORMAT_VERSION:
        raise _Invalid(f"unsupported format_version {ver!r} (this htc reads version {GAM_FORMAT_VERSION})")
    for key in REQUIRED:
        if key not in obj:
            raise _Invalid(f"missing field {key!r}")
    names = _feature_names(obj["feature_names"])
    profile, top_k = _profile(obj)
    params = _options(obj, SELECT)
    params.update(profile=profile, top_k=top_k)
    alpha = _number(obj, "alpha", *ALPHA_RANGE)
    intercept = _number(obj, "intercept", -MAX_ABS_WEIGHT, MAX_ABS_WEIGHT)
    kind = obj["kind"]
    state = dict(kind_=kind, alpha_=alpha, intercept_=intercept, feature_names_in_=np.array(names, dtype=object),
                 n_features_in_=len(names), profile_=profile, top_k_=top_k, classes_=np.array([0, 1]),
                 training_summary_=obj.get("training") or {}, cv_results_=obj.get("cv_results"),
                 htc_version_=obj.get("htc_version"), shapes_=[], linear_=None)
    if kind == "linear":
        from .calibrators import HTCCalibrator

        lin = obj.get("linear")
        try:
            p, s = parse_model_dict(lin, source="its field linear")
        except ValueError as e:
            raise _Invalid(str(e)) from None
        model = HTCCalibrator(**p)
        for k, v in s.items():
            setattr(model, k, v)
        if [str(n) for n in model.feature_names_in_] != names or (model.profile_, model.top_k_) != (profile, top_k):
            raise _Invalid("the embedded linear model's feature_names, profile or top_k differ from the file's")
        state["linear_"] = model
    elif kind == "gam":
        shapes = obj.get("shapes")
        if not isinstance(shapes, list):
            raise _Invalid("shapes must be a list (one object per feature with a shape function)")
        seen: set[str] = set()
        for i, sh in enumerate(shapes):
            state["shapes_"].append(_shape(sh, i, set(names), seen, DEGREE, ShapeFunction))
    else:
        raise _Invalid(f"kind must be 'gam' or 'linear', got {kind!r}")
    return params, state


def _options(obj: dict, select_values) -> dict:
    out: dict[str, Any] = {}
    for key, lo, hi, default in (("n_knots", 2, MAX_KNOTS, 6), ("inner_folds", 2, 100, 5),
                                 ("max_iter", 1, 10**6, 25)):
        v = obj.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise _Invalid(f"{key} must be an integer in [{lo}, {hi}], got {v!r}")
        out[key] = v
    rs = obj.get("random_state", 42)
    if rs is not None and (isinstance(rs, bool) or not isinstance(rs, int) or not 0 <= rs < 2**32):
        raise _Invalid(f"random_state must be null or an integer in [0, 2**32), got {rs!r}")
    out["random_state"] = rs
    for key, lo, hi, default in (("ridge", 1e-12, 1e6, 0.1), ("dedup_threshold", 1e-12, 1.0, 0.999),
                                 ("tol", 1e-15, 0.5, 1e-6)):
        out[key] = _number(obj, key, lo, hi) if key in obj else default
    for key in ("alphas", "linear_alphas"):
        v = obj.get(key)
        if v is not None:
            _vector(v, key, len(v) if isinstance(v, list) else -1, *ALPHA_RANGE)
            if not v:
                raise _Invalid(f"{key} must be a non-empty list of numbers")
            out[key] = tuple(float(a) for a in v)
    sel = obj.get("select", "cv")
    if sel not in select_values:
        raise _Invalid(f"select must be one of {select_values}, got {sel!r}")
    out["select"] = sel
    return out


def _shape(sh: Any, i: int, names: set, seen: set, degree: int, ShapeFunction):
    where = f"shapes[{i}]"
    if not isinstance(sh, dict) or not {"name", "knots", "coef", "offset"} <= set(sh):
        raise _Invalid(f"{where} must be an object with name, knots, coef and offset")
    name = sh["name"]
    if not isinstance(name, str) or name not in names:
        raise _Invalid(f"{where}.name must be one of feature_names, got {name!r}")
    if name in seen:
        raise _Invalid(f"{where}.name {name!r} has two shape functions")
    seen.add(name)
    knots_in = sh["knots"]
    n = len(knots_in) if isinstance(knots_in, list) else -1
    if not 2 * degree + 2 <= n <= MAX_KNOTS + 2 * degree:
        raise _Invalid(f"{where}.knots must be a list of {2 * degree + 2} to {MAX_KNOTS + 2 * degree} numbers")
    knots = _vector(knots_in, f"{where}.knots", n, -MAX_ABS_MEAN, MAX_ABS_MEAN)
    if not np.all(np.diff(knots) > 0):
        j = int(np.flatnonzero(np.diff(knots) <= 0)[0])
        raise _Invalid(f"{where}.knots must increase strictly; knots[{j + 1}] = {knots[j + 1]!r} follows {knots[j]!r}")
    coef = _vector(sh["coef"], f"{where}.coef", n - degree - 1, -MAX_ABS_WEIGHT, MAX_ABS_WEIGHT)
    off = sh["offset"]
    if isinstance(off, bool) or not isinstance(off, (int, float)) or not math.isfinite(off) \
            or abs(off) > MAX_ABS_WEIGHT:
        raise _Invalid(f"{where}.offset must be a finite number in [-{MAX_ABS_WEIGHT:g}, {MAX_ABS_WEIGHT:g}], "
                       f"got {off!r}")
    return ShapeFunction(name, knots, coef, float(off))
