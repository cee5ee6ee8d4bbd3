"""OpenAI call logs: JSONL where each line is ONE logged LLM call.

A line holds the raw response (Chat Completions, a streamed chunk or a list of
chunks, Responses API, or legacy completions) either as the line itself or
under a wrapper key (``response``, ``raw_response``, ``completion``,
``output``, ``result``, ``body``, ``raw``; OpenAI Batch output
``{"response": {"body": ...}}`` works too), plus:

- a trajectory id: the key given by ``group_by`` (a dotted path such as
  ``metadata.session`` is allowed), or by default the first of
  ``trajectory_id``, ``trace_id``, ``run_id``, ``session_id``,
  ``conversation_id`` found on the line or in its ``metadata`` object. Lines
  without an id form one trajectory named after the file (with a warning);
- an order: steps are sorted by ``step``, else ``created``, else
  ``timestamp`` (the first key that every call of the trajectory has, on the
  line or in the response), file order breaking ties and serving when none
  is complete.

Lines with no LLM response are not steps. A tool line (``tool``/``tool_name``/
``action`` with ``input``/``arguments``, and ``observation``/``output``/
``result``/``content``, and an ``error``) becomes the tool call and
observation of the LLM call it follows: the call with the same ``step``, else
the last call with a smaller ``step``, else the call read just before it in the
file (``calllog_tools``). Other lines (events) are counted in
``report.skipped_lines``. Lines with the trajectory id give their
``success``/``question``/``answer``/``gold``/``dataset``/``model``/
``verbalized_confidence`` fields to the trajectory. Streamed
calls logged one chunk per line are reassembled by the chunk ``id``.

Trajectories are grouped within a file; the same id in a later file is kept
as ``id@file-stem`` with a warning (as for every format).

Memory: each call is turned into numpy arrays as soon as its line is read;
trajectories are grouped by id as per-trajectory step lists of those arrays,
never by holding raw JSON. A broken line rejects the trajectory it belongs to
(when its id can still be read from the raw bytes) and nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from .answers import question_of_request
from .calllog_tools import ToolEvent, attach_tools, tool_event
from .common import FieldError, MissingLogprobs, type_name
from .containers import responses_of
from .inputs import Inputs, read_with
from .jsonio import ParseError, iter_reported_lines, loads
from .logprobs import StepPart, concat_parts, empty_part
from .stepdetail import as_text, latency, messages_text, new_messages, tool_of_message, tool_results
from .records import ID_KEYS, RecordSink, TrajAcc, fail, guarded, stem, take_meta
from .shapes import RESPONSE_KEYS, find_response, is_chunk, parse_chunk, parse_response, response_model

NAME = "openai-calllog"
ORDER_KEYS = ("step", "created", "timestamp")
DEFAULT_GROUP_KEYS = ID_KEYS

__all__ = ["read", "read_file", "ORDER_KEYS", "DEFAULT_GROUP_KEYS"]


class _Step:
    """One logged call of a trajectory: its position, order keys, parsed parts and step details."""

    __slots__ = ("seq", "line", "name", "order", "parts", "missing", "new_msgs", "all_msgs", "detail")

    def __init__(self, seq: int, line: int, name: str, order: tuple):
        self.seq = seq
        self.line = line
        self.name = name
        self.order = order
        self.parts: list[StepPart] = []
        self.missing: MissingLogprobs | None = None
        self.new_msgs: list = []   # the request messages after the last assistant one (what came in)
        self.all_msgs: list | None = None  # every request message, kept for a trajectory's first call only
        self.detail: dict = {}     # tool / error / latency_s of the call


def _call_detail(step: _Step, obj: dict, resp: Any, first: bool) -> None:
    """What a logged call says about its step beyond the logprobs: the request's new messages (all of them
    for the ``first`` call of its trajectory in the file), the tool call of the response message, the line's
    ``error`` and ``latency_s``."""
    req = obj.get("request")
    msgs = req.get("messages") if isinstance(req, dict) else None
    if isinstance(msgs, list):
        step.new_msgs = new_messages(msgs)
        if first:
            step.all_msgs = [m for m in msgs if isinstance(m, dict)]
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        t = tool_of_message(choices[0].get("message"))
        if t:
            step.detail["tool"] = t
    if obj.get("error") is not None:
        step.detail["error"] = as_text(obj["error"])
    lat = latency(obj.get("latency_s"))
    if lat is not None:
        step.detail["latency_s"] = lat


def _step_details(steps: list[_Step]) -> list[dict]:
    """Per call in order: input = its new request messages (the whole prompt for the first call), observation
    = the tool results (else the new turn) that the next call's request brought, plus the call's own tool /
    error / latency."""
    out = []
    for j, st in enumerate(steps):
        d = dict(st.detail)
        inp = messages_text(st.all_msgs if j == 0 and st.all_msgs else st.new_msgs)
        if inp is not None:
            d["input"] = inp
        if j + 1 < len(steps):
            obs = tool_results(steps[j + 1].new_msgs)
            if obs is not None:
                d["observation"] = obs
        out.append(d)
    return out


class _Group(TrajAcc):
    """The trajectory of one id being grouped."""


def _get_path(obj: dict, path: str) -> Any:
    """The value at a dotted path (``metadata.session``) of nested objects, or None."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _scalar_id(v: Any) -> str | None:
    """A scalar id as text (None for a missing, blank, boolean or nested value)."""
    if v is None or isinstance(v, (dict, list, bool)):
        return None
    s = str(v)
    return s if s.strip() else None


