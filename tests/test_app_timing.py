"""Time estimates of the long computations' indicators (issue 27 item 5): measured rates, kept per data folder,
never made up (no measurement: no number)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from htc_core.app import timing
from htc_core.app.jobs import Job


@pytest.fixture(autouse=True)
def fresh_rates(monkeypatch):
    monkeypatch.setattr(timing, "_RATES", {})


def test_a_measured_rate_gives_the_next_estimate_and_survives_a_restart(tmp_path, monkeypatch):
    assert timing.estimate(tmp_path, "UMAP", 2000) is None          # nothing measured: no number
    assert timing.label_with_estimate("UMAP", None) == "UMAP"
    timing.record(tmp_path, "UMAP", 1000, 20.0)
    assert timing.estimate(tmp_path, "UMAP", 2000) == pytest.approx(40.0)
    monkeypatch.setattr(timing, "_RATES", {})                        # a new process reads the file
    assert timing.estimate(tmp_path, "UMAP", 500) == pytest.approx(10.0)
    assert json.loads((tmp_path / timing.FILE).read_text()) == {"UMAP": 0.02}
    assert timing.label_with_estimate("UMAP", 40.0) == "UMAP (about 40 s)"
    # once progress is reported, the time left follows it
    assert timing.label_with_estimate("UMAP", 40.0, elapsed=30.0, fraction=0.5) == "UMAP (about 30 s left)"
    assert "longer than" in timing.label_with_estimate("UMAP", 10.0, elapsed=12.0, fraction=0.0)
    assert timing.estimate(tmp_path, "fit", 10, fallback_rate=0.5) == 5.0


def test_a_damaged_file_or_junk_rates_are_ignored(tmp_path):
    (tmp_path / timing.FILE).write_text('{"a": "x", "b": -1, "c": NaN, "d": 0.5}')
    assert timing.rate(tmp_path, "a") is None and timing.rate(tmp_path, "b") is None
    assert timing.rate(tmp_path, "c") is None and timing.rate(tmp_path, "d") == 0.5
    (tmp_path / timing.FILE).write_text("not json")
    timing._RATES.clear()
    assert timing.rate(tmp_path, "d") is None
    timing.record(tmp_path, "d", 0, 5.0)          # no units, no rate
    timing.record(tmp_path, "d", 10, float("nan"))
    assert timing.rate(tmp_path, "d") is None


@settings(max_examples=200, deadline=None)
@given(hs.floats(allow_nan=True, allow_infinity=True))
def test_about_never_raises(seconds):
    text = timing.about(seconds)
    assert text == "" or text.startswith("about ")


def test_about_rounds_like_a_person():
    assert [timing.about(s) for s in (0.2, 7.4, 23, 61, 95, 600)] == [
        "about 1 s", "about 7 s", "about 25 s", "about 60 s", "about 2 min", "about 10 min"]


def test_the_evaluation_job_says_how_long():
    job = Job(key=("k",), label="Cross-validated evaluation", expected=60.0)
    assert job.text() == "Cross-validated evaluation: starting (about 60 s)"
    job.started -= 10
    job.progress(1, 4, "baselines (1/4 folds)")
    assert job.text() == "Cross-validated evaluation: baselines (1/4 folds) (about 30 s left)"
