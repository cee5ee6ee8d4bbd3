"""The JSON model file of :class:`~htc_core.calibration.calibrators.HTCCalibrator` (never pickle).

Writing: :func:`model_to_dict`. Reading: :func:`read_model_file` (path -> JSON object) and
:func:`parse_model_dict` (JSON object -> validated constructor parameters and learned state). Every
problem is a ``ValueError`` that says ``<source> is not a valid HTC model file: <why>``.

Fields: format, format_version, htc_version, variant, penalty, solver, alpha, alphas, inner_folds,
random_state, max_iter, tol, profile, top_k (the token-confidence definitions of the features the model
was fitted on; files written before they were recorded load as "paper" / 5), feature_names, coef,
intercept, scaler {mean, scale}, selected_features, training (data summary, with feature_stats: the
per-feature mean and std of the training data, for the applicability check), cv_results, adaptation (for
a model fitted with a prior: the prior, the choice and the inner-CV grid; null otherwise).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .solvers import PENALTIES, SOLVERS, VARIANTS

__all__ = ["MODEL_FORMAT", "MODEL_FORMAT_VERSION", "DEFAULT_PROFILE", "DEFAULT_TOP_K", "model_to_dict",
           "parse_model_dict", "parse_model_text", "read_model_file", "MAX_FILE_BYTES"]

MODEL_FORMAT = "htc-calibrator"
MODEL_FORMAT_VERSION = 1
# the profile and top-k of files that do not record them (the only ones that existed then)
DEFAULT_PROFILE = "paper"
DEFAULT_TOP_K = 5
REQUIRED = ("variant", "alpha", "feature_names", "coef", "intercept", "scaler")
# a model file is a few KB; anything above this is refused before it is read
MAX_FILE_BYTES = 16 << 20
# sane ranges: beyond them a score overflows to inf or NaN on ordinary features (the fitted values of
# real models are many orders of magnitude inside them)
MAX_ABS_WEIGHT = 1e6        # coef, intercept: weights of standardized features
MAX_ABS_MEAN = 1e12         # scaler.mean
SCALE_RANGE = (1e-12, 1e12)  # scaler.scale
ALPHA_RANGE = (1e-12, 1e12)  # alpha and the alpha candidates


class InvalidModelField(ValueError):
    """A field of a model file that fails its check; the readers add the file's name (``<source> is not a valid
    ... model file: <why>``). Raised by the ``checked_*`` helpers, which the GAM's file shares."""


def model_to_dict(model) -> dict:
    """The JSON object of a fitted model (plain lists and numbers; floats round-trip exactly).

    :meth:`HTCCalibrator.save <htc_core.calibration.calibrators.HTCCalibrator.save>` writes it (after checking
    that the labels the model was fitted on can be saved); the fields are listed in the module docstring.

    Parameters
    ----------
    model : HTCCalibrator
        A fitted calibrator.

    Returns
    -------
    dict
        The model file's JSON object.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.model_file import model_to_dict
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
    >>> d = model_to_dict(model)
    >>> d["format"], d["variant"], d["penalty"], len(d["coef"]), d["profile"]
    ('htc-calibrator', 'reduced', 'l1', 48, 'paper')
    """
    from .._version import __version__

    return {
        "format": MODEL_FORMAT,
        "format_version": MODEL_FORMAT_VERSION,
        "htc_version": __version__,
        "variant": model.variant,
        "penalty": PENALTIES.get(model.variant),
        "solver": model.solver,
        "alpha": model.alpha_,
        "alphas": [float(a) for a in model.alpha_candidates_],
        "inner_folds": int(model.inner_folds),
        "random_state": model.random_state,
        "max_iter": int(model.max_iter),
        "tol": float(model.tol),
        "max_logit": None if getattr(model, "logit_bound_", None) is None else float(model.logit_bound_),
        "profile": model.profile_,
        "top_k": int(model.top_k_),
        "feature_names": [str(n) for n in model.feature_names_in_],
        "coef": [float(v) for v in model.coef_[0]],
        "intercept": float(model.intercept_[0]),
        "scaler": {"mean": [float(v) for v in model.mean_], "scale": [float(v) for v in model.scale_]},
        "selected_features": model.selected_features_,
        "training": model.training_summary_,
        "cv_results": model.cv_results_,
        "adaptation": getattr(model, "adaptation_", None),
    }


