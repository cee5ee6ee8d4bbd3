"""Page view-models (htc_core.app.views): the tables and choices the pages show, without Streamlit."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from htc_core.app import import_views, views
from htc_core.app.ingest import ingest
from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.evaluation import evaluate
from htc_core import explain
from htc_core.explain import confidence_examples, group_curves, group_metrics
from htc_core.features import FEATURE_NAMES, REGISTRY

from conftest import REPO

SHIPPED = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
METHODS = ["HTC-Full", "GlobalTrace-TP+Temp", "GlobalTrace-TP"]


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """60 of the project's own recorded runs in a fresh store, as the pages see them."""
    d = tmp_path_factory.mktemp("views")
    part = d / "arithmetic-60.jsonl"
    part.write_text("".join(SHIPPED.read_text(encoding="utf-8").splitlines(True)[:60]), encoding="utf-8")
    store = Store(d / "store")
    ingest(store, [part], name="sample")
    return build_workspace(store)


@pytest.fixture(scope="module")
def evaluated(ws):
    pos = np.flatnonzero(np.isfinite(ws.labels))
    res = evaluate(ws.ts.take(pos), seeds=1, alphas=(1.0,), methods=METHODS)
    return SimpleNamespace(result=res, positions=pos)


@pytest.fixture(scope="module")
def model(ws):
    pos = np.flatnonzero(np.isfinite(ws.labels))
    return HTCCalibrator(variant="full", alphas=(1.0,)).fit(ws.features.take(pos), ws.labels[pos])


def test_weight_tables(model):
    wf = views.weights_frame({"HTC-Full": model})
    assert len(wf) == 48 and set(wf["family"]) == {"Dynamics", "Position", "Stability", "Structure"}
    assert np.allclose(wf["weight"], model.coef_[0])
    assert list(wf["selected"]) == list(model.coef_[0] != 0)
    row = wf.set_index("feature").loc["last_top1_avg"]
    assert row["formula"] == REGISTRY["last_top1_avg"].formula and row["code"] == REGISTRY["last_top1_avg"].code
    ft = views.feature_table()
    assert list(ft["feature"]) == list(FEATURE_NAMES)
    counts = pd.Series(np.r_[np.full(10, 15), np.zeros(38, dtype=int)], index=list(FEATURE_NAMES))
    fake = SimpleNamespace(seeds=[42, 43, 44], n_splits=5,
                           selected_counts={"HTC-Reduced": counts, "HTC-Full": counts * 0 + 15})
    sf = views.selection_frequency(fake)
    assert sf["fits"].iloc[0] == 15 and sf["frequency"].max() == 1.0 and sf["frequency"].min() == 0.0
    sv = views.selection_view(fake)
    assert sv.fits == 15 and sv.methods == ["HTC-Reduced", "HTC-Full"]
    assert len(sv.of("HTC-Reduced")) == 48 and sv.of("HTC-Reduced")["times"].sum() == 150


def test_metric_tables(evaluated):
    res = evaluated.result
    mf = views.metrics_frame(res)
    assert list(mf["method"]) == res.methods
    row = mf.set_index("method").loc["HTC-Full"]
    s = res.summary["HTC-Full"]
    assert row["ECE ↓"] == f"{s['ece']['mean']:.3f} ± {s['ece']['std']:.3f}"
    assert row["features"] == f"{s['n_features']['mean']:.1f} ± {s['n_features']['std']:.1f}"
    assert mf.set_index("method").loc["GlobalTrace-TP", "features"] == "1.0 ± 0.0"
    ml = views.metrics_long(res)
    assert len(ml) == 3 * len(res.methods) and set(ml["metric"]) == {"ECE", "Brier", "AUROC"}
    assert len(views.metrics_long(res, ["HTC-Full", "unknown"])) == 3
    om = views.overall_metrics(res.labels, {"a": res.oof["HTC-Full"]})
    direct = group_metrics(res.labels, {"a": res.oof["HTC-Full"]}, ["x"] * len(res.labels))
    assert "group" not in om.columns and om["ece"].iloc[0] == pytest.approx(direct["ece"].iloc[0])
    assert views.oof_predictions(res, ["HTC-Full"]).keys() == {"HTC-Full"}


