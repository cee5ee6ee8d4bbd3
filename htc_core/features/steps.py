"""Per-step statistics of the token confidences (the paper's notation, DESIGN.md section 3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..confidence import TokenConfidence, token_confidence
from ..traces import TraceSet
from .segments import seg_max, seg_mean, seg_sum

__all__ = ["EPS", "StepStats", "FeatureContext", "step_stats", "build_context"]

EPS = 1e-8


@dataclass
class StepStats:
    """One value per step: n_t, mu_t, sigma_t, H_t, kappa_t, rho_t, skew_t, x_t, y_t.

    Every feature is a function of these per-step summaries of the token confidences r (and of the
    within-step token differences); made by :func:`step_stats`.

    Parameters
    ----------
    n : ndarray of shape (n_steps,)
        Tokens of the step, n_t (float64).
    mu : ndarray of shape (n_steps,)
        Mean of r over the step, mu_t.
    sigma : ndarray of shape (n_steps,)
        Population standard deviation of r, sigma_t.
    entropy : ndarray of shape (n_steps,)
        Entropy of the normalized r, H_t.
    concentration : ndarray of shape (n_steps,)
        max(r) / mu_t, kappa_t.
    spread : ndarray of shape (n_steps,)
        sigma_t / mu_t, rho_t.
    skewness : ndarray of shape (n_steps,)
        Skewness of r (0 for one-token steps), skew_t.
    top1 : ndarray of shape (n_steps,)
        Mean Top1Conf, x_t.
    topk : ndarray of shape (n_steps,)
        Mean TopkConf, y_t.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features import build_context
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> ctx = build_context(ts)
    >>> ctx.steps.n[:4].tolist(), ctx.steps.top1[:2].round(3).tolist()
    ([26.0, 11.0, 26.0, 12.0], [0.922, 0.968])
    """

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
    """Everything a feature family needs, computed once per trace set (made by :func:`build_context`).

    Parameters
    ----------
    ts : TraceSet
        The runs.
    conf : TokenConfidence
        The per-token r, Top1Conf and TopkConf.
    steps : StepStats
        The per-step summaries.
    profile : str
        The token-confidence profile.
    top_k : int
        The alternatives averaged into TopkConf.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features import build_context
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> ctx = build_context(ts)
    >>> ctx.profile, ctx.top_k, len(ctx.steps.n) == ts.n_steps
    ('paper', 5, True)
    """

    ts: TraceSet
    conf: TokenConfidence
    steps: StepStats
    profile: str
    top_k: int

    @property
    def first_step(self) -> np.ndarray:
        """The step index of each trajectory's first step.

        Returns
        -------
        ndarray of int64 of shape (n_trajectories,)

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.features import build_context
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> build_context(ts).first_step[:3].tolist()
        [0, 2, 4]
        """
        return self.ts.traj_offsets[:-1]

    @property
    def last_step(self) -> np.ndarray:
        """The step index of each trajectory's last step.

        Returns
        -------
        ndarray of int64 of shape (n_trajectories,)

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.features import build_context
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> build_context(ts).last_step[:3].tolist()
        [1, 3, 5]
        """
        return self.ts.traj_offsets[1:] - 1


def step_stats(ts: TraceSet, conf: TokenConfidence) -> StepStats:
    """The per-step summaries of the token confidences, vectorized over all steps (segment reductions).

    Parameters
    ----------
    ts : TraceSet
        The runs (their step offsets).
    conf : TokenConfidence
        The per-token confidences of ``ts`` (:func:`htc_core.confidence.token_confidence`).

    Returns
    -------
    StepStats

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.confidence import token_confidence
    >>> from htc_core.features import step_stats
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> stats = step_stats(ts, token_confidence(ts.logprob, ts.top_logprobs))
    >>> stats.n[:2].tolist(), round(float(stats.mu[0]), 3)
    ([26.0, 11.0], 0.922)
    """
    off = ts.step_offsets
    n = np.diff(off)
    r = conf.r
    nz = np.maximum(n, 1)
    total = seg_sum(r, off)
    mu = total / nz
    # the per-token temporaries reuse two buffers (the same operations in the same order, so the same values):
    # each fresh [tokens] array costs page faults, about half the CPU of the pass itself (issue 29)
    dev = np.repeat(mu, n)
    np.subtract(r, dev, out=dev)
    tmp = np.multiply(dev, dev)
    sigma = np.sqrt(seg_sum(tmp, off) / nz)
    pi = np.repeat(total + EPS, n)
    np.divide(r, pi, out=pi)  # a division, as in the paper: H_t of one-token steps is ~1e-8
    np.add(pi, EPS, out=tmp)
    np.log(tmp, out=tmp)
    np.multiply(pi, tmp, out=tmp)
    entropy = -seg_sum(tmp, off)
    concentration = seg_max(r, off) / (mu + EPS)
    spread = sigma / (mu + EPS)
    del pi
    dev *= np.repeat(1.0 / (sigma + EPS), n)
    np.multiply(dev, dev, out=tmp)
    np.multiply(tmp, dev, out=tmp)
    skew = seg_sum(tmp, off)
    skew = np.where(n >= 2, skew / nz, 0.0)
    return StepStats(
        n=n.astype(np.float64), mu=mu, sigma=sigma, entropy=entropy, concentration=concentration,
        spread=spread, skewness=skew, top1=seg_mean(conf.top1, off), topk=seg_mean(conf.topk, off),
    )


def build_context(ts: TraceSet, *, profile: str = "paper", top_k: int = 5) -> FeatureContext:
    """The token confidences and step summaries of a trace set, computed once for every feature family.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    profile : str, default "paper"
        The token-confidence profile (:mod:`htc_core.confidence`).
    top_k : int, default 5
        The alternatives averaged into TopkConf.

    Returns
    -------
    FeatureContext

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features import build_context
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> ctx = build_context(ts, profile="chosen")
    >>> bool((ctx.conf.top1 == ctx.conf.r).all())      # 'chosen' ignores the alternatives
    True
    """
    conf = token_confidence(ts.logprob, ts.top_logprobs, profile=profile, top_k=top_k)
    return FeatureContext(ts=ts, conf=conf, steps=step_stats(ts, conf), profile=profile, top_k=top_k)
