"""What the inspector shows of one trajectory: per-step statistics and the tokens with their probability."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..confidence import token_confidence
from ..features import build_context
from ..traces import TraceSet

__all__ = ["step_timeline", "StepTokens", "token_steps", "confidence_after_steps"]


def _one(ts: TraceSet, index: int) -> TraceSet:
    if not (0 <= int(index) < ts.n_trajectories):
        raise ValueError(f"index must be a trajectory of the set (0..{ts.n_trajectories - 1}), got {index!r}")
    return ts.take([int(index)])


def step_timeline(ts: TraceSet, index: int, *, profile: str = "paper", top_k: int = 5) -> pd.DataFrame:
    """Per-step statistics of trajectory ``index``: step, name, tokens, mean r, top-1/top-k confidence,
    entropy, concentration, spread, skewness."""
    one = _one(ts, index)
    st = build_context(one, profile=profile, top_k=top_k).steps
    return pd.DataFrame({
        "step": np.arange(1, one.n_steps + 1), "name": [str(v or "") for v in one.step_name],
        "tokens": st.n.astype(int), "mean_confidence": st.mu, "top1_confidence": st.top1,
        "topk_confidence": st.topk, "entropy": st.entropy, "concentration": st.concentration,
        "spread": st.spread, "skewness": st.skewness,
    })


@dataclass
class StepTokens:
    step: int
    name: str
    tokens: list          # token strings (empty when the source kept none: ``probability`` still has every token)
    probability: np.ndarray
    has_token_text: bool
    text: str | None = None

    @property
    def lowest(self) -> float:
        """The lowest token probability of the step (NaN without tokens)."""
        return float(np.min(self.probability)) if len(self.probability) else float("nan")


def token_steps(ts: TraceSet, index: int, *, profile: str = "paper", top_k: int = 5,
                max_tokens: int = 4000) -> list[StepTokens]:
    """The tokens of every step of trajectory ``index`` with their probability r (first ``max_tokens``)."""
    one = _one(ts, index)
    r = token_confidence(one.logprob, one.top_logprobs, profile=profile, top_k=top_k).r
    has = one.tokens is not None
    out, shown = [], 0
    for s in range(one.n_steps):
        a, b = int(one.step_offsets[s]), int(one.step_offsets[s + 1])
        b = min(b, a + max(0, max_tokens - shown))
        shown += b - a
        toks = [("" if t is None else str(t)) for t in one.tokens[a:b]] if has else []
        out.append(StepTokens(step=s + 1, name=str(one.step_name[s] or ""), tokens=toks,
                              probability=np.asarray(r[a:b]), has_token_text=has, text=one.step_text[s]))
    return out


def confidence_after_steps(model, ts: TraceSet, index: int) -> pd.DataFrame:
    """The calibrated confidence of trajectory ``index`` after each of its steps (a
    :class:`~htc_core.monitor.Monitor` replay: what a live monitor with ``model`` showed while the run went on;
    after the last step it is the run's own confidence). Columns: step, name, tokens, confidence."""
    from ..monitor import Monitor

    one = _one(ts, index)
    mon = Monitor(model)
    conf = []
    for s in range(one.n_steps):
        a, b = one.step_offsets[s], one.step_offsets[s + 1]
        conf.append(mon.add_step(one.logprob[a:b], one.top_logprobs[a:b]))
    return pd.DataFrame({"step": np.arange(1, one.n_steps + 1), "name": [str(v or "") for v in one.step_name],
                         "tokens": np.diff(one.step_offsets).astype(int), "confidence": conf})
