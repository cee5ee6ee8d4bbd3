"""The per-run columns kept in the store (features_store), the lazy stored trace set and the DuckDB views of the
Runs page, on the project's real sample runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import htc_core.app.features_store as features_store
import htc_core.features as features_pkg
from htc_core.app.features_store import write_columns
from htc_core.app.ingest import ingest
from htc_core.app.sql_views import RunsTable, reliability_bins
from htc_core.app.store import Store
from htc_core.app.stored_traces import StoredTraces
from htc_core.app.workspace import browse, build_workspace
from htc_core.calibration.baselines import baseline_confidences
from htc_core.calibration.models import DEFAULT_GAC, load_model
from htc_core.explain.flags import structural_flags
from htc_core.features import extract
from htc_core.formats import load
from htc_core.traces import concat

from conftest import REPO

SAMPLES = sorted((REPO / "sample_runs").glob("*/*.jsonl"))
FILES = [p for p in SAMPLES if p.parent.name in ("arithmetic", "facts")][:3]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Three real sample files ingested into a fresh store (features computed in chunks of 100 runs)."""
    assert len(FILES) == 3, "the sample runs are missing"
    s = Store(tmp_path_factory.mktemp("fstore"))
    sets = []
    for f in FILES:
        res, _ = ingest(s, [f], name=f.name)
        sets.append(load(f)[0])
        # recomputed with a small chunk: the chunked columns must equal the one-shot ones
        write_columns(s, res.run_set_id, sets[-1], chunk=100)
    return s, concat(sets)


def test_stored_columns_equal_freshly_computed_ones(stored):
    s, ts = stored
    cols = features_store.read_columns(s, s.run_set_ids())
    assert len(cols) == len(ts) == 750
    np.testing.assert_allclose(cols.features, extract(ts).values, rtol=0, atol=1e-12)
    base = baseline_confidences(ts)
    assert list(cols.baselines.columns) == list(base.columns)
    for c in base.columns:
        np.testing.assert_allclose(cols.baselines[c], base[c], rtol=0, atol=1e-12)
    model = load_model(DEFAULT_GAC)
    gac = model.score_traces(ts, set_level=False)      # stored run by run: a column must not depend on the chunk
    np.testing.assert_allclose(cols.gac, gac.confidence, rtol=0, atol=1e-12)
    # the shipped files hold no set-level step (docs/gac.md): scored "as a set", a selection is scored run by run
    assert model.rescore_as_set(ts, cols.gac) is None
    np.testing.assert_allclose(model.score_traces(ts, set_level=True).confidence, cols.gac, rtol=0, atol=1e-12)
    # with one (added by hand), per-run confidences rank a selection as a set (rescore_as_set) as scoring it does
    ranker = {"method": "stack-oof", "signal": "min_prob", "coef": [1.0, 0.5, 0.0], "fill": 0.3}
    model.transfer = {**ranker, "set_level": {"method": "rank-mean-platt", "coef": [0.85, -0.45], "min_runs": 50,
                                              "ranker": ranker}}
    np.testing.assert_allclose(model.rescore_as_set(ts, model.score_traces(ts).confidence),
                               model.score_traces(ts, set_level=True).confidence, rtol=0, atol=1e-12)
    assert list(cols.gac_kind) == list(gac.kind)
    fl = structural_flags(ts)
    pd.testing.assert_frame_equal(cols.flags.frame, fl.frame)
    assert cols.flags.available == fl.available
    assert np.array_equal(cols.steps, ts.steps_per_trajectory) and np.array_equal(cols.tokens, ts.tokens_per_trajectory)
    assert set(cols.to_dict()["digests"]) == set(s.run_set_ids())


def test_workspace_from_the_store_never_calls_the_feature_extractor(stored, monkeypatch):
    s, ts = stored
    calls = []

    def counting(*a, **k):
        calls.append(1)
        return extract(*a, **k)

    monkeypatch.setattr(features_store, "extract", counting)
    monkeypatch.setattr(features_pkg, "extract", counting)
    ws = build_workspace(s)
    assert calls == []
    assert isinstance(ws.ts, StoredTraces) and not ws.ts.loaded and ws.ts.source_loads == 0   # no token read
    np.testing.assert_allclose(ws.features.values, extract(ts).values, rtol=0, atol=1e-12)
    assert ws.flags.frame.shape == (750, 6) and len(ws.frame()) == 750
    assert ws.ts.source_loads == 0
    # a run set stored without columns (an older store) gets them computed once, then read
    res = s.add_run_set(load(FILES[0])[0], name="old")
    calls.clear()
    build_workspace(s)
    assert calls and features_store.has_columns(s, res.run_set_id, "paper", 5)   # the columns and the GAC
    calls.clear()
    build_workspace(s)
    assert calls == []
    s.delete_run_set(res.run_set_id)


