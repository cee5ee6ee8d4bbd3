"""Storing a run set chunk by chunk (``store_write``) gives the same run set as storing it at once: from a
TraceSet cut into chunks, from streamed file chunks (``iter_chunks``), with duplicates across chunks, step fields
that appear in a later chunk, and a failure half way (nothing kept). Real sample runs and the UALA runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from htc_core.app.features_store import ColumnWriter, write_columns
from htc_core.app.features_store import read_columns
from htc_core.app.ingest import ingest
from htc_core.app.store import Store
from htc_core.app.store_write import ChunkShapeError
from htc_core.formats import iter_chunks, load
from htc_core.report import LoadReport
from htc_core.traces import concat

from conftest import REPO, UALA

UNITS = REPO / "sample_runs" / "units"
ARRAYS = ("logprob", "top_logprobs", "step_offsets", "traj_offsets", "step_name", "step_text", "tokens", "top_tokens")


def assert_same_traces(a, b):
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            x, y = np.asarray(x), np.asarray(y)
            assert x.shape == y.shape and (np.array_equal(x, y, equal_nan=x.dtype != object)), name
    pd.testing.assert_frame_equal(a.meta, b.meta)
    assert set(a.step_fields) == set(b.step_fields)
    for k in a.step_fields:
        np.testing.assert_array_equal(np.asarray(a.step_fields[k]), np.asarray(b.step_fields[k]))


def test_a_trace_set_stored_in_chunks_is_the_one_stored_at_once(tmp_path):
    ts, _ = load(REPO / "sample_runs")
    s = Store(tmp_path / "st")
    whole = s.add_run_set(ts, name="whole", chunk=10_000)
    # 22 chunks of the 4,001 sample runs (every file; chunks cut across files), the last one of 11 runs; each chunk
    # is a DuckDB transaction (about 33 ms), so chunks of 37 runs (57 of them) cost 1.9 s CPU for the same check
    parts = s.add_run_set(ts, name="chunks", chunk=190)
    assert -(-len(ts) // 190) >= 10 and len(ts) % 190
    assert whole.kept == parts.kept == len(ts)
    assert_same_traces(s.load_run_set(whole.run_set_id), ts)
    assert_same_traces(s.load_run_set(parts.run_set_id), ts)
    listing = s.list_run_sets().set_index("name")
    for c in ("trajectories", "steps", "tokens", "k", "labeled"):
        assert listing.loc["whole", c] == listing.loc["chunks", c]


@pytest.mark.skipif(not UALA.is_dir(), reason="the shared UALA data is not mounted")
def test_streamed_file_chunks_equal_the_loaded_files(tmp_path):
    s = Store(tmp_path / "st")
    want, _ = load(UALA)
    reader = iter_chunks(UALA, max_trajectories=100)
    res = s.add_run_set(reader, name="uala", report=reader.report)
    assert res.kept == len(want) and not res.duplicates
    assert_same_traces(s.load_run_set(res.run_set_id), want)


def test_duplicates_across_chunks_are_dropped_and_reported(tmp_path):
    ts, _ = load(UNITS)
    s = Store(tmp_path / "st")
    doubled = concat([ts, ts.take(np.arange(0, 40))])             # 40 ids seen again in the last chunk
    rep = LoadReport()
    res = s.add_run_set(doubled, name="dup", report=rep, chunk=100)
    assert res.kept == len(ts) and len(res.duplicates) == 40
    dup = [p for p in rep.to_dict()["problems"] if p["reason"].startswith("duplicate trajectory id")]
    assert sorted(p["trajectory_id"] for p in dup) == sorted(res.duplicates) == sorted(map(str, ts.ids[:40]))
    assert_same_traces(s.load_run_set(res.run_set_id), ts)


def test_duplicates_are_looked_up_in_this_run_set_only(tmp_path):
    ts, _ = load(UNITS)
    s = Store(tmp_path / "st")
    first = s.add_run_set(ts, name="first", chunk=100)                # the same ids in another run set: all kept
    again = s.add_run_set(ts, name="again", chunk=100)
    assert again.kept == first.kept == len(ts) and not again.duplicates
    order = np.r_[np.arange(len(ts)), 5, 150, 5]                      # a copy in a later chunk and twice in one
    res = s.add_run_set(ts.take(order), name="thrice", chunk=len(ts))
    assert res.kept == len(ts) and res.duplicates == sorted({str(ts.ids[5]), str(ts.ids[150])})
    assert_same_traces(s.load_run_set(res.run_set_id), ts)


@pytest.mark.skipif(not UALA.is_dir(), reason="the shared UALA data is not mounted")
def test_a_step_field_first_seen_in_a_later_chunk_becomes_a_column(tmp_path):
    plain, _ = load(UALA)
    units, _ = load(UNITS)
    assert not plain.step_fields and units.step_fields       # the UALA runs carry no observations, units do
    arranged = concat([plain, units])
    s = Store(tmp_path / "st")
    res = s.add_run_set(arranged, name="late fields", chunk=len(plain))
    assert_same_traces(s.load_run_set(res.run_set_id), arranged)


def test_a_failure_half_way_keeps_nothing(tmp_path):
    ts, _ = load(UNITS)
    s = Store(tmp_path / "st")
    calls = []

    def boom(stage):
        calls.append(stage)
        if stage == "after_steps" and calls.count("after_steps") == 3:
            raise RuntimeError("disk full")

    s._fail_hook = boom
    with pytest.raises(RuntimeError, match="disk full"):
        s.add_run_set(ts, name="x", chunk=100)
    s._fail_hook = None
    assert s.run_set_ids() == []
    with s._connect() as con:
        assert con.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 0
        assert not [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
                    if t.startswith(("steps_", "tokens_", "vocab_"))]


def test_chunks_of_another_k_are_refused_by_name(tmp_path):
    a, _ = load(UNITS)
    b, _ = load(UALA) if UALA.is_dir() else (None, None)
    if b is None or a.k == b.k:
        pytest.skip("needs two inputs of different k")
    s = Store(tmp_path / "st")
    with pytest.raises(ChunkShapeError, match="chunk 1 has k="):
        s.add_run_set(iter([a, b]), name="mixed")
    assert s.run_set_ids() == []


def test_streamed_ingest_stores_the_same_columns_as_computing_them_afterwards(tmp_path):
    s = Store(tmp_path / "st")
    files = sorted(UNITS.glob("*.jsonl"))
    res, rep = ingest(s, files, name="units")
    assert rep.ok and res.kept == 500
    streamed = read_columns(s, [res.run_set_id])
    ts, _ = load(files)
    write_columns(s, res.run_set_id, ts, chunk=64)           # recomputed from the loaded files, in other chunks
    again = read_columns(s, [res.run_set_id])
    np.testing.assert_array_equal(streamed.features, again.features)
    pd.testing.assert_frame_equal(streamed.baselines, again.baselines)
    pd.testing.assert_frame_equal(streamed.flags.frame, again.flags.frame)
    np.testing.assert_array_equal(streamed.gac, again.gac)
    assert_same_traces(s.load_run_set(res.run_set_id), ts)
    assert isinstance(ColumnWriter(s), ColumnWriter)


def test_a_process_killed_between_chunks_leaves_nothing_after_the_next_open(tmp_path):
    import subprocess
    import sys
    import textwrap

    s = Store(tmp_path)
    first = s.add_run_set(load(UNITS)[0], name="kept", chunk=1000)
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from htc_core.app.store import Store
        from htc_core.formats import load
        s = Store({str(tmp_path)!r})
        seen = []
        s._fail_hook = lambda stage: seen.append(stage) or (os._exit(3) if seen.count("after_steps") == 3 else None)
        s.add_run_set(load({str(UNITS)!r})[0], name="killed", chunk=100)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr
    with s._connect() as con:     # two chunks were committed before the kill, under a pending row
        assert con.execute("SELECT count(*) FROM run_set_pending").fetchone()[0] == 1
        pending = con.execute("SELECT id FROM run_set_pending").fetchall()[0][0]
        # its tables were created; its rows wait for whole row groups (row_groups.py): none written yet
        assert con.execute(f"SELECT count(*) FROM steps_{pending}").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 500
    assert s.run_set_ids() == [first.run_set_id] and len(s.trajectories()) == 500     # never visible
    s2 = Store(tmp_path)                                          # the next open removes it (its process is gone)
    with s2._connect() as con:
        assert con.execute("SELECT count(*) FROM run_set_pending").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 500
        tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
                  if t.startswith(("steps_", "tokens_", "vocab_"))]
    assert sorted(tables) == sorted(f"{t}_{first.run_set_id}" for t in ("steps", "tokens", "vocab"))
