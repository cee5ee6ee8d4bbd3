"""The dashboard's learning curves (AppTest): the Feature weights page computes them on a button click, draws
the lines with std bands and caches them for the selection."""

from __future__ import annotations

import numpy as np
import pytest

from htc_core.app.experiments import curve_sizes
from htc_core.formats import load
from htc_core.formats.native import write

from apptest_kit import new_app, problems
from conftest import REPO

pytestmark = pytest.mark.app


def test_curve_sizes_fit_the_outer_training_part():
    assert curve_sizes(2000) == (50, 100, 200, 400)
    assert curve_sizes(300) == (50, 100, 200)
    assert curve_sizes(40) == (32,)


def test_learning_curves_on_the_weights_page(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    ts, _ = load([str(REPO / "sample_runs/arithmetic/arithmetic_SmolLM2-135M-greedy.jsonl")])
    write(ts.take(np.arange(150)), d / "a.jsonl")
    at = new_app(monkeypatch, tmp_path / "data", d, timeout=300)
    at.run()
    at.switch_page("pages/weights.py")
    at.run()
    assert not problems(at)
    at.multiselect(key="w_lc_methods").set_value(["HTC-Full", "HTC-Reduced"]).run()
    before = len(at.get("plotly_chart"))
    at.button(key="w_lc_go").click().run()
    assert not problems(at)
    assert len(at.get("plotly_chart")) == before + 1
    table = at.dataframe[-1].value
    assert list(table.method) == ["HTC-Full"] * 2 + ["HTC-Reduced"] * 2 and list(table["size"][:2]) == [50, 100]
    at.run()                                                  # cached: drawn again without the button
    assert len(at.get("plotly_chart")) == before + 1 and not problems(at)
