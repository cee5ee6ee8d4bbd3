"""The persistent run store (htc_core.app.store, .columnar), uploads and samples (.ingest) and the workspace
(.workspace): exact round trips, atomic writes, duplicates, concurrency, caches, samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from htc_core.formats import load
from htc_core.app.ingest import ensure_samples, ingest
from htc_core.app.store import Store
from htc_core.app.workspace import browse, build_workspace
from htc_core.traces import TraceSet

from conftest import REPO, make_traj, write_jsonl


def synthetic_set(n: int = 4, prefix: str = "t") -> TraceSet:
    """A trace set that exercises every column: NaN-padded alternatives, None tokens, hostile text, NA labels."""
    rng = np.random.default_rng(0)
    steps_per = [1, 2, 3, 1][:n] + [2] * max(0, n - 4)
    n_steps = sum(steps_per)
    tok_per = rng.integers(1, 6, size=n_steps)
    n_tok = int(tok_per.sum())
    logprob = -rng.exponential(0.5, n_tok)
    top = np.sort(-rng.exponential(1.0, (n_tok, 3)), axis=1)[:, ::-1].copy()
    top[::4, 2] = np.nan
    words = np.array(["<script>alert(1)</script>", " the", "", None, "<img src=x onerror=alert(1)>", "é"], dtype=object)
    tokens = words[rng.integers(0, len(words), n_tok)]
    top_tokens = words[rng.integers(0, len(words), (n_tok, 3))]
    meta = pd.DataFrame({
        "id": pd.Series([f"{prefix}{i}" for i in range(n)], dtype=object),
        "dataset": pd.Series(["D1", None, "D2", "D1"][:n] + ["D1"] * max(0, n - 4), dtype=object),
        "model": pd.Series(["m"] * n, dtype=object),
        "framework": pd.Series([None] * n, dtype=object),
        "question": pd.Series(["q <b>bold</b>", "", None, "what?"][:n] + ["x"] * max(0, n - 4), dtype=object),
        "answer": pd.Series(["a"] * n, dtype=object),
        "gold": pd.Series([None] * n, dtype=object),
        "success": pd.Series([True, False, None, True][:n] + [False] * max(0, n - 4), dtype="boolean"),
        "verbalized_confidence": pd.Series([0.5, np.nan, 1.0, np.nan][:n] + [np.nan] * max(0, n - 4), dtype="float64"),
        "source": pd.Series(["f.jsonl"] * n, dtype=object),
        "metadata": pd.Series([json.dumps({"k": i}) for i in range(n)], dtype=object),
    })
    names = np.array([f"s{i}" if i % 2 else "" for i in range(n_steps)], dtype=object)
    texts = np.array([None if i % 3 == 0 else f"text {i} <b>" for i in range(n_steps)], dtype=object)
    return TraceSet(logprob=logprob, top_logprobs=top, step_offsets=np.concatenate([[0], np.cumsum(tok_per)]),
                    traj_offsets=np.concatenate([[0], np.cumsum(steps_per)]), meta=meta, step_name=names,
                    step_text=texts, tokens=tokens, top_tokens=top_tokens)


def assert_same(a: TraceSet, b: TraceSet) -> None:
    assert np.array_equal(a.logprob, b.logprob)
    assert a.top_logprobs.shape == b.top_logprobs.shape
    assert np.array_equal(a.top_logprobs, b.top_logprobs, equal_nan=True)
    assert np.array_equal(a.step_offsets, b.step_offsets)
    assert np.array_equal(a.traj_offsets, b.traj_offsets)
    assert list(a.step_name) == list(b.step_name)
    assert list(a.step_text) == list(b.step_text)
    assert (a.tokens is None) == (b.tokens is None)
    if a.tokens is not None:
        assert list(a.tokens) == list(b.tokens)
    assert (a.top_tokens is None) == (b.top_tokens is None)
    if a.top_tokens is not None:
        assert a.top_tokens.tolist() == b.top_tokens.tolist()
    pd.testing.assert_frame_equal(a.meta, b.meta)


def test_round_trip_exact_synthetic(tmp_path):
    ts = synthetic_set()
    s = Store(tmp_path)
    res = s.add_run_set(ts, name="syn")
    assert res.kept == 4 and res.duplicates == []
    assert_same(ts, s.load_run_set(res.run_set_id))
    # a restart (new Store object on the same folder) loses nothing
    assert_same(ts, Store(tmp_path).load_run_set(res.run_set_id))


def test_round_trip_exact_real_data(tmp_path, uala_run_a):
    ts, _ = load(uala_run_a)
    s = Store(tmp_path)
    res = s.add_run_set(ts, name="uala")
    assert_same(ts, s.load_run_set(res.run_set_id))


def test_round_trip_without_alternatives_or_tokens(tmp_path):
    ts = synthetic_set()
    bare = TraceSet(logprob=ts.logprob, top_logprobs=np.zeros((ts.n_tokens, 0)), step_offsets=ts.step_offsets,
                    traj_offsets=ts.traj_offsets, meta=ts.meta)
    s = Store(tmp_path)
    assert_same(bare, s.load_run_set(s.add_run_set(bare, name="bare").run_set_id))


def test_list_and_delete(tmp_path):
    s = Store(tmp_path)
    a = s.add_run_set(synthetic_set(4, "a"), name="A", fields={"dataset": "D1"})
    b = s.add_run_set(synthetic_set(4, "b"), name="B")
    df = s.list_run_sets()
    assert list(df["name"]) == ["A", "B"]
    row = df.set_index("name").loc["A"]
    assert row["trajectories"] == 4 and row["labeled"] == 3
    assert row["success_rate"] == pytest.approx(2 / 3)
    assert row["datasets"] == "D1, D2"
    s.put_features(a.run_set_id, "paper", 5, np.ones((4, 48)), [f"x{i}" for i in range(48)])
    assert s.delete_run_set(a.run_set_id) is True
    assert s.delete_run_set(a.run_set_id) is False
    assert s.run_set_ids() == [b.run_set_id]
    assert s.get_features(a.run_set_id, "paper", 5) is None
    assert len(s.trajectories()) == 4
    with pytest.raises(KeyError):
        s.load_run_set(a.run_set_id)
    with pytest.raises(KeyError):
        s.load_run_set("x'; DROP TABLE run_sets; --")


def test_duplicate_ids_in_one_run_set_are_reported(tmp_path):
    ts = synthetic_set(4)
    ts.meta.loc[3, "id"] = "t0"
    from htc_core.report import LoadReport

    rep = LoadReport()
    s = Store(tmp_path)
    res = s.add_run_set(ts, name="dups", report=rep)
    assert res.duplicates == ["t0"] and res.kept == 3
    assert any("duplicate trajectory id" in p.reason and p.trajectory_id == "t0" for p in rep.warnings)
    back = s.load_run_set(res.run_set_id)
    assert list(back.ids) == ["t0", "t1", "t2"]
    assert_same(ts.take([0, 1, 2]), back)


def _snapshot(s: Store) -> tuple:
    with s._connect() as con:
        tables = sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
        n_traj = con.execute("SELECT count(*) FROM trajectories").fetchall()[0][0]
        n_sets = con.execute("SELECT count(*) FROM run_sets").fetchall()[0][0]
    return tables, n_traj, n_sets, s.revision()


@pytest.mark.parametrize("where", ["after_trajectories", "after_steps", "before_commit"])
def test_failure_mid_upload_leaves_the_store_as_before(tmp_path, where):
    s = Store(tmp_path)
    first = s.add_run_set(synthetic_set(4, "a"), name="A")
    before = _snapshot(s)

    def boom(stage):
        if stage == where:
            raise RuntimeError("disk full (injected)")

    s._fail_hook = boom
    with pytest.raises(RuntimeError, match="injected"):
        s.add_run_set(synthetic_set(4, "b"), name="B")
    assert _snapshot(s) == before
    s._fail_hook = None
    assert_same(synthetic_set(4, "a"), s.load_run_set(first.run_set_id))
    # the store still takes writes afterwards
    assert s.add_run_set(synthetic_set(4, "c"), name="C").kept == 4


def test_process_killed_mid_upload_leaves_the_store_as_before(tmp_path):
    s = Store(tmp_path)
    s.add_run_set(synthetic_set(4, "a"), name="A")
    before = _snapshot(s)
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r}); sys.path.insert(0, {str(REPO / 'tests')!r})
        from htc_core.app.store import Store
        from test_store import synthetic_set
        s = Store({str(tmp_path)!r})
        s._fail_hook = lambda stage: os._exit(3) if stage == "before_commit" else None
        s.add_run_set(synthetic_set(4, "b"), name="B")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    s2 = Store(tmp_path)
    assert _snapshot(s2) == before
    assert [r for r in s2.list_run_sets()["name"]] == ["A"]


def test_two_threads_upload_at_once_both_keep_their_data(tmp_path):
    s1, s2 = Store(tmp_path), Store(tmp_path)
    errors = []
    barrier = threading.Barrier(2)

    def up(store, prefix):
        try:
            barrier.wait()
            for j in range(3):
                store.add_run_set(synthetic_set(4, f"{prefix}{j}-"), name=f"{prefix}{j}")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    th = [threading.Thread(target=up, args=(s1, "x")), threading.Thread(target=up, args=(s2, "y"))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    assert not errors
    names = sorted(Store(tmp_path).list_run_sets()["name"])
    assert names == ["x0", "x1", "x2", "y0", "y1", "y2"]
    assert len(Store(tmp_path).trajectories()) == 24


def test_two_processes_upload_at_once_both_keep_their_data(tmp_path):
    Store(tmp_path)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r}); sys.path.insert(0, {str(REPO / 'tests')!r})
        from htc_core.app.store import Store
        from test_store import synthetic_set
        s = Store({str(tmp_path)!r})
        for j in range(3):
            s.add_run_set(synthetic_set(4, sys.argv[1] + str(j)), name=sys.argv[1] + str(j))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, p], stderr=subprocess.PIPE, text=True) for p in ("p", "q")]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    s = Store(tmp_path)
    assert sorted(s.list_run_sets()["name"]) == ["p0", "p1", "p2", "q0", "q1", "q2"]
    for rs in s.run_set_ids():
        assert s.load_run_set(rs).n_trajectories == 4


def test_features_models_settings_revision(tmp_path):
    s = Store(tmp_path)
    r0 = s.revision()
    res = s.add_run_set(synthetic_set(), name="A")
    r1 = s.revision()
    assert r1 != r0
    X = np.random.default_rng(1).normal(size=(4, 48))
    s.put_features(res.run_set_id, "paper", 5, X, [f"x{i}" for i in range(48)])
    assert s.revision() == r1           # derived data does not invalidate the pages' caches
    back, names = s.get_features(res.run_set_id, "paper", 5)
    assert np.array_equal(back, X) and names[0] == "x0"
    assert s.get_features(res.run_set_id, "deepconf", 5) is None
    mid = s.save_model({"format": "htc-calibrator", "variant": "full", "coef": [0.1]}, name="m")
    assert s.load_model(mid)["coef"] == [0.1]
    assert list(s.list_models()["name"]) == ["m"]
    assert s.delete_model(mid) and s.list_models().empty
    s.set_setting("k", "v")
    assert Store(tmp_path).get_setting("k") == "v"


def test_ensure_samples(tmp_path, uala_run_a):
    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "run.jsonl").write_text("".join(uala_run_a.read_text().splitlines(True)[:30]))
    (samples / "_private.jsonl").write_text("not json\n")
    (samples / "family").mkdir()
    (samples / "family" / "more.jsonl").write_text("".join(uala_run_a.read_text().splitlines(True)[30:40]))
    (samples / "_raw").mkdir()
    (samples / "_raw" / "raw.jsonl").write_text("not json\n")
    (samples / "notes.sh").write_text("echo\n")
    s = Store(tmp_path / "data")
    status, results = ensure_samples(s, samples)
    assert status == "loaded" and [r.kept for r in results] == [10, 30]
    assert sorted(s.list_run_sets()["name"]) == ["sample: more.jsonl", "sample: run.jsonl"]
    assert ensure_samples(s, samples)[0] == "present"
    # deleting everything does not bring the samples back on the next start
    for r in results:
        s.delete_run_set(r.run_set_id)
    assert ensure_samples(s, samples)[0] == "present"
    assert ensure_samples(Store(tmp_path / "empty"), tmp_path / "nowhere")[0] == "missing"


def test_ingest_workspace_and_browse(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [
        make_traj(f"g{i}", [([-0.1 * (i + 1), -0.2], None)], success=bool(i % 2), question=f"question {i} about Paris")
        for i in range(6)] + ["{not json"])
    s = Store(tmp_path / "store")
    res, report = ingest(s, [good], name="up", fields={"dataset": "Geo", "model": "", "framework": "F"})
    assert res.kept == 6 and report.rejected == 1
    assert report.errors[0].line == 7
    from htc_core.app.features_store import has_columns, read_columns

    assert has_columns(s, res.run_set_id, "paper", 5) and read_columns(s, [res.run_set_id]).features.shape == (6, 48)
    ws = build_workspace(s)
    assert len(ws) == 6 and ws.values("dataset") == ["Geo"] and ws.values("framework") == ["F"]
    assert ws.features.values.shape == (6, 48)
    assert {"GlobalTrace-TP", "LastStep-TP"} <= set(ws.baselines.columns)
    key = ws.keys[2]
    assert ws.position_of(key) == 2 and key.endswith(":g2")
    f = ws.frame()
    assert f["gold"].iloc[0] is None and f["question"].iloc[0] == "question 0 about Paris"   # no NaN for text
    assert len(browse(f, label="success")) == 3
    assert len(browse(f, text="QUESTION 4")) == 1
    assert len(browse(f, text="(")) == 0            # taken literally, not as a pattern
    lo = browse(f, confidence="GlobalTrace-TP", confidence_range=(0.0, 0.8))
    assert (lo["GlobalTrace-TP"] <= 0.8).all() and len(lo) < 6
    with pytest.raises(ValueError, match="label"):
        browse(f, label="maybe")
    sub = ws.select(datasets=["Geo"])
    assert len(sub) == 6 and len(ws.select(datasets=["Other"])) == 0
