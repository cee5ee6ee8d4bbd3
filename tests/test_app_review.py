"""What a demanding new user found wrong on the dashboard (the ui-review pass, docs/ui-review.md), each fixed
and checked here: Side by side opened on one run twice, the inspector cut its in-sample metric's label, and the
Examples page's worst mistakes gave a reason that pushed the confidence the right way ("why was this success
doubted?" answered by a reason that raised its confidence). On the project's own sample runs."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from htc_core.app import views

from apptest_kit import first_lines, go, new_app, problems, SAMPLE_RUNS
from conftest import REPO

pytestmark = pytest.mark.app


def test_partner_is_the_same_question_by_another_model_else_another_run():
    frame = pd.DataFrame({"question": ["q1", "q2", "q1", "q1", None, None],
                          "model": ["a", "a", "a", "b", "a", "b"],
                          "steps": [3, 9, 4, 2, 5, 1]})
    assert views.partner(frame, 0) == 3          # same question, other model
    assert views.partner(frame, 3) == 0          # and back
    assert views.partner(frame, 2) == 3
    assert views.partner(frame, 1) == 4          # no other run of q2: the longest other trajectory (not itself)
    assert views.partner(frame, 4) == 1          # a missing question matches nothing
    assert views.partner(frame.iloc[:1], 0) == 0  # one run: itself, nothing else to show


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    sources = [SAMPLE_RUNS / "arithmetic" / f"arithmetic_SmolLM2-135M-{tag}.jsonl" for tag in ("greedy", "sampled-t0.7")]
    return first_lines(tmp_path_factory.mktemp("review_samples"), sources, 60)


@pytest.fixture
def app(tmp_path, sample_dir, monkeypatch):
    at = new_app(monkeypatch, tmp_path / "data", sample_dir)
    at.run()
    assert not problems(at), problems(at)
    return at


def _picked(at, side: str) -> str:
    return next(s for s in at.selectbox if s.key.startswith(f"sbs_pick_{side}")).value


def test_side_by_side_opens_on_two_different_runs_of_one_question(app):
    go(app, "side_by_side")
    assert not problems(app), problems(app)
    frame = app.session_state["sbs_shown"]
    assert frame[0] != frame[1]                       # never the same run twice
    a, b = _picked(app, "A"), _picked(app, "B")
    assert a != b
    ids = [c.value.split(" · ")[0] for c in app.caption if " steps · " in c.value]
    assert len(ids) == 2 and ids[0] != ids[1]
    # the same task by the other model (greedy vs sampled): the ids differ by the model part only
    assert re.sub(r"-SmolLM2.*", "", ids[0]) == re.sub(r"-SmolLM2.*", "", ids[1])
    app.run()                                          # a rerun keeps the pair
    assert app.session_state["sbs_shown"] == frame


def test_inspector_metric_labels_are_short_enough_to_show_whole(app):
    go(app, "inspector")
    assert not problems(app), problems(app)
    labels = [m.label for m in app.metric]
    assert any(lab.endswith("(in-sample)") for lab in labels), labels
    assert all(len(lab) <= 36 for lab in labels), labels      # a quarter of the page: about 36 characters fit


def test_worst_mistakes_give_the_reason_that_pushed_the_wrong_way(app):
    go(app, "examples")
    assert not problems(app), problems(app)
    top = "Top reason for the mistake: "
    reasons = [c.value.removeprefix(top).replace("\\", "") for c in app.caption if c.value.startswith(top)]
    n = len([b for b in app.button if b.label == "Open in the inspector"])
    assert len(reasons) == n == 8                     # 4 per side
    failures, successes = reasons[:4], reasons[4:]   # left column (confident failures) first
    assert all("raises the confidence" in r for r in failures), failures
    assert all("lowers the confidence" in r for r in successes), successes
    logits = [float(re.search(r"logit ([-+0-9.]+)\)", r).group(1)) for r in reasons]   # (markdown escapes removed)
    assert all(v > 0 for v in logits[:4]) and all(v < 0 for v in logits[4:]), logits


def test_blank_missing_shows_a_dash_not_the_word_none():
    frame = pd.DataFrame({"dataset": ["a", None, float("nan"), "  "], "line": [3.0, float("nan"), 7.0, 1.0],
                          "steps": [1, 2, 3, 4]})
    out = views.blank_missing(frame, ["dataset", "line", "absent"])
    assert list(out["dataset"]) == ["a", "—", "—", "—"]
    assert list(out["line"]) == ["3", "—", "7", "1"]         # whole numbers keep their integer form
    assert list(out["steps"]) == [1, 2, 3, 4] and pd.isna(frame["dataset"].iat[1])   # others, and the input, untouched


def test_upload_report_and_browse_table_show_no_none_and_sort_names_no_stale_column(app):
    foreign = REPO / "tests" / "fixtures" / "foreign"
    files = [(f.name, f.read_bytes(), "application/octet-stream")
             for f in (foreign / "otel_phoenix.parquet", foreign / "react_calllog.jsonl", REPO / "docs" / "house.md")]
    app.file_uploader(key="upload_files").set_value(files)
    next(b for b in app.button if b.label == "Upload and store").click()
    app.run()
    assert not problems(app), problems(app)
    report = next(d.value for d in app.dataframe if "severity" in d.value.columns)
    assert len(report) >= 2 and "house.md" in set(report["file"])
    for c in ("trajectory", "field", "value"):      # (line stays a number column, so that it sorts as numbers)
        assert not report[c].isna().any() and "None" not in set(report[c]), (c, list(report[c]))
    browse = next(d.value for d in app.dataframe if "question" in d.value.columns)
    for c in ("dataset", "model", "question"):
        assert not browse[c].isna().any() and "None" not in set(browse[c]), (c, list(browse[c]))
    sort = app.selectbox(key="browse_sort")
    assert sort.options[0] == "confidence (the column chosen above)"


def test_md_code_shows_backticked_parts_as_code_and_escapes_the_rest():
    from htc_core.app.layout import md, md_code

    line = "fitted on 2026-11-27 (as `htc fit --prior gac`), saved as model `f0bf17a96935` by <b>*me*</b>"
    out = md_code(line)
    assert "`htc fit --prior gac`" in out and "`f0bf17a96935`" in out      # code spans, backticks unescaped
    assert "<b>" not in out and "\\*me\\*" in out                          # the rest is inert, as md makes it
    assert out.startswith(md("fitted on 2026-11-27 (as "))
    assert md_code("one ` unmatched") == md("one ` unmatched")             # no half code span
    assert md_code("no code at all") == md("no code at all")


def test_feature_weights_default_to_one_model_everywhere(app):
    """ui-review 21: the selection frequencies and the ablation defaulted to HTC-Reduced, the per-dataset heatmap
    to HTC-Full; every model choice of the page now starts on HTC-Reduced (the model the other pages show)."""
    go(app, "weights")
    assert not problems(app), problems(app)
    assert app.radio(key="w_heat_variant").value == "reduced"
    assert app.radio(key="w_heat_variant").options[0] == "HTC-Reduced"
    sel = [r for r in app.radio if r.key == "w_sel_method"]
    assert not sel or sel[0].value == "HTC-Reduced"


def test_a_blank_row_of_the_dataset_heatmap_says_why():
    """ui-review 21: the "lists" row of the per-dataset weights was all near zero without a word. On the shipped
    runs' lists (16 labeled runs: tasks 0-7 of each Gemma lists file, the whole files before they grew) and facts
    (250) datasets, HTC-Full: lists' inner CV picks alpha 20, facts' 0.001."""
    import numpy as np

    from htc_core.explain.groups import dataset_weights
    from htc_core.features import extract
    from htc_core.formats import load

    lists = [load(f)[0] for f in sorted((SAMPLE_RUNS / "gemma3").glob("lists_*.jsonl"))]
    lists = [t.take(np.flatnonzero([int(i.split("-")[1]) < 8 for i in t.ids])) for t in lists]
    sets = [*lists, load(SAMPLE_RUNS / "facts" / "facts_SmolLM2-135M-greedy.jsonl")[0]]
    X = np.vstack([extract(t).values for t in sets])
    y = np.concatenate([t.labels for t in sets])
    g = np.concatenate([t.meta["dataset"].to_numpy(dtype=object) for t in sets])
    dw = dataset_weights(X, y, g, variant="full")
    assert list(dw.fits.index) == list(dw.weights.index)
    assert dw.fits.loc["lists", "n"] == sum(np.isfinite(t.labels).sum() for t in sets[:2]) == 16
    notes = views.faint_rows(dw)
    peak = dw.weights.abs().max(axis=1)
    faint = [grp for grp in peak.index if peak[grp] < views.FAINT_SHARE * peak.max()]
    assert [n.split(":")[0] for n in notes] == faint
    assert faint == ["lists"]
    if "lists" in faint:
        [note] = [n for n in notes if n.startswith("lists")]
        assert "only 16 labeled runs (5 successes)" in note and "alpha 20, strong regularization" in note
    hand = type(dw)(variant="full", weights=pd.DataFrame({"a": [5.0, 0.1], "b": [-3.0, 0.05]}, index=["big", "tiny"]),
                    fits=pd.DataFrame({"n": [500, 16], "successes": [200, 5], "alpha": [0.01, 20.0]},
                                      index=["big", "tiny"]))
    [note] = views.faint_rows(hand)
    assert note.startswith("tiny: largest |weight| 0.10, under 10% of the colour scale's ±5.0 (set by big)")
    assert "only 16 labeled runs (5 successes)" in note and "alpha 20, strong regularization" in note
    hand.fits.loc["tiny", ["n", "alpha"]] = [400, 2.0]          # not strong: merely small next to big's weights
    [note] = views.faint_rows(hand)
    assert note.endswith("its weights (alpha 2) are small next to those of big, whose inner CV chose alpha 0.01 (weaker "
                         "regularization, larger weights).")


# --------------------------------------------------------------- the 900 px pass (docs/ui-review.md 25-32)

def test_rate_change_is_in_percentage_points_with_its_base():
    """ui-review 29: "+28.6% vs all runs" for 67.5% kept against 38.9% read as a relative change (x 1.286)."""
    assert views.rate_change(0.675, 0.389) == "+28.6 pp vs all runs (38.9%)"
    assert views.rate_change(0.25, 0.30) == "-5.0 pp vs all runs (30.0%)"
    assert views.rate_change(0.5, 0.5) == "+0.0 pp vs all runs (50.0%)"


def test_calibration_writes_the_kept_runs_success_rate_against_all_runs_in_points(app):
    go(app, "calibration")
    assert not problems(app), problems(app)
    kept = next(m for m in app.metric if m.label == "success rate of the runs kept")
    assert re.fullmatch(r"[+-]\d+\.\d pp vs all runs \(\d+\.\d%\)", kept.proto.delta), kept.proto.delta
    rate, base = float(kept.value.rstrip("%")), float(re.search(r"\((\d+\.\d)%\)", kept.proto.delta).group(1))
    assert abs(float(kept.proto.delta.split(" pp")[0]) - (rate - base)) <= 0.11   # both rounded to 0.1


#: a confidence as explain.format_confidence writes it: never a bare 0.00 or 1.00
CONFIDENCE = re.compile(r"< 0\.001|> 0\.999|0\.\d\d\d?|1\.00")


def test_examples_cards_write_confidences_as_the_inspector_does(app):
    """ui-review 27: the cards wrote '0.00' where the inspector wrote '< 0.001' for the same run."""
    go(app, "examples")
    assert not problems(app), problems(app)
    htc = app.selectbox(key="ex_htc").value
    baseline = app.selectbox(key="ex_baseline").value
    shown = [m.value for m in app.metric if m.label in (htc, baseline)]
    assert len(shown) == 2 * 8                         # 4 cards a side, two confidences a card
    assert all(CONFIDENCE.fullmatch(v) and v not in ("0.00", "1.00") for v in shown), shown
    outcomes = [m.value for m in app.metric if m.label == "outcome"]
    assert outcomes == ["failure"] * 4 + ["success"] * 4


def test_a_step_change_too_small_for_two_decimals_says_so():
    """ui-review 30: the inspector's step lines read "confidence after it < 0.001 (-0.00)"."""
    from htc_core.app.trajectory_view import change_words

    assert change_words(-0.0004) == change_words(0.0049) == " (change under 0.01)"
    assert change_words(-0.123) == " (-0.12)" and change_words(0.005) == " (+0.01)"
    assert change_words(None) == change_words(float("nan")) == ""


