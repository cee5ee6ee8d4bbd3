"""The adapted model is the selection's default scorer (issue 26 item 3), end to end in the dashboard: upload
unlabeled runs on the Runs page, label 20 of them on the Label page, save the adapted model in the store; then
Runs, the inspector (headline, card, step curve), Examples, Calibration's method list, the CSV export and the HTML
report use it for the unlabeled runs, named "adapted GAC, 20 labels, <when>"; and ``htc score MODEL_FILE RUNS`` scores with
the saved model file to the same numbers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from htc_core import explain
from htc_core.app import jobs, ui
from htc_core.app.store import Store
from htc_core.calibration.calibrators import HTCCalibrator

from apptest_kit import new_app, problems

REPO = Path(__file__).resolve().parents[1]
N_RUNS, N_LABELS = 80, 20
pytestmark = pytest.mark.app


def _wait_for_refit(timeout: float = 240.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        with jobs._LOCK:
            live = [j for j in jobs._JOBS.values() if j.is_running and j.key[0] == "label-queue"]
        if not live:
            return
        live[0].finished.wait(1.0)
    raise AssertionError("the refit did not end")


def _ys(trace) -> np.ndarray:
    import base64

    y = trace["y"]
    if isinstance(y, dict):
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"]))
    return np.asarray(y, dtype=float)


@pytest.fixture(scope="module")
def labeled_in_app(tmp_path_factory):
    """An app whose only runs are 80 real runs of sample_runs/units uploaded without their labels; 20 of them
    labeled on the Label page (the truth clicked), the adapted model saved with the page's button."""
    tmp = tmp_path_factory.mktemp("scorer")
    src = next((REPO / "sample_runs" / "units").glob("*.jsonl")).read_text(encoding="utf-8").splitlines()[:N_RUNS]
    truth, lines = {}, []
    for line in src:
        obj = json.loads(line)
        truth[obj["id"]] = bool(obj.pop("success"))
        lines.append(json.dumps(obj))
    upload = tmp / "units-unlabeled.jsonl"
    upload.write_text("\n".join(lines) + "\n", encoding="utf-8")
    empty = tmp / "no-samples"
    empty.mkdir()
    mp = pytest.MonkeyPatch()
    at = new_app(mp, tmp / "data", empty, timeout=600)
    at.run()
    at.file_uploader(key="upload_files").set_value([(upload.name, upload.read_bytes(), "application/json")])
    at.button[0].click()
    at.run()
    assert not problems(at), problems(at)
    at.switch_page("pages/label.py")
    at.run()
    for _ in range(N_LABELS):
        [head] = [m.value.split("\n### ", 1)[1] for m in at.markdown if "\n### Run " in m.value]
        tid = head.removeprefix("Run ").replace("\\", "")
        at.button(key=f"queue_{'success' if truth[tid] else 'failure'}").click().run()
        assert not problems(at), problems(at)
    _wait_for_refit()
    at.run()
    assert any(f"{N_LABELS} of {N_RUNS} runs labeled" in m.value for m in at.markdown)
    at.button(key="label_card_save").click().run()
    assert not problems(at), problems(at)
    yield at, truth, tmp
    mp.undo()


