"""The methods of the evaluation table, behind one interface, and their registry.

A :class:`Method` has a ``name`` (its row in the table), the ``input`` it reads (``"features"``: the HTC
feature matrix, or the name of a single-signal confidence such as ``"Bottom10"`` or ``"Verbalized"``) and
``fit(X_train, y_train, ctx) -> Fitted``; ``Fitted.predict(X_test)`` gives the confidences of the test
rows, ``Fitted.info`` the per-fold columns (``n_features``, ``alpha``, ``temperature``) and
``Fitted.selected`` (feature-selecting methods only) the features kept. The evaluation loop
(:func:`htc_core.calibration.evaluation.evaluate`) treats every method alike; adding one to the table is::

    register_method(MyMethod("HTC-Reduced (dynamics only)"))

or passing the object in ``evaluate(..., methods=[..., MyMethod(...)])`` without registering it.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from .baselines import RAW_BASELINES, PlattScaling, TemperatureScaling
from .calibrators import HTCCalibrator

__all__ = ["FEATURES", "FitContext", "Fitted", "Method", "HTCMethod", "GAMMethod", "RawConfidence",
           "TemperatureScaled", "PlattScaled", "IsotonicScaled", "MIN_ISOTONIC_TRAIN", "SINGLE_SIGNALS", "METHODS",
           "register_method", "resolve_methods", "PriorAdapted"]

# the input key of the HTC feature matrix (every other input key names a single-signal confidence)
FEATURES = "features"


@dataclass(frozen=True)
class FitContext:
    """What a method may use besides its training rows: the outer fold's seed and the evaluation settings.

    Parameters
    ----------
    seed : int
        The repeat's seed (HTC's inner folds are shuffled with it).
    feature_names : sequence of str, default=()
        The names of the feature matrix's columns.
    alphas : sequence of float, default=()
        HTC's candidate alphas.
    inner_folds : int, default=5
        Folds of HTC's inner alpha selection.
    max_iter : int, default=1000
        Iteration cap of HTC's solver.
    profile : str, default="paper"
        The features' token-confidence profile.
    top_k : int, default=5
        The features' top-k.

    Examples
    --------
    >>> from htc_core.calibration.methods import FitContext
    >>> ctx = FitContext(seed=42, alphas=(0.1, 1.0))
    >>> ctx.seed, ctx.inner_folds, ctx.profile
    (42, 5, 'paper')
    """

    seed: int
    feature_names: Sequence[str] = ()
    alphas: Sequence[float] = ()
    inner_folds: int = 5
    max_iter: int = 1000
    profile: str = "paper"
    top_k: int = 5


@dataclass
class Fitted:
    """A method fitted on one outer-training part: what :meth:`Method.fit` returns.

    Parameters
    ----------
    predict : callable
        ``predict(X_test)`` -> confidences in [0, 1], one per test row.
    info : dict, default={}
        Per-fold columns (``n_features``, ``alpha``, ``temperature``; absent ones are NaN in
        ``EvaluationResult.per_fold``).
    selected : ndarray of bool or None, default=None
        For methods that select features, a mask over ``FitContext.feature_names`` (counted in
        ``selected_counts``).
    weights : ndarray or None, default=None
        Their standardized weights (kept in ``EvaluationResult.weights`` for the Top-1/3/5 selection
        frequency).
    model : object or None, default=None
        The fitted model itself when it can be saved as JSON (``to_dict``): the evaluation keeps the first
        repeat's fold models, so an out-of-fold confidence is explained by the very model that produced it.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.methods import Fitted
    >>> fitted = Fitted(predict=lambda c: np.clip(c, 0, 1), info={"n_features": 1})
    >>> fitted.predict(np.array([0.2, 1.3])), fitted.n_selected
    (array([0.2, 1. ]), None)
    """

    predict: Callable[[np.ndarray], np.ndarray]
    info: dict = field(default_factory=dict)
    selected: np.ndarray | None = None
    weights: np.ndarray | None = None   # standardized weights over FitContext.feature_names (ranked by |w|)
    # the fitted model itself when it can be saved as JSON (``to_dict``): the evaluation keeps the first
    # repeat's fold models, so an out-of-fold confidence is explained by the very model that produced it
    model: object | None = None

    @property
    def n_selected(self) -> int | None:
        """How many features the fit kept (None for a method that does not select features).

        Returns
        -------
        int or None
            The number of True entries of ``selected``.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.methods import Fitted
        >>> Fitted(predict=np.asarray, selected=np.array([True, False, True])).n_selected
        2
        """
        return None if self.selected is None else int(np.count_nonzero(self.selected))


class Method(ABC):
    """One row of the evaluation table.

    Subclasses set ``name`` and ``input`` and implement :meth:`fit`. ``selects_features = True`` adds the
    mean number of features kept to the summary (like HTC-Full / HTC-Reduced); ``in_default_table = False``
    runs the method only when named (opt-in, e.g. the slower HTC-GAM); ``min_train`` is the fewest
    outer-training rows it may be fitted on (the evaluation skips it, with the reason, when the smallest
    training fold is smaller).

    Examples
    --------
    A baseline that always says the training success rate, evaluated next to a registered method:

    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.calibration.methods import Fitted, Method
    >>> class BaseRate(Method):
    ...     name, input = "Base rate", "GlobalTrace-TP"
    ...     def fit(self, X, y, ctx):
    ...         return Fitted(predict=lambda c: np.full(len(c), y.mean()), info={"n_features": 0})
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> result = htc.evaluate(ts, seeds=1, n_splits=3, methods=["GlobalTrace-TP", BaseRate()])
    >>> result.methods, round(result.summary["Base rate"]["auroc"]["mean"], 2)
    (['GlobalTrace-TP', 'Base rate'], 0.5)
    """

    name: str
    input: str = FEATURES
    selects_features: bool = False
    # run by ``evaluate(methods=None)``; False: only when named (opt-in, e.g. the slower HTC-GAM)
    in_default_table: bool = True
    # the fewest outer-training rows this method may be fitted on; the evaluation skips it (with the reason)
    # when the smallest training fold is smaller
    min_train: int = 0

    @abstractmethod
    def fit(self, X: np.ndarray, y: np.ndarray, ctx: FitContext) -> Fitted:
        """Fit on the outer-training rows of the method's input.

        Parameters
        ----------
        X : ndarray of shape (n, d) or (n,)
            The input's training rows: features (``input == "features"``) or a single-signal confidence.
        y : ndarray of shape (n,)
            0/1 labels.
        ctx : FitContext
            The fold's seed and the evaluation settings.

        Returns
        -------
        Fitted
            Its ``predict`` scores the test rows.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.methods import METHODS, FitContext
        >>> fitted = METHODS["GlobalTrace-TP+Temp"].fit(np.array([0.9, 0.8, 0.7, 0.2]), np.array([1.0, 1, 0, 0]),
        ...                                             FitContext(seed=42))
        >>> sorted(fitted.info)
        ['n_features', 'temperature']
        """

    def unavailable(self, missing: dict[str, str]) -> str | None:
        """Why this method cannot run on these inputs, or None.

        Parameters
        ----------
        missing : dict
            Input key -> why that input is not available.

        Returns
        -------
        str or None
            The reason (by default the one of the method's input), or None when it can run.

        Examples
        --------
        >>> from htc_core.calibration.methods import METHODS
        >>> METHODS["Verbalized"].unavailable({"Verbalized": "no trajectory carries a verbalized confidence"})
        'no trajectory carries a verbalized confidence'
        >>> print(METHODS["HTC-Reduced"].unavailable({"Verbalized": "..."}))
        None
        """
        return missing.get(self.input)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


# The last few HTC-Reduced fits of the evaluation loop, keyed by their exact training rows and settings: HTC-GAM
# competes with HTC-Reduced on the same inner folds, so in one outer fold it reuses the very fit HTC-Reduced made
# (same rows, labels, alphas, seed, folds: the same model) instead of fitting it twice.
# (up to 32 kept, behind a lock: the outer folds may run in threads, see ``cross_validate(n_jobs=...)``).
_REDUCED_FITS: dict = {}
_REDUCED_LOCK = threading.Lock()


def _fit_key(X: np.ndarray, y: np.ndarray, ctx: FitContext) -> tuple:
    import hashlib

    digest = hashlib.sha1(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(y, dtype=np.float64).tobytes())
    return (digest.hexdigest(), X.shape, tuple(float(a) for a in ctx.alphas), ctx.inner_folds, ctx.seed,
            ctx.max_iter, ctx.profile, ctx.top_k, tuple(ctx.feature_names))


def _remember(key: tuple, model: HTCCalibrator) -> None:
    with _REDUCED_LOCK:
        while len(_REDUCED_FITS) >= 32:
            _REDUCED_FITS.pop(next(iter(_REDUCED_FITS)))
        _REDUCED_FITS[key] = model


def _recall(key: tuple) -> HTCCalibrator | None:
    with _REDUCED_LOCK:
        return _REDUCED_FITS.get(key)


class HTCMethod(Method):
    """HTC-Full / HTC-Reduced: :class:`HTCCalibrator` with alpha chosen by inner CV on the training rows.

    Parameters
    ----------
    name : str
        The row of the table.
    variant : {"reduced", "full"}
        HTC-Reduced (L1) or HTC-Full (L2).
    families : sequence of str, optional
        Fit on the features of these families only (``"Dynamics"``, ``"Position"``, ``"Stability"``,
        ``"Structure"``); default all.
    max_logit : float or None, default=10
        The calibrator's soft logit bound (None: the paper's plain model).

    Examples
    --------
    >>> from htc_core.calibration.methods import FitContext, HTCMethod
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4))
    >>> y = (X[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(float)
    >>> ctx = FitContext(seed=42, feature_names=("a", "b", "c", "d"), alphas=(0.1, 1.0), inner_folds=3)
    >>> fitted = HTCMethod("HTC-Reduced", "reduced").fit(X, y, ctx)
    >>> fitted.info, fitted.n_selected
    ({'n_features': 4, 'alpha': 0.1}, 4)
    >>> fitted.predict(X[:3]).round(3)
    array([0.656, 0.12 , 0.026])
    """

    selects_features = True

    def __init__(self, name: str, variant: str, families: Sequence[str] | None = None,
                 max_logit: float | None = 10.0):
        self.name = name
        self.variant = variant
        self.families = None if families is None else tuple(families)
        self.max_logit = max_logit        # HTCCalibrator's soft logit bound (None: the paper's plain model)

    def columns(self, feature_names: Sequence[str]) -> np.ndarray:
        """Boolean mask of the feature columns this method fits on (all, or those of ``families``).

        Parameters
        ----------
        feature_names : sequence of str
            The feature matrix's columns (HTC feature names when ``families`` is set).

        Returns
        -------
        ndarray of bool
            One entry per name.

        Examples
        --------
        >>> from htc_core import FEATURE_NAMES
        >>> from htc_core.calibration.methods import HTCMethod
        >>> int(HTCMethod("HTC (Dynamics)", "reduced", families=["Dynamics"]).columns(FEATURE_NAMES).sum())
        19
        """
        if self.families is None:
            return np.ones(len(feature_names), dtype=bool)
        from ..features import family_of

        return np.array([family_of(n) in self.families for n in feature_names], dtype=bool)

    def fit(self, X, y, ctx):
        """Fit the calibrator on the training rows' features (alpha by inner CV on them only).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The training rows' features.
        y : ndarray of shape (n,)
            0/1 labels.
        ctx : FitContext
            The fold's seed (inner folds), alphas, inner folds, profile and top-k.

        Returns
        -------
        Fitted
            With the selected features, the weights, the alpha and the fitted calibrator (``model``).

        Examples
        --------
        >>> from htc_core.calibration.methods import FitContext, HTCMethod
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(200, 4))
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(float)
        >>> ctx = FitContext(seed=42, feature_names=("a", "b", "c", "d"), alphas=(0.1, 1.0), inner_folds=3)
        >>> fitted = HTCMethod("HTC-Full", "full").fit(X, y, ctx)
        >>> fitted.model.variant, fitted.weights.shape
        ('full', (4,))
        """
        cols = self.columns(ctx.feature_names)
        names = [n for n, c in zip(ctx.feature_names, cols) if c]
        cal = HTCCalibrator(variant=self.variant, alphas=ctx.alphas, inner_folds=ctx.inner_folds,
                            random_state=ctx.seed, max_iter=ctx.max_iter, profile=ctx.profile, top_k=ctx.top_k,
                            max_logit=self.max_logit)
        whole = cols.all()
        cal.fit(X if whole else X[:, cols], y, feature_names=names)
        if whole and self.variant == "reduced" and self.max_logit == 10.0:   # the fit HTC-GAM would make
            _remember(_fit_key(X, y, ctx), cal)
        w = np.zeros(len(cols))
        w[cols] = cal.coef_[0]
        predict = (lambda Xt: cal.predict_proba(Xt)[:, 1]) if whole else (lambda Xt: cal.predict_proba(Xt[:, cols])[:, 1])
        return Fitted(predict=predict, info={"n_features": int(np.count_nonzero(w)), "alpha": cal.alpha_},
                      selected=w != 0, weights=w, model=cal)


class GAMMethod(Method):
    """HTC-GAM: :class:`~htc_core.calibration.gam.HTCGAM` (shape functions vs HTC-Reduced by inner CV).

    The choice is made on the outer-training rows only. Opt-in: ``evaluate(methods=[..., "HTC-GAM"])`` /
    ``htc evaluate --gam``.

    Parameters
    ----------
    name : str, default="HTC-GAM"
        The row of the table.

    Examples
    --------
    >>> from htc_core.calibration.methods import METHODS, GAMMethod
    >>> METHODS["HTC-GAM"], GAMMethod().in_default_table
    (GAMMethod('HTC-GAM'), False)
    """

    selects_features = True
    in_default_table = False

    def __init__(self, name: str = "HTC-GAM"):
        self.name = name

    def fit(self, X, y, ctx):
        """Fit HTC-GAM on the training rows' features (reusing HTC-Reduced's fit of the same rows).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The training rows' features.
        y : ndarray of shape (n,)
            0/1 labels.
        ctx : FitContext
            The fold's seed, alphas (HTC-Reduced's), inner folds, profile and top-k.

        Returns
        -------
        Fitted
            With the features that have a shape function (or weight) and the alpha.

        Examples
        --------
        >>> from htc_core.calibration.methods import FitContext, GAMMethod
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(200, 4))
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(float)
        >>> ctx = FitContext(seed=42, feature_names=("a", "b", "c", "d"), alphas=(0.1, 1.0), inner_folds=3)
        >>> fitted = GAMMethod().fit(X, y, ctx)
        >>> fitted.n_selected, fitted.predict(X[:2]).shape
        (4, (2,))
        """
        from .gam import HTCGAM

        m = HTCGAM(linear_alphas=ctx.alphas, inner_folds=ctx.inner_folds, random_state=ctx.seed,
                   profile=ctx.profile, top_k=ctx.top_k)
        m.fit(X, y, feature_names=list(ctx.feature_names), linear=_recall(_fit_key(X, y, ctx)))
        names = list(ctx.feature_names)
        sel = np.isin(names, m.selected_features_)
        return Fitted(predict=lambda Xt: m.predict_proba(Xt)[:, 1],
                      info={"n_features": int(sel.sum()), "alpha": m.alpha_},
                      selected=sel)


class PriorAdapted(Method):
    """A fitted linear HTC prior (e.g. the GAC's sub-model) adapted to each outer-training part's labels.

    The adaptation is ``HTCCalibrator(prior=...)``, as ``htc fit --prior``: this is the out-of-fold measure of
    the dashboard's adapted scorer. Not registered (the prior is the caller's); pass the object in
    ``evaluate(methods=[...])``. The evaluation's features must be in the prior's profile (its columns are
    taken by name).

    Parameters
    ----------
    prior : HTCCalibrator
        The fitted prior.
    name : str, default="adapted GAC"
        The row of the table.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.methods import PriorAdapted
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> prior = htc.load_model("gac").models["with_alternatives"]
    >>> result = htc.evaluate(ts, seeds=1, n_splits=3, methods=[PriorAdapted(prior)])
    >>> result.methods
    ['adapted GAC']
    """

    def __init__(self, prior, name: str = "adapted GAC"):
        self.prior = prior
        self.name = name

    def fit(self, X, y, ctx):
        """Adapt the prior to the training rows' labels.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The training rows' features (the prior's columns are found by name).
        y : ndarray of shape (n,)
            0/1 labels.
        ctx : FitContext
            The fold's seed and feature names.

        Returns
        -------
        Fitted
            With the adapted calibrator (``model``).

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.methods import FitContext, PriorAdapted
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> prior = htc.load_model("gac").models["with_alternatives"]
        >>> fitted = PriorAdapted(prior).fit(fm.values, ts.labels, FitContext(seed=42, feature_names=fm.names))
        >>> fitted.predict(fm.values[:2]).shape
        (2,)
        """
        names = list(self.prior.feature_names_in_)
        have = list(ctx.feature_names)
        missing = [n for n in names if n not in have]
        if missing:
            raise ValueError(f"{self.name}: the features lack the prior's columns {missing[:3]}")
        cols = np.array([have.index(n) for n in names], dtype=np.int64)
        cal = HTCCalibrator(prior=self.prior, random_state=ctx.seed).fit(X[:, cols], y)
        return Fitted(predict=lambda Xt: cal.predict_proba(Xt[:, cols])[:, 1], info={"n_features": len(cols)},
                      model=cal)


class RawConfidence(Method):
    """A single-signal confidence used as it is (clipped to [0, 1]); nothing is fitted.

    Parameters
    ----------
    name : str
        The row of the table (the signal's name).
    input : str, optional
        The single-signal confidence it reads (default ``name``).

    Examples
    --------
    >>> from htc_core.calibration.methods import FitContext, RawConfidence
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=200)
    >>> y = (x + 0.5 * rng.normal(size=200) > 0).astype(float)
    >>> c = 1 / (1 + np.exp(-3 * x))          # a single-signal confidence, over-confident
    >>> ctx = FitContext(seed=42)
    >>> fitted = RawConfidence("GlobalTrace-TP").fit(c, y, ctx)
    >>> fitted.predict(c[:3]).round(3), fitted.info
    (array([0.593, 0.402, 0.872]), {'n_features': 1})
    """

    def __init__(self, name: str, input: str | None = None):
        self.name = name
        self.input = name if input is None else input

    def fit(self, X, y, ctx):
        """Nothing to fit: the confidence is clipped to [0, 1].

        Parameters
        ----------
        X : ndarray of shape (n,)
            The training rows' single-signal confidence.
        y : ndarray of shape (n,)
            0/1 labels.
        ctx : FitContext
            Not used.

        Returns
        -------
        Fitted
            Its ``predict`` clips the confidence.

        Examples
        --------
        >>> from htc_core.calibration.methods import FitContext, RawConfidence
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=200)
        >>> y = (x + 0.5 * rng.normal(size=200) > 0).astype(float)
        >>> c = 1 / (1 + np.exp(-3 * x))          # a single-signal confidence, over-confident
        >>> ctx = FitContext(seed=42)
        >>> RawConfidence("GlobalTrace-TP").fit(c, y, ctx).predict(c[:3]).shape
        (3,)
        """
        return Fitted(predict=lambda c: np.clip(c, 0.0, 1.0), info={"n_features": 1})


class TemperatureScaled(Method):
    """A single-signal confidence after temperature scaling fitted on the training rows ("+Temp").

    Parameters
    ----------
    input : str
        The single-signal confidence it reads (e.g. ``"GlobalTrace-TP"``).
    name : str, optional
        The row of the table (default ``input`` + ``"+Temp"``).

    Examples
    --------
    >>> from htc_core.calibration.methods import FitContext, TemperatureScaled
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=200)
    >>> y = (x + 0.5 * rng.normal(size=200) > 0).astype(float)
    >>> c = 1 / (1 + np.exp(-3 * x))          # a single-signal confidence, over-confident
    >>> ctx = FitContext(seed=42)
    >>> fitted = TemperatureScaled("GlobalTrace-TP").fit(c, y, ctx)
    >>> fitted.predict(c[:3]).round(3), fitted.info
    (array([0.608, 0.387, 0.903]), {'n_features': 1, 'temperature': 0.86...})
    """

    def __init__(self, input: str, name: str | None = None):
        self.input = input
        self.name = f"{input}+Temp" if name is None else name

    def fit(self, X, y, ctx):
        """Fit the temperature on the training rows.

        Parameters
        ----------
        X : ndarray of shape (n,)
            The training rows' single-signal confidence.
        y : ndarray of shape (n,)
            0/1 labels.
        ctx : FitContext
            Not used.

        Returns
        -------
        Fitted
            Its ``predict`` rescales the confidence; ``info`` holds the temperature.

        Examples
        --------
        >>> from htc_core.calibration.methods import FitContext, TemperatureScaled
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=200)
        >>> y = (x + 0.5 * rng.normal(size=200) > 0).astype(float)
        >>> c = 1 / (1 + np.exp(-3 * x))          # a single-signal confidence, over-confident
        >>> ctx = FitContext(seed=42)
        >>> TemperatureScaled("GlobalTrace-TP").fit(c, y, ctx).predict(c[:3]).shape
        (3,)
        """
        t = TemperatureScaling().fit(X, y)
        return Fitted(predict=t.transform, info={"n_features": 1, "temperature": t.temperature_})


class PlattScaled(Method):
    """A single-signal confidence after Platt scaling (logistic regression on the signal's logit, slope and
    intercept) fitted on the training rows ("+Platt"). Unlike "+Temp" it can move a signal toward the
    success rate, so it is the fair version of each baseline.

    Parameters
    ----------
    input : str
        The single-signal confidence it reads (e.g. ``"GlobalTrace-TP"``).
    name : str, optional
        The row of the table (default ``input`` + ``"+Platt"``).

    Examples
    --------
    >>> from htc_core.calibration.methods import FitContext, PlattScaled
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=200)
    >>> y = (x + 0.5 * rng.normal(size=200) > 0).astype(float)
    >>> c = 1 / (1 + np.exp(-3 * x))          # a single-signal confidence, over-confident
    >>> ctx = FitContext(seed=42)
    >>> fitted = PlattScaled("GlobalTrace-TP").fit(c, y, ctx)
    >>> fitted.predict(c[:3]).round(3), fitted.info
    (array([0.557, 0.337, 0.885]), {'n_features': 1, 'temperature': 0.85...})
    """

    def __init__(self, input: str, name: str | None = None):
        self.input = input
        self.name = f"{input}+Platt" if name is None else name

    def fit(self, X, y, ctx):
        """Fit Platt scaling (slope and intercept on the logit) on the training rows.

        Parameters
        ----------
        X : ndarray of shape (n,)
            The training rows' single-signal confidence.
        y : ndarray of shape (n,)
            0/1 labels.
        ctx : FitContext
            Not used.

        Returns
        -------
        Fitted
            Its ``predict`` rescales the confidence; ``info`` holds the slope as ``temperature``.

        Examples
        --------
        >>> from htc_core.calibration.methods import FitContext, PlattScaled
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=200)
        >>> y = (x + 0.5 * rng.normal(size=200) > 0).astype(float)
        >>> c = 1 / (1 + np.exp(-3 * x))          # a single-signal confidence, over-confident
        >>> ctx = FitContext(seed=42)
        >>> PlattScaled("GlobalTrace-TP").fit(c, y, ctx).predict(c[:3]).shape
        (3,)
        """
        t = PlattScaling().fit(X, y)
        return Fitted(predict=t.transform, info={"n_features": 1, "temperature": t.temperature_})


# isotonic regression needs this many outer-training rows (below, its steps follow the noise of a few runs)
MIN_ISOTONIC_TRAIN = 200


class IsotonicScaled(Method):
    """A single-signal confidence after isotonic regression fitted on the training rows ("+Iso"): any
    monotone map, clipped outside the training range. Only where every outer-training part has at least
    :data:`MIN_ISOTONIC_TRAIN` rows; below that the evaluation skips it and says why.

    Parameters
    ----------
    input : str
        The single-signal confidence it reads (e.g. ``"GlobalTrace-TP"``).
    name : str, optional
        The row of the table (default ``input`` + ``"+Iso"``).

    Examples
    --------
    >>> from htc_core.calibration.methods import FitContext, IsotonicScaled
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=200)
    >>> y = (x + 0.5 * rng.normal(size=200) > 0).astype(float)
    >>> c = 1 / (1 + np.exp(-3 * x))          # a single-signal confidence, over-confident
    >>> ctx = FitContext(seed=42)
    >>> fitted = IsotonicScaled("GlobalTrace-TP").fit(c, y, ctx)
    >>> fitted.predict(c[:3]).round(3), fitted.info
    (array([0.55 , 0.4  , 0.826]), {'n_features': 1})
    """

    min_train = MIN_ISOTONIC_TRAIN

    def __init__(self, input: str, name: str | None = None):
        self.input = input
        self.name = f"{input}+Iso" if name is None else name

    def fit(self, X, y, ctx):
        """Fit an isotonic (monotone, clipped) map on the training rows.

        Parameters
        ----------
        X : ndarray of shape (n,)
            The training rows' single-signal confidence.
        y : ndarray of shape (n,)
            0/1 labels.
        ctx : FitContext
            Not used.

        Returns
        -------
        Fitted
            Its ``predict`` maps the confidence.

        Examples
        --------
        >>> from htc_core.calibration.methods import FitContext, IsotonicScaled
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=200)
        >>> y = (x + 0.5 * rng.normal(size=200) > 0).astype(float)
        >>> c = 1 / (1 + np.exp(-3 * x))          # a single-signal confidence, over-confident
        >>> ctx = FitContext(seed=42)
        >>> IsotonicScaled("GlobalTrace-TP").fit(c, y, ctx).predict(c[:3]).shape
        (3,)
        """
        from sklearn.isotonic import IsotonicRegression

        iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip", increasing=True)
        iso.fit(np.clip(np.asarray(X, dtype=np.float64), 0.0, 1.0), y)
        return Fitted(predict=lambda c: iso.predict(np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)),
                      info={"n_features": 1})


# every single-signal confidence of the table (the token-probability baselines and the verbalized one)
SINGLE_SIGNALS = (*RAW_BASELINES, "Verbalized")


def _default_methods() -> Iterable[Method]:
    yield HTCMethod("HTC-Full", "full")
    yield HTCMethod("HTC-Reduced", "reduced")
    for b in SINGLE_SIGNALS:
        yield RawConfidence(b)
        yield TemperatureScaled(b)
        yield PlattScaled(b)
        yield IsotonicScaled(b)
    yield GAMMethod("HTC-GAM")


# every registered method by name, in the order of the table
METHODS: dict[str, Method] = {m.name: m for m in _default_methods()}


def register_method(method: Method, *, replace: bool = False) -> Method:
    """Add a method to the table that :func:`evaluate` runs by default (after the registered ones).

    Parameters
    ----------
    method : Method
        The method; its ``name`` must be new unless ``replace``.
    replace : bool, default=False
        Replace a registered method of the same name.

    Returns
    -------
    Method
        ``method``.

    Examples
    --------
    >>> from htc_core.calibration.methods import METHODS, HTCMethod, register_method
    >>> m = register_method(HTCMethod("HTC-Reduced (Dynamics)", "reduced", families=["Dynamics"]))
    >>> "HTC-Reduced (Dynamics)" in METHODS
    True
    >>> register_method(HTCMethod("HTC-Reduced", "reduced"))
    Traceback (most recent call last):
    ...
    ValueError: a method named 'HTC-Reduced' is already registered (pass replace=True)
    >>> del METHODS["HTC-Reduced (Dynamics)"]       # leave the registry as it was
    """
    if not isinstance(method, Method):
        raise ValueError(f"method must be a Method, got {type(method).__name__}")
    if method.name in METHODS and not replace:
        raise ValueError(f"a method named {method.name!r} is already registered (pass replace=True)")
    METHODS[method.name] = method
    return method


def resolve_methods(methods: Sequence[str | Method] | str | Method | None) -> list[Method]:
    """The methods to evaluate, from names and ``Method`` objects.

    Parameters
    ----------
    methods : str, Method, sequence of them, or None
        None: every registered method of the default table (HTC-GAM is opt-in). Otherwise the named ones
        in the registry's order, followed by the given ``Method`` objects. An unknown name raises
        ``ValueError`` with the valid ones.

    Returns
    -------
    list of Method
        The methods, in table order.

    Examples
    --------
    >>> from htc_core.calibration.methods import resolve_methods
    >>> resolve_methods(["GlobalTrace-TP", "HTC-Reduced"])
    [HTCMethod('HTC-Reduced'), RawConfidence('GlobalTrace-TP')]
    >>> len(resolve_methods(None))
    26
    """
    if methods is None:
        return [m for m in METHODS.values() if m.in_default_table]
    if isinstance(methods, (str, Method)):
        methods = [methods]
    names = {m for m in methods if isinstance(m, str)}
    unknown = [m for m in methods if not isinstance(m, (str, Method)) or (isinstance(m, str) and m not in METHODS)]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; valid methods: {list(METHODS)}")
    out = [m for m in METHODS.values() if m.name in names]
    for m in methods:
        if isinstance(m, Method) and all(o.name != m.name for o in out):
            out.append(m)
    return out
