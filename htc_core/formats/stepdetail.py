"""The optional diagnosis fields of a step (``input``, ``tool``, ``observation``, ``error``, ``latency_s``;
DESIGN.md section 2) as every reader fills them, plus the chat-message helpers the call-log, smolagents and
ATIF readers share.

Texts are kept whole (never cut); a value that is not text (a JSON object as error, say) is kept as its JSON
text. A malformed ``tool`` or ``latency_s`` is reported as a warning and only that field is dropped: the
step and its trajectory are kept.
"""

from __future__ import annotations

import json
import math
from itertools import chain
from typing import Any

from ..report import LoadReport
from ..traces import STEP_FIELDS, tool_json
from .common import text_of

# internal: the readers' shared helpers (the diagnosis fields are read by every reader's read function)
__all__: list[str] = []

_FIELD_SET = frozenset(STEP_FIELDS)


def as_text(value: Any) -> str | None:
    """A step text field: a string as is, content parts joined, any other JSON value as its JSON text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, (dict, str)) for p in value):
        t = text_of(value)
        if t:
            return t
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def latency(value: Any) -> float | None:
    """A latency in seconds when ``value`` is a finite number >= 0 (bool is not a number), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if math.isfinite(v) and v >= 0 else None


def tool_value(value: Any) -> str | None:
    """The stored JSON of a step's ``tool`` field: ``{"name": ..., "arguments": ...}`` or a bare name."""
    if isinstance(value, str):
        return tool_json(value)
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return tool_json(value["name"], value.get("arguments"))
    return None


def detail_lists(rows: list[dict | None]) -> dict[str, list] | None:
    """Per-step dicts of fields into per-field lists (None when no step carries any)."""
    if not any(rows):
        return None
    names = [f for f in STEP_FIELDS if any(r and r.get(f) is not None for r in rows)]
    return {f: [r.get(f) if r else None for r in rows] for f in names} or None


def native_detail(steps: list, report: LoadReport, file: str, line: int | None, tid: str
                  ) -> dict[str, list] | None:
    """The diagnosis fields of the kept (non-empty) steps of an htc-trace line, validated; None when no step
    has any. Called only on steps that passed validation, so each is a dict with a ``logprobs`` list (or array).

    Column at a time: text fields that are all strings (the usual case) are taken as they are."""
    keys = set(chain.from_iterable(steps)) & _FIELD_SET
    if not keys:
        return None
    kept = [(i, st) for i, st in enumerate(steps) if len(st["logprobs"])]  # an empty step is dropped: its fields too
    out: dict[str, list] = {}
    for f in STEP_FIELDS:
        if f not in keys:
            continue
        vals = [st.get(f) for _, st in kept]
        if f in ("input", "observation", "error"):
            if not set(map(type, vals)) <= _STR_OR_NONE:
                vals = [as_text(v) for v in vals]
        else:
            vals = [_checked(f, v, i, report, file, line, tid) if v is not None else None
                    for (i, _), v in zip(kept, vals)]
        if any(v is not None for v in vals):
            out[f] = vals
    return out or None


_STR_OR_NONE = {str, type(None)}


def _checked(f: str, v: Any, i: int, report: LoadReport, file: str, line: int | None, tid: str) -> Any:
    """A step's ``tool`` (as stored JSON) or ``latency_s``; None with a warning when malformed."""
    if f == "latency_s":
        lat = latency(v)
        if lat is None:
            report.warn(file, line, "latency_s must be a number of seconds >= 0; field ignored",
                        field=f"steps[{i}].latency_s", value=v, trajectory_id=tid)
        return lat
    t = tool_value(v)
    if t is None:
        report.warn(file, line, "tool must be {\"name\": ..., \"arguments\": ...} or a name; field ignored",
                    field=f"steps[{i}].tool", value=v, trajectory_id=tid)
    return t


# ----------------------------------------------------------------- chat messages (call logs, smolagents)
def new_messages(messages: list) -> list:
    """The messages after the last assistant message: what came into this call beyond what the previous
    call saw (its own output included). All of them when there is no assistant message yet."""
    last = -1
    for j, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            last = j
    return [m for m in messages[last + 1:] if isinstance(m, dict)]


def _message_text(m: dict) -> str:
    """A message's content as text (``""`` when it has none)."""
    return text_of(m.get("content")) or ""


def messages_text(messages: list) -> str | None:
    """Messages as one text: each under a ``[role]`` header (a single message: its text alone)."""
    msgs = [m for m in messages if isinstance(m, dict)]
    if not msgs:
        return None
    if len(msgs) == 1:
        return _message_text(msgs[0])
    return "\n\n".join(f"[{m.get('role', '?')}]\n{_message_text(m)}" for m in msgs)


def tool_results(messages: list) -> str | None:
    """The observation carried by the new messages of the next call: its tool-role messages when it has
    some, else its other non-system messages (a ReAct agent feeds the observation back as a user turn)."""
    msgs = [m for m in messages if isinstance(m, dict) and m.get("role") != "system"]
    tools = [m for m in msgs if m.get("role") in ("tool", "function", "tool-response")]
    pick = tools or msgs
    if not pick:
        return None
    return "\n\n".join(_message_text(m) for m in pick)


def tool_of_message(msg: Any) -> str | None:
    """The first tool call of an assistant message (OpenAI ``tool_calls[].function`` or smolagents'
    ``tool_calls[].function``), as stored JSON; None without one."""
    if not isinstance(msg, dict):
        return None
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        fn = calls[0].get("function") if isinstance(calls[0].get("function"), dict) else calls[0]
        name = fn.get("name") or fn.get("function_name")
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        if isinstance(name, str):
            return tool_json(name, args)
    return None
