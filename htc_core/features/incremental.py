"""The 48 features of a growing trajectory, updated one step at a time (used by :class:`htc_core.monitor.Monitor`).

Every feature of :func:`htc_core.features.extract` is a function of per-step summaries (n_t, mu_t, sigma_t,
H_t, kappa_t, rho_t, skew_t, x_t, y_t) and of the within-step token differences; the state below keeps
what those functions need so that adding a step costs O(tokens of the step), not O(trajectory):

- the summaries of the first and of the last step;
- for the step series averaged or spread over steps (H, kappa, rho, skew, n): count, mean and the sum of
  squared deviations, updated with Welford's method (the naive ``E[x^2] - E[x]^2`` loses up to half the
  digits of a standard deviation; Welford agrees with the batch's two-pass formula to rounding);
- for the cross-step gradients of x and y: the previous value, Welford's mean/M2 of the differences, their
  max, min, first and last difference (the trend is last - first, defined from 3 steps on);
- for the pooled within-step token differences: count, mean, M2 (merged per step with Chan et al.'s
  parallel formula), max and min.

The step summaries are computed with the batch's formulas in the batch's order of operations (see
``steps.py``), so the features agree with ``extract`` on every prefix to rounding (tested to 1e-9 on real
runs and edge cases). Input checks run before the state changes: an invalid step leaves the state as it was.
Compiled with numba (a core dependency, already used by the path solver); the compiled code is cached on disk.
"""

from __future__ import annotations

import numpy as np
from ..numba_cache import njit

from .steps import EPS

# the order in which :func:`features` writes the 48 values (checked against FEATURE_NAMES by the tests
# and at import by :mod:`htc_core.monitor`)
FEATURE_ORDER = (
    "top1_gradient_mean", "top1_gradient_std", "top1_gradient_max", "top1_gradient_min", "top1_gradient_trend",
    "topk_gradient_mean", "topk_gradient_std", "topk_gradient_max", "topk_gradient_min", "topk_gradient_trend",
    "token_gradient_mean", "token_gradient_std", "token_gradient_max", "token_gradient_min",
    "step_progression_entropy", "step_progression_concentration", "step_progression_spread",
    "top1_confidence_change", "topk_confidence_change",
    "first_attention_entropy", "first_attention_concentration", "first_attention_spread",
    "first_confidence_volatility", "first_confidence_skewness", "first_top1_avg", "first_topk_avg",
    "last_attention_entropy", "last_attention_concentration", "last_attention_spread",
    "last_confidence_volatility", "last_confidence_skewness", "last_top1_avg", "last_topk_avg",
    "attention_entropy_mean", "attention_entropy_std", "attention_concentration_mean",
    "attention_concentration_std", "attention_spread_mean", "attention_spread_std",
    "token_volatility_mean", "token_volatility_std", "token_skewness_mean", "token_skewness_std",
    "normalized_step_count", "first_token_count", "last_token_count", "avg_tokens_per_step", "std_tokens_per_step",
)

# ---- state layout (one float64 vector)
# per-step summary: n, mu, sigma, H, kappa, rho, skew, x (top-1), y (top-k)
N, MU, SIGMA, H, KAPPA, RHO, SKEW, X, Y = range(9)
S = 0                 # steps so far
FIRST = 1             # summary of the first step (9 values)
LAST = 10             # summary of the last step (9 values)
WEL = 19              # Welford (mean, M2) of H, kappa, rho, skew, n over steps: 10 values
GX = 29               # top-1 gradients: mean, M2, max, min, first, last
GY = 35               # top-k gradients: the same
TG = 41               # token gradients: count, mean, M2, max, min
STATE_SIZE = 46

#: the per-step series summarized by Welford, in WEL order (indices into a step summary)
_WEL_SERIES = np.array([H, KAPPA, RHO, SKEW, N], dtype=np.int64)

POSITIVE_TOLERANCE = 1e-6   # as the readers: a positive logprob up to this is a rounding error, clipped to 0
NEG_INF_SENTINEL = -9999.0  # vLLM's "no alternative"; -inf too

# error codes of _check (0 = fine)
ERR_NOT_FINITE, ERR_SENTINEL, ERR_POSITIVE, ERR_TOP_POSINF, ERR_TOP_POSITIVE = 1, 2, 3, 4, 5


