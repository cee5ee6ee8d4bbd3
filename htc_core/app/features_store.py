"""Per-run columns kept in the store: the 48 features, the raw baseline confidences, the shipped GAC's zero-shot
confidence, the structural flags and the step/token counts of every stored trajectory.

They are computed once, chunk by chunk (``chunk`` trajectories at a time, so memory is bounded by a chunk), when
a run set is stored (:func:`write_columns`, or ``ColumnWriter`` while the run set is streamed in), and read back by the workspace
(:func:`read_columns`) so opening the dashboard never recomputes them: at a million runs this is the difference
between seconds and minutes (``python -m htc_dev.bench dashboard_scale``).

Layout (DuckDB, columnar, no pickle):

``run_columns``       one row per (run set, profile, top_k, trajectory): ``pos``, ``steps``, ``tokens``,
                      ``f00..f47`` (the features in ``FEATURE_NAMES`` order), ``b0..b5`` (the baselines of
                      :data:`BASELINES`), ``gac`` and ``gac_kind`` (the shipped GAC), ``flag_<name>`` (nullable)
``run_column_sets``   one row per computed (run set, profile, top_k): the feature names (JSON) and a digest of
                      the run set's token arrays and of its 48 features (``tf:`` + hex; the workspace's content
                      key uses it instead of hashing every token and feature again; a digest without the prefix,
                      written by an older version, covers the tokens only)

Next to the DuckDB file, ``columns/<run set>-<profile>-<top_k>-<digest>.npy`` holds the same 48 features as
one float64 ``.npy`` (no pickle): the workspace reads it in one go (0.2 s for a million runs, against about 4 s
for the 48 SQL columns). It is a copy: named by the digest of the row it belongs to (a stale or half-written
file is never read), checked for its shape, and when missing the ``f00..f47`` columns are read instead.

Decision: the features are not kept a third time as one BLOB per chunk in DuckDB (the ``run_feature_blocks``
table of earlier versions, still deleted with its run set where an old store has it): all of a run set's blobs
sit in one row group, which DuckDB rewrites, old blobs read back in memory, at every checkpoint of an append,
so the ingest's peak memory grew by about 40 MB per 50,000-run chunk.

Rows of a run set are written in one transaction: a run set has either all its columns or none (then the
workspace computes and writes them, chunk by chunk, on first use).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ..calibration.baselines import baseline_confidences
from ..explain.flags import FLAGS, StructuralFlags, structural_flags
from ..features import FEATURE_NAMES, extract
from ..traces import TraceSet
from .row_groups import FullRowGroups
from .store import Store, derived_tables

__all__ = ["StoredColumns", "read_columns", "has_columns", "BASELINES", "DEFAULT_CHUNK", "token_digest",
           "feature_file",
           "write_columns", "ColumnWriter"]

#: the raw baselines kept per run (``Verbalized`` is NaN where a run does not state one)
BASELINES = ("LastStep-TP", "GlobalTrace-TP", "Bottom10", "LowestGroup", "Tail", "Verbalized")
#: trajectories per chunk when the columns are computed
DEFAULT_CHUNK = 50_000
_F = [f"f{j:02d}" for j in range(len(FEATURE_NAMES))]
_B = [f"b{j}" for j in range(len(BASELINES))]
_FLAG_COLS = [f"flag_{f}" for f in FLAGS]

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS run_columns (run_set VARCHAR, profile VARCHAR, top_k INTEGER, pos BIGINT, "
    "steps BIGINT, tokens BIGINT, " + ", ".join(f"{c} DOUBLE" for c in _F + _B)
    + ", gac DOUBLE, gac_kind VARCHAR, " + ", ".join(f"{c} BOOLEAN" for c in _FLAG_COLS) + ")",
    "CREATE TABLE IF NOT EXISTS run_column_sets (run_set VARCHAR, profile VARCHAR, top_k INTEGER, n BIGINT, "
    "names VARCHAR, token_digest VARCHAR, gac_model VARCHAR)",
]


@dataclass
class StoredColumns:
    """The stored columns of some run sets, concatenated in the order asked (row i = trajectory i)."""

    features: np.ndarray            # float64 [n, 48]
    baselines: pd.DataFrame         # the raw baseline confidences (``Verbalized`` only when some run has one)
    gac: np.ndarray                 # float64 [n]: the shipped GAC's zero-shot confidence
    gac_kind: np.ndarray            # object [n]
    flags: StructuralFlags
    steps: np.ndarray               # int64 [n]
    tokens: np.ndarray              # int64 [n]
    digests: dict                   # run set id -> digest of its token arrays
    gac_model: str = ""

    def __len__(self) -> int:
        return self.features.shape[0]

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.features, columns=list(FEATURE_NAMES))
        for c in self.baselines.columns:
            df[c] = self.baselines[c].to_numpy()
        df["gac"], df["gac_kind"], df["steps"], df["tokens"] = self.gac, self.gac_kind, self.steps, self.tokens
        return pd.concat([df, self.flags.frame.add_prefix("flag_")], axis=1)

    def to_dict(self) -> dict:
        return {"n": len(self), "baselines": list(self.baselines.columns), "gac_model": self.gac_model,
                "flags_available": list(self.flags.available), "digests": dict(self.digests)}


def _ensure_schema(con) -> None:
    for stmt in _SCHEMA:
        con.execute(stmt)


def token_digest(ts: TraceSet, h=None):
    """Update (or start) a blake2b hash with the token-level arrays of ``ts``: what the features read."""
    h = h if h is not None else hashlib.blake2b(digest_size=20)
    for arr in (ts.logprob, ts.top_logprobs, ts.step_offsets, ts.traj_offsets):
        a = np.ascontiguousarray(arr)
        h.update(str((a.dtype.str, a.shape)).encode() + a.tobytes())
    return h


def _chunk_table(ts: TraceSet, start: int, profile: str, top_k: int, gac) -> pa.Table:
    """The column rows of one chunk (trajectories ``start..start+len(ts)`` of the run set)."""
    n = ts.n_trajectories
    fm = extract(ts, profile=profile, top_k=top_k)
    base = baseline_confidences(ts, profile=profile, top_k=top_k)
    cols: dict = {"pos": np.arange(start, start + n, dtype=np.int64),
                  "steps": ts.steps_per_trajectory.astype(np.int64),
                  "tokens": ts.tokens_per_trajectory.astype(np.int64)}
    for j, c in enumerate(_F):
        cols[c] = fm.values[:, j]
    for j, name in enumerate(BASELINES):
        cols[_B[j]] = base[name].to_numpy(dtype=np.float64) if name in base else np.full(n, np.nan)
    # run by run: a stored column must not depend on the chunk (nor does htc score: its --as-set is opt-in)
    confidence, _ = gac.confidences_traces(ts, set_level=False)
    cols["gac"] = np.asarray(confidence, dtype=np.float64)
    cols["gac_kind"] = pa.array(np.asarray(gac.kinds(ts), dtype=object).tolist(), type=pa.string())
    fl = structural_flags(ts).frame
    for f, c in zip(FLAGS, _FLAG_COLS):
        cols[c] = pa.array(fl[f].astype(object).where(fl[f].notna(), None).tolist(), type=pa.bool_())
    return pa.table(cols)


def _feature_block(tbl: pa.Table) -> np.ndarray:
    if not tbl.num_rows:
        return np.zeros((0, len(_F)))
    return np.ascontiguousarray(np.column_stack([tbl.column(c).to_numpy() for c in _F]), dtype=np.float64)


_SAFE = re.compile(r"^[A-Za-z0-9_.-]+$")


def feature_file(store: Store, run_set_id: str, profile: str, top_k: int, digest: str) -> "os.PathLike | None":
    """Where the features of these columns are kept as one ``.npy`` (None for a name unfit for a file)."""
    if not (_SAFE.match(run_set_id) and _SAFE.match(profile) and digest.startswith("tf:")):
        return None
    return store.data_dir / "columns" / f"{run_set_id}-{profile}-{int(top_k)}-{digest[3:23]}.npy"


def _read_feature_file(store: Store, run_set_id: str, profile: str, top_k: int, digest: str, n: int):
    """The features from their ``.npy`` copy, or None when it is missing or does not fit."""
    path = feature_file(store, run_set_id, profile, top_k, digest)
    if path is None or not os.path.exists(path):
        return None
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except (OSError, ValueError):
        return None
    if arr.shape != (n, len(_F)) or arr.dtype != np.float64:
        return None
    return np.array(arr)          # one read into memory (a plain, writable array)


def has_columns(store: Store, run_set_id: str, profile: str, top_k: int, *, con=None) -> bool:
    """Whether the run set's columns for this profile and top_k are stored (and complete)."""
    if con is None:
        with store._connect() as con:
            return has_columns(store, run_set_id, profile, top_k, con=con)
    _ensure_schema(con)
    rows = con.execute("SELECT n, names FROM run_column_sets WHERE run_set = ? AND profile = ? AND top_k = ?",
                       [run_set_id, profile, int(top_k)]).fetchall()
    if not rows or json.loads(rows[0][1]) != list(FEATURE_NAMES):
        return False
    n_traj = con.execute("SELECT n_trajectories FROM run_sets WHERE id = ?", [run_set_id]).fetchall()
    return bool(n_traj) and int(n_traj[0][0]) == int(rows[0][0])


