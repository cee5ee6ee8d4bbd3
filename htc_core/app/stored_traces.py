"""A trace set whose metadata is in memory and whose tokens stay in the store until a computation needs them.

The workspace of a million stored runs holds their metadata (ids, labels, dataset, model, question, ...) and the
per-run columns of :mod:`~htc_core.app.features_store`; the token arrays (about 100 floats per run and more)
are read only when something asks for them: the cross-validated evaluation, the inspector, an uploaded model's
scoring. :class:`StoredTraces` answers the metadata questions itself (``meta``, ``ids``, ``labels``,
``steps_per_trajectory``, ...), ``take(indices)`` returns a real :class:`~htc_core.traces.TraceSet` of those
rows (reading only the run sets they come from), ``subset(indices)`` another lazy view, ``one(i)`` the
single trajectory ``i`` as a TraceSet, and any other attribute (``logprob``, ``step_text``, ...) loads the whole
selection once.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np
import pandas as pd

from ..traces import META_COLUMNS, TraceSet, concat
from .features_store import _nullable_bool, strings_to_object

__all__ = ["StoredTraces", "meta_from_arrow"]


def meta_from_arrow(tbl) -> pd.DataFrame:
    """The ``TraceSet.meta`` frame from the store's trajectories rows (same dtypes as the readers give)."""
    cols: dict[str, pd.Series] = {}
    for c in META_COLUMNS:
        col = tbl.column(c)
        if c == "success":
            cols[c] = _nullable_bool(col)
        elif c == "verbalized_confidence":
            cols[c] = pd.Series(col.to_numpy(zero_copy_only=False).astype(np.float64), dtype="float64")
        else:
            cols[c] = pd.Series(strings_to_object(col), dtype=object)
    return pd.DataFrame(cols)


class _Source:
    """The run sets behind a lazy trace set: loads each from the store once (shared by every view)."""

    def __init__(self, load_run_set: Callable[[str], TraceSet], run_sets: list[str], sizes: list[int]):
        self.load_run_set = load_run_set
        self.run_sets = run_sets
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._sets: dict[str, TraceSet] = {}
        self._lock = threading.Lock()
        self.loads = 0          # run sets read from the store so far (tests and benchmarks read it)

    def run_set(self, j: int) -> TraceSet:
        rs = self.run_sets[j]
        with self._lock:
            if rs not in self._sets:
                self._sets[rs] = self.load_run_set(rs)
                self.loads += 1
            return self._sets[rs]

    def take(self, rows: np.ndarray) -> TraceSet:
        """Rows (global positions, any order) as one TraceSet, reading only the run sets they fall in."""
        rows = np.asarray(rows, dtype=np.int64)
        owner = np.searchsorted(self.starts, rows, side="right") - 1
        if len(rows) and np.all(owner == owner[0]):
            return self.run_set(int(owner[0])).take(rows - self.starts[owner[0]])
        parts, order = [], []
        for j in np.unique(owner):
            sel = np.flatnonzero(owner == j)
            parts.append(self.run_set(int(j)).take(rows[sel] - self.starts[j]))
            order.append(sel)
        if not parts:
            return self.run_set(0).take(np.zeros(0, dtype=np.int64)) if self.run_sets else concat([])
        joined = concat(parts)
        perm = np.empty(len(rows), dtype=np.int64)
        perm[np.concatenate(order)] = np.arange(len(rows))
        return joined.take(perm)


class StoredTraces:
    """A lazy view of stored trajectories: metadata in memory, tokens read from the store on demand."""

    def __init__(self, source: _Source, meta: pd.DataFrame, rows: np.ndarray, steps: np.ndarray, tokens: np.ndarray):
        self._source = source
        self.meta = meta.reset_index(drop=True)
        self._rows = np.asarray(rows, dtype=np.int64)     # global positions in the source
        self._steps = np.asarray(steps, dtype=np.int64)
        self._tokens = np.asarray(tokens, dtype=np.int64)
        self._full: TraceSet | None = None

    @classmethod
    def from_store(cls, load_run_set: Callable[[str], TraceSet], run_sets: list[str], meta: pd.DataFrame,
                   sizes: list[int], steps: np.ndarray, tokens: np.ndarray) -> "StoredTraces":
        src = _Source(load_run_set, list(run_sets), list(sizes))
        return cls(src, meta, np.arange(len(meta), dtype=np.int64), steps, tokens)

    # ------------------------------------------------------------ answered from memory
    @property
    def n_trajectories(self) -> int:
        return len(self.meta)

    def __len__(self) -> int:
        return len(self.meta)

    @property
    def ids(self) -> np.ndarray:
        return self.meta["id"].to_numpy(dtype=object)

    @property
    def labels(self) -> np.ndarray:
        return self.meta["success"].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)

    @property
    def has_labels(self) -> bool:
        return bool(len(self)) and not self.meta["success"].isna().any()

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

    def subset(self, indices) -> "StoredTraces":
        idx = np.asarray(indices, dtype=np.int64)
        return StoredTraces(self._source, self.meta.iloc[idx], self._rows[idx], self._steps[idx], self._tokens[idx])

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