def new_state() -> np.ndarray:
    """The state of a trajectory with no step yet.

    Returns
    -------
    ndarray of float64 of shape (STATE_SIZE,)
        Zeros; :func:`add_step` folds steps into it in place.

    Examples
    --------
    >>> from htc_core.features import incremental as inc
    >>> inc.new_state().shape == (inc.STATE_SIZE,)
    True
    """
    return np.zeros(STATE_SIZE)


@njit(cache=True)
def _check(lp, top):
    """(code, i, j) of the first invalid value, (0, -1, -1) when the step is valid."""
    for i in range(lp.shape[0]):
        v = lp[i]
        if not np.isfinite(v):
            return ERR_NOT_FINITE, i, -1
        if v <= NEG_INF_SENTINEL:
            return ERR_SENTINEL, i, -1
        if v > POSITIVE_TOLERANCE:
            return ERR_POSITIVE, i, -1
    for i in range(top.shape[0]):
        for j in range(top.shape[1]):
            v = top[i, j]
            if v == np.inf:
                return ERR_TOP_POSINF, i, j
            if v > POSITIVE_TOLERANCE:
                return ERR_TOP_POSITIVE, i, j
    return 0, -1, -1


@njit(cache=True)
def _token_top(lp_i, r_i, row, k, deepconf, buf):
    """(Top1Conf, TopkConf) of one token, as ``htc_core.confidence`` computes them: the alternatives are
    the row's valid values (NaN, -inf and the -9999 sentinel mean none; tiny positives count as 0),
    Top1Conf from the largest, TopkConf from the min(k, n_valid) largest; without alternatives both fall
    back to r (TopkConf of ``deepconf``: to -logprob)."""
    m = 0
    for j in range(row.shape[0]):
        v = row[j]
        if v == v and v > NEG_INF_SENTINEL:
            if v > 0.0:
                v = 0.0
            # insertion into the descending buffer
            p = m
            while p > 0 and buf[p - 1] < v:
                buf[p] = buf[p - 1]
                p -= 1
            buf[p] = v
            m += 1
    top1 = np.exp(buf[0]) if m > 0 else r_i
    kk = min(k, m)
    if kk > 0:
        s = 0.0
        for j in range(kk):
            s += (-buf[j]) if deepconf else np.exp(buf[j])
        topk = s / kk
    else:
        topk = -lp_i if deepconf else r_i
    return top1, topk


@njit(cache=True)
def _step_summary(lp, top, k, deepconf, out, buf):
    """The step's n, mu, sigma, H, kappa, rho, skew, x, y (the formulas of ``steps.step_stats``)."""
    n = lp.shape[0]
    r = np.empty(n)
    total = 0.0
    rmax = -np.inf
    sx = 0.0
    sy = 0.0
    has_top = top.shape[1] > 0
    for i in range(n):
        v = lp[i]
        if v > 0.0:
            v = 0.0
        ri = np.exp(v)
        r[i] = ri
        total += ri
        if ri > rmax:
            rmax = ri
        if has_top:
            t1, tk = _token_top(v, ri, top[i], k, deepconf, buf)
        else:
            t1, tk = ri, (-v if deepconf else ri)
        sx += t1
        sy += tk
    mu = total / n
    ss = 0.0
    for i in range(n):
        d = r[i] - mu
        ss += d * d
    sigma = np.sqrt(ss / n)
    denom = total + EPS
    ent = 0.0
    for i in range(n):
        pi = r[i] / denom
        ent += pi * np.log(pi + EPS)
    inv = 1.0 / (sigma + EPS)
    sk = 0.0
    if n >= 2:
        for i in range(n):
            d = (r[i] - mu) * inv
            sk += d * d * d
        sk = sk / n
    out[N] = n
    out[MU] = mu
    out[SIGMA] = sigma
    out[H] = -ent
    out[KAPPA] = rmax / (mu + EPS)
    out[RHO] = sigma / (mu + EPS)
    out[SKEW] = sk
    out[X] = sx / n
    out[Y] = sy / n
    return r


@njit(cache=True)
def _welford(state, at, count, value):
    d = value - state[at]
    state[at] += d / count
    state[at + 1] += d * (value - state[at])


