"""HTC-GAM on the dashboard (AppTest): the shape curves on Feature weights, its contributions in the inspector."""

from __future__ import annotations

import os

import numpy as np
import pytest

import htc_core.app.compute as compute
import htc_core.app.ui as ui
from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace
from htc_core import explain
from htc_core.calibration.gam import HTCGAM

from test_app import app, go, problems, sample_dir  # noqa: F401  (fixtures)


def test_feature_weights_draws_the_shape_curves_of_a_gam_fitted_on_the_selection(app):  # noqa: F811
    app.run()
    go(app, "weights")
    assert not problems(app), problems(app)
    charts = len(app.get("plotly_chart"))
    [button] = [b for b in app.button if b.label.startswith("Fit HTC-GAM on the ")]
    assert "51 labeled" in button.label or "50 labeled" in button.label
    button.click().run()
    assert not problems(app), problems(app)
    assert "HTC-GAM: one shape function per feature" in [s.value for s in app.subheader]
    choice = [c.value for c in app.caption if c.value.startswith("On this selection ")]
    assert len(choice) == 1 and "won the inner CV" in choice[0]
    assert len(app.get("plotly_chart")) == charts + 1
    importance = [d.value for d in app.dataframe if "importance" in d.value.columns]
    assert len(importance) == 1 and len(importance[0]) >= 1
    imp = importance[0]["importance"].to_numpy()
    assert np.all(np.diff(imp) <= 1e-12)                        # most important first
    app.radio(key="w_gam_order").set_value("range").run()
    assert not problems(app)
    ranged = [d.value for d in app.dataframe if "importance" in d.value.columns][0]
    assert np.allclose(ranged["importance"], ranged["range"])
    go(app, "weights")                                          # cached: shown again without the button
    assert not [b for b in app.button if b.label.startswith("Fit HTC-GAM")]
    assert len(app.get("plotly_chart")) == charts + 1


def test_inspector_explains_with_the_gam_shape_functions(app):  # noqa: F811
    app.run()
    go(app, "inspector")
    app.radio(key="insp_variant").set_value("gam").run()
    assert not problems(app), problems(app)
    assert any(m.label == "HTC-GAM confidence (in-sample)" for m in app.metric)   # no fold models for HTC-GAM
    assert any(c.value.startswith("HTC-GAM: each contribution is the feature's shape function") for c in app.caption)
    assert len(app.get("plotly_chart")) == 4                    # step confidence, timeline, waterfall, position
    # the waterfall's numbers are the shape functions' values at this run: the library's, on the same rows
    model = compute.cached_result(next(k for k in _keys() if "gam" in k and "cv" in k))
    assert isinstance(model, HTCGAM)
    ws = build_workspace(Store(os.environ["HTC_DATA_DIR"]))
    i = ws.position_of(app.session_state[ui.INSPECT])
    expl = explain.explain_trajectory(model, ws.features, i, labels=ws.labels, groups=ws.ts.meta["dataset"])
    assert expl.logit == pytest.approx(float(model.decision_function(ws.features.values[i:i + 1])[0]))
    conf = [m.value for m in app.metric if m.label == "HTC-GAM confidence (in-sample)"][0]
    assert conf == explain.format_confidence(expl.confidence)
    signals = [d.value for d in app.dataframe if "comparison" in d.value.columns and "kind" in d.value.columns][0]
    assert np.allclose(np.sort(signals["contribution"].to_numpy()), np.sort(expl.signals["contribution"].to_numpy()))
    if model.kind_ == "gam":                                     # contributions: f_j(x_ij) of each shape function
        per_feature = model.contributions(ws.features.values[i:i + 1])[0]
        assert expl.signals["contribution"].sum() == pytest.approx(per_feature.sum())
        assert expl.table["weight"].isna().all()                 # no weight: a shape function, not a line


def _keys():
    reg = compute.fit_registry()
    with reg["lock"]:
        return [k for k in reg["items"]]
