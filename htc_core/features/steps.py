"""Per-step statistics of the token confidences (the paper's notation, DESIGN.md section 3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..confidence import TokenConfidence, token_confidence
from ..traces import TraceSet
from .segments import seg_max, seg_mean, seg_sum

EPS = 1e-8


@dataclass
class StepStats:
    """One value per step: n_t, mu_t, sigma_t, H_t, kappa_t, rho_t, skew_t, x_t, y_t."""

    n: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    entropy: np.ndarray
    concentration: np.ndarray
    spread: np.ndarray
    skewness: np.ndarray
    top1: np.ndarray
    topk: np.ndarray


@dataclass
class FeatureContext:
    """Everything a feature family needs, computed once per trace set."""

    ts: TraceSet
    conf: TokenConfidence
    steps: StepStats
    profile: str
    top_k: int

    @property
    def first_step(self) -> np.ndarray:
        return self.ts.traj_offsets[:-1]

    @property
    def last_step(self) -> np.ndarray:
        return self.ts.traj_offsets[1:] - 1


def step_stats(ts: TraceSet, conf: TokenConfidence) -> StepStats:
    off = ts.step_offsets
    n = np.diff(off)
    r = conf.r
    nz = np.maximum(n, 1)
    total = seg_sum(r, off)
    mu = total / nz
    dev = r - np.repeat(mu, n)
    sigma = np.sqrt(seg_sum(dev * dev, off) / nz)
    pi = r / np.repeat(total + EPS, n)  # a division, as in the paper: H_t of one-token steps is ~1e-8
    entropy = -seg_sum(pi * np.log(pi + EPS), off)
    concentration = seg_max(r, off) / (mu + EPS)
    spread = sigma / (mu + EPS)
    dev *= np.repeat(1.0 / (sigma + EPS), n)
    skew = seg_sum(dev * dev * dev, off)
    skew = np.where(n >= 2, skew / nz, 0.0)
    return StepStats(
        n=n.astype(np.float64), mu=mu, sigma=sigma, entropy=entropy, concentration=concentration,
        spread=spread, skewness=skew, top1=seg_mean(conf.top1, off), topk=seg_mean(conf.topk, off),
    )


def build_context(ts: TraceSet, *, profile: str = "paper", top_k: int = 5) -> FeatureContext:
    conf = token_confidence(ts.logprob, ts.top_logprobs, profile=profile, top_k=top_k)
    return FeatureContext(ts=ts, conf=conf, steps=step_stats(ts, conf), profile=profile, top_k=top_k)
