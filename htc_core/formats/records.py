"""Record assembly: validated steps and trajectory-level fields collected into ``TrajectoryRecord`` objects.

``TrajAcc`` accumulates a trajectory while a reader walks its source; ``build_record`` turns it into a
record (or reports why it is rejected: no LLM call with logprobs, only empty steps); ``add_record`` adds
it to the builder with the id rules every format shares (a repeated id inside one file is an error, an
id an earlier file used is kept as ``id@file-stem``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..report import LoadReport, Problem, shorten
from ..traces import TraceSetBuilder, TrajectoryRecord
from .answers import explicit_answer, fill_answer_question
from .common import FieldError, optional_text, success_label, verbalized
from .logprobs import StepPart
from .stepdetail import detail_lists

# keys under which a trajectory id is looked for (in this order)
ID_KEYS = ("trajectory_id", "trace_id", "run_id", "session_id", "conversation_id")
# trajectory-level fields a reader copies when a record carries them
META_KEYS = ("dataset", "model", "framework", "question", "answer", "gold")

# what a reader (ours, or the OTLP receiver's ``otel_traces.add_traces``) fills and hands over; the rest is the
# readers' shared machinery
__all__ = ["TrajAcc", "RecordSink", "ID_KEYS", "META_KEYS"]


@dataclass
class TrajAcc:
    """A trajectory under construction: validated steps plus metadata.

    Parameters
    ----------
    id : str
        The trajectory id.
    file : str
        The file it is read from (for the report).
    line : int or None
        Its line in the file (for the report).
    steps : list of (str, StepPart)
        The steps so far: (step name, validated arrays of the LLM call).
    details : list of dict or None
        The diagnosis fields of each step in ``steps`` (``input``, ``tool``, ``observation``, ``error``,
        ``latency_s``), None where it has none.
    pending_input : list of str
        Texts that came in since the last step, for formats that log them as records of their own (ATIF).
    meta : dict
        Trajectory-level fields: ``dataset``, ``model``, ``framework``, ``question``, ``answer``, ``gold``,
        ``success``, ``verbalized_confidence``.
    metadata : dict
        Free-form metadata.
    failed : bool, default=False
        True once an error rejected the trajectory (later errors are listed, not counted again).
    missing : int, default=0
        LLM calls without logprobs (dropped steps).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.formats.logprobs import StepPart
    >>> from htc_core.formats.records import RecordSink, TrajAcc
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> acc = TrajAcc("t1", "run.jsonl", 1)
    >>> acc.add("llm_call", StepPart(np.array([-0.1, -0.3]), None, ["Hi", "!"], "Hi!"), {"latency_s": 0.4})
    >>> acc.meta["question"] = "Say hi"
    >>> len(acc.steps), acc.details
    (1, [{'latency_s': 0.4}])
    """

    id: str
    file: str
    line: int | None
    steps: list[tuple[str, StepPart]] = field(default_factory=list)
    details: list[dict | None] = field(default_factory=list)
    pending_input: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    failed: bool = False
    missing: int = 0

    def add(self, name: str, part: StepPart, detail: dict | None = None) -> None:
        """Append one step.

        Parameters
        ----------
        name : str
            The step's name (``llm_call``, ``action``, ...).
        part : StepPart
            The validated arrays of its LLM call (``htc_core.formats.logprobs.StepPart``).
        detail : dict, optional
            Its diagnosis fields (an empty dict is stored as None).

        Returns
        -------
        None
            The step is in ``steps`` and ``details``.

        Examples
        --------
    >>> import numpy as np
    >>> from htc_core.formats.logprobs import StepPart
    >>> from htc_core.formats.records import RecordSink, TrajAcc
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
        >>> acc = TrajAcc("t1", "run.jsonl", 1)
        >>> acc.add("llm_call", StepPart(np.array([-0.2]), None, ["ok"]))
        >>> [(name, part.lp.tolist()) for name, part in acc.steps], acc.details
        ([('llm_call', [-0.2])], [None])
        """
        self.steps.append((name, part))
        self.details.append(detail or None)


def take_meta(acc: TrajAcc, obj: dict, report: LoadReport, file: str, line: int | None) -> None:
    """Copy trajectory-level fields (success, question, ...) from a record into ``acc``."""
    for key in META_KEYS:
        v = explicit_answer(obj) if key == "answer" else obj.get(key)
        if v is not None and key not in acc.meta:
            acc.meta[key] = optional_text(v)
    if "success" in obj and obj["success"] is not None:
        try:
            acc.meta["success"] = success_label(obj["success"])
        except FieldError as e:
            report.warn(file, line, f"success {e.reason}; ignored", field="success", value=obj["success"],
                        trajectory_id=acc.id)
    if obj.get("verbalized_confidence") is not None:
        vc, warn = verbalized(obj["verbalized_confidence"])
        if warn:
            report.warn(file, line, f"verbalized_confidence {warn}", field="verbalized_confidence",
                        value=obj["verbalized_confidence"], trajectory_id=acc.id)
        if vc is not None:
            acc.meta["verbalized_confidence"] = vc
    md = obj.get("metadata")
    if isinstance(md, dict):
        for k, v in md.items():
            acc.metadata.setdefault(k, v)


def fail(acc: TrajAcc | None, report: LoadReport, file: str, line: int | None, reason: str, *,
         field: str | None = None, value: Any = None, has_value: bool = False, tid: str | None = None) -> None:
    """Report an error. The first error of a trajectory counts it as rejected; later ones are listed only."""
    if acc is not None and acc.failed:
        report._add(Problem(file, line, field, shorten(value) if (value is not None or has_value) else None,
                            reason, acc.id, "error"))
        return
    if acc is not None:
        acc.failed = True
    report.error(file, line, reason, field=field, value=value, has_value=has_value,
                 trajectory_id=acc.id if acc is not None else tid)


class guarded:  # noqa: N801 - used as a function: ``with guarded(report, file, line):``
    """Run the reading of one record (a line, an array element, a document): any exception becomes an error
    of that record (rejecting ``acc`` when given) and the reader goes on with the next one.

    A class rather than a ``contextmanager`` generator: it runs once or twice per line of every file read
    (about 2 us less each)."""

    __slots__ = ("report", "file", "line", "acc", "what")

    def __init__(self, report: LoadReport, file: str, line: int | None, acc: TrajAcc | None = None,
                 what: str = "record"):
        self.report, self.file, self.line, self.acc, self.what = report, file, line, acc, what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, tb) -> bool:
        if kind is None or not issubclass(kind, Exception):  # one bad record never costs the others
            return False
        fail(self.acc, self.report, self.file, self.line,
             f"this {self.what} could not be read ({kind.__name__}: {shorten(str(e), 120)})")
        return True


def build_record(acc: TrajAcc, report: LoadReport, defaults: dict | None, framework: str | None = None
                 ) -> TrajectoryRecord | None:
    """Turn an accumulated trajectory into a record (or report why it is rejected)."""
    if acc.failed:
        return None
    defaults = defaults or {}
    rec = TrajectoryRecord(id=acc.id, steps_logprob=[], steps_top=[], steps_name=[], steps_text=[],
                           steps_tokens=[])
    dropped = 0
    clipped = 0
    details: list[dict | None] = []
    for (name, part), detail in zip(acc.steps, acc.details + [None] * (len(acc.steps) - len(acc.details))):
        if len(part.lp) == 0:
            dropped += 1
            continue
        details.append(detail)
        clipped += part.clipped
        rec.steps_logprob.append(part.lp)
        rec.steps_top.append(part.top)
        rec.steps_tokens.append(part.tokens)
        rec.steps_name.append(name)
        rec.steps_text.append(part.text)
    if not rec.steps_logprob:
        report.error(acc.file, acc.line, f"trajectory rejected: {_why_no_steps(acc)}", field="steps",
                     trajectory_id=acc.id)
        return None
    if dropped:
        report.empty_steps_dropped += dropped
        report.warn(acc.file, acc.line, f"{dropped} empty step(s) dropped", field="steps", trajectory_id=acc.id)
    if clipped:
        report.clipped_values += clipped
        report.warn(acc.file, acc.line, f"{clipped} tiny positive logprob(s) clipped to 0", trajectory_id=acc.id)
    m = acc.meta
    for key in META_KEYS:
        val = m.get(key)
        setattr(rec, key, val if val is not None else defaults.get(key))
    if rec.framework is None and framework:
        rec.framework = framework
    rec.success = m.get("success")
    rec.verbalized_confidence = m.get("verbalized_confidence")
    rec.metadata = acc.metadata
    rec.steps_detail = detail_lists(details)
    rec.source = defaults.get("source", acc.file)
    return rec


def _why_no_steps(acc: TrajAcc) -> str:
    """Why a trajectory has no usable step (for the rejection message)."""
    if not acc.steps and acc.missing:
        return f"none of its {acc.missing} LLM call(s) has logprobs"
    if not acc.steps:
        return "no LLM calls with logprobs"
    why = f"all {len(acc.steps)} steps are empty (no tokens)"
    if acc.missing:
        why += f", and {acc.missing} call(s) have no logprobs"
    return why


def add_record(builder: TraceSetBuilder, rec: TrajectoryRecord, report: LoadReport, file: str,
               line: int | None, seen: set[str]) -> None:
    """Add a record: a repeated id in one file is an error, one from an earlier file is renamed. A blank answer
    is taken from the steps first (``answers.fill_answer_question``: every reader ends here)."""
    fill_answer_question(rec)
    if rec.id in seen:
        report.error(file, line, "duplicate trajectory id in this file (the first one is kept)", field="id",
                     value=rec.id, trajectory_id=rec.id)
        return
    seen.add(rec.id)
    if builder.has_id(rec.id):
        new_id = unique_id(builder, rec.id, file)
        report.warn(file, line, f"trajectory id also used in an earlier file; kept as {new_id!r}", field="id",
                    value=rec.id, trajectory_id=rec.id)
        rec.id = new_id
    builder.add(rec)
    report.trajectories_read += 1


@dataclass
class RecordSink:
    """Where a reader's finished trajectories go: built into records (or reported) and added to ``builder``.

    The id rules of every format apply within ``file``: a repeated id is an error (the first is kept), an id an
    earlier file used is kept as ``id@file-stem``; a blank answer is taken from the steps.

    Parameters
    ----------
    builder : TraceSetBuilder
        Where the records go.
    report : LoadReport
        Where the problems go.
    defaults : dict or None
        Metadata filled in where a trajectory has none.
    file : str
        The file being read (for the report and the id rules).
    framework : str, optional
        The framework recorded where a trajectory names none (``smolagents``).
    seen : set of str
        The ids already read from ``file``.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.formats.logprobs import StepPart
    >>> from htc_core.formats.records import RecordSink, TrajAcc
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> sink = RecordSink(builder, report, {"dataset": "mine"}, "run.jsonl")
    >>> acc = TrajAcc("t1", "run.jsonl", 1)
    >>> acc.add("llm_call", StepPart(np.array([-0.1, -0.3]), None, ["Hi", "!"], "Hi!"))
    >>> sink.finish(acc, 1)
    >>> builder.build().meta.loc[0, ["id", "dataset"]].tolist()
    ['t1', 'mine']
    """

    builder: TraceSetBuilder
    report: LoadReport
    defaults: dict | None
    file: str
    framework: str | None = None
    seen: set[str] = field(default_factory=set)

    def finish(self, acc: TrajAcc | None, line: int | None) -> None:
        """Build ``acc`` into a record and add it, or report why it is rejected (no step with tokens).

        Parameters
        ----------
        acc : TrajAcc or None
            The finished trajectory (None: nothing to do, its problem was already reported).
        line : int or None
            Its line, for the report.

        Returns
        -------
        None
            The trajectory is in ``builder``, or its rejection in ``report``.

        Examples
        --------
    >>> import numpy as np
    >>> from htc_core.formats.logprobs import StepPart
    >>> from htc_core.formats.records import RecordSink, TrajAcc
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
        >>> builder, report = TraceSetBuilder(), LoadReport()
        >>> RecordSink(builder, report, None, "run.jsonl").finish(TrajAcc("t2", "run.jsonl", 2), 2)
        >>> len(builder), [(p.line, p.reason) for p in report.errors]
        (0, [(2, 'trajectory rejected: no LLM calls with logprobs')])
        """
        if acc is None:
            return
        rec = build_record(acc, self.report, self.defaults, self.framework)
        if rec is not None:
            add_record(self.builder, rec, self.report, self.file, line, self.seen)


def find_id(obj: dict, keys: tuple[str, ...] = ("id",) + ID_KEYS) -> str | None:
    """The first of ``keys`` holding a usable scalar id, as text, or None."""
    for k in keys:
        v = obj.get(k)
        if v is not None and not isinstance(v, (dict, list, bool)) and str(v).strip():
            return str(v)
    return None


def unique_id(builder: TraceSetBuilder, tid: str, file: str) -> str:
    """``tid@file-stem`` (then ``-2``, ``-3``, ...): an id not yet in ``builder``."""
    cand = f"{tid}@{stem(file)}"
    n = 2
    while builder.has_id(cand):
        cand = f"{tid}@{stem(file)}-{n}"
        n += 1
    return cand


def stem(file: str) -> str:
    """A file's name without its directory and suffixes (``runs.jsonl.gz`` -> ``runs``)."""
    return Path(file).name.split(".")[0]
