"""Tool lines of a call log: a line without an LLM response that records a tool call and its observation.

Many agent loggers write one line per LLM call and one per tool call, e.g.
``{"trajectory_id": "t1", "step": 2, "tool": "calculator", "input": "3*4", "observation": "12"}``. Such a line
becomes the ``tool`` and ``observation`` (and ``error``, ``latency_s``) of the LLM call it follows:

- the call with the same ``step`` value logged before the line, else the last call with a smaller ``step``
  (a logger that numbers the tool line like the call after it is read right too);
- without ``step`` values (on the line or on the calls): the call read just before the line in the file.

A tool the call's own response already names (an OpenAI ``tool_calls`` entry) is kept; the observation of a
tool line replaces the one guessed from the next request's messages, and several tool lines of one call are
joined in order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..traces import tool_json
from .stepdetail import as_text, latency

# the keys a tool line is recognised by; ToolEvent / tool_event / attach_tools are the call-log reader's machinery
__all__ = ["TOOL_KEYS", "INPUT_KEYS", "OBSERVATION_KEYS"]

TOOL_KEYS = ("tool", "tool_name", "action", "function")
INPUT_KEYS = ("input", "tool_input", "arguments", "args", "action_input")
OBSERVATION_KEYS = ("observation", "output", "result", "content", "tool_output")
#: ``type`` values that mark a line as a tool call (then ``name`` is the tool's name)
TOOL_TYPES = frozenset({"tool", "tool_call", "tool_result", "observation", "function_call", "action"})


@dataclass
class ToolEvent:
    """What one tool line records, and where it sits among the LLM calls of its trajectory."""

    seq: int              # LLM calls read before this line (file order)
    step: Any             # the line's ``step`` value (None without one)
    tool: str | None      # stored tool JSON
    observation: str | None
    error: str | None
    latency_s: float | None


def _first(obj: dict, keys: tuple) -> tuple[str | None, Any]:
    """(key, value) of the first of ``keys`` with a non-null value, else (None, None)."""
    for k in keys:
        if obj.get(k) is not None:
            return k, obj[k]
    return None, None


def _is_tool_type(obj: dict) -> bool:
    """Whether a line's ``type``/``kind``/``event`` marks it as a tool call (``TOOL_TYPES``)."""
    t = obj.get("type") or obj.get("kind") or obj.get("event")
    return isinstance(t, str) and t.lower() in TOOL_TYPES


def _tool(obj: dict) -> str | None:
    """The stored tool JSON of a tool line (name and arguments), or None without a tool name."""
    _, name = _first(obj, TOOL_KEYS + (("name",) if _is_tool_type(obj) else ()))
    _, args = _first(obj, INPUT_KEYS)
    if isinstance(name, dict):                       # {"tool": {"name": ..., "arguments": ...}}
        args = name.get("arguments", name.get("input", args))
        name = name.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.lstrip()[:1] in ("{", "[") else args
        except ValueError:
            pass
    return tool_json(name, args)


def tool_event(obj: dict, seq: int) -> ToolEvent | None:
    """The tool call / observation a response-less line records, or None when it records neither."""
    tool = _tool(obj)
    key, obs = _first(obj, OBSERVATION_KEYS)
    if tool is None and obs is None:
        return None
    if tool is None and key not in ("observation", "tool_output") and "step" not in obj and not _is_tool_type(obj):
        return None          # a bare "result"/"output"/"content" on an event line is not an observation
    step = obj.get("step")
    step = step if isinstance(step, (int, float, str)) and not isinstance(step, bool) else None
    err = obj.get("error")
    return ToolEvent(seq=seq, step=step, tool=tool, observation=as_text(obs), error=as_text(err),
                     latency_s=latency(obj.get("latency_s")))


def _target(steps: list, ev: ToolEvent) -> int | None:
    """The index in ``steps`` (sorted LLM calls, each with ``.seq`` and ``.order[0]`` its step value) of the
    call ``ev`` follows."""
    if not steps:
        return None
    values = [s.order[0] for s in steps]
    if ev.step is not None and all(v is not None for v in values):
        try:       # the same step's call when it was logged before the tool line (else it is the next call)
            same = [j for j, v in enumerate(values) if v == ev.step and steps[j].seq < ev.seq]
            if same:
                return same[-1]
            before = [j for j, v in enumerate(values) if v < ev.step]
            return before[-1] if before else 0
        except TypeError:                            # step values of mixed types: fall back to file order
            pass
    before = [j for j, s in enumerate(steps) if s.seq < ev.seq]
    return max(before, key=lambda j: steps[j].seq) if before else 0


def attach_tools(steps: list, details: list[dict], events: list[ToolEvent]) -> None:
    """Put each tool line's tool / observation / error / latency into the detail of the call it follows."""
    explicit: dict[int, list[str]] = {}
    for ev in events:
        j = _target(steps, ev)
        if j is None:
            continue
        d = details[j]
        if ev.tool is not None and "tool" not in d:
            d["tool"] = ev.tool
        if ev.observation is not None:
            explicit.setdefault(j, []).append(ev.observation)
        if ev.error is not None:
            d["error"] = ev.error if "error" not in d else d["error"] + "\n\n" + ev.error
        if ev.latency_s is not None and "latency_s" not in d:
            d["latency_s"] = ev.latency_s
    for j, obs in explicit.items():
        details[j]["observation"] = "\n\n".join(obs)
