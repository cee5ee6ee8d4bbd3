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

Saved as JSON (``"format": "htc-gam"``, :mod:`htc_core.calibration.gam_file`), never pickle.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError

from .calibrators import HTCCalibrator, _check_positive_int, _unpack_features
from .inputs import TraceSetMixin, align_columns, check_predict_data, check_saveable_labels, validate_fit_data
from .metrics import _fast_auroc, _fast_brier, _fast_ece
from .gam_basis import SELECT, Design, ShapeFunction, dedup_columns, newton_path
from .solvers import DEFAULT_ALPHAS, sigmoid

__all__ = ["HTCGAM", "GAM_ALPHAS", "ShapeFunction", "dedup_columns"]

#: the GAM's penalty strengths (sum-of-logloss scale, like HTC's alphas)
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
    >>> ts, _ = htc.load("sample_runs/units/")
    >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(htc.extract(ts), ts.labels)
    >>> gam.kind_, gam.predict_proba(htc.extract(ts)).shape
    ('gam', (500, 2))
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
        _check_positive_int(self.n_knots, "n_knots", 2)
        if isinstance(self.ridge, bool) or not isinstance(self.ridge, (int, float)) or not 0 < self.ridge < 1e6:
            raise ValueError(f"ridge must be a number in (0, 1e6), got {self.ridge!r}")
        t = self.dedup_threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 1:
            raise ValueError(f"dedup_threshold must be a number in (0, 1], got {t!r}")
        if self.select not in SELECT:
            raise ValueError(f"select must be one of {SELECT}, got {self.select!r}")
        _check_positive_int(self.inner_folds, "inner_folds", 2)
        _check_positive_int(self.max_iter, "max_iter", 1)
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
        >>> ts, _ = htc.load("sample_runs/units/")
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
                and linear.n_features_in_ == np.shape(_unpack_features(X)[0])[1])
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
            au[f], br[f], ec[f] = _fast_auroc(y[te], P), _fast_brier(y[te], P), _fast_ece(y[te], P)
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
        values, names, of_matrix = _unpack_features(X)
        if of_matrix is not None and of_matrix != (self.profile_, self.top_k_):
            raise ValueError(f"X is a FeatureMatrix computed with profile {of_matrix[0]!r} and top_k {of_matrix[1]}, "
                             f"but this model was fitted on features of profile {self.profile_!r} and top_k "
                             f"{self.top_k_}; extract the features with extract(ts, profile={self.profile_!r}, "
                             f"top_k={self.top_k_})")
        return check_predict_data(self, align_columns(values, names, [str(n) for n in self.feature_names_in_]))

    def contributions(self, X) -> np.ndarray:
        """[n, d]: each feature's contribution to the logit (its shape function's value; 0 for features
        without one). ``contributions(X).sum(1) + intercept_ == decision_function(X)``."""
        self._check_fitted()
        if self.kind_ == "linear":
            return self.linear_.contributions(X)
        Xc = self._columns(X)
        out = np.zeros_like(Xc)
        index = {str(n): j for j, n in enumerate(self.feature_names_in_)}
        for s in self.shapes_:
            j = index[s.name]
            out[:, j] = s.value(Xc[:, j])
        return out

    def cap_factor(self, X) -> np.ndarray:
        """Per row, what the intercept and the contributions are scaled by to add up to the logit: the linear
        fallback's soft logit bound (:meth:`HTCCalibrator.cap_factor`), 1 for the shape functions."""
        self._check_fitted()
        if self.kind_ == "linear":
            return self.linear_.cap_factor(X)
        return np.ones(len(self._columns(X)))

    def decision_function(self, X) -> np.ndarray:
        """Logit of the calibrated confidence, [n]."""
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
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> fm = htc.extract(ts)
        >>> HTCGAM(alphas=(16.0,), linear_alphas=(1.0,)).fit(fm, ts.labels).predict_proba(fm[:3]).shape
        (3, 2)
        """
        p = sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The success class (``classes_[1]``) where the calibrated confidence exceeds 0.5, else the failure
        class."""
        z = self.decision_function(X)   # checks that the model is fitted
        return self.classes_[(z > 0).astype(int)]

    def shape(self, name: str) -> ShapeFunction:
        """The shape function of feature ``name`` (a linear model's is the straight line w * z)."""
        self._check_fitted()
        for s in self.shapes_:
            if s.name == name:
                return s
        raise ValueError(f"name must be a feature with a shape function, got {name!r}; "
                         f"features with one: {[s.name for s in self.shapes_]}")

    @property
    def selected_features_(self) -> list[str]:
        self._check_fitted()
        if self.kind_ == "linear":
            return self.linear_.selected_features_
        return [s.name for s in self.shapes_ if np.any(s.coef != 0)]

    @property
    def n_selected_(self) -> int:
        return len(self.selected_features_)

    @property
    def display_name(self) -> str:
        self._check_fitted()
        return "HTC-GAM" if self.kind_ == "gam" else "HTC-GAM (linear: HTC-Reduced won the inner CV)"

    # ----------------------------------------------------------- save/load
    def to_dict(self) -> dict:
        from .gam_file import gam_to_dict

        self._check_fitted()
        check_saveable_labels(self)
        return gam_to_dict(self)

    def save(self, path: str | Path) -> Path:
        from ..atomic import write_text

        return write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "HTCGAM":
        from .gam_file import parse_gam_dict

        params, state = parse_gam_dict(obj, source=source)
        model = cls(**params)
        for name, value in state.items():
            setattr(model, name, value)
        return model

    @classmethod
    def load(cls, path: str | Path) -> "HTCGAM":
        from .model_file import read_model_file

        return cls.from_dict(read_model_file(path), source=str(Path(path)))

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        fitted = f", kind_={self.kind_!r}, alpha_={self.alpha_:g}" if hasattr(self, "kind_") else ""
        return f"HTCGAM(select={self.select!r}{fitted})"
