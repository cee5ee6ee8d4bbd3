"""HTC-Full and HTC-Reduced: standardize -> logistic regression, alpha chosen by inner CV.

The model is ``sigmoid(w . z + b)`` on standardized features ``z`` (DESIGN.md
section 4). HTC-Reduced uses an L1 penalty, HTC-Full an L2 penalty, with
``C = 1 / alpha`` and liblinear's objective (the intercept is penalized like a
weight, ``intercept_scaling=1``)::

    L1:  alpha * (|w|_1 + |b|)          + sum_i logloss_i
    L2:  alpha * (|w|^2 + b^2) / 2      + sum_i logloss_i

Two solvers reach that same optimum (:mod:`htc_core.calibration.solvers`):

- ``"path"`` (default): the project's warm-started proximal-Newton path
  (:mod:`htc_core.calibration.pathsolver`, the method of liblinear's own newGLMNET, compiled
  with numba). The alphas are solved from largest to smallest, each starting
  from the previous solution; for L1, columns that are exact copies of an
  earlier column (or constant) are left out of the fit and get weight 0, which
  leaves the optimum unchanged (the kept copy carries the weight) and makes the
  choice deterministic. On the real UALA run-a features a 15-alpha L1 path
  takes ~50 ms against ~0.2-0.8 s for separate liblinear fits, and lands closer
  to the exact optimum (see ``tests/test_pathsolver.py``).
- ``"liblinear"``: scikit-learn's ``LogisticRegression(solver="liblinear")``, one
  cold fit per alpha (the paper's setting, kept for comparison). On real HTC
  features it needs 0.05-0.5 s per L1 fit at alpha <= 0.1 (the features hold
  exact linear dependencies, e.g. Top-1 and Top-k columns coincide when a
  source has no alternatives).

The estimator follows scikit-learn's conventions (``BaseEstimator`` +
``ClassifierMixin``): ``clone``, ``cross_val_score`` and ``check_is_fitted`` work
on it. Saved models are JSON (never pickle); see :meth:`HTCCalibrator.save` and
:mod:`htc_core.calibration.model_file`.
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
from .inputs import check_positive_int, default_feature_names, unpack_features_and_names
from .inputs import TraceSetMixin, align_columns, check_predict_data, check_saveable_labels, validate_fit_data
from .shift import feature_stats
from .linear_scoring import check_feature_profile, linear_score
from .metrics import fast_auroc, fast_brier, fast_ece
from .model_file import (DEFAULT_PROFILE, DEFAULT_TOP_K, MODEL_FORMAT, model_to_dict, parse_model_dict,
                         parse_model_text, read_model_file)
from .solvers import (DEFAULT_ALPHAS, PENALTIES, SOLVERS, VARIANTS, fit_path, sigmoid,  # noqa: F401 (re-exported)
                      soft_cap, standardize_params)

# fit_path and standardize_params stay importable from here; they are documented where they are defined (solvers)
__all__ = ["HTCCalibrator", "DEFAULT_ALPHAS", "MODEL_FORMAT"]


# ------------------------------------------------------------------ model
class HTCCalibrator(TraceSetMixin, ClassifierMixin, BaseEstimator):
    """Holistic Trajectory Calibration model (paper section 3.3, DESIGN.md section 4).

    A scikit-learn classifier: ``fit(X, y)`` selects alpha by inner stratified CV, then refits on all of
    ``(X, y)``; ``predict_proba(X)[:, 1]`` is the calibrated confidence. X is a :class:`FeatureMatrix`, an
    array or a DataFrame (columns found by name); :meth:`fit_traces` / :meth:`predict_proba_traces` take a
    TraceSet. Saved as JSON (:meth:`save`), never pickle.

    Parameters
    ----------
    variant : {"reduced", "full"}, default="reduced"
        HTC-Reduced (L1, sparse) or HTC-Full (L2).
    alphas : sequence of float, default=DEFAULT_ALPHAS
        Candidate regularization strengths (C = 1 / alpha).
    inner_folds : int, default=5
        Stratified folds of the alpha selection (on the data given to ``fit`` only).
    random_state : int or None, default=42
        Seed of the inner fold shuffling.
    max_iter : int, default=1000
        Iteration cap of the solver.
    tol : float, default=1e-4
        Stopping tolerance. For ``solver="path"``: the largest entry of the objective's minimum-norm
        subgradient, relative to the largest gradient entry at w = 0. For ``"liblinear"``: liblinear's own
        tolerance (scikit-learn's meaning).
    profile : str or None, default=None
        The token-confidence profile (DESIGN.md section 3) of the features, recorded in the model so that new
        runs are scored with the same definitions. A ``FeatureMatrix`` carries its own: with ``None`` the
        model takes it from the matrix given to ``fit`` (a different value given here raises ``ValueError``).
        Arrays and DataFrames carry none: the model then records this parameter (``None``: ``"paper"``).
        Scoring a ``FeatureMatrix`` of another profile or top-k raises ``ValueError``; arrays and DataFrames
        are taken on trust.
    top_k : int or None, default=None
        The features' top-k, recorded like ``profile`` (``None``: the matrix's, else 5).
    solver : {"path", "liblinear"}, default="path"
        Warm-started proximal Newton, or scikit-learn's liblinear (one cold fit per alpha); both minimize
        the same objective, see the module docstring. Recorded in saved models.
    prior : HTCCalibrator, GeneralCalibrator, str or path, optional
        Adapt this fitted model (a shipped name such as ``"gac"`` or a model file) to the labels given to
        ``fit`` instead of fitting from scratch (:mod:`htc_core.calibration.adapt`).
    max_logit : float or None, default=10
        A soft bound on the logit: the linear score ``s = w . z + b`` becomes the logit
        ``max_logit * tanh(s / max_logit)``, so no run gets a confidence beyond ``sigmoid(±max_logit)``
        (1 - 4.5e-5 at 10). The order of the runs is unchanged (AUROC exactly as without), scores within a few
        units barely move (s = 3 -> 2.91), and near-separable runs no longer read "logit -236". ``None``: the
        plain linear logit (the paper's model; model files written before this option load that way).

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        Weights on the standardized features.
    intercept_ : ndarray of shape (1,)
    alpha_ : float
        The selected alpha.
    classes_ : ndarray of shape (2,)
        ``[0, 1]`` for 0/1 labels (1 = success), else the two labels sorted.
    mean_, scale_ : ndarray of shape (n_features,)
        The standardization.
    feature_names_in_ : ndarray of str
    n_features_in_ : int
    profile_, top_k_ : str, int
        The features' definitions.
    cv_results_ : dict or None
        Per alpha: mean AUROC, Brier, ECE and the criterion of the inner CV.
    training_summary_ : dict
        Size, positive rate, datasets, models and feature statistics of the training runs.

    Examples
    --------
    >>> import htc_core as htc
    >>> from sklearn.model_selection import cross_val_score
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> fm, y = htc.extract(ts), ts.labels
    >>> scores = cross_val_score(htc.HTCCalibrator(alphas=(0.1, 1.0)), fm, y, cv=3, scoring="roc_auc")
    >>> bool(scores.min() > 0.5)
    True
    >>> model = htc.HTCCalibrator(alphas=(0.1, 1.0)).fit(fm, y)
    >>> model.predict_proba(fm).shape
    (250, 2)
    """

    def __init__(self, variant: str = "reduced", alphas: Sequence[float] = DEFAULT_ALPHAS, inner_folds: int = 5,
                 random_state: int | None = 42, max_iter: int = 1000, tol: float = 1e-4, profile: str | None = None,
                 top_k: int | None = None, solver: str = "path", prior=None, max_logit: float | None = 10.0):
        self.variant = variant
        self.alphas = alphas
        self.inner_folds = inner_folds
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol
        self.profile = profile
        self.top_k = top_k
        self.solver = solver
        self.prior = prior
        self.max_logit = max_logit

    def __sklearn_clone__(self):
        """An unfitted copy with the same parameters (scikit-learn's ``clone``); a fitted ``prior`` is shared,
        never cloned into an unfitted copy."""
        from sklearn.base import clone

        params = {k: (v if k == "prior" else clone(v, safe=False)) for k, v in self.get_params(deep=False).items()}
        return type(self)(**params)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "coef_")

    # -------------------------------------------------------------- params
    def _check_params(self) -> tuple[str, np.ndarray]:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        try:
            alphas = np.asarray(self.alphas, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f"alphas must be a sequence of positive numbers, got {self.alphas!r}") from None
        if alphas.size == 0 or not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
            raise ValueError(f"alphas must be a non-empty sequence of positive numbers, got {self.alphas!r}")
        check_positive_int(self.inner_folds, "inner_folds", 2)
        check_positive_int(self.max_iter, "max_iter", 1)
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float)) or not 0 < self.tol < 1:
            raise ValueError(f"tol must be a number in (0, 1), got {self.tol!r}")
        if self.max_logit is not None and (isinstance(self.max_logit, bool) or not isinstance(
                self.max_logit, (int, float)) or not np.isfinite(self.max_logit) or self.max_logit <= 0):
            raise ValueError(f"max_logit must be a positive number or None, got {self.max_logit!r}")
        return PENALTIES[self.variant], alphas

    def _fit_profile(self, of_matrix: tuple[str, int] | None) -> tuple[str, int]:
        """(profile, top_k) the model records: the FeatureMatrix's, else the parameters (None = paper / 5)."""
        from ..confidence import PROFILES

        if self.profile is not None and self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {sorted(PROFILES)} or None, got {self.profile!r}")
        if self.top_k is not None:
            check_positive_int(self.top_k, "top_k", 0)
        if of_matrix is None:
            return (DEFAULT_PROFILE if self.profile is None else self.profile,
                    DEFAULT_TOP_K if self.top_k is None else int(self.top_k))
        for param, mine, theirs in (("profile", self.profile, of_matrix[0]), ("top_k", self.top_k, of_matrix[1])):
            if mine is not None and mine != theirs:
                raise ValueError(f"{param}={mine!r} was given, but X is a FeatureMatrix computed with profile "
                                 f"{of_matrix[0]!r} and top_k {of_matrix[1]}; leave {param}=None to use the "
                                 "matrix's, or extract the features again with the wanted settings")
        return of_matrix

    def _path(self, Xs, y, alphas, penalty):
        return fit_path(Xs, y, alphas, penalty, max_iter=int(self.max_iter), random_state=self.random_state,
                        tol=float(self.tol), solver=self.solver)

    # ----------------------------------------------------------------- fit
    def fit(self, X, y, *, feature_names: Sequence[str] | None = None, meta=None) -> "HTCCalibrator":
        """Select alpha by inner stratified CV on (X, y), then refit on all of (X, y).

        BLAS runs on one thread during the fit (``blas_threads``).

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            The features (a frame of ``fm.to_frame()`` works as the matrix does).
        y : array-like of shape (n_runs,)
            Binary labels (0/1, boolean, or any two values: the larger is the success class).
        feature_names : sequence of str, optional
            Column names for an array (a FeatureMatrix or DataFrame brings its own).
        meta : DataFrame, optional
            The trace set's metadata: fills the training summary's datasets and models.

        Returns
        -------
        self : HTCCalibrator
            The fitted model.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(0.1, 1.0)).fit(htc.extract(ts), ts.labels, meta=ts.meta)
        >>> model.alpha_ in (0.1, 1.0), model.training_summary_["datasets"]
        (True, ['units'])
        """
        with one_blas_thread():
            return self._fit(X, y, feature_names=feature_names, meta=meta)

    def _fit(self, X, y, *, feature_names, meta) -> "HTCCalibrator":
        penalty, alphas = self._check_params()
        if self.prior is not None:
            from .adapt import fit_with_prior

            return fit_with_prior(self, X, y, meta=meta)
        X, y, classes, names, of_matrix = validate_fit_data(self, X, y)
        profile, top_k = self._fit_profile(of_matrix)
        names = self._fit_names(X.shape[1], names, feature_names)
        n_pos = int(y.sum())
        if min(n_pos, len(y) - n_pos) < 2:
            raise ValueError(f"y must hold at least 2 successes and 2 failures to fit a calibrator, "
                             f"got {n_pos} successes and {len(y) - n_pos} failures")
        self.alpha_candidates_ = alphas
        if alphas.size == 1:
            self.alpha_, self.cv_results_ = float(alphas[0]), None
        else:
            self.alpha_, self.cv_results_ = self._select_alpha(X, y, alphas, penalty)
        self.mean_, self.scale_ = standardize_params(X)
        Xs = (X - self.mean_) / self.scale_
        # the path solver reaches alpha_ from the larger candidates (warm starts); liblinear fits it alone
        path = alphas[alphas >= self.alpha_] if self.solver == "path" else np.array([self.alpha_])
        W, b = self._path(Xs, y, path, penalty)
        at = int(np.flatnonzero(path == self.alpha_)[0])
        self.coef_ = W[at:at + 1].copy()
        self.intercept_ = b[at:at + 1].copy()
        self.feature_names_in_ = np.array(names, dtype=object)
        self.n_features_in_ = X.shape[1]
        self.classes_ = classes
        self.profile_, self.top_k_ = profile, top_k
        self.logit_bound_ = None if self.max_logit is None else float(self.max_logit)
        self.training_summary_ = self._summary(y, meta) | {"feature_stats": feature_stats(X)}
        return self

    @staticmethod
    def _fit_names(d: int, names: list[str] | None, feature_names: Sequence[str] | None) -> list[str]:
        if feature_names is not None:
            names = [str(v) for v in feature_names]
        if names is None:
            names = default_feature_names(d)
        if len(names) != d:
            raise ValueError(f"feature_names must have {d} entries, got {len(names)}")
        return names

    def _select_alpha(self, X: np.ndarray, y: np.ndarray, alphas: np.ndarray, penalty: str):
        from sklearn.model_selection import StratifiedKFold

        n_pos = int(y.sum())
        k = int(min(self.inner_folds, n_pos, len(y) - n_pos))
        skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=self.random_state)
        au = np.empty((k, alphas.size))
        br = np.empty((k, alphas.size))
        ec = np.empty((k, alphas.size))
        for f, (tr, te) in enumerate(skf.split(X, y)):
            mean, scale = standardize_params(X[tr])
            Xtr = (X[tr] - mean) / scale
            Xte = (X[te] - mean) / scale
            W, b = self._path(Xtr, y[tr], alphas, penalty)
            P = sigmoid(soft_cap(W @ Xte.T + b[:, None], self.max_logit))   # [n_alphas, n_test]
            yte = y[te]
            au[f] = fast_auroc(yte, P)
            br[f] = fast_brier(yte, P)
            ec[f] = fast_ece(yte, P)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m_au = np.nanmean(au, axis=0)
        m_au = np.where(np.isnan(m_au), 0.5, m_au)
        m_br = br.mean(axis=0)
        m_ec = ec.mean(axis=0)
        crit = m_au - m_br - m_ec
        best = int(np.argmax(crit))
        results = {"alpha": alphas.tolist(), "auroc": m_au.tolist(), "brier": m_br.tolist(), "ece": m_ec.tolist(),
                   "criterion": crit.tolist(), "n_folds": k}
        return float(alphas[best]), results

    @staticmethod
    def _summary(y: np.ndarray, meta) -> dict:
        s: dict[str, Any] = {"n": int(len(y)), "positive_rate": float(np.mean(y)) if len(y) else float("nan"),
                             "datasets": [], "models": []}
        if meta is not None:
            for col, key in (("dataset", "datasets"), ("model", "models")):
                if col in getattr(meta, "columns", ()):
                    vals = meta[col].dropna().astype(str).unique().tolist()
                    s[key] = sorted(vals)
            if "id" in getattr(meta, "columns", ()) and len(meta):
                # ids RUN@k are prefixes (`htc prefixes`, `htc fit --prefixes`): a model for a live monitor
                prefix = meta["id"].astype(str).str.contains(r"@[0-9]+$", regex=True).all()
                s["fitted_on"] = "prefixes" if prefix else "whole runs"
        return s

    # ------------------------------------------------------------- predict
    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise NotFittedError("this HTCCalibrator is not fitted yet; call fit(X, y) or HTCCalibrator.load(path)")

    def _standardized(self, X) -> np.ndarray:
        return (self._checked(X) - self.mean_) / self.scale_

    def _checked(self, X) -> np.ndarray:
        self._check_fitted()
        values, names, of_matrix = unpack_features_and_names(X)
        check_feature_profile(of_matrix, self.profile_, self.top_k_)
        values = align_columns(values, names, [str(n) for n in self.feature_names_in_])
        return check_predict_data(self, values)

    def decision_function(self, X) -> np.ndarray:
        """Logit of the calibrated confidence: the linear score, softly bounded by ``max_logit``.

        The logit is ``max_logit * tanh(score / max_logit)`` of :meth:`linear_score` (the score itself when
        unbounded). The bound in use is ``logit_bound_`` (set by ``fit``; an adapted model keeps its prior's; a
        loaded one the file's).

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k (columns found by name when X has names).

        Returns
        -------
        ndarray of shape (n_runs,)
            The logit; ``sigmoid`` of it is ``predict_proba(X)[:, 1]``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> z = model.decision_function(fm)
        >>> bool(abs(z).max() < model.logit_bound_)
        True
        >>> import numpy as np
        >>> bool(np.allclose(1 / (1 + np.exp(-z)), model.predict_proba(fm)[:, 1]))
        True
        """
        return soft_cap(self.linear_score(X), getattr(self, "logit_bound_", None))

    def cap_factor(self, X) -> np.ndarray:
        """Per row, the ratio of the logit to the linear score.

        Scaling the intercept and every contribution by it gives terms that add up to the logit itself. It is 1
        where the score is 0 or the model has no bound (``max_logit=None``), and below 1 elsewhere.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)
            ``decision_function(X) / linear_score(X)``, in (0, 1].

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> k = model.cap_factor(fm)
        >>> bool(((k > 0) & (k <= 1)).all())
        True
        >>> import numpy as np
        >>> bool(np.allclose(k * model.linear_score(fm), model.decision_function(fm)))
        True
        """
        s = self.linear_score(X)
        cap = getattr(self, "logit_bound_", None)
        if cap is None:
            return np.ones_like(s)
        with np.errstate(invalid="ignore", divide="ignore"):
            k = soft_cap(s, cap) / s
        return np.where(s == 0, 1.0, k)

    def linear_score(self, X) -> np.ndarray:
        """The linear score ``w . (x - mean) / scale + b``: the logit before the soft bound.

        The scaler is folded into the weights (one matrix-vector product, no standardized copy of X). A row
        whose score is not a number (features far outside what the model can score) raises ``ValueError``.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)
            The linear score of each run.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> import numpy as np
        >>> s = model.linear_score(fm)
        >>> bool(np.allclose(s, model.contributions(fm).sum(axis=1) + model.intercept_[0]))
        True
        """
        # the maths is linear_scoring's (shared with LinearScorer, which htc score loads without scikit-learn)
        return linear_score(self._checked(X), self.coef_[0], self.intercept_[0], self.mean_, self.scale_)

    def predict_proba(self, X) -> np.ndarray:
        """The calibrated probabilities of failure and success.

        Parameters
        ----------
        X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
            Features of the model's profile and top-k (columns found by name when X has names).

        Returns
        -------
        ndarray of shape (n_runs, 2)
            Probability of failure, probability of success (the calibrated confidence).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> p = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels).predict_proba(fm)
        >>> bool(((p >= 0) & (p <= 1)).all() and abs(p.sum(axis=1) - 1).max() < 1e-12)
        True
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
            ``classes_[1]`` (1 for 0/1 labels) where the confidence exceeds 0.5, else ``classes_[0]``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> model.predict(fm)[:5]
        array([...])
        >>> bool(0.5 < (model.predict(fm) == ts.labels).mean() <= 1)
        True
        """
        z = self.decision_function(X)   # checks that the model is fitted
        return self.classes_[(z > 0).astype(int)]

    def contributions(self, X) -> np.ndarray:
        """Per-feature contribution to the linear score: weight times standardized value.

        ``contributions(X).sum(1) + intercept_[0] == linear_score(X)``; times :meth:`cap_factor` they add up to
        ``decision_function(X)`` (identical when unbounded). Features the L1 fit left out contribute 0.

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
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> c = model.contributions(fm)
        >>> c.shape
        (250, 48)
        >>> int((c != 0).any(axis=0).sum()) == model.n_selected_
        True
        """
        return self._standardized(X) * self.coef_[0]

    @property
    def selected_features_(self) -> list[str]:
        """The names of the features with a non-zero weight (all of them for HTC-Full, a subset for HTC-Reduced).

        Returns
        -------
        list of str
            In the order of ``feature_names_in_``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> len(model.selected_features_) == model.n_selected_ <= 48
        True
        >>> model.selected_features_[0]
        '...'
        """
        self._check_fitted()
        return [str(n) for n, w in zip(self.feature_names_in_, self.coef_[0]) if w != 0]

    @property
    def n_selected_(self) -> int:
        """The number of features with a non-zero weight.

        Returns
        -------
        int
            ``len(selected_features_)``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> 0 < model.n_selected_ <= 48
        True
        """
        self._check_fitted()
        return int(np.count_nonzero(self.coef_[0]))

    # ----------------------------------------------------------- save/load
    def to_dict(self) -> dict:
        """The model file's JSON object (see :mod:`htc_core.calibration.model_file`).

        Returns
        -------
        dict
            What :meth:`save` writes and :meth:`from_dict` reads back (JSON types only).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> d = model.to_dict()
        >>> d["format"], d["variant"]
        ('htc-calibrator', 'reduced')
        """
        self._check_fitted()
        check_saveable_labels(self)
        return model_to_dict(self)

    def save(self, path: str | Path) -> Path:
        """Write the model as JSON (atomic; floats round-trip exactly).

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
        >>> import tempfile, os
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> path = model.save(os.path.join(tempfile.mkdtemp(), "model.json"))
        >>> bool((htc.HTCCalibrator.load(path).coef_ == model.coef_).all())
        True
        """
        from ..atomic import write_text

        text = json.dumps(self.to_dict(), indent=1, allow_nan=True)
        return write_text(path, text + "\n")  # atomic: a failed save leaves the previous file intact

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "HTCCalibrator":
        """A fitted model from a model file's JSON object.

        Parameters
        ----------
        obj : dict
            The object of a model file (:meth:`to_dict`).
        source : str, default="model"
            What ``obj`` came from, named in the error messages.

        Returns
        -------
        HTCCalibrator
            The fitted model; anything invalid raises a ValueError saying why.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> again = htc.HTCCalibrator.from_dict(model.to_dict())
        >>> bool((again.predict_proba(fm) == model.predict_proba(fm)).all())
        True
        >>> htc.HTCCalibrator.from_dict({"format": "other"}, source="upload.json")
        Traceback (most recent call last):
        ...
        ValueError: upload.json ...
        """
        params, state = parse_model_dict(obj, source=source)
        model = cls(**params)
        for name, value in state.items():
            setattr(model, name, value)
        return model

    @classmethod
    def from_json(cls, data: str | bytes, *, source: str = "model") -> "HTCCalibrator":
        """A fitted model from a model file's text or bytes (an upload), checked as :meth:`load` checks a file.

        Parameters
        ----------
        data : str or bytes
            The model file's content.
        source : str, default="model"
            What ``data`` came from, named in the error messages.

        Returns
        -------
        HTCCalibrator
            The fitted model; anything invalid raises a ValueError saying why.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
        >>> import json
        >>> again = htc.HTCCalibrator.from_json(json.dumps(model.to_dict()).encode())
        >>> again.alpha_, again.n_selected_ == model.n_selected_
        (1.0, True)
        >>> htc.HTCCalibrator.from_json(b"{not json", source="upload.json")
        Traceback (most recent call last):
        ...
        ValueError: upload.json ...
        """
        return cls.from_dict(parse_model_text(data, source=source), source=source)

    @classmethod
    def load(cls, path: str | Path) -> "HTCCalibrator":
        """Read a model written by :meth:`save`.

        Parameters
        ----------
        path : str or path
            The model file; anything but a valid HTC model file raises a ValueError saying why.

        Returns
        -------
        HTCCalibrator
            The fitted model.

        Examples
        --------
        >>> import htc_core as htc
        >>> htc.HTCCalibrator.load("nothing-here.json")
        Traceback (most recent call last):
        ...
        ValueError: model file nothing-here.json does not exist
        """
        return cls.from_dict(read_model_file(path), source=str(Path(path)))

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        fitted = f", alpha_={self.alpha_:g}, selected={self.n_selected_}" if hasattr(self, "coef_") else ""
        return f"HTCCalibrator(variant={self.variant!r}{fitted})"