def test_the_saved_model_is_in_the_store_and_htc_score_reads_it(labeled_in_app):
    at, truth, tmp = labeled_in_app
    [saved] = [s.value for s in at.success if s.value.startswith("Saved in the store as model")]
    assert f"adapted GAC, {N_LABELS} labels, " in saved
    store = Store(tmp / "data")
    models = store.list_models()
    kept = models[models["name"].str.startswith(f"adapted GAC, {N_LABELS} labels, ")]
    assert len(kept) == 1
    body = store.load_model(kept["id"].iat[0])
    assert body["card"]["labels_used"] == N_LABELS and body["adaptation"]["choice"]
    path = tmp / "adapted.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    out = tmp / "scores.csv"
    r = subprocess.run([sys.executable, "-m", "htc_core", "score", str(path), str(tmp / "units-unlabeled.jsonl"),
                        "--out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    import pandas as pd

    scores = pd.read_csv(out).set_index("id")["confidence"]
    assert len(scores) == N_RUNS
    # the dashboard's numbers for the same runs (the Runs table, adapted GAC column)
    at.switch_page("pages/runs.py")
    at.run()
    at.selectbox(key="browse_conf").set_value(next(o for o in at.selectbox(key="browse_conf").options
                                                   if o.startswith("adapted GAC"))).run()
    at.selectbox(key="browse_page_size").set_value(100).run()
    table = next(t.value for t in at.dataframe if "adapted GAC" in t.value.columns)
    assert len(table) == N_RUNS
    for tid, conf in zip(table["id"], table["adapted GAC"]):
        assert scores[tid] == pytest.approx(conf, abs=1e-9)


def test_runs_inspector_and_export_use_the_adapted_model_for_unlabeled_runs(labeled_in_app):
    at, truth, _ = labeled_in_app
    at.switch_page("pages/runs.py")
    at.run()
    assert not problems(at), problems(at)
    assert at.selectbox(key="browse_conf").options[0] == "confidence in use"   # the default (first option)
    at.selectbox(key="browse_conf").set_value("confidence in use").run()        # (the first test chose another)
    assert any(f"scored by the selection's adapted GAC, {N_LABELS} labels" in i.value for i in at.info)
    assert any(c.value.startswith("The selection's scorer: **adapted GAC") for c in at.caption)
    assert any(f"{N_RUNS - N_LABELS} runs by adapted GAC, {N_LABELS} labels" in c.value for c in at.caption)
    at.selectbox(key="browse_page_size").set_value(100).run()
    table = next(t.value for t in at.dataframe if "confidence in use" in t.value.columns)
    unlabeled = table[table["success"].isna()]
    assert len(unlabeled) == N_RUNS - N_LABELS
    at.toggle(key="browse_export").set_value(True).run()                     # the CSV: prepared, no problem
    assert not problems(at), problems(at)
    for _, row in unlabeled.head(3).iterrows():
        at.session_state[ui.INSPECT] = row["key"]
        at.switch_page("pages/inspector.py")
        at.run()
        assert not problems(at), problems(at)
        head = at.metric[0]
        assert head.label.startswith(f"confidence (adapted GAC, {N_LABELS} labels, ")
        assert head.value == explain.format_confidence(row["confidence in use"])
        assert any("the selection's scorer, adapted GAC" in c.value for c in at.caption)     # its card
        curve = json.loads(at.get("plotly_chart")[0].proto.spec)                # the step curve ends there
        assert _ys(curve["data"][0])[-1] == pytest.approx(row["confidence in use"], abs=1e-9)


def test_export_frame_names_the_adapted_scorer(labeled_in_app):
    """The CSV's rows (views.export_frame over shown.in_use, as the Runs page builds it): each unlabeled run's
    scorer is the adapted GAC with its card, each labeled one the HTC model."""
    from htc_core.app import adapted_scorer, shown, views
    from htc_core.app.workspace import build_workspace

    at, truth, tmp = labeled_in_app
    ws = build_workspace(Store(tmp / "data"))
    mp = pytest.MonkeyPatch()
    mp.setattr(adapted_scorer.session, "data_dir", lambda: str(tmp / "data"))
    mp.setattr(adapted_scorer.session, "store", lambda: Store(tmp / "data"))
    mp.setattr(adapted_scorer.session, "get_store", lambda d: Store(d))
    try:
        scorer = adapted_scorer.adapted_scorer(ws)
        assert scorer is not None and scorer.name.startswith(f"adapted GAC, {N_LABELS} labels, ")
        lab = np.flatnonzero(np.isfinite(ws.labels))
        fit = HTCCalibrator(alphas=(0.1, 1.0)).fit(ws.features.take(lab), ws.labels[lab])
        mp.setattr(shown, "adapted_scorer", lambda w: scorer)
        mp.setattr(shown, "fitted_model", lambda w, variant: fit)
        use = shown.in_use(ws, np.arange(len(ws)), "reduced", None)            # what the Runs page exports
        frame = views.export_frame(ws, np.arange(len(ws)), use)
    finally:
        mp.undo()
    unl = ~np.isfinite(ws.labels)
    assert set(frame.loc[unl, "scorer"]) == {scorer.name}
    assert set(frame.loc[~unl, "scorer"]) == {"HTC-Reduced (in-sample)"}
    assert np.allclose(frame.loc[unl, "confidence"], scorer.confidence(np.flatnonzero(unl)))
    assert frame.loc[unl, "reason_1"].str.len().gt(0).all()


def test_examples_calibration_and_report_list_the_adapted_gac(labeled_in_app):
    at, *_ = labeled_in_app
    at.switch_page("pages/examples.py")
    at.run()
    assert not problems(at), problems(at)
    assert any(s.value.startswith(f"Unlabeled runs by adapted GAC, {N_LABELS} labels") for s in at.subheader)
    at.switch_page("pages/calibration.py")
    at.run()
    assert not problems(at), problems(at)
    table = next(t.value for t in at.dataframe if "ECE ↓" in t.value.columns)
    assert "adapted GAC" in set(table["method"])                              # the method list
    assert "adapted GAC" in at.multiselect[0].options and "adapted GAC" in at.multiselect[0].value
    assert any(c.value.startswith("note: adapted GAC: the shipped GAC adapted to each training part") for c in at.caption)
    at.button(key="cal_report_build").click().run()
    assert not problems(at), problems(at)
    html = at.session_state["cal_report"][1]
    assert "adapted GAC" in html
