"""Replaying a recorded demo-agent run: the step fields the recording did not keep, recovered exactly.

The demo agent (``runner.run_agent``) is deterministic around the model: its prompt is built by
``system_prompt``/``few_shot`` and each action is executed by the deterministic tools of ``tools``. Given the
texts the model generated (kept in every recording), ``replay_steps`` rebuilds, step by step, the messages
that came into each call (``input``: the whole prompt for the first call, then the observation turn), the
action taken (``tool``), the tool's result (``observation``; a tool's ``Error: ...`` result is also the step's
``error``), the same way the runner does. ``sample_runs/add_step_fields.py`` uses it to complete the shipped
sample runs; nothing about the model's tokens changes.
"""

from __future__ import annotations

from typing import Any

from .runner import FINAL, parse_action, INVALID_REPLY, TOOL_OF_FAMILY, few_shot, system_prompt
from .tools import run_tool

__all__ = ["INVALID_REPLY", "replay_steps", "observation_of", "messages_text"]


def messages_text(messages: list[dict]) -> str:
    """Chat messages as one text (the same form the call-log reader gives a step's input)."""
    if len(messages) == 1:
        return messages[0]["content"]
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


def observation_of(text: str) -> tuple[dict | None, str | None]:
    """(tool call, observation) of one generated step text, as the runner derives them; (None, None) for a
    final answer."""
    if FINAL.search(text):
        return None, None
    action = parse_action(text)
    if action:
        return {"name": action[0], "arguments": action[1]}, run_tool(*action)
    return None, INVALID_REPLY


def replay_steps(family: str, question: str, texts: list[str]) -> list[dict[str, Any]]:
    """The step fields (``input``, ``tool``, ``observation``, ``error``) of a run of ``family`` on ``question``
    whose model outputs were ``texts`` (one per step, in order)."""
    if family not in TOOL_OF_FAMILY:
        raise ValueError(f"family must be one of {', '.join(TOOL_OF_FAMILY)}, got {family!r}")
    tool = TOOL_OF_FAMILY[family]
    pending = [{"role": "system", "content": system_prompt(tool)}, *few_shot(tool),
               {"role": "user", "content": f"Question: {question}"}]
    out = []
    for text in texts:
        fields: dict[str, Any] = {"input": messages_text(pending)}
        call, obs = observation_of((text or "").strip())
        if call is not None:
            fields["tool"] = call
        if obs is not None:
            fields["observation"] = obs
            if obs.startswith("Error"):
                fields["error"] = obs
        out.append(fields)
        if obs is None:
            break
        pending = [{"role": "user", "content": f"Observation: {obs}"}]
    return out
