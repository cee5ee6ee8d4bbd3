"""The Calibration page's report download (AppTest) and the inspector's step curve on unlabeled runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest_kit import new_app
from conftest import REPO

HOSTILE_Q = '<script>alert("q")</script> Which <img src=x onerror=alert(1)> city?'


def _samples(d: Path, *, labels: bool) -> Path:
    lines = (REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl").read_text(
        encoding="utf-8").splitlines()[:40]
    objs = [json.loads(x) for x in lines]
    for o in objs:                       # every run: the worst mistakes shown include some
        o["question"] = HOSTILE_Q
        if not labels:
            o.pop("success", None)
    (d / "units.jsonl").write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return d


def _app(tmp_path, monkeypatch, *, labels: bool) -> AppTest:
    samples = tmp_path / "samples"
    samples.mkdir()
    at = new_app(monkeypatch, tmp_path / "data", _samples(samples, labels=labels), timeout=240)
    at.run()
    return at


def test_calibration_page_builds_the_report_download(tmp_path, monkeypatch):
    at = _app(tmp_path, monkeypatch, labels=True)
    at.switch_page("pages/calibration.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    [button] = [b for b in at.button if b.label == "Build the HTML report"]
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    html = at.session_state["cal_report"][1]
    assert html.startswith("<!DOCTYPE html>") and "Plotly.newPlot(" in html
    assert "Evaluation" in html and "Confident failures" in html and "Not in this report" in html
    assert HOSTILE_Q not in html and "&lt;script&gt;alert(" in html


def test_inspector_step_curve_replays_the_gac_model_it_explains_without_labels(tmp_path, monkeypatch):
    """Issue 27: without labels the step curve is the explained GAC model's, so it ends at the headline."""
    at = _app(tmp_path, monkeypatch, labels=False)
    at.switch_page("pages/inspector.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Confidence after each step" in [s.value for s in at.subheader]
    assert any("Monitor" in c.value and "GAC model" in c.value for c in at.caption)