def test_method_choices():
    methods = ["HTC-Full", "HTC-Reduced", "GlobalTrace-TP", "Bottom10+Temp", "LastStep-TP+Temp"]
    assert views.split_methods(methods) == (["HTC-Reduced", "HTC-Full"],
                                            ["GlobalTrace-TP", "Bottom10+Temp", "LastStep-TP+Temp"])
    c = views.calibration_choices(methods, "LastStep-TP+Temp")      # the strongest baseline is drawn next to HTC
    assert c.diagram == ["HTC-Reduced", "HTC-Full", "LastStep-TP+Temp"] and c.histogram_index == 1
    assert views.calibration_choices(methods).diagram == ["HTC-Reduced", "HTC-Full"]
    assert views.calibration_choices([*methods, "Bottom10+Platt"]).diagram == ["HTC-Reduced", "HTC-Full", "Bottom10+Platt"]
    assert views.calibration_choices(["GlobalTrace-TP"]).histogram_index == 0
    assert views.preferred_baseline(["GlobalTrace-TP", "LastStep-TP+Temp"]) == 1
    assert views.preferred_baseline(["GlobalTrace-TP", "LastStep-TP+Temp"], "GlobalTrace-TP") == 0
    assert views.preferred_baseline(["Tail", "Bottom10"]) == 0


def test_strongest_baseline_and_best_marks_on_real_runs():
    """Examples and the Calibration diagram start on the baseline with the lowest Brier; the table marks the
    best of each column; Verbalized (on the 1,361 of 4,001 sample runs that state one) shows its n and is
    neither marked best nor offered for run-by-run examples. The legend's ECE is the table's."""
    from htc_core.formats import load

    ts, _ = load(str(REPO / "sample_runs"))
    ts = ts.labeled()
    res = evaluate(ts, seeds=2, methods=["Bottom10", "Bottom10+Temp", "Bottom10+Platt", "Tail+Temp", "Verbalized",
                                         "Verbalized+Iso"])
    briers = {m: res.summary[m]["brier"]["mean"] for m in res.methods if res.n_of(m) == res.n}
    assert res.strongest_baseline() == min(briers, key=briers.get)
    base = views.example_baselines(res)
    assert "Verbalized" not in base and "Verbalized+Iso" not in base
    assert base[views.preferred_baseline(base, res.strongest_baseline())] == min(briers, key=briers.get)
    table = views.metrics_frame(res).set_index("method")
    assert table.loc["Verbalized", "n"] == 1361 and table.loc["Bottom10", "n"] == 4001
    for col, k in (("ECE ↓", "ece"), ("Brier ↓", "brier"), ("AUROC ↑", "auroc")):
        marked = [m for m in table.index if table.loc[m, col].startswith(views.BEST_MARK)]
        assert marked == [res.best(k)] and res.n_of(marked[0]) == 4001
    from htc_core.viz import plots
    from htc_core.explain import reliability_curves

    curves = reliability_curves(res.labels, views.oof_predictions(res, ["Bottom10+Platt", "Verbalized"]))
    fig = plots.reliability_figure(curves, ece=views.table_ece(res, ["Bottom10+Platt", "Verbalized"]))
    names = [t.name for t in fig.data if t.name and "ECE" in t.name]
    assert names == [f"Bottom10+Platt (ECE {res.summary['Bottom10+Platt']['ece']['mean']:.3f})",
                     f"Verbalized (ECE {res.summary['Verbalized']['ece']['mean']:.3f})"]
    assert curves["Verbalized"].count.sum() == 1361


