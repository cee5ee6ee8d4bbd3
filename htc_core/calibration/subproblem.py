"""The L1 subproblem of the path solver's proximal-Newton step, compiled with numba.

At the iterate ``w`` with gradient ``g`` and Hessian ``H`` of the loss, the Newton direction ``step``
minimizes the model ``g's + s'Hs / 2 + alpha |w + s|_1``. :func:`l1_direction` solves it in two stages:

1. feature-sign search (:func:`_feature_sign`) from ``s = 0``: an active-set method that solves the model
   exactly on the nonzero coordinates with their signs held (one Cholesky of at most ~45 columns), starting
   from the signs of ``w``, which rarely change between Newton iterations. It mostly ends at the exact
   minimizer in a few solves;
2. cyclic coordinate descent with Anderson extrapolation from there, under the same stopping rule as
   before (so a start that is already optimal costs one sweep, and a start that is not, e.g. where the
   HTC features' exact linear dependencies make a block of H singular, is finished as before).

On the sample runs' features the first stage halves the path's time: near alpha = 0 the Hessian's condition
number is ~1e5 (beyond the two exact dependencies), where coordinate descent needs hundreds of sweeps per
Newton iteration; the path also ends closer to the exact optimum at the same stopping tolerance.
:func:`l1_coordinate_step` is the plain coordinate-descent loop, the reference of the kernel tests.

Editing this module: the kernels here call each other, and numba compiles a callee into its caller. The
on-disk cache (:mod:`htc_core.numba_cache`) is stamped with the source of every kernel module of this folder, so
an edit anywhere here recompiles every caller (numba's own stamp, one file, once ran an edited callee with the
previous one compiled in, unnoticed; ``tests/test_numba_cache.py`` holds the new stamp).

Compile time (issue 29): a fresh install compiles these kernels once. They are kept small and flat for that:
:func:`l1_direction`, :func:`_feature_sign` and :func:`_anderson_sweeps` are plain Python calling one kernel
per stage (a kernel calling kernels made numba optimize the whole tree again at each level), the scratch
arrays come from an :class:`L1Workspace` made once per path (no allocation inside a kernel: each of
``np.empty``/``np.zeros``/``np.ones`` compiled its own implementation), and the kernels use plain loops,
never numba's array expressions, ``argsort`` or ``np.linalg`` (each brings seconds of compile: shape checks
with formatted error messages, a generic sort, LAPACK bindings). The arithmetic is unchanged, so the path is
the same to the last bit (``tests/test_subproblem_driver.py`` runs the replaced kernels as plain Python
against the driver).
"""

from __future__ import annotations

import math

import numpy as np
from ..numba_cache import njit

# kernels of the path solver (htc_core.calibration.pathsolver): nothing here is called by a user
__all__: list[str] = []


@njit(cache=True)
def _l1_setup(H, alpha):
    """(H transposed and contiguous, its diagonal, the thresholds ``alpha / H[j, j]``) for :func:`_cd_sweep`."""
    d = H.shape[0]
    Ht = np.ascontiguousarray(H.T)
    diag = np.empty(d)
    thresholds = np.empty(d)
    for j in range(d):
        diag[j] = Ht[j, j]
        thresholds[j] = alpha / diag[j] if diag[j] > 1e-10 else 0.0
    return Ht, diag, thresholds


@njit(cache=True)
def _cd_sweep(Ht, diag, thresholds, g, w, step, Hd):
    """One cyclic coordinate-descent sweep on the L1 subproblem from ``step`` (and ``Hd`` = H step), both
    updated in place; returns the largest coordinate move times its curvature.

    The update of ``Hd`` after a coordinate change reads column ``j`` of ``H``; it reads it as a contiguous
    row of a transposed copy (the same numbers in the same order, so the same result to the last bit): the
    loop then runs on consecutive memory and vectorizes, 3-4x faster than the strided column read at ~45
    columns. The thresholds ``alpha / H[j, j]`` are the same in every sweep and computed once (the same
    division, so the same bits)."""
    d = w.shape[0]
    biggest = 0.0
    for j in range(d):
        a = diag[j]
        if a <= 1e-10:
            continue
        c = g[j] + Hd[j] - a * step[j]
        u = w[j] - c / a
        thr = thresholds[j]
        if u > thr:
            u -= thr
        elif u < -thr:
            u += thr
        else:
            u = 0.0
        change = (u - w[j]) - step[j]
        if change != 0.0:
            step[j] += change
            col = Ht[j]
            for m in range(d):
                Hd[m] += change * col[m]
            if abs(change) * a > biggest:
                biggest = abs(change) * a
    return biggest


