"""The Streamlit app through streamlit.testing.v1.AppTest: every page, uploads, model round trip, escaping."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

import htc_core.app.compute as compute
import htc_core.app.ui as ui
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.evaluation import label_problem
from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace

from apptest_kit import APP, first_lines, go, new_app, problems
from conftest import REPO, make_traj, write_jsonl

PAGES = ["runs", "calibration", "weights", "feature_space", "examples", "compare", "inspector"]
HOSTILE_Q = '<script>alert("q")</script> Which <img src=x onerror=alert(1)> city?'
HOSTILE_TOKENS = ["<script>", "alert(1)", "</script>", "<img src=x onerror=alert(1)>", " [link](http://x)"]


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory) -> Path:
    """50 of the project's own recorded runs (sample_runs/, always in the repo) plus one hostile trace."""
    shipped = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    d = first_lines(tmp_path_factory.mktemp("samples"), [shipped], 50, names=["arithmetic-small.jsonl"])
    evil = make_traj("evil-1", [([-0.1, -2.0, -0.3, -0.05, -1.0], None)], success=False, question=HOSTILE_Q,
                     dataset="arithmetic", model="SmolLM2-135M-greedy", answer="<b>Paris</b>", gold="Rome")
    evil["steps"][0]["tokens"] = HOSTILE_TOKENS
    evil["steps"][0]["text"] = "".join(HOSTILE_TOKENS)
    write_jsonl(d / "hostile.jsonl", [evil])
    return d


@pytest.fixture
def app(tmp_path, sample_dir, monkeypatch):
    """An AppTest on a fresh data directory that starts from the small sample runs; short alpha grid."""
    return new_app(monkeypatch, tmp_path / "data", sample_dir, timeout=180)


def test_every_page_with_sample_runs(app):
    app.run()
    assert not problems(app)
    assert app.title[0].value == "Runs"
    assert len(app.dataframe) == 2                                # run sets + trajectories
    assert not app.get("plotly_chart")                            # the Runs page draws tables only
    # every chart each page draws on the sample runs (one dataset with both outcomes, so every model fits):
    # calibration: reliability diagram + confidence histogram + risk-coverage + ROC; weights: two weight bars, selection frequency,
    # selection by family and level, per-dataset heatmap; feature space: the projection; examples: metric cards,
    # no chart; compare: reliability facets, metric bars, feature distribution; inspector: confidence after each
    # step, step timeline, waterfall, position in its dataset
    expected_charts = {"calibration": 4, "weights": 5, "feature_space": 1, "examples": 0, "compare": 3, "inspector": 4}
    for page in PAGES[1:]:
        go(app, page)
        assert not problems(app), (page, problems(app))
        assert len(app.get("plotly_chart")) == expected_charts[page], (page, len(app.get("plotly_chart")))
        assert not [i.value for i in app.info if "No runs are stored" in i.value], page
    go(app, "calibration")
    table = app.dataframe[0].value
    assert {"HTC-Reduced", "HTC-Full", "GlobalTrace-TP+Temp"} <= set(table["method"])
    assert table["ECE ↓"].str.contains("±").all()
    go(app, "examples")
    assert [s.value for s in app.subheader][:2] == ["Over-confident failures: baseline high, HTC low, wrong",
                                                     "Under-confident successes: baseline low, HTC high, right"]
    shown = [b for b in app.button if b.label == "Why? Open in the inspector"]   # one per example card
    assert 1 <= len(shown) <= 2 * 4                               # 4 examples per side by default
    worst = [b for b in app.button if b.label == "Open in the inspector"]   # HTC's own worst mistakes
    assert len(worst) == 2 * 4                                    # 4 per side; the selection has both outcomes
    assert app.subheader[2].value.endswith("own worst mistakes")
    assert len(app.metric) == 3 * len(shown) + len(worst)         # baseline, HTC and outcome; one per mistake
    assert any(c.value.startswith("Top reason for the mistake: ") for c in app.caption)


