"""Never silent (issue 27 item 5): with no run set chosen, a page that would evaluate more than
``confirm.CONFIRM_ABOVE`` labeled runs asks first and draws the answer only after the click; a chosen run set
is evaluated without the question. AppTest on the project's own sample runs (the threshold lowered to 100)."""

from __future__ import annotations

import pytest

import htc_core.app.compute as compute
import htc_core.app.confirm as confirm
import htc_core.app.ui as ui
from htc_core.app.store import Store

from apptest_kit import new_app, problems
from test_app_url_state import sample_dir  # noqa: F401  (fixture)

pytestmark = pytest.mark.app


@pytest.fixture
def app(tmp_path, sample_dir, monkeypatch):  # noqa: F811
    monkeypatch.setattr(compute, "PREFETCH_CAP", 100)      # no background start either, as above 5,000
    monkeypatch.setattr(confirm, "CONFIRM_ABOVE", 100)
    return new_app(monkeypatch, tmp_path / "data", sample_dir, timeout=240)


def _asked(at) -> bool:
    return any("would cross-validate all 120 labeled runs" in w.value for w in at.warning)


def test_a_large_unchosen_selection_asks_before_evaluating(app):
    app.switch_page("pages/examples.py").run()
    assert not problems(app), problems(app)
    assert _asked(app) and not app.metric                   # nothing evaluated, nothing drawn from it
    assert compute.evaluation_pending() == list(compute.EVAL_PARTS)
    app.button(key="htc_confirm_evaluation").click().run()
    assert not problems(app), problems(app)
    assert not _asked(app) and app.metric                   # the examples are drawn
    app.switch_page("pages/calibration.py").run()           # evaluated now: no question on another page
    assert not _asked(app) and not problems(app)


def test_a_chosen_run_set_is_evaluated_without_asking(app):
    app.run()
    ids = Store(app.session_state[ui.DATA_DIR]).list_run_sets()["id"].tolist()
    app.session_state[ui.RUNSETS] = ids                    # both run sets, chosen explicitly
    app.switch_page("pages/examples.py").run()
    assert not problems(app), problems(app)
    assert not _asked(app) and app.metric