def read_columns(store: Store, run_set_ids: Sequence[str], *, profile: str = "paper", top_k: int = 5,
                 con=None) -> StoredColumns:
    """The stored columns of ``run_set_ids`` (in that order, each in storage order). Raises KeyError naming a
    run set whose columns are not stored (see :func:`has_columns`)."""
    if con is None:
        with store._connect() as con:
            return read_columns(store, run_set_ids, profile=profile, top_k=top_k, con=con)
    ids = list(run_set_ids)
    cols = ["steps", "tokens", *_B, "gac", "gac_kind", *_FLAG_COLS]
    parts, blocks, digests, gac_model = [], [], {}, ""
    _ensure_schema(con)
    for rs in ids:
        meta = con.execute("SELECT token_digest, gac_model FROM run_column_sets WHERE run_set = ? AND "
                           "profile = ? AND top_k = ?", [rs, profile, int(top_k)]).fetchall()
        if not meta:
            raise KeyError(f"no stored columns for run set {rs!r} (profile {profile!r}, top_k {top_k})")
        digests[rs], gac_model = meta[0]
        # rows come back in insertion order (pos order: written so); checked, and sorted only when not
        part = con.sql(f"SELECT pos, {', '.join(cols)} FROM run_columns WHERE run_set = ? AND profile = ? "
                       "AND top_k = ?", params=[rs, profile, int(top_k)]).to_arrow_table()
        parts.append(in_pos_order(part).drop_columns(["pos"]))
        block = _read_feature_file(store, rs, profile, top_k, digests[rs], part.num_rows)
        blocks.append(block if block is not None else _features_from_columns(con, rs, profile, top_k))
    tbl = pa.concat_tables(parts) if parts else pa.table({c: pa.array([], type=pa.float64()) for c in cols})
    feats = (blocks[0] if len(blocks) == 1 else np.concatenate(blocks)) if blocks else np.zeros((0, len(_F)))
    if feats.shape != (tbl.num_rows, len(_F)):
        raise ValueError(f"stored feature blocks have shape {feats.shape} for {tbl.num_rows} runs")
    return _from_table(tbl, feats, digests, gac_model or "")


