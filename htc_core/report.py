"""Load reports: what a reader kept, rejected, dropped and clipped, and why."""

from __future__ import annotations

import reprlib
from dataclasses import asdict, dataclass, field
from typing import Any

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
    """One problem found in an input: where it is, what is wrong, with which value."""

    file: str
    line: int | None
    field: str | None
    value: str | None
    reason: str
    trajectory_id: str | None = None
    severity: str = "error"  # "error": the trajectory was rejected; "warning": kept, with a change

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
    #: lines or spans read as a step's tool call / observation (call-log tool lines, OpenTelemetry TOOL spans)
    tool_lines: int = 0
    problems: list[Problem] = field(default_factory=list)
    max_problems: int = 1000
    problems_truncated: int = 0
    #: file -> the format it was read as (detected with format="auto", else the one asked for)
    formats: dict = field(default_factory=dict)
    #: the labels join, when a labels file was given: file, rows, matched (trajectories that got a row),
    #: unlabeled (trajectories without a row), unmatched_rows (rows that matched no trajectory), model_conflicts
    labels: dict | None = None

    def error(self, file: str, line: int | None, reason: str, *, field: str | None = None,
              value: Any = None, trajectory_id: str | None = None, has_value: bool = False,
              rejects: bool = True) -> None:
        """An error; ``rejects=False`` for one that costs no trajectory (a bad line of a labels file)."""
        self.rejected += bool(rejects)
        self._add(Problem(file, line, field, shorten(value) if (value is not None or has_value) else None,
                          reason, trajectory_id, "error"))

    def warn(self, file: str, line: int | None, reason: str, *, field: str | None = None,
             value: Any = None, trajectory_id: str | None = None) -> None:
        self._add(Problem(file, line, field, shorten(value) if value is not None else None,
                          reason, trajectory_id, "warning"))

    def _add(self, p: Problem) -> None:
        if len(self.problems) < self.max_problems:
            self.problems.append(p)
        else:
            self.problems_truncated += 1

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return self.trajectories_read > 0

    def merge(self, other: "LoadReport") -> "LoadReport":
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
