"""The inspector on foreign-shaped runs (tests/fixtures/foreign): a call log with separate tool lines and no
question/dataset fields, and native runs with logprobs but no token strings. No 'None', no empty dataset name,
no placeholder glyphs; thought, tool call and observation on screen."""

from __future__ import annotations

import shutil

from streamlit.testing.v1 import AppTest

import htc_core.app.ui as ui
from htc_core.app.workspace import build_workspace

from apptest_kit import new_app
from conftest import REPO

FOREIGN = REPO / "tests" / "fixtures" / "foreign"


def _open(tmp_path, monkeypatch, run_id: str) -> AppTest:
    d = tmp_path / "samples"
    d.mkdir()
    for name in ("react_calllog.jsonl", "cod_native.jsonl"):
        shutil.copy(FOREIGN / name, d / name)
    at = new_app(monkeypatch, tmp_path / "data", d, timeout=180, alphas=(1.0,))
    at.run()
    store = ui.get_store(at.session_state[ui.DATA_DIR])
    at.session_state[ui.INSPECT] = [k for k in build_workspace(store).keys if k.endswith(f":{run_id}")][0]
    at.switch_page("pages/inspector.py")
    at.run()
    assert not [e.value for e in at.exception] + [e.value for e in at.error]
    return at


def _shown(at) -> str:
    parts = [t.value for t in at.text] + [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [w.value for w in at.warning]
    return "\n".join(str(p) for p in parts)


def test_inspector_on_a_foreign_call_log_with_tool_lines(tmp_path, monkeypatch):
    at = _open(tmp_path, monkeypatch, "r1")
    shown = _shown(at)
    assert "Question: What is 14 times 8?" in shown and "112" in [t.value for t in at.text]
    assert any("multiply." in h.proto.body and "calculator" in h.proto.body for h in at.get("html"))   # the thought
    assert "calculator[14*8]" in [c.value for c in at.code]
    assert "This source kept no inputs" not in shown
    assert not any("ended without a final answer" in w.value for w in at.warning)
    assert "(," not in shown and "Question: None" not in shown and "dataset None" not in shown
    assert "without a dataset name" in shown or "dataset —" in shown


def test_inspector_on_runs_without_token_strings(tmp_path, monkeypatch):
    at = _open(tmp_path, monkeypatch, "cod-1")
    shown = _shown(at)
    html = "".join(h.proto.body for h in at.get("html"))
    assert "▪" not in shown and "▪" not in html
    assert "Final Answer: 8" in shown and not any("ended without a final answer" in w.value for w in at.warning)
    assert "one cell per token" in shown and "token " in html and " of " in html
    assert "Lowest-probability token(s): token " in shown
