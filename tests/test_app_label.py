"""The Label page (AppTest): label 20 unlabeled runs from the queue, see the estimate appear and update, restart
(a new AppTest on the same data directory) and find the labels; the inspector's label bar."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from htc_core.app import jobs, ui
from htc_core.app.label_store import LabelStore
from htc_core.app.store import Store
from apptest_kit import APP, go, problems

REPO = Path(__file__).resolve().parents[1]
N_RUNS = 80
pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def unlabeled_dir(tmp_path_factory):
    """80 real runs of sample_runs/units with their success labels removed (the truth kept aside)."""
    d = tmp_path_factory.mktemp("unlabeled")
    src = REPO / "sample_runs" / "units"
    lines = next(src.glob("*.jsonl")).read_text(encoding="utf-8").splitlines()[:N_RUNS]
    truth, out = {}, []
    for line in lines:
        obj = json.loads(line)
        truth[obj["id"]] = bool(obj.pop("success"))
        out.append(json.dumps(obj))
    (d / "units-unlabeled.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return d, truth


def _app(data: Path, samples: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("HTC_DATA_DIR", str(data))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(samples))
    at = AppTest.from_file(APP, default_timeout=240)
    at.session_state[ui.SEEDS] = 1
    return at


def _wait_for_refit(timeout: float = 240.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        with jobs._LOCK:
            live = [j for j in jobs._JOBS.values() if j.is_running and j.key[0] == "label-queue"]
        if not live:
            return
        live[0].finished.wait(1.0)
    raise AssertionError("the refit did not end")


def run_titles(at) -> list[str]:
    """The proposed run's title: an h3 in the markdown element that also holds the style hiding it until the label
    buttons are mounted (``label_glue.hide_until_buttons``)."""
    return [m.value.split("\n### ", 1)[1] for m in at.markdown if "\n### Run " in m.value]


def _current_id(at) -> str:
    [head] = run_titles(at)
    return head.removeprefix("Run ").replace("\\", "")


def test_label_twenty_runs_see_the_estimate_and_find_them_after_a_restart(tmp_path, unlabeled_dir, monkeypatch):
    samples, truth = unlabeled_dir
    data = tmp_path / "data"
    at = _app(data, samples, monkeypatch)
    at.run()
    go(at, "label")
    assert not problems(at), problems(at)
    assert at.title[0].value == "Label"
    assert any("0 of 80 runs labeled" in m.value for m in at.markdown)
    seen, estimates = [], []
    for k in range(20):
        tid = _current_id(at)
        assert tid not in seen
        seen.append(tid)
        value = "success" if truth[tid] else "failure"
        at.button(key=f"queue_{value}").click().run()
        assert not problems(at), problems(at)
        if k in (9, 19):
            _wait_for_refit()
            at.run()
            metrics = {m.label: m.value for m in at.metric}
            if "ECE, adapted" in metrics:
                estimates.append(metrics["ECE, adapted"])
    assert any(f"20 of {N_RUNS} runs labeled" in m.value for m in at.markdown)
    assert len(estimates) == 2 and estimates[0] != estimates[1], estimates   # the estimate updated
    assert any("Estimate from the refit on 20 labels" in c.value for c in at.caption)
    assert any(c.value.startswith("90% interval 0.") for c in at.caption)
    assert any("ECE estimated from 20 labels, corrected for the noise of 20 labels" in c.value for c in at.caption)
    assert any("corrected for the noise of 20 labels" in getattr(e, "value", "") for e in [*at.info, *at.success])
    assert at.get("plotly_chart")                                             # zero-shot vs adapted curves
    store = Store(data)
    assert store.get_setting(next(k for k in _settings(store) if k.startswith("label-model:"))) in set(
        store.list_models()["id"])

    go(at, "inspector")                                                       # the selection's scorer, with its card
    assert not problems(at), problems(at)
    assert any("the selection's adapted GAC (20 labels" in c.value for c in at.caption)

    again = _app(data, samples, monkeypatch)                                  # a restart on the same store
    again.run()
    go(again, "label")
    assert not problems(again), problems(again)
    assert any(f"20 of {N_RUNS} runs labeled" in m.value for m in again.markdown)
    cur = LabelStore(Store(data)).current()
    assert sorted(cur["id"]) == sorted(seen) and set(cur["source"]) == {"person"}
    assert all(cur.set_index("id").loc[t, "value"] == ("success" if truth[t] else "failure") for t in seen)


def _settings(store: Store) -> list[str]:
    with store.connection() as con:
        return [r[0] for r in con.execute("SELECT key FROM settings").fetchall()]


def test_inspector_label_bar_labels_and_navigates(tmp_path, unlabeled_dir, monkeypatch):
    samples, truth = unlabeled_dir
    data = tmp_path / "data"
    at = _app(data, samples, monkeypatch)
    at.run()
    go(at, "inspector")
    assert not problems(at), problems(at)
    kinds = lambda: {v: at.button(key=f"insp_label_{v}").proto.type for v in ("success", "failure", "skip")}
    assert "primary" not in kinds().values()             # unlabeled: no button looks chosen (ui-review 19)
    at.button(key="insp_label_failure").click().run()
    assert not problems(at), problems(at)
    cur = LabelStore(Store(data)).current()
    assert len(cur) == 1 and cur["value"].iat[0] == "failure" and cur["source"].iat[0] == "person"
    assert kinds() == {"success": "secondary", "failure": "primary", "skip": "tertiary"}   # the run's label
    first = cur["id"].iat[0]
    at.button(key="insp_label_next").click().run()
    assert not problems(at)
    at.button(key="insp_label_success").click().run()
    cur = LabelStore(Store(data)).current().set_index("id")
    assert len(cur) == 2 and cur.loc[first, "value"] == "failure"
    assert set(cur["value"]) == {"success", "failure"}


def test_rule_preview_then_write_on_the_label_page(tmp_path, unlabeled_dir, monkeypatch):
    samples, truth = unlabeled_dir
    data = tmp_path / "data"
    at = _app(data, samples, monkeypatch)
    at.run()
    go(at, "label")
    at.selectbox(key="rule_kind").set_value("numeric").run()
    at.number_input(key="rule_abs").set_value(0.011).run()
    at.number_input(key="rule_rel").set_value(0.005).run()
    assert not problems(at), problems(at)
    n_true = sum(truth.values())
    text = " ".join(m.value for m in at.markdown)
    assert f"{n_true} successes, {N_RUNS - n_true} failures, 0 runs left unlabeled" in text
    assert not LabelStore(Store(data)).history().shape[0]                     # a preview writes nothing
    [write] = [b for b in at.button if b.label.startswith("Write these")]
    write.click().run()
    assert not problems(at), problems(at)
    cur = LabelStore(Store(data)).current().set_index("id")
    assert len(cur) == N_RUNS and set(cur["source"]) == {"rule"}
    assert all((cur.loc[t, "value"] == "success") == ok for t, ok in truth.items())   # the project's own rule


def test_label_page_with_an_empty_store(tmp_path, monkeypatch):
    empty = tmp_path / "no-samples"
    empty.mkdir()
    at = _app(tmp_path / "data", empty, monkeypatch)
    at.run()
    go(at, "label")
    assert not problems(at), problems(at)
    assert any("No runs are stored yet" in i.value for i in at.info)


@pytest.mark.parametrize("current,kinds", [(None, ("secondary", "secondary", "tertiary")),
                                           ("success", ("primary", "secondary", "tertiary")),
                                           ("failure", ("secondary", "primary", "tertiary")),
                                           ("skip", ("secondary", "secondary", "primary"))])
def test_the_primary_label_button_is_the_runs_current_label(current, kinds):
    """docs/ui-review.md 19: Success was always the primary (chosen-looking) button, even on a failure."""
    from htc_core.app.label_glue import button_kind

    assert tuple(button_kind(v, current) for v in ("success", "failure", "skip")) == kinds


def test_inspector_label_against_a_file_label_is_a_conflict_until_resolved(tmp_path, monkeypatch):
    samples = tmp_path / "labeled"
    samples.mkdir()
    lines = next((REPO / "sample_runs" / "units").glob("*.jsonl")).read_text(encoding="utf-8").splitlines()[:20]
    (samples / "units-labeled.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    at = _app(data, samples, monkeypatch)
    at.run()
    go(at, "inspector")
    [cap] = [c.value for c in at.caption if c.value.startswith("Current label:")]
    current = "success" if "**success" in cap else "failure"
    assert at.button(key=f"insp_label_{current}").proto.type == "primary"        # a file label counts too
    shown = at.caption[0].value.split(" · ")[0].replace("\\", "")
    opposite = "failure" if current == "success" else "success"
    at.button(key=f"insp_label_{opposite}").click().run()
    assert not problems(at), problems(at)
    assert any("carries a file label that disagrees" in w.value for w in at.warning)
    t = Store(data).trajectories().set_index("id")
    assert bool(t.loc[shown, "success"]) == (current == "success")                # not applied yet
    at.button(key="insp_label_use").click().run()
    assert not problems(at), problems(at)
    t = Store(data).trajectories().set_index("id")
    assert bool(t.loc[shown, "success"]) == (opposite == "success")
    h = LabelStore(Store(data)).history(run_id=shown)
    assert list(h["status"]) == ["superseded", "active"] and list(h["source"]) == ["file", "person"]


def test_label_page_on_a_selection_labeled_by_its_files_offers_no_queue(tmp_path, monkeypatch):
    """Every run labeled in its file: no refit over those labels, no estimate, no adapted model; a sentence that
    points to the Calibration page and to unlabeled runs (before: a refit over all labels and a bogus 0.00)."""
    samples = tmp_path / "labeled"
    samples.mkdir()
    lines = next((REPO / "sample_runs" / "units").glob("*.jsonl")).read_text(encoding="utf-8").splitlines()[:40]
    (samples / "units-labeled.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    at = _app(data, samples, monkeypatch)
    at.run()
    go(at, "label")
    assert not problems(at), problems(at)
    [info] = [i.value for i in at.info if "has a label from its files" in i.value]
    assert "Every run of this selection (40)" in info and "Calibration page" in info
    assert not at.metric and not at.get("plotly_chart")                       # no estimate, no curves
    assert not run_titles(at)                                                  # no run proposed
    with jobs._LOCK:
        assert not [j for j in jobs._JOBS.values() if j.key[0] == "label-queue" and j.is_running]
    assert not [k for k in _settings(Store(data)) if k.startswith("label-model:")]   # no adapted model saved
    go(at, "inspector")
    assert not problems(at), problems(at)
    assert not any("adapted GAC" in c.value for c in at.caption)


def test_two_keys_on_one_drawing_label_once_and_the_second_is_refused_visibly(tmp_path, unlabeled_dir, monkeypatch):
    """Two label keys reach the server in one rerun (the second pressed before the page drew the next run, so its
    button still named the run just labeled): the first is stored, the second refused with a toast; the run is
    labeled once, and the next key, on the next run's drawing, goes to the next run."""
    samples, truth = unlabeled_dir
    data = tmp_path / "data"
    at = _app(data, samples, monkeypatch)
    at.run()
    go(at, "label")
    first = _current_id(at)
    at.button(key="queue_success").click()
    at.button(key="queue_failure").click()
    at.run()
    assert not problems(at), problems(at)
    h = LabelStore(Store(data)).history()
    assert list(zip(h["id"], h["value"])) == [(first, "success")]                  # once, the first key
    assert any("Key not applied" in t.value for t in at.toast)                     # the second: refused, visibly
    assert any(c.value.replace("\\", "").startswith(f"Last label: {first}") for c in at.caption)
    second = _current_id(at)
    assert second != first
    at.button(key="queue_failure").click().run()
    h = LabelStore(Store(data)).history()
    assert list(zip(h["id"], h["value"])) == [(first, "success"), (second, "failure")]
