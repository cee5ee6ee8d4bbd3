"""One number per run (issue 27): the inspector's headline is the confidence Runs, Examples and the export show,
and its reasons sum to that number's logit, for the most over-confident failures of a foreign upload (the real
UALA HotpotQA runs, uploaded through the Runs page)."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import htc_core.app.ui as ui
from htc_core import explain
from htc_core.app import views
from htc_core.app.shown import combined
from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.evaluation import evaluate

from apptest_kit import APP, new_app, problems

ALPHAS = (0.1, 1.0, 10.0)
N = 10
#: the Examples card's reason: the strongest that pushed the confidence the wrong way (up, for a failure)
TOP = "Top reason for the mistake: "


@pytest.fixture(scope="module")
def uploaded(tmp_path_factory, uala_run_a):
    """An app whose store holds only the uploaded UALA run-a file (466 labeled runs); the worst mistakes
    shown on Examples and, per run, the inspector after clicking its card."""
    tmp = tmp_path_factory.mktemp("shown")
    empty = tmp / "no-samples"
    empty.mkdir()
    mp = pytest.MonkeyPatch()
    at = new_app(mp, tmp / "data", empty, timeout=600)
    at.run()
    at.file_uploader(key="upload_files").set_value([(uala_run_a.name, uala_run_a.read_bytes(),
                                                     "application/json")])
    at.button[0].click()
    at.run()
    assert not problems(at)
    # the upload is the selection: already (the st.rerun after storing it ran the sidebar), or chosen for the next
    # run (AppTest skipped that rerun's sidebar while the Runs page had no explicit url_path)
    chosen = (at.session_state["htc_select_upload"] if "htc_select_upload" in at.session_state
              else at.session_state[ui.RUNSETS][0])
    assert chosen == at.session_state[ui.LAST_UPLOAD]["run_set"]
    assert any("it is now the selection" in s.value for s in at.success)
    at.switch_page("pages/examples.py")
    at.run()
    at.number_input(key="ex_n").set_value(N).run()
    assert not problems(at)
    cards = _worst_cards(at)
    headlines = []
    for i in range(N):
        at.switch_page("pages/examples.py")
        at.run()
        at.number_input(key="ex_n").set_value(N).run()
        assert _worst_cards(at) == cards
        at.button(key=f"ex_worst_Most _{i}").click().run()
        assert not problems(at), problems(at)
        assert at.title[0].value == "Trajectory inspector"
        headlines.append((at.metric[0].label, at.metric[0].value,
                          [m.value for m in at.markdown if m.value.startswith("- ")]))
    yield at, cards, headlines, tmp / "data"
    mp.undo()


def _worst_cards(at) -> list[tuple[str, str]]:
    """(confidence as shown, top reason) of each 'Most confident failures' card, in order."""
    values = [m.value for m in at.metric if m.label == "HTC-Reduced (out-of-fold)"]
    reasons = [c.value.removeprefix(TOP) for c in at.caption if c.value.startswith(TOP)]
    return list(zip(values[:N], reasons[:N]))


@pytest.fixture(scope="module")
def recomputed(uploaded):
    """The same selection and evaluation built outside the app (same store, settings, seed: same numbers)."""
    *_, data = uploaded
    ws = build_workspace(Store(data))
    pos = np.flatnonzero(np.isfinite(ws.labels))
    res = evaluate(ws.features.take(pos), ws.labels[pos], baselines=ws.baselines.iloc[pos].reset_index(drop=True),
                   seeds=1, alphas=ALPHAS, methods=["HTC-Reduced"])
    return ws, res, pos


def test_inspector_headline_is_the_examples_number_and_the_top_reason_is_the_same(uploaded):
    at, cards, headlines, _ = uploaded
    assert len(cards) == N and len(headlines) == N
    for (value, reason), (label, headline, reasons) in zip(cards, headlines):
        assert label == "HTC-Reduced confidence (out-of-fold)"
        assert headline == value
        assert reasons and reasons[0] == "- " + reason          # both as the page writes them (escaped)


def test_runs_export_and_reasons_agree_with_the_out_of_fold_number(uploaded, recomputed):
    at, cards, headlines, _ = uploaded
    ws, res, pos = recomputed
    oof = res.oof["HTC-Reduced"]
    worst = np.argsort(-np.where(res.labels == 0, oof, -np.inf), kind="stable")[:N]
    # the Examples cards are these runs, in this order, with these numbers
    assert [v for v, _ in cards] == [explain.format_confidence(oof[r]) for r in worst]
    fit = HTCCalibrator(variant="reduced", alphas=ALPHAS).fit(ws.features.take(pos), ws.labels[pos])
    in_use = combined(ws, pos[worst], "HTC-Reduced", fit, type("E", (), {"result": res, "positions": pos})())
    export = views.export_frame(ws, pos[worst], in_use, type("E", (), {"result": res, "positions": pos})())
    runs_column = views.oof_column(type("E", (), {"result": res, "positions": pos})(), len(ws), "HTC-Reduced")
    for k, r in enumerate(worst):
        model = res.fold_model("HTC-Reduced", int(r))
        e = explain.explain_trajectory(model, ws.features, int(pos[r]), labels=ws.labels,
                                       groups=ws.ts.meta["dataset"])
        assert e.confidence == pytest.approx(oof[r], abs=1e-12)                  # the inspector's headline
        assert e.intercept + e.signals["contribution"].sum() == pytest.approx(np.log(oof[r] / (1 - oof[r])))
        assert export["confidence"].iat[k] == pytest.approx(oof[r], abs=1e-12)   # the CSV
        assert export["scorer"].iat[k] == "HTC-Reduced (out-of-fold)"
        assert runs_column[pos[r]] == oof[r]                                      # the Runs table's column
        assert [t for t in export.loc[k, ["reason_1", "reason_2", "reason_3"]] if t] == e.reasons
        assert headlines[k][2][0] == "- " + ui.md(e.reasons[0])


def test_unlabeled_runs_explain_the_gac_confidence_the_runs_page_shows(tmp_path, monkeypatch, uala_dir):
    """No labels: the inspector's headline is the GAC confidence of the Runs table (no "Explained by" choice it
    would ignore), the live-monitor curve ends at it, and the CSV of the selection is prepared."""
    import json

    lines = (uala_dir / "hotpotqa_llama2-70b_run-c.jsonl").read_text(encoding="utf-8").splitlines()[:40]
    d = tmp_path / "unlabeled"
    d.mkdir()
    objs = [json.loads(ln) for ln in lines]
    for o in objs:
        o.pop("success", None)
    (d / "runs.jsonl").write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    monkeypatch.setenv("HTC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(d))
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    assert not problems(at)
    table = next(t.value for t in at.dataframe if "GAC" in t.value.columns)
    gac = dict(zip(table["id"], table["GAC"]))
    at.toggle(key="browse_export").set_value(True).run()          # the CSV of an unlabeled selection
    assert not problems(at), problems(at)
    assert at.get("download_button")
    keys = dict(zip(table["id"], table["key"]))
    for tid in list(gac)[:3]:
        at.session_state[ui.INSPECT] = keys[tid]
        at.switch_page("pages/inspector.py")
        at.run()
        assert not problems(at), problems(at)
        assert at.metric[0].label == "GAC confidence (zero-shot)"
        assert any(c.value.startswith(ui.md(tid) + " · ") for c in at.caption)
        assert at.metric[0].value == explain.format_confidence(gac[tid])
        curve = json.loads(at.get("plotly_chart")[0].proto.spec)
        assert _ys(curve["data"][0])[-1] == pytest.approx(gac[tid], abs=1e-9)
        assert not [r for r in at.radio if r.label == "Explained by"]       # no choice the page would ignore


def _ys(trace) -> np.ndarray:
    """A plotly trace's y values (plain list, or plotly's typed-array form {dtype, bdata})."""
    import base64

    y = trace["y"]
    if isinstance(y, dict):
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"]))
    return np.asarray(y, dtype=float)


def test_side_by_side_shows_two_runs_with_the_numbers_every_page_shows(uploaded, recomputed):
    """Item 7: a pair (as Compare run sets opens a flipped one) in two inspector columns, each headline the run's
    out-of-fold confidence, each with its reasons and step curve."""
    from htc_core.app import shown as shown_conf

    at, cards, *_ = uploaded
    ws, res, pos = recomputed
    oof = res.oof["HTC-Reduced"]
    worst = np.argsort(-np.where(res.labels == 0, oof, -np.inf), kind="stable")[:2]
    at.session_state[shown_conf.PAIR] = tuple(str(ws.keys[pos[r]]) for r in worst)
    at.switch_page("pages/side_by_side.py")
    at.run()
    assert not problems(at), problems(at)
    heads = [m for m in at.metric if m.label == "HTC-Reduced (out-of-fold)"]
    assert [m.value for m in heads] == [cards[0][0], cards[1][0]]
    assert len(at.get("plotly_chart")) == 2 and len([m for m in at.markdown if m.value.startswith("- ")]) >= 2
