"""Appending a run set's rows to DuckDB in whole row groups (``trajectories``, ``run_columns``, ``steps_<id>``,
``tokens_<id>``).

Each committed append to a stored table starts a new row group, and DuckDB's checkpoint merges adjacent small
row groups (its vacuum), reading them back. A run set stored 50,000 runs a chunk left a 50,000-row group per
chunk in the per-run tables (and a small last one of the steps), so checkpoints kept merging them: the ingest's
peak memory jumped by 500 MB and more on some commits and grew with the run set (a run set's per-chunk feature
BLOBs, all in one row group, were read back at every checkpoint). :class:`FullRowGroups` keeps the rows until
they fill whole row groups of :data:`ROW_GROUP` rows and writes those, so only the run set's last, partial row
group is left to merge; it holds at most one row group of rows per table (for ``run_columns`` about 70 MB).
Decision: DuckDB's vacuum stays on (``max_vacuum_tasks = 0`` also made the ingest flat, but left every small
write its own row group: 1,000 result writes grew the store file to 157 MB against 2.8 MB).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["ROW_GROUP", "FullRowGroups"]

#: rows per DuckDB row group (DuckDB's default)
ROW_GROUP = 122_880


class FullRowGroups:
    """Rows for one table, written by ``insert`` (SQL reading the registered view ``_htc_rows``, with
    ``params``) whole row groups at a time; :meth:`flush` writes the rest (the run set's last rows)."""

    def __init__(self, insert: str, params: list | None = None, *, row_group: int = ROW_GROUP):
        self.insert, self.params, self.row_group = insert, list(params or []), int(row_group)
        self.parts: list[pa.Table] = []
        self.n = 0

    def add(self, con, rows: pa.Table) -> None:
        if rows.num_rows:
            self.parts.append(rows)
            self.n += rows.num_rows
        if self.n >= self.row_group:
            self._write(con, self.n - self.n % self.row_group)

    def flush(self, con) -> None:
        if self.n:
            self._write(con, self.n)

    def column(self, name: str) -> pa.ChunkedArray | None:
        """A column of the rows not written yet (None when there are none)."""
        if not self.parts:
            return None
        return pa.chunked_array([c for p in self.parts for c in p.column(name).chunks],
                                type=self.parts[0].schema.field(name).type)

    def _write(self, con, m: int) -> None:
        rows = pa.concat_tables(self.parts, promote_options="default") if len(self.parts) > 1 else self.parts[0]
        con.register("_htc_rows", rows.slice(0, m))
        try:
            con.execute(self.insert, self.params)
        finally:
            con.unregister("_htc_rows")
        rest = rows.slice(m)
        # a copy, so that the written rows' buffers are freed
        self.parts = [rest.take(pa.array(np.arange(rest.num_rows)))] if rest.num_rows else []
        self.n = rest.num_rows
