"""The L1 subproblem driven from Python (issue 29, item 3: less to compile in a fresh install) computes what the
single kernels it replaced computed, to the bit.

The references below are the replaced kernels (``_feature_sign``, ``_anderson_sweeps`` and their helpers as
they were compiled before) run as plain Python: the same IEEE operations in the same order (numba compiles
without fast-math, so no reassociation and no fused multiply-add; numba's ``sum`` is a loop from 0), so their
results are the old kernels' results. Inputs: random Hessians, often singular (a column that is an exact
combination of others, as in the HTC features), iterates with zeros and nonzeros, all the path's alphas.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.calibration import subproblem as sp
from htc_core.calibration.pathsolver import logistic_hessian


# ---- the replaced kernels, as plain Python (the leaves they share with the new code are called as they are)
def _sign(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else x))


def _ref_solve_on_signs(H, g, Hw, alpha, theta, work, vnew):
    idx, L, rhs, sol = work
    k = 0
    for j in range(theta.shape[0]):
        if theta[j] != 0.0:
            idx[k] = j
            rhs[k] = Hw[j] - g[j] - alpha * theta[j]
            k += 1
    a = sp._cholesky_block(H, idx, k, L, 1e-12)
    if a < k:
        return a, False
    sp._cholesky_solve(L, k, rhs, sol)
    vnew[:] = 0.0
    consistent = True
    for a in range(k):
        vnew[idx[a]] = sol[a]
        if sol[a] * theta[idx[a]] <= 0.0:
            consistent = False
    return -1, consistent


def _ref_null_move(H, v, a, work, out):
    idx, L, rhs, sol = work
    d = v.shape[0]
    for b in range(a):
        rhs[b] = H[idx[b], idx[a]]
    sp._cholesky_solve(L, a, rhs, sol)
    u = np.zeros(d)
    u[idx[a]] = 1.0
    for b in range(a):
        u[idx[b]] = -sol[b]
    nz = [i for i in range(d) if u[i] != 0.0]
    t = [-v[i] / u[i] for i in nz]
    order = sorted(range(len(t)), key=lambda i: (np.isnan(t[i]), t[i]))      # stable, NaN last
    total = 0.0
    for m in range(len(t)):
        total += abs(u[nz[order[m]]])
    acc, m = 0.0, 0
    for m in range(len(t)):
        acc += abs(u[nz[order[m]]])
        if acc >= 0.5 * total:
            break
    tm = t[order[m]]
    out[:] = [v[i] + tm * u[i] for i in range(d)]
    out[nz[order[m]]] = 0.0


def _ref_best_on_segment(H, g, w, alpha, v, vnew, best, cand):
    d = v.shape[0]
    best[:] = vnew
    f_best = sp._model(H, g, w, alpha, vnew - w)
    for j in range(d):
        if v[j] == 0.0 or v[j] * vnew[j] >= 0.0:
            continue
        t = v[j] / (v[j] - vnew[j])
        for m in range(d):
            cand[m] = v[m] + t * (vnew[m] - v[m])
        cand[j] = 0.0
        f = sp._model(H, g, w, alpha, cand - w)
        if f < f_best:
            f_best = f
            best[:] = cand
    return f_best


def _ref_feature_sign(H, g, w, alpha, max_iter, calls):
    d = w.shape[0]
    Hw = np.empty(d)
    sp._mul(H, w, Hw)
    v = w.copy()
    theta = np.array([_sign(x) for x in v])
    work = (np.empty(d, dtype=np.int64), np.zeros((d, d)), np.empty(d), np.empty(d))
    vnew, best, cand = np.empty(d), np.empty(d), np.empty(d)
    f_cur = sp._model(H, g, w, alpha, np.zeros(d))
    settled = not any(t != 0.0 for t in theta)
    for _ in range(max_iter):
        if settled and not sp._activate(H, g, Hw, v, theta, alpha):
            break
        dependent, settled = _ref_solve_on_signs(H, g, Hw, alpha, theta, work, vnew)
        if dependent >= 0:
            calls["null_move"] += 1
            _ref_null_move(H, v, dependent, work, best)
            f = sp._model(H, g, w, alpha, best - w)
        else:
            f = _ref_best_on_segment(H, g, w, alpha, v, vnew, best, cand)
        if not f <= f_cur + 1e-10 * max(abs(f_cur), 1.0) or all(best[i] == v[i] for i in range(d)):
            break
        v[:] = best
        f_cur = min(f, f_cur)
        theta[:] = [_sign(x) for x in v]
    return v - w


def _ref_anderson_weights(hist, depth):
    d = hist.shape[1]
    G = np.zeros((depth, depth))
    trace = 0.0
    for a in range(depth):
        for b in range(a + 1):
            acc = 0.0
            for m in range(d):
                acc += (hist[a + 1, m] - hist[a, m]) * (hist[b + 1, m] - hist[b, m])
            G[a, b] = G[b, a] = acc
        trace += G[a, a]
    for a in range(depth):
        G[a, a] += 1e-10 * max(trace, 1e-300)
    L = np.zeros((depth, depth))
    if sp._cholesky_block(G, np.arange(depth, dtype=np.int64), depth, L, 0.0) < depth:
        return None
    c = np.empty(depth)
    sp._cholesky_solve(L, depth, np.ones(depth), c)
    tot = 0.0
    for x in c:                                    # numba's sum: a loop from 0
        tot += x
    if not np.isfinite(tot) or abs(tot) < 1e-300:
        return None
    return np.array([x / tot for x in c])


def _ref_anderson_sweeps(H, Ht, diag, thresholds, g, w, alpha, inner_tol, max_sweeps, depth, step, calls):
    d = w.shape[0]
    Hd = np.empty(d)
    sp._mul(H, step, Hd)
    hist = np.empty((depth + 1, d))
    k = 0
    for _ in range(max_sweeps):
        if sp._cd_sweep(Ht, diag, thresholds, g, w, step, Hd) <= inner_tol:
            break
        hist[k] = step
        k += 1
        if k < depth + 1:
            continue
        k = 0
        c = _ref_anderson_weights(hist, depth)
        if c is None:
            continue
        calls["anderson"] += 1
        cand = np.array([sum((c[a] * hist[a + 1, m] for a in range(depth)), 0.0) for m in range(d)])
        if sp._model(H, g, w, alpha, cand) < sp._model(H, g, w, alpha, step):
            step[:] = cand
            sp._mul(H, step, Hd)


def _ref_l1_direction(H, g, w, alpha, inner_tol, max_sweeps, calls, depth=5):
    Ht = np.ascontiguousarray(H.T)
    diag = Ht.diagonal().copy()
    thresholds = np.divide(alpha, diag, out=np.zeros_like(diag), where=diag > 1e-10)
    step = _ref_feature_sign(H, g, w, alpha, 4 * w.shape[0], calls)
    _ref_anderson_sweeps(H, Ht, diag, thresholds, g, w, alpha, inner_tol, max_sweeps, depth, step, calls)
    return step


# ---- inputs
def _subproblem(seed: int, d: int, dependent: bool, start_zero: bool):
    """(H, g, w) of a logistic loss at a random iterate: H = X' D X, with a column that is an exact combination
    of two others when ``dependent`` (a singular block), w with zeros and nonzeros unless ``start_zero``."""
    rng = np.random.default_rng(seed)
    n = 40 + 10 * d
    X = rng.standard_normal((n, d))
    if dependent and d >= 3:
        X[:, d - 1] = X[:, 0] - X[:, 1]
    X = np.ascontiguousarray(X)
    w = np.zeros(d) if start_zero else np.where(rng.random(d) < 0.4, 0.0, rng.normal(0, 0.5, d))
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    y = (rng.random(n) < 0.5).astype(float)
    H = logistic_hessian(X, p, np.empty_like(X))
    g = X.T @ (p - y)
    return H, g, w


ALPHAS = [1e-3, 1e-2, 0.1, 1.0, 5.0, 50.0]


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 12), alpha=st.sampled_from(ALPHAS),
       dependent=st.booleans(), start_zero=st.booleans())
def test_feature_sign_is_the_replaced_kernel_to_the_bit(seed, d, alpha, dependent, start_zero):
    H, g, w = _subproblem(seed, d, dependent, start_zero)
    want = _ref_feature_sign(H, g, w, alpha, 4 * d, {"null_move": 0})
    assert np.array_equal(sp._feature_sign(H, g, w, alpha, 4 * d), want, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 12), alpha=st.sampled_from(ALPHAS),
       dependent=st.booleans(), start_zero=st.booleans(), tol=st.sampled_from([1e-3, 1e-8, 1e-12]))
def test_l1_direction_is_the_replaced_kernels_to_the_bit(seed, d, alpha, dependent, start_zero, tol):
    H, g, w = _subproblem(seed, d, dependent, start_zero)
    want = _ref_l1_direction(H, g, w, alpha, tol, 300, {"null_move": 0, "anderson": 0})
    ws = sp.L1Workspace(d)
    assert np.array_equal(sp.l1_direction(H, g, w, alpha, tol, 300, ws=ws), want, equal_nan=True)
    assert np.array_equal(sp.l1_direction(H, g, w, alpha, tol, 300, ws=ws), want, equal_nan=True)   # reused
    assert np.array_equal(sp.l1_direction(H, g, w, alpha, tol, 300), want, equal_nan=True)           # its own


def test_the_rare_branches_are_exercised_and_agree():
    """A singular block (the null move) and coordinate descent that needs many sweeps from a poor start
    (the Anderson extrapolation): both branches run here, and agree to the bit."""
    calls = {"null_move": 0, "anderson": 0}
    for seed in range(30):
        H, g, w = _subproblem(seed, 10, True, True)
        for alpha in (1e-3, 0.1):
            want = _ref_feature_sign(H, g, w, alpha, 40, calls)
            assert np.array_equal(sp._feature_sign(H, g, w, alpha, 40), want)
    assert calls["null_move"] > 0
    rng = np.random.default_rng(5)
    for seed in range(10):
        A = rng.standard_normal((12, 10))
        H = A.T @ A + 1e-3 * np.eye(10)                     # ill-conditioned: plain sweeps crawl
        H = np.ascontiguousarray(H)
        g, w = rng.standard_normal(10) * 3, np.zeros(10)
        Ht = np.ascontiguousarray(H.T)
        diag = Ht.diagonal().copy()
        thr = np.divide(1e-3, diag, out=np.zeros_like(diag), where=diag > 1e-10)
        want = np.zeros(10)
        _ref_anderson_sweeps(H, Ht, diag, thr, g, w, 1e-3, 1e-12, 400, 5, want, calls)
        ws = sp.L1Workspace(10)
        sp._l1_prepare(H, 1e-3, ws.Ht, ws.diag, ws.thresholds)
        got = np.zeros(10)
        sp._anderson_sweeps(H, g, w, 1e-3, 1e-12, 400, got, ws)
        assert np.array_equal(got, want)
    assert calls["anderson"] > 0


@pytest.mark.parametrize("d", [1, 7])
def test_workspace_of_another_size_is_replaced(d):
    H, g, w = _subproblem(1, d, False, False)
    want = _ref_l1_direction(H, g, w, 0.1, 1e-9, 100, {"null_move": 0, "anderson": 0})
    assert np.array_equal(sp.l1_direction(H, g, w, 0.1, 1e-9, 100, ws=sp.L1Workspace(d + 3)), want)
