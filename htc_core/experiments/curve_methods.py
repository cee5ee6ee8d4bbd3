"""The learning-curve methods: :class:`CurveMethod` (one ``fit_predict`` per row of the curves, contract in
:mod:`htc_core.experiments.learning_curve`) and the registry :data:`CURVE_METHODS` with the built-in entries.

Kept apart from the curve loop so that naming the methods (the ``htc learning-curve --help`` text) imports no
numeric library: every entry imports what it fits with only when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["CurveMethod", "CURVE_METHODS", "register_curve_method", "resolve_curve_methods"]


@dataclass(frozen=True)
class CurveMethod:
    """One method of the learning curves.

    Parameters
    ----------
    name : str
        The method's name in tables and plots.
    fit_predict : callable
        ``fit_predict(train_ts, y_train, test_ts, seed) -> probabilities`` (the contract in
        :mod:`htc_core.experiments.learning_curve`).
    requires : tuple of str, default ()
        Optional modules it imports, checked before a run (a missing one raises ``MissingExtraError`` with the
        install command).
    kind : str, default "features"
        "htc", "features", "sequence" or "zero-shot".
    description : str, default ""
        One line for ``--help`` and the report.

    Examples
    --------
    >>> from htc_core.experiments.curve_methods import CURVE_METHODS
    >>> gp = CURVE_METHODS["GP"]
    >>> gp.kind, gp.requires, gp.description
    ('features', (), 'Gaussian process classifier, RBF + white noise')
    >>> CURVE_METHODS["LSTM"].requires
    ('torch',)
    """

    name: str
    fit_predict: Callable
    requires: tuple = ()
    kind: str = "features"
    description: str = ""


def _features(ts, profile: str = "paper", top_k: int = 5) -> np.ndarray:
    from ..features import extract

    return extract(ts, profile=profile, top_k=top_k).values


def _htc(variant: str):
    def fit_predict(train_ts, y_train, test_ts, seed):
        from ..calibration.calibrators import HTCCalibrator

        cal = HTCCalibrator(variant=variant, random_state=seed, top_k=5).fit(_features(train_ts), y_train)
        return cal.predict_proba(_features(test_ts))[:, 1]

    return fit_predict


def _on_features(make):
    def fit_predict(train_ts, y_train, test_ts, seed):
        return make(seed).fit(_features(train_ts), y_train).predict_proba(_features(test_ts))[:, 1]

    return fit_predict


def _on_sequences(make):
    def fit_predict(train_ts, y_train, test_ts, seed):
        from .sequence_models import token_sequences

        est = make(seed).fit(token_sequences(train_ts), y_train)
        return est.predict_proba(token_sequences(test_ts))[:, 1]

    return fit_predict


def _mlp(seed):
    from .learning import MLPBaseline
    return MLPBaseline(random_state=seed)


def _xgb(seed):
    from .learning import XGBoostBaseline
    return XGBoostBaseline(random_state=seed)


def _gp(seed):
    from .learning import GPBaseline
    return GPBaseline(random_state=seed)


def _lstm(seed):
    from .sequence_models import LSTMBaseline
    return LSTMBaseline(random_state=seed)


def _transformer(seed):
    from .sequence_models import TransformerBaseline
    return TransformerBaseline(random_state=seed)


# name -> CurveMethod, in the order of the tables and plots
CURVE_METHODS: dict[str, CurveMethod] = {}


def register_curve_method(method: CurveMethod) -> None:
    """Add (or replace, by name) a learning-curve method of :data:`CURVE_METHODS`.

    Parameters
    ----------
    method : CurveMethod
        The method; its ``fit_predict`` follows the contract in :mod:`htc_core.experiments.learning_curve`.

    Returns
    -------
    None
        The registry is changed in place.

    Raises
    ------
    ValueError
        If ``method`` is not a CurveMethod with a callable ``fit_predict``.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.experiments.curve_methods import (CURVE_METHODS, CurveMethod, register_curve_method,
    ...                                                 resolve_curve_methods)
    >>> register_curve_method(CurveMethod("always 0.4", lambda tr, y, te, seed: np.full(len(te), 0.4),
    ...                                   kind="zero-shot"))
    >>> [m.name for m in resolve_curve_methods(["Always 0.4"])]
    ['always 0.4']
    >>> del CURVE_METHODS["always 0.4"]                       # leave the registry as it was
    """
    if not isinstance(method, CurveMethod) or not callable(method.fit_predict):
        raise ValueError(f"method must be a CurveMethod with a callable fit_predict, got {method!r}")
    CURVE_METHODS[method.name] = method


for _m in (CurveMethod("HTC-Full", _htc("full"), kind="htc", description="L2 logistic on the 48 features"),
           CurveMethod("HTC-Reduced", _htc("reduced"), kind="htc", description="L1 logistic on the 48 features"),
           CurveMethod("MLP", _on_features(_mlp), ("torch",), description="48-32-16-2 MLP (PyTorch)"),
           CurveMethod("XGBoost", _on_features(_xgb), ("xgboost",), description="100 trees of depth 3"),
           CurveMethod("GP", _on_features(_gp), description="Gaussian process classifier, RBF + white noise"),
           CurveMethod("LSTM", _on_sequences(_lstm), ("torch",), "sequence",
                       "LSTM(64) on the per-token top-k logprobs"),
           CurveMethod("Transformer", _on_sequences(_transformer), ("torch",), "sequence",
                       "1-layer Transformer (d=32) on the per-token top-k logprobs")):
    register_curve_method(_m)


def resolve_curve_methods(methods=None) -> list[CurveMethod]:
    """The learning-curve methods asked for, checked: names (case-insensitive) or CurveMethod objects.

    Parameters
    ----------
    methods : str, CurveMethod, sequence of them, or None, default None
        None: every registered method.

    Returns
    -------
    list of CurveMethod
        In the order given, duplicates (by name) once.

    Raises
    ------
    ValueError
        If a name is not registered or the list is empty.
    MissingExtraError
        If a method needs an optional package that is not installed (the message names the install command).

    Examples
    --------
    >>> from htc_core.experiments.curve_methods import resolve_curve_methods
    >>> [m.name for m in resolve_curve_methods(["htc-full", "GP", "HTC-Full"])]
    ['HTC-Full', 'GP']
    >>> resolve_curve_methods(["SVM"])
    Traceback (most recent call last):
    ...
    ValueError: methods: unknown method 'SVM'; known: HTC-Full, HTC-Reduced, MLP, XGBoost, GP, LSTM, Transformer
    """
    from .learning import require

    if methods is None:
        out = list(CURVE_METHODS.values())
    else:
        if isinstance(methods, (str, CurveMethod)):
            methods = [methods]
        by_lower = {k.lower(): v for k, v in CURVE_METHODS.items()}
        out = []
        for m in methods:
            if isinstance(m, CurveMethod):
                out.append(m)
            elif isinstance(m, str) and m.strip().lower() in by_lower:
                out.append(by_lower[m.strip().lower()])
            else:
                raise ValueError(f"methods: unknown method {m!r}; known: {', '.join(CURVE_METHODS)}")
        if not out:
            raise ValueError("methods must not be empty")
    out = list({m.name: m for m in out}.values())
    for m in out:
        for mod in m.requires:
            require(mod, f"the {m.name} baseline")
    return out
