"""HTC-GAM's shape curves and its explanations, on the project's own recorded runs."""

from __future__ import annotations

import numpy as np
import pytest

from htc_core import explain
from htc_core.viz import gam_plots
from htc_core.calibration.gam import HTCGAM
from htc_core.features import extract
from htc_core.formats import native

from conftest import REPO


@pytest.fixture(scope="module")
def data():
    ts, _ = native.read([REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"])
    ts = ts.take(np.arange(150))
    X = extract(ts)
    y = np.asarray(ts.labels, dtype=float)
    model = HTCGAM(select="gam", alphas=(16.0,), n_knots=5).fit(X, y, meta=ts.meta)
    return ts, X, y, model


def test_shape_curves_are_the_models_functions_ordered_by_importance(data):
    ts, X, y, model = data
    sc = explain.shape_curves(model, X)
    assert sc.kind == "gam" and sc.n_rows == 150 and len(sc) >= 1
    imp = [c.importance for c in sc.curves]
    assert imp == sorted(imp, reverse=True)
    by_name = {s.name: s for s in model.shapes_}
    contrib = model.contributions(X)
    names = list(model.feature_names_in_)
    for c in sc.curves:
        assert np.allclose(c.y, by_name[c.feature].value(c.x))               # the curve is the shape function
        assert c.mean_abs == pytest.approx(np.mean(np.abs(contrib[:, names.index(c.feature)])))
        assert c.counts.sum() == 150 and len(c.bin_edges) == len(c.counts) + 1   # every row under the curve
        assert c.range == pytest.approx(c.y.max() - c.y.min())
    # copies (de-duplicated) and zero shapes have no curve
    assert {c.feature for c in sc.curves} <= {s.name for s in model.shapes_ if np.any(s.coef != 0)}
    ranged = explain.shape_curves(model, X, order_by="range")
    assert [c.importance for c in ranged.curves] == sorted((c.range for c in ranged.curves), reverse=True)
    assert list(sc.to_frame().columns) == ["feature", "code", "display_name", "family", "mean_abs", "range",
                                           "importance"]
    fig = gam_plots.shape_curves_figure(sc, top=4)
    assert len(fig.data) == 2 * min(4, len(sc))                              # a density and a curve per panel
    with pytest.raises(ValueError, match="order_by must be one of"):
        explain.shape_curves(model, X, order_by="weight")
    with pytest.raises(ValueError, match="model must be a fitted HTCGAM"):
        explain.shape_curves(HTCGAM(), X)


def test_explanation_of_a_gam_sums_its_shape_functions(data):
    ts, X, y, model = data
    i = int(np.argmin(model.predict_proba(X)[:, 1]))
    e = explain.explain_trajectory(model, X, i, labels=y, groups=ts.meta["dataset"], ids=ts.ids)
    assert e.variant == "gam"
    assert e.logit == pytest.approx(float(model.decision_function(X.values[i:i + 1])[0]))
    assert e.signals["contribution"].sum() == pytest.approx(e.logit - e.intercept)
    assert e.table["weight"].isna().all()
    assert e.reasons and all("the confidence (logit" in r for r in e.reasons)
    lin = HTCGAM(select="linear").fit(X, y, meta=ts.meta)                   # fell back: explained as HTC-Reduced
    e2 = explain.explain_trajectory(lin, X, i, labels=y)
    ref = explain.explain_trajectory(lin.linear_, X, i, labels=y)
    assert e2.logit == pytest.approx(ref.logit) and np.isfinite(e2.table["weight"]).all()
    assert len(explain.shape_curves(lin, X)) == 0
