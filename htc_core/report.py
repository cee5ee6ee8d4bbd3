"""Load reports: what a reader kept, rejected, dropped and clipped, and why."""

from __future__ import annotations

import reprlib
from dataclasses import asdict, dataclass, field
from typing import Any

# shorten is the readers' helper (not public)
__all__ = ["LoadReport", "Problem"]

# A bounded repr: a hostile value (an array nested 50,000 deep, a 10 MB string, a 5,000-digit integer) is
# shortened without walking or printing all of it.
_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
_REPR.maxlevel, _REPR.maxstring, _REPR.maxlong, _REPR.maxother = 3, 80, 40, 80
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 8


def shorten(value: Any, limit: int = 60) -> str:
    """A value's repr cut to ``limit`` characters for a report line (a failing repr shown as ``<type>``)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # a value whose repr fails still gets a report line
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Problem:
    """One problem found in an input: where it is, what is wrong, with which value.

    Parameters
    ----------
    file : str
        The file (or upload name).
    line : int or None
        The line (1-based), None when the problem is not on one line.
    field : str or None
        The field, as a path (``steps[0].logprobs[1]``).
    value : str or None
        The offending value, shortened for display.
    reason : str
        What is wrong.
    trajectory_id : str, optional
        The trajectory's id, when known.
    severity : {"error", "warning"}, default "error"
        ``error``: the trajectory was rejected; ``warning``: kept, with a change.

    Examples
    --------
    >>> import htc_core as htc
    >>> data = (b'{"id": "a", "success": true, "steps": [{"name": "s", "logprobs": [-0.1, -0.2]}]}\\n'
    ...         b'{"id": "b", "steps": [{"name": "s", "logprobs": [-0.1, 0.5]}]}\\n')
    >>> ts, report = htc.load_bytes(data, name="runs.jsonl")
    >>> problem = report.problems[0]
    >>> problem.line, problem.field, problem.value, problem.severity
    (2, 'steps[0].logprobs[1]', '0.5', 'error')
    >>> print(problem)
    runs.jsonl:2 id='b' field steps[0].logprobs[1] value 0.5: must be <= 0 (a log-probability)
    """

    file: str
    line: int | None
    field: str | None
    value: str | None
    reason: str
    trajectory_id: str | None = None
    severity: str = "error"

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        parts = [where]
        if self.trajectory_id is not None:
            parts.append(f"id={self.trajectory_id!r}")
        if self.field is not None:
            parts.append(f"field {self.field}")
        if self.value is not None:
            parts.append(f"value {self.value}")
        return f"{' '.join(parts)}: {self.reason}"


@dataclass
class LoadReport:
    """Counts and problems of one load (one or many files).

    Every rejected record and every value changed on the way in is counted here, and each problem names
    its file, line, field and value; :meth:`summary` says it in one paragraph.

    Parameters
    ----------
    files : list of str
        The files read.
    lines_read, trajectories_read, rejected : int
        Lines read, trajectories kept, trajectories rejected.
    empty_steps_dropped, clipped_values, skipped_lines : int
        Steps without tokens dropped, logprobs in (0, 1e-6] clipped to 0, blank or comment lines skipped.
    problems : list of Problem
        The problems (file, line, field, value, reason, trajectory id, severity), at most ``max_problems``.
    max_problems : int, default=1000
        How many problems are kept; ``problems_truncated`` counts the others.
    problems_truncated : int
        Problems not kept.
    formats : dict
        File -> the format it was read as.
    labels : dict or None
        The labels join, when a labels file was given (rows, matched, unlabeled, unmatched rows).
    tool_lines : int
        Lines or spans read as a step's tool call and observation (call-log tool lines, OpenTelemetry TOOL
        spans).

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, report = htc.load("sample_runs/units/")
    >>> report.trajectories_read, report.rejected, len(report.files)
    (500, 0, 2)
    """

    files: list[str] = field(default_factory=list)
    lines_read: int = 0
    trajectories_read: int = 0
    rejected: int = 0
    empty_steps_dropped: int = 0
    clipped_values: int = 0
    skipped_lines: int = 0
    # lines or spans read as a step's tool call / observation (call-log tool lines, OpenTelemetry TOOL spans)
    tool_lines: int = 0
    problems: list[Problem] = field(default_factory=list)
    max_problems: int = 1000
    problems_truncated: int = 0
    # file -> the format it was read as (detected with format="auto", else the one asked for)
    formats: dict = field(default_factory=dict)
    # the labels join, when a labels file was given: file, rows, matched (trajectories that got a row),
    # unlabeled (trajectories without a row), unmatched_rows (rows that matched no trajectory), model_conflicts
    labels: dict | None = None

    def error(self, file: str, line: int | None, reason: str, *, field: str | None = None,
              value: Any = None, trajectory_id: str | None = None, has_value: bool = False,
              rejects: bool = True) -> None:
        """Record an error (what a reader calls when it rejects a record).

        Parameters
        ----------
        file : str
            The file.
        line : int or None
            The line (1-based).
        reason : str
            What is wrong.
        field : str, optional
            The field's path.
        value : object, optional
            The offending value (shortened for display).
        trajectory_id : str, optional
            The trajectory's id.
        has_value : bool, default False
            Show ``value`` even when it is None (a null where a value was needed).
        rejects : bool, default True
            Count a rejected trajectory; False for an error that costs none (a bad line of a labels file).

        Returns
        -------
        None

        Examples
        --------
        >>> from htc_core.report import LoadReport
        >>> report = LoadReport()
        >>> report.error("runs.jsonl", 7, "must be a list", field="steps", value=None, has_value=True)
        >>> report.rejected, str(report.errors[0])
        (1, 'runs.jsonl:7 field steps value None: must be a list')
        """
        self.rejected += bool(rejects)
        self._add(Problem(file, line, field, shorten(value) if (value is not None or has_value) else None,
                          reason, trajectory_id, "error"))

    def warn(self, file: str, line: int | None, reason: str, *, field: str | None = None,
             value: Any = None, trajectory_id: str | None = None) -> None:
        """Record a warning: the record was kept, with a change (a value clipped, a step dropped).

        Parameters
        ----------
        file : str
            The file.
        line : int or None
            The line (1-based).
        reason : str
            What was changed.
        field : str, optional
            The field's path.
        value : object, optional
            The value concerned (shortened for display).
        trajectory_id : str, optional
            The trajectory's id.

        Returns
        -------
        None

        Examples
        --------
        >>> from htc_core.report import LoadReport
        >>> report = LoadReport()
        >>> report.warn("runs.jsonl", 3, "1 empty step(s) dropped", field="steps", trajectory_id="a")
        >>> report.rejected, [str(p) for p in report.warnings]
        (0, ["runs.jsonl:3 id='a' field steps: 1 empty step(s) dropped"])
        """
        self._add(Problem(file, line, field, shorten(value) if value is not None else None,
                          reason, trajectory_id, "warning"))

    def _add(self, p: Problem) -> None:
        if len(self.problems) < self.max_problems:
            self.problems.append(p)
        else:
            self.problems_truncated += 1

    @property
    def errors(self) -> list[Problem]:
        """The problems of severity ``error`` (among those kept).

        Returns
        -------
        list of Problem

        Examples
        --------
        >>> import htc_core as htc
        >>> data = (b'{"id": "a", "success": true, "steps": [{"name": "s", "logprobs": [-0.1, -0.2]}]}\\n'
        ...         b'{"id": "b", "steps": [{"name": "s", "logprobs": [-0.1, 0.5]}]}\\n')
        >>> ts, report = htc.load_bytes(data, name="runs.jsonl")
        >>> [p.trajectory_id for p in report.errors]
        ['b']
        """
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        """The problems of severity ``warning``: records kept with a change.

        Returns
        -------
        list of Problem

        Examples
        --------
        >>> import htc_core as htc
        >>> data = b'{"id": "a", "steps": [{"name": "s", "logprobs": [-0.1, 1e-7]}]}\\n'
        >>> ts, report = htc.load_bytes(data, name="runs.jsonl")
        >>> [p.reason for p in report.warnings], report.clipped_values
        (['1 tiny positive logprob(s) clipped to 0'], 1)
        """
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        """Whether at least one trajectory was read.

        Returns
        -------
        bool

        Examples
        --------
        >>> from htc_core.report import LoadReport
        >>> LoadReport().ok, LoadReport(trajectories_read=3).ok
        (False, True)
        """
        return self.trajectories_read > 0

    def merge(self, other: "LoadReport") -> "LoadReport":
        """Add another load's counts, files, formats and problems to this report (in place).

        Parameters
        ----------
        other : LoadReport
            The other load (its labels join, when it has one, replaces this one's).

        Returns
        -------
        LoadReport
            This report.

        Examples
        --------
        >>> from htc_core.report import LoadReport
        >>> total = LoadReport(files=["a.jsonl"], trajectories_read=2)
        >>> total.merge(LoadReport(files=["b.jsonl"], trajectories_read=3, rejected=1)) is total
        True
        >>> total.files, total.trajectories_read, total.rejected
        (['a.jsonl', 'b.jsonl'], 5, 1)
        """
        self.files.extend(other.files)
        self.lines_read += other.lines_read
        self.trajectories_read += other.trajectories_read
        self.rejected += other.rejected
        self.empty_steps_dropped += other.empty_steps_dropped
        self.clipped_values += other.clipped_values
        self.skipped_lines += other.skipped_lines
        self.tool_lines += other.tool_lines
        self.formats.update(other.formats)
        if other.labels is not None:
            self.labels = other.labels
        for p in other.problems:
            self._add(p)
        self.problems_truncated += other.problems_truncated
        return self

    def to_dict(self) -> dict:
        """The report as plain values (for JSON), problems as dicts; ``max_problems`` left out.

        Returns
        -------
        dict

        Examples
        --------
        >>> import htc_core as htc
        >>> data = (b'{"id": "a", "success": true, "steps": [{"name": "s", "logprobs": [-0.1, -0.2]}]}\\n'
        ...         b'{"id": "b", "steps": [{"name": "s", "logprobs": [-0.1, 0.5]}]}\\n')
        >>> ts, report = htc.load_bytes(data, name="runs.jsonl")
        >>> d = report.to_dict()
        >>> d["trajectories_read"], d["rejected"], d["problems"][0]["field"]
        (1, 1, 'steps[0].logprobs[1]')
        """
        d = asdict(self)
        d.pop("max_problems")
        return d

    def summary(self, max_lines: int = 10) -> str:
        """The load in a few lines: counts, then the first problems.

        Parameters
        ----------
        max_lines : int, default=10
            The most problems listed.

        Returns
        -------
        str

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, report = htc.load("sample_runs/units/")
        >>> print(report.summary().splitlines()[1])
        trajectories read: 500
        """
        lines = [
            f"files: {len(self.files)}",
            f"trajectories read: {self.trajectories_read}",
            f"rejected: {self.rejected}",
            f"empty steps dropped: {self.empty_steps_dropped}",
            f"values clipped to 0: {self.clipped_values}",
        ]
        if self.tool_lines:
            lines.append(f"tool calls / observations attached to steps: {self.tool_lines}")
        if self.skipped_lines:
            lines.append(f"lines skipped (not trajectories): {self.skipped_lines}")
        if self.labels is not None and self.labels.get("summary"):
            lines.append(self.labels["summary"])
        if self.problems:
            lines.append(f"problems ({len(self.problems) + self.problems_truncated}), first {min(max_lines, len(self.problems))}:")
            for p in self.problems[:max_lines]:
                lines.append(f"  [{p.severity}] {p}")
        return "\n".join(lines)