@njit(cache=True)
def l1_coordinate_step(H, g, w, alpha, inner_tol, max_sweeps):
    """Newton direction of the L1 subproblem by plain cyclic coordinate descent (the reference
    :func:`l1_direction` accelerates)."""
    d = w.shape[0]
    Ht, diag, thresholds = _l1_setup(H, alpha)
    step = np.zeros(d)
    Hd = np.zeros(d)
    for sweep in range(max_sweeps):
        if _cd_sweep(Ht, diag, thresholds, g, w, step, Hd) <= inner_tol:
            break
    return step


@njit(cache=True)
def _model(H, g, w, alpha, step):
    """The L1 subproblem's objective ``g's + s'Hs / 2 + alpha |w + s|_1`` at ``s = step`` (plain loops: they
    compile faster than the array expressions)."""
    d = w.shape[0]
    tot = 0.0
    for i in range(d):
        hs = 0.0
        for j in range(d):
            hs += H[i, j] * step[j]
        tot += g[i] * step[i] + 0.5 * step[i] * hs + alpha * abs(w[i] + step[i])
    return tot


@njit(cache=True)
def _cholesky_block(H, idx, k, L, floor):
    """Cholesky factor of ``H[idx, idx]`` (the first ``k`` entries of ``idx``) into ``L``; returns ``k``, or
    the position of the first pivot at or under ``floor`` times its diagonal entry (with ``floor = 1e-12``:
    that column is, to rounding, a linear combination of the ones before it; the HTC features hold such exact
    dependencies)."""
    for a in range(k):
        ia = idx[a]
        for b in range(a + 1):
            acc = H[ia, idx[b]]
            for m in range(b):
                acc -= L[a, m] * L[b, m]
            if a == b:
                if acc <= floor * H[ia, ia]:
                    return a
                L[a, a] = np.sqrt(acc)
            else:
                L[a, b] = acc / L[b, b]
    return k


@njit(cache=True)
def _cholesky_solve(L, k, rhs, out):
    """``L L' x = rhs`` for the first ``k`` rows, into ``out``."""
    for a in range(k):
        acc = rhs[a]
        for m in range(a):
            acc -= L[a, m] * out[m]
        out[a] = acc / L[a, a]
    for a in range(k - 1, -1, -1):
        acc = out[a]
        for m in range(a + 1, k):
            acc -= L[m, a] * out[m]
        out[a] = acc / L[a, a]


@njit(cache=True)
def _mul(M, v, out):
    """``out = M v`` (plain loops)."""
    for i in range(v.shape[0]):
        acc = 0.0
        for j in range(v.shape[0]):
            acc += M[i, j] * v[j]
        out[i] = acc


@njit(cache=True)
def _gram(hist, depth, G):
    """``G = U U'`` of the differences ``U`` of the iterates ``hist`` (``depth`` x ``depth``, every entry written)
    plus a 1e-10 relative ridge on the diagonal (:func:`_anderson_weights`)."""
    d = hist.shape[1]
    trace = 0.0
    for a in range(depth):
        for b in range(a + 1):
            acc = 0.0
            for m in range(d):
                acc += (hist[a + 1, m] - hist[a, m]) * (hist[b + 1, m] - hist[b, m])
            G[a, b] = acc
            G[b, a] = acc
        trace += G[a, a]
    for a in range(depth):
        G[a, a] += 1e-10 * max(trace, 1e-300)


def _anderson_weights(hist, depth, work):
    """Weights ``c`` (summing to one) of the iterates ``hist[1:]`` that minimize ``|sum_i c_i (hist[i+1] -
    hist[i])|``: ``G c = 1`` with ``G = U U'`` (:func:`_gram`) by the Cholesky kernels, then normalized (the
    sum in order, as numba's ``sum``). None when the system is degenerate. ``work``: (G, L, the indices
    ``0..depth-1``, ones, c), made once per path (:class:`L1Workspace`)."""
    G, L, idx, ones, c = work
    _gram(hist, depth, G)
    if _cholesky_block(G, idx, depth, L, 0.0) < depth:
        return None
    _cholesky_solve(L, depth, ones, c)
    tot = 0.0
    for x in c.tolist():
        tot += x
    if not math.isfinite(tot) or abs(tot) < 1e-300:
        return None
    return c / tot


