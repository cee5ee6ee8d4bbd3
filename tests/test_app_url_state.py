"""Every page's view round-trips through its URL (issue 27 item 6): set the widgets in one AppTest session,
read its query parameters, open a new session on them and find the same widget values; junk in a link
(unknown options, inf, huge strings) is ignored without an exception. On the project's own sample runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from streamlit.testing.v1 import AppTest

import htc_core.app.compute as compute
import htc_core.app.ui as ui
from htc_core.app import url_state
from htc_core.app.url_state import Param

from apptest_kit import first_lines, APP, problems
from conftest import REPO

N = 60

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory) -> Path:
    sources = [REPO / "sample_runs" / "arithmetic" / f"arithmetic_SmolLM2-135M-{tag}.jsonl"
               for tag in ("greedy", "sampled-t0.7")]
    return first_lines(tmp_path_factory.mktemp("url_samples"), sources, N)


@pytest.fixture
def new_app(tmp_path, sample_dir, monkeypatch):
    monkeypatch.setenv("HTC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(sample_dir))
    monkeypatch.setattr(compute, "ALPHAS", (0.1, 1.0, 10.0))

    def make(params: dict | None = None, page: str = "runs") -> AppTest:
        at = AppTest.from_file(APP, default_timeout=240)
        at.session_state[ui.SEEDS] = 1
        at.query_params.update(params or {})
        if page != "runs":
            at.switch_page(f"pages/{page}.py")
        return at.run()
    return make


def page_params(at) -> dict:
    """The page's own parameters (the sidebar's are not part of these tests)."""
    return {k: v for k, v in at.query_params.items() if k not in ("runsets", "datasets", "models", "id", "method")}


# ------------------------------------------------------------------ parsing, without Streamlit
P_ONE = Param("m", "k", "one", ("HTC-Reduced", "HTC-Full", 100))
P_INT = Param("n", "k", "int", bounds=(1, 20))
P_RANGE = Param("r", "k", "range")
P_FLOAT = Param("t", "k", "float", step=0.01)


def test_parse_takes_known_values_and_drops_junk():
    assert url_state.parse(P_ONE, ["htc-full"]) == "HTC-Full" and url_state.parse(P_ONE, ["100"]) == 100
    assert url_state.parse(P_ONE, ["no-such-method"]) is None
    assert url_state.parse(P_INT, ["inf"]) is None and url_state.parse(P_INT, ["1e309"]) is None
    assert url_state.parse(P_INT, ["nan"]) is None and url_state.parse(P_INT, ["500"]) == 20
    assert url_state.parse(P_RANGE, ["0.9", "0.2"]) == (0.2, 0.9) and url_state.parse(P_RANGE, ["0.2"]) is None
    assert url_state.parse(P_FLOAT, ["0.7333"]) == 0.73 and url_state.parse(P_FLOAT, ["-3"]) == 0.0
    assert url_state.parse(Param("q", "k", "text"), ["x" * 10_000]) is None
    assert url_state.parse(Param("d", "k", "bool"), ["maybe"]) is None
    assert url_state.parse(Param("d", "k", "many", ("a", "b")), ["b", "zz", "a", "b"]) == ["b", "a"]


@settings(max_examples=300, deadline=None)
@given(kind=hs.sampled_from(["one", "many", "int", "float", "range", "text", "bool"]),
       values=hs.lists(hs.text(max_size=300), max_size=4))
def test_parse_never_raises_and_stays_in_bounds(kind, values):
    p = Param("x", "k", kind, options=("a", "b", 50), bounds=(1, 20) if kind == "int" else (0.0, 1.0), step=0.05)
    value = url_state.parse(p, values)
    if value is None:
        return
    if kind == "one":
        assert value in p.options
    elif kind == "many":
        assert value and set(value) <= set(p.options)
    elif kind in ("int", "float"):
        assert p.bounds[0] <= value <= p.bounds[1]
    elif kind == "range":
        assert 0.0 <= value[0] <= value[1] <= 1.0
    assert encode_decodes(p, value)


def encode_decodes(p: Param, value) -> bool:
    encoded = url_state.encode(p, value)
    return not encoded or url_state.parse(p, encoded) == value


# ------------------------------------------------------------------ pages
def test_runs_filters_sort_and_page_round_trip(new_app):
    at = new_app()
    assert not problems(at), problems(at)
    assert set(page_params(at)) == {"conf"}       # an untouched page keeps a short URL: the confidence in use
    at.selectbox(key="browse_label").set_value("failure")
    at.slider(key="browse_range").set_value((0.0, 0.99))
    at.selectbox(key="browse_sort").set_value("steps")
    at.toggle(key="browse_desc").set_value(True)
    at.selectbox(key="browse_page_size").set_value(50)
    at.text_input(key="browse_text").set_value("How")
    at.run()
    at.number_input(key="browse_page").set_value(2).run()
    assert not problems(at), problems(at)
    assert any("rows 51–" in c.value for c in at.caption), [c.value for c in at.caption]
    url = page_params(at)
    assert url["label"] == "failure" and url["sort"] == "steps" and url["desc"] == "1" and url["size"] == "50"
    assert url["range"] == ["0", "0.99"] and url["q"] == "How" and url["page"] == "2"
    table = at.dataframe[-1].value

    fresh = new_app(url)
    assert not problems(fresh), problems(fresh)
    for key, value in (("browse_label", "failure"), ("browse_sort", "steps"), ("browse_page_size", 50)):
        assert fresh.selectbox(key=key).value == value
    assert fresh.toggle(key="browse_desc").value is True and fresh.number_input(key="browse_page").value == 2
    assert fresh.slider(key="browse_range").value == (0.0, 0.99) and fresh.text_input(key="browse_text").value == "How"
    assert fresh.selectbox(key="browse_conf").value == at.selectbox(key="browse_conf").value == url["conf"]
    assert list(fresh.dataframe[-1].value["id"]) == list(table["id"])
    assert page_params(fresh) == url


def test_runs_link_with_junk_is_ignored(new_app):
    at = new_app({"label": "nonsense", "sort": "<script>", "page": "inf", "size": "1e309", "range": ["nan", "2"],
                  "q": "x" * 5000, "desc": "maybe", "ds": "no-such-dataset", "flags": "zzz", "conf": "?"})
    assert not problems(at), problems(at)
    assert at.selectbox(key="browse_label").value == "any" and at.selectbox(key="browse_sort").value == "confidence"
    assert at.number_input(key="browse_page").value == 1 and at.text_input(key="browse_text").value == ""
    assert at.multiselect(key="browse_ds").value == [] and at.slider(key="browse_range").value == (0.0, 1.0)
    # a page past the end is clamped to the last one
    last = new_app({"page": "999", "size": "50"})
    assert not problems(last), problems(last)
    assert last.number_input(key="browse_page").value == 3


def test_calibration_choices_round_trip(new_app):
    at = new_app(page="calibration")
    assert not problems(at), problems(at)
    at.radio(key="cal_binning").set_value("quantile")
    at.slider(key="cal_sel_threshold").set_value(0.7)
    hist = next(s for s in at.selectbox if s.key.startswith("cal_hist_"))
    hist.set_value("HTC-Full")
    at.run()
    assert not problems(at), problems(at)
    url = page_params(at)
    assert url["binning"] == "quantile" and url["threshold"] == "0.7" and url["hist"] == "HTC-Full"

    fresh = new_app(url, page="calibration")
    assert not problems(fresh), problems(fresh)
    assert fresh.radio(key="cal_binning").value == "quantile"
    assert fresh.slider(key="cal_sel_threshold").value == 0.7
    assert next(s for s in fresh.selectbox if s.key.startswith("cal_hist_")).value == "HTC-Full"
    methods = next(m for m in fresh.multiselect if m.key.startswith("cal_methods_")).value
    assert methods == (url["methods"] if isinstance(url["methods"], list) else [url["methods"]])

    junk = new_app({"binning": "cubic", "threshold": "inf", "hist": "nope", "methods": "nope"}, page="calibration")
    assert not problems(junk), problems(junk)
    assert junk.radio(key="cal_binning").value == "uniform" and junk.slider(key="cal_sel_threshold").value == 0.5


def test_feature_space_and_examples_round_trip(new_app):
    at = new_app(page="feature_space")
    assert not problems(at), problems(at)
    at.selectbox(key="fs_color").set_value("success").run()
    url = page_params(at)
    assert url == {"colour": "success"}
    fresh = new_app({**url, "proj": "tsne"}, page="feature_space")
    assert not problems(fresh), problems(fresh)
    assert fresh.selectbox(key="fs_color").value == "success" and fresh.radio(key="fs_method").value == "tsne"
    assert page_params(fresh) == {"colour": "success", "proj": "tsne"}

    ex = new_app(page="examples")
    assert not problems(ex), problems(ex)
    ex.number_input(key="ex_n").set_value(2)
    ex.selectbox(key="ex_htc").set_value("HTC-Full")
    ex.run()
    url = page_params(ex)
    assert url["n"] == "2" and url["htc"] == "HTC-Full"
    again = new_app(url, page="examples")
    assert not problems(again), problems(again)
    assert again.number_input(key="ex_n").value == 2 and again.selectbox(key="ex_htc").value == "HTC-Full"
    assert again.selectbox(key="ex_baseline").value == url["baseline"]
    junk = new_app({"n": "1e309", "htc": "x" * 400, "baseline": "nope"}, page="examples")
    assert not problems(junk), problems(junk)
    assert junk.number_input(key="ex_n").value == 4


def test_drill_down_selections_round_trip(new_app):
    """A link names the clicked bins (reliability: method:bin, histogram: outcome:bin) or points; the new session
    lists the same runs and keeps the selection in its URL; junk is dropped."""
    every_bin = ",".join(f"HTC-Reduced:{b}" for b in range(10))
    at = new_app({"methods": "HTC-Reduced", "rel": every_bin}, page="calibration")
    assert not problems(at), problems(at)
    listed = [m.value for m in at.markdown if "runs: bin" in m.value]
    assert listed and listed[0].startswith(f"**{2 * N} runs: bin"), listed
    assert at.query_params["rel"] == every_bin

    bar = new_app({"hist": "HTC-Reduced", "bar": "failure:0,failure:1,failure:2,failure:3,failure:4"},
                  page="calibration")
    assert not problems(bar), problems(bar)
    listed = [m.value for m in bar.markdown if "runs: failures with HTC" in m.value]
    assert listed, [m.value for m in bar.markdown]
    assert bar.query_params["bar"].startswith("failure:0")

    junk = new_app({"rel": "HTC-Reduced:99,nope:1,:,HTC-Reduced:-1," + "x" * 3000, "bar": "inf:inf"},
                   page="calibration")
    assert not problems(junk), problems(junk)
    assert not [m.value for m in junk.markdown if "runs: bin" in m.value] and "rel" not in junk.query_params

    fs = new_app({"pts": "0,5,7,99999,abc"}, page="feature_space")
    assert not problems(fs), problems(fs)
    assert any(m.value.startswith("**3 runs: 3 selected points") for m in fs.markdown)
    assert fs.query_params["pts"] == "0,5,7"


def test_a_runs_link_to_out_of_fold_confidences_waits_for_them(new_app):
    """On a fresh store nothing is evaluated yet, so the out-of-fold option does not exist until the evaluation
    is done: a link that names it computes it first instead of dropping the choice."""
    at = new_app({"conf": "HTC-Full (out-of-fold)", "sort": "confidence", "desc": "1"})
    assert not problems(at), problems(at)
    assert at.selectbox(key="browse_conf").value == "HTC-Full (out-of-fold)"
    assert at.query_params["conf"] == "HTC-Full (out-of-fold)"
    assert "HTC-Full (OOF)" in at.dataframe[-1].value.columns


def test_compare_side_by_side_and_weights_round_trip(new_app):
    """Compare LLMs (grouping, methods, feature), Side by side (the two runs, the explaining calibrator) and Feature
    weights (non-zero only, heatmap variant) keep their choices in the URL; a link naming a run that is not here
    says so; junk is ignored."""
    cmp = new_app(page="compare")
    assert not problems(cmp), problems(cmp)
    assert page_params(cmp) == {}                        # an untouched page keeps a short URL
    cmp.radio(key="cmp_group").set_value("dataset")
    cmp.multiselect(key="cmp_methods").set_value(["HTC-Full"])
    cmp.selectbox(key="cmp_feature").select_index(0)
    cmp.run()
    url = page_params(cmp)
    assert url["group"] == "dataset" and url["methods"] == "HTC-Full" and "feature" in url
    again = new_app(url, page="compare")
    assert not problems(again), problems(again)
    assert again.radio(key="cmp_group").value == "dataset" and again.multiselect(key="cmp_methods").value == ["HTC-Full"]
    assert again.selectbox(key="cmp_feature").value == cmp.selectbox(key="cmp_feature").value
    assert page_params(again) == url
    junk = new_app({"group": "<b>", "methods": ["nope", "HTC-Full"], "feature": "1e309"}, page="compare")
    assert not problems(junk), problems(junk)
    assert junk.radio(key="cmp_group").value == "model" and junk.multiselect(key="cmp_methods").value == ["HTC-Full"]

    sbs = new_app(page="side_by_side")
    assert not problems(sbs), problems(sbs)
    b = next(s for s in sbs.selectbox if s.key.startswith("sbs_pick_B"))
    b.select_index(3)
    sbs.radio(key="sbs_variant").set_value("full")
    sbs.run()
    assert not problems(sbs), problems(sbs)
    url = page_params(sbs)
    assert url["by"] == "full" and url["ra"] and url["rb"] and url["ra"] != url["rb"]
    shown = [m.label + m.value for m in sbs.metric]
    again = new_app(url, page="side_by_side")
    assert not problems(again), problems(again)
    assert again.radio(key="sbs_variant").value == "full" and page_params(again) == url
    assert [m.label + m.value for m in again.metric] == shown            # the same two runs, the same numbers
    lost = new_app({"ra": "nosuchrun", "rb": url["rb"]}, page="side_by_side")
    assert not problems(lost), problems(lost)
    assert any("No trajectory nosuchrun" in w.value for w in lost.warning)
    assert page_params(lost)["rb"] == url["rb"]

    w = new_app(page="weights")
    assert not problems(w), problems(w)
    # the heatmap defaults to HTC-Reduced like every other model choice of the page (ui-review 21: it defaulted to
    # HTC-Full while the selection frequencies and the ablation showed HTC-Reduced), so the non-default is "full"
    assert w.radio(key="w_heat_variant").value == "reduced"
    w.toggle(key="w_only_kept").set_value(True)
    w.radio(key="w_heat_variant").set_value("full")
    w.run()
    url = page_params(w)
    assert url == {"kept": "1", "heat": "full"}
    again = new_app(url, page="weights")
    assert not problems(again), problems(again)
    assert again.toggle(key="w_only_kept").value is True and again.radio(key="w_heat_variant").value == "full"


def test_clear_the_filters_selects_every_run_again(new_app):
    """The sidebar's "Clear the filters" (also each tab's first st.button, so the Label page's keys are live at
    once: docs/labeling.md): disabled while nothing is filtered; clears run sets, datasets and models, and the URL."""
    at = new_app()
    assert at.button(key="sidebar_clear").disabled
    models = at.multiselect(key=ui.MODELS)
    models.set_value([models.options[0]]).run()
    assert at.query_params.get("models") and not at.button(key="sidebar_clear").disabled
    at.button(key="sidebar_clear").click().run()
    assert at.multiselect(key=ui.MODELS).value == [] and at.multiselect(key=ui.RUNSETS).value == []
    assert "models" not in at.query_params and at.button(key="sidebar_clear").disabled
    assert not problems(at)


def test_the_models_chips_are_short_and_the_url_keeps_full_names(new_app):
    """docs/ui-review.md 37: two chosen models were cut to "SmolLM2-135M-gre…" / "SmolLM2-135M-sa…". The chips
    show short labels (layout.chip_labels), the value, the URL and a pasted link keep the full names, and the
    caption under the picker names the chosen models in full."""
    at = new_app()
    models = at.multiselect(key=ui.MODELS)
    full = ["SmolLM2-135M-greedy", "SmolLM2-135M-sampled-t0.7"]
    assert list(models.options) == ["SmolLM2…greedy", "SmolLM2…t0.7"]
    models.set_value(full).run()
    assert at.multiselect(key=ui.MODELS).value == full
    assert at.query_params["models"] == full
    assert any("models: SmolLM2\\-135M\\-greedy, SmolLM2\\-135M\\-sampled\\-t0\\.7" in c.value
               for c in at.sidebar.caption), [c.value for c in at.sidebar.caption]
    again = new_app({"models": full})
    assert again.multiselect(key=ui.MODELS).value == full and not problems(again)
