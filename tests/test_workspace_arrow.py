"""The workspace opened from the store keeps its text in Arrow and reads the features from their .npy copy; what
the pages see is the same as from the pandas metadata and the DuckDB columns (real sample runs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import htc_core.app.features_store as features_store
from htc_core.app.ingest import ingest
from htc_core.app.sql_views import RunsTable
from htc_core.app.store import Store
from htc_core.app.stored_traces import StoredTraces
from htc_core.app.workspace import build_workspace
from htc_core.formats import load
from htc_core.traces import concat

from conftest import REPO

FILES = [p for p in sorted((REPO / "sample_runs").glob("*/*.jsonl")) if p.parent.name in ("units", "strings")][:3]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("wsarrow"))
    for f in FILES:
        ingest(s, [f], name=f.name)
    return s, concat([load(f)[0] for f in FILES])


def _old_keys(ws):      # how the keys were built before (pandas strings)
    return (pd.Series(ws.run_set, dtype=object).astype(str) + ":"
            + pd.Series(ws.ts.meta["id"].to_numpy(dtype=object), dtype=object).astype(str)).to_numpy(dtype=object)


def test_opening_builds_no_metadata_frame_and_gives_the_same_columns(stored):
    s, ts = stored
    ws = build_workspace(s)
    assert isinstance(ws.ts, StoredTraces) and ws.ts._meta_df is None
    keys, ids, labels = ws.keys, ws.ts.ids, ws.labels
    values = {c: ws.values(c) for c in ("dataset", "model", "framework")}
    masks = {c: ws.mask(datasets=[values["dataset"][0]], models=[values["model"][-1]]) for c in ("x",)}
    digest = ws.content_digest()
    RunsTable(ws)
    assert ws.ts._meta_df is None                       # none of the above built the pandas metadata
    assert list(ids) == list(ts.ids) and np.array_equal(labels, ts.labels, equal_nan=True)
    # the same answers from the pandas frame (built now)
    meta = ws.ts.meta
    assert list(keys) == list(_old_keys(ws))
    for c, v in values.items():
        assert v == sorted({"(none)" if x is None else str(x) for x in meta[c]})
    want = (meta["dataset"].map(lambda v: "(none)" if v is None else str(v)).to_numpy() == values["dataset"][0]) \
        & (meta["model"].map(lambda v: "(none)" if v is None else str(v)).to_numpy() == values["model"][-1])
    assert np.array_equal(masks["x"], want) and want.any()
    for c in ("id", "dataset", "model", "framework", "question", "answer", "gold"):
        assert ws.text_column(c).to_pylist() == list(meta[c].to_numpy(dtype=object)), c
    assert ws.content_digest() == digest
    assert build_workspace(s).content_digest() == digest


def test_runs_table_columns_equal_the_workspace_frame(stored):
    s, _ = stored
    ws = build_workspace(s)
    table = RunsTable(ws)
    rows = table.page(limit=10_000).rows
    frame = ws.frame()
    for c in ("key", "run_set", "id", "dataset", "model", "framework", "question", "answer", "gold", "flags"):
        assert list(rows[c]) == list(frame[c]), c
    for c in ("success", "steps", "tokens", "GlobalTrace-TP", "Tail"):
        np.testing.assert_array_equal(rows[c].to_numpy(dtype=np.float64), frame[c].to_numpy(dtype=np.float64))


def test_a_changed_label_changes_labels_and_digest_of_a_lazy_view(stored):
    s, _ = stored
    ws = build_workspace(s)
    sub = ws.take(np.arange(40))
    assert sub.ts._meta_df is None
    d = sub.content_digest()
    fresh = ws.take(np.arange(40))
    fresh.ts.meta.loc[0, "success"] = not bool(fresh.ts.meta.loc[0, "success"])
    assert fresh.labels[0] != sub.labels[0] and fresh.content_digest() != d


def test_features_come_from_the_npy_copy_and_fall_back_to_the_store(stored):
    s, ts = stored
    ws = build_workspace(s)
    rs = s.run_set_ids()
    files = sorted((s.data_dir / "columns").glob("*.npy"))
    assert len(files) == len(rs)
    blocks = features_store.read_columns(s, rs)
    for f in files:                      # a missing copy, and a copy of the wrong shape: the f00..f47 columns
        f.rename(f.with_suffix(".bak"))
    np.testing.assert_array_equal(features_store.read_columns(s, rs).features, blocks.features)
    np.save(files[0], np.zeros((3, 48)))
    np.testing.assert_array_equal(features_store.read_columns(s, rs).features, blocks.features)
    files[0].unlink()
    for f in files:
        f.with_suffix(".bak").rename(f)
    np.testing.assert_array_equal(ws.features.values, blocks.features)
    assert build_workspace(s).content_digest() == ws.content_digest()
    assert all(d.startswith("tf:") for d in blocks.digests.values())


def test_deleting_a_run_set_removes_its_feature_copy(tmp_path):
    s = Store(tmp_path / "st")
    res, _ = ingest(s, [FILES[0]], name="a")
    assert list((s.data_dir / "columns").glob(f"{res.run_set_id}-*.npy"))
    s.delete_run_set(res.run_set_id)
    assert not list((s.data_dir / "columns").glob("*.npy"))