def group_id(obj: dict, group_by: str | None) -> str | None:
    """The trajectory id of a line: its ``group_by`` value, else the first of ``DEFAULT_GROUP_KEYS``."""
    if group_by:
        return _scalar_id(_get_path(obj, group_by) if "." in group_by else obj.get(group_by))
    for k in DEFAULT_GROUP_KEYS:
        v = obj.get(k)
        if v is not None:
            return _scalar_id(v)
    md = obj.get("metadata")
    if isinstance(md, dict):
        for k in DEFAULT_GROUP_KEYS:
            v = md.get(k)
            if v is not None:
                return _scalar_id(v)
    return None


def _order_of(obj: dict, resp: Any) -> tuple:
    """The values of ``ORDER_KEYS`` of a call (on the line, else in the response; None where absent)."""
    out = []
    first = resp[0] if isinstance(resp, list) and resp else resp
    for k in ORDER_KEYS:
        v = obj.get(k)
        if v is None and isinstance(first, dict) and k != "step":
            v = first.get(k)
        out.append(v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None)
    return tuple(out)


def _id_regex(group_by: str | None) -> re.Pattern:
    """A regex finding the trajectory id in the raw bytes of a line that is not valid JSON."""
    keys = [group_by.split(".")[-1]] if group_by else list(DEFAULT_GROUP_KEYS)
    alt = "|".join(re.escape(k) for k in keys)
    return re.compile(rb'"(?:' + alt.encode() + rb')"\s*:\s*"((?:[^"\\]|\\.){1,200})"')


def _sort_steps(steps: list[_Step]) -> list[_Step]:
    """Steps in the order of the first ``ORDER_KEYS`` key every step has (file order breaks ties)."""
    for i in range(len(ORDER_KEYS)):
        vals = [s.order[i] for s in steps]
        if any(v is None for v in vals):
            continue
        if all(isinstance(v, (int, float)) for v in vals) or all(isinstance(v, str) for v in vals):
            return sorted(steps, key=lambda s: (s.order[i], s.seq))
    return steps


def read_file(path, *, builder: TraceSetBuilder, report: LoadReport, defaults: dict | None = None,
              group_by: str | None = None, **_: Any) -> None:
    """Read one call-log JSONL file into ``builder``.

    The reader protocol of every format (``htc_core.formats.READERS``): the trajectories go to ``builder``,
    every problem to ``report``. The calls are grouped by trajectory id within the file and ordered by
    ``step``, ``created`` or ``timestamp`` (``ORDER_KEYS``).

    Parameters
    ----------
    path : str or path
        The JSONL file (or ``.jsonl.gz``).
    builder : TraceSetBuilder
        Where the trajectories go.
    report : LoadReport
        Where the problems go.
    defaults : dict, optional
        Metadata filled in where a trajectory has none.
    group_by : str, optional
        The key (a dotted path such as ``metadata.session`` allowed) holding the trajectory id; by default the
        first of ``DEFAULT_GROUP_KEYS`` on the line or in its ``metadata``.
    **_
        Other readers' options (ignored).

    Returns
    -------
    None
        The trajectories are in ``builder``.

    Examples
    --------
    >>> import json, os, tempfile
    >>> from htc_core.formats import openai_calllog
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> def call(text, logprob):
    ...     return {"object": "chat.completion", "choices": [{"message": {"content": text}, "logprobs": {
    ...         "content": [{"token": text, "logprob": logprob, "top_logprobs": []}]}}]}
    >>> lines = [{"metadata": {"session": "s1"}, "step": 1, "response": call("Paris", -0.2)},
    ...          {"metadata": {"session": "s1"}, "step": 0, "response": call("Thinking", -0.1)},
    ...          {"metadata": {"session": "s2"}, "response": call("42", -1.5)}]
    >>> path = os.path.join(tempfile.mkdtemp(), "calls.jsonl")
    >>> with open(path, "w") as fh:
    ...     fh.writelines(json.dumps(line) + "\\n" for line in lines)
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> openai_calllog.read_file(path, builder=builder, report=report, group_by="metadata.session")
    >>> ts = builder.build()
    >>> ts.ids.tolist(), ts.steps_per_trajectory.tolist(), ts.step_text.tolist()
    (['s1', 's2'], [2, 1], ['Thinking', 'Paris', '42'])
    """
    path = Path(path)
    file = str(path)
    log = _CallLog(file, report, group_by)
    lines_before = report.lines_read
    for no, raw in iter_reported_lines(path, report, file, on_error=log.cut_short):
        with guarded(report, file, no, what="line"):
            log.read_line(no, raw)
    if report.lines_read == lines_before:
        report.error(file, None, "file is empty")
    log.finish(RecordSink(builder, report, defaults, file))


