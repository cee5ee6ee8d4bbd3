"""HTC-GAM's pieces: de-duplication, the cubic B-spline basis (flat beyond the data), the P-spline penalty,
the penalized Newton path and :class:`ShapeFunction` (see :mod:`htc_core.calibration.gam` for the decisions)."""

from __future__ import annotations

import numpy as np
from scipy.interpolate import BSpline

from .solvers import sigmoid

__all__ = ["DEGREE", "SELECT", "ShapeFunction", "dedup_columns", "make_knots", "basis", "Design", "newton_path"]

DEGREE = 3
#: HTCGAM(select=...): GAM vs HTC-Reduced by inner CV, always the GAM, always HTC-Reduced
SELECT = ("cv", "gam", "linear")


# ------------------------------------------------------------- the basis
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


def basis(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """[n, m] B-spline design matrix of ``x`` clipped to the base interval (flat beyond the data)."""
    lo, hi = knots[DEGREE], knots[-DEGREE - 1]
    xc = np.clip(x, lo, hi)
    return BSpline.design_matrix(xc, knots, DEGREE, extrapolate=True).toarray()


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
        return np.hstack([basis(X[:, j], t) - mu for j, t, mu in zip(self.cols, self.knots, self.means)])


def newton_path(B: np.ndarray, y: np.ndarray, P: np.ndarray, alphas: np.ndarray, max_iter: int, tol: float):
    """Penalized logistic fits for every alpha (largest first, warm-started): ([n_alphas, m] coef, [n_alphas] b)."""
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


class ShapeFunction:
    """One feature's fitted shape function: ``value(x)`` is its contribution to the logit."""

    def __init__(self, name: str, knots: np.ndarray, coef: np.ndarray, offset: float):
        self.name, self.knots, self.coef, self.offset = name, knots, coef, float(offset)

    @property
    def range(self) -> tuple[float, float]:
        return float(self.knots[DEGREE]), float(self.knots[-DEGREE - 1])

    def value(self, x) -> np.ndarray:
        return basis(np.asarray(x, dtype=np.float64).reshape(-1), self.knots) @ self.coef - self.offset

    def curve(self, n: int = 100) -> tuple[np.ndarray, np.ndarray]:
        """(grid over the training range, shape value on it), for plotting."""
        lo, hi = self.range
        grid = np.linspace(lo, hi, n)
        return grid, self.value(grid)

    def to_dict(self) -> dict:
        return {"name": self.name, "knots": [float(v) for v in self.knots], "coef": [float(v) for v in self.coef],
                "offset": self.offset}
