"""sample_runs/relabel.py: every sample run's label is the demo agent judge's grade of its recorded answer, on the
task rebuilt from its id; a label graded again is rewritten alone, every other byte of the line kept."""
import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("sample_relabel", REPO / "sample_runs" / "relabel.py")
relabel = importlib.util.module_from_spec(spec)
spec.loader.exec_module(relabel)

GEMMA_FACTS = REPO / "sample_runs" / "gemma3" / "facts_Gemma3-270M-sampled-t0.7.jsonl"


def test_every_shipped_label_is_the_judges_grade_of_its_answer():
    files = sorted(p for p in (REPO / "sample_runs").glob("*/*.jsonl") if not p.parent.name.startswith("_"))
    assert len(files) == 20
    assert {str(p): relabel.relabel_file(str(p), write=False) for p in files} == {str(p): [] for p in files}


def test_a_relabel_rewrites_the_label_alone_and_twice_changes_nothing(tmp_path):
    lines = GEMMA_FACTS.read_text(encoding="utf-8").splitlines(keepends=True)[:12]
    runs = [json.loads(x) for x in lines]
    wrong = [x.replace(f'"success": {str(r["success"]).lower()}', f'"success": {str(not r["success"]).lower()}')
             for x, r in zip(lines, runs)]
    f = tmp_path / "facts_Gemma3-270M-sampled-t0.7.jsonl"
    f.write_text("".join(wrong[:5] + lines[5:]), encoding="utf-8")
    changed = relabel.relabel_file(str(f), write=True)
    assert [c[0] for c in changed] == [r["id"] for r in runs[:5]]
    assert f.read_text(encoding="utf-8") == "".join(lines)
    assert relabel.relabel_file(str(f), write=True) == []


def test_a_run_whose_task_differs_from_the_one_its_id_names_is_refused_with_the_id():
    run = json.loads(GEMMA_FACTS.read_text(encoding="utf-8").splitlines()[3])
    line = json.dumps({**run, "gold": "Atlantis"}, ensure_ascii=False) + "\n"
    with pytest.raises(ValueError, match=run["id"] + ".*Atlantis"):
        relabel.relabel_line(line)
    with pytest.raises(ValueError, match="not a demo agent run id"):
        relabel.relabel_line(json.dumps({**run, "id": "run-7"}) + "\n")


def test_the_log_names_each_rewritten_label_with_its_reason(tmp_path):
    log = tmp_path / "relabels.tsv"
    relabel.log_changes(str(log), [("facts-0008-x", "rupees", "rupee", True)], "plural\taccepted")
    relabel.log_changes(str(log), [("docs-0106-x", "clock", "clocks", True)], "plural")
    rows = [r.split("\t") for r in log.read_text(encoding="utf-8").splitlines()]
    assert rows[0] == list(relabel.LOG_FIELDS) and len(rows) == 3
    assert rows[1][1:] == ["facts-0008-x", "false", "true", "rupees", "rupee", "plural accepted"]
