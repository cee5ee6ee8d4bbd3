"""Synthetic inputs for benchmarks, tests and demos: a random columnar trace set, and OpenAI call logs in the
exact shape the Chat Completions API returns with ``logprobs=True, top_logprobs=k`` (wrapped as the recorder
writes them). Nothing here is real agent data; real runs are in ``sample_runs/``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import orjson

from .traces import MetaTable, TraceSet

__all__ = ["synthetic_trace_set", "make_call", "write_calllog"]

def synthetic_trace_set(n_traj: int = 10_000, n_steps: int = 10, n_tokens: int = 50, k: int = 5,
                        seed: int = 0) -> TraceSet:
    """Random trace set of n_traj x n_steps x n_tokens tokens with k sorted alternatives (vectorized).

    For benchmarks and tests at any size: chosen-token probabilities drawn from Beta(4, 1), alternatives below
    the best one by exponential gaps, labels a fair coin. Not agent data: its labels are unrelated to its
    logprobs.

    Parameters
    ----------
    n_traj : int, default 10000
        Number of trajectories (ids ``syn-0``, ``syn-1``, ...).
    n_steps : int, default 10
        Steps per trajectory.
    n_tokens : int, default 50
        Tokens per step.
    k : int, default 5
        Alternatives per token.
    seed : int, default 0
        Seed of the random generator.

    Returns
    -------
    TraceSet

    Examples
    --------
    >>> from htc_core.synthetic import synthetic_trace_set
    >>> ts = synthetic_trace_set(4, n_steps=3, n_tokens=5, seed=0)
    >>> ts
    TraceSet(trajectories=4, steps=12, tokens=60, k=5)
    >>> ts.ids.tolist(), ts.labels.tolist()
    (['syn-0', 'syn-1', 'syn-2', 'syn-3'], [0.0, 1.0, 1.0, 1.0])
    """
    rng = np.random.default_rng(seed)
    n = n_traj * n_steps * n_tokens
    logprob = np.log(rng.beta(4.0, 1.0, n) + 1e-12)
    top = np.empty((n, k))
    if k:
        top[:, 0] = np.maximum(logprob, np.log(rng.uniform(0.3, 1.0, n)))
        gaps = rng.exponential(1.5, (n, k - 1)) if k > 1 else np.zeros((n, 0))
        top[:, 1:] = top[:, :1] - np.cumsum(gaps, axis=1)
    meta = MetaTable.empty(n_traj)          # plain columns: no pandas until ts.meta is read
    meta.columns["id"] = np.array([f"syn-{i}" for i in range(n_traj)], dtype=object)
    meta.columns["success"] = (rng.random(n_traj) < 0.5).astype(np.float64)
    return TraceSet(
        logprob=logprob,
        top_logprobs=top,
        step_offsets=np.arange(0, n + 1, n_tokens, dtype=np.int64),
        traj_offsets=np.arange(0, n_traj * n_steps + 1, n_steps, dtype=np.int64),
        meta=meta,
    )

_WORDS = [" the", " of", " and", " to", " a", " in", " is", " that", " for", " it", " was", " on", " as", " with",
          " answer", " search", " Thought", ":", " Action", "[", "]", " Paris", " France", " capital", ".", ",",
          "\n", " I", " need", " find", " The", " year", " born", " film", " directed", " by", " 19", "87"]


def _token(rng: random.Random, t: str, lp: float) -> dict:
    return {"token": t, "logprob": lp, "bytes": list(t.encode())}


def make_call(rng: random.Random, traj: str, step: int, n_tokens: int, k: int = 5) -> dict:
    """One logged call in the recorder's shape, with a real-looking Chat Completions response.

    Parameters
    ----------
    rng : random.Random
        The random source (random words and logprobs).
    traj : str
        The trajectory id the call belongs to.
    step : int
        The step number.
    n_tokens : int
        Tokens of the response.
    k : int, default 5
        Alternatives per token (``top_logprobs``).

    Returns
    -------
    dict
        ``trajectory_id``, ``step``, ``created``, ``request`` and ``response`` (a ``chat.completion``).

    Examples
    --------
    >>> import random
    >>> from htc_core.synthetic import make_call
    >>> call = make_call(random.Random(0), "run-1", 0, n_tokens=3, k=2)
    >>> sorted(call)
    ['created', 'request', 'response', 'step', 'trajectory_id']
    >>> content = call["response"]["choices"][0]["logprobs"]["content"]
    >>> len(content), len(content[0]["top_logprobs"])
    (3, 2)
    """
    content = []
    text = []
    for _ in range(n_tokens):
        alts = rng.sample(_WORDS, k)
        lps = sorted((round(-rng.expovariate(1.5) * (j + 1), 6) for j in range(k)), reverse=True)
        chosen = 0 if rng.random() < 0.85 else rng.randrange(k)
        tok = _token(rng, alts[chosen], lps[chosen])
        tok["top_logprobs"] = [_token(rng, a, v) for a, v in zip(alts, lps)]
        content.append(tok)
        text.append(alts[chosen])
    resp = {
        "id": f"chatcmpl-{traj}-{step}", "object": "chat.completion", "created": 1700000000 + step,
        "model": "SmolLM2-135M-Instruct",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(text)},
                     "logprobs": {"content": content, "refusal": None}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": n_tokens, "total_tokens": 50 + n_tokens},
    }
    return {"trajectory_id": traj, "step": step, "created": 1700000000.0 + step,
            "request": {"model": "SmolLM2-135M-Instruct", "logprobs": True, "top_logprobs": k,
                        "messages": [{"role": "user", "content": f"question of {traj}"}]},
            "response": resp}


def write_calllog(path: str | os.PathLike, size_mb: float, *, seed: int = 0, tokens_per_call: int = 60,
                  steps: int = 5, tool_lines: bool = True) -> dict:
    """Write a synthetic call log of about ``size_mb`` MB (whole runs: at least one).

    Parameters
    ----------
    path : str or path-like
        The file written (overwritten).
    size_mb : float
        Target size in MB (1e6 bytes).
    seed : int, default 0
        Seed of the random source.
    tokens_per_call : int, default 60
        Mean tokens per call (Gaussian, sd a quarter of the mean, at least 1).
    steps : int, default 5
        Calls per trajectory.
    tool_lines : bool, default True
        Write a tool-result line after each call too (as an agent's recorder would).

    Returns
    -------
    dict
        ``bytes``, ``trajectories``, ``calls`` and ``tokens`` written.

    Examples
    --------
    >>> import os, tempfile
    >>> import htc_core as htc
    >>> from htc_core.synthetic import write_calllog
    >>> path = os.path.join(tempfile.mkdtemp(), "calls.jsonl")
    >>> write_calllog(path, 0.01, seed=0)
    {'bytes': 116386, 'trajectories': 1, 'calls': 5, 'tokens': 293}
    >>> ts, report = htc.load(path)
    >>> ts, report.formats[path]
    (TraceSet(trajectories=1, steps=5, tokens=293, k=5), 'openai-calllog')
    """
    rng = random.Random(seed)
    target = int(size_mb * 1e6)
    written = 0
    n_traj = n_calls = n_tokens = 0
    with open(path, "wb") as fh:
        while written < target:
            traj = f"run-{n_traj:06d}"
            for s in range(steps):
                n = max(1, int(rng.gauss(tokens_per_call, tokens_per_call / 4)))
                line = orjson.dumps(make_call(rng, traj, s, n)) + b"\n"
                fh.write(line)
                written += len(line)
                n_calls += 1
                n_tokens += n
                if tool_lines:
                    line = orjson.dumps({"trajectory_id": traj, "type": "tool", "name": "search",
                                         "observation": "Paris is the capital of France."}) + b"\n"
                    fh.write(line)
                    written += len(line)
            n_traj += 1
    return {"bytes": written, "trajectories": n_traj, "calls": n_calls, "tokens": n_tokens}
