"""Persistent run store: run sets, fitted models and cached feature matrices in one DuckDB file.

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
serialized by a lock file (``htc.lock``, ``fcntl.flock``) plus a thread lock,
and each operation opens and closes its own connection, so two uploads at the
same time both keep their data. ``revision()`` changes after every write and
costs one small file read: the dashboard keys its caches on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ..report import LoadReport
from ..traces import META_COLUMNS, TraceSet, concat

__all__ = ["Store", "AddResult", "default_data_dir", "DB_FILE", "StoreError"]

DB_FILE = "htc.duckdb"
LOCK_FILE = "htc.lock"
REVISION_FILE = "revision"
SCHEMA_VERSION = 1

_THREAD_LOCKS: dict[str, threading.RLock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


class StoreError(RuntimeError):
    """The store cannot do what was asked (the message says why)."""


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


_META_TEXT = ("id", "dataset", "model", "framework", "question", "answer", "gold", "source", "metadata")

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
]


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _obj_to_arrow(values: np.ndarray) -> pa.Array:
    """object array of str / None -> arrow string array (None stays null)."""
    return pa.array(values, type=pa.string(), from_pandas=False)


def _arrow_to_obj(col) -> np.ndarray:
    arr = col.to_numpy(zero_copy_only=False) if hasattr(col, "to_numpy") else np.asarray(col)
    out = np.empty(len(arr), dtype=object)
    out[:] = arr
    return out


def _encode_strings(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary-encode an object array of str/None: codes int32 (-1 = None) and the vocabulary."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    vocab = np.empty(len(uniques), dtype=object)
    vocab[:] = list(uniques)
    return codes.astype(np.int32), vocab


def _decode_strings(codes: np.ndarray, vocab: np.ndarray) -> np.ndarray:
    ext = np.empty(len(vocab) + 1, dtype=object)
    ext[: len(vocab)] = vocab
    ext[len(vocab)] = None
    idx = np.where(codes < 0, len(vocab), codes)
    return ext[idx]


class Store:
    """The persistent run store (one DuckDB file in ``data_dir``)."""

    def __init__(self, data_dir: str | os.PathLike | None = None, *, lock_timeout: float = 120.0) -> None:
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / DB_FILE
        self.lock_timeout = float(lock_timeout)
        key = str(self.path.resolve())
        with _THREAD_LOCKS_GUARD:
            self._tlock = _THREAD_LOCKS.setdefault(key, threading.RLock())
        # test hook: called between the writes of add_run_set (raise there to simulate a crash)
        self._fail_hook = None
        with self._connect() as con:
            for stmt in _SCHEMA:
                con.execute(stmt)
            con.execute("INSERT OR IGNORE INTO settings VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])

    def __repr__(self) -> str:
        return f"Store({str(self.data_dir)!r})"

    # ------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def _connect(self) -> Iterator[Any]:
        """An exclusive connection: thread lock + file lock, opened and closed around the operation."""
        import duckdb

        with self._tlock:
            lock_path = self.data_dir / LOCK_FILE
            fh = open(lock_path, "a+")
            try:
                deadline = time.monotonic() + self.lock_timeout
                while True:
                    try:
                        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise StoreError(f"the store {self.path} is busy (another process holds "
                                             f"{lock_path} for more than {self.lock_timeout:.0f} s)") from None
                        time.sleep(0.05)
                con = None
                for attempt in range(50):
                    try:
                        con = duckdb.connect(str(self.path))
                        break
                    except duckdb.IOException:
                        # a process that does not use our lock file (e.g. a duckdb shell) holds the database
                        if attempt == 49:
                            raise
                        time.sleep(0.1)
                try:
                    yield con
                finally:
                    con.close()
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
                fh.close()

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
    def add_run_set(self, ts: TraceSet, *, name: str, report: LoadReport | None = None,
                    fields: dict | None = None) -> AddResult:
        """Store ``ts`` as one run set, atomically; duplicate trajectory ids are reported and dropped.

        ``fields``: the dataset/model/framework given at upload (kept for the listing).
        """
        if not isinstance(ts, TraceSet):
            raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        ids = pd.Series(ts.ids, dtype=object)
        dup_mask = ids.duplicated(keep="first").to_numpy()
        duplicates = sorted({str(v) for v in ids[dup_mask]})
        if dup_mask.any():
            ts = ts.filter(~dup_mask)
            if report is not None:
                for d in duplicates:
                    report.warn(name, None, "duplicate trajectory id in this run set: the first copy is kept, "
                                "later copies are dropped", field="id", value=d, trajectory_id=d)
        rs_id = uuid.uuid4().hex[:12]
        if ts.n_trajectories == 0:
            return AddResult(rs_id, name, 0, duplicates)
        traj_tbl, steps_tbl, tok_tbl, vocab_tbl = _to_arrow(ts)
        row = [rs_id, name.strip(), _now(), int(ts.k), ts.tokens is not None, ts.top_tokens is not None,
               int(ts.n_trajectories), int(ts.n_steps), int(ts.n_tokens),
               json.dumps(fields or {}, ensure_ascii=False, default=str),
               json.dumps(report.to_dict() if report is not None else {}, ensure_ascii=False, default=str)]
        with self._transaction() as con:
            con.execute("INSERT INTO run_sets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            con.register("_htc_traj", traj_tbl)
            con.execute("INSERT INTO trajectories SELECT ? AS run_set, * FROM _htc_traj", [rs_id])
            con.unregister("_htc_traj")
            self._hook("after_trajectories")
            con.register("_htc_steps", steps_tbl)
            con.execute(f"CREATE TABLE steps_{rs_id} AS SELECT * FROM _htc_steps")
            con.unregister("_htc_steps")
            self._hook("after_steps")
            con.register("_htc_tok", tok_tbl)
            con.execute(f"CREATE TABLE tokens_{rs_id} AS SELECT * FROM _htc_tok")
            con.unregister("_htc_tok")
            con.register("_htc_vocab", vocab_tbl)
            con.execute(f"CREATE TABLE vocab_{rs_id} AS SELECT * FROM _htc_vocab")
            con.unregister("_htc_vocab")
            self._hook("before_commit")
        return AddResult(rs_id, name.strip(), int(ts.n_trajectories), duplicates)

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
            for t in ("steps", "tokens", "vocab"):
                con.execute(f"DROP TABLE IF EXISTS {t}_{run_set_id}")
        return True

    def trajectories(self, run_set_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """The metadata of the stored trajectories (plus ``run_set`` and ``n_steps``), in storage order."""
        with self._connect() as con:
            q = "SELECT * FROM trajectories"
            params: list = []
            if run_set_ids is not None:
                ids = list(run_set_ids)
                if not ids:
                    return self._empty_trajectories(con)
                q += " WHERE run_set IN (" + ", ".join("?" * len(ids)) + ")"
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
        return _from_arrow(traj, steps, tok, vocab, k, has_tokens, has_top_tokens)

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

    # ------------------------------------------------------------- samples
    def ensure_samples(self, sample_dir: str | os.PathLike | None) -> tuple[str, list[AddResult]]:
        """On the first start with an empty store, load the shipped sample runs (one run set per file, sub-folders
        included, entries starting with '_' or '.' skipped).

        Returns (status, results); status is 'loaded', 'present' (the store already has data or the
        samples were loaded before), 'missing' (no sample folder or no files in it) or 'failed'.
        """
        if self.get_setting("samples_loaded") == "1" or self.run_set_ids():
            return "present", []
        from ..formats import SUFFIXES, load

        folder = Path(sample_dir) if sample_dir is not None else None
        files = _sample_files(folder, SUFFIXES) if folder is not None and folder.is_dir() else []
        if not files:
            return "missing", []
        results = []
        for f in files:
            ts, rep = load(f)
            if ts.n_trajectories:
                results.append(self.add_run_set(ts, name=f"sample: {f.name}", report=rep))
        self.set_setting("samples_loaded", "1")
        return ("loaded" if results else "failed"), results


def _sample_files(folder: Path, suffixes: tuple) -> list[Path]:
    """Trace files under ``folder`` (sub-folders too), skipping entries whose name starts with '_' or '.'."""
    out = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(("_", ".")):
            continue
        if p.is_dir():
            out.extend(_sample_files(p, suffixes))
        elif p.is_file() and p.name.endswith(suffixes):
            out.append(p)
    return out


def _one(con, sql: str, params: list | None = None):
    """First row of a query, or None (fetches everything, so the connection is free afterwards)."""
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def _check_id(run_set_id: str) -> None:
    if not (isinstance(run_set_id, str) and len(run_set_id) == 12 and all(c in "0123456789abcdef" for c in run_set_id)):
        raise KeyError(f"unknown run set {run_set_id!r}")


# --------------------------------------------------------------- conversion
def _to_arrow(ts: TraceSet) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
    m = ts.meta
    traj: dict[str, pa.Array] = {
        "pos": pa.array(np.arange(ts.n_trajectories, dtype=np.int64)),
        "n_steps": pa.array(ts.steps_per_trajectory.astype(np.int64)),
    }
    for c in META_COLUMNS:
        if c == "success":
            s = m[c]
            traj[c] = pa.array(s.astype(object).where(s.notna(), None).tolist(), type=pa.bool_())
        elif c == "verbalized_confidence":
            traj[c] = pa.array(m[c].to_numpy(dtype=np.float64), type=pa.float64(), from_pandas=True)
        else:
            traj[c] = _obj_to_arrow(m[c].to_numpy(dtype=object))
    steps = pa.table({
        "pos": pa.array(np.arange(ts.n_steps, dtype=np.int64)),
        "n_tokens": pa.array(ts.tokens_per_step.astype(np.int64)),
        "name": _obj_to_arrow(np.asarray(ts.step_name, dtype=object)),
        "text": _obj_to_arrow(np.asarray(ts.step_text, dtype=object)),
    })
    tok: dict[str, pa.Array] = {"pos": pa.array(np.arange(ts.n_tokens, dtype=np.int64)),
                                "logprob": pa.array(ts.logprob, type=pa.float64())}
    for j in range(ts.k):
        tok[f"t{j}"] = pa.array(np.ascontiguousarray(ts.top_logprobs[:, j]), type=pa.float64())
    strings = []
    if ts.tokens is not None:
        strings.append(("token", np.asarray(ts.tokens, dtype=object)))
    if ts.top_tokens is not None:
        tt = np.asarray(ts.top_tokens, dtype=object)
        for j in range(tt.shape[1]):
            strings.append((f"tt{j}", tt[:, j]))
    vocab = np.zeros(0, dtype=object)
    if strings:
        codes, vocab = _encode_strings(np.concatenate([s for _, s in strings]))
        start = 0
        for name, s in strings:
            tok[name] = pa.array(codes[start:start + len(s)], type=pa.int32())
            start += len(s)
    vocab_tbl = pa.table({"code": pa.array(np.arange(len(vocab), dtype=np.int32)), "token": _obj_to_arrow(vocab)})
    return pa.table(traj), steps, pa.table(tok), vocab_tbl


def _ordered(tbl: pa.Table) -> pa.Table:
    pos = tbl.column("pos").to_numpy()
    if len(pos) and not (pos[0] == 0 and np.all(np.diff(pos) == 1)):
        tbl = tbl.take(pa.array(np.argsort(pos, kind="stable")))
    return tbl


def _f64(tbl: pa.Table, name: str) -> np.ndarray:
    return tbl.column(name).to_numpy().astype(np.float64, copy=False)


def _from_arrow(traj: pa.Table, steps: pa.Table, tok: pa.Table, vocab: pa.Table, k: int,
                has_tokens: bool, has_top_tokens: bool) -> TraceSet:
    traj, steps, tok, vocab = _ordered(traj), _ordered(steps), _ordered(tok), vocab
    n_tok = tok.num_rows
    logprob = _f64(tok, "logprob")
    top = np.empty((n_tok, k), dtype=np.float64)
    for j in range(k):
        top[:, j] = _f64(tok, f"t{j}")
    voc = _arrow_to_obj(vocab.take(pa.array(np.argsort(vocab.column("code").to_numpy()))).column("token")) \
        if vocab.num_rows else np.zeros(0, dtype=object)
    tokens = _decode_strings(tok.column("token").to_numpy(), voc) if has_tokens else None
    top_tokens = None
    if has_top_tokens:
        width = sum(1 for c in tok.column_names if c.startswith("tt"))
        top_tokens = np.empty((n_tok, width), dtype=object)
        for j in range(width):
            top_tokens[:, j] = _decode_strings(tok.column(f"tt{j}").to_numpy(), voc)
    n_tokens = steps.column("n_tokens").to_numpy().astype(np.int64)
    n_steps = traj.column("n_steps").to_numpy().astype(np.int64)
    meta_cols: dict[str, pd.Series] = {}
    for c in META_COLUMNS:
        col = traj.column(c)
        if c == "success":
            meta_cols[c] = pd.Series(col.to_pylist(), dtype="boolean")
        elif c == "verbalized_confidence":
            meta_cols[c] = pd.Series(col.to_numpy(zero_copy_only=False).astype(np.float64), dtype="float64")
        else:
            meta_cols[c] = pd.Series(_arrow_to_obj(col), dtype=object)
    return TraceSet(
        logprob=logprob,
        top_logprobs=top,
        step_offsets=np.concatenate([[0], np.cumsum(n_tokens)]).astype(np.int64),
        traj_offsets=np.concatenate([[0], np.cumsum(n_steps)]).astype(np.int64),
        meta=pd.DataFrame(meta_cols),
        step_name=_arrow_to_obj(steps.column("name")),
        step_text=_arrow_to_obj(steps.column("text")),
        tokens=tokens,
        top_tokens=top_tokens,
    )


# ---------------------------------------------------------------- workspace
@dataclass
class Workspace:
    """Everything the pages read about the stored runs, in one aligned bundle (row i = trajectory i).

    ``ts`` the concatenated run sets, ``run_set`` the run set id of every
    trajectory, ``features`` the 48 features (cached in the store per run set,
    profile and top_k), ``baselines`` the raw single-signal confidences.
    """

    ts: TraceSet
    run_set: np.ndarray
    features: Any                 # features.FeatureMatrix
    baselines: pd.DataFrame
    profile: str
    top_k: int

    def __len__(self) -> int:
        return self.ts.n_trajectories

    @property
    def labels(self) -> np.ndarray:
        return self.ts.labels

    @property
    def keys(self) -> np.ndarray:
        """A key unique across run sets: ``<run set>:<trajectory id>``."""
        ids = self.ts.ids
        return np.array([f"{r}:{i}" for r, i in zip(self.run_set, ids)], dtype=object)

    def position_of(self, key: str | None) -> int | None:
        if key is None:
            return None
        hits = np.flatnonzero(self.keys == key)
        return int(hits[0]) if hits.size else None

    def take(self, indices) -> "Workspace":
        idx = np.asarray(indices, dtype=np.int64)
        return Workspace(ts=self.ts.take(idx), run_set=self.run_set[idx], features=self.features.take(idx),
                         baselines=self.baselines.iloc[idx].reset_index(drop=True), profile=self.profile,
                         top_k=self.top_k)

    def values(self, column: str) -> list[str]:
        """Sorted distinct values of a metadata column (missing shown as '(none)')."""
        return sorted({"(none)" if v is None else str(v) for v in self.ts.meta[column]})

    def mask(self, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None,
             frameworks: Sequence[str] | None = None, run_sets: Sequence[str] | None = None) -> np.ndarray:
        m = np.ones(len(self), dtype=bool)
        for col, chosen in (("dataset", datasets), ("model", models), ("framework", frameworks)):
            if chosen:
                vals = self.ts.meta[col].map(lambda v: "(none)" if v is None else str(v)).to_numpy()
                m &= np.isin(vals, list(chosen))
        if run_sets:
            m &= np.isin(self.run_set, list(run_sets))
        return m

    def select(self, **filters) -> "Workspace":
        m = self.mask(**filters)
        return self if m.all() else self.take(np.flatnonzero(m))

    def frame(self) -> pd.DataFrame:
        """One row per trajectory: position, key, run_set, id, dataset, model, framework, question,
        answer, gold, success (1/0/NaN), steps, tokens and the raw baseline confidences."""
        meta = self.ts.meta
        df = pd.DataFrame({"position": np.arange(len(self)), "key": self.keys, "run_set": self.run_set})
        for c in ("id", "dataset", "model", "framework", "question", "answer", "gold"):
            # object dtype on purpose: missing text stays None (pandas 3 would infer 'str' with NaN)
            df[c] = pd.Series(meta[c].to_numpy(dtype=object), dtype=object)
        df["success"] = self.labels
        df["steps"] = self.ts.steps_per_trajectory
        df["tokens"] = self.ts.tokens_per_trajectory
        for c in self.baselines.columns:
            df[c] = self.baselines[c].to_numpy()
        return df


def browse(frame: pd.DataFrame, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None,
           label: str = "any", confidence: str | None = None, confidence_range: tuple[float, float] = (0.0, 1.0),
           text: str = "") -> pd.DataFrame:
    """Filter a ``Workspace.frame()`` (plus optional confidence columns) like the Runs page does.

    ``label``: 'any', 'success', 'failure' or 'unlabeled'; ``confidence``: the
    column the range applies to; ``text``: case-insensitive substring of the
    question (or id), taken literally.
    """
    if label not in ("any", "success", "failure", "unlabeled"):
        raise ValueError(f"label must be 'any', 'success', 'failure' or 'unlabeled', got {label!r}")
    m = np.ones(len(frame), dtype=bool)
    for col, chosen in (("dataset", datasets), ("model", models)):
        if chosen:
            m &= frame[col].map(lambda v: "(none)" if v is None else str(v)).isin(list(chosen)).to_numpy()
    y = frame["success"].to_numpy(dtype=np.float64)
    if label == "success":
        m &= y == 1
    elif label == "failure":
        m &= y == 0
    elif label == "unlabeled":
        m &= np.isnan(y)
    if confidence is not None:
        if confidence not in frame.columns:
            raise ValueError(f"confidence must be a column of the frame, got {confidence!r}")
        lo, hi = confidence_range
        c = frame[confidence].to_numpy(dtype=np.float64)
        m &= (c >= lo) & (c <= hi)
    if text:
        needle = text.strip().lower()
        q = frame["question"].map(lambda v: "" if v is None else str(v).lower())
        ids = frame["id"].map(lambda v: "" if v is None else str(v).lower())
        m &= (q.str.contains(needle, regex=False) | ids.str.contains(needle, regex=False)).to_numpy()
    return frame[m]


def _features_for(store: "Store", run_set_id: str, ts: TraceSet, profile: str, top_k: int):
    from ..features import FEATURE_NAMES, FeatureMatrix, extract

    hit = store.get_features(run_set_id, profile, top_k)
    if hit is not None and hit[0].shape == (ts.n_trajectories, len(FEATURE_NAMES)) and list(hit[1]) == list(FEATURE_NAMES):
        return FeatureMatrix(values=hit[0], ids=ts.ids, profile=profile, top_k=top_k)
    fm = extract(ts, profile=profile, top_k=top_k)
    store.put_features(run_set_id, profile, top_k, fm.values, fm.names)
    return fm


def build_workspace(store: "Store", *, profile: str = "paper", top_k: int = 5,
                    run_set_ids: Sequence[str] | None = None) -> Workspace:
    """Load run sets (all by default) with their features (from the store's cache, computed and cached
    when missing) and raw baseline confidences."""
    from ..calibration.baselines import baseline_confidences
    from ..features import FEATURE_NAMES, FeatureMatrix

    ids = store.run_set_ids() if run_set_ids is None else list(run_set_ids)
    sets, fms, owners = [], [], []
    for rs in ids:
        ts = store.load_run_set(rs)
        sets.append(ts)
        fms.append(_features_for(store, rs, ts, profile, top_k).values)
        owners.append(np.full(ts.n_trajectories, rs, dtype=object))
    ts = concat(sets)
    values = np.vstack(fms) if fms else np.zeros((0, len(FEATURE_NAMES)))
    fm = FeatureMatrix(values=values, ids=ts.ids, profile=profile, top_k=top_k)
    base = baseline_confidences(ts, profile=profile, top_k=top_k) if len(ts) else pd.DataFrame()
    owner = np.concatenate(owners) if owners else np.zeros(0, dtype=object)
    return Workspace(ts=ts, run_set=owner, features=fm, baselines=base, profile=profile, top_k=top_k)


def ingest(store: "Store", paths: Sequence[str | os.PathLike], *, name: str, labels: str | os.PathLike | None = None,
           fields: dict | None = None, format: str = "auto", profile: str = "paper", top_k: int = 5,
           progress=None) -> tuple[AddResult | None, LoadReport]:
    """Read files (any supported format, optional labels file), store them as one run set and cache
    their features. ``fields`` (dataset/model/framework) fill what the files leave empty.
    ``progress(fraction, message)`` is called between the stages."""
    from ..formats import load

    def tick(f: float, msg: str) -> None:
        if progress is not None:
            progress(f, msg)

    defaults = {k: v for k, v in (fields or {}).items() if v}
    tick(0.05, f"reading {len(paths)} file(s)")
    ts, report = load(list(paths), format=format, labels=labels, defaults=defaults or None)
    if ts.n_trajectories == 0:
        tick(1.0, "nothing to store")
        return None, report
    tick(0.6, f"storing {ts.n_trajectories:,} trajectories")
    res = store.add_run_set(ts, name=name, report=report, fields=fields)
    tick(0.85, "computing features")
    if res.kept:
        kept = ts if not res.duplicates else ts.filter(~pd.Series(ts.ids).duplicated(keep="first").to_numpy())
        from ..features import extract

        fm = extract(kept, profile=profile, top_k=top_k)
        store.put_features(res.run_set_id, profile, top_k, fm.values, fm.names)
    tick(1.0, f"stored {res.kept:,} trajectories")
    return res, report