def test_scoring_and_projection_frames(ws, model):
    scored = views.score_selection(ws, model)
    expected = model.predict_proba(ws.features)[:, 1]
    assert np.allclose(scored.confidence, expected) and np.allclose(scored.frame["htc_confidence"], expected)
    assert list(scored.frame.columns[:6]) == ["position", "key", "run_set", "id", "dataset", "htc_confidence"]
    assert set(scored.metrics["method"]) == {"uploaded model", "GlobalTrace-TP"}
    unlabeled = ws.take(np.flatnonzero(np.isnan(ws.labels)))
    if len(unlabeled):
        assert views.score_selection(unlabeled, model).metrics is None
    coords = np.column_stack([np.arange(len(ws)), -np.arange(len(ws))]).astype(float)
    frame = views.projection_frame(ws, SimpleNamespace(coords=coords), expected)
    assert np.array_equal(frame["x"], coords[:, 0]) and np.array_equal(frame["y"], coords[:, 1])
    assert np.array_equal(frame["baseline_confidence"], frame["GlobalTrace-TP"])
    assert np.allclose(frame["htc_confidence"], expected)
    assert views.projection_frame(ws, SimpleNamespace(coords=coords), None)["htc_confidence"].isna().all()


def test_group_views_and_examples(ws, evaluated):
    res = evaluated.result
    groups = views.evaluated_groups(ws, evaluated, "dataset")
    assert len(groups) == len(res.labels)
    assert list(groups) == list(ws.ts.meta["dataset"].to_numpy(dtype=object)[evaluated.positions])
    curves = views.group_reliability(res, groups, ["HTC-Full", "GlobalTrace-TP"])
    for g, by_method in curves.items():
        assert set(by_method) == {"HTC-Full", "GlobalTrace-TP"}
        assert by_method["HTC-Full"].ece == pytest.approx(group_curves(res.labels, res.oof["HTC-Full"], groups)[g].ece)
    fv = views.feature_values(ws.features, ws.ts.meta["model"], ws.labels, "last_top1_avg")
    assert np.array_equal(fv["value"], ws.features.column("last_top1_avg")) and len(fv) == len(ws)
    with pytest.raises(ValueError, match="valid features"):
        views.feature_values(ws.features, ws.ts.meta["model"], ws.labels, "nope")
    exs = views.examples_for(ws, evaluated, baseline="GlobalTrace-TP", htc="HTC-Full", n=3)
    meta = ws.ts.meta.iloc[evaluated.positions].reset_index(drop=True)
    direct = confidence_examples(meta, res.labels, res.oof["GlobalTrace-TP"], res.oof["HTC-Full"],
                                 baseline="GlobalTrace-TP", htc="HTC-Full", n=3)
    assert len(exs.over) + len(exs.under) > 0
    for got, want in ((exs.over, direct.over), (exs.under, direct.under)):
        assert list(got["id"]) == list(want["id"])
        for _, row in got.iterrows():
            assert row["key"] == ws.keys[evaluated.positions[row["position"]]] and row["key"].endswith(":" + row["id"])


def test_runs_page_tables(ws):
    frame = ws.frame()
    assert views.browse_confidences(frame)[:2] == ["GlobalTrace-TP", "LastStep-TP"]
    assert views.browse_confidences(frame[["id"]]) == []
    rep = {"problems": [{"severity": "warning", "reason": "w"}, {"severity": "error", "reason": "e"},
                        {"severity": "info", "reason": "i"}]}
    assert list(import_views.problem_table(rep)["reason"]) == ["e", "w"]
    assert import_views.problem_table({"problems": []}).empty


def test_inspector_choices(ws, evaluated):
    frame = ws.frame()
    longest = int(np.argmax(frame["steps"].to_numpy()))
    assert views.trajectory_choices(frame, "", None) == (list(range(len(ws))), longest)
    assert views.trajectory_choices(frame, "", 7) == (list(range(len(ws))), 7)
    tid = str(frame["id"].iat[5])
    cand, default = views.trajectory_choices(frame, tid, None)
    assert 5 in cand and cand[default] == cand[0]
    cand, default = views.trajectory_choices(frame, tid, 5)
    assert cand[default] == 5
    assert views.trajectory_choices(frame, "no such words anywhere", 3) == ([], 0)
    assert views.trajectory_label(frame, 5).startswith(tid + " · ")
    i = int(evaluated.positions[2])
    assert views.oof_confidence(evaluated, i, "HTC-Full") == pytest.approx(evaluated.result.oof["HTC-Full"][2])
    assert views.oof_confidence(evaluated, i, "HTC-Reduced") is None
    assert views.oof_confidence(None, i, "HTC-Full") is None
    unlabeled = np.flatnonzero(np.isnan(ws.labels))
    if len(unlabeled):
        assert views.oof_confidence(evaluated, int(unlabeled[0]), "HTC-Full") is None
    assert [views.outcome_word(v) for v in (1.0, 0.0, np.nan)] == ["success", "failure", "unlabeled"]


