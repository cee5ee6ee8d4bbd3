"""Appending runs to a stored run set (``store_append``): the run set keeps its id and ends up the same as the
runs stored at once (tokens, vocabulary, step fields, per-run columns and the features' .npy copy); narrower or
wider alternatives, missing token strings, duplicates; a failure or a killed process before the commit leaves
the run set as it was. Real sample runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import REPO
from htc_core.app.features_store import write_columns
from htc_core.app.features_store import feature_file, read_columns
from htc_core.app.ingest import append_trace_set, store_trace_set
from htc_core.app.store import Store
from htc_core.app.store_append import append_run_set, merge_report_dicts
from htc_core.formats import load
from htc_core.report import LoadReport
from htc_core.traces import concat
from test_store_chunked import assert_same_traces

UNITS = REPO / "sample_runs" / "units"


@pytest.fixture(scope="module")
def runs():
    ts, _ = load(UNITS)
    return ts.take(np.arange(60))


def _columns_equal(store, rs, whole):
    got = read_columns(store, [rs])
    ref_store = Store(store.data_dir.parent / "ref")
    ref = ref_store.add_run_set(whole, name="ref").run_set_id
    write_columns(ref_store, ref, whole)
    want = read_columns(ref_store, [ref])
    np.testing.assert_array_equal(got.features, want.features)
    np.testing.assert_allclose(got.gac, want.gac, rtol=1e-12)     # a batch-size rounding of the GAC
    np.testing.assert_array_equal(got.steps, want.steps)
    assert got.flags.frame.equals(want.flags.frame)


def test_appended_runs_keep_the_id_and_equal_the_runs_stored_at_once(tmp_path, runs):
    s = Store(tmp_path / "s")
    a, b, c = runs.take(np.arange(25)), runs.take(np.arange(25, 40)), runs.take(np.arange(40, 60))
    first = store_trace_set(s, a, LoadReport(), name="day")
    digests = []
    for part in (b, c):
        rep = LoadReport()
        rep.trajectories_read = part.n_trajectories
        assert append_trace_set(s, first.run_set_id, part, rep) == part.n_trajectories
        with s._connect() as con:
            digests.append(con.execute("SELECT token_digest FROM run_column_sets").fetchall()[0][0])
    assert s.run_set_ids() == [first.run_set_id]
    (row,) = s.list_run_sets().itertuples()
    assert row.trajectories == 60 and row.steps == runs.n_steps and row.tokens == runs.n_tokens
    assert_same_traces(s.load_run_set(first.run_set_id), runs)
    _columns_equal(s, first.run_set_id, runs)
    assert len(set(digests)) == 2                                   # the content key moves with the content
    path = feature_file(s, first.run_set_id, "paper", 5, digests[-1])
    assert path.exists() and np.load(path).shape == (60, 48)      # the .npy copy grew (read, not the columns)
    assert len(list((s.data_dir / "columns").glob("*.npy"))) == 1
    assert s.run_set_report(first.run_set_id)["trajectories_read"] == 35


def test_alternatives_narrower_or_wider_and_missing_strings(tmp_path, runs):
    s = Store(tmp_path / "s")
    a = runs.take(np.arange(10))
    a.top_tokens = np.full((a.n_tokens, a.k), "alt", dtype=object)      # the samples keep no alternative strings
    rs = s.add_run_set(a, name="x").run_set_id
    narrow = runs.take(np.arange(10, 15))
    narrow.top_logprobs = narrow.top_logprobs[:, :2].copy()
    narrow.top_tokens = np.full((narrow.n_tokens, 2), "n", dtype=object)
    assert append_run_set(s, rs, narrow)[0] == 5
    wide = runs.take(np.arange(15, 20))
    wide.top_logprobs = np.hstack([wide.top_logprobs, np.full((wide.n_tokens, 2), -7.0)])
    wide.top_tokens = np.full((wide.n_tokens, runs.k + 2), "w", dtype=object)
    assert append_run_set(s, rs, wide)[0] == 5
    bare = runs.take(np.arange(20, 25))
    bare.tokens, bare.top_tokens = None, None
    assert append_run_set(s, rs, bare)[0] == 5
    got = s.load_run_set(rs)
    want = concat([a, narrow, wide])
    assert got.k == want.k == runs.k + 2
    n = want.n_tokens
    np.testing.assert_array_equal(got.top_logprobs[:n], want.top_logprobs)
    assert list(got.top_tokens[:n].ravel()) == list(want.top_tokens.ravel())
    assert all(t is None for t in got.tokens[n:]) and np.isnan(got.top_logprobs[n:, runs.k:]).all()
    np.testing.assert_array_equal(got.logprob[n:], bare.logprob)


def test_duplicates_are_dropped_and_reported(tmp_path, runs):
    s = Store(tmp_path / "s")
    rs = s.add_run_set(runs.take(np.arange(10)), name="x").run_set_id
    rep = LoadReport()
    kept, dups = append_run_set(s, rs, runs.take(np.arange(5, 15)), report=rep)
    assert kept == 5 and dups == sorted(map(str, runs.ids[5:10]))
    assert list(s.load_run_set(rs).ids) == list(runs.ids[:15])
    assert sum("duplicate" in str(p) for p in s.run_set_report(rs)["problems"]) == 5


def test_unknown_run_set(tmp_path, runs):
    with pytest.raises(KeyError, match="unknown run set"):
        append_run_set(Store(tmp_path), "0123456789ab", runs.take(np.arange(2)))


@pytest.mark.parametrize("where", ["after_trajectories", "after_steps", "before_commit"])
def test_a_failed_append_leaves_the_run_set_as_it_was(tmp_path, runs, where):
    s = Store(tmp_path / "s")
    first = store_trace_set(s, runs.take(np.arange(20)), LoadReport(), name="day")
    before = read_columns(s, [first.run_set_id]).features

    def boom(stage):
        if stage == where:
            raise RuntimeError("disk full (injected)")

    s._fail_hook = boom
    with pytest.raises(RuntimeError, match="injected"):
        append_trace_set(s, first.run_set_id, runs.take(np.arange(20, 30)), LoadReport())
    s._fail_hook = None
    assert_same_traces(s.load_run_set(first.run_set_id), runs.take(np.arange(20)))
    np.testing.assert_array_equal(read_columns(s, [first.run_set_id]).features, before)
    assert append_trace_set(s, first.run_set_id, runs.take(np.arange(20, 30)), LoadReport()) == 10
    _columns_equal(s, first.run_set_id, runs.take(np.arange(30)))


def test_a_process_killed_before_the_commit_leaves_the_run_set_as_it_was(tmp_path, runs):
    s = Store(tmp_path / "s")
    first = store_trace_set(s, runs.take(np.arange(20)), LoadReport(), name="day")
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        import numpy as np
        from htc_core.app.ingest import append_trace_set
        from htc_core.app.store import Store
        from htc_core.formats import load
        from htc_core.report import LoadReport
        s = Store({str(s.data_dir)!r})
        s._fail_hook = lambda stage: os._exit(3) if stage == "before_commit" else None
        ts, _ = load({str(UNITS)!r})
        append_trace_set(s, {first.run_set_id!r}, ts.take(np.arange(20, 30)), LoadReport())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr
    s2 = Store(s.data_dir)
    assert_same_traces(s2.load_run_set(first.run_set_id), runs.take(np.arange(20)))
    _columns_equal(s2, first.run_set_id, runs.take(np.arange(20)))


def test_reports_merge():
    old = {"files": ["a"], "lines_read": 3, "rejected": 1, "formats": {"a": "otel"}, "labels": None,
           "problems": [{"message": "x"}] * 3, "problems_truncated": 0}
    new = {"files": ["b"], "lines_read": 2, "rejected": 0, "formats": {"b": "otel"}, "labels": None,
           "problems": [{"message": "y"}] * 2, "problems_truncated": 0}
    m = merge_report_dicts(old, new, max_problems=4)
    assert m["files"] == ["a", "b"] and m["lines_read"] == 5 and m["rejected"] == 1
    assert m["formats"] == {"a": "otel", "b": "otel"} and len(m["problems"]) == 4 and m["problems_truncated"] == 1


def test_strings_the_run_set_never_kept_cannot_be_appended(tmp_path, runs):
    from htc_core.app.store_write import ChunkShapeError

    s = Store(tmp_path / "s")
    bare = runs.take(np.arange(5))
    bare.tokens = None
    rs = s.add_run_set(bare, name="x").run_set_id
    with pytest.raises(ChunkShapeError, match="token strings the stored run set"):
        append_run_set(s, rs, runs.take(np.arange(5, 10)))
    assert s.list_run_sets()["trajectories"].tolist() == [5]            # nothing of the refused chunk kept