def test_stored_traces_read_only_what_is_asked(stored):
    s, ts = stored
    ws = build_workspace(s)
    assert np.array_equal(ws.labels, ts.labels, equal_nan=True) and list(ws.ts.ids) == list(ts.ids)
    idx = np.array([700, 3, 260, 259, 3])
    got, want = ws.ts.take(idx), ts.take(idx)
    assert np.array_equal(got.logprob, want.logprob) and np.array_equal(got.step_offsets, want.step_offsets)
    assert list(got.ids) == list(want.ids) and ws.ts.source_loads == 0        # only the five rows were read
    assert ws.ts.source_row_reads == 3                                     # from each of the three run sets
    one, j = ws.trajectory(501)
    assert len(one) == 1 and j == 0 and one.ids[0] == ts.ids[501]
    sub = ws.select(datasets=[ws.values("dataset")[0]])
    assert isinstance(sub.ts, StoredTraces) and not sub.ts.loaded
    assert sub.content_digest() != ws.content_digest()
    assert build_workspace(s).content_digest() == ws.content_digest()       # same content, same key


def test_runs_table_filters_like_browse(stored):
    s, _ = stored
    ws = build_workspace(s)
    table, frame = RunsTable(ws), ws.frame()
    cases = [dict(), dict(label="success"), dict(label="unlabeled"), dict(label="failure", text="THE"),
             dict(confidence="GlobalTrace-TP", confidence_range=(0.2, 0.7)), dict(text="("),
             dict(datasets=[ws.values("dataset")[0]], flags=["no_final_answer"]), dict(models=[ws.values("model")[-1]])]
    for kw in cases:
        want = browse(frame, **kw)
        got = table.page(limit=10_000, **kw)
        assert got.total == len(want), kw
        assert list(got.rows["position"]) == list(want["position"]), kw
        assert list(got.rows["flags"]) == list(want["flags"]), kw
        assert np.array_equal(table.positions(**{k: v for k, v in kw.items()}), want["position"].to_numpy())
    page = table.page(sort="GlobalTrace-TP", descending=True, limit=7, offset=5)
    top = frame.sort_values(["GlobalTrace-TP", "position"], ascending=[False, True], kind="stable")
    assert list(page.rows["position"]) == list(top["position"].iloc[5:12]) and page.pages == 108
    values = np.linspace(0, 1, len(ws))
    p = table.page(confidence="mine", values=values, confidence_range=(0.5, 1.0), sort="mine", limit=3)
    assert p.total == int((values >= 0.5).sum()) and np.allclose(p.rows["mine"], values[values >= 0.5][:3])
    counts = table.counts()
    assert counts["runs"].sum() == len(ws)
    hist = table.histogram("GlobalTrace-TP", bins=10)
    assert hist["runs"].sum() == int(np.isfinite(ws.baselines["GlobalTrace-TP"]).sum())
    with pytest.raises(ValueError, match="label"):
        table.page(label="maybe")
    with pytest.raises(ValueError, match="sort"):
        table.page(sort="question; DROP TABLE runs")
    with pytest.raises(ValueError, match="limit"):
        table.page(limit=0)


def test_reliability_bins_match_the_ece_bins(stored):
    from htc_core.calibration.metrics import expected_calibration_error as ece

    s, ts = stored
    ws = build_workspace(s)
    p, y = ws.baselines["GlobalTrace-TP"].to_numpy(), ws.labels
    bins = reliability_bins(p, y, n_bins=10)
    m = np.isfinite(y) & np.isfinite(p)
    assert bins["runs"].sum() == m.sum()
    gap = (bins["runs"] * (bins["mean_confidence"] - bins["success_rate"]).abs()).sum() / m.sum()
    assert gap == pytest.approx(ece(y[m], p[m], n_bins=10), abs=1e-12)


def test_deleting_a_run_set_deletes_its_columns(tmp_path):
    s = Store(tmp_path)
    res, _ = ingest(s, [FILES[0]], name="one")
    assert features_store.has_columns(s, res.run_set_id, "paper", 5)
    s.delete_run_set(res.run_set_id)
    with s._connect() as con:
        left = [con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("run_columns", "run_column_sets")]
    assert left == [0, 0]