def _features_from_columns(con, rs: str, profile: str, top_k: int) -> np.ndarray:
    """The 48 features of a run set from its ``f00..f47`` columns (when the ``.npy`` copy is missing)."""
    tbl = in_pos_order(con.sql(f"SELECT pos, {', '.join(_F)} FROM run_columns WHERE run_set = ? AND profile = ? "
                               "AND top_k = ?", params=[rs, profile, int(top_k)]).to_arrow_table())
    return _feature_block(tbl)


def in_pos_order(tbl: pa.Table) -> pa.Table:
    """``tbl`` sorted by its ``pos`` column (no copy when it already is)."""
    pos = tbl.column("pos").to_numpy()
    if len(pos) and not (pos[0] == 0 and np.all(np.diff(pos) == 1)):
        tbl = tbl.take(pa.array(np.argsort(pos, kind="stable")))
    return tbl


def nullable_bool(col) -> pd.Series:
    """An Arrow boolean column as a pandas nullable-boolean Series (nulls kept as <NA>)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    values = col.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
    mask = col.is_null().to_numpy(zero_copy_only=False).astype(bool)
    return pd.Series(pd.arrays.BooleanArray(values, mask))


def strings_to_object(col) -> np.ndarray:
    """An Arrow string column as an object array of str / None, building one Python string per distinct value
    (dictionary-encoded first: a dataset or model column of a million rows costs a handful of strings)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if len(col) == 0:
        return np.zeros(0, dtype=object)
    enc = col.dictionary_encode() if not pa.types.is_dictionary(col.type) else col
    words = np.empty(len(enc.dictionary) + 1, dtype=object)
    words[:-1] = enc.dictionary.to_pylist()
    words[-1] = None
    idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return words[idx]


