"""Drill-down maths: the runs behind a bin are exactly the bin's count, on the project's own runs."""

from __future__ import annotations

import numpy as np
import pytest

from htc_core import explain
from htc_core.app import drill
from htc_core.viz import plots
from htc_core.calibration.metrics import reliability_curve
from htc_core.app.ingest import ingest
from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace

from conftest import REPO


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """40 of the project's own recorded runs in a fresh store, as the pages see them."""
    d = tmp_path_factory.mktemp("drill")
    part = d / "arithmetic-40.jsonl"
    shipped = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    part.write_text("".join(shipped.read_text(encoding="utf-8").splitlines(True)[:40]), encoding="utf-8")
    store = Store(d / "store")
    ingest(store, [part], name="sample")
    return build_workspace(store)


def test_bin_of_matches_the_curve_counts_including_edges():
    p = np.array([0.0, 0.1, 0.1000001, 0.2, 0.55, 1.0, np.nan])
    y = np.array([1, 0, 1, 1, 0, 1, 0], dtype=float)
    c = reliability_curve(y[:-1], p[:-1], n_bins=10)
    ids = c.bin_of(p)
    assert ids.tolist() == [0, 0, 1, 1, 5, 9, -1]      # (edge, edge] bins, the first closed; NaN in none
    assert np.bincount(ids[ids >= 0], minlength=10).tolist() == c.count.tolist()


def test_reliability_members_equal_counts_and_hold_the_right_runs():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400).astype(float)
    y[:7] = np.nan                                       # unlabeled: in no bin, as in the curve
    preds = {"a": rng.random(400), "b": rng.beta(2, 5, 400)}
    preds["b"][10] = np.nan
    curves = explain.reliability_curves(y, preds)
    members = explain.reliability_members(y, preds, curves)
    for name, c in curves.items():
        assert members[name].counts().tolist() == c.count.tolist()
        for b in range(10):
            pos = members[name].members(b)
            assert len(pos) == c.count[b]
            lo, hi = c.edges[b], c.edges[b + 1]
            assert np.all((preds[name][pos] > lo) | (b == 0)) and np.all(preds[name][pos] <= hi)
            if len(pos):
                assert y[pos].mean() == pytest.approx(c.accuracy[b])
    assert 10 not in np.concatenate([members["b"].members(b) for b in range(10)])
    assert not set(range(7)) & set(np.concatenate([members["a"].members(b) for b in range(10)]))


def test_binned_runs_split_by_outcome_and_validate():
    c = np.array([0.01, 0.5, 0.51, 0.99, np.nan, 0.5])
    y = np.array([1, 0, 1, np.nan, 1, 0])
    b = explain.binned_runs(c, y, n_bins=4, name="m")
    assert b.counts().tolist() == [1, 2, 1, 1]          # 0.5 closes (0.25, 0.5]; 0.51 opens the next
    assert b.members(1, "failure").tolist() == [1, 5] and b.members(2).tolist() == [2]
    assert b.members(3, "unlabeled").tolist() == [3]
    assert b.label(0) == "[0.00, 0.25]" and b.label(1) == "(0.25, 0.50]"
    assert b.to_frame()["n"].sum() == 5
    with pytest.raises(ValueError, match="b must be a bin index"):
        b.members(4)
    with pytest.raises(ValueError, match="outcome must be one of"):
        b.members(0, "win")
    with pytest.raises(ValueError, match="n_bins must be a positive integer"):
        explain.binned_runs(c, y, n_bins=0)
    with pytest.raises(ValueError, match="labels must have one entry per confidence"):
        explain.binned_runs(c, y[:3])


class _Event:          # the shape of Streamlit's plotly selection event (an attribute dict)
    def __init__(self, points):
        self.selection = type("S", (), {"points": points})()


def test_selected_runs_reads_the_figures_own_customdata():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300).astype(float)
    preds = {"HTC-Full": rng.random(300), "LastStep-TP": rng.random(300)}
    curves = explain.reliability_curves(y, preds)
    members = explain.reliability_members(y, preds, curves)
    fig = plots.reliability_figure(curves)
    rows = np.arange(300) + 1000                         # evaluation row -> workspace row
    marker = next(t for t in fig.data if t.name.startswith("LastStep-TP (ECE"))
    j = 3
    d = drill.selected_runs(_Event([{"customdata": list(marker.customdata[j])}]), members, rows)
    b = int(marker.customdata[j][-1])
    assert d.n == int(marker.customdata[j][0]) == curves["LastStep-TP"].count[b]
    assert d.source == "LastStep-TP" and sorted(d.positions - 1000) == sorted(members["LastStep-TP"].members(b))
    bar = next(t for t in fig.data if t.name == "HTC-Full count")
    d2 = drill.selected_runs(_Event([{"customdata": list(bar.customdata[7])}]), members, rows)
    assert d2.n == curves["HTC-Full"].count[7] and d2.source == "HTC-Full"
    # the perfect-calibration line, foreign names and out-of-range bins select nothing
    assert drill.selected_runs(_Event([{"x": 0.5}]), members, rows) is None
    assert drill.selected_runs(_Event([{"customdata": ["GAC", 2]}]), members, rows) is None
    assert drill.selected_runs(_Event([{"customdata": ["HTC-Full", 99]}]), members, rows) is None
    assert drill.selected_runs(None, members, rows) is None


def test_histogram_bars_list_their_outcome_and_bin():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 250).astype(float)
    c = rng.random(250)
    bins = explain.binned_runs(c, y, name="HTC-Reduced")
    fig = drill.histogram_figure(bins)
    fail = next(t for t in fig.data if t.name.startswith("failure"))
    assert sum(fail.y) == int((y == 0).sum())
    j = int(np.argmax(fail.y))
    d = drill.selected_runs(_Event([{"customdata": list(fail.customdata[j])}]), {"HTC-Reduced": bins},
                            np.arange(250), kind="outcome")
    assert d.n == fail.y[j] and np.all(y[d.positions] == 0) and d.title.startswith("failures with HTC-Reduced confidence in")


def test_selected_points_and_the_runs_table(ws):
    d = drill.selected_points(_Event([{"customdata": [5, "x"]}, {"customdata": [2, "y"]}, {"customdata": [5]},
                                      {"customdata": [10 ** 6]}, {"x": 1}]), len(ws))
    assert d.positions.tolist() == [5, 2] and d.title == "2 selected points"
    table = drill.runs_frame(ws, d.positions, np.linspace(0, 1, len(ws)), confidence_name="conf")
    assert list(table.columns) == ["id", "dataset", "model", "conf", "outcome", "flags", "steps", "question", "key"]
    assert table["id"].tolist() == [str(ws.ts.ids[5]), str(ws.ts.ids[2])]
    assert set(table["outcome"]) <= {"success", "failure", "unlabeled"}
    assert drill.selected_points(_Event([]), len(ws)) is None