@njit(cache=True)
def _gradient(state, at, n_diffs, d):
    """Add the cross-step difference d (the n_diffs-th) to the gradient block at ``at``."""
    if n_diffs == 1:
        state[at] = d
        state[at + 1] = 0.0
        state[at + 2] = d
        state[at + 3] = d
        state[at + 4] = d
    else:
        _welford(state, at, n_diffs, d)
        state[at + 2] = max(state[at + 2], d)
        state[at + 3] = min(state[at + 3], d)
    state[at + 5] = d


@njit(cache=True)
def _token_diffs(state, r):
    """Merge the step's within-step token differences into the pooled block (Chan et al.)."""
    m = r.shape[0] - 1
    if m < 1:
        return
    s = 0.0
    dmax = -np.inf
    dmin = np.inf
    for i in range(m):
        d = r[i + 1] - r[i]
        s += d
        dmax = max(dmax, d)
        dmin = min(dmin, d)
    mean_b = s / m
    m2_b = 0.0
    for i in range(m):
        e = (r[i + 1] - r[i]) - mean_b
        m2_b += e * e
    na = state[TG]
    if na == 0:
        state[TG + 1] = mean_b
        state[TG + 2] = m2_b
        state[TG + 3] = dmax
        state[TG + 4] = dmin
    else:
        nt = na + m
        delta = mean_b - state[TG + 1]
        state[TG + 1] += delta * m / nt
        state[TG + 2] += m2_b + delta * delta * na * m / nt
        state[TG + 3] = max(state[TG + 3], dmax)
        state[TG + 4] = min(state[TG + 4], dmin)
    state[TG] = na + m


@njit(cache=True)
def add_step(state, lp, top, k, deepconf, summary, buf):
    """Validate one step and fold it into ``state`` (compiled with numba).

    Parameters
    ----------
    state : ndarray of float64 of shape (STATE_SIZE,)
        The trajectory's state (:func:`new_state`), updated in place.
    lp : ndarray of float64 of shape (n_tokens,)
        The step's chosen-token log-probabilities.
    top : ndarray of float64 of shape (n_tokens, w)
        Their alternatives (NaN, -inf and -9999 mean none); shape (0, 0) when there are none.
    k : int
        The alternatives averaged into TopkConf.
    deepconf : bool
        The ``deepconf`` profile's TopkConf instead of the ``paper`` one.
    summary : ndarray of float64 of shape (9,)
        Receives the step summary (n, mu, sigma, H, kappa, rho, skew, x, y).
    buf : ndarray of float64 of shape (>= w,)
        Scratch space.

    Returns
    -------
    code : int
        0 when the step was added; else the first invalid value's error code (``ERR_*``), and the state is
        unchanged.
    i : int
        The token of the invalid value (-1 when valid).
    j : int
        Its alternative's column (-1 for a chosen-token value).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.features import incremental as inc
    >>> state = inc.new_state()
    >>> summary, buf = np.zeros(9), np.zeros(5)
    >>> inc.add_step(state, np.array([-0.1, -0.2]), np.zeros((0, 0)), 5, False, summary, buf)
    (0, -1, -1)
    >>> float(summary[0])                            # the step's tokens
    2.0
    >>> inc.add_step(state, np.array([-0.1, 0.5]), np.zeros((0, 0)), 5, False, summary, buf)
    (3, 1, -1)
    """
    code, i, j = _check(lp, top)
    if code != 0:
        return code, i, j
    r = _step_summary(lp, top, k, deepconf, summary, buf)
    s = state[S] + 1.0
    state[S] = s
    if s == 1.0:
        for q in range(9):
            state[FIRST + q] = summary[q]
    else:
        _gradient(state, GX, s - 1.0, summary[X] - state[LAST + X])
        _gradient(state, GY, s - 1.0, summary[Y] - state[LAST + Y])
    for q in range(9):
        state[LAST + q] = summary[q]
    for q in range(_WEL_SERIES.shape[0]):
        _welford(state, WEL + 2 * q, s, summary[_WEL_SERIES[q]])
    _token_diffs(state, r)
    return 0, -1, -1


@njit(cache=True)
def _std(m2, count):
    return np.sqrt(m2 / count) if count > 0 else 0.0


@njit(cache=True)
def _grad_block(state, at, n_diffs, out, o):
    if n_diffs == 0:
        for q in range(5):
            out[o + q] = 0.0
        return
    out[o] = state[at]
    out[o + 1] = _std(state[at + 1], n_diffs)
    out[o + 2] = state[at + 2]
    out[o + 3] = state[at + 3]
    out[o + 4] = state[at + 5] - state[at + 4] if n_diffs >= 2 else 0.0


