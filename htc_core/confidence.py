"""Token-confidence profiles: how logprobs become r, Top1Conf and TopkConf.

The paper never defines Top1Conf/TopkConf nor which value feeds the step
statistics; DESIGN.md section 3 fixes the default profile ``paper``. Every
profile is recorded in saved models and shown on the dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["TokenConfidence", "Profile", "PROFILES", "get_profile", "token_confidence"]

_CHUNK = 1 << 20  # tokens per chunk when touching the [n, k] alternatives (bounds temporary memory)


@dataclass(frozen=True)
class TokenConfidence:
    """The per-token confidences a profile derives from the log-probabilities (made by :func:`token_confidence`).

    Parameters
    ----------
    r : ndarray of shape (n_tokens,)
        The value that feeds entropy, concentration, spread, skewness and the token gradients.
    top1 : ndarray of shape (n_tokens,)
        Top1Conf per token.
    topk : ndarray of shape (n_tokens,)
        TopkConf per token.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.confidence import token_confidence
    >>> tc = token_confidence(np.log([0.9]), np.log([[0.9, 0.05]]))
    >>> tc.r.round(3).tolist(), tc.top1.round(3).tolist(), tc.topk.round(3).tolist()
    ([0.9], [0.9], [0.475])
    """

    r: np.ndarray
    top1: np.ndarray
    topk: np.ndarray


@dataclass(frozen=True)
class Profile:
    """A token-confidence profile: its name, its definition in words and the function that computes it.

    Parameters
    ----------
    name : str
        The name recorded in model files (``paper``, ``deepconf``, ``chosen``).
    description : str
        The definitions of r, Top1Conf and TopkConf in words.
    compute : callable
        ``compute(logprob, top_logprobs, top_k) -> TokenConfidence``.

    Examples
    --------
    >>> from htc_core.confidence import PROFILES
    >>> sorted(PROFILES)
    ['chosen', 'deepconf', 'paper']
    >>> PROFILES["paper"].description
    'r = exp(chosen logprob); Top1Conf = exp(max alternative logprob); TopkConf = ...'
    """

    name: str
    description: str
    compute: Callable[[np.ndarray, np.ndarray, int], TokenConfidence]


def _row_sum_count(block: np.ndarray, transform) -> tuple[np.ndarray, np.ndarray | None]:
    """Row sums of transform(block) over non-NaN entries, and their counts (None when no row is padded: every
    count is the width).

    Row reductions over a narrow axis are slow in NumPy; a matrix-vector
    product with a ones vector (BLAS) is not. Rows without NaN padding (the
    usual case) take the fast path; only padded rows are summed with masks.
    OpenBLAS sums the last ``n % 4`` rows of a product in another order than the
    others (a last-bit difference, from 4 alternatives on), so the padded rows are
    summed in a matrix of a multiple of 4 rows: a padded row's sum is the same
    whichever rows of the set are padded with it (issue 29: ``htc features``
    computes a chunk piece by piece, ``htc_core.features.pieces``).
    """
    ones = np.ones(block.shape[1])
    s = transform(block) @ ones
    padded = np.isnan(s)
    if not padded.any():
        return s, None
    cnt = np.full(block.shape[0], float(block.shape[1]))
    sub = block[padded]
    valid = ~np.isnan(sub)
    rows = len(sub)
    vals = np.zeros((rows + -rows % 4, block.shape[1]))  # a multiple of 4 rows: see below
    vals[:rows] = transform(np.where(valid, sub, 0.0))
    vals[:rows][~valid] = 0.0
    s[padded] = (vals @ ones)[:rows]
    cnt[padded] = valid.sum(axis=1)
    return s, cnt


def _top1_topk_prob(logprob: np.ndarray, top: np.ndarray, k: int, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(logprob)
    if top.shape[1] == 0 or n == 0:
        return r, r
    top1 = np.empty_like(r)
    topk = np.empty_like(r)
    kk = min(k, top.shape[1])
    for a in range(0, n, _CHUNK):
        b = min(n, a + _CHUNK)
        first = top[a:b, 0]
        has = ~np.isnan(first)
        if has.all():  # every token has alternatives (the usual case): the same values, four passes fewer
            np.exp(first.copy(), out=top1[a:b])   # contiguous, as the where below makes it
        else:
            top1[a:b] = np.where(has, np.exp(np.where(has, first, 0.0)), r[a:b])
        if kk > 0:
            s, cnt = _row_sum_count(top[a:b, :kk], np.exp)
            if cnt is None:  # no padding: every count is kk
                np.divide(s, float(kk), out=topk[a:b])
            else:
                topk[a:b] = np.where(cnt > 0, s / np.maximum(cnt, 1.0), r[a:b])
        else:
            topk[a:b] = r[a:b]
    return top1, topk


def _paper(logprob: np.ndarray, top: np.ndarray, k: int) -> TokenConfidence:
    r = np.exp(logprob)
    top1, topk = _top1_topk_prob(logprob, top, k, r)
    return TokenConfidence(r, top1, topk)


def _deepconf(logprob: np.ndarray, top: np.ndarray, k: int) -> TokenConfidence:
    r = np.exp(logprob)
    top1, _ = _top1_topk_prob(logprob, top, k, r)
    n = len(logprob)
    topk = -logprob
    kk = min(k, top.shape[1])
    if kk > 0:
        topk = topk.copy()
        for a in range(0, n, _CHUNK):
            b = min(n, a + _CHUNK)
            s, cnt = _row_sum_count(top[a:b, :kk], lambda v: v)
            if cnt is None:  # no padding: every count is kk
                topk[a:b] = -s / float(kk)
            else:
                topk[a:b] = np.where(cnt > 0, -s / np.maximum(cnt, 1.0), topk[a:b])
    return TokenConfidence(r, top1, topk)


def _chosen(logprob: np.ndarray, top: np.ndarray, k: int) -> TokenConfidence:
    r = np.exp(logprob)
    return TokenConfidence(r, r, r)


PROFILES: dict[str, Profile] = {
    "paper": Profile(
        "paper",
        "r = exp(chosen logprob); Top1Conf = exp(max alternative logprob); "
        "TopkConf = mean of exp(top-k alternative logprobs); Top1/Topk fall back to r without alternatives.",
        _paper,
    ),
    "deepconf": Profile(
        "deepconf",
        "r and Top1Conf as in 'paper'; TopkConf = DeepConf's token confidence -mean(top-k logprobs) "
        "(>= 0, higher = more peaked), falling back to -chosen logprob without alternatives.",
        _deepconf,
    ),
    "chosen": Profile(
        "chosen",
        "r = Top1Conf = TopkConf = exp(chosen logprob): the alternatives are ignored, so runs recorded with and "
        "without top-k alternatives get the same feature definitions ('paper' on runs without alternatives). "
        "The shipped GAC's model for runs without alternatives uses it.",
        _chosen,
    ),
}


def get_profile(name: str) -> Profile:
    """The profile of a name (``ValueError`` naming the valid ones otherwise).

    Parameters
    ----------
    name : str
        ``paper``, ``deepconf`` or ``chosen``.

    Returns
    -------
    Profile

    Examples
    --------
    >>> from htc_core.confidence import get_profile
    >>> get_profile("chosen").name
    'chosen'
    """
    if name not in PROFILES:
        raise ValueError(f"unknown confidence profile {name!r}; valid profiles: {sorted(PROFILES)}")
    return PROFILES[name]


def token_confidence(logprob: np.ndarray, top_logprobs: np.ndarray, *, profile: str = "paper",
                     top_k: int = 5) -> TokenConfidence:
    """The per-token r, Top1Conf and TopkConf of some tokens under a profile.

    Parameters
    ----------
    logprob : ndarray of shape (n_tokens,)
        The chosen tokens' log-probabilities.
    top_logprobs : ndarray of shape (n_tokens, k)
        Their alternatives' log-probabilities, sorted descending, NaN-padded (k may be 0).
    profile : str, default "paper"
        ``paper``: r = exp(chosen logprob), Top1Conf = exp(best alternative), TopkConf = mean of the top-k
        alternatives' probabilities; ``deepconf``: TopkConf = -mean(top-k logprobs); ``chosen``: all three =
        r (alternatives ignored). Without alternatives Top1/Topk fall back to r (``deepconf``: -logprob).
    top_k : int, default 5
        How many alternatives TopkConf averages (>= 0).

    Returns
    -------
    TokenConfidence

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.confidence import token_confidence
    >>> lp = np.log([0.9, 0.5])
    >>> top = np.log([[0.9, 0.05, 0.02], [0.5, 0.3, np.nan]])
    >>> token_confidence(lp, top, top_k=2).topk.round(3).tolist()
    [0.475, 0.4]
    >>> token_confidence(lp, top, profile="deepconf", top_k=2).topk.round(3).tolist()
    [1.551, 0.949]
    """
    if not isinstance(top_k, (int, np.integer)) or isinstance(top_k, bool) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer, got {top_k!r}")
    return get_profile(profile).compute(np.asarray(logprob, dtype=np.float64),
                                        np.asarray(top_logprobs, dtype=np.float64), int(top_k))