def _from_table(tbl: pa.Table, feats: np.ndarray, digests: dict, gac_model: str) -> StoredColumns:
    n = tbl.num_rows

    def f64(c: str) -> np.ndarray:
        return tbl.column(c).to_numpy().astype(np.float64, copy=False) if n else np.zeros(0)

    base = {}
    for name, c in zip(BASELINES, _B):
        v = f64(c)
        if name != "Verbalized" or np.isfinite(v).any():
            base[name] = v
    flag_frame = pd.DataFrame({f: nullable_bool(tbl.column(c)) for f, c in zip(FLAGS, _FLAG_COLS)})
    available = [f for f in FLAGS if flag_frame[f].notna().any()]
    kind = strings_to_object(tbl.column("gac_kind"))
    ints = {c: (tbl.column(c).to_numpy().astype(np.int64) if n else np.zeros(0, np.int64)) for c in ("steps", "tokens")}
    return StoredColumns(features=feats, baselines=pd.DataFrame(base), gac=f64("gac"), gac_kind=kind,
                         flags=StructuralFlags(frame=flag_frame, available=available), steps=ints["steps"],
                         tokens=ints["tokens"], digests=digests, gac_model=gac_model)


# ================================================================ writing the columns
# Writing the per-run columns of this module: chunk by chunk, each chunk stored as soon
# as it is computed, so memory is bounded by a chunk of trajectories.
#
# :func:`write_columns` computes them for a stored run set (a whole TraceSet, cut into chunks) in one transaction;
# :class:`ColumnWriter` does the same inside an already open transaction, chunk by chunk as a run set is streamed
# into the store (``Store.add_run_set(chunks, on_chunk=ColumnWriter(store))``: tokens and columns of a file in one
# pass and one transaction). The features' ``.npy`` copy is written along (a fixed header rewritten with the final
# shape, then renamed to the name of the columns' digest). The store's lock is held while the columns are
# computed (decision: one transaction, so a run set has all its columns or none).
#
# Runs appended to a stored run set (``ColumnWriter(..., append=True)``, ``store_append``): the new rows follow
# the stored ones, the digest chains the stored digest with the new runs' (a new content key, without reading the
# old runs), and the ``.npy`` copy grows at its end: its header still says the old row count until the new one is
# written, so a failed append leaves a copy that still fits the stored digest; should the commit fail after the
# rename, the copy is missing and the ``f00..f47`` columns are read instead (slower, same values).
def write_columns(store: Store, run_set_id: str, ts: TraceSet | Callable[[], TraceSet], *, profile: str = "paper",
                  top_k: int = 5, chunk: int = DEFAULT_CHUNK,
                  progress: Callable[[float, str], None] | None = None) -> int:
    """Compute the per-run columns of a stored run set chunk by chunk and store them in one transaction
    (replacing any earlier ones for this profile and top_k), each chunk written as soon as it is computed.
    ``ts`` is the run set as stored (or a function returning it). Returns the number of rows written."""
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    ts = ts() if callable(ts) else ts
    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    n = ts.n_trajectories
    w = ColumnWriter(store, run_set_id, profile=profile, top_k=top_k)
    with store._transaction(bump=False) as con:
        w.begin(con)
        for start in range(0, n, chunk):
            w.add(con, ts.take(np.arange(start, min(n, start + chunk))), start)
            if progress is not None:
                progress(min(n, start + chunk) / max(n, 1), f"features of {min(n, start + chunk):,} of {n:,} runs")
        w.finish(con)
    return n