@njit(cache=True)
def _activate(H, g, Hw, v, theta, alpha):
    """Give the inactive coordinate that most violates ``|q_j| <= alpha`` (``q = g + H (v - w)``, the smooth
    part's gradient; ``Hw = H w``) the sign that lowers the model; False when none violates it."""
    d = v.shape[0]
    worst, pick, sign = 0.0, -1, 0.0
    for i in range(d):
        if theta[i] != 0.0 or H[i, i] <= 1e-10:
            continue
        q = g[i] - Hw[i]
        for j in range(d):
            q += H[i, j] * v[j]
        if abs(q) - alpha > worst:
            worst, pick, sign = abs(q) - alpha, i, (-1.0 if q > 0 else 1.0)
    if pick < 0:
        return False
    theta[pick] = sign
    return True


@njit(cache=True)
def _solve_on_signs(H, g, Hw, alpha, theta, idx, L, rhs, sol, vnew):
    """``vnew``: the model's minimizer with the signs ``theta`` held (``H_AA v_A = (Hw - g - alpha theta)_A``
    on the active set A, 0 elsewhere). Returns (-1 or the position in A of a column that depends on the
    ones before it, the signs of vnew agree with theta)."""
    k = np.int64(0)    # not the literal 0: numba compiled the callees for Literal[int](0) as well
    for j in range(theta.shape[0]):
        if theta[j] != 0.0:
            idx[k] = j
            rhs[k] = Hw[j] - g[j] - alpha * theta[j]
            k += 1
    a = _cholesky_block(H, idx, k, L, 1e-12)
    if a < k:
        return a, False
    _cholesky_solve(L, k, rhs, sol)
    vnew[:] = 0.0
    consistent = True
    for a in range(k):
        vnew[idx[a]] = sol[a]
        if sol[a] * theta[idx[a]] <= 0.0:
            consistent = False
    return -1, consistent


@njit(cache=True)
def _null_move(H, v, a, idx, L, rhs, sol, u, t, nz, order, out):
    """Where column ``idx[a]`` depends on the active columns before it, ``u`` (``u[idx[a]] = 1``, minus the
    combination on the others) has ``H u = 0``: the model's smooth part is flat along ``v + t u`` and only
    ``|v + t u|_1`` changes. ``out``: its minimizer, a weighted median of the breakpoints ``-v_i / u_i``
    (weights ``|u_i|``), with that breakpoint's entry set to exactly 0. ``u``, ``t`` (float) and ``nz``,
    ``order`` (int64) are scratch space of the length of ``v``.

    Plain loops here and in the other kernels of this module, no array expressions: numba compiles a shape
    check for each, whose error message alone brings in numba's string formatting (seconds in a fresh
    install, issue 29)."""
    d = v.shape[0]
    for b in range(a):
        rhs[b] = H[idx[b], idx[a]]
    _cholesky_solve(L, a, rhs, sol)
    for i in range(d):
        u[i] = 0.0
    u[idx[a]] = 1.0
    for b in range(a):
        u[idx[b]] = -sol[b]
    k = np.int64(0)    # not the literal 0 (see _solve_on_signs)
    for i in range(d):
        if u[i] != 0.0:
            nz[k] = i
            t[k] = -v[i] / u[i]
            k += 1
    # order = argsort(t[:k]), a stable insertion sort with NaN last (numpy's order): k is at most the number of
    # columns (~45); numba's np.argsort runs the same insertion sort up to 15 entries, and cost ~1 s to compile
    for i in range(k):
        j = i
        while j > 0 and (t[i] < t[order[j - 1]] or (np.isnan(t[order[j - 1]]) and not np.isnan(t[i]))):
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    total = 0.0
    for m in range(k):
        total += abs(u[nz[order[m]]])
    half = 0.5 * total
    acc, m = 0.0, 0
    for m in range(k):
        acc += abs(u[nz[order[m]]])
        if acc >= half:
            break
    tm = t[order[m]]
    for i in range(d):
        out[i] = v[i] + tm * u[i]
    out[nz[order[m]]] = 0.0


