"""Warm-started regularization path for liblinear's logistic-regression objective.

Solves, for every alpha of a path, the same problem as liblinear (``C = 1 / alpha``,
intercept appended as a constant column and penalized like a weight)::

    L1:  alpha * sum_j |w_j|        + sum_i log(1 + exp(-s_i * z_i))
    L2:  alpha * sum_j w_j^2 / 2    + sum_i log(1 + exp(-s_i * z_i))

with ``z = X w`` and ``s = 2 y - 1``. The method is a proximal Newton iteration
(the quadratic model of the loss at ``w`` plus the exact penalty), as in
liblinear's own newGLMNET for L1: the subproblem is solved by an active-set
(feature-sign) start finished by coordinate descent with Anderson extrapolation
(L1, :mod:`htc_core.calibration.subproblem`) or by one linear solve (L2), followed by an Armijo
backtracking line search on the full objective. The alphas are visited from
largest to smallest and each fit starts from the previous solution, which is
what makes the many small-alpha fits of the nested cross-validation cheap (the
HTC features hold exact linear dependencies, where cold-started fits are slow).

Stopping: the largest entry of the minimum-norm subgradient of the objective
(L1) or of the gradient (L2) falls below ``tol`` times the largest gradient
entry at ``w = 0``.

The work is numba kernels (compiled once per machine, then loaded from the on-disk cache,
:mod:`htc_core.numba_cache`) driven by plain Python: :func:`path` and :func:`_solve_one` call one kernel per
stage, a handful per Newton iteration (microseconds against the Hessian's product). One kernel for the whole
path, as before, made a fresh install compile for ~16 s CPU (numba optimizes a kernel's callees again inside it,
level after level); flat, ~3.3 s (docs/benchmarks-coldstart.md). The matrix products and the L2 solve call BLAS / LAPACK through
``scipy.linalg.blas`` / ``lapack``: the library numba's own ``@`` and ``np.linalg.solve`` call, with the same
arguments, so the same bits (numpy's ``@`` uses numpy's own OpenBLAS build, which differed in the last bits of
the Hessian). Import this module lazily (numba's import costs ~0.5 s).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import blas, lapack

from ..numba_cache import njit

from .subproblem import L1Workspace, l1_direction

# the solver behind htc_core.calibration.solvers.fit_path (the entry point): nothing here is called by a user
__all__: list[str] = []


@njit(cache=True)
def _loss(z, s):
    """The logistic loss ``sum_i log(1 + exp(-s_i z_i))``, computed without overflow."""
    tot = 0.0
    for i in range(z.shape[0]):
        m = -s[i] * z[i]
        if m > 0:
            tot += m + np.log1p(np.exp(-m))
        else:
            tot += np.log1p(np.exp(m))
    return tot


@njit(cache=True)
def _penalty(w, alpha, l1):
    """The penalty ``alpha |w|_1`` (L1) or ``alpha |w|^2 / 2`` (L2)."""
    tot = 0.0
    if l1:
        for j in range(w.shape[0]):
            tot += abs(w[j])
        return alpha * tot
    for j in range(w.shape[0]):
        tot += w[j] * w[j]
    return 0.5 * alpha * tot


@njit(cache=True)
def _violation(g, w, alpha, l1):
    """The largest entry of the minimum-norm subgradient (L1) or of the gradient (L2): 0 at the optimum."""
    worst = 0.0
    for j in range(w.shape[0]):
        if l1:
            if w[j] > 0:
                v = abs(g[j] + alpha)
            elif w[j] < 0:
                v = abs(g[j] - alpha)
            else:
                v = max(abs(g[j]) - alpha, 0.0)
        else:
            v = abs(g[j] + alpha * w[j])
        if v > worst:
            worst = v
    return worst


@njit(cache=True)
def _probabilities(z, y, p, r):
    """p = sigmoid(z) and the residual r = p - y, in place."""
    for i in range(z.shape[0]):
        zi = z[i]
        if zi >= 0:
            e = np.exp(-zi)
            p[i] = 1.0 / (1.0 + e)
        else:
            e = np.exp(zi)
            p[i] = e / (1.0 + e)
        r[i] = p[i] - y[i]


@njit(cache=True)
def _weight_rows(X, p, XD):
    """XD = D X with D = diag(p (1 - p)) (floored at 1e-12)."""
    n, d = X.shape
    for i in range(n):
        dd = max(p[i] * (1.0 - p[i]), 1e-12)
        for j in range(d):
            XD[i, j] = X[i, j] * dd


def logistic_hessian(X, p, XD):
    """X' D X with D = diag(p (1 - p)) (floored at 1e-12); XD is scratch space (module doc: the BLAS call)."""
    _weight_rows(X, p, XD)
    return blas.dgemm(1.0, XD.T, X.T, trans_b=1).T


def _l2_step(H, g, w, alpha):
    """Newton direction of the L2 problem: one linear solve, LAPACK's ``dgesv`` through scipy (the routine and
    the arguments of numba's ``np.linalg.solve``: a Fortran-order copy of the matrix; the same bits). Raises
    ``LinAlgError`` like ``np.linalg.solve`` on a non-finite or singular system."""
    A = np.array(H, order="F")
    A[np.diag_indices_from(A)] += alpha + 1e-12
    rhs = -(g + alpha * w)
    if not (np.isfinite(A).all() and np.isfinite(rhs).all()):
        raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    _, _, x, info = lapack.dgesv(A, rhs, overwrite_a=True, overwrite_b=True)
    if info > 0:
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")
    return x


