"""The import report says which format each file was read as, how many lines were skipped, and how the labels
joined; the upload summary the Runs page shows carries it (real files: the shipped call log and its labels)."""

from __future__ import annotations

from htc_core.app import import_views
from htc_core.app.ingest import ingest
from htc_core.app.store import Store
from htc_core.app.upload import _summary
from htc_core.formats import load

from conftest import REPO, make_traj, write_jsonl

CALLLOG = REPO / "sample_runs" / "_calllog" / "arithmetic_SmolLM2-135M-greedy.calllog.jsonl"
LABELS = REPO / "sample_runs" / "_calllog" / "arithmetic_SmolLM2-135M-greedy.labels.csv"


def test_report_names_the_format_and_the_labels_join(tmp_path):
    ts, rep = load([CALLLOG], labels=LABELS)
    assert rep.formats == {str(CALLLOG): "openai-calllog"}
    n_rows = sum(1 for _ in open(LABELS, encoding="utf-8")) - 1
    assert rep.labels["rows"] == n_rows and rep.labels["matched"] == len(ts) - rep.labels["unlabeled"]
    assert rep.labels["matched"] > 0 and rep.to_dict()["formats"] == rep.formats


def test_upload_summary_lines(tmp_path):
    extra = tmp_path / "more.jsonl"
    write_jsonl(extra, [make_traj("x-1", [([-0.1, -0.2], None)], success=None, model="m")])
    labels = tmp_path / "labels.csv"
    labels.write_text("id,success,model\nx-1,true,other-model\nghost,false,\n", encoding="utf-8")
    res, rep = ingest(Store(tmp_path / "store"), [CALLLOG, extra], name="u", labels=labels)
    summary = _summary("u", res, rep, {str(labels): "labels.csv"})
    lines = import_views.import_details(summary)
    assert any(line.startswith("format: ") and "openai-calllog" in line and "native (more.jsonl)" in line for line in lines)
    assert any("lines skipped" in line for line in lines)
    lab = next(line for line in lines if line.startswith("labels file labels.csv"))
    assert "2 rows; 1 trajectories got a label" in lab and "1 rows matched no trajectory" in lab
    assert "1 model name(s) differed" in lab
    text = import_views.problems_text(summary)
    assert "ghost" in text or "matched no trajectory" in text
    assert " line nan" not in text
