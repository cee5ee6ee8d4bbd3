"""View-model of the inspector's trajectory: each step's input, output tokens by probability (lowest marked),
tool call, observation, error and latency, with the calibrated confidence after the step; the final answer
next to the gold answer. No Streamlit here (the panel that draws it is ``trajectory_panel``).

Which steps open by default: the two that lowered the calibrated confidence most, the last step, and every
step of a failed run of at most ``OPEN_ALL_UP_TO`` steps (so a failure's observations are on screen without a
click). Every step also gets a one-line summary (tool call and observation preview) outside its fold.
Texts are never cut silently: a preview says how much more there is, and the whole text is one click away.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ..explain import token_steps
from ..traces import TraceSet, tool_of

__all__ = ["StepView", "TrajectoryView", "trajectory_view", "preview", "bounded", "FOLD_CHARS", "OPEN_ALL_UP_TO",
           "TEXT_ON_PAGE", "LINE_ON_PAGE"]

#: texts longer than this (or with more lines than FOLD_LINES) are folded behind a preview
FOLD_CHARS = 600
FOLD_LINES = 12
#: a failed run with at most this many steps shows every step open
OPEN_ALL_UP_TO = 8
#: tokens coloured per trajectory (the rest of a long run is shown as text, with a note)
MAX_TOKENS = 4000


def preview(text: str | None, chars: int = FOLD_CHARS, lines: int = FOLD_LINES) -> tuple[str, int]:
    """(the start of ``text`` to show, how many characters are left out); nothing is left out of a short text."""
    if text is None:
        return "", 0
    cut = len(text) if len(text) <= chars else chars
    nl = -1
    for _ in range(lines):
        nl = text.find("\n", nl + 1)
        if nl < 0:
            break
    if nl >= 0 and nl < cut:
        cut = nl
    return text[:cut], len(text) - cut


#: the most characters of one text put on the page, and the longest line: a longer text shows its start (long
#: lines wrapped) and a download of the whole; a megabyte of text in the page freezes the browser tab for minutes
TEXT_ON_PAGE = 20_000
LINE_ON_PAGE = 1_000


def change_words(change: float | None) -> str:
    """A step's change of confidence for its summary line: " (+0.12)", or " (change under 0.01)" where two decimals
    would write "-0.00" (a confidence already under 0.001 moving by a hair); "" when there is no change to show."""
    if change is None or not np.isfinite(change):
        return ""
    return " (change under 0.01)" if abs(change) < 0.005 else f" ({change:+.2f})"


def bounded(text: str | None, chars: int = TEXT_ON_PAGE, line: int = LINE_ON_PAGE) -> tuple[str, bool]:
    """(what of ``text`` goes on the page, whether that is not all of it): at most ``chars`` characters, lines
    longer than ``line`` broken every ``line`` characters (a 1 MB unbroken answer is laid out in no time)."""
    if text is None:
        return "", False
    text = str(text)
    head = text[:chars]
    if max(map(len, head.split("\n"))) <= line:
        return head, len(head) < len(text)
    wrapped = "\n".join(part[i:i + line] for part in head.split("\n") for i in range(0, max(len(part), 1), line))
    return wrapped, True


@dataclass
class StepView:
    step: int
    name: str
    output: str | None
    tokens: list                  # token strings; empty when the source kept none (``probability`` has them all)
    probability: np.ndarray
    n_tokens: int                 # tokens of the step (``probability`` may hold fewer: MAX_TOKENS per run)
    has_token_text: bool
    marked: list = field(default_factory=list)   # positions in ``probability`` of the lowest-probability token(s)
    input: str | None = None
    tool_name: str | None = None
    tool_arguments: str | None = None
    observation: str | None = None
    error: str | None = None
    latency_s: float | None = None
    confidence: float | None = None   # calibrated confidence after this step
    change: float | None = None       # and its change from the step before
    open: bool = False

    @property
    def lowest(self) -> list[tuple[str, float]]:
        """(token, p) of the marked tokens; without token strings the token is named by its position
        (``"token 7 of 40"``)."""
        if self.has_token_text:
            return [(self.tokens[j], float(self.probability[j])) for j in self.marked]
        return [(f"token {j + 1} of {self.n_tokens}", float(self.probability[j])) for j in self.marked]

    @property
    def lowest_text(self) -> list[str]:
        """The marked tokens for display: the token's text quoted, or its position."""
        return [f"{t if len(t) <= 200 else t[:200] + '…'!r} p = {p:.3f}" if self.has_token_text
                else f"{t} (p = {p:.3f})" for t, p in self.lowest]   # a hostile token can be a megabyte

    @property
    def tool_call(self) -> str | None:
        if self.tool_name is None:
            return None
        return f"{self.tool_name}[{self.tool_arguments or ''}]"


