"""Writing a run set into the store chunk by chunk, so the memory of an ingest is bounded by a chunk of
trajectories and not by the run set (``Store.add_run_set`` calls :func:`write_run_set`).

A whole :class:`~htc_core.traces.TraceSet` is cut into chunks of ``chunk`` trajectories (50,000 by default); an
iterable of TraceSets (``htc_core.iter_chunks(...)``: a file streamed) is written chunk by chunk as it comes,
without ever holding the run set. Each chunk is converted to the store's tables (``columnar.to_arrow``) and
appended: positions continue from the previous chunk, token strings are coded into one vocabulary for the run
set, a step field that first appears in a later chunk becomes a new (nullable) column; the rows go to DuckDB in
whole row groups (``row_groups.py``), the rest with the last chunk. A run set of one chunk is one transaction;
a larger one is committed chunk by chunk and becomes visible with its last commit (:func:`write_run_set`): either
way a failure half way leaves the store as it was. The result is the same run set as one-shot storing
(``load_run_set`` gives back the same TraceSet; ``tests/test_store_chunked.py``).

Decisions: duplicate ids are dropped across the whole run set (the first copy is kept; a chunk's ids are looked
up among the run set's rows already written, nothing is kept per run in memory); the chunks of one run set must
agree on the number of alternatives ``k`` and on whether token strings are present (a ``ValueError`` names the
first chunk that does not; convert with ``htc import`` first); the store's lock is held while the chunks are
read and written.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import uuid
from datetime import datetime, timezone
from typing import Callable, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa

from ..report import LoadReport
from ..traces import TraceSet
from .columnar import objects_to_arrow, to_arrow
from .row_groups import FullRowGroups

log = logging.getLogger("htc.store")

__all__ = ["write_run_set", "RunSetWriter", "DEFAULT_STORE_CHUNK", "chunks_of", "ChunkShapeError", "sweep_pending",
           "discard",
           "PENDING_SCHEMA"]

#: trajectories per chunk when a whole TraceSet is stored
DEFAULT_STORE_CHUNK = 50_000



class ChunkShapeError(ValueError):
    """A chunk's k or token strings differ from the run set's first chunk."""


def chunks_of(ts: TraceSet, chunk: int) -> Iterable[TraceSet]:
    """``ts`` as consecutive chunks of at most ``chunk`` trajectories."""
    n = ts.n_trajectories
    for start in range(0, n, chunk):
        yield ts if (start == 0 and n <= chunk) else ts.take(np.arange(start, min(n, start + chunk)))


class _Vocab:
    """The run set's token strings -> codes, grown chunk by chunk."""

    def __init__(self):
        self.index = pd.Index([], dtype=object)

    def recode(self, chunk_vocab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(chunk code -> run set code, the strings new to the run set)."""
        found = self.index.get_indexer(pd.Index(chunk_vocab, dtype=object)) if len(self.index) \
            else np.full(len(chunk_vocab), -1)
        new = np.flatnonzero(found < 0)
        found[new] = len(self.index) + np.arange(len(new))
        added = np.asarray(chunk_vocab, dtype=object)[new]
        if len(added):
            self.index = self.index.append(pd.Index(added, dtype=object))
        return found.astype(np.int32), added


class RunSetWriter:
    """Appends chunks of one run set inside an open transaction."""

    def __init__(self, con, rs_id: str, name: str, report: LoadReport | None, hook: Callable[[str], None]):
        self.con, self.rs, self.name, self.report, self.hook = con, rs_id, name, report, hook
        # the rows go to DuckDB in whole row groups (row_groups.py), the rest with the last chunk (flush)
        self.traj = FullRowGroups(f"INSERT INTO trajectories BY NAME SELECT '{rs_id}' AS run_set, * FROM _htc_rows")
        self.steps = FullRowGroups(f"INSERT INTO steps_{rs_id} BY NAME SELECT * FROM _htc_rows")
        self.tokens = FullRowGroups(f"INSERT INTO tokens_{rs_id} BY NAME SELECT * FROM _htc_rows")
        self.duplicates: set = set()
        self.vocab = _Vocab()
        self.n = self.n_steps = self.n_tokens = 0
        self.shape: tuple | None = None         # (k, has_tokens, has_top_tokens) of the first chunk
        self.step_cols: list[str] = []
        self.resumed = False                    # appending to a stored run set (resume)

    def resume(self, con) -> None:
        """Continue a stored run set (:func:`append_run_set`): positions, shape, step columns and vocabulary
        from the store. Reads the run set's counts and its vocabulary (bounded by the tokenizer's), no run."""
        row = con.execute("SELECT n_trajectories, n_steps, n_tokens, k, has_tokens, has_top_tokens, name FROM "
                          "run_sets WHERE id = ?", [self.rs]).fetchall()
        if not row:
            raise KeyError(f"unknown run set {self.rs!r}")
        n, n_steps, n_tokens, k, has_tokens, has_top, self.name = row[0]
        self.n, self.n_steps, self.n_tokens = int(n), int(n_steps), int(n_tokens)
        self.shape = (int(k), bool(has_tokens), bool(has_top))
        self.step_cols = [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
            [f"steps_{self.rs}"]).fetchall()]
        voc = con.execute(f"SELECT token FROM vocab_{self.rs} ORDER BY code").fetchnumpy()["token"]
        self.vocab.index = pd.Index(np.asarray(voc, dtype=object), dtype=object)
        self.resumed = True

    def _fit_shape(self, ts: TraceSet, shape: tuple, index: int) -> TraceSet:
        """A chunk appended to a stored run set: narrower alternatives NaN-padded (as ``concat`` does), a
        wider chunk widens the stored tokens table (its new alternatives NaN, their strings None), missing token
        strings stored as None; strings a run set never had cannot be added (``ChunkShapeError``)."""
        k, has_tokens, has_top = self.shape
        if (shape[1] and not has_tokens) or (shape[2] and not has_top):
            raise ChunkShapeError(f"chunk {index} has token strings the stored run set {self.rs} does not keep")
        if shape[0] > k:
            for j in range(k, shape[0]):
                self.con.execute(f"ALTER TABLE tokens_{self.rs} ADD COLUMN t{j} DOUBLE DEFAULT 'NaN'")
                if has_top:
                    self.con.execute(f"ALTER TABLE tokens_{self.rs} ADD COLUMN tt{j} INTEGER DEFAULT -1")
            self.con.execute("UPDATE run_sets SET k = ? WHERE id = ?", [shape[0], self.rs])
            self.shape = (shape[0], has_tokens, has_top)
        if shape[0] >= k:
            return ts
        pad = k - shape[0]
        top = np.hstack([ts.top_logprobs, np.full((ts.n_tokens, pad), np.nan)])
        tt = None if ts.top_tokens is None else np.hstack([ts.top_tokens, np.full((ts.n_tokens, pad), None, object)])
        return dataclasses.replace(ts, top_logprobs=top, top_tokens=tt)

    def _dedup(self, ts: TraceSet) -> TraceSet:
        ids = pd.Series(ts.ids, dtype=object)
        dup = ids.duplicated(keep="first").to_numpy() | self._written(ids)
        if dup.any():
            new = {str(v) for v in ids[dup]} - self.duplicates
            self.duplicates |= new
            if self.report is not None:
                for d in sorted(new):
                    self.report.warn(self.name, None, "duplicate trajectory id in this run set: the first copy is "
                                     "kept, later copies are dropped", field="id", value=d, trajectory_id=d)
            ts = ts.filter(~dup)
        return ts

    def _written(self, ids: pd.Series) -> np.ndarray:
        """Which of ``ids`` earlier chunks of this run set have: looked up in the store and in the rows not
        written yet (a set of the ids seen in this process grew by about 100 bytes a run, 100 MB at a million)."""
        found = np.zeros(len(ids), dtype=bool)
        if not self.n or not len(ids):
            return found
        pending = self.traj.column("id")
        self.con.register("_htc_ids", pa.table({"i": pa.array(np.arange(len(ids), dtype=np.int64)),
                                                "id": objects_to_arrow(ids.to_numpy(dtype=object))}))
        pending = pending if pending is not None else pa.array([], type=pa.string())
        self.con.register("_htc_pending", pa.table({"id": pending}))
        try:
            hit = self.con.execute("SELECT c.i FROM _htc_ids c SEMI JOIN (SELECT id FROM trajectories WHERE "
                                   "run_set = ? UNION ALL SELECT id FROM _htc_pending) t "
                                   "ON t.id IS NOT DISTINCT FROM c.id", [self.rs]).fetchnumpy()["i"]
        finally:
            self.con.unregister("_htc_ids")
            self.con.unregister("_htc_pending")
        found[np.asarray(hit, dtype=np.int64)] = True
        return found

    def add(self, ts: TraceSet, index: int) -> TraceSet | None:
        """Append one chunk (its duplicates dropped); returns what was written (None when nothing)."""
        if not isinstance(ts, TraceSet):
            raise ValueError(f"chunk {index} must be a TraceSet, got {type(ts).__name__}")
        ts = self._dedup(ts)
        if ts.n_trajectories == 0:
            return None
        shape = (int(ts.k), ts.tokens is not None, ts.top_tokens is not None)
        if self.shape is None:
            self.shape = shape
        elif self.resumed and shape != self.shape:
            ts = self._fit_shape(ts, shape, index)
        elif shape != self.shape:
            raise ChunkShapeError(f"chunk {index} has k={shape[0]}, token strings {shape[1]}, alternative strings "
                             f"{shape[2]}; the run set's first chunk has k={self.shape[0]}, {self.shape[1]}, "
                             f"{self.shape[2]} (store such files as separate run sets, or convert with htc import)")
        traj, steps, tok, vocab = to_arrow(ts)
        tok = self._missing_strings(tok)
        traj = _shift(traj, "pos", self.n)
        steps = _shift(steps, "pos", self.n_steps)
        tok = _shift(tok, "pos", self.n_tokens)
        codes, added = self.vocab.recode(np.asarray(vocab.column("token").to_pylist(), dtype=object))
        ext = np.append(codes, -1).astype(np.int32)      # a code < 0 (no string) stays -1
        for c in [c for c in tok.column_names if c == "token" or c.startswith("tt")]:
            local = tok.column(c).to_numpy()
            tok = tok.set_column(tok.column_names.index(c), c, pa.array(ext[np.where(local < 0, len(codes), local)]))
        start = len(self.vocab.index) - len(added)
        new_vocab = pa.table({"code": pa.array(np.arange(start, start + len(added), dtype=np.int32)),
                              "token": pa.array(added.tolist(), type=pa.string())})
        self.traj.add(self.con, traj)
        self.hook("after_trajectories")
        self._append_steps(steps)
        self.hook("after_steps")
        first = self.n == 0 and not self.resumed
        if first:
            self._append(f"tokens_{self.rs}", tok, create=True, empty=True)
        self.tokens.add(self.con, tok)
        self._append(f"vocab_{self.rs}", new_vocab, create=first)
        self.n += ts.n_trajectories
        self.n_steps += ts.n_steps
        self.n_tokens += ts.n_tokens
        return ts

    def _missing_strings(self, tok: pa.Table) -> pa.Table:
        """Token-string codes a resumed run set keeps but this chunk lacks: -1 (None)."""
        if not self.resumed:
            return tok
        k, has_tokens, has_top = self.shape
        want = (["token"] if has_tokens else []) + ([f"tt{j}" for j in range(k)] if has_top else [])
        for c in want:
            if c not in tok.column_names:
                tok = tok.append_column(c, pa.array(np.full(tok.num_rows, -1, dtype=np.int32)))
        return tok

    def flush(self, con) -> None:
        """Write the rows kept for whole row groups (with the run set's last chunk)."""
        for rows in (self.traj, self.steps, self.tokens):
            rows.flush(con)

    def _append(self, table: str, data: pa.Table, *, create: bool = False, empty: bool = False) -> None:
        self.con.register("_htc_chunk", data)
        try:
            if create:
                self.con.execute(f"CREATE TABLE {table} AS SELECT * FROM _htc_chunk" + (" LIMIT 0" if empty else ""))
            else:
                self.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _htc_chunk")
        finally:
            self.con.unregister("_htc_chunk")

    def _append_steps(self, steps: pa.Table) -> None:
        table = f"steps_{self.rs}"
        if not self.step_cols and not self.resumed:
            self._append(table, steps, create=True, empty=True)
        else:
            for c in steps.column_names:      # a step field first seen in this chunk: a new nullable column
                if c not in self.step_cols:
                    kind = "DOUBLE" if c == "latency_s" else "VARCHAR"
                    self.con.execute(f'ALTER TABLE {table} ADD COLUMN "{c}" {kind}')
        self.steps.add(self.con, steps)
        self.step_cols = list(dict.fromkeys(self.step_cols + steps.column_names))


def _shift(tbl: pa.Table, col: str, by: int) -> pa.Table:
    if not by:
        return tbl
    i = tbl.column_names.index(col)
    return tbl.set_column(i, col, pa.array(tbl.column(col).to_numpy() + np.int64(by)))


def write_run_set(store, data: TraceSet | Iterable[TraceSet], *, name: str, report: LoadReport | None = None,
                  fields: dict | None = None, chunk: int = DEFAULT_STORE_CHUNK,
                  on_chunk: Callable | None = None, on_finish: Callable | None = None):
    """Store ``data`` (a TraceSet, or TraceSet chunks) as one run set, ``chunk`` trajectories at a time.
    ``on_chunk(con, run_set_id, written_chunk, start)`` is called in the chunk's transaction (the per-run columns
    are written so), ``on_finish(con)`` in the last one when something was kept. Returns ``(run set id, kept,
    duplicates)``; nothing is stored when no trajectory is kept.

    A run set of at most one chunk is one transaction. A larger one is committed chunk by chunk (DuckDB keeps a
    transaction's rows in memory: one transaction would grow with the run set), under a ``run_set_pending`` row:
    it becomes visible only with the last commit (its ``run_sets`` row); a failure removes what was written, and
    what a killed process left is removed by the next ``Store`` opened on this machine once that process is
    gone (:func:`sweep_pending`)."""
    if not isinstance(chunk, (int, np.integer)) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    single = isinstance(data, TraceSet) and data.n_trajectories <= chunk
    chunks = chunks_of(data, int(chunk)) if isinstance(data, TraceSet) else data
    rs_id = uuid.uuid4().hex[:12]
    w = RunSetWriter(None, rs_id, name, report, store._hook)

    def finish(con) -> None:
        w.flush(con)
        k, has_tokens, has_top = w.shape
        con.execute("INSERT INTO run_sets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [rs_id, name, datetime.now(timezone.utc).replace(tzinfo=None), k, has_tokens, has_top, w.n,
                     w.n_steps, w.n_tokens, json.dumps(fields or {}, ensure_ascii=False, default=str),
                     json.dumps(report.to_dict() if report is not None else {}, ensure_ascii=False, default=str)])
        if on_finish is not None:
            on_finish(con)
        con.execute("DELETE FROM run_set_pending WHERE id = ?", [rs_id])
        store._hook("before_commit")

    def one(con, i: int, part: TraceSet) -> None:
        w.con = con
        start = w.n
        written = w.add(part, i)
        if written is not None and on_chunk is not None:
            on_chunk(con, rs_id, written, start)

    if single:
        with store._transaction() as con:
            for i, part in enumerate(chunks):
                one(con, i, part)
            if w.n:
                finish(con)
        return rs_id, w.n, sorted(w.duplicates)
    with store._transaction(bump=False) as con:
        con.execute("INSERT INTO run_set_pending VALUES (?, ?, ?, ?)",
                    [rs_id, os.getpid(), socket.gethostname(), datetime.now(timezone.utc).replace(tzinfo=None)])
    try:
        for i, part in enumerate(chunks):
            with store._transaction(bump=False) as con:
                one(con, i, part)
        with store._transaction() as con:
            if w.n:
                finish(con)
            else:
                con.execute("DELETE FROM run_set_pending WHERE id = ?", [rs_id])
    except BaseException:
        discard(store, rs_id)
        raise
    return rs_id, w.n, sorted(w.duplicates)