class ColumnWriter:
    """Writes the per-run columns of one run set chunk by chunk inside an open transaction: ``begin(con)``,
    ``add(con, chunk, start)`` per chunk (in order), ``finish(con)``. As ``on_chunk`` of ``Store.add_run_set``
    (called with the new run set's id) it begins on the first chunk; call ``finish`` from the same transaction
    (``add_run_set(..., on_finish=writer.finish)``)."""

    def __init__(self, store: Store, run_set_id: str | None = None, *, profile: str = "paper", top_k: int = 5,
                 append: bool = False):
        from ..calibration.models import DEFAULT_GAC, load_scorer

        self.store, self.run_set_id, self.profile, self.top_k = store, run_set_id, profile, int(top_k)
        self.append, self.skip = bool(append), False      # append: runs added to a stored run set
        self.gac_name, self.gac = DEFAULT_GAC, load_scorer(DEFAULT_GAC)   # numpy only: no scikit-learn in serve
        self.digest = hashlib.blake2b(digest_size=20)
        self.n = 0
        self._file: _FeatureFile | None = None

    def __call__(self, con, run_set_id: str, part: TraceSet, start: int) -> None:   # the on_chunk hook
        if self._file is None and not self.skip:
            self.run_set_id = run_set_id
            self.resume(con) if self.append else self.begin(con)
        if not self.skip:
            self.add(con, part, start)

    def _key(self) -> list:
        return [self.run_set_id, self.profile, self.top_k]

    def begin(self, con) -> None:
        _ensure_schema(con)
        for t in derived_tables(con):       # (an old store's run_feature_blocks too)
            con.execute(f"DELETE FROM {t} WHERE run_set = ? AND profile = ? AND top_k = ?", self._key())
        self._file = _FeatureFile(self.store, self.run_set_id, self.profile)
        self._rows = FullRowGroups("INSERT INTO run_columns SELECT ? AS run_set, ? AS profile, ? AS top_k, * "
                                   "FROM _htc_rows", self._key())      # whole row groups (row_groups.py)

    def resume(self, con) -> None:
        """Continue the stored columns of the run set (runs appended): the new rows follow, the digest chains the
        stored one with the new runs', the features' .npy copy grows at its end. A run set without stored
        columns gets none now (the workspace computes them all on first use)."""
        _ensure_schema(con)
        row = con.execute("SELECT n, token_digest FROM run_column_sets WHERE run_set = ? AND profile = ? AND "
                          "top_k = ?", self._key()).fetchall()
        if not row:
            self.skip = True
            return
        self.n, old = int(row[0][0]), str(row[0][1])
        self.digest.update(old.encode())
        self._file = _FeatureFile(self.store, self.run_set_id, self.profile,
                                  grow=(feature_file(self.store, self.run_set_id, self.profile, self.top_k, old),
                                        self.n))
        self._rows = FullRowGroups("INSERT INTO run_columns SELECT ? AS run_set, ? AS profile, ? AS top_k, * "
                                   "FROM _htc_rows", self._key())

    def add(self, con, part: TraceSet, start: int) -> None:
        if start != self.n:
            raise ValueError(f"chunks must come in order: expected start {self.n}, got {start}")
        token_digest(part, self.digest)
        tbl = _chunk_table(part, start, self.profile, self.top_k, self.gac)
        block = _feature_block(tbl)
        self.digest.update(block.tobytes())
        self._rows.add(con, tbl)
        self._file.write(block)
        self.n += tbl.num_rows

    def finish(self, con) -> str:
        """Write the column set's row (and move the features' .npy copy in place); returns the digest."""
        if self.skip:
            return ""
        if self._file is None:
            self.begin(con)
        self._rows.flush(con)
        hexdigest = "tf:" + self.digest.hexdigest()
        self._file.close(feature_file(self.store, self.run_set_id, self.profile, self.top_k, hexdigest), self.n)
        if self.append:
            con.execute("UPDATE run_column_sets SET n = ?, token_digest = ? WHERE run_set = ? AND profile = ? AND "
                        "top_k = ?", [self.n, hexdigest] + self._key())
            return hexdigest
        con.execute("INSERT INTO run_column_sets VALUES (?, ?, ?, ?, ?, ?, ?)",
                    self._key() + [self.n, json.dumps(list(FEATURE_NAMES)), hexdigest, self.gac_name])
        return hexdigest


