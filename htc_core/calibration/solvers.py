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

# soft_cap, distinct_columns and sigmoid are helpers of the calibrators and the path solver, not entry points
__all__ = ["DEFAULT_ALPHAS", "VARIANTS", "SOLVERS", "PENALTIES", "fit_path", "standardize_params"]

# the paper's alpha grid (DESIGN.md section 4)
DEFAULT_ALPHAS = (0.001, 0.01, 0.1, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 20.0, 50.0)
VARIANTS = ("reduced", "full")
# variant -> penalty: HTC-Reduced is sparse (L1), HTC-Full keeps every feature (L2)
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
    """Mean and scale as ``StandardScaler`` (ddof 0; a zero scale becomes 1).

    A scale below ``10 * eps * max(|mean|, 1)`` counts as zero, so a constant column (up to rounding) is
    left unscaled instead of being blown up.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The training features.

    Returns
    -------
    mean : ndarray of shape (d,)
        The column means.
    scale : ndarray of shape (d,)
        The column standard deviations (ddof 0), 1 for a constant column.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.solvers import standardize_params
    >>> mean, scale = standardize_params(np.array([[1.0, 5.0], [3.0, 5.0]]))
    >>> mean.tolist(), scale.tolist()
    ([2.0, 5.0], [1.0, 1.0])
    """
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 10 * np.finfo(np.float64).eps * np.maximum(np.abs(mean), 1.0), scale, 1.0)
    return mean, scale


def fit_path(Xs: np.ndarray, y: np.ndarray, alphas: Sequence[float], penalty: str, *, max_iter: int = 1000,
             random_state: int | None = 42, tol: float = 1e-4, solver: str = "path") -> tuple[np.ndarray, np.ndarray]:
    """Fit liblinear's logistic-regression objective (C = 1/alpha) on standardized ``Xs`` for every alpha.

    The objective is the module's (the intercept penalized like a weight). With ``solver="path"`` the alphas
    are solved largest first, each fit warm-started from the previous one, and an L1 fit leaves constant and
    duplicate columns out (they get weight 0). BLAS runs on one thread meanwhile.

    Parameters
    ----------
    Xs : ndarray of shape (n, d)
        Standardized features (:func:`standardize_params`).
    y : ndarray of shape (n,)
        0/1 outcomes.
    alphas : sequence of float
        The penalty strengths (``alpha = 1 / C``), positive.
    penalty : {"l1", "l2"}
        The penalty (``PENALTIES[variant]``).
    max_iter : int, default=1000
        Cap on the solver's iterations per alpha.
    random_state : int or None, default=42
        liblinear's seed (the path solver is deterministic and ignores it).
    tol : float, default=1e-4
        The solver's stopping tolerance.
    solver : {"path", "liblinear"}, default="path"
        The project's proximal-Newton path or scikit-learn's liblinear, one cold fit per alpha.

    Returns
    -------
    W : ndarray of shape (n_alphas, d)
        The weights, in the order of ``alphas``.
    b : ndarray of shape (n_alphas,)
        The intercepts.

    Examples
    --------
    Only the first of three features matters; the L1 path drops the others, then everything:

    >>> import numpy as np
    >>> from htc_core.calibration.solvers import fit_path, standardize_params
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)) * [1, 5, 0.1] + [0, 10, 0]
    >>> y = (X[:, 0] + 0.2 * rng.normal(size=200) > 0).astype(float)
    >>> mean, scale = standardize_params(X)
    >>> W, b = fit_path((X - mean) / scale, y, (0.1, 10.0, 100.0), "l1")
    >>> W.round(1)
    array([[ 7.8,  0.2, -0.3],
           [ 2.8,  0. ,  0. ],
           [ 0. ,  0. ,  0. ]])
    >>> W_lib, b_lib = fit_path((X - mean) / scale, y, (0.1, 10.0, 100.0), "l1", solver="liblinear")
    >>> bool(np.abs(W_lib - W).max() < 0.05)
    True
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
