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

import csv
import dataclasses
import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from ..report import LoadReport
from ..traces import TraceSet
from .common import type_name, verbalized
from .jsonio import ParseError, container_kind, iter_json_array, iter_lines, loads, read_document
from .records import ID_KEYS

ID_COLUMNS = ("id",) + ID_KEYS
SUCCESS_COLUMNS = ("success", "label", "correct", "is_correct")
TEXT_COLUMNS = ("dataset", "model", "framework", "question", "answer", "gold")
_TRUE = {"true", "t", "yes", "y", "1", "1.0", "correct", "success", "pass", "passed"}
_FALSE = {"false", "f", "no", "n", "0", "0.0", "incorrect", "wrong", "failure", "fail", "failed"}
_EMPTY = {"", "null", "none", "na", "n/a", "nan"}


@dataclass
class LabelJoin:
    """What a join matched."""

    file: str
    rows: int = 0
    matched: int = 0
    unlabeled_ids: list[str] = field(default_factory=list)
    unmatched_label_ids: list[str] = field(default_factory=list)
    success_changed: int = 0
    trajectories: int = 0  #: trajectories the labels were joined to
    #: (id, model in the trace, model in the labels file) where the two differ; the trace's name is kept
    model_conflicts: list[tuple[str, str, str]] = field(default_factory=list)


def parse_success(v: Any) -> tuple[bool | None, bool]:
    """(value, ok). ok is False when the value is not a recognizable label."""
    if v is None:
        return None, True
    if isinstance(v, bool):
        return v, True
    if isinstance(v, (int, float)):
        if v == 1:
            return True, True
        if v == 0:
            return False, True
        if v != v:
            return None, True
        return None, False
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE:
            return True, True
        if s in _FALSE:
            return False, True
        if s in _EMPTY:
            return None, True
    return None, False


def _rows(path: Path, report: LoadReport) -> Iterator[tuple[int | None, Any]]:
    """Yield (line, dict) from a CSV, JSONL or JSON-array labels file."""
    name = str(path).lower()
    if name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")):
        yield from _csv_rows(path, report)
        return
    kind = container_kind(path)
    if kind in ("json-array", "json-object"):
        yield from _json_rows(path, kind, report)
        return
    yield from _jsonl_rows(path, report)


def _csv_rows(path: Path, report: LoadReport) -> Iterator[tuple[int, dict]]:
    file = str(path)
    name = file.lower()
    opener = gzip.open if name.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh, delimiter="\t" if ".tsv" in name else ",")
            yield from _csv_reader_rows(reader, file, report)
    except OSError as e:
        report.error(file, None, f"cannot read labels file: {e}", rejects=False)


def _csv_reader_rows(reader: csv.DictReader, file: str, report: LoadReport) -> Iterator[tuple[int, dict]]:
    """The rows of a CSV reader; a malformed row (a field over the csv module's size limit, a stray quote)
    is reported at its own line and the rows after it are still read."""
    while True:
        before = reader.line_num
        try:
            row = next(reader)
        except StopIteration:
            return
        except UnicodeDecodeError as e:
            report.error(file, before + 1, f"invalid UTF-8 at byte {e.start}; the rest of the labels file is "
                                           "ignored", rejects=False)
            return
        except csv.Error as e:
            # each next() consumes at least one line, so this ends at the end of the file
            report.error(file, before + 1, f"malformed CSV row: {e}; row ignored", rejects=False)
            continue
        yield reader.line_num, row


def _json_rows(path: Path, kind: str, report: LoadReport) -> Iterator[tuple[int | None, Any]]:
    """A JSON array of rows, ``{"labels": [...]}`` or ``{id: success, ...}``."""
    file = str(path)
    try:
        if kind == "json-array":
            yield from iter_json_array(path, on_bad=lambda e: report.error(
                file, e.line, f"{e.reason}; row ignored", field=e.field, value=e.value, rejects=False))
            return
        doc = read_document(path)
        items = doc.get("labels") if isinstance(doc, dict) else None
        if isinstance(items, list):
            for r in items:
                yield None, r
        elif isinstance(doc, dict) and all(not isinstance(v, (dict, list)) for v in doc.values()):
            for k, v in doc.items():  # {"id": success, ...}
                yield None, {"id": k, "success": v}
        else:
            report.error(file, 1, "a JSON labels file must be an array of rows, {'labels': [...]} or {id: success}",
                         rejects=False)
    except ParseError as e:
        report.error(file, e.line, e.reason, field=e.field, value=e.value, rejects=False)


