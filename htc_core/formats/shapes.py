"""One OpenAI-shaped LLM response recognized and parsed into a ``StepPart``.

Shapes: Chat Completions ``choices[].logprobs.content[].{token, logprob, bytes, top_logprobs[]}``, a
streamed call (a list of ``chat.completion.chunk``), the Responses API
``output[].content[type=output_text].logprobs[]`` and legacy ``/v1/completions`` (OpenAI, llama.cpp, vLLM)
``choices[0].logprobs.{tokens, token_logprobs, top_logprobs[{token: logprob}], text_offset}``.

``find_response`` finds the raw response inside a wrapper (a call-log line, a list element, a smolagents
step) and ``parse_response`` dispatches on the shape: every OpenAI-shaped reader (openai-chat, responses,
completions, openai-calllog, smolagents) uses these two. A response without logprobs raises
``MissingLogprobs`` (the step is dropped with a warning); a malformed one raises ``FieldError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .common import FieldError, MissingLogprobs, text_of, type_name
from .jsonio import ParseError, loads
from .logprobs import StepPart, check_chosen, concat_parts, empty_part, finish_top, numbers, token_list

# ------------------------------------------------------------ any shape
# internal: the readers' shared response parsers (each format's read function is the public surface)
__all__: list[str] = []

# keys under which a wrapper (call-log line, list element) may hold the raw response
RESPONSE_KEYS = ("response", "raw_response", "completion", "output", "result", "body", "raw", "llm_output", "data")


def is_any_response(obj: Any) -> bool:
    """Whether a value is a Chat Completions, Responses API or legacy completions response."""
    return is_chat(obj) or is_responses_api(obj) or is_completion(obj)


def find_response(obj: Any, depth: int = 0) -> Any:
    """The raw response held by ``obj`` (itself, or under a wrapper key, two levels deep), else None."""
    if is_any_response(obj) or is_chunk_list(obj):
        return obj
    if depth < 2 and isinstance(obj, dict):
        for k in RESPONSE_KEYS:
            v = obj.get(k)
            if v is None or isinstance(v, (int, float, bool)):
                continue
            if isinstance(v, str):
                if not v.startswith("{"):
                    continue
                try:
                    v = loads(v)
                except ParseError:
                    continue
            r = find_response(v, depth + 1)
            if r is not None:
                return r
    return None


def parse_response(resp: Any, prefix: str = "") -> StepPart:
    """Any OpenAI-shaped response (chat, chunk list, Responses API, completions) -> one step part."""
    if is_chunk_list(resp):
        return parse_chunks(resp, prefix)
    if is_chat(resp):
        if is_chunk(resp):
            part = parse_chunk(resp, prefix)
            if isinstance(part, MissingLogprobs):
                raise part
            return part if part is not None else empty_part()
        return parse_chat(resp, prefix)
    if is_responses_api(resp):
        return parse_responses_api(resp, prefix)
    if is_completion(resp):
        return parse_completion(resp, prefix)
    raise FieldError(prefix.rstrip(".") or "response", resp, "not an LLM response (no choices[] or output[])")


def response_model(resp: Any) -> str | None:
    """The ``model`` a response (or the first chunk of a streamed one) names, or None."""
    if isinstance(resp, list) and resp:
        resp = resp[0]
    if isinstance(resp, dict):
        m = resp.get("model")
        if isinstance(m, str) and m:
            return m
    return None


# ------------------------------------------------------------ Chat Completions
def is_chat(obj: Any) -> bool:
    """Whether a value is a Chat Completions response (or one streamed chunk of it)."""
    if not isinstance(obj, dict):
        return False
    if obj.get("object") in ("chat.completion", "chat.completion.chunk"):
        return True
    ch = obj.get("choices")
    if isinstance(ch, list) and ch and isinstance(ch[0], dict):
        c = ch[0]
        if "message" in c or "delta" in c:
            return True
        lp = c.get("logprobs")
        return isinstance(lp, dict) and "content" in lp
    return False


def is_chunk(obj: Any) -> bool:
    """Whether a value is one ``chat.completion.chunk`` of a streamed call."""
    if not isinstance(obj, dict):
        return False
    if obj.get("object") == "chat.completion.chunk":
        return True
    ch = obj.get("choices")
    return isinstance(ch, list) and bool(ch) and isinstance(ch[0], dict) and "delta" in ch[0]


def is_chunk_list(obj: Any) -> bool:
    """Whether a value is a list of streamed chunks (one call)."""
    return isinstance(obj, list) and bool(obj) and all(isinstance(c, dict) for c in obj[:4]) and is_chunk(obj[0])


def _message_text(msg: Any) -> str | None:
    """The text of a response message: its content, else its tool calls as ``name(arguments)``; or None."""
    if not isinstance(msg, dict):
        return None
    text = text_of(msg.get("content"))
    if text:
        return text
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and calls:
        out = []
        for c in calls:
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict):
                out.append(f"{fn.get('name')}({fn.get('arguments')})")
        return "; ".join(out) or None
    return text


def parse_chat(resp: dict, prefix: str = "") -> StepPart:
    """The step part of a Chat Completions response (its first choice's ``logprobs.content``)."""
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices:
        raise FieldError(f"{prefix}choices", choices, "must be a non-empty list")
    ch = choices[0]
    if not isinstance(ch, dict):
        raise FieldError(f"{prefix}choices[0]", ch, f"must be an object, got {type_name(ch)}")
    text = _message_text(ch.get("message") if "message" in ch else ch.get("delta"))
    lp = ch.get("logprobs")
    f = f"{prefix}choices[0].logprobs"
    if lp is None:
        raise MissingLogprobs(f, None, "no logprobs (request them with logprobs=True, top_logprobs=k)",
                              has_value=False)
    if not isinstance(lp, dict):
        raise FieldError(f, lp, f"must be an object, got {type_name(lp)}")
    content = lp.get("content")
    if content is None:
        if lp.get("refusal") is not None:
            part = token_list(lp["refusal"], f + ".refusal")
        elif "token_logprobs" in lp:
            part = parse_completion_logprobs(lp, f)
        else:
            raise MissingLogprobs(f + ".content", None, "is null (no logprobs for this output)", has_value=False)
    else:
        part = token_list(content, f + ".content")
    part.text = text
    return part


def parse_chunks(chunks: list, prefix: str = "") -> StepPart:
    """A streamed call (list of ``chat.completion.chunk``) reassembled into one step."""
    parts: list[StepPart] = []
    missing = None
    for i, c in enumerate(chunks):
        if not isinstance(c, dict):
            raise FieldError(f"{prefix}[{i}]", c, f"a chunk must be an object, got {type_name(c)}")
        part = parse_chunk(c, f"{prefix}[{i}].")
        if part is None:
            continue
        if isinstance(part, MissingLogprobs):
            missing = missing or part
            continue
        parts.append(part)
    if missing is not None:
        raise missing
    return concat_parts(parts) if parts else empty_part()


def parse_chunk(c: dict, prefix: str = "") -> StepPart | MissingLogprobs | None:
    """One chunk: a part, None (no generated text: role/usage chunk) or a MissingLogprobs to raise later."""
    choices = c.get("choices")
    if not choices:
        return None  # usage-only chunk
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise FieldError(f"{prefix}choices", choices, "must be a list of objects")
    ch = choices[0]
    delta = ch.get("delta")
    text = _message_text(delta) if delta is not None else text_of(ch.get("text"))
    lp = ch.get("logprobs")
    content = None
    if isinstance(lp, dict):
        content = lp.get("content")
        if content is None and "token_logprobs" in lp:
            part = parse_completion_logprobs(lp, f"{prefix}choices[0].logprobs")
            part.text = text
            return part
    elif lp is not None:
        raise FieldError(f"{prefix}choices[0].logprobs", lp, f"must be an object, got {type_name(lp)}")
    if content is None:
        if text:
            return MissingLogprobs(f"{prefix}choices[0].logprobs", None,
                                   "streamed chunk has text but no logprobs", has_value=False)
        return None
    part = token_list(content, f"{prefix}choices[0].logprobs.content")
    part.text = text
    return part


# ------------------------------------------------------------ legacy completions
def is_completion(obj: Any) -> bool:
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


def parse_completion_logprobs(lp: Any, prefix: str) -> StepPart:
    """``{tokens, token_logprobs, top_logprobs}`` -> arrays."""
    if not isinstance(lp, dict):
        raise FieldError(prefix, lp, f"must be an object, got {type_name(lp)}")
    values = lp.get("token_logprobs")
    if values is None:
        raise MissingLogprobs(f"{prefix}.token_logprobs", None, "missing (no logprobs in this response)",
                              has_value=False)
    if not isinstance(values, list):
        raise FieldError(f"{prefix}.token_logprobs", values, f"must be a list, got {type_name(values)}")
    n = len(values)
    if n and values[0] is None:
        raise FieldError(f"{prefix}.token_logprobs[0]", None,
                         "is null: the response echoes the prompt (echo=True), whose first token has no logprob; "
                         "record without echo", has_value=True)
    arr = numbers(values, prefix + ".token_logprobs[{i}]")
    arr, c1 = check_chosen(arr, values, prefix + ".token_logprobs[{i}]")
    toks = lp.get("tokens")
    if toks is not None:
        if not isinstance(toks, list) or len(toks) != n:
            raise FieldError(f"{prefix}.tokens", f"{len(toks) if isinstance(toks, list) else type_name(toks)}",
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
        raise FieldError(field, rows, f"must be a list (one object per token), got {type_name(rows)}")
    if len(rows) != n:
        raise FieldError(field, f"{len(rows)} entries", f"has {len(rows)} entries but token_logprobs has {n}")
    vals = []
    for i, r in enumerate(rows):
        if r is None:
            vals.append(())
        elif isinstance(r, dict):
            vals.append(tuple(r.values()))
        else:
            raise FieldError(f"{field}[{i}]", r, f"must be an object {{token: logprob}}, got {type_name(r)}")
    k = max(map(len, vals), default=0)
    if k == 0:
        return None, 0
    out = np.full((n, k), np.nan)
    for i, v in enumerate(vals):
        if v:
            if not set(map(type, v)) <= {float, int}:
                for tok, x in rows[i].items():
                    if type(x) not in (float, int):
                        raise FieldError(f"{field}[{i}][{tok!r}]", x, f"must be a number, got {type_name(x)}")
            if any(x != x for x in v):
                tok = next(t for t, x in rows[i].items() if x != x)
                raise FieldError(f"{field}[{i}][{tok!r}]", float("nan"), "must not be NaN")
            out[i, : len(v)] = v
    return finish_top(out, field + "[{i}][{j}]")


def parse_completion(resp: Any, prefix: str = "") -> StepPart:
    """One completions response (or chunk) -> one step part."""
    if not isinstance(resp, dict):
        raise FieldError(prefix or "response", resp, f"must be an object, got {type_name(resp)}")
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices:
        raise FieldError(f"{prefix}choices", choices, "must be a non-empty list")
    ch = choices[0]
    if not isinstance(ch, dict):
        raise FieldError(f"{prefix}choices[0]", ch, f"must be an object, got {type_name(ch)}")
    lp = ch.get("logprobs")
    if lp is None:
        raise MissingLogprobs(f"{prefix}choices[0].logprobs", None,
                              "no logprobs (request them with logprobs=k)", has_value=False)
    part = parse_completion_logprobs(lp, f"{prefix}choices[0].logprobs")
    text = ch.get("text")
    part.text = text if isinstance(text, str) else None
    return part


# ------------------------------------------------------------ Responses API
def is_responses_api(obj: Any) -> bool:
    """An OpenAI Responses API object (``output[]`` of message / function_call / reasoning items)."""
    if not isinstance(obj, dict):
        return False
    out = obj.get("output")
    if not isinstance(out, list):
        return False
    if obj.get("object") == "response":
        return True
    return any(isinstance(it, dict) and it.get("type") in ("message", "function_call", "reasoning") for it in out[:8])


def parse_responses_api(resp: Any, prefix: str = "") -> StepPart:
    """One Responses API object -> one step part: the logprobs of all its ``output_text`` parts, in order."""
    if not isinstance(resp, dict):
        raise FieldError(prefix or "response", resp, f"must be an object, got {type_name(resp)}")
    output = resp.get("output")
    if not isinstance(output, list):
        raise FieldError(f"{prefix}output", output, f"must be a list, got {type_name(output)}")
    parts: list[StepPart] = []
    texts: list[str] = []
    n_text = 0
    for i, item in enumerate(output):
        if not isinstance(item, dict):
            raise FieldError(f"{prefix}output[{i}]", item, f"must be an object, got {type_name(item)}")
        typ = item.get("type")
        if typ == "function_call":
            texts.append(f"{item.get('name')}({item.get('arguments')})")
            continue
        if typ != "message":
            continue
        content = item.get("content")
        if not isinstance(content, list):
            raise FieldError(f"{prefix}output[{i}].content", content,
                             f"must be a list, got {type_name(content)}")
        for j, c in enumerate(content):
            if not isinstance(c, dict) or c.get("type") != "output_text":
                continue
            n_text += 1
            f = f"{prefix}output[{i}].content[{j}].logprobs"
            lp = c.get("logprobs")
            if lp is None:
                raise MissingLogprobs(f, None, "no logprobs (request include=['message.output_text.logprobs'])",
                                      has_value=False)
            part = token_list(lp, f)
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
    part = concat_parts(parts) if parts else empty_part()
    part.text = "".join(texts) if texts else None
    return part
