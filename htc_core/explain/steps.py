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
    """The trace set of trajectory ``index`` alone (checked)."""
    if not (0 <= int(index) < ts.n_trajectories):
        raise ValueError(f"index must be a trajectory of the set (0..{ts.n_trajectories - 1}), got {index!r}")
    return ts.take([int(index)])


def step_timeline(ts: TraceSet, index: int, *, profile: str = "paper", top_k: int = 5) -> pd.DataFrame:
    """Per-step statistics of one trajectory, as the inspector shows them.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    index : int
        The trajectory's position in ``ts``.
    profile : str, default "paper"
        The token-confidence profile (:func:`htc_core.confidence.token_confidence`).
    top_k : int, default 5
        Alternatives per token in the top-k confidence.

    Returns
    -------
    pandas.DataFrame
        One row per step: step (from 1), name, tokens, mean_confidence (mean r), top1_confidence,
        topk_confidence, entropy, concentration, spread, skewness.

    Raises
    ------
    ValueError
        If ``index`` is not a trajectory of ``ts``.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.explain.steps import step_timeline
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> step_timeline(ts, 0)[["step", "name", "tokens", "top1_confidence", "entropy"]].round(3)
       step      name  tokens  top1_confidence  entropy
    0     1  llm_call      18            0.982    2.890
    1     2  llm_call       8            0.903    2.056
    """
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
    """The tokens of one step with their probability r (made by :func:`token_steps`).

    Parameters
    ----------
    step : int
        The step's number, from 1.
    name : str
        The step's name.
    tokens : list of str
        The token strings shown (empty when the source kept none, or past ``max_tokens``).
    probability : numpy.ndarray
        The probability r of each token shown.
    has_token_text : bool
        Whether the source kept token strings (without them ``probability`` still has every token shown).
    text : str or None, default None
        The step's text, where the reader kept it.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.explain.steps import token_steps
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> first = token_steps(ts, 0)[0]
    >>> first.step, first.name, first.tokens[:4]
    (1, 'llm_call', ['Thought', ':', ' I', ' should'])
    >>> first.probability[:4].round(3)
    array([0.991, 0.997, 0.962, 0.987])
    """

    step: int
    name: str
    tokens: list          # token strings (empty when the source kept none: ``probability`` still has every token)
    probability: np.ndarray
    has_token_text: bool
    text: str | None = None

    @property
    def lowest(self) -> float:
        """The lowest token probability of the step.

        Returns
        -------
        float
            The smallest r of the step's tokens shown; NaN without tokens.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.explain.steps import token_steps
        >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
        >>> steps = token_steps(ts, 0, max_tokens=8)          # the second step is past the 8 tokens shown
        >>> round(steps[0].lowest, 3), steps[1].lowest
        (0.944, nan)
        """
        return float(np.min(self.probability)) if len(self.probability) else float("nan")


def token_steps(ts: TraceSet, index: int, *, profile: str = "paper", top_k: int = 5,
                max_tokens: int = 4000) -> list[StepTokens]:
    """The tokens of every step of one trajectory with their probability r.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    index : int
        The trajectory's position in ``ts``.
    profile : str, default "paper"
        The token-confidence profile (:func:`htc_core.confidence.token_confidence`).
    top_k : int, default 5
        Alternatives per token in r.
    max_tokens : int, default 4000
        Tokens shown over all steps; later steps get fewer or none.

    Returns
    -------
    list of StepTokens
        One per step, in order.

    Raises
    ------
    ValueError
        If ``index`` is not a trajectory of ``ts``.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.explain.steps import token_steps
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> steps = token_steps(ts, 0)
    >>> [(s.step, len(s.tokens)) for s in steps]
    [(1, 18), (2, 8)]
    >>> print(steps[1].text)
    Final Answer: forint
    """
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
    """The calibrated confidence of one trajectory after each of its steps.

    A :class:`~htc_core.monitor.Monitor` replay: what a live monitor with ``model`` showed while the run went
    on; after the last step it is the run's own confidence.

    Parameters
    ----------
    model : HTCCalibrator
        A fitted calibrator (anything :class:`~htc_core.monitor.Monitor` accepts).
    ts : TraceSet
        The runs.
    index : int
        The trajectory's position in ``ts``.

    Returns
    -------
    pandas.DataFrame
        One row per step: step (from 1), name, tokens, confidence.

    Raises
    ------
    ValueError
        If ``index`` is not a trajectory of ``ts``.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.explain.steps import confidence_after_steps
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> model = HTCCalibrator(variant="reduced", alphas=(1.0,)).fit(extract(ts), ts.labels)
    >>> confidence_after_steps(model, ts, 3).round(3)
       step      name  tokens  confidence
    0     1  llm_call      18       0.018
    1     2  llm_call       7       0.673
    """
    from ..monitor import Monitor

    one = _one(ts, index)
    mon = Monitor(model)
    conf = []
    for s in range(one.n_steps):
        a, b = one.step_offsets[s], one.step_offsets[s + 1]
        conf.append(mon.add_step(one.logprob[a:b], one.top_logprobs[a:b]))
    return pd.DataFrame({"step": np.arange(1, one.n_steps + 1), "name": [str(v or "") for v in one.step_name],
                         "tokens": np.diff(one.step_offsets).astype(int), "confidence": conf})
