"""Structural flags: plain facts about a run that explain a low confidence before any statistic does.

Each flag is computed from what the trace set holds (answer, gold, step texts, the run's metadata, and step
observations or errors where a reader kept them). A flag that the data cannot decide is missing (``<NA>``),
never False: a run without step texts is not "free of repeated actions", it is unknown.

=====================  =================================================================================
flag                   true when
=====================  =================================================================================
no_final_answer        the run has no answer (none recorded, none a final-answer tool call or its last step's
                       text states: ``formats.answers``) and it really ended without one: its last step called
                       a tool or wrote an ``Action:``, generated nothing, or the run stopped at a limit.
                       Unknown when the last step's text states neither an answer nor an action
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

from ..formats.answers import run_ended_without_answer

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
    """The structural flags of the runs of a trace set (made by :func:`structural_flags`).

    A flag the data cannot decide for a run is ``<NA>``, never False.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per trajectory (the trace set's order), one nullable boolean column per flag of
        :data:`FLAGS`.
    available : list of str
        The flags the data could decide for at least one run.

    Examples
    --------
    >>> import json, os, tempfile
    >>> from htc_core.formats import load
    >>> from htc_core.explain.flags import structural_flags
    >>> runs = [{"id": "ok", "success": True, "answer": "42", "gold": "42", "steps": [
    ...             {"name": "s0", "logprobs": [-0.1, -0.2], "text": "Action: calculator[40 + 2]"},
    ...             {"name": "s1", "logprobs": [-0.1], "text": "Final Answer: 42"}]},
    ...         {"id": "cut", "success": False, "gold": "42", "metadata": {"stop_reason": "step_limit"}, "steps": [
    ...             {"name": "s0", "logprobs": [-0.3], "text": "Action: search[answer]"},
    ...             {"name": "s1", "logprobs": [-0.9], "text": "Action: search[answer]"}]}]
    >>> path = os.path.join(tempfile.mkdtemp(), "runs.jsonl")
    >>> with open(path, "w") as fh:
    ...     for run in runs:
    ...         print(json.dumps(run), file=fh)
    >>> ts, _ = load(path)
    >>> flags = structural_flags(ts)
    >>> flags.frame[["no_final_answer", "step_limit", "repeated_action"]]
       no_final_answer  step_limit  repeated_action
    0            False        <NA>            False
    1             True        True             True
    >>> "tool_error" in flags.available                     # no step observations: cannot be decided
    False
    """

    frame: pd.DataFrame
    available: list[str]

    def of(self, i: int) -> list[str]:
        """The raised flags of trajectory ``i`` in words, most telling first.

        Parameters
        ----------
        i : int
            The trajectory's position in the trace set.

        Returns
        -------
        list of str
            The descriptions (:data:`FLAGS`) of its flags that are True.

        Examples
        --------
        >>> import json, os, tempfile
        >>> from htc_core.formats import load
        >>> from htc_core.explain.flags import structural_flags
        >>> runs = [{"id": "ok", "success": True, "answer": "42", "gold": "42", "steps": [
        ...             {"name": "s0", "logprobs": [-0.1, -0.2], "text": "Action: calculator[40 + 2]"},
        ...             {"name": "s1", "logprobs": [-0.1], "text": "Final Answer: 42"}]},
        ...         {"id": "cut", "success": False, "gold": "42", "metadata": {"stop_reason": "step_limit"}, "steps": [
        ...             {"name": "s0", "logprobs": [-0.3], "text": "Action: search[answer]"},
        ...             {"name": "s1", "logprobs": [-0.9], "text": "Action: search[answer]"}]}]
        >>> path = os.path.join(tempfile.mkdtemp(), "runs.jsonl")
        >>> with open(path, "w") as fh:
        ...     for run in runs:
        ...         print(json.dumps(run), file=fh)
        >>> ts, _ = load(path)
        >>> flags = structural_flags(ts)
        >>> flags.of(0)
        []
        >>> flags.of(1)
        ['ended without a final answer', 'stopped at its step or token limit', 'repeated the same action']
        """
        row = self.frame.iloc[i]
        return [FLAGS[f] for f in FLAGS if row[f] is not pd.NA and bool(row[f])]

    def counts(self) -> pd.Series:
        """How many runs raise each flag (unknown counts as not raised).

        Returns
        -------
        pandas.Series
            Counts by flag name, in the order of :data:`FLAGS`.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.explain.flags import structural_flags
        >>> ts, _ = load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")
        >>> structural_flags(ts).counts()
        no_final_answer    0
        step_limit         0
        tool_error         1
        repeated_action    0
        empty_output       0
        answer_format      0
        dtype: int64
        """
        return self.frame.fillna(False).astype(bool).sum()

    def to_frame(self) -> pd.DataFrame:
        """A copy of the flags' frame: one row per trajectory, one nullable boolean column per flag.

        Returns
        -------
        pandas.DataFrame
            A copy of ``frame``.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.explain.flags import structural_flags
        >>> ts, _ = load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")
        >>> table = structural_flags(ts).to_frame()
        >>> table.shape, str(table["tool_error"].dtype)
        ((8, 6), 'boolean')
        """
        return self.frame.copy()


def _blank(v) -> bool:
    """Whether ``v`` is None, NaN or whitespace."""
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
    """The structural flags of every trajectory of the trace set ``ts``.

    Computed over the trace set's columns: per-run reductions are numpy segment sums over the step offsets,
    string rules run once per step text (or once per distinct answer/gold pair and metadata value), and a
    column without text (no step texts, no observations) costs nothing. The same flags, run for run, as the
    per-run rules (``structural_flags_loop``, the reference the tests compare with).

    Parameters
    ----------
    ts : TraceSet
        The runs (answer, gold, step texts, metadata and step observations or errors where the reader kept
        them).

    Returns
    -------
    StructuralFlags
        One row of flags per trajectory.

    Examples
    --------
    A run that stopped at its step limit, repeating its action, beside a clean one:

    >>> import json, os, tempfile
    >>> from htc_core.formats import load
    >>> from htc_core.explain.flags import structural_flags
    >>> runs = [{"id": "ok", "success": True, "answer": "42", "gold": "42", "steps": [
    ...             {"name": "s0", "logprobs": [-0.1, -0.2], "text": "Action: calculator[40 + 2]"},
    ...             {"name": "s1", "logprobs": [-0.1], "text": "Final Answer: 42"}]},
    ...         {"id": "cut", "success": False, "gold": "42", "metadata": {"stop_reason": "step_limit"}, "steps": [
    ...             {"name": "s0", "logprobs": [-0.3], "text": "Action: search[answer]"},
    ...             {"name": "s1", "logprobs": [-0.9], "text": "Action: search[answer]"}]}]
    >>> path = os.path.join(tempfile.mkdtemp(), "runs.jsonl")
    >>> with open(path, "w") as fh:
    ...     for run in runs:
    ...         print(json.dumps(run), file=fh)
    >>> ts, _ = load(path)
    >>> flags = structural_flags(ts)
    >>> flags.counts()[["no_final_answer", "step_limit", "repeated_action", "empty_output"]]
    no_final_answer    1
    step_limit         1
    repeated_action    1
    empty_output       0
    dtype: int64
    """
    n = ts.n_trajectories
    meta = ts.meta
    answers, golds = meta["answer"].to_numpy(dtype=object), meta["gold"].to_numpy(dtype=object)
    offsets = np.asarray(ts.traj_offsets, dtype=np.int64)
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))     # run of every step
    texts = np.asarray(ts.step_text, dtype=object)
    limit = _per_value([meta["metadata"].to_numpy(dtype=object)], lambda m: _step_limit(_metadata(m)), skip="{}")
    cols = {
        "no_final_answer": _no_answer_columns(ts, answers, limit, offsets),
        "step_limit": limit,
        "tool_error": _tool_error_columns(ts, owner, n),
        **_text_columns(texts, owner, offsets),
        "answer_format": _per_value([answers, golds], _answer_format),
    }
    frame = pd.DataFrame({f: pd.arrays.BooleanArray(v & k, ~k) for f, (v, k) in ((f, cols[f]) for f in FLAGS)})
    available = [f for f in FLAGS if bool(cols[f][1].any())]
    return StructuralFlags(frame=frame, available=available)


def no_final_answer(answer, last_text, last_tool, limit) -> object:
    """The ``no_final_answer`` rule of one run (``limit``: its ``step_limit`` flag, True/False/NA)."""
    if not _blank(answer):
        return False
    if limit is not pd.NA and bool(limit):
        return True
    ended = run_ended_without_answer(last_text, last_tool)
    return pd.NA if ended is None else ended


def last_step_of(ts, a: int, b: int) -> tuple:
    """(text, tool) of the last of steps a..b-1 (None, None without steps)."""
    if b <= a:
        return None, None
    tools = (getattr(ts, "step_fields", None) or {}).get("tool")
    return ts.step_text[b - 1], None if tools is None else tools[b - 1]


def _no_answer_columns(ts, answers: np.ndarray, limit: tuple, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """no_final_answer: False where an answer is recorded; the rule of :func:`no_final_answer` for the (few)
    runs without one."""
    n = len(answers)
    blank = np.fromiter(map(_blank, answers), dtype=bool, count=n)
    val, known = np.zeros(n, dtype=bool), ~blank
    for i in np.flatnonzero(blank):
        lim = bool(limit[0][i]) if limit[1][i] else pd.NA
        r = no_final_answer(None, *last_step_of(ts, int(offsets[i]), int(offsets[i + 1])), lim)
        if r is not pd.NA:
            val[i], known[i] = bool(r), True
    return val, known


def _per_value(columns: list, rule, *, skip=None) -> tuple[np.ndarray, np.ndarray]:
    """(value, known) of ``rule(*row)`` over the rows of ``columns`` (object arrays of one length), evaluated once
    per distinct row; ``skip``: a first-column value known to give NA (the common '{}' metadata)."""
    n = len(columns[0])
    val, known = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    codes = [_text_codes(c) for c in columns]
    if all(c is not None for c in codes):      # text or None only: distinct rows by their codes (numpy)
        key = np.zeros(n, dtype=np.int64)
        for c, (_, uniq) in zip(codes, codes):
            key = key * (len(uniq) + 1) + (c[0] + 1)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        out = np.array([_rule_or_skip(rule, [col[i] for col in columns], skip) for i in first], dtype=object)
        res = out[inverse.reshape(-1)]
    else:                                      # other objects (a dict of metadata, numbers): row by row
        res = np.array([_rule_or_skip(rule, list(row), skip) for row in zip(*columns)], dtype=object)
    got = np.fromiter((r is not pd.NA for r in res), dtype=bool, count=n) if n else known
    known[got] = True
    val[got] = res[got].astype(bool)
    return val, known


def _text_codes(values: np.ndarray):
    """(codes, distinct values) when every value is a str or None (None coded -1), else None."""
    if not all(v is None or type(v) is str for v in values):
        return None
    return pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)


def _rule_or_skip(rule, row: list, skip):
    if skip is not None and isinstance(row[0], str) and row[0] == skip:
        return pd.NA
    return rule(*row)


def _segment_any(mask: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(owner[mask], minlength=n) > 0


def _tool_error_columns(ts, owner: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    fields = getattr(ts, "step_fields", None) or {}
    val, known = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    for column in ("observation", "error"):
        values = fields.get(column)
        if values is None:
            continue
        values = np.asarray(values, dtype=object)
        is_str = np.fromiter((isinstance(t, str) for t in values), dtype=bool, count=len(values))
        if not is_str.any():
            continue
        known |= _segment_any(is_str, owner, n)
        idx = np.flatnonzero(is_str)
        hit = np.fromiter((_ERROR.search(t) is not None for t in values[idx]), dtype=bool, count=len(idx))
        val |= _segment_any(idx[hit], owner, n) if hit.any() else False
    return val, known


def _text_columns(texts: np.ndarray, owner: np.ndarray, offsets: np.ndarray) -> dict:
    """repeated_action and empty_output from the step texts (see :func:`_repeated_action`, :func:`_empty_output`)."""
    n = len(offsets) - 1
    n_steps = np.diff(offsets)
    is_str = np.fromiter((isinstance(t, str) for t in texts), dtype=bool, count=len(texts))
    blank = np.zeros(len(texts), dtype=bool)
    idx = np.flatnonzero(is_str)
    blank[idx] = np.fromiter((not t.strip() for t in texts[idx]), dtype=bool, count=len(idx))
    n_str = np.bincount(owner[is_str], minlength=n)
    empty = (_segment_any(blank, owner, n), n_str > 0)
    nonblank = is_str & ~blank
    n_known = np.bincount(owner[nonblank], minlength=n)
    # fewer than two known steps: unknown when a step is unknown (or there are none), else False
    rep_val = np.zeros(n, dtype=bool)
    rep_known = (n_known >= 2) | ((n_known == n_steps) & (n_steps > 0))
    steps = np.flatnonzero(nonblank & (n_known >= 2)[owner])
    if len(steps):
        acts = [[a.lower() for a in _ACTION.findall(t)] for t in texts[steps]]
        n_act = np.bincount(owner[steps], weights=np.fromiter(map(len, acts), dtype=np.int64, count=len(acts)),
                            minlength=n)
        act_owner = np.repeat(owner[steps], [len(a) for a in acts])
        rep_val |= _has_duplicates(act_owner, [a for lst in acts for a in lst], n)
        plain = steps[(n_act == 0)[owner[steps]]]        # runs without Action: lines: compare whole texts
        if len(plain):
            rep_val |= _has_duplicates(owner[plain], [" ".join(t.lower().split()) for t in texts[plain]], n) \
                & (n_act == 0)
    return {"repeated_action": (rep_val, rep_known), "empty_output": empty}


def _has_duplicates(run: np.ndarray, values: list, n: int) -> np.ndarray:
    """Per run: whether one of its values occurs twice (``run[i]`` the run of ``values[i]``)."""
    if not len(values):
        return np.zeros(n, dtype=bool)
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    key = run.astype(np.int64) * max(len(uniq), 1) + codes.astype(np.int64)
    distinct = np.bincount(np.unique(key) // max(len(uniq), 1), minlength=n)
    return np.bincount(run, minlength=n) > distinct


# ------------------------------------------------------------ the per-run reference
# The per-run reference of :func:`htc_core.explain.flags.structural_flags`: one Python loop over the runs, the
# rules written out one trajectory at a time.
# 
# This was the implementation until the flags were computed over the trace set's columns (numpy over the
# step offsets, string work once per step or per distinct value). It is kept, unchanged, as the plain reference
# the tests compare the fast version with (identical frames on hand-made runs, ``sample_runs/`` and the shared
# data) and that ``python -m htc_dev.bench flags`` times it against. Not for use elsewhere.
def structural_flags_loop(ts) -> StructuralFlags:
    """The structural flags of every trajectory of ``ts``, one run at a time (the reference)."""
    meta = ts.meta
    answers, golds = meta["answer"].to_numpy(dtype=object), meta["gold"].to_numpy(dtype=object)
    metas = meta["metadata"].to_numpy(dtype=object)
    offsets = ts.traj_offsets
    texts = ts.step_text
    rows = []
    for i in range(ts.n_trajectories):
        a, b = int(offsets[i]), int(offsets[i + 1])
        steps = list(texts[a:b])
        limit = _step_limit(_metadata(metas[i]))
        rows.append({
            "no_final_answer": no_final_answer(answers[i], *last_step_of(ts, a, b), limit),
            "step_limit": limit,
            "tool_error": _tool_error(_step_notes(ts, a, b)),
            "repeated_action": _repeated_action(steps),
            "empty_output": _empty_output(steps),
            "answer_format": _answer_format(answers[i], golds[i]),
        })
    frame = pd.DataFrame(rows, columns=list(FLAGS)).astype("boolean")
    available = [f for f in FLAGS if frame[f].notna().any()]
    return StructuralFlags(frame=frame, available=available)