@njit(cache=True)
def _best_on_segment(H, g, w, alpha, v, vnew, best, cand, diff, theta, f_cur):
    """The lowest model value among ``vnew`` and the points of the segment ``v -> vnew`` where an entry of
    ``v`` crosses zero (that entry set to exactly 0); the point is left in ``best`` (``cand``, ``diff``:
    scratch space). Returns (that value, accepted): accepted when it is not above ``f_cur`` (beyond rounding)
    and ``best`` differs from ``v``; then ``v = best`` and ``theta = sign(v)``."""
    d = v.shape[0]
    for m in range(d):
        best[m] = vnew[m]
        diff[m] = vnew[m] - w[m]
    f_best = _model(H, g, w, alpha, diff)
    for j in range(d):
        if v[j] == 0.0 or v[j] * vnew[j] >= 0.0:
            continue
        t = v[j] / (v[j] - vnew[j])
        for m in range(d):
            cand[m] = v[m] + t * (vnew[m] - v[m])
        cand[j] = 0.0
        for m in range(d):
            diff[m] = cand[m] - w[m]
        f = _model(H, g, w, alpha, diff)
        if f < f_best:
            f_best = f
            for m in range(d):
                best[m] = cand[m]
    if not f_best <= f_cur + 1e-10 * max(abs(f_cur), 1.0):
        return f_best, False
    same = True
    for j in range(d):
        if best[j] != v[j]:
            same = False
            break
    if same:                                     # ties: a crossing at t ~ 0
        return f_best, False
    for j in range(d):
        x = best[j]
        v[j] = x
        theta[j] = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else x))   # np.sign
    return f_best, True


class L1Workspace:
    """The scratch arrays of :func:`l1_direction` for ``d`` columns, made once per path (a fit calls it ~1,000
    times; making them per call cost more than the kernels' work)."""

    def __init__(self, d: int, depth: int = 5):
        self.d, self.depth = d, depth
        (self.Hw, self.v, self.theta, self.vnew, self.best, self.cand, self.diff, self.u, self.t, self.Hd,
         self.rhs, self.sol, self.diag, self.thresholds) = np.empty((14, d))
        self.zero = np.zeros(d)
        self.idx, self.nz, self.order = np.empty((3, d), dtype=np.int64)
        self.L, self.Ht = np.zeros((d, d)), np.empty((d, d))
        self.hist = np.empty((depth + 1, d))
        self.anderson = (np.empty((depth, depth)), np.empty((depth, depth)), np.arange(depth, dtype=np.int64),
                         np.ones(depth), np.empty(depth))


@njit(cache=True)
def _fs_start(H, g, w, alpha, zero, Hw, v, theta):
    """:func:`_feature_sign`'s start: ``Hw = H w``, ``v = w``, ``theta = sign(w)`` (as ``np.sign``); returns
    (the model at ``step = 0``, whether ``w`` is all zeros)."""
    _mul(H, w, Hw)
    settled = True
    for j in range(w.shape[0]):
        x = w[j]
        v[j] = x
        theta[j] = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else x))
        if theta[j] != 0.0:
            settled = False
    return _model(H, g, w, alpha, zero), settled


def _feature_sign(H, g, w, alpha, max_iter, ws=None):
    """A start for the subproblem: feature-sign search (Lee, Battle, Raina and Ng, "Efficient sparse coding
    algorithms", NIPS 2006) in ``v = w + step`` from ``v = w``. With the signs of v held, the model is a
    quadratic solved exactly on the nonzero coordinates; a sign that would flip is stopped at zero when
    that is lower; when the signs hold, the inactive coordinate that most violates optimality joins. An
    active column that depends on the others (a singular block of H) is handled by :func:`_null_move`,
    which zeroes one column of the dependency. Each accepted move lowers the model; it stops at the exact
    minimizer, where a move would raise it (beyond rounding) or change nothing, or after ``max_iter`` moves.
    Returns the step (zeros when nothing lowered the model). ``ws``: an :class:`L1Workspace` (made here if None).

    Plain Python calling one kernel per stage (one or two moves per Newton iteration mostly): as one kernel it
    compiled its callees into itself again, ~1 s CPU of a fresh install's compile (issue 29). The arithmetic
    is the kernels', so the same bits."""
    ws = ws if ws is not None and ws.d == w.shape[0] else L1Workspace(w.shape[0])
    Hw, v, theta, best = ws.Hw, ws.v, ws.theta, ws.best
    f_cur, settled = _fs_start(H, g, w, alpha, ws.zero, Hw, v, theta)
    for _ in range(max_iter):
        if settled and not _activate(H, g, Hw, v, theta, alpha):
            break
        dependent, settled = _solve_on_signs(H, g, Hw, alpha, theta, ws.idx, ws.L, ws.rhs, ws.sol, ws.vnew)
        if dependent >= 0:
            _null_move(H, v, dependent, ws.idx, ws.L, ws.rhs, ws.sol, ws.u, ws.t, ws.nz, ws.order, best)
            f = _model(H, g, w, alpha, np.subtract(best, w, out=ws.diff))
            accepted = f <= f_cur + 1e-10 * max(abs(f_cur), 1.0) and not np.array_equal(best, v)
            if accepted:                      # as in _best_on_segment (a rare move: numpy, the same bits)
                v[:] = best
                np.sign(v, out=theta)
        else:
            f, accepted = _best_on_segment(H, g, w, alpha, v, ws.vnew, best, ws.cand, ws.diff, theta, f_cur)
        if not accepted:
            break
        f_cur = min(f, f_cur)
    return v - w


