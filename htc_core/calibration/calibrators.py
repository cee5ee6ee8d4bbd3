"""HTC-Full and HTC-Reduced: standardize -> logistic regression, alpha chosen by inner CV.

The model is ``sigmoid(w . z + b)`` on standardized features ``z`` (DESIGN.md
section 4). HTC-Reduced uses an L1 penalty, HTC-Full an L2 penalty, with
``C = 1 / alpha`` and liblinear's objective (the intercept is penalized like a
weight, ``intercept_scaling=1``)::

    L1:  alpha * (|w|_1 + |b|)          + sum_i logloss_i
    L2:  alpha * (|w|^2 + b^2) / 2      + sum_i logloss_i

Two solvers reach that same optimum:

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

Saved models are JSON (never pickle); see :meth:`HTCCalibrator.save`.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .metrics import _fast_auroc, _fast_brier, _fast_ece

__all__ = ["HTCCalibrator", "DEFAULT_ALPHAS", "MODEL_FORMAT", "fit_path", "standardize_params"]

DEFAULT_ALPHAS = (0.001, 0.01, 0.1, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 20.0, 50.0)
MODEL_FORMAT = "htc-calibrator"
MODEL_FORMAT_VERSION = 1
VARIANTS = ("reduced", "full")
SOLVERS = ("path", "liblinear")


# ---------------------------------------------------------------- helpers
def _sigmoid(z: np.ndarray) -> np.ndarray:
    out = np.empty_like(z, dtype=np.float64)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def standardize_params(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale as ``StandardScaler`` (ddof 0; a zero scale becomes 1)."""
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 10 * np.finfo(np.float64).eps * np.maximum(np.abs(mean), 1.0), scale, 1.0)
    return mean, scale


def fit_path(Xs: np.ndarray, y: np.ndarray, alphas: Sequence[float], penalty: str, *, max_iter: int = 1000,
             random_state: int | None = 42, tol: float = 1e-4, solver: str = "path") -> tuple[np.ndarray, np.ndarray]:
    """Fit liblinear's logistic-regression objective (C = 1/alpha) on standardized ``Xs`` for every alpha.

    Returns weights [n_alphas, d] and intercepts [n_alphas] in the order of ``alphas``.
    """
    if solver == "liblinear":
        return _fit_liblinear(Xs, y, alphas, penalty, max_iter, random_state, tol)
    return _fit_newton_path(Xs, y, alphas, penalty, max_iter, tol)


def distinct_columns(Xs: np.ndarray) -> np.ndarray:
    """Indices of the columns kept for an L1 fit: not constant and not an exact copy of an earlier column."""
    keep = []
    seen: dict[bytes, int] = {}
    for j in range(Xs.shape[1]):
        col = np.ascontiguousarray(Xs[:, j])
        if not np.any(col != col[0]):
            continue
        key = col.tobytes()
        if key in seen:
            continue
        seen[key] = j
        keep.append(j)
    return np.asarray(keep, dtype=np.intp)


def _fit_newton_path(Xs, y, alphas, penalty, max_iter, tol):
    from .pathsolver import fit_path_newton

    d = Xs.shape[1]
    cols = distinct_columns(Xs) if penalty == "l1" else np.arange(d)
    Wk, b, _ = fit_path_newton(np.ascontiguousarray(Xs[:, cols]), y, alphas, penalty, tol=tol, max_iter=max_iter)
    W = np.zeros((len(b), d))
    W[:, cols] = Wk
    return W, b


def _fit_liblinear(Xs, y, alphas, penalty, max_iter, random_state, tol=1e-3):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    W = np.zeros((len(alphas), Xs.shape[1]))
    b = np.zeros(len(alphas))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FutureWarning)
        for j, a in enumerate(alphas):
            m = LogisticRegression(C=1.0 / a, l1_ratio=1.0 if penalty == "l1" else 0.0, solver="liblinear",
                                   tol=tol, max_iter=max_iter, random_state=random_state).fit(Xs, y.astype(int))
            W[j] = m.coef_[0]
            b[j] = m.intercept_[0]
    return W, b


# ---------------------------------------------------------------- validation
def _check_X(X, name: str = "X") -> np.ndarray:
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 2-D array of numbers, got {type(X).__name__}") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D [n_samples, n_features], got an array of shape {arr.shape}")
    if not np.isfinite(arr).all():
        i, j = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} must be finite, got {float(arr[i, j])!r} at row {i}, column {j}")
    return arr