class _CallLog:
    """One call-log file being read: its calls grouped into trajectories by id, as step arrays."""

    def __init__(self, file: str, report: LoadReport, group_by: str | None):
        self.file = file
        self.report = report
        self.group_by = group_by
        self.stem = stem(file)
        self.groups: dict[str, _Group] = {}
        self.steps: dict[str, list[_Step]] = {}
        self.chunk_steps: dict[tuple[str, str], _Step] = {}  # (trajectory id, chunk id): a call logged per chunk
        self.no_id_lines = 0
        self.first_no_id: int | None = None
        self.id_re: re.Pattern | None = None
        self.seq = 0
        self.last_gid: str | None = None
        self.tools: dict[str, list[ToolEvent]] = {}   # tool lines per trajectory id

    def group(self, gid: str, line: int) -> _Group:
        """The trajectory of id ``gid`` (created at its first line)."""
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = _Group(gid, self.file, line)
            self.steps[gid] = []
        return g

    def cut_short(self, e: BaseException) -> None:
        """The trajectory being written when the file was cut is incomplete."""
        if self.last_gid is not None and self.last_gid in self.groups:
            fail(self.groups[self.last_gid], self.report, self.file, None,
                 "the file is cut short after this trajectory's last call read; the trajectory is rejected")

    def read_line(self, no: int, raw: bytes) -> None:
        """One line: an LLM call (a step), a tool line, a line of trajectory fields, or an event (skipped)."""
        report, file = self.report, self.file
        try:
            obj = loads(raw)
        except ParseError as e:
            self._unreadable(no, raw, e)
            return
        if not isinstance(obj, dict):
            report.error(file, no, f"a call-log line must be a JSON object, got {type_name(obj)}", value=obj)
            return
        resp = find_response(obj)
        gid = group_id(obj, self.group_by)
        if resp is None:
            event = tool_event(obj, self.seq)
            if event is not None and (gid is not None or self.last_gid is not None):
                gid = gid if gid is not None else self.last_gid
                self.tools.setdefault(gid, []).append(event)
                report.tool_lines += 1
            else:
                report.skipped_lines += 1
            if gid is not None:
                take_meta(self.group(gid, no), obj, report, file, no)
            return
        if gid is None:
            self.no_id_lines += 1
            self.first_no_id = self.first_no_id or no
            gid = self.stem
        self._call(no, obj, resp, gid)

    def _unreadable(self, no: int, raw: bytes, e: ParseError) -> None:
        """A broken line rejects the trajectory it belongs to when its id can still be read from the bytes."""
        self.id_re = self.id_re or _id_regex(self.group_by)
        m = self.id_re.search(raw)
        looks_llm = b'"logprobs"' in raw or b'"choices"' in raw or b'"output"' in raw
        if m and looks_llm:
            gid = m.group(1).decode("utf-8", errors="replace")
            fail(self.group(gid, no), self.report, self.file, no,
                 f"{e.reason}; this LLM call of the trajectory is unreadable, so the trajectory is rejected",
                 field=e.field, value=e.value)
        else:
            self.report.error(self.file, no, e.reason, field=e.field, value=e.value)

    def _call(self, no: int, obj: dict, resp: Any, gid: str) -> None:
        """One logged LLM call: its labels and model into the trajectory, its arrays into a step."""
        report, file = self.report, self.file
        g = self.group(gid, no)  # a failed group is still parsed, so that every problem is listed
        self.last_gid = gid
        with guarded(self.report, self.file, no, g, what="LLM call"):  # a lost call rejects its trajectory
            self._read_call(no, obj, resp, gid, g)

    def _read_call(self, no: int, obj: dict, resp: Any, gid: str, g: _Group) -> None:
        report, file = self.report, self.file
        self._take_fields(g, no, obj, resp)
        single_chunk = isinstance(resp, dict) and is_chunk(resp)
        try:
            if single_chunk:
                part = parse_chunk(resp)
            else:
                part = parse_response(resp)
        except MissingLogprobs as e:
            part = e
        except FieldError as e:
            fail(g, report, file, no, e.reason, field=e.field, value=e.value, has_value=e.has_value)
            return
        first = not self.steps[gid]
        step = self._step(no, obj, resp, gid, resp.get("id") if single_chunk else None)
        if obj is not resp and not step.parts:
            _call_detail(step, obj, resp, first)
        if isinstance(part, MissingLogprobs):
            if step.missing is None:
                report.warn(file, no, f"{part.reason}; step dropped", field=part.field, trajectory_id=gid)
            step.missing = step.missing or part
        elif part is not None:
            step.parts.append(part)

    def _take_fields(self, g: _Group, no: int, obj: dict, resp: Any) -> None:
        """Labels on the call's line, the question of its first call's request, the model of the response."""
        if obj is not resp:
            take_meta(g, obj, self.report, self.file, no)
            if "question" not in g.meta and not self.steps[g.id]:
                q = question_of_request(obj.get("request"))
                if q:
                    g.meta["question"] = q
        if "model" not in g.meta:
            m = response_model(resp)
            if m:
                g.meta["model"] = m

    def _step(self, no: int, obj: dict, resp: Any, gid: str, cid: Any) -> _Step:
        """The step a call goes into: a new one, or the one of earlier chunks with the same chunk id."""
        step = None
        if cid is not None:
            step = self.chunk_steps.get((gid, str(cid)))
        if step is None:
            name = (obj.get("name") or obj.get("step_name")) if obj is not resp else None
            step = _Step(self.seq, no, name if isinstance(name, str) and name else "llm_call", _order_of(obj, resp))
            self.seq += 1
            self.steps[gid].append(step)
            if cid is not None:
                self.chunk_steps[(gid, str(cid))] = step
        return step

    def finish(self, sink: RecordSink) -> None:
        """Every trajectory, its steps in order, into ``sink`` (and a warning for calls without an id)."""
        if self.no_id_lines:
            keys = self.group_by or ", ".join(DEFAULT_GROUP_KEYS)
            self.report.warn(self.file, self.first_no_id, f"{self.no_id_lines} call(s) carry no trajectory id "
                                                          f"({keys}); they form one trajectory named {self.stem!r}",
                             field=self.group_by)
        for gid, g in self.groups.items():
            if g.failed:
                continue
            ordered = _sort_steps(self.steps[gid])
            details = _step_details(ordered)
            attach_tools(ordered, details, self.tools.pop(gid, []))
            for st, detail in zip(ordered, details):
                if st.missing is not None:
                    g.missing += 1
                    continue
                g.add(st.name, concat_parts(st.parts) if st.parts else empty_part(), detail)
            del self.steps[gid]
            sink.finish(g, g.line)
            g.steps = []
            g.details = []


