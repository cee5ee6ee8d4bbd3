"""smolagents runs: the JSON of ``agent.memory.get_full_steps()``.

A run is the list of step dicts (one run per ``.json`` file, streamed element
by element; or JSONL with one run per line; or an object ``{"id": ...,
"steps": [...], "success": ...}``, which is what ``htc_core.collect.save_smolagents_run``
writes). smolagents serializes the raw API response of each model call with
``make_json_serializable``, so it sits under
``model_output_message.raw`` with ``_type`` tags
(``{"_type": "ChatCompletion", "choices": [{"_type": "Choice", "logprobs": {"_type": "ChoiceLogprobs", "content": [...]}}]}``).

- the first entry is the task step (``{"task": ...}``): its text becomes ``question``;
- every planning step (has ``plan``) and action step (has ``step_number``)
  with a ``model_output_message`` becomes one step, named ``planning`` or
  ``action``; its text is the model output;
- a step whose raw response has no logprobs (``raw`` missing, or a model
  class that keeps none) is dropped with a warning naming the step;
- the final answer (``FinalAnswerStep`` ``{"output": ...}`` or the action
  output of the step with ``is_final_answer``) becomes ``answer``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from .common import FieldError, MissingLogprobs, text_of, type_name
from .inputs import Inputs, read_with
from .jsonio import NO_DOCUMENT, ParseError, container_kind, loads, read_document_reported
from .logprobs import StepPart
from .records import RecordSink, TrajAcc, fail, find_id, guarded, stem, take_meta
from .shapes import find_response, parse_response, response_model
from .stepdetail import as_text, latency, messages_text, new_messages, tool_of_message
from .walk import walk_values

NAME = "smolagents"
FRAMEWORK = "smolagents"
RUN_KEYS = ("steps", "full_steps", "memory")

__all__ = ["read", "read_file"]


def is_step(obj: Any) -> bool:
    """Whether a value is a smolagents memory step (task, planning or action step)."""
    return isinstance(obj, dict) and ("task" in obj or "model_output_message" in obj
                                      or ("step_number" in obj and "timing" in obj))


def steps_of(obj: Any) -> list | None:
    """The memory steps of a run (a list of steps, or an object holding one under ``RUN_KEYS``), or None."""
    if isinstance(obj, list) and obj and is_step(obj[0]):
        return obj
    if isinstance(obj, dict):
        for k in RUN_KEYS:
            v = obj.get(k)
            if isinstance(v, list) and v and is_step(v[0]):
                return v
    return None


class _Run:
    """Accumulates one run's steps as they stream in."""

    def __init__(self, acc: TrajAcc, report: LoadReport, file: str):
        self.acc = acc
        self.report = report
        self.file = file
        self.i = 0

    def step(self, st: Any, line: int | None) -> None:
        """Take one memory step: the task gives the question, a planning/action step with logprobs a step."""
        acc, report, file, i = self.acc, self.report, self.file, self.i
        self.i += 1
        f = f"steps[{i}]"
        if not isinstance(st, dict):
            fail(acc, report, file, line, f"a step must be an object, got {type_name(st)}", field=f, value=st)
            return
        self._task(st, i, f, line)
        if "output" in st and len(st) <= 2 and "model_output_message" not in st:
            acc.meta["answer"] = _answer_text(st.get("output"))
            return
        if "model_output_message" not in st:
            return
        kind = "planning" if "plan" in st else "action"
        if st.get("is_final_answer") and st.get("action_output") is not None:
            acc.meta["answer"] = _answer_text(st.get("action_output"))
        fm = f"{f}.model_output_message"
        resp = self._raw_response(st.get("model_output_message"), kind, fm, line)
        if resp is None:
            return
        part = self._parse(resp, kind, fm, line)
        if part is None:
            return
        text = st.get("plan") if kind == "planning" else st.get("model_output")
        text = text_of(text) or text_of(st["model_output_message"].get("content")) or part.text
        part.text = text
        if "model" not in acc.meta:
            m = response_model(resp)
            if m:
                acc.meta["model"] = m
        acc.add(kind, part, _detail(st, first=not acc.steps))

    def _task(self, st: dict, i: int, f: str, line: int | None) -> None:
        """The first entry is the task step: its text is the question; later task entries are counted."""
        acc = self.acc
        if i == 0:
            if "task" in st:
                q = text_of(st.get("task"))
                if q and "question" not in acc.meta:
                    acc.meta["question"] = q
            else:
                self.report.warn(self.file, line, "the first entry is not a task step ({'task': ...}); no question "
                                                  "recorded", field=f, trajectory_id=acc.id)
        elif "task" in st and "model_output_message" not in st:
            acc.metadata.setdefault("extra_tasks", 0)
            acc.metadata["extra_tasks"] += 1

    def _raw_response(self, mom: Any, kind: str, fm: str, line: int | None) -> Any:
        """The raw API response of a step's model call, or None (reported) when it keeps none usable."""
        acc, report, file = self.acc, self.report, self.file
        if mom is None:
            acc.missing += 1
            report.warn(file, line, f"{kind} step has no model output message (the model call failed?); step dropped",
                        field=fm, trajectory_id=acc.id)
            return None
        if not isinstance(mom, dict):
            fail(acc, report, file, line, f"must be an object, got {type_name(mom)}", field=fm, value=mom)
            return None
        raw = mom.get("raw")
        if isinstance(raw, str) and raw.startswith("{"):
            try:
                raw = loads(raw)
            except ParseError:
                pass
        if raw is None:
            acc.missing += 1
            report.warn(file, line, f"{kind} step keeps no raw response, so no logprobs; step dropped",
                        field=f"{fm}.raw", trajectory_id=acc.id)
            return None
        resp = find_response(raw)
        if resp is None:
            acc.missing += 1
            report.warn(file, line, f"{kind} step's raw response has no choices[] with logprobs; step dropped",
                        field=f"{fm}.raw", value=raw, trajectory_id=acc.id)
        return resp

    def _parse(self, resp: Any, kind: str, fm: str, line: int | None) -> StepPart | None:
        """The step part of a raw response, or None (reported: no logprobs, or malformed)."""
        acc, report, file = self.acc, self.report, self.file
        try:
            return parse_response(resp, f"{fm}.raw.")
        except MissingLogprobs as e:
            acc.missing += 1
            report.warn(file, line, f"{kind} step: {e.reason}; step dropped", field=e.field, trajectory_id=acc.id)
        except FieldError as e:
            fail(acc, report, file, line, e.reason, field=e.field, value=e.value, has_value=e.has_value)
        return None


