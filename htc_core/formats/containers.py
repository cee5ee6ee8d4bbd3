"""How OpenAI-shaped responses form trajectories in a file, shared by openai-chat, responses and completions.

Containers:

- a ``.json`` file holding an array of responses: one trajectory (id = file
  name), one step per response, in array order; the array is streamed;
- a ``.json`` file holding one object ``{"id": ..., "responses": [...], "success": ...}``
  or a single response (one trajectory);
- JSONL with one trajectory per line: a list of responses, or an object with
  an id (``id``, ``trajectory_id``, ``trace_id``, ``run_id``, ``session_id``,
  ``conversation_id``), a list under ``responses`` (or ``calls``,
  ``completions``, ``steps``, ``turns``) and optional labels/metadata
  (``success``, ``question``, ``answer``, ``gold``, ``dataset``, ``model``,
  ``verbalized_confidence``, ``metadata``).

A list element may be the response itself or a wrapper holding it under
``response``/``raw_response``/``completion``/``output``/``result``/``body``;
a list of ``chat.completion.chunk`` objects (a streamed call) is reassembled
into one step. A response without logprobs is dropped with a warning (the
trajectory is kept when other steps have logprobs); a malformed one rejects
its trajectory with file, line, field, value and reason.

``ContainerReader`` gives each of the three formats its ``sniff`` / ``read_file`` / ``read``; the formats
differ only in which response shape their sniffer looks for.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from .common import FieldError, MissingLogprobs, type_name
from .inputs import Inputs, read_with
from .jsonio import NO_DOCUMENT, ParseError, container_kind, read_document_reported
from .records import RecordSink, TrajAcc, fail, find_id, guarded, stem, take_meta
from .shapes import find_response, is_any_response, is_chunk_list, parse_response, response_model
from .walk import walk_values

# keys under which a trajectory object holds its list of responses
LIST_KEYS = ("responses", "calls", "completions", "steps", "turns")

# internal machinery of the openai_chat / responses / completions readers (their read functions are public)
__all__: list[str] = []


def responses_of(obj: Any) -> list | None:
    """The list of responses a trajectory object holds (None when it is not such an object)."""
    if isinstance(obj, list) and not is_chunk_list(obj):
        return obj
    if isinstance(obj, dict) and not is_any_response(obj):
        for k in LIST_KEYS:
            v = obj.get(k)
            if isinstance(v, list):
                return v
    return None


def _list_key(obj: dict) -> str:
    """The key of ``LIST_KEYS`` under which a trajectory object holds its responses."""
    return next((k for k in LIST_KEYS if isinstance(obj.get(k), list)), "responses")


# ------------------------------------------------------------------ detection
def sniff_container(sample, is_resp: Callable[[Any], bool], what: str) -> str | None:
    """None when ``sample`` holds ``what`` in one of the trajectory containers, else why not."""
    objs = sample.objs
    if not objs:
        return sample.why_empty or "no JSON value could be read"
    first = objs[0]
    if sample.kind == "json-array":
        r = find_response(first)
        if r is not None:
            rr = r[0] if is_chunk_list(r) else r
            return None if is_resp(rr) else f"array elements are LLM responses of another kind (not {what})"
        lst = responses_of(first)
    elif sample.kind == "json-object":
        if is_resp(first):
            return None
        if is_any_response(first):
            return f"a single LLM response of another kind (not {what})"
        lst = responses_of(first)
        if lst is None:
            return f"the JSON object holds no list of responses under {'/'.join(LIST_KEYS)}"
    else:
        for obj in objs:
            if find_response(obj) is not None and responses_of(obj) is None:
                return ("each line is a single LLM call, not a trajectory (that is openai-calllog)")
            lst = responses_of(obj)
            if lst:
                break
        else:
            lst = responses_of(first)
        if lst is None:
            return f"lines are {type_name(first)}s without a list of responses under {'/'.join(LIST_KEYS)}"
    if not lst:
        return "the first trajectory holds no responses"
    for el in lst[:3]:
        r = find_response(el)
        if r is None:
            continue
        rr = r[0] if is_chunk_list(r) else r
        return None if is_resp(rr) else f"its responses are of another kind (not {what})"
    return f"the first trajectory's list holds no LLM responses ({what})"


# ------------------------------------------------------------------ reading
def add_call(acc: TrajAcc, el: Any, *, report: LoadReport, file: str, line: int | None, field: str,
             default_name: str = "llm_call") -> None:
    """Parse one list element (response or wrapper) into a step of ``acc``."""
    resp = find_response(el)
    if resp is None:
        report.warn(file, line, "not an LLM response; skipped", field=field, value=el, trajectory_id=acc.id)
        return
    try:
        part = parse_response(resp, f"{field}.")
    except MissingLogprobs as e:
        acc.missing += 1
        report.warn(file, line, f"{e.reason}; step dropped", field=e.field, trajectory_id=acc.id)
        return
    except FieldError as e:
        fail(acc, report, file, line, e.reason, field=e.field, value=e.value, has_value=e.has_value)
        return
    name = default_name
    if isinstance(el, dict) and el is not resp:
        n = el.get("name") or el.get("step_name") or el.get("kind")
        if isinstance(n, str) and n:
            name = n
    if "model" not in acc.meta:
        m = response_model(resp)
        if m:
            acc.meta["model"] = m
    acc.add(name, part)


def trajectory_from_obj(obj: Any, *, default_id: str, report: LoadReport, file: str, line: int | None
                        ) -> TrajAcc | None:
    """One trajectory of a container (a list of responses or an object with one), or None (reported)."""
    lst = responses_of(obj)
    if lst is None:
        if find_response(obj) is not None:
            report.error(file, line, "a single LLM response where a trajectory was expected "
                                     "(read call logs with --format openai-calllog)", value=obj)
        else:
            report.error(file, line, f"a trajectory must be a list of responses or an object with "
                                     f"'responses', got {type_name(obj)}", value=obj)
        return None
    tid = find_id(obj) if isinstance(obj, dict) else None
    acc = TrajAcc(tid or default_id, file, line)
    key = _list_key(obj) if isinstance(obj, dict) else ""
    if isinstance(obj, dict):
        take_meta(acc, obj, report, file, line)
    for i, el in enumerate(lst):
        add_call(acc, el, report=report, file=file, line=line, field=f"{key}[{i}]")
    return acc


def read_container_file(path: Path, *, builder: TraceSetBuilder, report: LoadReport, defaults: dict | None,
                        framework: str | None = None) -> None:
    """Read one file of openai-chat / responses / completions containers into ``builder``."""
    path = Path(path)
    sink = RecordSink(builder, report, defaults, str(path), framework)
    kind = container_kind(path)
    if kind == "json-array":
        _read_array(path, sink)
    elif kind == "json-object":
        _read_object(path, sink)
    else:
        _read_lines(path, sink)


def _read_array(path: Path, sink: RecordSink) -> None:
    """A JSON array: the responses of one trajectory, or (when its first element is one) trajectories."""
    report, file = sink.report, sink.file
    name = stem(file)
    state: dict[str, Any] = {"mode": None, "acc": None}
    lines_before = report.lines_read

    def each(i: int, line: int, el: Any) -> None:
        if state["mode"] is None:
            trajectories = responses_of(el) is not None and find_response(el) is None
            state["mode"] = "trajectories" if trajectories else "responses"
            if not trajectories:
                state["acc"] = TrajAcc(name, file, 1)
        if state["mode"] == "responses":
            add_call(state["acc"], el, report=report, file=file, line=line, field=f"[{i}]")
        else:
            sink.finish(trajectory_from_obj(el, default_id=f"{name}:{i}", report=report, file=file, line=line), line)

    def on_error(e: ParseError, broken: bool) -> None:
        acc = state["acc"]
        if broken and acc is None:
            report.error(file, e.line, e.reason, field=e.field, value=e.value)
            return
        reason = f"{e.reason}; the trajectory is incomplete" if broken else e.reason
        fail(acc, report, file, e.line, reason, field=e.field, value=e.value)

    n = walk_values(path, report, file, each, array=True, on_error=on_error, acc=lambda: state["acc"])
    if state["mode"] is None and n == 0 and report.lines_read == lines_before:
        report.error(file, 1, "the JSON array is empty (no responses)")
    sink.finish(state["acc"], 1)


def _read_object(path: Path, sink: RecordSink) -> None:
    """A JSON document: a single response (one step) or one trajectory object."""
    report, file = sink.report, sink.file
    doc = read_document_reported(path, report, file)
    if doc is NO_DOCUMENT:
        return
    with guarded(report, file, 1, what="document"):
        _read_doc(doc, sink)


def _read_doc(doc: Any, sink: RecordSink) -> None:
    """A decoded JSON document: a single response (one step) or one trajectory object."""
    report, file = sink.report, sink.file
    if is_any_response(doc) or is_chunk_list(doc):
        acc = TrajAcc(stem(file), file, 1)
        add_call(acc, doc, report=report, file=file, line=1, field="")
        sink.finish(acc, 1)
    else:
        sink.finish(trajectory_from_obj(doc, default_id=stem(file), report=report, file=file, line=1), 1)


def _read_lines(path: Path, sink: RecordSink) -> None:
    """JSONL: one trajectory per line."""
    report, file = sink.report, sink.file
    name = stem(file)

    def each(i: int, no: int, obj: Any) -> None:
        sink.finish(trajectory_from_obj(obj, default_id=f"{name}:{no}", report=report, file=file, line=no), no)

    walk_values(path, report, file, each, array=False)


# ------------------------------------------------------------------ the readers
class ContainerReader:
    """``sniff`` / ``read_file`` / ``read`` of a format whose files hold responses of one shape
    (``is_resp``) in the containers above; ``what`` names that shape in detection messages."""

    def __init__(self, name: str, is_resp: Callable[[Any], bool], what: str):
        """The format's name, its response test and the shape's name for detection messages."""
        self.name = name
        self.is_resp = is_resp
        self.what = what

    def sniff(self, sample) -> str | None:
        """None when the sample of a file holds this format, else why not."""
        return sniff_container(sample, self.is_resp, self.what)

    def read_file(self, path: str | os.PathLike, *, builder: TraceSetBuilder, report: LoadReport,
                  defaults: dict | None = None, **_: Any) -> None:
        """Read one file into ``builder``."""
        read_container_file(Path(path), builder=builder, report=report, defaults=defaults, framework=None)

    def read(self, paths: Inputs, *, defaults: dict | None = None,
             report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
        """Read files or directories of this format; returns (trace set, load report)."""
        return read_with(self.read_file, paths, defaults=defaults, report=report)
