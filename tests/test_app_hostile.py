"""Trace text never renders as markdown, LaTeX, emoji or icon shortcodes, or HTML on any page (issue 16).

One trajectory carries a payload with every construct in each of its text fields (id, dataset, model,
question, answer, gold, step names, tokens, step text, metadata); every page is walked with it selected, and
every string Streamlit renders as markdown (markdown, captions, alerts, headings, the labels of expanders, tabs,
metrics and widgets, radio options) is checked; so are the plotly figures (hover text)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import htc_core.app.ui as ui
from htc_core.app.workspace import build_workspace

from apptest_kit import APP, new_app
from conftest import REPO, make_traj, write_jsonl

PAGES = ["runs", "calibration", "weights", "feature_space", "examples", "compare", "inspector", "label"]
PAYLOAD = "**bold** _it_ $$x^2$$ $y$ :red[red] :material/home: :smile: <b>html</b> [link](http://x) ~~s~~"
#: what may not appear in any markdown-rendered string: each construct of the payload, live
LIVE = ["**bold**", "_it_", "$$x^2$$", "$y$", ":red[", ":material/home:", ":smile:", "<b>html</b>", "[link](",
        "~~s~~"]
TEXT_ELEMENTS = ["markdown", "caption", "info", "warning", "error", "success", "title", "header", "subheader",
                 "toast"]
LABELLED = ["expander", "tabs", "metric", "selectbox", "multiselect", "checkbox", "button", "text_input", "radio",
            "number_input", "slider", "toggle", "text_area"]


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    shipped = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    lines = shipped.read_text(encoding="utf-8").splitlines(True)[:40]
    (d / "arithmetic-small.jsonl").write_text("".join(lines), encoding="utf-8")
    evil = make_traj("evil " + PAYLOAD, [([-0.1, -2.0, -0.3], None), ([-0.2, -0.05], None)], success=False,
                     question=PAYLOAD, dataset="ds " + PAYLOAD, model="m " + PAYLOAD, answer=PAYLOAD, gold=PAYLOAD,
                     metadata={"note": PAYLOAD})
    for st_ in evil["steps"]:
        st_["name"] = "step " + PAYLOAD
        st_["text"] = PAYLOAD
        st_["input"] = "Observation: " + PAYLOAD
        st_["observation"] = PAYLOAD
        st_["error"] = "Error: " + PAYLOAD
        st_["tool"] = {"name": "tool " + PAYLOAD, "arguments": PAYLOAD}
    evil["steps"][0]["tokens"] = ["**bold**", " $$x^2$$", " :smile:"]
    write_jsonl(d / "hostile.jsonl", [evil])
    return d


def rendered_strings(at) -> list[tuple[str, str]]:
    """(element kind, string) for everything the page renders as markdown."""
    out = []
    for kind in TEXT_ELEMENTS:
        out += [(kind, str(e.value)) for e in getattr(at, kind, [])]
    for kind in LABELLED:
        for e in getattr(at, kind, []):
            out.append((kind, str(getattr(e, "label", ""))))
            if kind == "radio":
                out += [("radio option", str(o)) for o in e.options]
    return out


def test_every_page_shows_trace_text_inert(sample_dir, tmp_path, monkeypatch):
    at = new_app(monkeypatch, tmp_path / "data", sample_dir, timeout=240)
    at.run()
    store = ui.get_store(at.session_state[ui.DATA_DIR])
    key = [k for k in build_workspace(store).keys if "evil" in k][0]
    seen_escaped = set()
    for page in PAGES:
        at.session_state[ui.INSPECT] = key
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        strings = rendered_strings(at)
        assert strings, page
        for kind, s in strings:
            for live in LIVE:
                assert live not in s, (page, kind, live, s[:300])
            if "evil" in s or "step \\*\\*bold" in s or "ds \\*\\*bold" in s:
                seen_escaped.add((page, kind))
        for chart in at.get("plotly_chart"):
            assert "<b>html</b>" not in chart.proto.spec, page
    # the walk did meet the trace text: the inspector's caption and its per-step summary lines (step name, tool
    # call, observation; a short failed run has every step open, so no step sits in an expander here)
    assert ("inspector", "caption") in seen_escaped and ("inspector", "markdown") in seen_escaped, seen_escaped


def test_md_neutralises_every_construct():
    from htc_core.app.ui import md

    out = md(PAYLOAD + " `code` # h <script>x</script> :+1: :100: 12:30")
    for live in LIVE + ["`code`", "<script>", ":+1:", ":100:"]:
        assert live not in out, live
    assert md(None) == "" and md("plain words, no marks") == "plain words, no marks"


@pytest.fixture
def app(sample_dir, tmp_path, monkeypatch):
    at = new_app(monkeypatch, tmp_path / "data", sample_dir, timeout=240)
    return at


@pytest.mark.parametrize("name", ["native_int400_logprobs.jsonl", "native_int5000_metadata.jsonl",
                                  "calllog_int400_logprob.jsonl", "chat_surrogate_content.jsonl",
                                  "native_cr_only.jsonl"])
def test_hostile_upload_keeps_the_good_part(app, name):
    """The probe's uploads that stopped the page: the valid part is stored, each bad line is listed."""
    import json

    from hostile_records import HOSTILE_DIR
    from test_app import _upload

    app.run()
    expected = json.loads((HOSTILE_DIR / "EXPECTED.json").read_text())[name]
    _upload(app, [(name, (HOSTILE_DIR / name).read_bytes(), "application/jsonl")])
    assert not app.exception and not app.error, [e.value for e in app.error]
    rep = app.session_state[ui.LAST_UPLOAD]
    assert rep["kept"] == len(expected["kept"]) and rep["rejected"] == len(expected["errors"])
    assert [p["line"] for p in rep["problems"] if p["severity"] == "error"] == [e["line"] for e in expected["errors"]]
    assert not app.get("progress")  # no frozen progress bar


