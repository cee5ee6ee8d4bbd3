"""Persistent run store: run sets, fitted models and cached feature matrices in one DuckDB file.
# size: the store's one class (schema, plumbing, run sets, features, results, models); labels are in label_store

The store lives in a data directory (default ``~/.htc``, or ``$HTC_DATA_DIR``,
or ``streamlit run app.py -- --data-dir DIR``) as ``htc.duckdb``.

Layout (all columnar, no pickle):

``run_sets``      one row per stored run set (name, date, counts, load report JSON)
``trajectories``  the metadata table of every run set (one row per trajectory)
``steps_<id>``    per run set: tokens per step, step name and text
``tokens_<id>``   per run set: chosen logprob, alternatives ``t0..t{k-1}``,
                  token codes into ``vocab_<id>`` (dictionary-encoded strings)
``vocab_<id>``    per run set: the distinct token strings
``features``      cached feature matrices keyed by (run set, profile, top_k)
``models``        fitted calibrators as their JSON text
``settings``      small key/value facts (e.g. whether the samples were loaded)

Every write is one transaction: a failure (or a crash) half way leaves the
store exactly as it was. Writes from several threads or processes are
serialized by a lock file (``htc.lock``, ``fcntl.flock``) plus a thread lock (``locking``),
and each operation opens and closes its own connection, so two uploads at the
same time both keep their data. ``revision()`` changes after every write and
costs one small file read: the dashboard keys its caches on it.

Only the store lives here: the table conversion is in ``columnar``, the
workspace the pages read in ``workspace``, uploads and sample runs in ``ingest``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from ..report import LoadReport
from ..traces import TraceSet, concat
from .columnar import from_arrow
from .locking import StoreError, connect, file_lock, thread_lock
from .store_read import counts_from_store, read_rows
from .store_write import DEFAULT_STORE_CHUNK, PENDING_SCHEMA, sweep_pending, write_run_set

__all__ = ["Store", "AddResult", "default_data_dir", "DB_FILE", "StoreError"]

DB_FILE = "htc.duckdb"
LOCK_FILE = "htc.lock"
REVISION_FILE = "revision"
SCHEMA_VERSION = 1

def default_data_dir() -> Path:
    """``$HTC_DATA_DIR`` when set, else ``~/.htc``."""
    env = os.environ.get("HTC_DATA_DIR")
    return Path(env).expanduser() if env else Path.home() / ".htc"


@dataclass
class AddResult:
    """What ``Store.add_run_set`` kept."""

    run_set_id: str
    name: str
    kept: int
    duplicates: list[str] = field(default_factory=list)   # ids seen more than once (later copies dropped)

    @property
    def ok(self) -> bool:
        return self.kept > 0


_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS settings (key VARCHAR PRIMARY KEY, value VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS run_sets (
        id VARCHAR PRIMARY KEY, name VARCHAR, created TIMESTAMP, k INTEGER,
        has_tokens BOOLEAN, has_top_tokens BOOLEAN,
        n_trajectories BIGINT, n_steps BIGINT, n_tokens BIGINT,
        fields VARCHAR, report VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS trajectories (
        run_set VARCHAR, pos BIGINT, n_steps BIGINT,
        id VARCHAR, dataset VARCHAR, model VARCHAR, framework VARCHAR, question VARCHAR,
        answer VARCHAR, gold VARCHAR, success BOOLEAN, verbalized_confidence DOUBLE,
        source VARCHAR, metadata VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS features (
        run_set VARCHAR, profile VARCHAR, top_k INTEGER, n BIGINT, d INTEGER, names VARCHAR, data BLOB)""",
    """CREATE TABLE IF NOT EXISTS models (
        id VARCHAR PRIMARY KEY, name VARCHAR, created TIMESTAMP, variant VARCHAR, body VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS results (
        key VARCHAR PRIMARY KEY, kind VARCHAR, created TIMESTAMP, data BLOB)""",
]


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Store:
    """The persistent run store (one DuckDB file in ``data_dir``)."""

    def __init__(self, data_dir: str | os.PathLike | None = None, *, lock_timeout: float = 120.0) -> None:
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / DB_FILE
        self.lock_timeout = float(lock_timeout)
        self._tlock = thread_lock(self.path)
        # test hook: called between the writes of add_run_set (raise there to simulate a crash)
        self._fail_hook = None
        with self._connect() as con:
            for stmt in _SCHEMA + [PENDING_SCHEMA]:
                con.execute(stmt)
            con.execute("INSERT OR IGNORE INTO settings VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
            sweep_pending(con, self.data_dir)    # run sets a killed process left half written

    def __repr__(self) -> str:
        return f"Store({str(self.data_dir)!r})"

    # ------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def _connect(self) -> Iterator[Any]:
        """An exclusive connection: thread lock + file lock, opened and closed around the operation."""
        with self._tlock, file_lock(self.data_dir / LOCK_FILE, timeout=self.lock_timeout, what=self.path):
            con = connect(self.path)
            try:
                yield con
            finally:
                con.close()

    @contextlib.contextmanager
    def _transaction(self, *, bump: bool = True) -> Iterator[Any]:
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            else:
                con.execute("COMMIT")
        if bump:
            self._bump_revision()

    def transaction(self, *, bump: bool = True):
        """A context manager: one exclusive connection inside one transaction (rolled back on an error);
        ``bump``: whether the store's :meth:`revision` changes after the commit (the data the pages read did)."""
        return self._transaction(bump=bump)

    def connection(self):
        """A context manager: one exclusive connection (no transaction), for reads."""
        return self._connect()

    def _bump_revision(self) -> None:
        path = self.data_dir / REVISION_FILE
        tmp = path.with_name(f"{REVISION_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(f"{time.time_ns()}-{uuid.uuid4().hex[:8]}\n", encoding="utf-8")
        os.replace(tmp, path)

    def revision(self) -> str:
        """A token that changes after every write (cheap: one small file read)."""
        try:
            return (self.data_dir / REVISION_FILE).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return "0"

    # ------------------------------------------------------------ settings
    def get_setting(self, key: str, default: str | None = None) -> str | None:
        with self._connect() as con:
            row = _one(con, "SELECT value FROM settings WHERE key = ?", [key])
        return default if row is None else row[0]

    def set_setting(self, key: str, value: str) -> None:
        with self._transaction() as con:
            con.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", [key, str(value)])

    # ------------------------------------------------------------ run sets
    def add_run_set(self, ts: "TraceSet | Iterable[TraceSet]", *, name: str, report: LoadReport | None = None,
                    fields: dict | None = None, chunk: int = DEFAULT_STORE_CHUNK,
                    on_chunk: Callable | None = None, on_finish: Callable | None = None) -> AddResult:
        """Store ``ts`` as one run set, atomically; duplicate trajectory ids are reported and dropped.

        ``ts``: a TraceSet, written ``chunk`` trajectories at a time, or an iterable of TraceSet chunks (e.g.
        ``htc_core.iter_chunks(path)``), written as they come: memory is bounded by a chunk
        (:mod:`~htc_core.app.store_write`). ``fields``: the dataset/model/framework given at upload (kept for
        the listing). ``on_chunk(con, run_set_id, chunk, start)`` runs inside the transaction after each chunk and
        ``on_finish(con)`` before the commit (``features_store.ColumnWriter`` stores the per-run columns so).
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if not isinstance(ts, TraceSet) and not (hasattr(ts, "__iter__") and not isinstance(ts, (str, bytes, dict))):
            raise ValueError(f"ts must be a TraceSet or an iterable of TraceSets, got {type(ts).__name__}")
        rs_id, kept, duplicates = write_run_set(self, ts, name=name.strip(), report=report, fields=fields,
                                                chunk=chunk, on_chunk=on_chunk, on_finish=on_finish)
        return AddResult(rs_id, name.strip(), kept, duplicates)

    def _hook(self, where: str) -> None:
        if self._fail_hook is not None:
            self._fail_hook(where)

    def list_run_sets(self) -> pd.DataFrame:
        """One row per run set: id, name, created, datasets, models, frameworks, trajectories, labeled,
        success_rate, steps, tokens, k."""
        cols = ["id", "name", "created", "datasets", "models", "frameworks", "trajectories", "labeled",
                "success_rate", "steps", "tokens", "k"]
        with self._connect() as con:
            df = con.execute("""
                SELECT r.id, r.name, r.created,
                       string_agg(DISTINCT t.dataset, ', ' ORDER BY t.dataset) AS datasets,
                       string_agg(DISTINCT t.model, ', ' ORDER BY t.model) AS models,
                       string_agg(DISTINCT t.framework, ', ' ORDER BY t.framework) AS frameworks,
                       r.n_trajectories AS trajectories,
                       count(t.success) AS labeled,
                       avg(CASE WHEN t.success THEN 1.0 WHEN NOT t.success THEN 0.0 END) AS success_rate,
                       r.n_steps AS steps, r.n_tokens AS tokens, r.k
                FROM run_sets r LEFT JOIN trajectories t ON t.run_set = r.id
                GROUP BY ALL ORDER BY r.created, r.id""").df()
        if df.empty:
            return pd.DataFrame(columns=cols)
        return df[cols]

    def run_set_ids(self) -> list[str]:
        with self._connect() as con:
            return [r[0] for r in con.execute("SELECT id FROM run_sets ORDER BY created, id").fetchall()]

    def run_set_report(self, run_set_id: str) -> dict:
        with self._connect() as con:
            row = _one(con, "SELECT report FROM run_sets WHERE id = ?", [run_set_id])
        if row is None:
            raise KeyError(f"unknown run set {run_set_id!r}")
        return json.loads(row[0] or "{}")

    def delete_run_set(self, run_set_id: str) -> bool:
        """Delete a run set with its cached features; False when it does not exist."""
        _check_id(run_set_id)
        with self._transaction() as con:
            if _one(con, "SELECT count(*) FROM run_sets WHERE id = ?", [run_set_id])[0] == 0:
                return False
            con.execute("DELETE FROM run_sets WHERE id = ?", [run_set_id])
            con.execute("DELETE FROM trajectories WHERE run_set = ?", [run_set_id])
            con.execute("DELETE FROM features WHERE run_set = ?", [run_set_id])
            for t in derived_tables(con) + _label_tables(con):   # per-run columns and labels, when present
                con.execute(f"DELETE FROM {t} WHERE run_set = ?", [run_set_id])
            for t in ("steps", "tokens", "vocab"):
                con.execute(f"DROP TABLE IF EXISTS {t}_{run_set_id}")
        for f in (self.data_dir / "columns").glob(f"{run_set_id}-*.npy"):   # features_store's copies
            f.unlink(missing_ok=True)
        return True

    def trajectories(self, run_set_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """The metadata of the stored trajectories (plus ``run_set`` and ``n_steps``), in storage order."""
        with self._connect() as con:
            q = "SELECT * FROM trajectories WHERE run_set IN (SELECT id FROM run_sets)"   # not half-written ones
            params: list = []
            if run_set_ids is not None:
                ids = list(run_set_ids)
                if not ids:
                    return self._empty_trajectories(con)
                q += " AND run_set IN (" + ", ".join("?" * len(ids)) + ")"
                params = ids
            df = con.execute(q + " ORDER BY run_set, pos", params).df()
        return df

    @staticmethod
    def _empty_trajectories(con) -> pd.DataFrame:
        return con.execute("SELECT * FROM trajectories WHERE false").df()

    def load_run_set(self, run_set_id: str) -> TraceSet:
        """The stored run set as a TraceSet, identical to the one given to ``add_run_set``."""
        _check_id(run_set_id)
        with self._connect() as con:
            rows = con.execute("SELECT k, has_tokens, has_top_tokens FROM run_sets WHERE id = ?",
                               [run_set_id]).fetchall()
            row = rows[0] if rows else None
            if row is None:
                raise KeyError(f"unknown run set {run_set_id!r}")
            k, has_tokens, has_top_tokens = int(row[0]), bool(row[1]), bool(row[2])
            traj = con.sql(f"SELECT * FROM trajectories WHERE run_set = '{run_set_id}'").to_arrow_table()
            steps = con.sql(f"SELECT * FROM steps_{run_set_id}").to_arrow_table()
            tok = con.sql(f"SELECT * FROM tokens_{run_set_id}").to_arrow_table()
            vocab = con.sql(f"SELECT * FROM vocab_{run_set_id}").to_arrow_table()
        return from_arrow(traj, steps, tok, vocab, k, has_tokens, has_top_tokens)

    def load_rows(self, run_set_id: str, positions, steps: np.ndarray | None = None,
                  tokens: np.ndarray | None = None) -> TraceSet:
        """Trajectories ``positions`` (any order, repeats allowed) of a stored run set, read without the rest:
        ``load_run_set(id).take(positions)``. ``steps``/``tokens``: the run set's per-trajectory step and token
        counts when known (else read from the store); :mod:`~htc_core.app.store_read`."""
        _check_id(run_set_id)
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        uniq, back = np.unique(pos, return_inverse=True)
        with self._connect() as con:
            rows = con.execute("SELECT k, has_tokens, has_top_tokens, n_trajectories FROM run_sets WHERE id = ?",
                               [run_set_id]).fetchall()
            if not rows:
                raise KeyError(f"unknown run set {run_set_id!r}")
            k, has_tokens, has_top, n = int(rows[0][0]), bool(rows[0][1]), bool(rows[0][2]), int(rows[0][3])
            if len(uniq) and (uniq[0] < 0 or uniq[-1] >= n):
                raise IndexError(f"trajectory positions must be in 0..{n - 1} for run set {run_set_id!r}")
            if steps is None or tokens is None:
                steps, tokens = counts_from_store(con, run_set_id)
            ts = read_rows(con, run_set_id, uniq, np.asarray(steps, dtype=np.int64),
                           np.asarray(tokens, dtype=np.int64), k, has_tokens, has_top)
        return ts if len(uniq) == len(pos) and np.array_equal(uniq, pos) else ts.take(back.reshape(-1))

    def load(self, run_set_ids: Sequence[str] | None = None) -> tuple[TraceSet, np.ndarray]:
        """Concatenation of run sets (all by default) and the run set id of every trajectory."""
        ids = self.run_set_ids() if run_set_ids is None else list(run_set_ids)
        sets = [self.load_run_set(i) for i in ids]
        owner = np.concatenate([np.full(len(s), i, dtype=object) for i, s in zip(ids, sets)]) if sets \
            else np.zeros(0, dtype=object)
        return concat(sets), owner

    # ------------------------------------------------------------ features
    def put_features(self, run_set_id: str, profile: str, top_k: int, values: np.ndarray,
                     names: Sequence[str]) -> None:
        values = np.ascontiguousarray(values, dtype=np.float64)
        if values.ndim != 2:
            raise ValueError(f"values must be 2-D, got shape {values.shape}")
        buf = io.BytesIO()
        np.save(buf, values, allow_pickle=False)
        # derived data: the revision stays (the run sets did not change)
        with self._transaction(bump=False) as con:
            con.execute("DELETE FROM features WHERE run_set = ? AND profile = ? AND top_k = ?",
                        [run_set_id, profile, int(top_k)])
            con.execute("INSERT INTO features VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [run_set_id, profile, int(top_k), values.shape[0], values.shape[1],
                         json.dumps(list(names)), buf.getvalue()])

    def get_features(self, run_set_id: str, profile: str, top_k: int) -> tuple[np.ndarray, list[str]] | None:
        with self._connect() as con:
            row = _one(con, "SELECT names, data FROM features WHERE run_set = ? AND profile = ? AND top_k = ?",
                              [run_set_id, profile, int(top_k)])
        if row is None:
            return None
        return np.load(io.BytesIO(row[1]), allow_pickle=False), json.loads(row[0])

    # -------------------------------------------------------------- results
    def put_result(self, key: str, kind: str, data: bytes) -> None:
        """Keep a computed result (bytes) under its content key. Does not change :meth:`revision`: a result
        is derived from stored runs, and nothing keyed by the revision needs to be rebuilt for it."""
        with self._transaction(bump=False) as con:
            con.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)", [str(key), str(kind), _now(), data])

    def get_result(self, key: str) -> bytes | None:
        with self._connect() as con:
            row = _one(con, "SELECT data FROM results WHERE key = ?", [str(key)])
        return None if row is None else bytes(row[0])

    def count_results(self) -> int:
        with self._connect() as con:
            return int(_one(con, "SELECT count(*) FROM results")[0])

    def clear_results(self) -> None:
        """Forget every kept result (they are recomputed when next asked for)."""
        with self._transaction(bump=False) as con:
            con.execute("DELETE FROM results")

    # -------------------------------------------------------------- models
    def save_model(self, model: dict | str, *, name: str) -> str:
        """Store a model's JSON (a dict from ``HTCCalibrator.to_dict`` or its text); returns its id."""
        body = model if isinstance(model, str) else json.dumps(model, allow_nan=True)
        obj = json.loads(body)
        mid = uuid.uuid4().hex[:12]
        with self._transaction() as con:
            con.execute("INSERT INTO models VALUES (?, ?, ?, ?, ?)",
                        [mid, name, _now(), str(obj.get("variant", "")), body])
        return mid

    def list_models(self) -> pd.DataFrame:
        with self._connect() as con:
            return con.execute("SELECT id, name, created, variant FROM models ORDER BY created, id").df()

    def load_model(self, model_id: str) -> dict:
        with self._connect() as con:
            row = _one(con, "SELECT body FROM models WHERE id = ?", [model_id])
        if row is None:
            raise KeyError(f"unknown model {model_id!r}")
        return json.loads(row[0])

    def delete_model(self, model_id: str) -> bool:
        with self._transaction() as con:
            n = _one(con, "SELECT count(*) FROM models WHERE id = ?", [model_id])[0]
            con.execute("DELETE FROM models WHERE id = ?", [model_id])
        return bool(n)


def _one(con, sql: str, params: list | None = None):
    """First row of a query, or None (fetches everything, so the connection is free afterwards)."""
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def _table_names(con) -> set:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def derived_tables(con) -> list[str]:
    """features_store's per-run column tables (keyed by run set, profile and top-k), when present."""
    return [t for t in ("run_columns", "run_feature_blocks", "run_column_sets") if t in _table_names(con)]


def _label_tables(con) -> list[str]:
    """label_store's table (keyed by run set only), when present."""
    return [t for t in ("labels",) if t in _table_names(con)]


def _check_id(run_set_id: str) -> None:
    if not (isinstance(run_set_id, str) and len(run_set_id) == 12 and all(c in "0123456789abcdef" for c in run_set_id)):
        raise KeyError(f"unknown run set {run_set_id!r}")
