"""The per-run rows of a run set are written to DuckDB in whole row groups (``row_groups.FullRowGroups``): what is
written is the rows given, in order, in multiples of the row group until the flush."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from htc_core.app.row_groups import ROW_GROUP, FullRowGroups


def test_rows_are_written_in_whole_row_groups_then_the_rest():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (tag VARCHAR, pos BIGINT, name VARCHAR)")
    rows = FullRowGroups("INSERT INTO t SELECT ? AS tag, * FROM _htc_rows", ["a"], row_group=100)
    sizes, start, written = [70, 70, 0, 250, 15], 0, []
    for n in sizes:
        pos = np.arange(start, start + n)
        rows.add(con, pa.table({"pos": pa.array(pos), "name": pa.array([f"r{v}" for v in pos], type=pa.string())}))
        start += n
        written.append(con.execute("SELECT count(*) FROM t").fetchall()[0][0])
        pending = rows.column("pos")
        assert (0 if pending is None else len(pending)) == start - written[-1]
    assert written == [0, 100, 100, 300, 400]
    assert list(rows.column("name").to_pylist()) == [f"r{v}" for v in range(400, 405)]
    rows.flush(con)
    got = con.execute("SELECT tag, pos, name FROM t").fetchall()
    assert got == [("a", v, f"r{v}") for v in range(start)]
    assert rows.column("pos") is None and ROW_GROUP == 122_880
