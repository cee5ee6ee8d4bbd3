"""Legacy completions: OpenAI ``/v1/completions``, llama.cpp and vLLM.

One response is one step; its logprobs live under ``choices[0].logprobs``::

    {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}, ...], "text_offset": [...]}

Containers (how responses form trajectories) are the same as for
``openai-chat``: a ``.json`` array of responses is one trajectory; JSONL holds
one trajectory per line (a list of responses, or an object with ``id`` and
``responses``). vLLM quirks: -9999 means -inf (a missing alternative); the
k+1 alternatives it may list are de-duplicated by construction (a dict keyed
by token) and sorted.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

import numpy as np

from ..report import LoadReport
from ..traces import TraceSet
from . import _shared
from ._shared import FieldError, MissingLogprobs, StepPart

NAME = "completions"


def is_response(obj: Any) -> bool:
    """A legacy completions response (or streamed chunk)."""
    if not isinstance(obj, dict):
        return False
    if obj.get("object") == "text_completion":
        return True
    ch = obj.get("choices")
    if isinstance(ch, list) and ch and isinstance(ch[0], dict):
        c = ch[0]
        lp = c.get("logprobs")
        if isinstance(lp, dict) and "token_logprobs" in lp:
            return True
        return "text" in c and "message" not in c and "delta" not in c
    return False


def parse_logprobs(lp: Any, prefix: str) -> StepPart:
    """``{tokens, token_logprobs, top_logprobs}`` -> arrays."""
    if not isinstance(lp, dict):
        raise FieldError(prefix, lp, f"must be an object, got {_shared._type_name(lp)}")
    values = lp.get("token_logprobs")
    if values is None:
        raise MissingLogprobs(f"{prefix}.token_logprobs", None, "missing (no logprobs in this response)",
                              has_value=False)
    if not isinstance(values, list):
        raise FieldError(f"{prefix}.token_logprobs", values, f"must be a list, got {_shared._type_name(values)}")
    n = len(values)
    if n and values[0] is None:
        raise FieldError(f"{prefix}.token_logprobs[0]", None,
                         "is null: the response echoes the prompt (echo=True), whose first token has no logprob; "
                         "record without echo", has_value=True)
    arr = _shared.numbers(values, prefix + ".token_logprobs[{i}]")
    arr, c1 = _shared.check_chosen(arr, values, prefix + ".token_logprobs[{i}]")
    toks = lp.get("tokens")
    if toks is not None:
        if not isinstance(toks, list) or len(toks) != n:
            raise FieldError(f"{prefix}.tokens", f"{len(toks) if isinstance(toks, list) else _shared._type_name(toks)}",
                             f"must be a list with one token per logprob ({n})")
        if not set(map(type, toks)) <= {str}:
            toks = ["" if t is None else str(t) for t in toks]
    top, c2 = _top_dicts(lp.get("top_logprobs"), n, prefix + ".top_logprobs")
    return StepPart(arr, top, toks, None, c1 + c2)


def _top_dicts(rows: Any, n: int, field: str) -> tuple[np.ndarray | None, int]:
    """``[{token: logprob}, ...]`` (None rows allowed) -> [n, k] matrix."""
    if rows is None:
        return None, 0
    if not isinstance(rows, list):
        raise FieldError(field, rows, f"must be a list (one object per token), got {_shared._type_name(rows)}")
    if len(rows) != n:
        raise FieldError(field, f"{len(rows)} entries", f"has {len(rows)} entries but token_logprobs has {n}")
    vals = []
    for i, r in enumerate(rows):
        if r is None:
            vals.append(())
        elif isinstance(r, dict):
            vals.append(tuple(r.values()))
        else:
            raise FieldError(f"{field}[{i}]", r, f"must be an object {{token: logprob}}, got {_shared._type_name(r)}")
    k = max(map(len, vals), default=0)
    if k == 0:
        return None, 0
    out = np.full((n, k), np.nan)
    for i, v in enumerate(vals):
        if v:
            if not set(map(type, v)) <= {float, int}:
                for tok, x in rows[i].items():
                    if type(x) not in (float, int):
                        raise FieldError(f"{field}[{i}][{tok!r}]", x, f"must be a number, got {_shared._type_name(x)}")
            if any(x != x for x in v):
                tok = next(t for t, x in rows[i].items() if x != x)
                raise FieldError(f"{field}[{i}][{tok!r}]", float("nan"), "must not be NaN")
            out[i, : len(v)] = v
    return _shared.finish_top(out, field + "[{i}][{j}]")


def parse_response(resp: Any, prefix: str = "") -> StepPart:
    """One completions response (or chunk) -> one step part."""
    if not isinstance(resp, dict):
        raise FieldError(prefix or "response", resp, f"must be an object, got {_shared._type_name(resp)}")
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices:
        raise FieldError(f"{prefix}choices", choices, "must be a non-empty list")
    ch = choices[0]
    if not isinstance(ch, dict):
        raise FieldError(f"{prefix}choices[0]", ch, f"must be an object, got {_shared._type_name(ch)}")
    lp = ch.get("logprobs")
    if lp is None:
        raise MissingLogprobs(f"{prefix}choices[0].logprobs", None,
                              "no logprobs (request them with logprobs=k)", has_value=False)
    part = parse_logprobs(lp, f"{prefix}choices[0].logprobs")
    text = ch.get("text")
    part.text = text if isinstance(text, str) else None
    return part


def sniff(sample) -> str | None:
    from .openai_chat import sniff_container

    return sniff_container(sample, is_response, "legacy completions responses (choices[].logprobs.token_logprobs)")


def read_file(path, *, builder, report: LoadReport, defaults: dict | None = None, **_: Any) -> None:
    from .openai_chat import read_container_file

    read_container_file(path, builder=builder, report=report, defaults=defaults, framework=None)


def read(paths: str | os.PathLike | Iterable[str | os.PathLike], *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    from . import load

    return load(paths, format=NAME, defaults=defaults, report=report)
