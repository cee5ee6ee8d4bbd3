"""The dashboard's experiment views (AppTest): transfer heatmaps on Compare, ablation on Feature weights, and
unlabeled runs scored by the shipped GAC."""

from __future__ import annotations

import numpy as np
import pytest

from htc_core.calibration.models import load_model
from htc_core.formats import load
from htc_core.formats.native import write

from apptest_kit import go, new_app, problems
from conftest import REPO



def _start(tmp_path, monkeypatch, runs_dir):
    at = new_app(monkeypatch, tmp_path / "data", runs_dir, timeout=240)
    at.run()
    assert not problems(at)
    return at


@pytest.fixture(scope="module")
def two_datasets(tmp_path_factory):
    """30 real greedy runs of arithmetic and 30 of units (sample_runs/)."""
    d = tmp_path_factory.mktemp("two")
    ts, _ = load([str(REPO / "sample_runs/arithmetic/arithmetic_SmolLM2-135M-greedy.jsonl"),
                  str(REPO / "sample_runs/units/units_SmolLM2-135M-greedy.jsonl")])
    g = ts.meta.dataset.astype(str).to_numpy()
    write(ts.take(np.concatenate([np.flatnonzero(g == "arithmetic")[:30], np.flatnonzero(g == "units")[:30]])),
          d / "two.jsonl")
    return d


def test_transfer_heatmaps_and_ablation(tmp_path, monkeypatch, two_datasets):
    at = _start(tmp_path, monkeypatch, two_datasets)
    go(at, "compare")
    n = len(at.get("plotly_chart"))
    at.radio(key="cmp_group").set_value("dataset").run()
    at.button(key="cmp_transfer_go").click().run()
    assert not problems(at)
    assert len(at.get("plotly_chart")) == n + 1                   # the source x target heatmaps
    assert "transfer" in set(at.dataframe[-1].value.kind) and "direct" in set(at.dataframe[-1].value.kind)
    go(at, "weights")
    before = len(at.get("plotly_chart"))
    at.button(key="w_ablation_go").click().run()
    assert not problems(at)
    assert len(at.get("plotly_chart")) == before + 1
    table = at.dataframe[-1].value
    assert len(table) == 15 and "Dynamics+Position+Stability+Structure" in set(table.families)


def test_unlabeled_upload_is_scored_by_the_shipped_gac(tmp_path, monkeypatch, two_datasets):
    d = tmp_path / "unlabeled"
    d.mkdir()
    ts, _ = load(two_datasets / "two.jsonl")
    meta = ts.meta.copy()
    meta["success"] = None
    import dataclasses

    unl = dataclasses.replace(ts, meta=meta)
    write(unl, d / "unlabeled.jsonl")
    at = _start(tmp_path, monkeypatch, d)
    notes = " ".join(i.value for i in at.info)
    assert "60 of 60 selected runs have no outcome label" in notes and "zero-shot" in notes
    said = notes + " ".join(w.value for w in at.warning)
    assert "on this selection:" in said and "expected ECE" in said and "training data" in said   # verdict + range
    shown = at.dataframe[1].value
    assert "GAC" in shown.columns
    # the dashboard scores each run on its own (as stored), the number htc score and the library give
    want = load_model("gac").predict_proba_traces(unl)[:, 1]
    got = shown.set_index("id").GAC.reindex(unl.ids).to_numpy()
    np.testing.assert_allclose(got, want, atol=1e-12)
    go(at, "inspector")
    assert not problems(at)
    assert any("GAC" in m.label and "(zero-shot)" in m.label for m in at.metric)   # "GAC confidence (zero-shot)"
    go(at, "calibration")
    assert not problems(at) and "labels file" in " ".join(i.value for i in at.info)
