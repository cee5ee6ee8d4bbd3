"""Structural flags: plain facts about a run that explain a low confidence before any statistic does.

Each flag is computed from what the trace set holds (answer, gold, step texts, the run's metadata, and step
observations or errors where a reader kept them). A flag that the data cannot decide is missing (``<NA>``),
never False: a run without step texts is not "free of repeated actions", it is unknown.

=====================  =================================================================================
flag                   true when
=====================  =================================================================================
no_final_answer        the run has no answer (missing or blank)
step_limit             the run stopped at its step or token limit (metadata ``stop_reason`` /
                       ``finish_reason`` / ``status`` naming a limit, e.g. ``step_limit``, ``max_steps``,
                       ``length``)
tool_error             an observation or error of a step reports an error (``Error``, ``Exception``,
                       ``Traceback``); needs step observations or errors
repeated_action        two steps of the run take the same action (the same ``Action:`` line, or the same
                       whole step text when the steps have no ``Action:`` line)
empty_output           a step generated only whitespace
answer_format          the answer does not have the gold's form: gold is a number but the answer is not,
                       gold is yes/no but the answer is not, or the answer is more than five times as long
                       as the gold (and 40 characters longer)
=====================  =================================================================================
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["FLAGS", "StructuralFlags", "structural_flags"]

FLAGS: dict[str, str] = {
    "no_final_answer": "ended without a final answer",
    "step_limit": "stopped at its step or token limit",
    "tool_error": "a tool reported an error",
    "repeated_action": "repeated the same action",
    "empty_output": "a step generated nothing",
    "answer_format": "the answer does not have the gold answer's form",
}

_LIMIT_KEYS = ("stop_reason", "finish_reason", "status", "termination", "stopped_by")
_LIMIT = re.compile(r"limit|max_?(steps|iter|turns|tokens)|length|truncat|timeout", re.IGNORECASE)
_ERROR = re.compile(r"\b(error|exception|traceback)\b", re.IGNORECASE)
_ACTION = re.compile(r"^\s*Action\s*(?:\d+)?\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_NUMBER = re.compile(r"^[-+]?[$€£]?\s*\d[\d,]*(\.\d+)?\s*%?$")
_YES_NO = {"yes", "no", "true", "false"}


@dataclass
class StructuralFlags:
    """``frame``: one row per trajectory (same order as the trace set), one nullable boolean column per flag
    in :data:`FLAGS`; ``available``: the flags the data could decide for at least one run."""

    frame: pd.DataFrame
    available: list[str]

    def of(self, i: int) -> list[str]:
        """The raised flags of trajectory ``i`` in words, most telling first."""
        row = self.frame.iloc[i]
        return [FLAGS[f] for f in FLAGS if row[f] is not pd.NA and bool(row[f])]

    def counts(self) -> pd.Series:
        """How many runs raise each flag (unknown counts as not raised)."""
        return self.frame.fillna(False).astype(bool).sum()

    def to_frame(self) -> pd.DataFrame:
        return self.frame.copy()


def _blank(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and not v.strip())


def _metadata(raw) -> dict:
    if isinstance(raw, dict):
        return raw
    if raw == "{}":           # the common case (no metadata): skips a JSON parse per run at a million runs
        return {}
    try:
        out = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _step_limit(meta: dict):
    values = [str(meta[k]) for k in _LIMIT_KEYS if k in meta and meta[k] is not None]
    if not values:
        return pd.NA
    return any(_LIMIT.search(v) for v in values)


def _repeated_action(texts: list) -> object:
    known = [t for t in texts if isinstance(t, str) and t.strip()]
    if len(known) < 2:
        return pd.NA if len(known) < len(texts) or not texts else False
    actions = [m.group(1).lower() for t in known for m in _ACTION.finditer(t)]
    if actions:
        return len(actions) != len(set(actions))
    norm = [" ".join(t.lower().split()) for t in known]
    return len(norm) != len(set(norm))


def _empty_output(texts: list) -> object:
    known = [t for t in texts if isinstance(t, str)]
    if not known:
        return pd.NA
    return any(not t.strip() for t in known)


def _answer_format(answer, gold) -> object:
    if _blank(answer) or _blank(gold):
        return pd.NA
    a, g = str(answer).strip(), str(gold).strip()
    if _NUMBER.match(g):
        return not _NUMBER.match(a)
    if g.lower() in _YES_NO:
        return a.lower().rstrip(".!") not in _YES_NO
    return len(a) > 5 * len(g) and len(a) > len(g) + 40


def _tool_error(notes: list) -> object:
    known = [t for t in notes if isinstance(t, str)]
    if not known:
        return pd.NA
    return any(_ERROR.search(t) for t in known)


def _step_notes(ts, a: int, b: int) -> list:
    """Observations and error texts of steps a..b-1 when the trace set carries them (else an empty list)."""
    out = []
    fields = getattr(ts, "step_fields", None) or {}
    for column in ("observation", "error"):
        values = fields.get(column)
        if values is not None:
            out.extend(values[a:b])
    return out


def structural_flags(ts) -> StructuralFlags:
    """The structural flags of every trajectory of the trace set ``ts``."""
    meta = ts.meta
    answers, golds = meta["answer"].to_numpy(dtype=object), meta["gold"].to_numpy(dtype=object)
    metas = meta["metadata"].to_numpy(dtype=object)
    offsets = ts.traj_offsets
    texts = ts.step_text
    rows = []
    for i in range(ts.n_trajectories):
        a, b = int(offsets[i]), int(offsets[i + 1])
        steps = list(texts[a:b])
        rows.append({
            "no_final_answer": _blank(answers[i]),
            "step_limit": _step_limit(_metadata(metas[i])),
            "tool_error": _tool_error(_step_notes(ts, a, b)),
            "repeated_action": _repeated_action(steps),
            "empty_output": _empty_output(steps),
            "answer_format": _answer_format(answers[i], golds[i]),
        })
    frame = pd.DataFrame(rows, columns=list(FLAGS)).astype("boolean")
    available = [f for f in FLAGS if frame[f].notna().any()]
    return StructuralFlags(frame=frame, available=available)