def _table_with(at, column: str, first: str):
    """The page's st.dataframe whose first column is ``first`` and that has ``column``, with its column config."""
    import json

    for df in at.dataframe:
        value = df.value
        if column in value.columns and value.columns[0] == first:
            return value, json.loads(df.proto.columns or "{}")
    raise AssertionError(f"no table with {first!r} first and {column!r}")


def test_counts_have_thousands_separators_and_stay_numbers(app):
    """ui-review 35: Compare LLMs' per-model table and Calibration's metrics table wrote n as "1000". The n
    columns are numbers (they sort as numbers) shown with the "%,d" format ("1,000"); the first column stays
    when the table scrolls, and Calibration's three metrics get widths that fit a 900 px window (440 px)."""
    go(app, "calibration")
    assert not problems(app), problems(app)
    table, config = _table_with(app, "n", "method")
    assert pd.api.types.is_integer_dtype(table["n"]) and config["n"]["type_config"]["format"] == "%,d"
    assert config["method"]["pinned"] is True
    assert sum(config[c]["width"] for c in ("method", "ECE ↓", "Brier ↓", "AUROC ↑")) <= 440
    go(app, "compare")
    assert not problems(app), problems(app)
    table, config = _table_with(app, "n", "model")
    assert pd.api.types.is_numeric_dtype(table["n"]) and config["n"]["type_config"]["format"] == "%,d"
    assert config["model"]["pinned"] is True
    assert list(table.columns) == ["model", "n", "success rate"]
    table, config = _table_with(app, "AUROC ↑", "model")      # one per method: four columns, whole at 900 px
    assert list(table.columns) == ["model", "ECE ↓", "Brier ↓", "AUROC ↑"]
    assert config["model"]["pinned"] is True
    assert all(config[c]["type_config"]["format"] == "%.3f" and config[c]["help"] for c in table.columns[1:])


def test_the_charts_keep_their_place_after_the_run_that_waited_for_the_evaluation(app, monkeypatch):
    """ui-review 38: the evaluation's progress bar was drawn only in the run that waited for it, so the next run (a
    click's) placed every element after it one place earlier and Streamlit drew the charts there again; a click
    meanwhile was lost. The bar has its place in every run now: the run that waits and the next one draw the same
    elements before the charts."""
    import htc_core.app.compute as compute

    monkeypatch.setattr(compute, "GRACE_S", 600.0)     # the first visit waits for every part (no later redraw)
    go(app, "calibration")
    assert not problems(app), problems(app)
    assert app.get("plotly_chart"), "Calibration drew no chart"
    waited = [(n.type, getattr(n, "key", None)) for n in app.main.children.values()]
    app.run()                                          # the next run (a click's): the evaluation is ready
    assert not problems(app), problems(app)
    again = [(n.type, getattr(n, "key", None)) for n in app.main.children.values()]
    assert waited == again
