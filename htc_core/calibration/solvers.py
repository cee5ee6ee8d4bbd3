"""The regularized logistic-regression fits behind :class:`~htc_core.calibration.calibrators.HTCCalibrator`.

liblinear's objective (``C = 1 / alpha``, the intercept penalized like a weight)::

    L1:  alpha * (|w|_1 + |b|)          + sum_i logloss_i
    L2:  alpha * (|w|^2 + b^2) / 2      + sum_i logloss_i

is solved for a whole grid of alphas either by the project's warm-started
proximal-Newton path (:mod:`htc_core.calibration.pathsolver`, default) or by
scikit-learn's liblinear, one cold fit per alpha. Both take standardized
features; :func:`standardize_params` is the scaler (``StandardScaler``'s rule).
"""

from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

from .blas_threads import one_blas_thread

__all__ = ["DEFAULT_ALPHAS", "VARIANTS", "SOLVERS", "PENALTIES", "fit_path", "standardize_params", "soft_cap",
           "distinct_columns", "sigmoid"]

#: the paper's alpha grid (DESIGN.md section 4)
DEFAULT_ALPHAS = (0.001, 0.01, 0.1, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 20.0, 50.0)
VARIANTS = ("reduced", "full")
#: variant -> penalty: HTC-Reduced is sparse (L1), HTC-Full keeps every feature (L2)
PENALTIES = {"reduced": "l1", "full": "l2"}
SOLVERS = ("path", "liblinear")


def sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))`` without overflow for large ``|z|``."""
    out = np.empty_like(z, dtype=np.float64)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def soft_cap(z: np.ndarray, bound: float | None) -> np.ndarray:
    """``bound * tanh(z / bound)``: close to ``z`` for small ``|z|``, never beyond ``±bound`` (``z`` itself when
    ``bound`` is None). Monotone, so the order of the scores is kept."""
    z = np.asarray(z, dtype=np.float64)
    return z if bound is None else bound * np.tanh(z / bound)


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
    with one_blas_thread():  # the products are small: BLAS threads cost 10x the CPU (blas_threads.py)
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
