"""Synthetic inputs for benchmarks, tests and demos: a random columnar trace set, and OpenAI call logs in the
exact shape the Chat Completions API returns with ``logprobs=True, top_logprobs=k`` (wrapped as the recorder
writes them). Nothing here is real agent data; real runs are in ``sample_runs/``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import orjson
import pandas as pd

from .traces import TraceSet, empty_meta

def synthetic_trace_set(n_traj: int = 10_000, n_steps: int = 10, n_tokens: int = 50, k: int = 5,
                        seed: int = 0) -> TraceSet:
    """Random trace set of n_traj x n_steps x n_tokens tokens with k sorted alternatives (vectorized)."""
    rng = np.random.default_rng(seed)
    n = n_traj * n_steps * n_tokens
    logprob = np.log(rng.beta(4.0, 1.0, n) + 1e-12)
    top = np.empty((n, k))
    if k:
        top[:, 0] = np.maximum(logprob, np.log(rng.uniform(0.3, 1.0, n)))
        gaps = rng.exponential(1.5, (n, k - 1)) if k > 1 else np.zeros((n, 0))
        top[:, 1:] = top[:, :1] - np.cumsum(gaps, axis=1)
    meta = empty_meta(n_traj)
    meta["id"] = np.array([f"syn-{i}" for i in range(n_traj)], dtype=object)
    meta["success"] = pd.array(rng.random(n_traj) < 0.5, dtype="boolean")
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
    """One logged call in the recorder's shape, with a real-looking Chat Completions response."""
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
    """Write a synthetic call log of about ``size_mb`` MB; returns counts."""
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
