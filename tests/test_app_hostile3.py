"""Hostile input, round three (issue 30), on the dashboard through AppTest: links with an unknown or huge id
(#6), a non-finite trust threshold (#7), bidi controls in names (#8), megabyte strings (#5), no remote icon
font (#9)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import htc_core.app.compute as compute
import htc_core.app.ui as ui

from conftest import REPO, make_traj, write_jsonl

pytestmark = pytest.mark.app
APP = str(REPO / "app.py")


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    shipped = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    lines = shipped.read_text(encoding="utf-8").splitlines(True)[:40]
    (d / "arithmetic-small.jsonl").write_text("".join(lines), encoding="utf-8")
    return d


@pytest.fixture
def app(tmp_path, sample_dir, monkeypatch):
    monkeypatch.setenv("HTC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(sample_dir))
    monkeypatch.setattr(compute, "ALPHAS", (0.1, 1.0, 10.0))
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state[ui.SEEDS] = 1
    return at


def problems(at) -> list[str]:
    return [e.value for e in at.exception] + [e.value for e in at.error]


@pytest.mark.parametrize("wanted", ["no-such-run", "x" * 100_000, "../../etc/passwd", "deleted-set:run-1"])
def test_6_inspector_link_to_a_missing_run_says_so_and_keeps_the_url(app, wanted):
    app.query_params["id"] = wanted
    app.run()
    app.switch_page("pages/inspector.py")
    app.run()
    assert not problems(app)
    (note,) = [w.value for w in app.warning if "No trajectory" in w.value]
    assert "in the current selection" in note and len(note) < 600
    assert app.query_params["id"] in (wanted, [wanted])        # the link is kept, not rewritten
    assert not app.metric                                       # no other run shown under the link's id
    (pick,) = [s for s in app.selectbox if s.label == "Trajectory"]
    assert pick.value is None
    pick.set_value(pick.options[0]).run()                       # picking one shows it and names it in the URL
    assert not problems(app) and app.metric
    assert app.query_params["id"] not in (wanted, [wanted])


@pytest.mark.parametrize("trust", ["inf", "1e309", "-inf", "nan", "0.7"])
def test_7_compare_link_with_a_non_finite_trust_is_ignored(app, trust):
    app.query_params.update({"ab": "calibrators", "trust": trust})
    app.run()
    app.switch_page("pages/compare_runsets.py")
    app.run()
    assert not problems(app)
    value = app.session_state["ab_threshold"]
    assert 0.05 <= value <= 0.95                                 # a number in range, not nan or inf
    if trust == "0.7":
        assert value == 0.7