@njit(cache=True)
def features(state, out):
    """The 48 features of the trajectory so far, in FEATURE_ORDER (the registry's order; compiled with numba).

    Equal, to rounding, to :func:`htc_core.features.extract` on the steps added so far.

    Parameters
    ----------
    state : ndarray of float64 of shape (STATE_SIZE,)
        The trajectory's state.
    out : ndarray of float64 of shape (48,)
        Receives the features.

    Returns
    -------
    None

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.features import incremental as inc
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> state, summary, buf = inc.new_state(), np.zeros(9), np.zeros(5)
    >>> for step in ts.trajectory(0)["steps"]:
    ...     code = inc.add_step(state, np.array(step["logprobs"]), np.array(step["top_logprobs"]), 5, False,
    ...                         summary, buf)
    >>> out = np.zeros(48)
    >>> inc.features(state, out)
    >>> bool(np.allclose(out, htc.extract(ts).values[0], rtol=1e-9, atol=1e-12))
    True
    """
    s = state[S]
    _grad_block(state, GX, s - 1.0, out, 0)
    _grad_block(state, GY, s - 1.0, out, 5)
    nt = state[TG]
    if nt > 0:
        out[10] = state[TG + 1]
        out[11] = _std(state[TG + 2], nt)
        out[12] = state[TG + 3]
        out[13] = state[TG + 4]
    else:
        for q in range(10, 14):
            out[q] = 0.0
    for q, w in ((14, 0), (15, 1), (16, 2)):   # entropy, concentration, spread progression (CV)
        at = WEL + 2 * w
        out[q] = _std(state[at + 1], s) / (state[at] + EPS)
    out[17] = state[LAST + X] - state[FIRST + X]
    out[18] = state[LAST + Y] - state[FIRST + Y]
    for base, o in ((FIRST, 19), (LAST, 26)):
        out[o] = state[base + H]
        out[o + 1] = state[base + KAPPA]
        out[o + 2] = state[base + RHO]
        out[o + 3] = state[base + RHO]
        out[o + 4] = state[base + SKEW]
        out[o + 5] = state[base + X]
        out[o + 6] = state[base + Y]
    for w, o in ((0, 33), (1, 35), (2, 37), (2, 39), (3, 41)):   # H, kappa, rho, rho (volatility), skew
        at = WEL + 2 * w
        out[o] = state[at]
        out[o + 1] = _std(state[at + 1], s)
    out[43] = s / 10.0
    out[44] = state[FIRST + N]
    out[45] = state[LAST + N]
    at = WEL + 2 * 4
    out[46] = state[at]
    out[47] = _std(state[at + 1], s)


@njit(cache=True)
def add_step_and_score(state, lp, top, k, deepconf, summary, buf, feats, w, b):
    """:func:`add_step`, then the features and the logit ``feats . w + b`` (compiled with numba).

    Parameters
    ----------
    state, lp, top, k, deepconf, summary, buf
        As :func:`add_step`.
    feats : ndarray of float64 of shape (48,)
        Receives the features.
    w : ndarray of float64 of shape (48,)
        The linear model's weights on the raw features.
    b : float
        Its intercept.

    Returns
    -------
    code, i, j : int
        As :func:`add_step` (the features are not computed unless code is 0).
    logit : float
        ``feats . w + b``; 0.0 when the step was invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.features import incremental as inc
    >>> state = inc.new_state()
    >>> summary, buf = np.zeros(9), np.zeros(5)
    >>> feats = np.zeros(48)
    >>> code, i, j, z = inc.add_step_and_score(state, np.array([-0.1, -0.2]), np.zeros((0, 0)), 5, False,
    ...                                        summary, buf, feats, np.full(48, 0.1), -1.0)
    >>> code, round(z, 4), feats[43:46].tolist()      # step count / 10, first and last step tokens
    (0, 0.4814, [0.1, 2.0, 2.0])
    """
    code, i, j = add_step(state, lp, top, k, deepconf, summary, buf)
    if code != 0:
        return code, i, j, 0.0
    features(state, feats)
    z = b
    for q in range(feats.shape[0]):
        z += feats[q] * w[q]
    return 0, -1, -1, z


__all__ = ["FEATURE_ORDER", "STATE_SIZE", "new_state", "add_step", "features", "add_step_and_score"]