def read_model_file(path: str | Path) -> Any:
    """The JSON object in ``path``, read with the checks of a model file (not yet validated as a model).

    A missing, unreadable, oversized (over ``MAX_FILE_BYTES``) or non-JSON file, nesting deeper than
    ``htc_core.jsonvalues.MAX_DEPTH``, a number that does not fit a float64 or a lone surrogate raises a
    ValueError saying why.

    Parameters
    ----------
    path : str or path
        The model file.

    Returns
    -------
    object
        The parsed JSON (pass it to :func:`parse_model_dict`).

    Raises
    ------
    ValueError
        ``<path> is not a valid HTC model file: <why>`` (or ``model file <path> does not exist``).

    Examples
    --------
    >>> import json, os, tempfile
    >>> from htc_core.calibration.model_file import read_model_file
    >>> path = os.path.join(tempfile.mkdtemp(), "model.json")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write('{"format": "htc-calibrator", "coef": [0.5, NaN]}')
    >>> read_model_file(path)["coef"]
    [0.5, nan]
    >>> with open(path, "w") as fh:
    ...     _ = fh.write('{"format": ')
    >>> read_model_file(path)
    Traceback (most recent call last):
    ...
    ValueError: ...model.json is not a valid HTC model file: not JSON (Expecting value at line 1)
    """
    path = Path(path)
    bad = f"{path} is not a valid HTC model file"
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(f"{bad}: {size:,} bytes, more than the {MAX_FILE_BYTES:,} a model file may have")
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise ValueError(f"model file {path} does not exist") from None
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as e:
        raise ValueError(f"{bad}: cannot read it as text ({e})") from None
    return parse_model_text(text, source=str(path))


