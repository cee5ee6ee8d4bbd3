"""Writing the per-run columns of :mod:`~htc_core.app.features_store`: chunk by chunk, each chunk stored as soon
as it is computed, so memory is bounded by a chunk of trajectories.

:func:`write_columns` computes them for a stored run set (a whole TraceSet, cut into chunks) in one transaction;
:class:`ColumnWriter` does the same inside an already open transaction, chunk by chunk as a run set is streamed
into the store (``Store.add_run_set(chunks, on_chunk=ColumnWriter(store))``: tokens and columns of a file in one
pass and one transaction). The features' ``.npy`` copy is written along (a fixed header rewritten with the final
shape, then renamed to the name of the columns' digest). The store's lock is held while the columns are
computed (decision: one transaction, so a run set has all its columns or none).

Runs appended to a stored run set (``ColumnWriter(..., append=True)``, ``store_append``): the new rows follow
the stored ones, the digest chains the stored digest with the new runs' (a new content key, without reading the
old runs), and the ``.npy`` copy grows at its end: its header still says the old row count until the new one is
written, so a failed append leaves a copy that still fits the stored digest; should the commit fail after the
rename, the copy is missing and the ``f00..f47`` columns are read instead (slower, same values).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from typing import Callable

import numpy as np

from ..features import FEATURE_NAMES
from ..traces import TraceSet
from .features_store import (_F, _SAFE, DEFAULT_CHUNK, _chunk_table, _ensure_schema, _feature_block, feature_file,
                             token_digest)
from .row_groups import FullRowGroups
from .store import Store, _derived_tables

__all__ = ["write_columns", "ColumnWriter"]


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
        from ..calibration.models import DEFAULT_GAC, load_model

        self.store, self.run_set_id, self.profile, self.top_k = store, run_set_id, profile, int(top_k)
        self.append, self.skip = bool(append), False      # append: runs added to a stored run set
        self.gac_name, self.gac = DEFAULT_GAC, load_model(DEFAULT_GAC)
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
        for t in _derived_tables(con):       # (an old store's run_feature_blocks too)
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