PENDING_SCHEMA = ("CREATE TABLE IF NOT EXISTS run_set_pending (id VARCHAR PRIMARY KEY, pid BIGINT, host VARCHAR, "
                  "started TIMESTAMP)")


def discard(store, rs_id: str) -> None:
    """Remove every file, row and table of an unfinished run set (and its pending row). The files go first: on a
    full disk they free the space the database needs to delete the rows. When the database cannot (still full),
    the pending row stays and the next ``Store`` opened once this process is gone finishes the job."""
    _unlink_columns(store.data_dir, rs_id)
    try:
        with store._transaction(bump=False) as con:
            _discard(con, rs_id)
    except Exception as e:     # called while another error propagates: that one is what the user must see
        log.warning("could not remove the rows of unfinished run set %s yet (%s); the next start will", rs_id, e)


def _unlink_columns(data_dir, rs_id: str) -> None:
    from pathlib import Path

    for f in (Path(data_dir) / "columns").glob(f"{rs_id}*"):
        f.unlink(missing_ok=True)


def _discard(con, rs_id: str) -> None:
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    for t in ("trajectories", "run_columns", "run_feature_blocks", "run_column_sets"):
        if t in tables:
            con.execute(f"DELETE FROM {t} WHERE run_set = ?", [rs_id])
    for t in ("steps", "tokens", "vocab"):
        con.execute(f"DROP TABLE IF EXISTS {t}_{rs_id}")
    con.execute("DELETE FROM run_set_pending WHERE id = ?", [rs_id])


def sweep_pending(con, data_dir) -> list[str]:
    """Remove the unfinished run sets of processes of this machine that are gone (killed mid-ingest)."""
    host, gone = socket.gethostname(), []
    for rs_id, pid, h in con.execute("SELECT id, pid, host FROM run_set_pending").fetchall():
        if h != host or _alive(int(pid)):
            continue
        _unlink_columns(data_dir, rs_id)     # first: on a full disk this frees the space the deletes need
        try:
            _discard(con, rs_id)
        except Exception as e:   # the store still opens (everything committed is intact); retried next time
            log.warning("could not remove unfinished run set %s yet (%s); retried when the store is next opened",
                        rs_id, e)
            continue
        gone.append(rs_id)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