def sniff(sample) -> str | None:
    """None when the sampled lines of a file hold one LLM call each, else why not."""
    if sample.kind != "jsonl":
        return f"not JSONL (a {sample.kind} document)"
    if not sample.objs:
        return sample.why_empty or "no line is valid JSON"
    for obj in sample.objs:
        if isinstance(obj, dict) and find_response(obj) is not None \
                and responses_of(obj) is None:
            return None
    return (f"no line holds one LLM response "
            f"(choices[] or output[], itself or under {'/'.join(RESPONSE_KEYS[:6])})")


def read(paths: Inputs, *, defaults: dict | None = None, report: LoadReport | None = None,
         group_by: str | None = None) -> tuple[TraceSet, LoadReport]:
    """Read call-log JSONL files or directories; returns (trace set, load report).

    One line is one logged LLM call; calls are grouped into trajectories by id, tool lines become the tool
    call and observation of the call they follow (see the module's description). A broken line rejects the
    trajectory it belongs to and nothing else.

    Parameters
    ----------
    paths : str, path or iterable of them
        Files and folders (a folder is searched recursively for files named like ``formats.SUFFIXES``).
    defaults : dict, optional
        Metadata filled in where a trajectory has none (e.g. ``{"dataset": "mine"}``).
    report : LoadReport, optional
        A report to add to (a new one by default).
    group_by : str, optional
        The key holding the trajectory id (see :func:`read_file`).

    Returns
    -------
    ts : TraceSet
        The trajectories.
    report : LoadReport
        Counts and problems.

    Examples
    --------
    >>> from htc_core.formats import openai_calllog
    >>> ts, report = openai_calllog.read("tests/fixtures/foreign/react_calllog.jsonl")
    >>> ts.ids.tolist(), ts.steps_per_trajectory.tolist(), report.tool_lines
    (['r1', 'r2', 'r3'], [2, 2, 2], 4)
    >>> ts.meta.loc[0, ["question", "answer"]].tolist(), ts.step_fields["tool"][0]
    (['What is 14 times 8?', '112'], '{"name":"calculator","arguments":"14*8"}')
    """
    return read_with(read_file, paths, defaults=defaults, report=report, group_by=group_by)
