"""Token-confidence profiles: how logprobs become r, Top1Conf and TopkConf.

The paper never defines Top1Conf/TopkConf nor which value feeds the step
statistics; DESIGN.md section 3 fixes the default profile ``paper``. Every
profile is recorded in saved models and shown on the dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

_CHUNK = 1 << 20  # tokens per chunk when touching the [n, k] alternatives (bounds temporary memory)


@dataclass(frozen=True)
class TokenConfidence:
    r: np.ndarray       # feeds entropy, concentration, spread, skewness, token gradients
    top1: np.ndarray    # Top1Conf per token
    topk: np.ndarray    # TopkConf per token


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    compute: Callable[[np.ndarray, np.ndarray, int], TokenConfidence]


def _top1_topk_prob(logprob: np.ndarray, top: np.ndarray, k: int, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(logprob)
    top1 = r.copy()
    topk = r.copy()
    if top.shape[1] == 0 or n == 0:
        return top1, topk
    kk = min(k, top.shape[1])
    for a in range(0, n, _CHUNK):
        b = min(n, a + _CHUNK)
        first = top[a:b, 0]
        has = ~np.isnan(first)
        top1[a:b] = np.where(has, np.exp(np.where(has, first, 0.0)), r[a:b])
        if kk > 0:
            block = top[a:b, :kk]
            valid = ~np.isnan(block)
            cnt = valid.sum(axis=1)
            s = np.exp(np.where(valid, block, -np.inf)).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                topk[a:b] = np.where(cnt > 0, s / np.maximum(cnt, 1), r[a:b])
    return top1, topk


def _paper(logprob: np.ndarray, top: np.ndarray, k: int) -> TokenConfidence:
    r = np.exp(logprob)
    top1, topk = _top1_topk_prob(logprob, top, k, r)
    return TokenConfidence(r, top1, topk)


def _deepconf(logprob: np.ndarray, top: np.ndarray, k: int) -> TokenConfidence:
    r = np.exp(logprob)
    top1, _ = _top1_topk_prob(logprob, top, k, r)
    n = len(logprob)
    topk = -logprob.copy()
    kk = min(k, top.shape[1])
    if kk > 0:
        for a in range(0, n, _CHUNK):
            b = min(n, a + _CHUNK)
            block = top[a:b, :kk]
            valid = ~np.isnan(block)
            cnt = valid.sum(axis=1)
            s = np.where(valid, block, 0.0).sum(axis=1)
            topk[a:b] = np.where(cnt > 0, -s / np.maximum(cnt, 1), topk[a:b])
    return TokenConfidence(r, top1, topk)


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
}


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"unknown confidence profile {name!r}; valid profiles: {sorted(PROFILES)}")
    return PROFILES[name]


def token_confidence(logprob: np.ndarray, top_logprobs: np.ndarray, *, profile: str = "paper",
                     top_k: int = 5) -> TokenConfidence:
    if not isinstance(top_k, (int, np.integer)) or isinstance(top_k, bool) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer, got {top_k!r}")
    return get_profile(profile).compute(np.asarray(logprob, dtype=np.float64),
                                        np.asarray(top_logprobs, dtype=np.float64), int(top_k))