def _check_y(y, n: int) -> np.ndarray:
    try:
        arr = np.asarray(y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"y must be a 1-D array of 0/1 labels, got {type(y).__name__}") from None
    if arr.shape[0] != n:
        raise ValueError(f"y must have one label per row of X ({n}), got {arr.shape[0]}")
    bad = ~((arr == 0) | (arr == 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"y must contain only 0 and 1 (unlabeled rows removed), got {float(arr[i])!r} at index {i}")
    return arr


def _unpack_features(X) -> tuple[Any, list[str] | None]:
    """Accept an array, a DataFrame or a FeatureMatrix; return (values, feature names or None)."""
    names = None
    if hasattr(X, "values") and hasattr(X, "names") and hasattr(X, "profile"):   # FeatureMatrix
        return X.values, list(X.names)
    try:
        import pandas as pd

        if isinstance(X, pd.DataFrame):
            return X.to_numpy(dtype=np.float64), [str(c) for c in X.columns]
    except ImportError:  # pragma: no cover
        pass
    return X, names


# ------------------------------------------------------------------ model
class HTCCalibrator:
    """Holistic Trajectory Calibration model (paper section 3.3, DESIGN.md section 4).

    Parameters
    ----------
    variant : "reduced" (L1, sparse) or "full" (L2)
    alphas : candidate regularization strengths (C = 1 / alpha)
    inner_folds : stratified folds of the alpha selection (on the data given to ``fit`` only)
    random_state : seed of the inner fold shuffling
    max_iter : iteration cap of the solver
    tol : stopping tolerance. For ``solver="path"``: the largest entry of the objective's minimum-norm
        subgradient, relative to the largest gradient entry at w = 0. For ``"liblinear"``: liblinear's own
        tolerance (scikit-learn's meaning).
    profile, top_k : the token-confidence profile the features were computed with (stored in the model)
    solver : "path" (warm-started proximal Newton, default) or "liblinear" (scikit-learn, one cold fit per
        alpha); both minimize the same objective, see the module docstring. Recorded in saved models.

    Attributes after ``fit``: ``coef_`` [1, d], ``intercept_`` [1], ``alpha_``,
    ``mean_``, ``scale_``, ``feature_names_in_``, ``selected_features_``,
    ``cv_results_`` (per alpha: mean AUROC, Brier, ECE and the criterion),
    ``training_summary_``.
    """

    def __init__(self, variant: str = "reduced", alphas: Sequence[float] = DEFAULT_ALPHAS, inner_folds: int = 5,
                 random_state: int | None = 42, max_iter: int = 1000, tol: float = 1e-4, profile: str = "paper",
                 top_k: int = 5, solver: str = "path"):
        self.variant = variant
        self.alphas = alphas
        self.inner_folds = inner_folds
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol
        self.profile = profile
        self.top_k = top_k
        self.solver = solver

    # -------------------------------------------------------------- params
    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in ("variant", "alphas", "inner_folds", "random_state", "max_iter", "tol",
                                              "profile", "top_k", "solver")}

    def set_params(self, **params) -> "HTCCalibrator":
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"unknown parameter {k!r}; valid parameters: {sorted(self.get_params())}")
            setattr(self, k, v)
        return self

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
        if isinstance(self.inner_folds, bool) or not isinstance(self.inner_folds, (int, np.integer)) \
                or self.inner_folds < 2:
            raise ValueError(f"inner_folds must be an integer >= 2, got {self.inner_folds!r}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float)) or not 0 < self.tol < 1:
            raise ValueError(f"tol must be a number in (0, 1), got {self.tol!r}")
        return ("l1" if self.variant == "reduced" else "l2"), alphas

    def _path(self, Xs, y, alphas, penalty):
        return fit_path(Xs, y, alphas, penalty, max_iter=int(self.max_iter), random_state=self.random_state,
                        tol=float(self.tol), solver=self.solver)

    # ----------------------------------------------------------------- fit
    def fit(self, X, y, *, feature_names: Sequence[str] | None = None, meta=None) -> "HTCCalibrator":
        """Select alpha by inner stratified CV on (X, y), then refit on all of (X, y).

        ``X``: [n, d] array, DataFrame or ``FeatureMatrix``; ``y``: 0/1 labels.
        ``meta`` (optional trace-set metadata) fills the training summary's
        datasets and models.
        """
        penalty, alphas = self._check_params()
        values, names = _unpack_features(X)
        X = _check_X(values)
        y = _check_y(y, X.shape[0])
        if feature_names is not None:
            names = [str(v) for v in feature_names]
        if names is None:
            from ..features import FEATURE_NAMES

            names = list(FEATURE_NAMES) if X.shape[1] == len(FEATURE_NAMES) else [f"x{i}" for i in range(X.shape[1])]
        if len(names) != X.shape[1]:
            raise ValueError(f"feature_names must have {X.shape[1]} entries, got {len(names)}")
        n_pos = int(y.sum())
        n_min = min(n_pos, len(y) - n_pos)
        if n_min < 2:
            raise ValueError(f"y must hold at least 2 successes and 2 failures to fit a calibrator, "
                             f"got {n_pos} successes and {len(y) - n_pos} failures")
        self.alpha_candidates_ = alphas
        if alphas.size == 1:
            self.alpha_ = float(alphas[0])
            self.cv_results_ = None
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
        self.classes_ = np.array([0, 1])
        self.training_summary_ = self._summary(y, meta)
        return self

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
            P = _sigmoid(W @ Xte.T + b[:, None])          # [n_alphas, n_test]
            yte = y[te]
            au[f] = _fast_auroc(yte, P)
            br[f] = _fast_brier(yte, P)
            ec[f] = _fast_ece(yte, P)
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
        return s

    # ------------------------------------------------------------- predict
    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise ValueError("this HTCCalibrator is not fitted yet; call fit(X, y) or HTCCalibrator.load(path)")

    def _standardized(self, X) -> np.ndarray:
        return (self._checked(X) - self.mean_) / self.scale_

    def _checked(self, X) -> np.ndarray:
        self._check_fitted()
        values, names = _unpack_features(X)
        X = _check_X(values)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but the model was fitted with {self.n_features_in_}")
        if names is not None and list(names) != list(self.feature_names_in_):
            raise ValueError("X's feature names differ from the model's (same names in the same order needed)")
        return X

    def decision_function(self, X) -> np.ndarray:
        """Logit of the calibrated confidence, [n].

        The scaler is folded into the weights (one matrix-vector product, no
        standardized copy of X): ``w . (x - mean) / scale + b``.
        """
        X = self._checked(X)
        w = self.coef_[0] / self.scale_
        return X @ w + (self.intercept_[0] - float(self.mean_ @ w))

    def predict_proba(self, X) -> np.ndarray:
        """[n, 2]: probability of failure, probability of success (the calibrated confidence)."""
        p = _sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        return (self.decision_function(X) > 0).astype(int)

    def contributions(self, X) -> np.ndarray:
        """Per-feature contribution to the logit, weight x standardized value, [n, d].

        ``contributions(X).sum(1) + intercept_[0] == decision_function(X)``.
        """
        return self._standardized(X) * self.coef_[0]

    @property
    def selected_features_(self) -> list[str]:
        self._check_fitted()
        return [str(n) for n, w in zip(self.feature_names_in_, self.coef_[0]) if w != 0]

    @property
    def n_selected_(self) -> int:
        self._check_fitted()
        return int(np.count_nonzero(self.coef_[0]))

    # ----------------------------------------------------------- save/load
    def to_dict(self) -> dict:
        from .. import __version__

        self._check_fitted()
        return {
            "format": MODEL_FORMAT,
            "format_version": MODEL_FORMAT_VERSION,
            "htc_version": __version__,
            "variant": self.variant,
            "penalty": "l1" if self.variant == "reduced" else "l2",
            "solver": self.solver,
            "alpha": self.alpha_,
            "alphas": [float(a) for a in self.alpha_candidates_],
            "inner_folds": int(self.inner_folds),
            "random_state": self.random_state,
            "max_iter": int(self.max_iter),
            "tol": float(self.tol),
            "profile": self.profile,
            "top_k": int(self.top_k),
            "feature_names": [str(n) for n in self.feature_names_in_],
            "coef": [float(v) for v in self.coef_[0]],
            "intercept": float(self.intercept_[0]),
            "scaler": {"mean": [float(v) for v in self.mean_], "scale": [float(v) for v in self.scale_]},
            "selected_features": self.selected_features_,
            "training": self.training_summary_,
            "cv_results": self.cv_results_,
        }

    def save(self, path: str | Path) -> Path:
        """Write the model as JSON (floats round-trip exactly)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_dict(), indent=1, allow_nan=True)
        path.write_text(text + "\n", encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "HTCCalibrator":
        def bad(msg: str) -> ValueError:
            return ValueError(f"{source} is not a valid HTC model file: {msg}")

        if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
            got = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
            raise bad(f"expected a JSON object with \"format\": \"{MODEL_FORMAT}\", got {got!r}")
        ver = obj.get("format_version")
        if not isinstance(ver, int) or ver > MODEL_FORMAT_VERSION or ver < 1:
            raise bad(f"unsupported format_version {ver!r} (this htc reads version {MODEL_FORMAT_VERSION})")
        for key in ("variant", "alpha", "feature_names", "coef", "intercept", "scaler", "profile", "top_k"):
            if key not in obj:
                raise bad(f"missing field {key!r}")
        if obj["variant"] not in VARIANTS:
            raise bad(f"variant must be one of {VARIANTS}, got {obj['variant']!r}")
        names = obj["feature_names"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not names:
            raise bad("feature_names must be a non-empty list of strings")
        if len(set(names)) != len(names):
            raise bad("feature_names has duplicates")
        from ..features import REGISTRY

        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            raise bad(f"unknown feature names {unknown[:5]}; valid features: {', '.join(REGISTRY)}")
        d = len(names)

        def vec(x, what):
            try:
                a = np.asarray(x, dtype=np.float64)
            except (TypeError, ValueError):
                raise bad(f"{what} must be a list of numbers") from None
            if a.shape != (d,):
                raise bad(f"{what} must have {d} entries (one per feature), got shape {a.shape}")
            if not np.isfinite(a).all():
                raise bad(f"{what} must be finite")
            return a

        coef = vec(obj["coef"], "coef")
        sc = obj["scaler"]
        if not isinstance(sc, dict) or "mean" not in sc or "scale" not in sc:
            raise bad("scaler must be an object with 'mean' and 'scale'")
        mean = vec(sc["mean"], "scaler.mean")
        scale = vec(sc["scale"], "scaler.scale")
        if np.any(scale <= 0):
            raise bad("scaler.scale must be positive")
        try:
            intercept = float(obj["intercept"])
            alpha = float(obj["alpha"])
        except (TypeError, ValueError):
            raise bad("intercept and alpha must be numbers") from None
        if not math.isfinite(intercept) or not (alpha > 0):
            raise bad(f"intercept must be finite and alpha positive, got {obj['intercept']!r}, {obj['alpha']!r}")
        from ..confidence import PROFILES

        if obj["profile"] not in PROFILES:
            raise bad(f"unknown confidence profile {obj['profile']!r}; valid profiles: {sorted(PROFILES)}")
        if isinstance(obj["top_k"], bool) or not isinstance(obj["top_k"], int) or obj["top_k"] < 0:
            raise bad(f"top_k must be a non-negative integer, got {obj['top_k']!r}")
        m = cls(variant=obj["variant"], alphas=obj.get("alphas") or (alpha,), inner_folds=obj.get("inner_folds", 5),
                random_state=obj.get("random_state", 42), max_iter=obj.get("max_iter", 1000), tol=obj.get("tol", 1e-3),
                profile=obj["profile"], top_k=obj["top_k"], solver=obj.get("solver", "liblinear"))
        m.alpha_ = alpha
        m.alpha_candidates_ = np.asarray(m.alphas, dtype=np.float64)
        m.coef_ = coef[None, :]
        m.intercept_ = np.array([intercept])
        m.mean_ = mean
        m.scale_ = scale
        m.feature_names_in_ = np.array(names, dtype=object)
        m.n_features_in_ = d
        m.classes_ = np.array([0, 1])
        m.training_summary_ = obj.get("training") or {}
        m.cv_results_ = obj.get("cv_results")
        m.htc_version_ = obj.get("htc_version")
        return m

    @classmethod
    def load(cls, path: str | Path) -> "HTCCalibrator":
        """Read a model written by :meth:`save`; anything else raises a ValueError saying why."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ValueError(f"model file {path} does not exist") from None
        except (UnicodeDecodeError, IsADirectoryError) as e:
            raise ValueError(f"{path} is not a valid HTC model file: cannot read it as text ({e})") from None
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not a valid HTC model file: not JSON ({e.msg} at line {e.lineno})") from None
        return cls.from_dict(obj, source=str(path))

    def __repr__(self) -> str:
        fitted = f", alpha_={self.alpha_:g}, selected={self.n_selected_}" if hasattr(self, "coef_") else ""
        return f"HTCCalibrator(variant={self.variant!r}{fitted})"
