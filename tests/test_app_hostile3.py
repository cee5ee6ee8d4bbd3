"""Hostile input, round three (issue 30), on the dashboard through AppTest: links with an unknown or huge id
(#6), a non-finite trust threshold (#7), bidi controls in names (#8), megabyte strings (#5), no remote icon
font (#9)."""

from __future__ import annotations

import pytest


from apptest_kit import new_app, problems
from conftest import REPO, make_traj, write_jsonl

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    shipped = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    lines = shipped.read_text(encoding="utf-8").splitlines(True)[:40]
    (d / "arithmetic-small.jsonl").write_text("".join(lines), encoding="utf-8")
    return d


@pytest.fixture
def app(tmp_path, sample_dir, monkeypatch):
    at = new_app(monkeypatch, tmp_path / "data", sample_dir, timeout=180)
    return at


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


@pytest.fixture
def huge_app(tmp_path, sample_dir, monkeypatch):
    """The sample runs plus one run whose question, answer, gold, one token and tool call are 1 MB unbroken."""
    d = tmp_path / "samples"
    d.mkdir()
    (d / "arithmetic-small.jsonl").write_text((sample_dir / "arithmetic-small.jsonl").read_text())
    mb = "x" * 1_000_000
    huge = make_traj("huge-1", [([-0.1, -2.0, -0.3], None), ([-0.2, -0.05], None)], success=False, question="Q" + mb,
                     dataset="arithmetic", model="SmolLM2-135M-greedy", answer="A" + mb, gold="G" + mb)
    huge["steps"][0]["tokens"] = ["T" + mb, " b", " c"]
    huge["steps"][1]["tool"] = {"name": "calc", "arguments": mb}
    huge["steps"][1]["observation"] = "O" + mb
    write_jsonl(d / "huge.jsonl", [huge])
    at = new_app(monkeypatch, tmp_path / "data", d, timeout=240)
    return at


def test_5_megabyte_strings_reach_the_page_bounded_with_a_download(huge_app):
    from htc_core.app.trajectory_view import TEXT_ON_PAGE

    huge_app.query_params["id"] = "huge-1"
    huge_app.run()
    huge_app.switch_page("pages/inspector.py")
    huge_app.run()
    assert not problems(huge_app)
    texts = [t.value for t in huge_app.text] + [c.value for c in huge_app.code] + \
        [m.value for m in huge_app.markdown] + [c.value for c in huge_app.caption]
    assert any(t.startswith("Question: Q") for t in texts)
    assert max(len(t) for t in texts) <= TEXT_ON_PAGE + 1_000
    assert sum(len(t) for t in texts) < 400_000                 # was > 5 MB: question, answer, gold, token, tool
    assert all(max(map(len, t.split("\n"))) <= 1_100 for t in texts if t.startswith(("Question", "A", "G")))
    labels = [b.proto.label for b in huge_app.get("download_button")]
    for what in ("question", "final answer", "gold answer"):
        assert any(lab.startswith(f"Download all of the {what} (1,000,001 characters)") for lab in labels), labels
