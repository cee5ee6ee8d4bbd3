"""Labels as data in the run store: every label a person, a rule or a file gave a run, with its history.

Table ``labels`` (DuckDB, next to the run sets)::

    seq BIGINT, run_set VARCHAR, id VARCHAR, value VARCHAR, source VARCHAR, note VARCHAR, created TIMESTAMP,
    status VARCHAR

``value`` is one of :data:`VALUES` (``success``, ``failure``, ``skip``), ``source`` one of :data:`SOURCES`
(``file``, ``rule``, ``person``), ``status``: ``active`` (the run's current label; at most one per run),
``superseded`` (an earlier label, kept as history), ``conflict`` (waiting for a person to resolve it) or
``rejected`` (a conflict resolved in favour of the label already there).

Rules of a write (:meth:`LabelStore.record`):

- a later label supersedes the earlier one; the earlier one stays in the history;
- a label that disagrees with a *file* label (the success value of the uploaded runs counts as one), or a rule
  or file label that disagrees with a *person's* label, is never applied silently: it is kept as a ``conflict``
  and shown until :meth:`LabelStore.resolve` accepts or rejects it (``force=True``: a person who saw the conflict
  chose the new label);
- the same value again changes nothing.

The run's effective value is written to ``trajectories.success`` (``skip`` -> unlabeled) in the same
transaction, so every page, cache key (the workspace's content digest holds the labels) and fit sees it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..formats.labels import read_labels
from ..report import LoadReport
from .store import Store

__all__ = ["LabelStore", "LabelWrite", "VALUES", "SOURCES", "UPLOAD_NOTE"]

VALUES = ("success", "failure", "skip")
SOURCES = ("file", "rule", "person")
UPLOAD_NOTE = "label in the uploaded runs"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS labels (seq BIGINT, run_set VARCHAR, id VARCHAR, value VARCHAR, "
           "source VARCHAR, note VARCHAR, created TIMESTAMP, status VARCHAR)")
_COLUMNS = ["seq", "run_set", "id", "value", "source", "note", "created", "status"]


@dataclass
class LabelWrite:
    """What one write did: runs whose label changed, already had that value, or wait as a conflict; ids that
    name no stored run."""

    applied: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{len(self.applied)} labels written, {len(self.unchanged)} unchanged, {len(self.conflicts)} "
                f"conflicts to resolve, {len(self.unknown)} ids match no run")


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _value_of(success) -> str | None:
    if success is None or success is pd.NA or (isinstance(success, float) and success != success):
        return None
    return "success" if bool(success) else "failure"


def _is_conflict(cur_value, cur_source, value: str, source: str) -> bool:
    if cur_value is None or cur_value == value:
        return False
    return cur_source == "file" or (cur_source == "person" and source != "person")


class LabelStore:
    """The labels of one :class:`~htc_core.app.store.Store` (module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        with store.transaction(bump=False) as con:
            con.execute(_SCHEMA)

    # ------------------------------------------------------------ writes
    def record(self, run_set: str, ids: Sequence[str], values: Sequence[str] | str, *, source: str,
               note: str | Sequence[str] = "", force: bool = False) -> LabelWrite:
        """Label runs ``ids`` of run set ``run_set`` (module docstring); one transaction."""
        ids = [str(i) for i in ids]
        values = [values] * len(ids) if isinstance(values, str) else list(values)
        notes = [note] * len(ids) if isinstance(note, str) else [str(n) for n in note]
        if len(values) != len(ids) or len(notes) != len(ids):
            raise ValueError(f"ids, values and notes must have the same length, got {len(ids)}, {len(values)}, "
                             f"{len(notes)}")
        bad = sorted({v for v in values if v not in VALUES}, key=str)
        if bad:
            raise ValueError(f"label values must be one of {', '.join(VALUES)}, got {bad[:3]}")
        if source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
        out = LabelWrite()
        with self.store.transaction() as con:
            state = _state(con, run_set, ids)
            seq = int(con.execute("SELECT coalesce(max(seq), 0) FROM labels").fetchall()[0][0])
            rows, updates = [], {}
            for tid, value, text in zip(ids, values, notes):
                if tid not in state:
                    out.unknown.append(tid)
                    continue
                cur_value, cur_source, has_history = state[tid]
                if not has_history and cur_value is not None:   # the upload's own label enters the history
                    seq += 1
                    rows.append((seq, run_set, tid, cur_value, "file", UPLOAD_NOTE, _now(), "active"))
                    state[tid] = (cur_value, "file", True)
                if cur_value == value:
                    out.unchanged.append(tid)
                    continue
                seq += 1
                if _is_conflict(cur_value, cur_source, value, source) and not force:
                    rows.append((seq, run_set, tid, value, source, text, _now(), "conflict"))
                    out.conflicts.append(tid)
                    continue
                rows.append((seq, run_set, tid, value, source, text, _now(), "active"))
                state[tid] = (value, source, True)
                updates[tid] = value
                out.applied.append(tid)
            _write(con, run_set, rows, updates)
        return out

    def resolve(self, run_set: str, run_id: str, *, accept: bool) -> bool:
        """Resolve the run's pending conflict: ``accept`` -> its newest conflicting label becomes the current
        one; else the conflicting labels are marked ``rejected``. False when the run has no conflict."""
        with self.store.transaction() as con:
            rows = con.execute("SELECT seq, value FROM labels WHERE run_set = ? AND id = ? AND status = 'conflict' "
                               "ORDER BY seq DESC", [run_set, str(run_id)]).fetchall()
            if not rows:
                return False
            if accept:
                con.execute("UPDATE labels SET status = 'superseded' WHERE run_set = ? AND id = ? AND status = "
                            "'active'", [run_set, str(run_id)])
                con.execute("UPDATE labels SET status = 'active' WHERE seq = ?", [rows[0][0]])
                _set_success(con, run_set, {str(run_id): rows[0][1]})
            con.execute("UPDATE labels SET status = 'rejected' WHERE run_set = ? AND id = ? AND status = 'conflict'",
                        [run_set, str(run_id)])
        return True

    # ------------------------------------------------------------ reads
    def current(self, run_set_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """The current label of every labeled run: run_set, id, value, source, note, created (labels from the
        upload without any later label: source ``file``, note :data:`UPLOAD_NOTE`, no time)."""
        where, params = _in("t.run_set", run_set_ids)
        with self.store.connection() as con:
            df = con.execute(f"""
                SELECT t.run_set, t.id,
                       coalesce(l.value, CASE WHEN t.success THEN 'success' WHEN NOT t.success THEN 'failure' END)
                           AS value,
                       coalesce(l.source, 'file') AS source, coalesce(l.note, '{UPLOAD_NOTE}') AS note, l.created
                FROM trajectories t LEFT JOIN labels l
                  ON l.run_set = t.run_set AND l.id = t.id AND l.status = 'active'
                WHERE t.run_set IN (SELECT id FROM run_sets) AND (l.value IS NOT NULL OR t.success IS NOT NULL)
                  {where}
                ORDER BY t.run_set, t.pos""", params).df()
        return df

    def history(self, run_set_ids: Sequence[str] | None = None, run_id: str | None = None) -> pd.DataFrame:
        """Every label row (oldest first), of some run sets and/or one run."""
        where, params = _in("run_set", run_set_ids)
        if run_id is not None:
            where, params = where + " AND id = ?", params + [str(run_id)]
        with self.store.connection() as con:
            return con.execute(f"SELECT {', '.join(_COLUMNS)} FROM labels WHERE true {where} ORDER BY seq",
                               params).df()

    def conflicts(self, run_set_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """Pending conflicts: run_set, id, current value and source, the conflicting value, source and note."""
        where, params = _in("c.run_set", run_set_ids)
        with self.store.connection() as con:
            return con.execute(f"""
                SELECT c.run_set, c.id, a.value AS current, a.source AS current_source, c.value AS proposed,
                       c.source AS proposed_source, c.note, c.created
                FROM labels c LEFT JOIN labels a ON a.run_set = c.run_set AND a.id = c.id AND a.status = 'active'
                WHERE c.status = 'conflict' {where} ORDER BY c.seq""", params).df()

    # ------------------------------------------------------------ files
    def export_csv(self, run_set_ids: Sequence[str] | None = None, *, history: bool = False) -> str:
        """The current labels (or the whole history) as CSV: id, success (1/0/empty for skip), value, source,
        note, created, run_set; ``htc fit --labels`` and :meth:`import_file` read it back."""
        df = self.history(run_set_ids) if history else self.current(run_set_ids)
        df = df.assign(success=df["value"].map({"success": "1", "failure": "0", "skip": ""}))
        cols = ["id", "success", "value", "source", "note", "created", "run_set"] + (["status"] if history else [])
        buf = io.StringIO()
        df[cols].to_csv(buf, index=False)
        return buf.getvalue()

    def import_file(self, path: str | Path, run_set: str, *, source: str = "file",
                    report: LoadReport | None = None) -> LabelWrite:
        """Labels from a labels file (any format ``htc --labels`` reads: CSV/TSV/JSONL/JSON, our own export
        included; a ``value`` column of success/failure/skip wins over ``success``) into one run set."""
        report = report if report is not None else LoadReport()
        rows = read_labels(path, report)
        ids, values = [], []
        for tid, row in rows.items():
            v = str((row.get("metadata") or {}).get("value", "")).strip().lower()
            v = v if v in VALUES else ({True: "success", False: "failure"}.get(row.get("success")))
            if v is not None:
                ids.append(tid)
                values.append(v)
        return self.record(run_set, ids, values, source=source, note=f"imported from {Path(path).name}")


def _in(column: str, ids: Sequence[str] | None) -> tuple[str, list]:
    if ids is None:
        return "", []
    ids = list(ids)
    if not ids:
        return " AND false", []
    return f" AND {column} IN ({', '.join('?' * len(ids))})", ids


def _state(con, run_set: str, ids: list[str]) -> dict[str, tuple]:
    """id -> (current value, its source, whether the run has a label history), for the runs of ``ids`` that exist."""
    want = pd.DataFrame({"id": pd.unique(pd.Series(ids, dtype=object))})
    con.register("_htc_label_ids", want)
    try:
        rows = con.execute("""
            SELECT t.id, t.success, l.value, l.source, (SELECT count(*) FROM labels h WHERE h.run_set = t.run_set
                   AND h.id = t.id) AS n
            FROM trajectories t JOIN _htc_label_ids w ON w.id = t.id
            LEFT JOIN labels l ON l.run_set = t.run_set AND l.id = t.id AND l.status = 'active'
            WHERE t.run_set = ?""", [run_set]).fetchall()
    finally:
        con.unregister("_htc_label_ids")
    out = {}
    for tid, success, value, source, n in rows:
        if n:
            out[tid] = (value, source, True)
        else:
            out[tid] = (_value_of(success), "file" if success is not None else None, False)
    return out


def _write(con, run_set: str, rows: list, updates: dict[str, str]) -> None:
    if rows:
        con.register("_htc_label_rows", pd.DataFrame(rows, columns=_COLUMNS))
        con.execute("INSERT INTO labels SELECT * FROM _htc_label_rows")
        con.unregister("_htc_label_rows")
        # one active label per run: the newest; the earlier ones become history
        con.execute("""UPDATE labels SET status = 'superseded'
                       FROM (SELECT id, max(seq) AS top FROM labels WHERE run_set = ? AND status = 'active'
                             GROUP BY id HAVING count(*) > 1) k
                       WHERE labels.run_set = ? AND labels.id = k.id AND labels.status = 'active'
                         AND labels.seq < k.top""", [run_set, run_set])
    _set_success(con, run_set, updates)


def _set_success(con, run_set: str, updates: dict[str, str]) -> None:
    if not updates:
        return
    df = pd.DataFrame({"id": list(updates), "success": [{"success": True, "failure": False}.get(v)
                                                         for v in updates.values()]})
    df["success"] = df["success"].astype("boolean")
    con.register("_htc_label_set", df)
    con.execute("UPDATE trajectories SET success = s.success FROM _htc_label_set s WHERE trajectories.run_set = ? "
                "AND trajectories.id = s.id", [run_set])
    con.unregister("_htc_label_set")
