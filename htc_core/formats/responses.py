"""OpenAI Responses API: ``output[].content[type=output_text].logprobs[]``.

One response is one step: the logprobs of all its ``output_text`` parts, in
order (request them with ``include=["message.output_text.logprobs"]`` and
``top_logprobs=k``). Each logprob entry has the Chat Completions shape
``{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}``.
Containers are those of ``openai-chat`` (a ``.json`` array of responses is
one trajectory; JSONL holds one trajectory per line).
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from ..report import LoadReport
from ..traces import TraceSet
from . import _shared
from ._shared import FieldError, MissingLogprobs, StepPart

NAME = "responses"


def is_response(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    out = obj.get("output")
    if not isinstance(out, list):
        return False
    if obj.get("object") == "response":
        return True
    return any(isinstance(it, dict) and it.get("type") in ("message", "function_call", "reasoning") for it in out[:8])


def parse_response(resp: Any, prefix: str = "") -> StepPart:
    if not isinstance(resp, dict):
        raise FieldError(prefix or "response", resp, f"must be an object, got {_shared._type_name(resp)}")
    output = resp.get("output")
    if not isinstance(output, list):
        raise FieldError(f"{prefix}output", output, f"must be a list, got {_shared._type_name(output)}")
    parts: list[StepPart] = []
    texts: list[str] = []
    n_text = 0
    for i, item in enumerate(output):
        if not isinstance(item, dict):
            raise FieldError(f"{prefix}output[{i}]", item, f"must be an object, got {_shared._type_name(item)}")
        typ = item.get("type")
        if typ == "function_call":
            texts.append(f"{item.get('name')}({item.get('arguments')})")
            continue
        if typ != "message":
            continue
        content = item.get("content")
        if not isinstance(content, list):
            raise FieldError(f"{prefix}output[{i}].content", content,
                             f"must be a list, got {_shared._type_name(content)}")
        for j, c in enumerate(content):
            if not isinstance(c, dict) or c.get("type") != "output_text":
                continue
            n_text += 1
            f = f"{prefix}output[{i}].content[{j}].logprobs"
            lp = c.get("logprobs")
            if lp is None:
                raise MissingLogprobs(f, None, "no logprobs (request include=['message.output_text.logprobs'])",
                                      has_value=False)
            part = _shared.token_list(lp, f)
            t = c.get("text")
            if isinstance(t, str):
                texts.append(t)
            parts.append(part)
    if not parts:
        if n_text == 0 and texts:
            # only function calls: no generated text with logprobs
            raise MissingLogprobs(f"{prefix}output", None, "response has no output_text with logprobs",
                                  has_value=False)
        if n_text == 0:
            raise MissingLogprobs(f"{prefix}output", None, "response has no output_text", has_value=False)
    part = _shared.concat_parts(parts) if parts else _shared.empty_part()
    part.text = "".join(texts) if texts else None
    return part


def sniff(sample) -> str | None:
    from .openai_chat import sniff_container

    return sniff_container(sample, is_response, "Responses API objects (output[].content[].logprobs)")


def read_file(path, *, builder, report: LoadReport, defaults: dict | None = None, **_: Any) -> None:
    from .openai_chat import read_container_file

    read_container_file(path, builder=builder, report=report, defaults=defaults, framework=None)


def read(paths: str | os.PathLike | Iterable[str | os.PathLike], *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    from . import load

    return load(paths, format=NAME, defaults=defaults, report=report)
