"""Some trajectories of a stored run set read without the rest (``Store.load_rows``, ``store_read``): the same
TraceSet as the whole run set read and ``take``n, on the real sample runs (token strings, alternatives, step
fields) and a run set written in chunks; the workspace's lazy trace set reads a small sample so."""

from __future__ import annotations

import numpy as np
import pytest

from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace
from htc_core.formats import load
from htc_core.traces import concat

from conftest import REPO
from test_store_chunked import UNITS, assert_same_traces


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("rows"))
    units, _ = load(UNITS)
    facts, _ = load(REPO / "sample_runs" / "facts")
    ids = {"units": s.add_run_set(units, name="units").run_set_id,
           "chunked": s.add_run_set(concat([facts, units]), name="chunked", chunk=64).run_set_id}
    return s, ids


def _cases(n: int, rng) -> list[np.ndarray]:
    return [np.array([0]), np.array([n - 1, 0, 3]), np.array([5, 5, 2, 5]), np.zeros(0, dtype=np.int64),
            rng.choice(n, size=min(n, 40), replace=False), np.arange(n)]


@pytest.mark.parametrize("name", ["units", "chunked"])
def test_rows_read_alone_are_the_rows_taken_from_the_whole_run_set(store, name):
    s, ids = store
    rs = ids[name]
    whole = s.load_run_set(rs)
    for pos in _cases(len(whole), np.random.default_rng(3)):
        want = whole.take(pos)
        assert_same_traces(s.load_rows(rs, pos), want)
        got = s.load_rows(rs, pos, whole.steps_per_trajectory, whole.tokens_per_trajectory)   # counts given
        assert_same_traces(got, want)


def test_load_rows_rejects_what_is_not_there(store):
    s, ids = store
    n = len(s.load_run_set(ids["units"]))
    with pytest.raises(IndexError, match="0..%d" % (n - 1)):
        s.load_rows(ids["units"], [n])
    with pytest.raises(IndexError):
        s.load_rows(ids["units"], [-1])
    with pytest.raises(KeyError):
        s.load_rows("0123456789ab", [0])


def test_the_workspace_reads_a_small_sample_alone_and_a_large_one_whole(store):
    s, ids = store
    ws = build_workspace(s, run_set_ids=[ids["units"], ids["chunked"]])
    full = concat([s.load_run_set(ids["units"]), s.load_run_set(ids["chunked"])])
    idx = np.random.default_rng(0).choice(len(ws), size=len(ws) // 10, replace=False)   # both run sets
    assert_same_traces(ws.ts.take(idx), full.take(idx))
    assert ws.ts.source_loads == 0 and ws.ts.source_row_reads == 2
    assert_same_traces(ws.ts.take(np.arange(len(ws))[::-1]), full.take(np.arange(len(ws))[::-1]))
    assert ws.ts.source_loads == 2                      # most of each run set: read whole, once, and kept
    assert_same_traces(ws.ts.take(idx), full.take(idx))
    assert ws.ts.source_loads == 2 and ws.ts.source_row_reads == 2
