"""Harbor ATIF (Agent Trajectory Interchange Format) trajectories.

One trajectory per ``.json`` file (or JSONL with one per line, or a JSON
array of them)::

    {"schema_version": "ATIF-v1.4", "session_id": "...", "agent": {"name": ..., "model_name": ...},
     "steps": [{"step_id": 1, "source": "user", "message": "..."},
               {"step_id": 2, "source": "agent", "message": "...",
                "metrics": {"completion_tokens": 3, "logprobs": [-0.1, -0.02, -0.3]}}]}

Each agent step with ``metrics.logprobs`` becomes one step (chosen-token
logprobs only: ATIF has no alternatives, so k = 0). The id is
``session_id``; ``agent.name`` is the framework, ``agent.model_name`` (or a
step's ``model_name``) the model; the first user message is the question.
Agent steps without logprobs are dropped with a warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from .common import FieldError, text_of, type_name
from .inputs import Inputs, read_with
from .jsonio import NO_DOCUMENT, container_kind, read_document_reported
from .logprobs import StepPart, check_chosen, numbers
from ..traces import tool_json
from .records import ID_KEYS, RecordSink, TrajAcc, fail, find_id, guarded, stem, take_meta
from .stepdetail import as_text
from .walk import walk_values

NAME = "atif"

__all__ = ["read", "read_file"]


def is_atif(obj: Any) -> bool:
    """Whether a value is an ATIF trajectory (``schema_version`` 'ATIF-...', or steps with step_id and source)."""
    if not isinstance(obj, dict):
        return False
    sv = obj.get("schema_version")
    if isinstance(sv, str) and sv.upper().startswith("ATIF"):
        return True
    steps = obj.get("steps")
    return (isinstance(steps, list) and bool(steps) and isinstance(steps[0], dict)
            and "step_id" in steps[0] and "source" in steps[0])


def parse_trajectory(obj: Any, *, default_id: str, report: LoadReport, file: str, line: int | None
                     ) -> TrajAcc | None:
    """One ATIF trajectory object as a trajectory, or None (reported) when it is not one."""
    if not is_atif(obj):
        report.error(file, line, "not an ATIF trajectory (needs schema_version 'ATIF-...' or steps with "
                                 "step_id and source)", value=obj)
        return None
    tid = find_id(obj, ("session_id", "id") + ID_KEYS)
    acc = TrajAcc(tid or default_id, file, line)
    steps = obj.get("steps")
    if not isinstance(steps, list):
        fail(acc, report, file, line, f"'steps' must be a list, got {type_name(steps)}", field="steps", value=steps)
        return acc
    _take_trajectory_fields(acc, obj, report, file, line)
    for i, st in enumerate(steps):
        if not _add_step(acc, st, i, report, file, line):
            return acc
    return acc


def _take_trajectory_fields(acc: TrajAcc, obj: dict, report: LoadReport, file: str, line: int | None) -> None:
    """The agent (framework, model), the labels under ``extra`` and on the trajectory, the schema version."""
    agent = obj.get("agent") if isinstance(obj.get("agent"), dict) else {}
    if isinstance(agent.get("name"), str):
        acc.meta["framework"] = agent["name"]
    if isinstance(agent.get("model_name"), str):
        acc.meta["model"] = agent["model_name"]
    extra = obj.get("extra")
    if isinstance(extra, dict):
        take_meta(acc, extra, report, file, line)
    take_meta(acc, obj, report, file, line)
    if isinstance(obj.get("schema_version"), str):
        acc.metadata.setdefault("schema_version", obj["schema_version"])


def _add_step(acc: TrajAcc, st: Any, i: int, report: LoadReport, file: str, line: int | None) -> bool:
    """One ATIF step into ``acc`` (a user step may give the question); False when it rejects the trajectory."""
    f = f"steps[{i}]"
    if not isinstance(st, dict):
        fail(acc, report, file, line, f"a step must be an object, got {type_name(st)}", field=f, value=st)
        return False
    src = st.get("source")
    if src == "user" and "question" not in acc.meta:
        q = text_of(st.get("message"))
        if q:
            acc.meta["question"] = q
    if src != "agent":
        msg = text_of(st.get("message"))
        if msg:
            acc.pending_input.append(msg if not isinstance(src, str) else f"[{src}]\n{msg}")
        return True
    if "model" not in acc.meta and isinstance(st.get("model_name"), str):
        acc.meta["model"] = st["model_name"]
    metrics = st.get("metrics")
    lps = metrics.get("logprobs") if isinstance(metrics, dict) else None
    if lps is None:
        acc.missing += 1
        report.warn(file, line, f"agent step {st.get('step_id', i)} has no metrics.logprobs; step dropped",
                    field=f"{f}.metrics.logprobs", trajectory_id=acc.id)
        return True
    try:
        if not isinstance(lps, list):
            raise FieldError(f"{f}.metrics.logprobs", lps, f"must be a list of numbers, got {type_name(lps)}")
        arr = numbers(lps, f + ".metrics.logprobs[{i}]")
        arr, clipped = check_chosen(arr, lps, f + ".metrics.logprobs[{i}]")
    except FieldError as e:
        fail(acc, report, file, line, e.reason, field=e.field, value=e.value, has_value=e.has_value)
        return False
    text = text_of(st.get("message")) or text_of(st.get("reasoning_content"))
    acc.add("agent", StepPart(arr, None, None, text, clipped), _detail(acc, st))
    return True


def _detail(acc: TrajAcc, st: dict) -> dict:
    """An agent step's diagnosis fields: the user/system messages since the last agent step, its first tool
    call, the results of its observation."""
    d: dict[str, Any] = {}
    if acc.pending_input:
        d["input"] = "\n\n".join(acc.pending_input)
        acc.pending_input = []
    calls = st.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        t = tool_json(calls[0].get("function_name") or calls[0].get("name"), calls[0].get("arguments"))
        if t:
            d["tool"] = t
    obs = st.get("observation")
    results = obs.get("results") if isinstance(obs, dict) else None
    if isinstance(results, list):
        texts = [as_text(r.get("content")) for r in results if isinstance(r, dict) and r.get("content") is not None]
        if texts:
            d["observation"] = "\n\n".join(texts)
    elif obs is not None:
        d["observation"] = as_text(obs)
    return d


def read_file(path, *, builder: TraceSetBuilder, report: LoadReport, defaults: dict | None = None, **_: Any) -> None:
    """Read one ATIF file into ``builder``.

    The reader protocol of every format (``htc_core.formats.READERS``): the trajectories go to ``builder``,
    every problem to ``report``; an agent step without logprobs is dropped with a warning.

    Parameters
    ----------
    path : str or path
        The file (``.json``: one trajectory or an array of them; ``.jsonl``: one per line).
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
    >>> import json, os, tempfile
    >>> from htc_core.formats import atif
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> run = {"schema_version": "ATIF-v1.4", "session_id": "s-1", "agent": {"name": "mine", "model_name": "m"},
    ...        "steps": [{"step_id": 1, "source": "user", "message": "2 + 2?"},
    ...                  {"step_id": 2, "source": "agent", "message": "4",
    ...                   "metrics": {"completion_tokens": 1, "logprobs": [-0.05]}}]}
    >>> path = os.path.join(tempfile.mkdtemp(), "run.json")
    >>> with open(path, "w") as fh:
    ...     json.dump(run, fh)
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> atif.read_file(path, builder=builder, report=report)
    >>> ts = builder.build()
    >>> ts.ids.tolist(), ts.meta.loc[0, ["framework", "question"]].tolist(), ts.k
    (['s-1'], ['mine', '2 + 2?'], 0)
    """
    path = Path(path)
    file = str(path)
    name = stem(file)
    sink = RecordSink(builder, report, defaults, file)
    kind = container_kind(path)
    if kind == "json-object":
        doc = read_document_reported(path, report, file)
        if doc is NO_DOCUMENT:
            return
        with guarded(report, file, 1, what="document"):
            sink.finish(parse_trajectory(doc, default_id=name, report=report, file=file, line=1), 1)
        return
    if kind == "json-array":
        _read_array(path, sink, name)
        return
    walk_values(path, report, file, array=False, each=lambda i, no, obj: sink.finish(
        parse_trajectory(obj, default_id=f"{name}:{no}", report=report, file=file, line=no), no))


def _read_array(path: Path, sink: RecordSink, name: str) -> None:
    """A JSON array of trajectories, streamed; a bad element is reported and the next ones are read."""
    report, file = sink.report, sink.file
    walk_values(path, report, file, array=True, each=lambda i, line, el: sink.finish(
        parse_trajectory(el, default_id=f"{name}:{i}", report=report, file=file, line=line), line))


def sniff(sample) -> str | None:
    """None when the first sampled value of a file is an ATIF trajectory, else why not."""
    if not sample.objs:
        return sample.why_empty or "no JSON value could be read"
    if is_atif(sample.objs[0]):
        return None
    return "no ATIF trajectory (schema_version 'ATIF-...', or steps with step_id and source)"


def read(paths: Inputs, *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read ATIF files or directories of them; returns (trace set, load report).

    Each agent step with ``metrics.logprobs`` becomes one step (chosen-token logprobs only: k = 0).

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
    >>> from htc_core.formats import atif
    >>> ts, report = atif.read("tests/fixtures/formats/atif.json")
    >>> ts.ids.tolist(), ts.steps_per_trajectory.tolist(), ts.n_tokens, ts.k
    (['q-paris'], [2], 19, 0)
    >>> ts.meta.loc[0, ["framework", "model", "question"]].tolist()
    ['tiny-react', 'SmolLM2-135M-Instruct', 'What is the capital of France?']
    """
    return read_with(read_file, paths, defaults=defaults, report=report)