def test_views_import_no_streamlit():
    code = ("import sys, htc_core.app.views; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('streamlit', 'plotly', 'umap')); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_flags_in_the_frame_and_the_browse_filter(tmp_path):
    from htc_core.app.workspace import browse
    from htc_core.explain import FLAGS

    store = Store(tmp_path / "store")
    ingest(store, [SHIPPED], name="arithmetic")          # all 250 runs: one ends at the step limit
    frame = build_workspace(store).frame()
    assert all(f"flag_{f}" in frame.columns for f in FLAGS)
    no_answer = frame["flag_no_final_answer"].to_numpy(bool)
    assert no_answer.sum() == 1
    shown = browse(frame, flags=["no_final_answer"])
    assert len(shown) == no_answer.sum() and all(FLAGS["no_final_answer"] in f for f in shown["flags"])
    both = browse(frame, flags=["no_final_answer", "step_limit"])
    assert set(both["id"]) <= set(shown["id"])
    with pytest.raises(ValueError, match="valid flags"):
        browse(frame, flags=["nope"])


def test_out_of_fold_column_and_step_texts(ws, evaluated, model):
    col = views.oof_column(evaluated, len(ws), "HTC-Full")
    np.testing.assert_array_equal(col[evaluated.positions], evaluated.result.oof["HTC-Full"])
    assert np.isnan(np.delete(col, evaluated.positions)).all()
    assert views.oof_column(evaluated, len(ws), "HTC-Reduced") is None
    steps = views.step_texts(ws.ts, 0)
    assert len(steps) == ws.ts.steps_per_trajectory[0] and steps[0][1].startswith("Thought")
    expl = explain.explain_trajectory(model, ws.features, 0, labels=ws.labels)
    sig = views.signal_frame(expl)
    assert len(sig) == len(expl.signals) and "related features" in sig.columns


def test_worst_mistakes_view(ws, evaluated, model):
    """Examples' worst mistakes: the out-of-fold confidence, explained by the fold model that produced it."""
    worst = views.mistakes_for(ws, evaluated, htc="HTC-Full", n=3)
    fails = worst.confident_failures
    res = evaluated.result
    assert len(fails) == 3 and (fails["success"] == 0).all()
    assert fails["confidence"].iloc[0] == res.oof["HTC-Full"][res.labels == 0].max()
    assert all(k in set(ws.keys) for k in fails["key"]) and all(r.endswith(").") for r in fails["reason"])
    for p, reason in zip(fails["position"], fails["reason"]):
        fold = res.fold_model("HTC-Full", int(p))
        e = explain.explain_trajectory(fold, ws.features, int(evaluated.positions[p]), labels=ws.labels,
                                       groups=ws.ts.meta["dataset"], n_reasons=1)
        assert e.confidence == pytest.approx(res.oof["HTC-Full"][p], abs=1e-12) and e.reasons[0] == reason
    assert "flags" in worst.doubted_successes.columns


def test_export_frame(ws, evaluated, model):
    """The CSV carries what the pages show: confidence in use + scorer (out-of-fold where held out), question,
    answer, gold, flags and the reasons of each run's own model."""
    from htc_core.app.shown import combined

    pos = np.arange(10)
    in_use = combined(ws, pos, "HTC-Full", model, evaluated)
    df = views.export_frame(ws, pos, in_use, evaluated)
    assert len(df) == 10 and list(df["id"]) == list(ws.ts.ids[:10])
    assert {"confidence", "scorer", "question", "final_answer", "gold", "HTC-Full (out-of-fold)", "flags",
            "reason_1", "reason_2", "reason_3"} <= set(df.columns)
    assert set(FEATURE_NAMES) <= set(df.columns)
    assert "HTC-Reduced (out-of-fold)" not in df.columns          # not evaluated in this fixture
    held = np.isin(pos, evaluated.positions)
    np.testing.assert_allclose(df["confidence"][held], df["HTC-Full (out-of-fold)"][held])
    assert set(df["scorer"][held]) == {"HTC-Full (out-of-fold)"}
    for i in np.flatnonzero(held)[:4]:
        row = int(np.flatnonzero(evaluated.positions == pos[i])[0])
        e = explain.explain_trajectory(evaluated.result.fold_model("HTC-Full", row), ws.features, int(pos[i]),
                                       labels=ws.labels, groups=ws.ts.meta["dataset"])
        assert [r for r in df.loc[i, ["reason_1", "reason_2", "reason_3"]] if r] == e.reasons
        assert e.confidence == pytest.approx(df.loc[i, "confidence"], abs=1e-12)


def test_selective_views_on_the_evaluated_runs(evaluated):
    """Risk-coverage and ROC of each method on its out-of-fold confidences (selective.py computes them)."""
    from htc_core.viz import selective_plots
    from htc_core.calibration.selective import risk_coverage_curve

    res = evaluated.result
    sel = views.selective_views(res, ["HTC-Full", "GlobalTrace-TP"])
    rc = sel.risk_coverage["HTC-Full"]
    want = risk_coverage_curve(res.labels, res.oof["HTC-Full"])
    np.testing.assert_array_equal(rc.coverage, want.coverage)
    assert rc.coverage[-1] == 1.0 and rc.accuracy[-1] == pytest.approx(res.labels.mean())
    assert sel.auroc["HTC-Full"] == res.summary["HTC-Full"]["auroc"]["mean"]
    cov, acc, kept = rc.at_threshold(0.5)
    fig = selective_plots.risk_coverage_figure(sel.risk_coverage, threshold=0.5, marked="HTC-Full")
    if kept:
        assert fig.data[-1].x[0] == cov and f"{kept} kept" in fig.data[-1].name
    roc = selective_plots.roc_figure(sel.roc, sel.auroc)
    assert [t.name for t in roc.data][1].startswith("HTC-Full (AUROC")
    assert roc.data[1].y[-1] == 1.0 and roc.data[1].x[-1] == 1.0


def test_group_summary_puts_n_and_success_rate_next_to_the_metrics():
    """Compare LLMs (issue 27): per group its labeled runs and success rate, and each method's metrics; a table
    of counts and one of metrics per method, four columns at most each (one row per group with every method's
    metrics was 9 columns for two methods and scrolled sideways at 900 px)."""
    rng = np.random.default_rng(0)
    y = (rng.random(200) < 0.4).astype(float)
    g = np.where(rng.random(200) < 0.5, "A", "B")
    p = {"M1": rng.random(200), "M2": rng.random(200)}
    gm = explain.group_metrics(y, p, g)
    t = views.group_summary(gm, "model")
    assert list(t.counts.columns) == ["model", "n", "success rate"] and list(t.counts["model"]) == ["A", "B"]
    assert list(t.metrics) == ["M1", "M2"]
    for grp in ("A", "B"):
        row = t.counts.set_index("model").loc[grp]
        assert row["n"] == (g == grp).sum() and row["success rate"] == pytest.approx(y[g == grp].mean())
        m2 = t.metrics["M2"].set_index("model").loc[grp]
        assert m2["Brier ↓"] == pytest.approx(np.mean((p["M2"][g == grp] - y[g == grp]) ** 2))
    assert all(list(m.columns) == ["model", "ECE ↓", "Brier ↓", "AUROC ↑"] and list(m["model"]) == ["A", "B"]
               for m in t.metrics.values())
    empty = views.group_summary(gm.iloc[:0], "dataset")
    assert list(empty.counts.columns) == ["dataset", "n", "success rate"] and empty.metrics == {}