@dataclass
class TrajectoryView:
    id: str
    question: str | None
    answer: str | None
    gold: str | None
    success: bool | None
    steps: list[StepView]
    fields: list[str]             # the step fields the source carried (input, tool, observation, ...)

    @property
    def answered(self) -> bool:
        return self.answer is not None and str(self.answer).strip() != ""

    @property
    def verdict(self) -> str:
        if self.success is None:
            return "no label"
        return "correct" if self.success else "wrong"

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for s in self.steps:
            d = asdict(s)
            d.pop("tokens"), d.pop("probability"), d.pop("marked")
            d["lowest_tokens"] = "; ".join(s.lowest_text)
            rows.append(d)
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        return {"id": self.id, "question": self.question, "answer": self.answer, "gold": self.gold,
                "success": self.success, "fields": list(self.fields), "steps": self.to_frame().to_dict("records")}


def _marked(prob: np.ndarray) -> list[int]:
    """The lowest-probability token, and the second lowest too when it is below 0.5."""
    if len(prob) == 0:
        return []
    order = np.argsort(prob, kind="stable")
    out = [int(order[0])]
    if len(order) > 1 and prob[order[1]] < 0.5:
        out.append(int(order[1]))
    return sorted(out)


def _text(v) -> str | None:
    return None if v is None or (isinstance(v, float) and v != v) else str(v)


def trajectory_view(ts: TraceSet, index: int, *, after: pd.DataFrame | None = None, profile: str = "paper",
                    top_k: int = 5, n_open: int = 2) -> TrajectoryView:
    """The view of trajectory ``index`` of ``ts``; ``after``: :func:`htc_core.explain.confidence_after_steps`
    of it (a ``confidence`` per step), when a calibrator is at hand."""
    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    if not (0 <= int(index) < ts.n_trajectories):
        raise ValueError(f"index must be a trajectory of the set (0..{ts.n_trajectories - 1}), got {index!r}")
    a, b = int(ts.traj_offsets[index]), int(ts.traj_offsets[index + 1])
    toks = token_steps(ts, index, profile=profile, top_k=top_k, max_tokens=MAX_TOKENS)
    f = ts.step_fields
    conf = None if after is None else np.asarray(after["confidence"], dtype=np.float64)
    steps = []
    for k, s in enumerate(range(a, b)):
        t = toks[k]
        tool = tool_of(f["tool"][s]) if "tool" in f else None
        args = None if tool is None else tool.get("arguments")
        lat = float(f["latency_s"][s]) if "latency_s" in f and np.isfinite(f["latency_s"][s]) else None
        steps.append(StepView(
            step=k + 1, name=str(ts.step_name[s] or ""), output=_text(ts.step_text[s]), tokens=t.tokens,
            probability=t.probability, n_tokens=int(ts.step_offsets[s + 1] - ts.step_offsets[s]),
            has_token_text=t.has_token_text, marked=_marked(t.probability),
            input=_text(f["input"][s]) if "input" in f else None,
            tool_name=None if tool is None else str(tool.get("name")),
            tool_arguments=None if args is None else (args if isinstance(args, str) else _json(args)),
            observation=_text(f["observation"][s]) if "observation" in f else None,
            error=_text(f["error"][s]) if "error" in f else None, latency_s=lat,
            confidence=None if conf is None else float(conf[k]),
            change=None if conf is None or k == 0 else float(conf[k] - conf[k - 1])))
    meta = ts.meta.iloc[index]
    success = meta["success"]
    view = TrajectoryView(id=str(meta["id"]), question=_text(meta["question"]), answer=_text(meta["answer"]),
                          gold=_text(meta["gold"]), success=None if pd.isna(success) else bool(success),
                          steps=steps, fields=[n for n in f])
    _open(view, n_open)
    return view


def _json(v) -> str:
    import json

    return json.dumps(v, ensure_ascii=False, default=str)


def _open(view: TrajectoryView, n_open: int) -> None:
    steps = view.steps
    if not steps:
        return
    drops = sorted((s for s in steps if s.change is not None and s.change < 0), key=lambda s: s.change)
    for s in drops[:n_open]:
        s.open = True
    steps[-1].open = True
    if view.success is False and len(steps) <= OPEN_ALL_UP_TO:
        for s in steps:
            s.open = True