def _jsonl_rows(path: Path, report: LoadReport) -> Iterator[tuple[int, Any]]:
    file = str(path)
    try:
        for no, raw in iter_lines(path):
            if not raw.strip():
                continue
            try:
                yield no, loads(raw)
            except ParseError as e:
                report.error(file, no, f"{e.reason}; row ignored", field=e.field, value=e.value, rejects=False)
    except OSError as e:
        report.error(file, None, f"cannot read labels file: {e}", rejects=False)


def read_labels(path: str | os.PathLike, report: LoadReport) -> dict[str, dict]:
    """id -> {column: parsed value} (only columns present; '_line' holds the line)."""
    path = Path(path)
    file = str(path)
    out: dict[str, dict] = {}
    id_col = None
    if not path.is_file():
        report.error(file, None, "labels file not found", rejects=False)
        return out
    for line, row in _rows(path, report):
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
    return out


def _parse_row(row: dict, id_col: str, tid: str, line: int | None, file: str, report: LoadReport) -> dict:
    """The parsed values of one labels row (success, text columns, verbalized confidence, the rest as metadata)."""
    rec: dict[str, Any] = {"_line": line}
    s_col = next((c for c in SUCCESS_COLUMNS if c in row), None)
    if s_col is not None:
        val, ok = parse_success(row[s_col])
        if not ok:
            report.warn(file, line, "success label is not true/false, 1/0, yes/no; ignored", field=s_col,
                        value=row[s_col], trajectory_id=tid)
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
    """A copy of ``ts`` with the labels file's values joined by id, and what matched."""
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
    """A copy of ``ts`` with the rows of ``labels`` (``read_labels``) joined by id; counts go to ``info`` and the
    matched ids to ``used``. Called once per chunk when reading in chunks (``formats.chunks``), then
    ``finish_join`` reports over all of them."""
    meta = ts.meta.copy()
    cols = _Columns.of(meta)
    for i, tid in enumerate(cols.ids):
        row = labels.get(tid)
        if row is None:
            info.unlabeled_ids.append(tid)
            continue
        used.add(tid)
        info.matched += 1
        trace_model = cols.text["model"][i]
        if "model" in row and trace_model not in (None, "") and row["model"] not in (None, "", trace_model):
            info.model_conflicts.append((tid, str(trace_model), str(row["model"])))
            row = {k: v for k, v in row.items() if k != "model"}
        if cols.apply(i, row):
            info.success_changed += 1
    cols.write(meta)
    info.trajectories += len(meta)
    return dataclasses.replace(ts, meta=meta)


def finish_join(info: LabelJoin, labels: dict[str, dict], used: set[str], report: LoadReport,
                max_listed: int = 5) -> None:
    """After every chunk: the labels rows that matched no trajectory, and the warnings."""
    info.unmatched_label_ids = [t for t in labels if t not in used]
    report.labels = {"file": info.file, "rows": info.rows, "matched": info.matched,
                     "unlabeled": len(info.unlabeled_ids), "unmatched_rows": len(info.unmatched_label_ids),
                     "model_conflicts": len(info.model_conflicts)}
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
    def of(cls, meta: pd.DataFrame) -> "_Columns":
        return cls(meta["id"].tolist(), meta["success"].tolist(),
                   meta["verbalized_confidence"].to_numpy(dtype=np.float64, copy=True),
                   {c: meta[c].tolist() for c in TEXT_COLUMNS}, meta["metadata"].tolist())

    def apply(self, i: int, row: dict) -> bool:
        """Write a labels row into trajectory ``i``; True when it changed an existing success label."""
        changed = False
        if "success" in row:
            old = self.success[i]
            if old is not pd.NA and old is not None and bool(old) != row["success"]:
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

    def write(self, meta: pd.DataFrame) -> None:
        meta["success"] = pd.array([None if (v is pd.NA or v is None) else bool(v) for v in self.success],
                                   dtype="boolean")
        meta["verbalized_confidence"] = self.vcs
        for c in TEXT_COLUMNS:
            meta[c] = pd.Series(self.text[c], dtype=object)
        meta["metadata"] = pd.Series(self.mds, dtype=object)


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
