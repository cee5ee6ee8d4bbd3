"""The run-set selector and the "Compare run sets" page through AppTest, on the project's own sample runs
(the same 60 arithmetic tasks under greedy and sampled decoding, one run set per file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import htc_core.app.ui as ui
from htc_core.app import ab_views
from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace

from apptest_kit import first_lines, APP, new_app, problems
from conftest import REPO

N = 60


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory) -> Path:
    sources = [REPO / "sample_runs" / "arithmetic" / f"arithmetic_SmolLM2-135M-{tag}.jsonl"
               for tag in ("greedy", "sampled-t0.7")]
    return first_lines(tmp_path_factory.mktemp("ab_samples"), sources, N)


@pytest.fixture
def app(tmp_path, sample_dir, monkeypatch):
    at = new_app(monkeypatch, tmp_path / "data", sample_dir, timeout=240)
    return at


def _run_set_select(at):
    return next(m for m in at.sidebar.multiselect if m.label == "Run sets")


def test_run_set_selector_scopes_every_page(app):
    app.run()
    assert not problems(app)
    sel = _run_set_select(app)
    names = {o for o in sel.options}
    assert names == {"sample: arithmetic_SmolLM2-135M-greedy.jsonl", "sample: arithmetic_SmolLM2-135M-sampled-t0.7.jsonl"}
    assert any(f"{2 * N} of {2 * N} trajectories selected" in c.value for c in app.sidebar.caption)
    listing = Store(app.session_state[ui.DATA_DIR]).list_run_sets()
    greedy = listing.loc[listing["name"].str.contains("greedy"), "id"].item()
    # (AppTest keeps no sidebar element after the first run, so the choice goes in through session state;
    # the browser test clicks the real widget)
    app.session_state[ui.RUNSETS] = [greedy]
    app.run()
    assert not problems(app)
    # the pages see the chosen run set only (the Runs page's table: pages read ui.workspace(), which applies it)
    runs_table = app.dataframe[1].value
    assert len(runs_table) == N and runs_table["model"].eq("SmolLM2-135M-greedy").all()


def test_compare_run_sets_page_defaults_to_the_two_decoding_configurations(app):
    app.run()
    app.switch_page("pages/compare_runsets.py").run()
    assert not problems(app), problems(app)
    assert app.title[0].value == "Compare run sets"
    a = next(m for m in app.multiselect if m.label.startswith("A "))
    b = next(m for m in app.multiselect if m.label.startswith("B "))
    store = Store(app.session_state[ui.DATA_DIR])
    names = dict(zip(store.list_run_sets()["id"], store.list_run_sets()["name"]))
    assert [names[v] for v in a.value] == ["sample: arithmetic_SmolLM2-135M-greedy.jsonl"]
    assert [names[v] for v in b.value] == ["sample: arithmetic_SmolLM2-135M-sampled-t0.7.jsonl"]
    # the chips show the names without the shared "sample: " and ".jsonl"; a caption lists the full names
    # (ui-review 23: the chips were cut); AppTest's formatted options are the chips' texts
    assert [a.format_func(o) for o in a.value] == ["arithmetic_SmolLM2-135M-greedy"]
    captions = [c.value.replace("\\", "") for c in app.caption]       # names are escaped for Markdown
    assert any(c.startswith("A (1 run set, 60 runs): sample: arithmetic_SmolLM2-135M-greedy.jsonl") for c in captions)
    assert any(c.startswith("B (1 run set, 60 runs): sample: arithmetic_SmolLM2-135M-sampled-t0.7.jsonl")
               for c in captions)
    metric_table = app.dataframe[0].value
    assert list(metric_table["metric"]) == ["ECE ↓", "Brier ↓", "AUROC ↑", "verdict accuracy ↑", "success rate ↑"]
    # the verdict sits next to the metric; the sides are "A" and "B" (ui-review 26: at 900 px a run set's name as a
    # header pushed the verdict out of sight)
    assert list(metric_table.columns) == ["metric", "difference", "A", "B", "B − A", "n (A / B)"]
    assert len(app.get("plotly_chart")) == 3          # reliability overlay, differences, feature shifts
    assert any("Runs whose verdict flipped" in m.value and f"of {N} paired runs" in m.value for m in app.markdown)

    # the page's numbers are the library's on the same runs
    ws = build_workspace(store)
    flipped_caption = next(m.value for m in app.markdown if "Runs whose verdict flipped" in m.value)
    shown = int(flipped_caption.split("(")[1].split(" of")[0].replace(",", ""))
    flipped_rows = app.dataframe[2].value if shown else None
    if shown:
        assert len(flipped_rows) == shown and {"id A", "id B", "verdict A", "verdict B"} <= set(flipped_rows.columns)
        assert (flipped_rows["verdict A"] != flipped_rows["verdict B"]).all()
        task = lambda s: s.rsplit("-SmolLM2", 1)[0]  # noqa: E731
        assert all(task(x) == task(y) for x, y in zip(flipped_rows["id A"], flipped_rows["id B"]))
    assert len(ws) == 2 * N

    # equal-mass bins and the calibrator mode
    app.radio(key="ab_binning").set_value("quantile").run()
    assert not problems(app)
    app.radio(key="ab_mode").set_value("calibrators").run()
    assert not problems(app), problems(app)
    assert any("paired" in c.value for c in app.caption)
    assert any(f"of {2 * N} paired runs" in m.value for m in app.markdown)


def test_default_sides_and_inputs_on_real_runs(tmp_path, sample_dir):
    from htc_core.app.ingest import ensure_samples

    store = Store(tmp_path / "d")
    ensure_samples(store, sample_dir)
    ws = build_workspace(store)
    names = dict(zip(store.list_run_sets()["id"], store.list_run_sets()["name"]))
    a, b = ab_views.default_sides(ws, names)
    assert ["greedy" in names[a[0]], "sampled" in names[b[0]]] == [True, True]
    with pytest.raises(ValueError, match="both sides"):
        ab_views.run_set_inputs(ws, None, "x", a, a, names)
    with pytest.raises(ValueError, match="at least one run set"):
        ab_views.run_set_inputs(ws, None, "x", [], b, names)
    assert np.isin(ws.run_set[ab_views.side_positions(ws, a)], a).all()


def test_the_comparison_lives_in_the_url_and_a_link_restores_it(app, tmp_path, sample_dir, monkeypatch):
    """The page writes its choices into the URL (run sets by id, method, binning, threshold); a new session
    opened on that URL (a reload, a pasted link) shows the same comparison. A link may name a run set; an
    unknown method falls back to the page's default."""
    app.run()
    app.switch_page("pages/compare_runsets.py").run()
    assert not problems(app), problems(app)
    app.selectbox(key="ab_method").set_value("HTC-Full")
    app.radio(key="ab_binning").set_value("quantile")
    app.slider(key="ab_threshold").set_value(0.7).run()
    assert not problems(app), problems(app)
    url = {k: app.query_params[k] for k in ("ab", "a", "b", "conf", "bins", "trust")}   # (AppTest: last values)
    store = Store(app.session_state[ui.DATA_DIR])
    names = dict(zip(store.list_run_sets()["id"], store.list_run_sets()["name"]))
    assert url["ab"] == "runsets" and url["conf"] == "HTC-Full" and url["bins"] == "quantile"
    assert url["trust"] == "0.70" and names[url["a"]].endswith("greedy.jsonl")
    table = app.dataframe[0].value          # the metric table

    # a new session on the swapped link (B named by its run set name): the same view, sides swapped
    fresh = AppTest.from_file(APP, default_timeout=240)
    fresh.session_state[ui.SEEDS] = 1
    fresh.query_params.update({"ab": "runsets", "a": url["b"], "b": names[url["a"]], "conf": "htc-full",
                               "bins": "quantile", "trust": "0.7"})
    fresh.switch_page("pages/compare_runsets.py").run()
    assert not problems(fresh), problems(fresh)
    assert fresh.multiselect(key="ab_a").value == [url["b"]] and fresh.multiselect(key="ab_b").value == [url["a"]]
    assert fresh.selectbox(key="ab_method").value == "HTC-Full"
    assert fresh.radio(key="ab_binning").value == "quantile" and fresh.slider(key="ab_threshold").value == 0.7
    swapped = fresh.dataframe[0].value
    assert list(swapped["metric"]) == list(table["metric"])

    # the calibrator mode from a link, one method unknown
    other = AppTest.from_file(APP, default_timeout=240)
    other.session_state[ui.SEEDS] = 1
    other.query_params.update({"ab": "calibrators", "ma": "Tail+Platt", "mb": "no-such-method"})
    other.switch_page("pages/compare_runsets.py").run()
    assert not problems(other), problems(other)
    assert other.radio(key="ab_mode").value == "calibrators"
    assert other.selectbox(key="ab_method_a").value == "Tail+Platt"
    assert other.selectbox(key="ab_method_b").value == "HTC-Reduced"
    assert "a" not in other.query_params and other.query_params["mb"] == "HTC-Reduced"


