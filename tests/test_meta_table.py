"""The trace set's metadata as plain columns (``traces.metatable.MetaTable``) until a DataFrame is asked for
(issue 29): ``ts.meta`` is the same DataFrame as before, built lazily; after it is built it is the metadata;
``TableWriter.write_columns`` writes the bytes ``write`` writes for the equivalent DataFrame."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import htc_core as htc
from htc_core.formats import labels as labels_mod
from htc_core.tablewriter import TableWriter
from htc_core.traces import MetaTable, TraceSet, concat
from htc_core.traces.prefix import prefix_pairs, prefixes
from htc_core.traces.traceset import META_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
UNITS = ROOT / "sample_runs" / "units"


def _reference_frame(rows: list[dict]) -> pd.DataFrame:
    """The metadata DataFrame as ``meta_frame`` built it before the plain columns (main at 12a3de3)."""
    cols = {}
    for c in META_COLUMNS:
        vals = [r.get(c) for r in rows]
        if c == "success":
            cols[c] = pd.Series([pd.NA if v is None or v is pd.NA else bool(v) for v in vals], dtype="boolean")
        elif c == "verbalized_confidence":
            cols[c] = pd.Series([np.nan if v is None else float(v) for v in vals], dtype="float64")
        else:
            arr = np.empty(len(vals), dtype=object)
            arr[:] = vals
            cols[c] = pd.Series(arr, dtype=object)
    return pd.DataFrame(cols)


ROWS = [{"id": "a", "dataset": "d", "success": True, "verbalized_confidence": 0.25, "metadata": "{}"},
        {"id": "b", "model": "m", "success": False, "question": "q,\"x\"\n", "metadata": '{"k": 1}'},
        {"id": "c", "success": None, "gold": "", "source": "s.jsonl", "metadata": "{}"}]


def test_the_frame_is_the_one_built_before():
    pd.testing.assert_frame_equal(MetaTable.from_rows(ROWS).to_frame(), _reference_frame(ROWS))
    pd.testing.assert_frame_equal(MetaTable.empty(3).to_frame(), _reference_frame([{"metadata": "{}"}] * 3))
    round_trip = MetaTable.from_frame(_reference_frame(ROWS)).to_frame()
    pd.testing.assert_frame_equal(round_trip, _reference_frame(ROWS))


def test_loading_builds_no_dataframe_until_meta_is_read():
    code = ("import sys, htc_core as htc\nts, _ = htc.load(sys.argv[1])\nb = 'pandas' in sys.modules\n"
            "ts.labels, ts.ids, ts.take([1, 0]), ts.labeled(), ts.trajectory(0), htc.concat([ts, ts.take([0])])\n"
            "a = 'pandas' in sys.modules\nm = ts.meta\nprint(b, a, 'pandas' in sys.modules, type(m).__name__)")
    p = subprocess.run([sys.executable, "-c", code, str(UNITS)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["False", "False", "True", "DataFrame"]


@pytest.fixture(scope="module")
def units():
    return htc.load(UNITS)[0]


def test_lazy_and_eager_sets_agree(units):
    assert not units.has_meta_frame
    lazy = htc.load(UNITS)[0]
    eager = dataclasses.replace(lazy, meta=MetaTable.from_frame(units.meta.copy()).to_frame())
    assert eager.has_meta_frame and not lazy.has_meta_frame
    idx = [7, 3, 3, 499]
    for a, b in ((lazy, eager), (lazy.take(idx), eager.take(idx)), (lazy.labeled(), eager.labeled()),
                 (concat([lazy, lazy.take([0])]), concat([eager, eager.take([0])])),
                 (prefixes(lazy, 2), prefixes(eager, 2)), (prefix_pairs(lazy, [1, 1], [1, 2]),
                                                           prefix_pairs(eager, [1, 1], [1, 2]))):
        np.testing.assert_array_equal(a.labels, b.labels)
        assert a.ids.tolist() == b.ids.tolist() and a.has_labels == b.has_labels
        for c in META_COLUMNS:
            np.testing.assert_array_equal(a.meta_column(c), b.meta_column(c))
        assert [a.trajectory(i) for i in range(min(3, len(a)))] == [b.trajectory(i) for i in range(min(3, len(b)))]
        assert [a.metadata_of(i) for i in range(len(a))] == [b.metadata_of(i) for i in range(len(b))]
        pd.testing.assert_frame_equal(a.meta, b.meta)
    # a set mixing both forms concatenates through pandas
    pd.testing.assert_frame_equal(concat([htc.load(UNITS)[0], eager]).meta, concat([eager, eager]).meta)


def test_changes_to_the_frame_are_the_metadata():
    ts = htc.load(UNITS)[0]
    ts.meta["success"] = pd.array([None] * len(ts), dtype="boolean")
    ts.meta.loc[0, "id"] = "renamed"
    ts.meta["extra"] = range(len(ts))              # a user's column survives take()
    assert np.isnan(ts.labels).all() and not ts.has_labels and len(ts.labeled()) == 0
    assert ts.ids[0] == "renamed" and ts.trajectory(0)["id"] == "renamed" and ts.trajectory(0)["success"] is None
    assert ts.take([2, 0]).meta["extra"].tolist() == [2, 0]
    ts.meta = MetaTable.empty(len(ts))
    assert not ts.has_meta_frame and ts.ids[0] is None


def test_meta_checks():
    ts = htc.load(UNITS)[0]
    with pytest.raises(ValueError, match="one row per trajectory"):
        TraceSet(logprob=ts.logprob, top_logprobs=ts.top_logprobs, step_offsets=ts.step_offsets,
                 traj_offsets=ts.traj_offsets, meta=MetaTable.empty(3))
    with pytest.raises(ValueError, match="DataFrame or a MetaTable"):
        ts.meta = {"id": []}
    with pytest.raises(ValueError, match="name must be one of"):
        ts.meta_column("nope")
    with pytest.raises(ValueError, match="misses"):
        MetaTable({"id": np.array([], dtype=object)})


def test_labels_join_keeps_the_form_and_the_extra_columns(tmp_path):
    lab = tmp_path / "labels.csv"
    lab.write_text("id,success,dataset,note\nunits-0001-SmolLM2-135M-greedy,false,relabeled,hello\n")
    lazy = htc.load(UNITS)[0]
    eager = htc.load(UNITS)[0]
    eager.meta["extra"] = 1
    a, _ = labels_mod.join(lazy, lab)
    b, _ = labels_mod.join(eager, lab)
    assert not a.has_meta_frame and b.has_meta_frame and b.meta["extra"].eq(1).all()
    pd.testing.assert_frame_equal(a.meta, b.meta.drop(columns="extra"))
    i = a.ids.tolist().index("units-0001-SmolLM2-135M-greedy")
    assert a.meta_column("dataset")[i] == "relabeled" and a.labels[i] == 0.0 and a.metadata_of(i)["note"] == "hello"


# ------------------------------------------------------------------ the CSV writer without pandas
def _both(tmp_path, columns: dict, booleans=("flag",)) -> tuple[bytes, bytes]:
    a, b = tmp_path / "columns.csv", tmp_path / "frame.csv"
    with TableWriter(a) as w:
        w.write_columns(columns, booleans=booleans)
        w.write_columns(columns, booleans=booleans)             # a second chunk: no second header
    frame = pd.DataFrame({k: (pd.arrays.BooleanArray(v == 1.0, np.isnan(v)) if k in booleans
                              else pd.Series(v, dtype=v.dtype)) for k, v in columns.items()})
    with TableWriter(b) as w:
        w.write(frame)
        w.write(frame)
    return a.read_bytes(), b.read_bytes()


def _text(values) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def test_write_columns_writes_the_bytes_of_the_frame_path(tmp_path):
    texts = ["plain", "", None, 'a "quote"', "comma, here", "new\nline", "cr\rhere", " lead", "tab\t", "ü ☃ 𝄞",
             "=1+1", "semi;colon"]
    n = len(texts)
    nums = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-7, 1.5e-5, 1e16, 123456.0, 5e-324, -1.7976931348623157e308,
                     0.1])
    cols = {"id": _text(texts), "flag": np.array([1.0, 0.0, np.nan] * 4), "x": nums,
            "none": _text([None] * n), "empty_flags": np.full(n, np.nan)}
    a, b = _both(tmp_path, cols, booleans=("flag", "empty_flags"))
    assert a == b
    assert a.splitlines()[0] == b"id,flag,x,none,empty_flags"
    # what cannot go to Arrow as text goes through the frame path, with the same result as before
    odd = {"id": _text([1, 2, None])}
    a, b = _both(tmp_path, odd, booleans=())
    assert a == b == b"id\n1\n2\n\n1\n2\n\n"
    import pyarrow as pa

    with pytest.raises(pa.ArrowInvalid):   # mixed types: refused by Arrow through the frame path, as before
        with TableWriter(tmp_path / "mixed.csv") as w:
            w.write_columns({"id": _text([1, "x", None])})


def test_write_columns_parquet_is_the_frame_path(tmp_path):
    cols = {"id": _text(["a", None]), "flag": np.array([1.0, np.nan]), "x": np.array([0.5, np.nan])}
    with TableWriter(tmp_path / "a.parquet") as w:
        w.write_columns(cols, booleans=("flag",))
    with TableWriter(tmp_path / "b.parquet") as w:
        w.write(pd.DataFrame({"id": pd.Series(cols["id"], dtype=object),
                              "flag": pd.array([True, None], dtype="boolean"), "x": cols["x"]}))
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=40),
       st.lists(st.one_of(st.none(), st.text(max_size=8)), min_size=1, max_size=40))
def test_write_columns_property(tmp_path_factory, floats, texts):
    n = min(len(floats), len(texts))
    texts = [t if t is None or not any(0xD800 <= ord(ch) <= 0xDFFF for ch in t) else "x" for t in texts[:n]]
    cols = {"t": _text(texts), "v": np.array(floats[:n]),
            "flag": np.array([math.nan if i % 3 == 2 else float(i % 2) for i in range(n)])}
    a, b = _both(tmp_path_factory.mktemp("w"), cols)
    assert a == b


def test_htc_features_csv_is_written_without_the_frame(tmp_path):
    # the CLI's columns (id, dataset, model, success, 48 features) through write_columns: the same file as
    # FeatureMatrix.to_frame(ts.meta) through write
    from htc_core.cli.data import feature_columns

    ts = htc.load(UNITS)[0]
    fm = htc.extract(ts)
    with TableWriter(tmp_path / "a.csv") as w:
        w.write_columns(feature_columns(ts, fm), booleans=("success",))
    with TableWriter(tmp_path / "b.csv") as w:
        w.write(fm.to_frame(ts.meta))
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert json.loads(json.dumps((tmp_path / "a.csv").read_text().splitlines()[0].split(",")[:4])) == \
        ["id", "dataset", "model", "success"]