@njit(cache=True)
def _line_search(X, s, z, w, g, step, f, alpha, l1, Xd, wnew, znew):
    """Armijo backtracking on the full objective along ``step``. On success wnew / znew hold the new point
    and the new objective is returned; NaN when no decrease is possible (the path stops at w)."""
    n, d = X.shape
    pen_w = _penalty(w, alpha, l1)
    for i in range(n):
        acc = 0.0
        for j in range(d):
            acc += X[i, j] * step[j]
        Xd[i] = acc
    for j in range(d):
        wnew[j] = w[j] + step[j]
    delta = 0.0
    for j in range(d):
        delta += g[j] * step[j]
    delta += _penalty(wnew, alpha, l1) - pen_w
    if delta >= 0.0:
        return np.nan
    t = 1.0
    for _ in range(40):
        for j in range(d):
            wnew[j] = w[j] + t * step[j]
        for i in range(n):
            znew[i] = z[i] + t * Xd[i]
        fnew = _loss(znew, s) + _penalty(wnew, alpha, l1)
        if fnew - f <= 0.01 * t * delta:
            return fnew
        t *= 0.5
    return np.nan


def _objective(z, s, w, alpha, l1):
    """The full objective at (w, z = X w)."""
    return _loss(z, s) + _penalty(w, alpha, l1)


def _gradient(X, y, z, w, alpha, l1, p, r):
    """(gradient of the loss, its optimality violation); p and r (:func:`_probabilities`) are filled in place."""
    _probabilities(z, y, p, r)
    g = blas.dgemv(1.0, X.T, r)
    return g, _violation(g, w, alpha, l1)


def _start(X, y):
    """(the signs s = 2 y - 1, the largest gradient entry at w = 0, at least 1e-12)."""
    s = 2.0 * y - 1.0                    # numpy's elementwise arithmetic: the bits of the loop it replaced
    c = 0.5 - y
    return s, max(float(np.abs(blas.dgemv(1.0, X.T, c)).max()), 1e-12)


def _solve_one(X, y, s, alpha, l1, eps, max_newton, max_sweeps, w, z, work):
    """Proximal-Newton iterations at one alpha from the current (w, z), updated in place; returns the count.

    Plain Python calling one kernel per stage (a handful of calls per Newton iteration, microseconds against
    the Hessian's product): one kernel for the whole path made numba optimize every kernel again inside it,
    about 6 of the ~20 s CPU a fresh install spent compiling (issue 29). The arithmetic is the kernels', so
    the path is the same to the last bit."""
    p, r, Xd, znew, wnew, XD, ws = work
    f = _objective(z, s, w, alpha, l1)
    it = 0
    while it < max_newton:
        g, viol = _gradient(X, y, z, w, alpha, l1, p, r)
        if viol <= eps:
            break
        it += 1
        H = logistic_hessian(X, p, XD)
        if l1:
            step = l1_direction(H, g, w, alpha, max(0.1 * viol, 0.1 * eps), max_sweeps, ws=ws)
        else:
            step = _l2_step(H, g, w, alpha)
        fnew = _line_search(X, s, z, w, g, step, f, alpha, l1, Xd, wnew, znew)
        if np.isnan(fnew):
            break
        w[:] = wnew
        z[:] = znew
        f = fnew
    return it


def path(X, y, alphas, l1, tol, max_newton, max_sweeps, W_out, n_iter_out):
    """The path over ``alphas`` (in the given order, each fit from the previous one) into ``W_out`` and
    ``n_iter_out``; X, y and alphas C-contiguous float64 (the kernels compile for that one layout)."""
    n, d = X.shape
    s, scale = _start(X, y)
    w = np.zeros(d)
    z = np.zeros(n)
    work = (np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(d), np.empty((n, d)), L1Workspace(d))
    eps = tol * scale
    for k in range(alphas.shape[0]):
        n_iter_out[k] = _solve_one(X, y, s, float(alphas[k]), bool(l1), eps, max_newton, max_sweeps, w, z, work)
        W_out[k, :] = w
    return W_out


def fit_path_newton(Xs: np.ndarray, y: np.ndarray, alphas, penalty: str, *, tol: float = 1e-4,
                    max_iter: int = 1000, max_sweeps: int = 1000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights [n_alphas, d], intercepts [n_alphas] and Newton iterations per alpha, in the order of ``alphas``."""
    alphas = np.asarray(alphas, dtype=np.float64)
    order = np.argsort(-alphas, kind="stable")
    n, d = Xs.shape
    Xa = np.empty((n, d + 1))
    Xa[:, :d] = Xs
    Xa[:, d] = 1.0
    W = np.zeros((alphas.size, d + 1))
    its = np.zeros(alphas.size, dtype=np.int64)
    path(Xa, np.ascontiguousarray(y, dtype=np.float64), np.ascontiguousarray(alphas[order]), penalty == "l1", float(tol), int(max_iter),
         int(max_sweeps), W, its)
    out = np.empty_like(W)
    out[order] = W
    it_out = np.empty_like(its)
    it_out[order] = its
    return out[:, :d], out[:, d], it_out