def test_short_run_set_names_stay_unambiguous():
    """The pickers' labels drop only what every name shares at a word boundary (the "SOURCE: " prefix, the file
    extension); a name stays whole where that would leave it empty or equal to another's."""
    samples = {"g": "sample: facts_SmolLM2-135M-greedy.jsonl", "s": "sample: facts_SmolLM2-135M-sampled-t0.7.jsonl"}
    assert ab_views.short_names(samples) == {"g": "facts_SmolLM2-135M-greedy", "s": "facts_SmolLM2-135M-sampled-t0.7"}
    mixed = {**samples, "u": "my runs.jsonl"}                      # an upload: no prefix shared by all
    assert ab_views.short_names(mixed) == {"g": "sample: facts_SmolLM2-135M-greedy", "u": "my runs",
                                           "s": "sample: facts_SmolLM2-135M-sampled-t0.7"}
    alike = {"a": "up: x.jsonl", "b": "up: x.jsonl"}               # two uploads of one file name
    assert ab_views.short_names(alike) == alike
    assert ab_views.short_names({"a": "up: .jsonl", "b": "up: a.jsonl"}) == {"a": "up: .jsonl", "b": "a"}
    assert ab_views.short_names({"a": "only one.jsonl"}) == {"a": "only one.jsonl"}
    assert ab_views.short_names({"a": "x", "b": "y"}) == {"a": "x", "b": "y"}
    assert ab_views.side_caption("A", [], samples, 0) == "A: no run set chosen"
    assert ab_views.side_caption("B", ["g", "s"], samples, 1234) == \
        "B (2 run sets, 1,234 runs): sample: facts_SmolLM2-135M-greedy.jsonl, sample: facts_SmolLM2-135M-sampled-t0.7.jsonl"
