"""--labels: outcome labels and metadata joined by trajectory id; unmatched ids reported on both sides."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from htc_core.formats import load
from htc_core.formats.labels import join, parse_success, read_labels
from htc_core.report import LoadReport

FIX = Path(__file__).parent / "fixtures" / "formats"


def test_csv_join_on_real_calllog():
    ts, rep = load(FIX / "calllog.jsonl", labels=FIX / "labels.csv")
    m = ts.meta.set_index("id")
    # labels.csv: q-paris, q-tokyo, q-mars labeled, q-gold missing, q-unknown matches nothing
    assert m.loc["q-paris", "verbalized_confidence"] == pytest.approx(0.8)
    assert json.loads(m.loc["q-paris", "metadata"])["annotator"] == "fixture"
    assert m.loc["q-gold", "success"] == False  # noqa: E712  (kept from the call log itself)
    assert np.isnan(m.loc["q-gold", "verbalized_confidence"])
    w = [p for p in rep.warnings if p.file.endswith("labels.csv")]
    text = " | ".join(p.reason for p in w)
    assert "1 of 4 trajectories have no row in the labels file: 'q-gold'" in text
    assert "1 labels row(s) match no trajectory: 'q-unknown'" in text
    unmatched = next(p for p in w if "match no trajectory" in p.reason)
    assert unmatched.line == 5  # the line of the first unmatched row


def test_jsonl_labels_other_columns_and_bad_values(tmp_path):
    ts, _ = load(FIX / "chat_trajectories.jsonl")
    lab = tmp_path / "labels.jsonl"
    rows = [
        {"trace_id": "q-paris", "label": 0, "model": "renamed-model", "question": "Q?", "answer": "A", "f1": 0.5},
        {"trace_id": "q-tokyo", "label": "maybe"},
        {"trace_id": "q-tokyo", "label": 1},
        {"trace_id": "q-mars", "label": "", "verbalized_confidence": "very"},
    ]
    lab.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    rep = LoadReport()
    out, info = join(ts, lab, report=rep)
    m = out.meta.set_index("id")
    assert m.loc["q-paris", "success"] == False  # noqa: E712  (label 0 overrides the recorded True)
    # a non-empty model name from the trace is never overwritten by the labels file: kept, with a warning
    assert m.loc["q-paris", "model"] == "SmolLM2-135M-Instruct" and m.loc["q-paris", "question"] == "Q?"
    assert info.model_conflicts == [("q-paris", "SmolLM2-135M-Instruct", "renamed-model")]
    conflict = [p for p in rep.warnings if p.field == "model"]
    assert len(conflict) == 1 and "the trace's model name is kept" in conflict[0].reason
    assert "'q-paris': trace 'SmolLM2-135M-Instruct', labels 'renamed-model'" in conflict[0].reason
    assert json.loads(m.loc["q-paris", "metadata"])["f1"] == 0.5
    assert m.loc["q-tokyo", "success"] == True  # noqa: E712  ("maybe" ignored, then the duplicate row ignored)
    assert m.loc["q-mars", "success"] == True  # noqa: E712  (empty label keeps the existing one)
    assert info.matched == 3 and info.success_changed == 1 and info.unlabeled_ids == ["q-gold"]
    reasons = {(p.line, p.reason.split(";")[0]) for p in rep.problems}
    assert (2, "success label is not true/false, 1/0, yes/no") in reasons
    assert (3, "duplicate id in the labels file (the first row is kept)") in reasons
    assert any(p.line == 5 and "JSON" in p.reason for p in rep.errors)
    assert any("verbalized_confidence" in p.reason and p.line == 4 for p in rep.warnings)
    # the original trace set is unchanged
    assert ts.meta.set_index("id").loc["q-paris", "model"] == "SmolLM2-135M-Instruct"


def test_labels_fill_an_empty_model_name_and_agreeing_names_warn_nothing(tmp_path):
    import dataclasses

    ts, _ = load(FIX / "chat_trajectories.jsonl")
    meta = ts.meta.copy()
    meta.loc[meta["id"] == "q-tokyo", "model"] = None
    ts = dataclasses.replace(ts, meta=meta)
    lab = tmp_path / "labels.jsonl"
    rows = [{"id": "q-tokyo", "success": 1, "model": "from-labels"},
            {"id": "q-paris", "success": 1, "model": "SmolLM2-135M-Instruct"}]
    lab.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = LoadReport()
    out, info = join(ts, lab, report=rep)
    m = out.meta.set_index("id")
    assert m.loc["q-tokyo", "model"] == "from-labels" and m.loc["q-paris", "model"] == "SmolLM2-135M-Instruct"
    assert info.model_conflicts == [] and not [p for p in rep.warnings if p.field == "model"]


@pytest.mark.parametrize("value,expected", [
    (True, (True, True)), ("Yes", (True, True)), ("0", (False, True)), (1.0, (True, True)),
    ("incorrect", (False, True)), ("", (None, True)), ("NaN", (None, False)), ("n/a", (None, False)), ("2", (None, False)), (3, (None, False)),
])
def test_parse_success(value, expected):
    assert parse_success(value) == expected


def test_labels_file_without_id_column(tmp_path):
    lab = tmp_path / "l.csv"
    lab.write_text("name,success\na,1\n")
    rep = LoadReport()
    assert read_labels(lab, rep) == {}
    assert "no id column" in rep.errors[0].reason and rep.errors[0].line == 2


def test_missing_labels_file_is_reported(tmp_path):
    ts, rep = load(FIX / "atif.json", labels=tmp_path / "nope.csv")
    assert ts.n_trajectories == 1
    assert any("labels file not found" in p.reason for p in rep.errors)


def test_labels_inside_input_directory_are_not_read_as_traces(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    shutil.copy(FIX / "calllog.jsonl", d)
    (d / "labels.jsonl").write_text(json.dumps({"id": "q-gold", "success": True}) + "\n")
    ts, rep = load(d, labels=d / "labels.jsonl")
    assert rep.rejected == 0 and ts.n_trajectories == 4
    assert ts.meta.set_index("id").loc["q-gold", "success"] == True  # noqa: E712


def test_cli_validate_with_labels(capsys):
    from htc_core.cli import main

    rc = main(["validate", str(FIX / "calllog.jsonl"), "--labels", str(FIX / "labels.csv")])
    out = capsys.readouterr().out
    assert rc == 0 and "labeled: 4" in out and "match no trajectory" in out


def test_cli_import_group_by_and_stdout(tmp_path, capsys):
    from htc_core.cli import main

    src = tmp_path / "log.jsonl"
    rows = [json.loads(x) for x in (FIX / "calllog.jsonl").read_text().splitlines()]
    for r in rows:
        r["episode"] = "E-" + r.pop("trajectory_id")
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc = main(["import", str(src), "--group-by", "episode", "--dataset", "toy"])
    cap = capsys.readouterr()
    assert rc == 0
    lines = [json.loads(x) for x in cap.out.splitlines()]
    assert [x["id"] for x in lines] == ["E-q-paris", "E-q-tokyo", "E-q-mars", "E-q-gold"]
    assert all(x["dataset"] == "toy-qa" for x in lines)  # the file's own value wins over --dataset
    assert "trajectories read: 4" in cap.err
