"""HTC-GAM: one smooth shape function per (de-duplicated) feature, chosen against HTC-Reduced by inner CV.

The model is ``sigmoid(b + sum_j f_j(x_j))``: a generalized additive model whose shape functions are cubic
B-splines (P-splines: a second-difference penalty on neighbouring spline coefficients, which leaves a straight
line free and bends only where the data pay for it, plus a small ridge term). Decisions, written down:

- **De-duplication** (label-free, on the rows given to ``fit``): constant columns and columns that are an
  exact copy of an earlier one, or correlate with it at ``|r| >= dedup_threshold`` (default 0.999; e.g. the
  Top-1 and Top-k columns of a source without alternatives), get no shape function.
- **Basis**: per feature, ``n_knots`` interior knots at the training quantiles (fewer where the feature has
  few distinct values; a feature with <= 3 distinct values gets one straight line), cubic, knots extended
  beyond the range with the end spacing. Inputs are clipped to the training range, so a shape function is
  flat outside the data it saw (no extrapolated cubic). Each shape function is centred on the training rows
  (mean contribution 0); the intercept carries the base rate.
- **Fit**: penalized Newton (IRLS) on ``sum logloss + alpha/2 * c' P c`` with ``P = D2'D2 + ridge * I`` per
  feature, intercept unpenalized; ``alpha`` over ``alphas`` warm-started from the largest.
- **Selection**: the same stratified inner folds as :class:`HTCCalibrator` (same ``inner_folds`` and
  ``random_state``, so the same splits) and the same criterion (mean AUROC - Brier - ECE). The best GAM alpha
  competes with the best HTC-Reduced alpha; the linear model wins ties, so HTC-GAM falls back to HTC-Reduced
  whenever the shape functions do not pay for themselves (``kind_ == "linear"``; the fitted HTC-Reduced is in
  ``linear_`` and scores). ``select="gam"`` forces the GAM.

Saved as JSON (``"format": "htc-gam"``), never pickle.

This module fits: de-duplication, the knots, the P-spline penalty, the penalized Newton path and the estimator
:class:`HTCGAM`. What scoring needs, numpy only, is in :mod:`htc_core.calibration.gam_scoring` and used from
there: the cubic B-spline basis flat beyond the data (the fit's training design too), :class:`ShapeFunction`,
the JSON model file (fields and checks) and :class:`~htc_core.calibration.gam_scoring.GAMScorer`, what
``htc score`` reads a GAM file with.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError

from .blas_threads import one_blas_thread
from .calibrators import HTCCalibrator
from .gam_scoring import (DEGREE, GAM_FORMAT, GAM_FORMAT_VERSION, SELECT, ShapeFunction, basis, gam_to_dict,
                          parse_gam_dict, shape_contributions)
from .inputs import (TraceSetMixin, align_columns, check_positive_int, check_predict_data, check_saveable_labels,
                     unpack_features_and_names, validate_fit_data)
from .metrics import fast_auroc, fast_brier, fast_ece
from .solvers import DEFAULT_ALPHAS, sigmoid

# the pieces (dedup_columns, make_knots, Design, newton_path) are the estimator's own, and the basis and the file's
# reader and writer (basis, gam_to_dict, parse_gam_dict) gam_scoring's: a user calls HTCGAM (fit, shape, save, load)
__all__ = ["HTCGAM", "GAM_ALPHAS", "ShapeFunction", "DEGREE", "SELECT", "GAM_FORMAT", "GAM_FORMAT_VERSION"]


# ================================================================ the pieces
# ------------------------------------------------------------- the columns and the knots
def dedup_columns(X: np.ndarray, threshold: float = 0.999) -> np.ndarray:
    """Boolean mask of the columns kept: not constant, and not (near-)copies of an earlier kept column."""
    d = X.shape[1]
    keep = np.zeros(d, dtype=bool)
    sd = X.std(axis=0)
    Z = np.where(sd > 0, (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    kept: list[int] = []
    for j in range(d):
        if not sd[j] > 1e-12 * max(1.0, abs(X[:, j]).max()):
            continue
        if kept:
            r = np.abs(Z[:, kept].T @ Z[:, j]) / X.shape[0]
            if r.max() >= threshold:
                continue
        keep[j] = True
        kept.append(j)
    return keep


def make_knots(x: np.ndarray, n_knots: int) -> np.ndarray:
    """Full knot vector of a cubic B-spline basis on the range of ``x`` (interior knots at quantiles)."""
    lo, hi = float(x.min()), float(x.max())
    n_unique = np.unique(x).size
    if n_unique <= 3:   # a line through the two ends: degree-1 spline with no interior knot, embedded in cubic
        inner = np.array([lo, hi])
    else:
        inner = np.unique(np.quantile(x, np.linspace(0.0, 1.0, min(n_knots, n_unique - 1))))
        if inner.size < 2:
            inner = np.array([lo, hi])
    step_lo = inner[1] - inner[0]
    step_hi = inner[-1] - inner[-2]
    before = inner[0] - step_lo * np.arange(DEGREE, 0, -1)
    after = inner[-1] + step_hi * np.arange(1, DEGREE + 1)
    return np.concatenate([before, inner, after])


def _penalty(m: int, ridge: float) -> np.ndarray:
    D = np.diff(np.eye(m), n=2, axis=0) if m > 2 else np.zeros((0, m))
    return D.T @ D + ridge * np.eye(m)


class Design:
    """The centred spline basis of the kept columns, built on training rows and applied to any rows."""

    def __init__(self, X: np.ndarray, keep: np.ndarray, n_knots: int, ridge: float):
        self.cols = np.flatnonzero(keep)
        self.knots = [make_knots(X[:, j], n_knots) for j in self.cols]
        blocks = [basis(X[:, j], t) for j, t in zip(self.cols, self.knots)]
        self.means = [B.mean(axis=0) for B in blocks]
        self.sizes = [B.shape[1] for B in blocks]
        self.B = np.hstack([B - mu for B, mu in zip(blocks, self.means)])
        P = np.zeros((self.B.shape[1], self.B.shape[1]))
        at = 0
        for m in self.sizes:
            P[at:at + m, at:at + m] = _penalty(m, ridge)
            at += m
        self.P = P

    def apply(self, X: np.ndarray) -> np.ndarray:
        """The centred basis of the kept columns of any rows ``X`` (clipped to the training range)."""
        return np.hstack([basis(X[:, j], t) - mu for j, t, mu in zip(self.cols, self.knots, self.means)])


def newton_path(B: np.ndarray, y: np.ndarray, P: np.ndarray, alphas: np.ndarray, max_iter: int, tol: float):
    """Penalized logistic fits for every alpha (largest first, warm-started): ([n_alphas, m] coef, [n_alphas] b).
    On one BLAS thread, as the path solver (blas_threads.py): with OpenBLAS's threads one GAM fit on the sample
    runs took 22 s on the loaded 2-core machine against 2.5 s."""
    with one_blas_thread():
        return _newton_path(B, y, P, alphas, max_iter, tol)


def _newton_path(B, y, P, alphas, max_iter, tol):
    n, m = B.shape
    A = np.hstack([B, np.ones((n, 1))])
    Pf = np.zeros((m + 1, m + 1))
    Pf[:m, :m] = P
    Pf[m, m] = 1e-8
    order = np.argsort(-alphas)
    W = np.zeros((alphas.size, m))
    b = np.zeros(alphas.size)
    beta = np.zeros(m + 1)
    ybar = np.clip(y.mean(), 1e-6, 1 - 1e-6)
    beta[m] = np.log(ybar / (1 - ybar))

    def objective(bt, a):
        z = A @ bt
        return np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * a * bt @ Pf @ bt

    for i in order:
        a = float(alphas[i])
        f_old = objective(beta, a)
        for _ in range(max_iter):
            p = sigmoid(A @ beta)
            g = A.T @ (p - y) + a * (Pf @ beta)
            H = (A * (p * (1 - p))[:, None]).T @ A + a * Pf
            step = np.linalg.solve(H, g)
            t = 1.0
            while True:   # backtracking: the objective never goes up
                cand = beta - t * step
                f_new = objective(cand, a)
                if f_new <= f_old + 1e-12 or t < 1e-6:
                    break
                t *= 0.5
            beta, dec = cand, f_old - f_new
            f_old = f_new
            if abs(dec) <= tol * max(1.0, abs(f_new)):
                break
        W[i], b[i] = beta[:m], beta[m]
    return W, b


# ================================================================ the estimator
# the GAM's penalty strengths (sum-of-logloss scale, like HTC's alphas)
GAM_ALPHAS = (2.0, 16.0, 128.0)


class HTCGAM(TraceSetMixin, ClassifierMixin, BaseEstimator):
    """HTC-GAM: an interpretable calibrator with one shape function per de-duplicated feature.

    ``sigmoid(b + sum_j f_j(x_j))`` with cubic P-spline shape functions, chosen against HTC-Reduced by inner CV
    (module docstring). A scikit-learn classifier like :class:`~htc_core.HTCCalibrator`.

    Parameters
    ----------
    alphas : sequence of float, default=GAM_ALPHAS
        GAM penalty strengths tried by inner CV.
    linear_alphas : sequence of float, default=DEFAULT_ALPHAS
        HTC-Reduced's alphas (the linear candidate, selected on the same inner folds).
    n_knots : int, default=6
        Interior knots per feature (at training quantiles).
    ridge : float, default=0.1
        Ridge weight of the penalty relative to the second-difference term.
    dedup_threshold : float, default=0.999
        ``|correlation|`` at or above which a column counts as a copy of an earlier one.
    select : {"cv", "gam", "linear"}, default="cv"
        GAM vs HTC-Reduced by inner CV, always the GAM, or always the linear model.
    inner_folds, random_state, max_iter, tol, profile, top_k
        As :class:`~htc_core.HTCCalibrator` (``max_iter`` default 25 and ``tol`` 1e-6: the Newton fit).

    Attributes
    ----------
    kind_ : {"gam", "linear"}
        Which model won.
    shapes_ : list of ShapeFunction
        The shape functions (GAM only).
    linear_ : HTCCalibrator or None
        The HTC-Reduced fit (linear only).
    intercept_, alpha_, cv_results_, classes_, feature_names_in_, n_features_in_, profile_, top_k_
        As :class:`~htc_core.HTCCalibrator`.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.gam import HTCGAM
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(htc.extract(ts), ts.labels)
    >>> gam.kind_, gam.predict_proba(htc.extract(ts)).shape
    ('gam', (250, 2))
    """

    variant = "gam"

    def __init__(self, alphas: Sequence[float] = GAM_ALPHAS, linear_alphas: Sequence[float] = DEFAULT_ALPHAS,
                 n_knots: int = 6, ridge: float = 0.1, dedup_threshold: float = 0.999, select: str = "cv",
                 inner_folds: int = 5, random_state: int | None = 42, max_iter: int = 25, tol: float = 1e-6,
                 profile: str | None = None, top_k: int | None = None):
        self.alphas = alphas
        self.linear_alphas = linear_alphas
        self.n_knots = n_knots
        self.ridge = ridge
        self.dedup_threshold = dedup_threshold
        self.select = select
        self.inner_folds = inner_folds
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol
        self.profile = profile
        self.top_k = top_k

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "kind_")

    def _check_params(self) -> np.ndarray:
        try:
            alphas = np.asarray(self.alphas, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f"alphas must be a sequence of positive numbers, got {self.alphas!r}") from None
        if alphas.size == 0 or not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
            raise ValueError(f"alphas must be a non-empty sequence of positive numbers, got {self.alphas!r}")
        check_positive_int(self.n_knots, "n_knots", 2)
        if isinstance(self.ridge, bool) or not isinstance(self.ridge, (int, float)) or not 0 < self.ridge < 1e6:
            raise ValueError(f"ridge must be a number in (0, 1e6), got {self.ridge!r}")
        t = self.dedup_threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 1:
            raise ValueError(f"dedup_threshold must be a number in (0, 1], got {t!r}")
        if self.select not in SELECT:
            raise ValueError(f"select must be one of {SELECT}, got {self.select!r}")
        check_positive_int(self.inner_folds, "inner_folds", 2)
        check_positive_int(self.max_iter, "max_iter", 1)
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float)) or not 0 < self.tol < 1:
            raise ValueError(f"tol must be a number in (0, 1), got {self.tol!r}")
        return alphas

    def _linear(self) -> HTCCalibrator:
        return HTCCalibrator(variant="reduced", alphas=self.linear_alphas, inner_folds=self.inner_folds,
                             random_state=self.random_state, profile=self.profile, top_k=self.top_k)

    # ----------------------------------------------------------------- fit
    def fit(self, X, y, *, feature_names: Sequence[str] | None = None, meta=None,
            linear: HTCCalibrator | None = None) -> "HTCGAM":
        """Choose GAM vs HTC-Reduced (and their penalties) by inner CV on (X, y), then refit the winner on all.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            The features.
        y : array-like of shape (n_runs,)
            Binary labels.
        feature_names : sequence of str, optional
            Column names for an array.
        meta : DataFrame, optional
            The runs' metadata (training summary).
        linear : HTCCalibrator, optional
            An HTC-Reduced already fitted on exactly these rows with this model's ``linear_alphas``,
            ``inner_folds`` and ``random_state`` (the evaluation loop passes the one it just fitted, so it is
            not fitted twice); checked for those settings, otherwise fitted here.

        Returns
        -------
        self : HTCGAM

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="linear").fit(htc.extract(ts), ts.labels).kind_
        'linear'
        """
        alphas = self._check_params()
        Xa, ya, classes, _, _ = validate_fit_data(self, X, y)
        if not self._reusable(linear, X):
            linear = self._linear()
            linear.fit(X, y, feature_names=feature_names, meta=meta)   # validates names and profile
        self.feature_names_in_ = linear.feature_names_in_
        self.n_features_in_ = linear.n_features_in_
        self.profile_, self.top_k_ = linear.profile_, linear.top_k_
        self.training_summary_ = linear.training_summary_
        self.classes_ = classes
        lin_crit = -np.inf if linear.cv_results_ is None else float(np.max(linear.cv_results_["criterion"]))
        keep = dedup_columns(Xa, float(self.dedup_threshold))
        if not keep.any() and self.select == "gam":
            raise ValueError("X has no column that varies: select='gam' needs at least one feature for a shape "
                             "function (select='cv' falls back to HTC-Reduced)")
        gam_cv = self._cv_gam(Xa, ya, alphas) if self.select != "linear" and keep.any() else None
        gam_crit = -np.inf if gam_cv is None else float(np.max(gam_cv["criterion"]))
        use_gam = self.select == "gam" or (self.select == "cv" and gam_cv is not None and gam_crit > lin_crit)
        self.cv_results_ = {"gam": gam_cv, "linear_criterion": lin_crit if np.isfinite(lin_crit) else None,
                            "gam_criterion": gam_crit if np.isfinite(gam_crit) else None}
        if not use_gam:
            self.kind_, self.linear_, self.shapes_ = "linear", linear, []
            self.alpha_, self.intercept_ = linear.alpha_, float(linear.intercept_[0])
            return self
        best = alphas[int(np.argmax(gam_cv["criterion"]))] if gam_cv is not None else alphas[alphas.size // 2]
        self.alpha_ = float(best)
        des = Design(Xa, keep, int(self.n_knots), float(self.ridge))
        path = alphas[alphas >= best]
        W, b = newton_path(des.B, ya, des.P, path, int(self.max_iter), float(self.tol))
        at = int(np.flatnonzero(path == best)[0])
        self._set_shapes(des, W[at], float(b[at]))
        self.kind_, self.linear_ = "gam", None
        return self

    def _reusable(self, linear, X) -> bool:
        if linear is None:
            return False
        if not isinstance(linear, HTCCalibrator) or not hasattr(linear, "coef_"):
            raise ValueError(f"linear must be a fitted HTCCalibrator or None, got {linear!r}")
        same = (linear.variant == "reduced" and linear.inner_folds == self.inner_folds
                and linear.random_state == self.random_state
                and np.array_equal(np.ravel(linear.alpha_candidates_), np.ravel(np.asarray(self.linear_alphas, float)))
                and linear.n_features_in_ == np.shape(unpack_features_and_names(X)[0])[1])
        if not same:
            raise ValueError("linear must be HTC-Reduced fitted with this model's linear_alphas, inner_folds and "
                             f"random_state on the same rows, got {linear!r}")
        return True

    def _set_shapes(self, des: Design, coef: np.ndarray, intercept: float) -> None:
        shapes, at = [], 0
        for j, t, mu, m in zip(des.cols, des.knots, des.means, des.sizes):
            c = coef[at:at + m]
            shapes.append(ShapeFunction(str(self.feature_names_in_[j]), t, c, float(mu @ c)))
            at += m
        self.shapes_ = shapes
        self.intercept_ = intercept

    def _cv_gam(self, X: np.ndarray, y: np.ndarray, alphas: np.ndarray) -> dict | None:
        from sklearn.model_selection import StratifiedKFold

        n_pos = int(y.sum())
        k = int(min(self.inner_folds, n_pos, len(y) - n_pos))
        if k < 2:
            return None
        skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=self.random_state)
        au, br, ec = (np.empty((k, alphas.size)) for _ in range(3))
        for f, (tr, te) in enumerate(skf.split(X, y)):
            keep = dedup_columns(X[tr], float(self.dedup_threshold))
            if not keep.any():   # nothing varies in this training part: the GAM cannot compete
                return None
            des = Design(X[tr], keep, int(self.n_knots), float(self.ridge))
            W, b = newton_path(des.B, y[tr], des.P, alphas, int(self.max_iter), float(self.tol))
            P = sigmoid(W @ des.apply(X[te]).T + b[:, None])
            au[f], br[f], ec[f] = fast_auroc(y[te], P), fast_brier(y[te], P), fast_ece(y[te], P)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m_au = np.nanmean(au, axis=0)
        m_au = np.where(np.isnan(m_au), 0.5, m_au)
        crit = m_au - br.mean(axis=0) - ec.mean(axis=0)
        return {"alpha": alphas.tolist(), "auroc": m_au.tolist(), "brier": br.mean(axis=0).tolist(),
                "ece": ec.mean(axis=0).tolist(), "criterion": crit.tolist(), "n_folds": k}

    # ------------------------------------------------------------- predict
    def _check_fitted(self) -> None:
        if not hasattr(self, "kind_"):
            raise NotFittedError("this HTCGAM is not fitted yet; call fit(X, y) or HTCGAM.load(path)")

    def _columns(self, X) -> np.ndarray:
        """X's columns in the model's feature order (found by name), checked like HTCCalibrator's."""
        values, names, of_matrix = unpack_features_and_names(X)
        if of_matrix is not None and of_matrix != (self.profile_, self.top_k_):
            raise ValueError(f"X is a FeatureMatrix computed with profile {of_matrix[0]!r} and top_k {of_matrix[1]}, "
                             f"but this model was fitted on features of profile {self.profile_!r} and top_k "
                             f"{self.top_k_}; extract the features with extract(ts, profile={self.profile_!r}, "
                             f"top_k={self.top_k_})")
        return check_predict_data(self, align_columns(values, names, [str(n) for n in self.feature_names_in_]))

    def contributions(self, X) -> np.ndarray:
        """Each feature's contribution to the logit: its shape function's value (0 for features without one).

        ``contributions(X).sum(1) + intercept_ == decision_function(X)``. When HTC-Reduced won the inner CV
        (``kind_ == "linear"``) these are its :meth:`HTCCalibrator.contributions`.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs, n_features)
            One column per feature of ``feature_names_in_``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> import numpy as np
        >>> c = gam.contributions(fm)
        >>> c.shape, bool(np.allclose(c.sum(axis=1) + gam.intercept_, gam.decision_function(fm)))
        ((250, 48), True)
        """
        self._check_fitted()
        if self.kind_ == "linear":
            return self.linear_.contributions(X)
        # the same code as the numpy-only GAMScorer (gam_scoring.py): a file scores the same through either
        return shape_contributions(self._columns(X), self.shapes_, self.feature_names_in_)

    def cap_factor(self, X) -> np.ndarray:
        """Per row, what the intercept and the contributions are scaled by to add up to the logit.

        The linear fallback's soft logit bound (:meth:`HTCCalibrator.cap_factor`); 1 for the shape functions.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)
            The factor, in (0, 1].

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> bool((gam.cap_factor(fm) == 1).all())
        True
        """
        self._check_fitted()
        if self.kind_ == "linear":
            return self.linear_.cap_factor(X)
        return np.ones(len(self._columns(X)))

    def decision_function(self, X) -> np.ndarray:
        """Logit of the calibrated confidence: the intercept plus every shape function's value.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)
            The logit; ``sigmoid`` of it is ``predict_proba(X)[:, 1]``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> import numpy as np
        >>> z = gam.decision_function(fm)
        >>> bool(np.allclose(1 / (1 + np.exp(-z)), gam.predict_proba(fm)[:, 1]))
        True
        """
        self._check_fitted()
        if self.kind_ == "linear":
            return self.linear_.decision_function(X)
        return self.contributions(X).sum(axis=1) + self.intercept_

    def predict_proba(self, X) -> np.ndarray:
        """The calibrated probabilities of failure and success.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k (columns found by name when X has names).

        Returns
        -------
        ndarray of shape (n_runs, 2)

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> HTCGAM(alphas=(16.0,), linear_alphas=(1.0,)).fit(fm, ts.labels).predict_proba(fm[:3]).shape
        (3, 2)
        """
        p = sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The predicted outcome: the success class where the calibrated confidence exceeds 0.5.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)
            ``classes_[1]`` where the confidence exceeds 0.5, else ``classes_[0]``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> bool(0.5 < (gam.predict(fm) == ts.labels).mean() <= 1)
        True
        """
        z = self.decision_function(X)   # checks that the model is fitted
        return self.classes_[(z > 0).astype(int)]

    def shape(self, name: str) -> ShapeFunction:
        """The shape function of one feature.

        Parameters
        ----------
        name : str
            A feature with a shape function (constant and duplicate columns have none; a model whose
            ``kind_`` is ``"linear"`` has none at all): anything else raises ``ValueError`` naming those
            that have one.

        Returns
        -------
        ShapeFunction
            Its ``value(x)`` is the feature's contribution to the logit.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> f = gam.shape("top1_gradient_mean")
        >>> f.name, f.curve(3)[0].shape
        ('top1_gradient_mean', (3,))
        """
        self._check_fitted()
        for s in self.shapes_:
            if s.name == name:
                return s
        raise ValueError(f"name must be a feature with a shape function, got {name!r}; "
                         f"features with one: {[s.name for s in self.shapes_]}")

    @property
    def selected_features_(self) -> list[str]:
        """The features whose shape function is not zero (a linear model's: those with a non-zero weight).

        Returns
        -------
        list of str
            In the order of ``feature_names_in_``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> gam.selected_features_[:2]
        ['top1_gradient_mean', 'top1_gradient_std']
        """
        self._check_fitted()
        if self.kind_ == "linear":
            return self.linear_.selected_features_
        return [s.name for s in self.shapes_ if np.any(s.coef != 0)]

    @property
    def n_selected_(self) -> int:
        """The number of features with a non-zero shape function (or weight).

        Returns
        -------
        int
            ``len(selected_features_)``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> gam.n_selected_ <= 48
        True
        """
        return len(self.selected_features_)

    @property
    def display_name(self) -> str:
        """The model's name in tables and plots: "HTC-GAM", or says HTC-Reduced won the inner CV.

        Returns
        -------
        str
            ``"HTC-GAM"`` or ``"HTC-GAM (linear: HTC-Reduced won the inner CV)"``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> gam.display_name
        'HTC-GAM'
        """
        self._check_fitted()
        return "HTC-GAM" if self.kind_ == "gam" else "HTC-GAM (linear: HTC-Reduced won the inner CV)"

    # ----------------------------------------------------------- save/load
    def to_dict(self) -> dict:
        """The ``"htc-gam"`` model file's JSON object (fields: :mod:`~htc_core.calibration.gam_scoring`).

        Returns
        -------
        dict
            What :meth:`save` writes and :meth:`from_dict` reads back.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> d = gam.to_dict()
        >>> d["format"], d["kind"], len(d["shapes"])
        ('htc-gam', 'gam', 44)
        """
        self._check_fitted()
        check_saveable_labels(self)
        return gam_to_dict(self)

    def save(self, path: str | Path) -> Path:
        """Write the model as JSON (atomic: a failed save leaves the previous file intact).

        Parameters
        ----------
        path : str or path
            The model file.

        Returns
        -------
        Path
            The file written.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> import os, tempfile
        >>> path = gam.save(os.path.join(tempfile.mkdtemp(), "gam.json"))
        >>> HTCGAM.load(path)
        HTCGAM(select='gam', kind_='gam', alpha_=16)
        """
        from ..atomic import write_text

        return write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "HTCGAM":
        """A fitted model from an HTC-GAM model file's JSON object.

        Parameters
        ----------
        obj : dict
            The object of a GAM model file (:meth:`to_dict`).
        source : str, default="model"
            What ``obj`` came from, named in the error messages.

        Returns
        -------
        HTCGAM
            The fitted model; anything invalid raises a ValueError saying why.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> import numpy as np
        >>> again = HTCGAM.from_dict(gam.to_dict())
        >>> bool(np.allclose(again.predict_proba(fm), gam.predict_proba(fm)))
        True
        >>> HTCGAM.from_dict({"format": "htc-gam", "format_version": 9}, source="upload.json")
        Traceback (most recent call last):
        ...
        ValueError: upload.json is not a valid HTC-GAM model file: unsupported format_version 9 (this htc reads version 1)
        """
        params, state = parse_gam_dict(obj, source=source, linear=_fitted_calibrator)
        model = cls(**params)
        for name, value in state.items():
            setattr(model, name, value)
        return model

    @classmethod
    def load(cls, path: str | Path) -> "HTCGAM":
        """Read a model written by :meth:`save`.

        Parameters
        ----------
        path : str or path
            The model file; anything but a valid HTC-GAM model file raises a ValueError saying why.

        Returns
        -------
        HTCGAM
            The fitted model.

        Examples
        --------
        >>> from htc_core.calibration.gam import HTCGAM
        >>> HTCGAM.load("nothing-here.json")
        Traceback (most recent call last):
        ...
        ValueError: model file nothing-here.json does not exist
        """
        from .model_file import read_model_file

        return cls.from_dict(read_model_file(path), source=str(Path(path)))

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        fitted = f", kind_={self.kind_!r}, alpha_={self.alpha_:g}" if hasattr(self, "kind_") else ""
        return f"HTCGAM(select={self.select!r}{fitted})"


def _fitted_calibrator(params: dict, state: dict) -> HTCCalibrator:
    """The embedded HTC-Reduced model of a file whose kind is "linear", as the estimator (refit, explain)."""
    model = HTCCalibrator(**params)
    for name, value in state.items():
        setattr(model, name, value)
    return model
