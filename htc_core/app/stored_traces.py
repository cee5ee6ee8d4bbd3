"""A trace set whose metadata is in memory and whose tokens stay in the store until a computation needs them.

The workspace of a million stored runs holds their metadata (ids, labels, dataset, model, question, ...) and the
per-run columns of :mod:`~htc_core.app.features_store`; the token arrays (about 100 floats per run and more)
are read only when something asks for them: the cross-validated evaluation, the inspector, an uploaded model's
scoring. :class:`StoredTraces` answers the metadata questions itself (``meta``, ``ids``, ``labels``,
``steps_per_trajectory``, ...), ``take(indices)`` returns a real :class:`~htc_core.traces.TraceSet` of those
rows (reading only those rows from the store while they are at most a quarter of their run set, else the run
sets they come from, whole), ``subset(indices)`` another lazy view, ``one(i)`` the
single trajectory ``i`` as a TraceSet, and any other attribute (``logprob``, ``step_text``, ...) loads the whole
selection once.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..traces import META_COLUMNS, TraceSet, concat
from .features_store import nullable_bool, strings_to_object

__all__ = ["StoredTraces", "meta_from_arrow", "text_array"]


def meta_from_arrow(tbl) -> pd.DataFrame:
    """The ``TraceSet.meta`` frame from the store's trajectories rows (same dtypes as the readers give)."""
    cols: dict[str, pd.Series] = {}
    for c in META_COLUMNS:
        col = tbl.column(c)
        if c == "success":
            cols[c] = nullable_bool(col)
        elif c == "verbalized_confidence":
            cols[c] = pd.Series(col.to_numpy(zero_copy_only=False).astype(np.float64), dtype="float64")
        else:
            cols[c] = pd.Series(strings_to_object(col), dtype=object)
    return pd.DataFrame(cols)


def text_array(values: np.ndarray) -> pa.Array:
    """An object array of str / None as an Arrow string array (any other value as its ``str``)."""
    try:
        return pa.array(values, type=pa.string(), from_pandas=True)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


#: a run set's rows are read alone (``Store.load_rows``) while they are at most this share of the run set;
#: more, and the whole run set is read once and kept (as for the selection's full token arrays)
PART_READ_SHARE = 0.25


class _Source:
    """The run sets behind a lazy trace set: reads some rows of a run set alone (``load_rows``), or the whole
    run set once (``load_run_set``, kept and shared by every view)."""

    def __init__(self, load_run_set: Callable[[str], TraceSet], run_sets: list[str], sizes: list[int],
                 load_rows: Callable | None = None, steps: np.ndarray | None = None,
                 tokens: np.ndarray | None = None):
        self.load_run_set, self.load_rows = load_run_set, load_rows
        self.run_sets = run_sets
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.steps, self.tokens = steps, tokens          # per trajectory, all run sets (the rows' counts)
        self._sets: dict[str, TraceSet] = {}
        self._lock = threading.Lock()
        self.loads = 0          # whole run sets read from the store so far (tests and benchmarks read it)
        self.row_reads = 0      # reads of some rows of a run set

    def run_set(self, j: int) -> TraceSet:
        rs = self.run_sets[j]
        with self._lock:
            if rs not in self._sets:
                self._sets[rs] = self.load_run_set(rs)
                self.loads += 1
            return self._sets[rs]

    def _rows_of(self, j: int, local: np.ndarray) -> TraceSet:
        """Rows ``local`` of run set ``j``: alone when they are few and the run set is not in memory."""
        rs, size = self.run_sets[j], int(self.starts[j + 1] - self.starts[j])
        with self._lock:
            kept = self._sets.get(rs)
        if kept is not None or self.load_rows is None or len(np.unique(local)) > PART_READ_SHARE * size:
            return (kept if kept is not None else self.run_set(j)).take(local)
        lo, hi = self.starts[j], self.starts[j + 1]
        counts = (None, None) if self.steps is None or self.tokens is None else (self.steps[lo:hi], self.tokens[lo:hi])
        with self._lock:
            self.row_reads += 1
        return self.load_rows(rs, local, *counts)

    def take(self, rows: np.ndarray) -> TraceSet:
        """Rows (global positions, any order) as one TraceSet, reading only the run sets they fall in."""
        rows = np.asarray(rows, dtype=np.int64)
        owner = np.searchsorted(self.starts, rows, side="right") - 1
        if len(rows) and np.all(owner == owner[0]):
            return self._rows_of(int(owner[0]), rows - self.starts[owner[0]])
        parts, order = [], []
        for j in np.unique(owner):
            sel = np.flatnonzero(owner == j)
            parts.append(self._rows_of(int(j), rows[sel] - self.starts[j]))
            order.append(sel)
        if not parts:
            return self.run_set(0).take(np.zeros(0, dtype=np.int64)) if self.run_sets else concat([])
        joined = concat(parts)
        perm = np.empty(len(rows), dtype=np.int64)
        perm[np.concatenate(order)] = np.arange(len(rows))
        return joined.take(perm)