def parse_model_text(text: str | bytes, *, source: str = "model") -> Any:
    """The JSON object of a model file's text or bytes (see :func:`read_model_file` for what is refused).

    Parameters
    ----------
    text : str or bytes
        The file's content (bytes must be UTF-8), e.g. an upload.
    source : str, default="model"
        The name the error messages give the input.

    Returns
    -------
    object
        The parsed JSON (pass it to :func:`parse_model_dict`).

    Raises
    ------
    ValueError
        ``<source> is not a valid HTC model file: <why>``.

    Examples
    --------
    >>> from htc_core.calibration.model_file import parse_model_text
    >>> parse_model_text(b'{"format": "htc-calibrator", "alpha": 1.0}')
    {'format': 'htc-calibrator', 'alpha': 1.0}
    >>> parse_model_text('[[[', source="upload.json")
    Traceback (most recent call last):
    ...
    ValueError: upload.json is not a valid HTC model file: not JSON (Expecting value at line 1)
    """
    from ..jsonvalues import DECODE_HOOKS, MAX_DEPTH, first_bad_value, may_nest_too_deep

    bad = f"{source} is not a valid HTC model file"
    if len(text) > MAX_FILE_BYTES:
        raise ValueError(f"{bad}: {len(text):,} bytes, more than the {MAX_FILE_BYTES:,} a model file may have")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{bad}: not UTF-8 text ({e})") from None
    if may_nest_too_deep(text):
        raise ValueError(f"{bad}: JSON nested more than {MAX_DEPTH} levels deep")
    try:
        obj = json.loads(text, **DECODE_HOOKS)
    except json.JSONDecodeError as e:
        raise ValueError(f"{bad}: not JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise ValueError(f"{bad}: JSON nested too deeply") from None
    problem = first_bad_value(obj)
    if problem is not None:
        field, value, reason = problem
        raise ValueError(f"{bad}: field {field}: {reason}")
    return obj


def parse_model_dict(obj: Any, *, source: str = "model") -> tuple[dict, dict]:
    """Validate a model file's JSON object; return (constructor parameters, learned attributes).

    Every field is checked (header, feature names in the paper's order, vector lengths, finite numbers in sane
    ranges, the token-confidence profile); optional fields absent from older files take their defaults.

    Parameters
    ----------
    obj : object
        The parsed JSON (:func:`read_model_file`, :func:`parse_model_text`).
    source : str, default="model"
        The name the error messages give the input.

    Returns
    -------
    params : dict
        The :class:`~htc_core.calibration.calibrators.HTCCalibrator` constructor parameters.
    state : dict
        The learned attributes (``coef_``, ``intercept_``, ``mean_``, ``scale_``, ``feature_names_in_``, ...).

    Raises
    ------
    ValueError
        ``<source> is not a valid HTC model file: <why>``, naming the field and the value.

    Examples
    --------
    A one-feature model written by hand:

    >>> from htc_core.calibration.model_file import parse_model_dict
    >>> obj = {"format": "htc-calibrator", "format_version": 1, "variant": "reduced", "alpha": 1.0,
    ...        "feature_names": ["top1_gradient_mean"], "coef": [0.5], "intercept": -0.2,
    ...        "scaler": {"mean": [0.0], "scale": [1.0]}}
    >>> params, state = parse_model_dict(obj)
    >>> params["variant"], state["coef_"].tolist(), state["profile_"]
    ('reduced', [[0.5]], 'paper')
    >>> parse_model_dict(dict(obj, coef=[0.5, 1.0]), source="mine.json")
    Traceback (most recent call last):
    ...
    ValueError: mine.json is not a valid HTC model file: coef must have 1 entries (one per name in feature_names), got 2
    """
    try:
        return _parse(obj)
    except InvalidModelField as e:
        raise ValueError(f"{source} is not a valid HTC model file: {e}") from None


def _parse(obj: Any) -> tuple[dict, dict]:
    _check_header(obj)
    names = checked_feature_names(obj["feature_names"])
    d = len(names)
    coef = checked_vector(obj["coef"], "coef", d, -MAX_ABS_WEIGHT, MAX_ABS_WEIGHT)
    mean, scale = _scaler(obj["scaler"], d)
    intercept, alpha = _intercept_and_alpha(obj)
    profile, top_k = checked_profile(obj)
    _fit_options(obj)
    params = dict(variant=obj["variant"], alphas=obj.get("alphas") or (alpha,), inner_folds=obj.get("inner_folds", 5),
                  random_state=obj.get("random_state", 42), max_iter=obj.get("max_iter", 1000),
                  tol=obj.get("tol", 1e-3), profile=profile, top_k=top_k, solver=obj.get("solver", "liblinear"),
                  max_logit=obj.get("max_logit"))
    state = dict(alpha_=alpha, alpha_candidates_=np.asarray(params["alphas"], dtype=np.float64), coef_=coef[None, :],
                 intercept_=np.array([intercept]), mean_=mean, scale_=scale,
                 feature_names_in_=np.array(names, dtype=object), n_features_in_=d, classes_=np.array([0, 1]),
                 profile_=profile, top_k_=top_k, training_summary_=obj.get("training") or {},
                 cv_results_=obj.get("cv_results"), htc_version_=obj.get("htc_version"),
                 logit_bound_=obj.get("max_logit"))
    if isinstance(obj.get("adaptation"), dict):
        state["adaptation_"] = obj["adaptation"]
    return params, state


def _fit_options(obj: dict) -> None:
    """The options a refit would use: integers and a tolerance in sane ranges (absent ones take defaults)."""
    for key, lo, hi in (("inner_folds", 2, 100), ("max_iter", 1, 10**7)):
        v = obj.get(key, lo)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise InvalidModelField(f"{key} must be an integer in [{lo}, {hi}], got {v!r}")
    rs = obj.get("random_state")
    if rs is not None and (isinstance(rs, bool) or not isinstance(rs, int) or not 0 <= rs < 2**32):
        raise InvalidModelField(f"random_state must be null or an integer in [0, 2**32), got {rs!r}")
    if "tol" in obj:
        checked_number(obj, "tol", 1e-12, 1.0)
    if obj.get("max_logit") is not None:
        checked_number(obj, "max_logit", 1e-6, 1e6)
    if obj.get("solver", "liblinear") not in SOLVERS:
        raise InvalidModelField(f"solver must be one of {SOLVERS}, got {obj.get('solver')!r}")


def _check_header(obj: Any) -> None:
    if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
        got = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        raise InvalidModelField(f"expected a JSON object with \"format\": \"{MODEL_FORMAT}\", got {got!r}")
    ver = obj.get("format_version")
    if not isinstance(ver, int) or ver > MODEL_FORMAT_VERSION or ver < 1:
        raise InvalidModelField(f"unsupported format_version {ver!r} (this htc reads version {MODEL_FORMAT_VERSION})")
    for key in REQUIRED:
        if key not in obj:
            raise InvalidModelField(f"missing field {key!r}")
    if obj["variant"] not in VARIANTS:
        raise InvalidModelField(f"variant must be one of {VARIANTS}, got {obj['variant']!r}")


def checked_feature_names(names: Any) -> list[str]:
    """The 48 names in the paper's order, or a subset of them in that order (the columns are then found by
    name when scoring, never by position)."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not names:
        raise InvalidModelField("feature_names must be a non-empty list of strings")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InvalidModelField(f"feature_names has duplicates ({dup!r})")
    from ..features import FEATURE_NAMES, REGISTRY

    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise InvalidModelField(f"unknown feature names {unknown[:5]}; valid features: {', '.join(REGISTRY)}")
    order = [FEATURE_NAMES.index(n) for n in names]
    if order != sorted(order):
        i = next(i for i in range(1, len(order)) if order[i] < order[i - 1])
        raise InvalidModelField(f"feature_names must follow the paper's order (the order of htc_core.features.FEATURE_NAMES, "
                       f"or a subset of it in that order); {names[i]!r} comes after {names[i - 1]!r}")
    return names


def checked_vector(x: Any, what: str, d: int, lo: float = -math.inf, hi: float = math.inf) -> np.ndarray:
    """``x`` as a float vector of length ``d`` with every value finite and in ``[lo, hi]``, else
    :class:`InvalidModelField` naming ``what``."""
    if not isinstance(x, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in x):
        raise InvalidModelField(f"{what} must be a list of numbers")
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (d,):
        raise InvalidModelField(f"{what} must have {d} entries (one per name in feature_names), got {a.size}")
    bad = ~np.isfinite(a) | (a < lo) | (a > hi)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidModelField(f"{what}[{i}] = {float(a[i])!r} is not a finite number in [{lo:g}, {hi:g}]")
    return a


def checked_number(obj: dict, key: str, lo: float, hi: float) -> float:
    """``obj[key]`` as a float in ``[lo, hi]`` (not a bool), else :class:`InvalidModelField` naming ``key``."""
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidModelField(f"{key} must be a number, got {type(v).__name__}")
    f = float(v)
    if not (math.isfinite(f) and lo <= f <= hi):
        raise InvalidModelField(f"{key} = {f!r} is not a finite number in [{lo:g}, {hi:g}]")
    return f


def _scaler(sc: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(sc, dict) or "mean" not in sc or "scale" not in sc:
        raise InvalidModelField("scaler must be an object with 'mean' and 'scale'")
    mean = checked_vector(sc["mean"], "scaler.mean", d, -MAX_ABS_MEAN, MAX_ABS_MEAN)
    scale = checked_vector(sc["scale"], "scaler.scale", d, *SCALE_RANGE)
    return mean, scale


def _intercept_and_alpha(obj: dict) -> tuple[float, float]:
    intercept = checked_number(obj, "intercept", -MAX_ABS_WEIGHT, MAX_ABS_WEIGHT)
    alpha = checked_number(obj, "alpha", *ALPHA_RANGE)
    alphas = obj.get("alphas")
    if alphas is not None and alphas != []:
        checked_vector(alphas, "alphas", len(alphas) if isinstance(alphas, list) else -1, *ALPHA_RANGE)
    return intercept, alpha


def checked_profile(obj: dict) -> tuple[str, int]:
    """The file's token-confidence ``(profile, top_k)``, checked (defaults where a file predates them)."""
    from ..confidence import PROFILES

    profile = obj.get("profile", DEFAULT_PROFILE)
    top_k = obj.get("top_k", DEFAULT_TOP_K)
    if not isinstance(profile, str) or profile not in PROFILES:
        raise InvalidModelField(f"unknown confidence profile {profile!r}; valid profiles: {sorted(PROFILES)}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 0 <= top_k <= 1000:
        raise InvalidModelField(f"top_k must be an integer in [0, 1000], got {top_k!r}")
    return profile, top_k
