"""Plotly builders (htc_core.viz.plots): they draw the result objects as given, and escape trace text."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from htc_core import explain
from htc_core.app import views
from htc_core.viz import inspector_plots, plots
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.features import FEATURE_NAMES, feature_label
from htc_core.calibration.metrics import reliability_curve

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_reliability_figure_draws_the_curve_as_given():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p).astype(float)
    c = reliability_curve(y, p)
    fig = plots.reliability_figure({"HTC-Reduced": c, EVIL: c})
    line = [t for t in fig.data if t.type == "scatter" and t.name.startswith("HTC-Reduced")][0]
    nz = c.count > 0
    assert np.allclose(line.x, c.mean_confidence[nz]) and np.allclose(line.y, c.accuracy[nz])
    assert np.allclose(np.asarray(line.y) + np.asarray(line.error_y.array), c.upper[nz])
    bars = [t for t in fig.data if t.type == "bar"]
    assert np.array_equal(bars[0].y, c.count)
    assert f"ECE {c.ece:.3f}" in line.name
    evil = [t for t in fig.data if t.type == "scatter" and "script" in (t.name or "")]
    assert evil and all(t.name.startswith("&lt;script&gt;") for t in evil)
    assert all("<script" not in (t.hovertemplate or "") and "<script" not in (t.name or "") for t in fig.data)


def test_histogram_facets_and_metric_bars():
    c = reliability_curve(np.r_[np.ones(10), np.zeros(10)], np.linspace(0.05, 0.95, 20))
    fig = plots.reliability_facets({"model A": {"HTC": c}, "model B": {"HTC": c, "Base": c}})
    assert len([t for t in fig.data if t.name in ("HTC", "Base")]) == 3
    h = plots.confidence_histogram([0.1, 0.9, 0.5], [1, 0, np.nan])
    assert [t.name for t in h.data] == ["success (1)", "failure (1)", "unlabeled (1)"]
    gm = pd.DataFrame({"group": ["a", "b"], "method": ["m", "m"], "n": [5, 6], "ece": [0.1, 0.2], "brier": [0.2, 0.2],
                       "auroc": [0.7, np.nan]})
    assert len(plots.group_metric_bars(gm).data) == 3
    ml = pd.DataFrame({"method": ["a", "a"], "metric": ["ECE", "AUROC"], "mean": [0.1, 0.8], "std": [0.01, 0.02]})
    assert len(plots.metric_bars(ml).data) == 2


def test_weight_figures_colour_by_family_and_show_formulas():
    X = np.random.default_rng(0).normal(size=(60, 48))
    y = (X[:, 31] > 0).astype(float)
    model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(X, y)
    wf = views.weights_frame({"HTC-Full": model})
    fig = plots.weights_bar(wf)
    assert {t.name for t in fig.data} == {"Dynamics", "Position", "Stability", "Structure"}
    pos = [t for t in fig.data if t.name == "Position"][0]
    assert pos.marker.color == plots.FAMILY_COLORS["Position"]
    assert "x_S" in [row[1] for row in pos.customdata]
    assert "formula" in pos.hovertemplate
    assert sum(len(t.y) for t in fig.data) == 48
    sel = pd.DataFrame({"method": "HTC-Reduced", "feature": list(FEATURE_NAMES), "code": [f"F{i}" for i in range(48)],
                        "family": wf["family"], "times": np.arange(48) % 16, "fits": 15,
                        "frequency": (np.arange(48) % 16) / 15})
    assert sum(len(t.y) for t in plots.selection_bar(sel).data) == 48
    heat = plots.weights_heatmap(pd.DataFrame(np.ones((2, 48)), index=["D1", EVIL], columns=list(FEATURE_NAMES)))
    assert heat.data[0].z.shape == (2, 48) and "&lt;script&gt;" in heat.data[0].y[1]


def test_projection_scatter_escapes_hover_text_and_keeps_positions():
    frame = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [0.0, 1.0, 0.5], "position": [0, 1, 2], "id": ["a", "b", EVIL],
                          "question": [EVIL, "fine", None], "dataset": ["D", "D", "E"], "model": ["m"] * 3,
                          "success": [1.0, 0.0, np.nan], "htc_confidence": [0.2, 0.8, np.nan],
                          "baseline_confidence": [0.5, 0.5, 0.5]})
    for color in ("dataset", "success", "htc_confidence"):
        fig = plots.projection_scatter(frame, color=color)
        cds = np.concatenate([np.asarray(t.customdata) for t in fig.data])
        assert sorted(int(v) for v in cds[:, 0]) == [0, 1, 2]
        text = json.dumps([list(map(str, r)) for r in cds])
        assert "<script>" not in text and "<img" not in text and "&lt;script&gt;" in text


def test_inspector_figures():
    X = np.random.default_rng(1).normal(size=(40, 48))
    y = (X[:, 0] > 0).astype(float)
    model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(X, y)
    e = explain.explain_trajectory(model, X, 3, labels=y)
    fig = inspector_plots.waterfall(e, top=5)
    wf = fig.data[0]
    assert list(wf.measure) == ["absolute"] + ["relative"] * 6 + ["total"]
    assert wf.x[0] == pytest.approx(e.intercept) and wf.x[-1] == pytest.approx(e.logit)
    assert sum(wf.x[:-1]) == pytest.approx(e.logit)
    tl = pd.DataFrame({"step": [1, 2], "name": [EVIL, "b"], "tokens": [3, 4], "mean_confidence": [0.5, 0.6],
                       "top1_confidence": [0.5, 0.7], "topk_confidence": [0.4, 0.5], "entropy": [1.0, 1.1],
                       "concentration": [1.2, 1.3], "spread": [0.1, 0.2], "skewness": [0.0, 0.1]})
    f2 = plots.step_timeline_figure(tl)
    assert len(f2.data) == 7 and "&lt;script&gt;" in f2.data[0].customdata[0]
    f3 = plots.position_figure([0.1, 0.5, 0.9], [0, 1, 1], 0.5, label=EVIL)
    assert f3.layout.annotations[0].text.startswith("&lt;script&gt;")
    fv = pd.DataFrame({"group": ["a", "a", "b"], "success": [1.0, 0.0, 1.0], "value": [1.0, 2.0, 3.0]})
    assert len(plots.feature_distribution(fv, feature_label="f").data) == 2


def test_token_html_escapes_everything():
    out = plots.token_html(["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "&amp;", "", "\n"],
                           [0.1, 0.5, 0.9, 1.0, np.nan])
    assert "<script" not in out and "<img" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out and "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "&amp;amp;" in out
    assert out.count("<span") == 5 and 'title="p = 0.100"' in out
    assert plots.esc(None) == "" and plots.esc("a" * 10, 5) == "aaaa…"


def test_chart_fixes_bar_order_codes_top1_and_token_axis():
    """Weights by size, F-codes on the heatmap, top-1 drawn above the mean line, whole token ticks from 0,
    legends above the histogram (not over its first bars)."""
    from htc_core.features import REGISTRY

    X = np.random.default_rng(1).normal(size=(80, 48))
    y = (X[:, 31] + 0.5 * X[:, 3] > 0).astype(float)
    model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(X, y)
    wf = views.weights_frame({"HTC-Full": model})
    fig = plots.weights_bar(wf)
    order = list(fig.layout.xaxis.categoryarray)
    w = wf.set_index(wf["feature"].map(feature_label))["weight"].abs()
    assert len(order) == 48 and list(w[order]) == sorted(w, reverse=True)
    assert fig.layout.xaxis.automargin is True
    heat = plots.weights_heatmap(pd.DataFrame(np.ones((1, 48)), index=["D1"], columns=list(FEATURE_NAMES)))
    assert list(heat.data[0].x) == [f"{REGISTRY[n].code} {REGISTRY[n].display_name}" for n in FEATURE_NAMES]
    tl = pd.DataFrame({"step": [1, 2, 3], "name": ["a", "b", "c"], "tokens": [1, 9, 16],
                       "mean_confidence": [0.5, 0.6, 0.7], "top1_confidence": [0.5, 0.6, 0.7],
                       "topk_confidence": [0.4, 0.5, 0.6], "entropy": [1.0, 1.1, 1.2], "concentration": [1.2, 1.3, 1.4],
                       "spread": [0.1, 0.2, 0.3], "skewness": [0.0, 0.1, 0.2]})
    f = plots.step_timeline_figure(tl)
    names = [t.name for t in f.data]
    assert names.index("top-1 confidence") > names.index("mean token probability")
    assert f.data[names.index("top-1 confidence")].line.dash == "dash"
    token_axis = [ax for k, ax in f.layout.to_plotly_json().items() if k.startswith("yaxis")
                  and ax.get("title", {}).get("text") == "tokens"][0]
    assert token_axis["tick0"] == 0 and token_axis["tickformat"] == ",d" and token_axis["rangemode"] == "tozero"
    hist = plots.confidence_histogram([0.05, 0.1, 0.9], [0, 0, 1])
    assert hist.layout.legend.y >= 1.0                   # above the plot area


def test_compare_llms_draws_its_groups_in_one_order_and_the_metric_names_once():
    """docs/ui-review.md 17: the box plot ordered the groups by first appearance among successes (SmolLM2 first),
    the reliability and metric charts by name (Gemma first); the metric panels' rotated names ran into the next
    panel. Now all three use group_order, and the metric panels are stacked on one shared x axis."""
    rng = np.random.default_rng(1)
    groups = np.array(["SmolLM2-135M", "Gemma3-270M", "qwen2.5-0.5B"])[rng.integers(0, 3, size=300)]
    groups[:5] = "SmolLM2-135M"                              # the first rows: what first-appearance order would pick
    y = (rng.uniform(size=300) < 0.5).astype(float)
    y[:5] = 1.0
    p = rng.uniform(size=300)
    want = ["Gemma3-270M", "qwen2.5-0.5B", "SmolLM2-135M"]
    assert plots.group_order(groups) == want
    facets = plots.reliability_facets(views.group_reliability(
        type("R", (), {"labels": y, "oof": {"HTC": p}})(), groups, ["HTC"]))
    assert [a.text for a in facets.layout.annotations] == want
    gm = explain.group_metrics(y, {"HTC": p, "Base": 1 - p}, groups, n_boot=0)
    bars = plots.group_metric_bars(gm.sample(frac=1.0, random_state=0))
    assert list(bars.layout.xaxis3.categoryarray) == want and bars.layout.xaxis3.categoryorder == "array"
    assert bars.layout.xaxis.matches == "x3" and bars.layout.xaxis.showticklabels is False   # names once, below
    lay = bars.layout
    assert lay.yaxis.domain[0] > lay.yaxis2.domain[1] and lay.yaxis2.domain[0] > lay.yaxis3.domain[1]   # stacked
    box = plots.feature_distribution(pd.DataFrame({"group": groups, "success": y, "value": p}), feature_label="f")
    assert list(box.layout.xaxis.categoryarray) == want


@pytest.mark.parametrize("value,side", [(0.9, "right"), (0.1, "left"), (0.5, "left")])
def test_the_inspector_marker_label_sits_inside_the_plot_clear_of_the_legend(value, side):
    """docs/ui-review.md 18: "this trajectory" stood on the plot's top edge (y 1, anchored at its bottom), where
    the horizontal legend also is (y 1.02): now inside the plot under its top edge, beside the line."""
    fig = plots.position_figure([0.1, 0.5, 0.9, 0.7], [0, 1, 1, np.nan], value)
    a = fig.layout.annotations[0]
    assert a.text == "this trajectory" and a.yanchor == "top" and a.y < 1 and a.xanchor == side
    assert fig.layout.legend.y >= 1.0 and fig.layout.legend.yanchor == "bottom"


def _inside(fig, axis_x: str, axis_y: str, trace, plot_px: float) -> None:
    """Every point of ``trace`` and its whisker lie inside the axes' ranges when the plot is ``plot_px`` wide and
    high: the marker's radius and the whisker cap's half-width (plotly draws the cap ``width`` px each side)."""
    xr, yr = fig.layout[axis_x].range, fig.layout[axis_y].range
    marker = (trace.marker.size or 6) / 2
    cap = max(trace.error_y.width if trace.error_y.width is not None else 4, marker)
    x, y = np.asarray(trace.x, float), np.asarray(trace.y, float)
    top, bottom = y + np.asarray(trace.error_y.array, float), y - np.asarray(trace.error_y.arrayminus, float)
    dx, dy = (cap + 1) * (xr[1] - xr[0]) / plot_px, (marker + 1) * (yr[1] - yr[0]) / plot_px
    assert xr[0] <= x.min() - dx and x.max() + dx <= xr[1], (xr, x.min(), x.max())
    assert yr[0] <= bottom.min() - dy and top.max() + dy <= yr[1], (yr, bottom.min(), top.max())


def test_reliability_whiskers_at_0_and_1_are_drawn_whole():
    """docs/ui-review.md 36: a whisker at confidence 1 was drawn half outside the plot's right edge (x range [0, 1]
    exactly). Points at confidence 0 and 1 with success rates 0 and 1 stay inside, at the narrowest plot the pages
    draw (a facet of four beside each other at 900 px, about 150 px wide)."""
    from htc_core.explain.groups import group_curves, reliability_curves

    p = np.r_[np.zeros(40), np.ones(40), np.full(40, 0.5)]
    y = np.r_[np.zeros(40), np.ones(40), np.tile([0.0, 1.0], 20)]
    curves = reliability_curves(y, {"HTC-Full": p}, n_bins=10)
    fig = plots.reliability_figure(curves)
    line = next(t for t in fig.data if t.error_y.array is not None)
    assert min(line.x) == 0.0 and max(line.x) == 1.0 and min(line.y) == 0.0 and max(line.y) == 1.0
    _inside(fig, "xaxis", "yaxis", line, plot_px=400)
    assert fig.layout.xaxis2.range == fig.layout.xaxis.range            # the count bars line up with the points
    by_group = group_curves(y, p, np.where(np.arange(120) % 2 == 0, "facts", "lists"), n_bins=10)
    facets = plots.reliability_facets({g: {"HTC-Full": c} for g, c in by_group.items()})
    for k, t in enumerate(t for t in facets.data if t.error_y.array is not None):
        _inside(facets, f"xaxis{'' if k == 0 else k + 1}", "yaxis", t, plot_px=150)