@pytest.mark.parametrize("raw,why", [("1e308", "coef[0] = 1e+308"), ("1e-320", "scale[0] = 1e-320"),
                                     ("9" * 400, "does not fit a float64")])
def test_calibration_page_refuses_a_hostile_model(app, raw, why):
    from htc_core.calibration import HTCCalibrator

    app.run()
    ws = build_workspace(ui.get_store(app.session_state[ui.DATA_DIR]))
    lab = ws.labels == ws.labels
    model = HTCCalibrator(alphas=(1.0,)).fit(ws.features.values[lab], ws.labels[lab])   # the stored features
    body = _mutate(model.to_dict(), raw)
    app.switch_page("pages/calibration.py")
    app.run()
    app.file_uploader(key="model_upload").set_value(("evil.json", body, "application/json"))
    app.run()
    assert not app.exception
    errors = " ".join(e.value.replace("\\", "").replace("\u200b", "") for e in app.error)
    assert "evil.json is not a usable model" in errors and why in errors, errors
    assert not any(s.value.startswith("Scored") for s in app.success)


def _mutate(d: dict, raw: str) -> bytes:
    import json

    if "1e308" in raw:
        d["coef"][0] = "__X__"
        return json.dumps(d).replace('"__X__"', "1e308").encode()
    if "1e-320" in raw:
        d["scaler"]["scale"][0] = "__X__"
        return json.dumps(d).replace('"__X__"', "1e-320").encode()
    d["coef"][0] = "__X__"
    return json.dumps(d).replace('"__X__"', "9" * 400).encode()


def test_calibration_page_warns_on_a_small_sample(tmp_path, monkeypatch):
    from test_app import _labeled_only

    at = _labeled_only(tmp_path, monkeypatch, [True, False] * 6)   # 12 labeled, 6 of each
    at.switch_page("pages/calibration.py")
    at.run()
    assert not at.exception
    warnings = " ".join(w.value.replace("\\", "") for w in at.warning)
    assert "Small sample" in warnings and "only 12 labeled trajectories" in warnings and "unstable" in warnings


def test_a_corrupt_store_is_named_not_blamed_on_one_page(sample_dir, tmp_path, monkeypatch):
    """Every page reads the store: the message says the store is broken and how to recover, and does not claim
    that the other pages still work."""
    from htc_core.app.store import DB_FILE

    data = tmp_path / "data"
    data.mkdir()
    (data / DB_FILE).write_bytes(b"this is not a DuckDB database\x00" * 1000)
    monkeypatch.setenv("HTC_DATA_DIR", str(data))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(sample_dir))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    for page in PAGES:
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception, page
        errors = " ".join(e.value.replace("\\", "").replace("\u200b", "") for e in at.error)
        assert "cannot be read" in errors and "HTC_DATA_DIR" in errors, (page, errors)
        assert "the other pages still work" not in errors, page
