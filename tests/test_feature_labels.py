"""One name per feature on every page and figure (docs/ui-review.md finding 33).

Feature weights wrote "F33 attention_entropy_mean" where Compare run sets wrote "F13 Token gradient, min": every
page, table and figure now names a feature by :func:`htc_core.features.feature_label` (code and the registry's
short name), and the figures that showed the snake-case name keep it on hover."""

from __future__ import annotations

import numpy as np
import pandas as pd

from htc_core import explain
from htc_core.app import ab_views, explain_views, views
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.comparison import compare_run_sets
from htc_core.features import FEATURE_NAMES, REGISTRY, feature_label
from htc_core.viz import ab_plots, inspector_plots, plots


def _data(seed: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 48))
    y = (X[:, 31] - 0.7 * X[:, 13] + 0.4 * rng.normal(size=120) > 0).astype(float)
    return X, y


def test_the_label_is_the_registry_code_and_short_name_and_unique():
    labels = [feature_label(n) for n in FEATURE_NAMES]
    assert labels == [f"F{i} {REGISTRY[n].display_name}" for i, n in enumerate(FEATURE_NAMES)]
    assert len(set(labels)) == 48
    assert feature_label("token_gradient_min") == "F13 Token gradient, min"
    assert feature_label("my_own_column") == "my_own_column"


def test_feature_weights_figures_use_the_label_with_the_snake_name_on_hover():
    X, y = _data()
    model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(X, y)
    wf = views.weights_frame({"HTC-Full": model})
    fig = plots.weights_bar(wf)
    shown = {x for t in fig.data for x in t.x}
    assert shown == {feature_label(n) for n in FEATURE_NAMES}
    for t in fig.data:                         # the snake-case name of each bar is in its hover data
        for x, cd in zip(t.x, t.customdata):
            assert feature_label(cd[0]) == x and "%{customdata[0]}" in t.hovertemplate
    heat = plots.weights_heatmap(pd.DataFrame(np.ones((2, 48)), index=["a", "b"], columns=list(FEATURE_NAMES)))
    assert list(heat.data[0].x) == [feature_label(n) for n in FEATURE_NAMES]
    assert list(heat.data[0].customdata[1]) == list(FEATURE_NAMES) and "%{customdata}" in heat.data[0].hovertemplate
    freq = pd.DataFrame({"method": "m", "feature": list(FEATURE_NAMES[:3]), "code": ["F0", "F1", "F2"],
                         "family": [REGISTRY[n].family for n in FEATURE_NAMES[:3]], "times": [3, 2, 1],
                         "fits": 3, "frequency": [1.0, 0.67, 0.33]})
    sel = plots.selection_bar(freq)
    assert list(sel.layout.xaxis.categoryarray) == [feature_label(n) for n in FEATURE_NAMES[:3]]
    assert {cd[2] for t in sel.data for cd in t.customdata} == set(FEATURE_NAMES[:3])


def test_compare_pages_and_the_inspector_use_the_same_label():
    X, y = _data()
    rng = np.random.default_rng(0)
    Xb = X + np.where(np.arange(48) == 13, 1.0, 0.0)
    p = np.clip(rng.uniform(size=120), 0.01, 0.99)
    cmp = compare_run_sets(y, p, y, p, X_a=X, X_b=Xb, n_boot=50)
    table = ab_views.shift_table(cmp, k=48)
    assert set(table["feature"]) <= {feature_label(n) for n in FEATURE_NAMES}
    assert table["feature"].iloc[0] == "F13 Token gradient, min"
    fig = ab_plots.shift_figure(cmp, k=3)
    assert fig.data[0].y[-1] == "F13 Token gradient, min"
    model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(X, y)
    why = explain.explain_trajectory(model, X, 0, labels=y)
    frame = explain_views.signal_frame(why)
    assert list(frame["lead feature"]) == [feature_label(s) for s in why.signals["signal"]]
    for (_, sig), related in zip(why.signals.iterrows(), frame["related features"]):
        names = [r for r in related.split("; ") if r]          # labels hold commas ("Token gradient, min")
        assert len(names) == sig["n_members"] - 1
        assert all(r in {feature_label(n) for n in FEATURE_NAMES} for r in names)
    water = inspector_plots.waterfall(why, top=3)
    heads = [feature_label(s) for s in why.signals[why.signals["contribution"] != 0]["signal"].head(3)]
    assert all(any(y.startswith(h) for y in water.data[0].y) for h in heads)