class _FeatureFile:
    """The features' .npy copy written chunk by chunk: a fixed 128-byte header (rewritten with the final shape at
    the end), the float64 rows appended, then renamed to its digest's name."""

    HEADER = 128

    def __init__(self, store: Store, run_set_id: str, profile: str, *, grow: tuple | None = None):
        self.tmp = None
        if not (_SAFE.match(str(run_set_id)) and _SAFE.match(profile)):
            return
        if grow is not None:      # (path, rows): rows appended to a stored copy
            self._grow(*grow)
            return
        folder = store.data_dir / "columns"
        folder.mkdir(parents=True, exist_ok=True)
        self.tmp = folder / f"{run_set_id}.{os.getpid()}.{id(self)}.tmp"
        self.fh = open(self.tmp, "wb")
        self.fh.write(b"\0" * self.HEADER)

    def _grow(self, path, n: int) -> None:
        """Open the stored copy to add rows at its end (past rows a failed append left, cut off). Until the new
        header is written its header still says ``n`` rows, so the copy stays valid for the stored digest; a
        missing or unfit copy is not continued (the columns are read from the store then)."""
        if path is None or not os.path.exists(path):
            return
        fh = open(path, "r+b")
        try:
            ok = np.lib.format.read_magic(fh) == (1, 0)
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh) if ok else ((), True, None)
            ok = ok and fh.tell() == self.HEADER and shape == (n, len(_F)) and not fortran and dtype == np.dtype("<f8")
        except (ValueError, OSError):
            ok = False
        if not ok:
            fh.close()
            return
        fh.seek(self.HEADER + n * len(_F) * 8)
        fh.truncate()
        self.tmp, self.fh = path, fh

    def write(self, block: np.ndarray) -> None:
        if self.tmp is not None:
            self.fh.write(np.ascontiguousarray(block, dtype="<f8").tobytes())

    def close(self, path, n: int) -> None:
        if self.tmp is None:
            return
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (n, len(_F))})
        ok = path is not None and len(head.getvalue()) == self.HEADER
        if ok:
            self.fh.seek(0)
            self.fh.write(head.getvalue())
        self.fh.close()
        if ok:
            os.replace(self.tmp, path)
        else:
            os.unlink(self.tmp)
