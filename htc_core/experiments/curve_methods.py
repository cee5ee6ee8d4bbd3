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
    """A learning-curve row: ``name``, ``fit_predict`` (contract in the module doc), ``requires``: optional
    modules it imports (checked before the run: missing ones raise MissingExtraError with the install
    command), ``kind`` (htc, features, sequence, zero-shot), ``description``."""

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


#: name -> CurveMethod, in the order of the tables and plots
CURVE_METHODS: dict[str, CurveMethod] = {}


def register_curve_method(method: CurveMethod) -> None:
    """Add (or replace) a learning-curve method; see the module doc for the ``fit_predict`` contract."""
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
    """``None`` -> every registered method; else names (case-insensitive) or CurveMethod objects. Checks that
    the optional packages they need are installed (MissingExtraError naming the install command)."""
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