def l1_direction(H, g, w, alpha, inner_tol, max_sweeps, depth=5, ws=None):
    """Newton direction of the L1 subproblem: coordinate descent with Anderson extrapolation (Bertrand and
    Massias, "Anderson acceleration of coordinate descent", AISTATS 2021), started from
    :func:`_feature_sign`'s step (mostly the exact minimizer already: one sweep confirms it). Every ``depth`` sweeps the last
    ``depth + 1`` iterates are combined (:func:`_anderson_weights`) and the combination replaces the iterate
    when it lowers the subproblem's objective; the sweeps then go on from it, and they alone decide
    convergence (same fixed point, same stopping rule as plain coordinate descent). With ~45 correlated
    columns near alpha = 0 plain coordinate descent stalls at ``max_sweeps`` in every Newton iteration.
    ``ws``: an :class:`L1Workspace` of this size and depth, reused across calls (the path makes one).

    Plain Python calling a few kernels per Newton iteration (a few microseconds): kernels that called the
    others made numba optimize them again inside each caller, seconds more compile in a fresh install."""
    if ws is None or ws.d != w.shape[0] or ws.depth != depth:
        ws = L1Workspace(w.shape[0], depth)
    _l1_prepare(H, alpha, ws.Ht, ws.diag, ws.thresholds)
    step = _feature_sign(H, g, w, alpha, 4 * w.shape[0], ws)
    _anderson_sweeps(H, g, w, alpha, inner_tol, max_sweeps, step, ws)
    return step


@njit(cache=True)
def _l1_prepare(H, alpha, Ht, diag, thresholds):
    """What :func:`_l1_setup` computes, into the workspace's arrays (the same arithmetic)."""
    d = H.shape[0]
    for i in range(d):
        for j in range(d):
            Ht[i, j] = H[j, i]
    for j in range(d):
        diag[j] = Ht[j, j]
        thresholds[j] = alpha / diag[j] if diag[j] > 1e-10 else 0.0


@njit(cache=True)
def _sweeps(H, Ht, diag, thresholds, g, w, step, Hd, inner_tol, hist, n, start):
    """Up to ``n`` sweeps (:func:`_cd_sweep`) from ``step`` (``start``: first ``Hd = H step``); the iterate after
    each sweep that did not converge into ``hist[i]``. Returns (the sweeps run, converged)."""
    if start:
        _mul(H, step, Hd)
    for i in range(n):
        if _cd_sweep(Ht, diag, thresholds, g, w, step, Hd) <= inner_tol:
            return i + 1, True
        for m in range(step.shape[0]):
            hist[i, m] = step[m]
    return n, False


def _anderson_sweeps(H, g, w, alpha, inner_tol, max_sweeps, step, ws):
    """The sweeps of :func:`l1_direction` from ``step`` (updated in place): ``depth + 1`` sweeps in a kernel,
    then the extrapolation here (once per ``depth + 1`` sweeps; most subproblems converge in the first sweep).
    One kernel for the whole loop compiled the Anderson solve into itself again (~0.5 s CPU of a fresh
    install's compile, issue 29); the arithmetic is the same, so the same bits."""
    depth, Hd, hist = ws.depth, ws.Hd, ws.hist
    done = 0
    while done < max_sweeps:
        n, converged = _sweeps(H, ws.Ht, ws.diag, ws.thresholds, g, w, step, Hd, inner_tol, hist,
                               min(depth + 1, max_sweeps - done), done == 0)
        done += n
        if converged or n < depth + 1:
            break
        c = _anderson_weights(hist, depth, ws.anderson)
        if c is None:
            continue
        cand = np.zeros(ws.d)
        for a in range(depth):                  # the kernel's loop order: 0 + c_0 h_1 + c_1 h_2 + ...
            cand += c[a] * hist[a + 1]
        if _model(H, g, w, alpha, cand) < _model(H, g, w, alpha, step):
            step[:] = cand
            _mul(H, step, Hd)
