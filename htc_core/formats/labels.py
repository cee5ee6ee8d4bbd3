"""Join outcome labels and metadata onto a trace set by trajectory id.

A labels file is CSV (header row) or JSONL/JSON (objects), one row per
trajectory:

- the id column is the first of ``id``, ``trajectory_id``, ``trace_id``,
  ``run_id``, ``session_id``, ``conversation_id`` present;
- ``success`` (also read from ``label``, ``correct`` or ``is_correct`` when
  ``success`` is absent): true/false, 1/0, yes/no, correct/incorrect,
  pass/fail; empty means unlabeled (an existing label is kept);
- ``dataset``, ``model``, ``framework``, ``question``, ``answer``, ``gold``
  (text) and ``verbalized_confidence`` (0-1 or a percentage) when present;
- every other column is added to the trajectory's ``metadata`` (existing
  keys are not overwritten).

Values in the labels file override values from the trace files (a warning
counts the success labels that changed), except a non-empty ``model`` name
from the trace: the model that produced the tokens is the trace's to say, so a
labels row naming another model is ignored for that field and a warning lists
the conflicts (otherwise one model shows up under two names). Trajectories without a row, and rows
without a trajectory, are reported as warnings listing the first ids.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..report import LoadReport
from ..traces import MetaTable, TraceSet
from .common import type_name, verbalized
from .label_rows import label_rows
from .records import ID_KEYS

ID_COLUMNS = ("id",) + ID_KEYS
SUCCESS_COLUMNS = ("success", "label", "correct", "is_correct")
TEXT_COLUMNS = ("dataset", "model", "framework", "question", "answer", "gold")
_TRUE = {"true", "t", "yes", "y", "1", "1.0", "correct", "success", "pass", "passed"}
_FALSE = {"false", "f", "no", "n", "0", "0.0", "incorrect", "wrong", "failure", "fail", "failed"}
_EMPTY = {"", "null", "none", "na", "n/a", "nan"}
_NOT_A_NUMBER = {"na", "n/a", "nan"}
# file suffixes a model name may carry in one source and not in the other (``llama-3-8b.Q4_K_M.gguf``)
MODEL_SUFFIXES = re.compile(r"\.(gguf|ggml|bin|safetensors|pt|pth|onnx|llamafile)$", re.IGNORECASE)

__all__ = ["join", "read_labels", "LabelJoin", "parse_success", "same_model", "ID_COLUMNS", "SUCCESS_COLUMNS",
           "TEXT_COLUMNS", "MODEL_SUFFIXES"]


def same_model(a: str, b: str) -> bool:
    """Whether two model names name the same model.

    They do when equal, or equal once a model-file suffix (``.gguf``, ``.safetensors``, ...
    :data:`MODEL_SUFFIXES`) and surrounding blanks are dropped. A join keeps the trace's model name either way,
    and counts the rows naming another model as conflicts.

    Parameters
    ----------
    a, b : str
        The two names (anything else is converted with ``str``).

    Returns
    -------
    bool
        True when they name the same model.

    Examples
    --------
    >>> from htc_core.formats.labels import same_model
    >>> same_model("llama-3-8b.Q4_K_M.gguf", "llama-3-8b.Q4_K_M"), same_model("llama-3-8b", "llama-3-70b")
    (True, False)
    """
    a, b = str(a).strip(), str(b).strip()
    return a == b or MODEL_SUFFIXES.sub("", a) == MODEL_SUFFIXES.sub("", b)


@dataclass
class LabelJoin:
    """What a join matched: the counts and ids behind the warnings of :func:`join`.

    Parameters
    ----------
    file : str
        The labels file.
    rows : int, default=0
        Its usable rows.
    matched : int, default=0
        Trajectories that found a row.
    unlabeled_ids : list of str
        Ids of the trajectories without a row.
    unmatched_label_ids : list of str
        Ids of the rows without a trajectory.
    success_changed : int, default=0
        Trajectories whose existing success label the file changed.
    labeled : int, default=0
        Trajectories that received a success label from the file.
    trajectories : int, default=0
        Trajectories the labels were joined to.
    model_conflicts : list of (str, str, str)
        ``(id, model in the trace, model in the labels file)`` where the two differ; the trace's name is kept.

    See Also
    --------
    join : makes one.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.formats.labels import join
    >>> ts, _ = htc.load("tests/fixtures/formats/chat_trajectories.jsonl")
    >>> _, info = join(ts, "tests/fixtures/formats/labels.csv")
    >>> info.rows, info.matched, info.unlabeled_ids, info.unmatched_label_ids
    (4, 3, ['q-gold'], ['q-unknown'])
    """

    file: str
    rows: int = 0
    matched: int = 0
    unlabeled_ids: list[str] = field(default_factory=list)
    unmatched_label_ids: list[str] = field(default_factory=list)
    success_changed: int = 0
    labeled: int = 0  # trajectories that received a success label from the file
    trajectories: int = 0  # trajectories the labels were joined to
    # (id, model in the trace, model in the labels file) where the two differ; the trace's name is kept
    model_conflicts: list[tuple[str, str, str]] = field(default_factory=list)

    def summary(self) -> str:
        """One line: what the join did (printed once by every command given ``--labels``).

        Returns
        -------
        str
            The counts of the join in words.

        Examples
        --------
        >>> from htc_core.formats.labels import LabelJoin
        >>> LabelJoin("labels.csv", rows=3, matched=2, trajectories=2, labeled=2,
        ...           unmatched_label_ids=["q-9"]).summary()
        'labels labels.csv: 3 rows; 2 of 2 runs matched, 2 got a success label; 0 runs without a row, 1 rows without a run, 0 model-name conflicts'
        """
        return (f"labels {self.file}: {self.rows} rows; {self.matched} of {self.trajectories} runs matched, "
                f"{self.labeled} got a success label; {len(self.unlabeled_ids)} runs without a row, "
                f"{len(self.unmatched_label_ids)} rows without a run, {len(self.model_conflicts)} model-name "
                "conflicts")


def parse_success(v: Any) -> tuple[bool | None, bool]:
    """Read one success label: booleans, 1/0, and the words true/false, yes/no, correct/incorrect, pass/fail.

    Parameters
    ----------
    v : object
        The cell of a labels file (str, bool, number or None).

    Returns
    -------
    value : bool or None
        The label; None for an empty cell (``""``, ``null``, ``none``) or an unrecognized value.
    ok : bool
        False when ``v`` is not a recognizable label (NaN, ``"maybe"``, 0.5, ...).

    Examples
    --------
    >>> from htc_core.formats.labels import parse_success
    >>> parse_success("Yes"), parse_success(0), parse_success(""), parse_success("maybe")
    ((True, True), (False, True), (None, True), (None, False))
    """
    if v is None:
        return None, True
    if isinstance(v, bool):
        return v, True
    if isinstance(v, (int, float)):
        if v == 1:
            return True, True
        if v == 0:
            return False, True
        return None, False   # NaN included: ``read_labels`` says so
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE:
            return True, True
        if s in _FALSE:
            return False, True
        if s in _EMPTY and s not in _NOT_A_NUMBER:
            return None, True
    return None, False


def read_labels(path: str | os.PathLike, report: LoadReport) -> dict[str, dict]:
    """Read a labels file (CSV with a header row, JSONL or a JSON array of objects) by trajectory id.

    A bad row is reported (file, line, field, value) in ``report`` and skipped; the other rows are kept. A
    file without an id column, or in which no row has a usable success value, is an error in ``report``.

    Parameters
    ----------
    path : str or path
        The labels file.
    report : LoadReport
        Where the problems go.

    Returns
    -------
    dict
        Trajectory id -> ``{column: parsed value}``, only the columns present: ``success`` (bool), the text
        columns, ``verbalized_confidence`` (float in [0, 1]), ``metadata`` (the other columns) and ``_line`` (the
        row's line in the file).

    Examples
    --------
    >>> from htc_core.formats.labels import read_labels
    >>> from htc_core.report import LoadReport
    >>> rows = read_labels("tests/fixtures/formats/labels.csv", LoadReport())
    >>> list(rows)
    ['q-paris', 'q-tokyo', 'q-mars', 'q-unknown']
    >>> rows["q-paris"]
    {'_line': 2, 'success': True, 'gold': 'Paris', 'verbalized_confidence': 0.8, 'metadata': {'annotator': 'fixture'}}
    """
    path = Path(path)
    file = str(path)
    out: dict[str, dict] = {}
    id_col = None
    if not path.is_file():
        report.error(file, None, "labels file not found", rejects=False)
        return out
    header: tuple[int | None, list] | None = None
    for line, row in label_rows(path, report):
        if header is None and isinstance(row, dict):
            header = (line, list(row))
        if not isinstance(row, dict):
            report.warn(file, line, f"a labels row must be an object, got {type_name(row)}; ignored",
                        value=row)
            continue
        if id_col is None or id_col not in row:
            id_col = next((c for c in ID_COLUMNS if c in row), None)
            if id_col is None:
                report.error(file, line, f"no id column (one of {', '.join(ID_COLUMNS)}); columns: "
                                         f"{', '.join(map(str, row))[:120]}", rejects=False)
                return out
        tid = row.get(id_col)
        if tid is None or (isinstance(tid, str) and not tid.strip()) or isinstance(tid, (dict, list, bool)):
            report.warn(file, line, "row without a trajectory id; ignored", field=id_col, value=tid)
            continue
        tid = str(tid).strip()
        if tid in out:
            report.warn(file, line, "duplicate id in the labels file (the first row is kept)", field=id_col,
                        value=tid, trajectory_id=tid)
            continue
        try:
            out[tid] = _parse_row(row, id_col, tid, line, file, report)
        except Exception as e:  # noqa: BLE001 - one bad row never costs the others
            report.error(file, line, f"labels row could not be read ({type(e).__name__}: {str(e)[:120]}); "
                                     "row ignored", trajectory_id=tid, rejects=False)
    if out and header is not None and not any("success" in r for r in out.values()):
        _no_success(file, header, report)
    return out


def _no_success(file: str, header: tuple[int | None, list], report: LoadReport) -> None:
    """Not one row gave a success label: an error naming the columns seen (nothing is joined silently)."""
    line, columns = header
    shown = ", ".join(map(str, columns))[:160]
    if not any(c in columns for c in SUCCESS_COLUMNS):
        report.error(file, line, f"no success column (one of {', '.join(SUCCESS_COLUMNS)}); columns: {shown}. "
                                 "No run gets a label from this file: rename the outcome column to 'success'",
                     field="success", rejects=False)
    else:
        report.error(file, None, "no row has a usable success value (true/false, 1/0, yes/no, correct/incorrect); "
                                 "no run gets a label from this file", field="success", rejects=False)


def _parse_row(row: dict, id_col: str, tid: str, line: int | None, file: str, report: LoadReport) -> dict:
    """The parsed values of one labels row (success, text columns, verbalized confidence, the rest as metadata)."""
    rec: dict[str, Any] = {"_line": line}
    s_col = next((c for c in SUCCESS_COLUMNS if c in row), None)
    if s_col is not None:
        val, ok = parse_success(row[s_col])
        if not ok:
            nan = row[s_col] != row[s_col] or str(row[s_col]).strip().lower() in _NOT_A_NUMBER
            reason = ("success is NaN, not a label: the run keeps its previous label (unlabeled if none)" if nan
                      else "success label is not true/false, 1/0, yes/no; ignored")
            report.warn(file, line, reason, field=s_col, value=row[s_col], trajectory_id=tid)
        elif val is not None:
            rec["success"] = val
    for c in TEXT_COLUMNS:
        v = row.get(c)
        if v is not None and not (isinstance(v, str) and v.strip().lower() in _EMPTY and c != "answer"):
            rec[c] = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    if "verbalized_confidence" in row and row["verbalized_confidence"] not in (None, ""):
        vc, warn = verbalized(row["verbalized_confidence"])
        if warn:
            report.warn(file, line, f"verbalized_confidence {warn}", field="verbalized_confidence",
                        value=row["verbalized_confidence"], trajectory_id=tid)
        if vc is not None:
            rec["verbalized_confidence"] = vc
    skip = {id_col, s_col, "verbalized_confidence", *TEXT_COLUMNS}
    extra = {k: v for k, v in row.items() if k not in skip and k is not None and v not in (None, "")}
    if extra:
        rec["metadata"] = extra
    return rec


def join(ts: TraceSet, path: str | os.PathLike, *, report: LoadReport | None = None,
         max_listed: int = 5) -> tuple[TraceSet, LabelJoin]:
    """A copy of ``ts`` with the labels file's values joined by id, and what matched.

    The rules are the module's (see :mod:`htc_core.formats.labels`): the file's values win except a non-empty
    model name of the trace; trajectories without a row and rows without a trajectory are warnings in
    ``report`` listing the first ``max_listed`` ids. ``ts`` itself is not changed.

    Parameters
    ----------
    ts : TraceSet
        The trajectories.
    path : str or path
        The labels file (CSV, JSONL or JSON).
    report : LoadReport, optional
        Where the problems and the join's summary (``report.labels``) go (a new one by default).
    max_listed : int, default=5
        The most ids a warning lists.

    Returns
    -------
    ts : TraceSet
        The trajectories with the labels joined.
    info : LabelJoin
        What matched.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.formats.labels import join
    >>> ts, _ = htc.load("tests/fixtures/formats/chat_trajectories.jsonl")
    >>> labeled, info = join(ts, "tests/fixtures/formats/labels.csv")
    >>> labeled.meta[["id", "gold", "verbalized_confidence"]].head(2)
            id   gold  verbalized_confidence
    0  q-paris  Paris                    0.8
    1  q-tokyo  Tokyo                    0.8
    >>> info.matched, info.trajectories
    (3, 4)
    """
    report = report if report is not None else LoadReport()
    file = str(path)
    labels = read_labels(path, report)
    info = LabelJoin(file=file, rows=len(labels))
    if not labels:
        if path and Path(path).is_file():
            report.warn(file, None, "the labels file holds no usable rows; nothing joined")
        return ts, info
    used: set[str] = set()
    ts = apply_labels(ts, labels, info, used)
    finish_join(info, labels, used, report, max_listed)
    return ts, info


def apply_labels(ts: TraceSet, labels: dict[str, dict], info: LabelJoin, used: set[str]) -> TraceSet:
    """A copy of ``ts`` with the rows of ``labels`` (``read_labels``) joined by id (internal: :func:`join`).

    Counts go to ``info`` and the matched ids to ``used``. Called once per chunk when reading in chunks
    (``formats.chunks``), then ``finish_join`` reports over all of them.
    """
    cols = _Columns.of(ts)
    for i, tid in enumerate(cols.ids):
        row = labels.get(tid)
        if row is None:
            info.unlabeled_ids.append(tid)
            continue
        used.add(tid)
        info.matched += 1
        trace_model = cols.text["model"][i]
        if "model" in row and trace_model not in (None, "") and row["model"] not in (None, ""):
            if not same_model(trace_model, row["model"]):
                info.model_conflicts.append((tid, str(trace_model), str(row["model"])))
            row = {k: v for k, v in row.items() if k != "model"}   # the trace's name is kept either way
        info.labeled += "success" in row
        if cols.apply(i, row):
            info.success_changed += 1
    info.trajectories += ts.n_trajectories
    return dataclasses.replace(ts, meta=cols.meta(ts))


def finish_join(info: LabelJoin, labels: dict[str, dict], used: set[str], report: LoadReport,
                max_listed: int = 5) -> None:
    """After every chunk: the labels rows that matched no trajectory, and the warnings."""
    info.unmatched_label_ids = [t for t in labels if t not in used]
    report.labels = {"file": info.file, "rows": info.rows, "matched": info.matched,
                     "unlabeled": len(info.unlabeled_ids), "unmatched_rows": len(info.unmatched_label_ids),
                     "model_conflicts": len(info.model_conflicts), "labeled": info.labeled,
                     "summary": info.summary()}
    _report_join(info, labels, info.trajectories, report, max_listed)


@dataclass
class _Columns:
    """The metadata columns a join may change, as lists (written back with ``write``)."""

    ids: list
    success: list
    vcs: np.ndarray
    text: dict[str, list]
    mds: list

    @classmethod
    def of(cls, ts: TraceSet) -> "_Columns":
        """The columns of a trace set's metadata, copied (``success`` as True / False / None), without building
        its DataFrame."""
        success = [None if np.isnan(v) else bool(v) for v in ts.meta_column("success").tolist()]
        return cls(ts.meta_column("id").tolist(), success, ts.meta_column("verbalized_confidence").copy(),
                   {c: ts.meta_column(c).tolist() for c in TEXT_COLUMNS}, ts.meta_column("metadata").tolist())

    def apply(self, i: int, row: dict) -> bool:
        """Write a labels row into trajectory ``i``; True when it changed an existing success label."""
        changed = False
        if "success" in row:
            old = self.success[i]
            if old is not None and old != row["success"]:
                changed = True
            self.success[i] = row["success"]
        for c in TEXT_COLUMNS:
            if c in row:
                self.text[c][i] = row[c]
        if "verbalized_confidence" in row:
            self.vcs[i] = row["verbalized_confidence"]
        if "metadata" in row:
            try:
                md = json.loads(self.mds[i]) if self.mds[i] else {}
            except (TypeError, ValueError):
                md = {}
            for k, v in row["metadata"].items():
                md.setdefault(k, v)
            self.mds[i] = json.dumps(md, ensure_ascii=False, default=str)
        return changed

    def meta(self, ts: TraceSet):
        """The trace set's metadata with the joined columns: a ``MetaTable``, or a copy of its DataFrame (with
        any extra column) when it holds one."""
        cols = {"success": np.array([np.nan if v is None else float(bool(v)) for v in self.success]),
                "verbalized_confidence": self.vcs, "metadata": _objects(self.mds),
                **{c: _objects(self.text[c]) for c in TEXT_COLUMNS}}
        if not ts.has_meta_frame:
            return MetaTable({**{c: ts.meta_column(c) for c in ("id", "source")}, **cols})
        meta = ts.meta.copy()
        joined = MetaTable({**{c: meta[c].to_numpy(dtype=object) for c in ("id", "source")}, **cols}).to_frame()
        for c in cols:
            meta[c] = joined[c]
        return meta


def _objects(values: list) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def _report_join(info: LabelJoin, labels: dict[str, dict], n: int, report: LoadReport, max_listed: int) -> None:
    """Warnings: trajectories without a row, rows without a trajectory, success labels changed."""
    file = info.file

    def listed(xs: list[str]) -> str:
        head = ", ".join(repr(x) for x in xs[:max_listed])
        return head + (f" and {len(xs) - max_listed} more" if len(xs) > max_listed else "")

    if info.unlabeled_ids:
        report.warn(file, None, f"{len(info.unlabeled_ids)} of {n} trajectories have no row in the labels file: "
                                f"{listed(info.unlabeled_ids)}", field="id")
    if info.unmatched_label_ids:
        first_line = labels[info.unmatched_label_ids[0]].get("_line")
        report.warn(file, first_line, f"{len(info.unmatched_label_ids)} labels row(s) match no trajectory: "
                                      f"{listed(info.unmatched_label_ids)}", field="id")
    if info.model_conflicts:
        shown = "; ".join(f"{t!r}: trace {a!r}, labels {b!r}" for t, a, b in info.model_conflicts[:max_listed])
        more = len(info.model_conflicts) - max_listed
        report.warn(file, None, f"the labels file names another model than the trace for {len(info.model_conflicts)} "
                                f"trajectories; the trace's model name is kept: {shown}"
                                + (f" and {more} more" if more > 0 else ""), field="model")
    if info.success_changed:
        report.warn(file, None, f"the labels file changed the success label of {info.success_changed} "
                                f"trajectories (the labels file wins)", field="success")