def test_early_warning_curve_on_the_calibration_page(app):
    app.run()
    go(app, "calibration")
    assert "Early warning: how soon a failing run shows" in [s.value for s in app.subheader]
    [button] = [b for b in app.button if b.label == "Evaluate the prefixes"]
    button.click().run()
    assert not problems(app), problems(app)
    assert len(app.get("plotly_chart")) == 5                      # reliability, histogram, risk-coverage, ROC, early-warning curve
    first = [d.value for d in app.dataframe if "median_first_alert" in d.value.columns]
    assert len(first) == 1 and set(first[0]["method"]) >= {"HTC-Reduced", "LastStep-TP"}
    go(app, "calibration")                                        # cached: drawn again without the button
    assert len(app.get("plotly_chart")) == 5 and not [b for b in app.button if b.label == "Evaluate the prefixes"]


def test_every_page_with_an_empty_store(tmp_path, monkeypatch):
    empty = tmp_path / "no-samples"
    empty.mkdir()
    monkeypatch.setenv("HTC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(empty))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not problems(at)
    infos = " ".join(i.value for i in at.info)
    assert "sample runs were not found" in infos and "No runs are stored yet" in infos
    assert len(at.get("file_uploader")) == 2
    for page in PAGES[1:]:
        go(at, page)
        assert not problems(at), page
        assert any("No runs are stored yet" in i.value for i in at.info), page
        assert not at.get("plotly_chart"), page


def _upload(at, files, *, labels=None, dataset="", name=""):
    at.file_uploader(key="upload_files").set_value(files)
    if labels is not None:
        at.file_uploader(key="upload_labels").set_value(labels)
    if dataset:
        at.text_input[1].set_value(dataset)
    if name:
        at.text_input[0].set_value(name)
    at.button[0].click()       # the form's submit button
    at.run()
    return at


def _good_lines(n=12, prefix="u"):
    objs = [make_traj(f"{prefix}{i}", [([-0.05 * (i + 1), -0.3, -0.01], None), ([-0.2, -0.02], None)],
                      success=bool(i % 2), question=f"question {i}") for i in range(n)]
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def test_upload_good_bad_and_mixed_files(app, tmp_path):
    app.run()
    n0 = len(Store(tmp_path / "data").list_run_sets())
    _upload(app, [("good.jsonl", _good_lines(), "application/json")], dataset="MyData", name="good upload")
    assert not problems(app)
    assert any("Stored 12 trajectories" in s.value for s in app.success)
    st = Store(tmp_path / "data")
    sets = st.list_run_sets()
    assert len(sets) == n0 + 1 and "good upload" in set(sets["name"])
    assert "MyData" in set(build_workspace(st).ts.meta["dataset"])

    bad = b'{"id": "x", "steps": [{"logprobs": [0.5]}]}\nnot json at all\n'
    _upload(app, [("bad.jsonl", bad, "application/json")])
    assert not app.exception
    assert any("Nothing was stored" in e.value for e in app.error)
    report = app.dataframe[0].value
    assert set(report["file"]) == {"bad.jsonl"} and set(report["line"]) == {1, 2}
    assert report["reason"].str.len().min() > 5
    assert len(Store(tmp_path / "data").list_run_sets()) == n0 + 1

    labels = b"id,success\nm0,true\nm1,false\n"
    _upload(app, [("mixed.jsonl", _good_lines(3, "m") + b"{broken\n", "application/json"),
                  ("junk.json", b"\x89PNG not json", "application/octet-stream")],
            labels=("labels.csv", labels, "text/csv"), name="mixed")
    assert not app.exception
    assert any("Stored 3 trajectories" in s.value for s in app.success)
    assert any("the valid part was kept" in w.value for w in app.warning)
    report = app.dataframe[0].value
    assert {"mixed.jsonl", "junk.json"} <= set(report["file"])
    assert 4 in set(report.loc[report["file"] == "mixed.jsonl", "line"])
    ws = build_workspace(Store(tmp_path / "data"))
    got = dict(zip(ws.ts.ids, ws.labels))
    assert got["m0"] == 1.0 and got["m1"] == 0.0


def test_browse_filters_and_delete(app, tmp_path):
    app.run()
    table = app.dataframe[1].value
    n_all = len(table)
    app.selectbox(key="browse_label").set_value("success").run()
    assert set(app.dataframe[1].value["success"]) == {1.0}
    app.text_input(key="browse_text").set_value("onerror").run()
    assert list(app.dataframe[1].value["id"]) == []               # the only match, evil-1, is a failure
    app.selectbox(key="browse_label").set_value("any").run()
    assert list(app.dataframe[1].value["id"]) == ["evil-1"]
    app.text_input(key="browse_text").set_value("").run()
    app.slider(key="browse_range").set_value((0.0, 0.85)).run()
    assert 0 < len(app.dataframe[1].value) < n_all
    assert (app.dataframe[1].value["GlobalTrace-TP"] <= 0.85).all()
    # delete a run set
    before = len(Store(tmp_path / "data").list_run_sets())
    app.checkbox(key="delete_sure").check().run()
    app.button(key="delete_button").click().run()
    assert not problems(app)
    assert len(Store(tmp_path / "data").list_run_sets()) == before - 1


def test_model_download_and_upload_round_trip(app, tmp_path, monkeypatch):
    captured: dict[str, bytes] = {}
    orig = MemoryMediaFileStorage.load_and_get_id

    def capture(self, path_or_data, mimetype, kind, filename=None):
        fid = orig(self, path_or_data, mimetype, kind, filename)
        captured[fid] = path_or_data if isinstance(path_or_data, bytes) else str(path_or_data).encode()
        return fid

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", capture)
    app.run()
    go(app, "calibration")
    app.radio(key="fit_variant").set_value("full").run()
    app.button(key="fit_button").click().run()
    assert not problems(app)
    dl = app.get("download_button")
    assert dl and dl[0].proto.label == "Download the model (JSON)"
    fid = Path(dl[0].proto.url).stem
    body = captured[fid]
    model = HTCCalibrator.from_dict(json.loads(body))
    assert model.variant == "full" and model.profile == "paper"
    assert Store(tmp_path / "data").list_models()["variant"].tolist() == ["full"]

    app.file_uploader(key="model_upload").set_value(("model.json", body, "application/json"))
    app.run()
    assert not problems(app)
    assert any(s.value.startswith("Scored 51 trajectories with HTC-Full") for s in app.success)
    scores = [d.value for d in app.dataframe if "htc_confidence" in d.value.columns][0]
    ws = build_workspace(Store(tmp_path / "data"))
    expected = model.predict_proba(ws.features)[:, 1]
    assert np.allclose(scores["htc_confidence"].to_numpy(), expected)

    app.file_uploader(key="model_upload").set_value(("broken.json", b'{"format": "something else"}', "application/json"))
    app.run()
    assert not app.exception
    assert any("broken.json is not a usable model" in e.value.replace("\\", "") for e in app.error)


def test_hostile_trace_text_is_shown_as_text(app):
    app.run()
    at = app
    store = ui.get_store(at.session_state[ui.DATA_DIR])
    key = [k for k in build_workspace(store).keys if k.endswith(":evil-1")][0]
    at.session_state[ui.INSPECT] = key
    go(at, "inspector")
    assert not problems(at)
    html = " ".join(h.proto.body for h in at.get("html"))
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    texts = " ".join(t.value for t in at.text)
    assert HOSTILE_Q in texts                                     # st.text: shown literally, never parsed
    for m in at.markdown:
        assert "<script" not in m.value and "<img" not in m.value
    assert any("Strongest reasons" in m.value for m in at.markdown)


def test_unexpected_errors_show_a_short_message_not_a_traceback(app, monkeypatch):
    app.run()

    def boom(*a, **k):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(ui, "evaluation", boom)
    go(app, "calibration")
    assert not app.exception
    assert any("injected failure" in e.value and "server log" in e.value for e in app.error)


def _labeled_only(tmp_path, monkeypatch, outcomes) -> AppTest:
    """An AppTest whose store starts from a handful of runs with the given outcomes (True/False/None)."""
    d = tmp_path / "few"
    d.mkdir()
    write_jsonl(d / "few.jsonl", [make_traj(f"f{i}", [([-0.05 * (i + 1), -0.3, -0.01], None),
                                                      ([-0.2 * (i % 3 + 1), -0.02], None)], success=ok,
                                            question=f"question {i}", dataset="Few", model="m")
                                  for i, ok in enumerate(outcomes)])
    monkeypatch.setenv("HTC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(d))
    monkeypatch.setattr(compute, "ALPHAS", (0.1, 1.0, 10.0))
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state[ui.SEEDS] = 1
    at.run()
    assert not problems(at)
    return at


def _notes(at) -> str:
    return " ".join(i.value for i in at.info).replace("\\", "")


def test_enough_labels_to_fit_but_not_to_evaluate(tmp_path, monkeypatch):
    outcomes = [True, False] * 3                                  # 6 labeled: a fit works, the nested CV does not
    assert label_problem([float(o) for o in outcomes], for_evaluation=False) is None
    why = label_problem([float(o) for o in outcomes], for_evaluation=True)
    assert why is not None
    at = _labeled_only(tmp_path, monkeypatch, outcomes)
    go(at, "weights")
    assert not problems(at)
    assert len(at.get("plotly_chart")) == 2                       # the two fitted models' weights, no evaluation
    assert why in _notes(at)
    go(at, "calibration")
    assert not problems(at) and why in _notes(at)
    assert not at.get("plotly_chart") and at.button(key="fit_button")
    go(at, "inspector")
    assert not problems(at)
    assert any("Strongest reasons" in m.value for m in at.markdown)
    assert len(at.get("plotly_chart")) == 4       # confidence after each step, timeline, waterfall, position
    for page in ("examples", "compare"):
        go(at, page)
        assert not problems(at) and why in _notes(at), page
        # Compare LLMs still draws what needs no evaluation (the feature distributions); nothing evaluated
        assert [c.key for c in at.get("plotly_chart")] == ([] if page == "examples" else ["cmp_feat"]), page


def test_too_few_labels_to_fit(tmp_path, monkeypatch):
    outcomes = [True, True, False, None, None]                    # one failure: no calibrator can be fitted
    why = label_problem([np.nan if o is None else float(o) for o in outcomes], for_evaluation=False)
    assert why is not None
    at = _labeled_only(tmp_path, monkeypatch, outcomes)
    at.selectbox(key="browse_conf").set_value("HTC-Full (fitted on the selection)").run()
    assert not problems(at) and why in _notes(at)
    # the runs table shows the shipped GAC's zero-shot confidence instead (other tables: load report, shift check)
    assert any("GAC" in d.value.columns for d in at.dataframe)
    assert "zero-shot" in _notes(at) and "labels file" in _notes(at)
    # unlabeled runs: the inspector explains the GAC's confidence (after each step, timeline, waterfall, position)
    for page, charts in (("weights", 0), ("calibration", 0), ("inspector", 4), ("feature_space", 1)):
        go(at, page)
        assert not problems(at), page
        assert len(at.get("plotly_chart")) == charts, page
        if page == "feature_space":
            at.selectbox(key="fs_color").set_value("htc_confidence").run()
            assert not problems(at)
        assert why in _notes(at), page


def test_inspector_shows_flags_first_and_the_run_itself(tmp_path, sample_dir, monkeypatch):
    """A run that ended at its step limit without an answer: the flags come first, every step's text is on
    screen without expanding anything, and the confidence is never shown as a bare 0.00."""
    d = tmp_path / "samples"
    shutil.copytree(sample_dir, d)
    stuck = make_traj("stuck-1", [([-0.3, -2.0, -0.9], None), ([-0.3, -2.2, -0.8], None)], success=False,
                      dataset="arithmetic", model="SmolLM2-135M-greedy", question="What is 6 * 7?", gold="42",
                      metadata={"stop_reason": "step_limit"})
    stuck["steps"][0]["text"] = "Thought: multiply.\nAction: calculator[6 * 7]"
    stuck["steps"][1]["text"] = "Thought: again.\nAction: calculator[6 * 7]"
    write_jsonl(d / "stuck.jsonl", [stuck])
    monkeypatch.setenv("HTC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(d))
    monkeypatch.setattr(compute, "ALPHAS", (1.0,))
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state[ui.SEEDS] = 1
    at.run()
    store = ui.get_store(at.session_state[ui.DATA_DIR])
    at.session_state[ui.INSPECT] = [k for k in build_workspace(store).keys if k.endswith(":stuck-1")][0]
    go(at, "inspector")
    assert not problems(at)
    (warning,) = [w.value for w in at.warning if "Structural flags" in w.value]
    for words in ("ended without a final answer", "stopped at its step or token limit", "repeated the same action"):
        assert words in warning
    texts = [t.value for t in at.text]
    assert "Thought: multiply.\nAction: calculator[6 * 7]" in texts and "Thought: again.\nAction: calculator[6 * 7]" in texts
    assert any("no final answer" in t for t in texts)
    shown = [m.value for m in at.metric]
    assert shown and not any(v in ("0.00", "1.00") for v in shown)


def test_inspector_shows_a_failed_sample_runs_observations_and_answer_vs_gold(app):
    """A real failed sample run opened by URL (/inspector?id=...): every step's tool call and observation and the
    final answer next to the gold answer are on screen without expanding anything."""
    from htc_core.formats import load

    ts, _ = load(REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl")
    first50 = ts.take(range(50))
    fails = [i for i in range(50) if first50.labels[i] == 0 and first50.meta["answer"][i]]
    i = fails[0]
    tid = first50.ids[i]
    app.query_params["id"] = tid
    app.run()
    go(app, "inspector")
    assert not problems(app)
    a, b = first50.traj_offsets[i], first50.traj_offsets[i + 1]
    obs = [o for o in first50.step_field("observation")[a:b] if o]
    assert obs
    texts = [t.value for t in app.text]
    for o in obs:
        assert o in texts                       # the whole observation, as text, in an open step
    assert first50.meta["answer"][i] in texts and first50.meta["gold"][i] in texts
    assert any("Gold answer" in m.value and "wrong" in m.value for m in app.markdown)
    open_md = " ".join(m.value for m in app.markdown)
    assert "observation:" in open_md and "confidence after it" in open_md
    assert any(c.value.startswith("Lowest-probability token") for c in app.caption)
    # nothing of it sits inside a fold: the expanders hold only the long step inputs
    for e in app.expander:
        assert e.label.startswith("Input that came in") or e.label.startswith("Step statistics") \
            or e.label.startswith("Raw contributions"), e.label


def test_inspector_method_lives_in_the_url(app):
    """?method= picks the calibrator that explains the run (a pasted link opens the same view), an unknown name
    is ignored, and the choice is written back to the URL."""
    from htc_core.formats import load

    ts, _ = load(REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl")
    app.query_params["id"] = ts.ids[3]
    app.query_params["method"] = "htc-full"
    app.run()
    go(app, "inspector")
    assert not problems(app)
    radio = next(r for r in app.radio if r.label == "Explained by")
    assert radio.value == "full"
    assert any("HTC-Full confidence" in m.label for m in app.metric)
    app.run()
    assert app.query_params["method"] in ("HTC-Full", ["HTC-Full"])