def _detail(st: dict, *, first: bool) -> dict:
    """A memory step's diagnosis fields: the new input messages (all of them for the first model call), the
    first tool call, the observations, the error and the duration."""
    d: dict[str, Any] = {}
    msgs = st.get("model_input_messages")
    if isinstance(msgs, list):
        inp = messages_text([m for m in msgs if isinstance(m, dict)] if first else new_messages(msgs))
        if inp:
            d["input"] = inp
    t = tool_of_message(st)
    if t:
        d["tool"] = t
    if st.get("observations") is not None:
        d["observation"] = as_text(st["observations"])
    err = st.get("error")
    if isinstance(err, dict) and err.get("message") is not None:
        d["error"] = f"{err.get('type') or 'Error'}: {as_text(err['message'])}"
    elif err is not None:
        d["error"] = as_text(err)
    timing = st.get("timing")
    lat = latency(timing.get("duration") if isinstance(timing, dict) else st.get("duration"))
    if lat is not None:
        d["latency_s"] = lat
    return d


def _answer_text(v: Any) -> str | None:
    """A final answer's text (a string as is, anything else as JSON)."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        return str(v)


def _run_from_obj(obj: Any, default_id: str, report: LoadReport, file: str, line: int | None) -> TrajAcc | None:
    """One run (a list of steps or an object holding one), or None (reported)."""
    steps = steps_of(obj)
    if steps is None:
        report.error(file, line, "not a smolagents run (a list of memory steps, the first being {'task': ...})",
                     value=obj)
        return None
    tid = find_id(obj) if isinstance(obj, dict) else None
    acc = TrajAcc(tid or default_id, file, line)
    if isinstance(obj, dict):
        take_meta(acc, obj, report, file, line)
    run = _Run(acc, report, file)
    for st in steps:
        run.step(st, line)
    return acc


def read_file(path, *, builder: TraceSetBuilder, report: LoadReport, defaults: dict | None = None, **_: Any) -> None:
    """Read one smolagents file into ``builder``.

    The reader protocol of every format (``htc_core.formats.READERS``): the runs go to ``builder`` (framework
    ``smolagents``), every problem to ``report``; a step without logprobs is dropped with a warning naming it.

    Parameters
    ----------
    path : str or path
        The file (``.json``: one run, or an array of runs; ``.jsonl``: one run per line).
    builder : TraceSetBuilder
        Where the trajectories go.
    report : LoadReport
        Where the problems go.
    defaults : dict, optional
        Metadata filled in where a run has none.
    **_
        Other readers' options (ignored).

    Returns
    -------
    None
        The trajectories are in ``builder``.

    Examples
    --------
    >>> from htc_core.formats import smolagents
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> smolagents.read_file("tests/fixtures/formats/smolagents_run.json", builder=builder, report=report)
    >>> len(builder), len(report.warnings)
    (1, 3)
    """
    path = Path(path)
    sink = RecordSink(builder, report, defaults, str(path), FRAMEWORK)
    kind = container_kind(path)
    if kind == "json-array":
        _read_array(path, sink)
    elif kind == "json-object":
        doc = read_document_reported(path, report, sink.file)
        if doc is NO_DOCUMENT:
            return
        with guarded(report, sink.file, 1, what="document"):
            sink.finish(_run_from_obj(doc, stem(sink.file), report, sink.file, 1), 1)
    else:
        name = stem(sink.file)
        walk_values(path, report, sink.file, array=False, each=lambda i, no, obj: sink.finish(
            _run_from_obj(obj, f"{name}:{no}", report, sink.file, no), no))


def _read_array(path: Path, sink: RecordSink) -> None:
    """A JSON array: the steps of one run, or (when its first element is not a step) runs."""
    report, file = sink.report, sink.file
    name = stem(file)
    state: dict[str, Any] = {"mode": None, "acc": None, "run": None}

    def each(i: int, line: int, el: Any) -> None:
        if state["mode"] is None:
            state["mode"] = "steps" if is_step(el) else "runs"
            if state["mode"] == "steps":
                state["acc"] = TrajAcc(name, file, 1)
                state["run"] = _Run(state["acc"], report, file)
        if state["mode"] == "steps":
            state["run"].step(el, line)
        else:
            sink.finish(_run_from_obj(el, f"{name}:{i}", report, file, line), line)

    def on_error(e: ParseError, broken: bool) -> None:
        acc = state["acc"]
        if broken and acc is None:
            report.error(file, e.line, e.reason, field=e.field, value=e.value)
            return
        reason = f"{e.reason}; the run is incomplete" if broken else e.reason
        fail(acc, report, file, e.line, reason, field=e.field, value=e.value)

    walk_values(path, report, file, each, array=True, on_error=on_error, acc=lambda: state["acc"])
    sink.finish(state["acc"], 1)


def sniff(sample) -> str | None:
    """None when the sampled values of a file are smolagents runs or memory steps, else why not."""
    if not sample.objs:
        return sample.why_empty or "no JSON value could be read"
    first = sample.objs[0]
    if sample.kind == "json-array":
        if is_step(first) or steps_of(first) is not None:
            return None
        return "array elements are not smolagents memory steps ({'task': ...} / {'model_output_message': ...})"
    if steps_of(first) is not None:
        return None
    return "no list of smolagents memory steps (first entry {'task': ...}, then steps with 'model_output_message')"


def read(paths: Inputs, *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read smolagents run files or directories of them; returns (trace set, load report).

    A run is the JSON of ``agent.memory.get_full_steps()`` (see the module's description); its planning and
    action steps with logprobs become the steps, its task the question, its final answer the answer.

    Parameters
    ----------
    paths : str, path or iterable of them
        Files and folders (a folder is searched recursively for files named like ``formats.SUFFIXES``).
    defaults : dict, optional
        Metadata filled in where a run has none (e.g. ``{"dataset": "mine"}``).
    report : LoadReport, optional
        A report to add to (a new one by default).

    Returns
    -------
    ts : TraceSet
        The trajectories.
    report : LoadReport
        Counts and problems.

    Examples
    --------
    >>> from htc_core.formats import smolagents
    >>> ts, report = smolagents.read("tests/fixtures/formats/smolagents_run.json")
    >>> ts.ids.tolist(), ts.step_name.tolist(), ts.meta.loc[0, "question"]
    (['smolagents_run'], ['action', 'action'], 'What is 2 + 3? Give just the number.')
    >>> report.warnings[0].reason
    'planning step keeps no raw response, so no logprobs; step dropped'
    """
    return read_with(read_file, paths, defaults=defaults, report=report)