class StoredTraces:
    """A lazy view of stored trajectories: metadata in memory, tokens read from the store on demand.

    The metadata is kept as the Arrow table read from the store (text stays in Arrow buffers, no Python string
    per run); ``meta``, the pandas frame every TraceSet has, is built from it on first use, and from then on
    it is the metadata (a change made to it is what ``labels``, ``ids`` and :meth:`text_column` see)."""

    def __init__(self, source: _Source, meta: pd.DataFrame | pa.Table, rows: np.ndarray, steps: np.ndarray,
                 tokens: np.ndarray):
        self._source = source
        self._meta_arrow: pa.Table | None = meta if isinstance(meta, pa.Table) else None
        self._meta_df: pd.DataFrame | None = None if isinstance(meta, pa.Table) else meta.reset_index(drop=True)
        self._ids: np.ndarray | None = None
        self._rows = np.asarray(rows, dtype=np.int64)     # global positions in the source
        self._steps = np.asarray(steps, dtype=np.int64)
        self._tokens = np.asarray(tokens, dtype=np.int64)
        self._full: TraceSet | None = None

    @classmethod
    def from_store(cls, load_run_set: Callable[[str], TraceSet], run_sets: list[str], meta: pd.DataFrame | pa.Table,
                   sizes: list[int], steps: np.ndarray, tokens: np.ndarray,
                   load_rows: Callable | None = None) -> "StoredTraces":
        """``load_rows(run_set, positions, steps, tokens)`` (``Store.load_rows``) reads a few rows of a run set
        without the rest; without it a run set is read whole on its first use."""
        src = _Source(load_run_set, list(run_sets), list(sizes), load_rows, steps, tokens)
        n = meta.num_rows if isinstance(meta, pa.Table) else len(meta)
        return cls(src, meta, np.arange(n, dtype=np.int64), steps, tokens)

    # ------------------------------------------------------------ answered from memory
    @property
    def meta(self) -> pd.DataFrame:
        if self._meta_df is None:
            self._meta_df = meta_from_arrow(self._meta_arrow)
            self._ids = None
        return self._meta_df

    @meta.setter
    def meta(self, frame: pd.DataFrame) -> None:
        self._meta_df, self._ids = frame.reset_index(drop=True), None

    def text_column(self, name: str) -> pa.Array:
        """A metadata text column as an Arrow string array (no Python strings while the frame is not built)."""
        if self._meta_df is None:
            col = self._meta_arrow.column(name).combine_chunks()
            return col if col.type == pa.string() else col.cast(pa.string())
        return text_array(self._meta_df[name].to_numpy(dtype=object))

    def verbalized_column(self) -> np.ndarray:
        """The stated confidences (float64, NaN where absent) without building the metadata frame."""
        if self._meta_df is not None:
            return self._meta_df["verbalized_confidence"].to_numpy(dtype=np.float64)
        col = self._meta_arrow.column("verbalized_confidence").combine_chunks()
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)

    @property
    def n_trajectories(self) -> int:
        return len(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def ids(self) -> np.ndarray:
        if self._meta_df is not None:
            return self._meta_df["id"].to_numpy(dtype=object)
        if self._ids is None:
            self._ids = np.asarray(self._meta_arrow.column("id").to_numpy(zero_copy_only=False), dtype=object)
        return self._ids

    @property
    def labels(self) -> np.ndarray:
        if self._meta_df is not None:
            return self._meta_df["success"].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
        col = self._meta_arrow.column("success").combine_chunks()
        return np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)

    @property
    def has_labels(self) -> bool:
        if self._meta_df is not None:
            return bool(len(self)) and not self._meta_df["success"].isna().any()
        return bool(len(self)) and self._meta_arrow.column("success").null_count == 0

    @property
    def steps_per_trajectory(self) -> np.ndarray:
        return self._steps

    @property
    def tokens_per_trajectory(self) -> np.ndarray:
        return self._tokens

    @property
    def loaded(self) -> bool:
        """Whether the token arrays of this view were read (tests and benchmarks ask)."""
        return self._full is not None

    @property
    def source_loads(self) -> int:
        return self._source.loads

    @property
    def source_row_reads(self) -> int:
        return self._source.row_reads

    def subset(self, indices) -> "StoredTraces":
        idx = np.asarray(indices, dtype=np.int64)
        meta = self._meta_df.iloc[idx] if self._meta_df is not None else self._meta_arrow.take(pa.array(idx))
        return StoredTraces(self._source, meta, self._rows[idx], self._steps[idx], self._tokens[idx])

    # ------------------------------------------------------------ read from the store
    def take(self, indices) -> TraceSet:
        """Rows ``indices`` of this view as a real TraceSet (token arrays read from the store)."""
        idx = np.asarray(indices, dtype=np.int64)
        if self._full is not None:
            return self._full.take(idx)
        return self._source.take(self._rows[idx])

    def one(self, i: int) -> TraceSet:
        """Trajectory ``i`` alone, as a TraceSet."""
        return self.take(np.array([int(i)]))

    def materialize(self) -> TraceSet:
        if self._full is None:
            self._full = self._source.take(self._rows)
        return self._full

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.materialize(), name)
