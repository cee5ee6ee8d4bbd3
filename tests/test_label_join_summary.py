"""Labels say what they did (issue 30, item 4 and defect 18): one join summary, a model-file suffix is not a
conflict, and a labels file that would join nothing (no success column, semicolons, tabs, UTF-16, NaN) is read
correctly or refused with its file, line, field and value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htc_core.cli import main
from htc_core.formats import load
from htc_core.formats.labels import join, same_model
from htc_core.report import LoadReport

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "tests" / "fixtures" / "formats" / "chat_trajectories.jsonl"   # q-paris, q-tokyo, q-mars, q-gold


def _runs():
    return load(RUNS)[0]


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16"])
def test_delimiters_and_encodings_are_read(tmp_path, sep, encoding):
    lab = tmp_path / "labels.csv"
    text = sep.join(["id", "success", "note"]) + "\n" + sep.join(["q-paris", "0", "a, b"]) + "\n" \
        + sep.join(["q-mars", "false", "x"]) + "\n"
    if sep == ",":
        text = text.replace("a, b", '"a, b"')
    lab.write_bytes(text.encode(encoding))
    rep = LoadReport()
    ts, info = join(_runs(), lab, report=rep)
    m = ts.meta.set_index("id")
    assert info.labeled == 2 and m.loc["q-paris", "success"] == False  # noqa: E712
    assert json.loads(m.loc["q-paris", "metadata"])["note"] == "a, b"
    assert not rep.errors


def test_no_success_column_is_an_error_naming_the_columns(tmp_path):
    lab = tmp_path / "labels.csv"
    lab.write_text("id,outcome\nq-paris,ok\nq-mars,bad\n")
    rep = LoadReport()
    _, info = join(_runs(), lab, report=rep)
    assert info.labeled == 0
    err = rep.errors[0]
    assert err.file == str(lab) and err.line == 2 and err.field == "success"
    assert "no success column" in err.reason and "id, outcome" in err.reason


def test_nan_success_is_named_per_row(tmp_path):
    lab = tmp_path / "labels.jsonl"
    lab.write_text('{"id": "q-paris", "success": NaN}\n{"id": "q-mars", "success": "nan"}\n'
                   '{"id": "q-tokyo", "success": 0}\n')
    rep = LoadReport()
    _, info = join(_runs(), lab, report=rep)
    nan = [p for p in rep.warnings if "NaN" in p.reason]
    assert [(p.line, p.field, p.trajectory_id) for p in nan] == [(1, "success", "q-paris"), (2, "success", "q-mars")]
    assert info.labeled == 1


def test_model_suffix_is_not_a_conflict(tmp_path):
    assert same_model("SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct.gguf")
    assert same_model("m.Q4_K_M.GGUF", "m.Q4_K_M") and not same_model("model-a", "model-b")
    lab = tmp_path / "labels.csv"
    lab.write_text("id,success,model\nq-paris,1,SmolLM2-135M-Instruct.gguf\nq-mars,0,other-model\n")
    rep = LoadReport()
    ts, info = join(_runs(), lab, report=rep)
    assert info.model_conflicts == [("q-mars", "SmolLM2-135M-Instruct", "other-model")]
    assert set(ts.meta["model"]) == {"SmolLM2-135M-Instruct"}


def test_cli_prints_the_join_summary_once(tmp_path, capsys):
    lab = tmp_path / "labels.csv"
    lab.write_text("id,success,model\nq-paris,1,SmolLM2-135M-Instruct.gguf\nq-mars,0,SmolLM2-135M-Instruct.gguf\n"
                   "q-nowhere,1,\n")
    out = tmp_path / "o.jsonl"
    assert main(["import", str(RUNS), "--labels", str(lab), "--out", str(out)]) == 0
    text = capsys.readouterr()
    both = text.out + text.err
    assert both.count(f"labels {lab}:") == 1
    assert (f"labels {lab}: 3 rows; 2 of 4 runs matched, 2 got a success label; 2 runs without a row, "
            "1 rows without a run, 0 model-name conflicts") in both


@pytest.mark.parametrize("content", ["id,outcome\nq-paris,ok\n", "id,success\nzz,1\n",
                                     "id;success\nq-paris;NaN\n"])
def test_cli_refuses_a_labels_file_that_labels_nothing(tmp_path, content, capsys):
    # in this process (``python -m htc_core`` exits with what main returns; an exception would fail the test
    # instead of printing a traceback): two new processes per case cost ~9 s on a loaded 2-core machine
    lab = tmp_path / "labels.csv"
    lab.write_text(content)
    out = tmp_path / "o.jsonl"
    assert main(["import", str(RUNS), "--labels", str(lab), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"htc import: error: the labels file {lab} gave no run a success label" in err
    assert "Traceback" not in err and not out.exists()
    assert main(["fit", str(RUNS), "--labels", str(lab), "--out", str(tmp_path / "m.json")]) == 2
    assert "gave no run a success label" in capsys.readouterr().err
