"""Hostile input, round two (issue 16): the corpus in tests/fixtures/hostile/, the big inputs generated here,
and what the CLI does with them (nothing lost, outputs written atomically, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from htc_core.cli import main
from htc_core.formats import detect, load
from htc_core.jsonvalues import MAX_DEPTH
from hostile_records import HOSTILE_DIR, ROOT, hostile_line, templates, with_id

EXPECTED = json.loads((HOSTILE_DIR / "EXPECTED.json").read_text(encoding="utf-8"))
DATA_FILES = sorted(n for n, e in EXPECTED.items() if e["format"] != "labels")
T = templates()


def assert_errors(rep, expected: list[dict]) -> None:
    got = sorted(rep.errors, key=lambda p: p.line or 0)
    assert len(got) == len(expected), [str(p) for p in got]
    for p, e in zip(got, sorted(expected, key=lambda e: e["line"])):
        assert p.line == e["line"], str(p)
        assert p.field == e["field"], str(p)
        assert e["reason"] in p.reason, str(p)


def test_corpus_is_complete():
    on_disk = {p.name for p in HOSTILE_DIR.iterdir() if p.suffix in (".jsonl", ".json", ".csv")} - {"EXPECTED.json"}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("name", DATA_FILES)
def test_corpus_file_keeps_good_lines_and_reports_the_bad_ones(name):
    e = EXPECTED[name]
    path = HOSTILE_DIR / name
    assert detect(path) == (e["format"], "")
    ts, rep = load(path)
    assert list(ts.ids) == e["kept"]
    assert_errors(rep, e["errors"])
    assert rep.rejected == len(e["errors"])


@pytest.mark.parametrize("name", DATA_FILES)
def test_corpus_file_through_validate_and_import(name, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["validate", str(HOSTILE_DIR / name)]) == 0
    assert main(["import", str(HOSTILE_DIR / name), "--out", str(out)]) == 0
    # what was written reads back whole: nothing a reader refused reached the output
    ts, rep = load(out)
    assert list(ts.ids) == EXPECTED[name]["kept"] and not rep.problems
    assert "Traceback" not in capsys.readouterr().err


def _unlabeled_copy(tmp_path) -> Path:
    """native_bom.jsonl without its success labels (so that only the labels file can label it)."""
    objs = [json.loads(ln) for ln in (HOSTILE_DIR / "native_bom.jsonl").read_text(encoding="utf-8-sig").splitlines()]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in o.items() if k != "success"}) + "\n" for o in objs))
    return path


def test_hostile_labels_cost_only_their_own_rows(tmp_path):
    ts, rep = load(_unlabeled_copy(tmp_path), labels=HOSTILE_DIR / "labels_hostile.jsonl")
    assert list(ts.ids) == ["good-1", "good-2", "good-3"]
    labeled = [i for i, y in zip(ts.ids, ts.labels) if y == y]
    assert labeled == EXPECTED["labels_hostile.jsonl"]["labeled"]
    assert_errors(rep, EXPECTED["labels_hostile.jsonl"]["errors"])
    assert rep.rejected == 0  # a bad labels line rejects no trajectory


# ------------------------------------------------------- big inputs, generated here
def _three(fmt: str, middle: str) -> list[str]:
    return [json.dumps(with_id(fmt, T[fmt][0], "good-1")), middle, json.dumps(with_id(fmt, T[fmt][0], "good-3"))]


@pytest.mark.parametrize("fmt", ["openai-calllog", "openai-chat", "native"])
def test_bare_array_49000_deep_is_one_bad_line(fmt, tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(_three(fmt, "[" * 49_000 + "]" * 49_000)) + "\n", encoding="utf-8")
    ts, rep = load(path, format=fmt)
    assert list(ts.ids) == ["good-1", "good-3"]
    (err,) = rep.errors
    assert err.line == 2 and "nested" in err.reason


def test_chat_metadata_nested_5000_deep_is_reported_as_its_field(tmp_path):
    obj = with_id("openai-chat", T["openai-chat"][0], "bad")
    obj["metadata"] = {"run": "x"}
    line = hostile_line(obj, ("metadata", "run"), '{"a":' * 5000 + "1" + "}" * 5000)
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(_three("openai-chat", line)) + "\n", encoding="utf-8")
    ts, rep = load(path)
    assert list(ts.ids) == ["good-1", "good-3"]
    (err,) = rep.errors
    assert err.line == 2 and "nested" in err.reason


def test_chat_metadata_just_under_the_depth_limit_is_kept(tmp_path):
    obj = with_id("openai-chat", T["openai-chat"][0], "deep-ok")
    obj["metadata"] = {"run": "x"}
    depth = MAX_DEPTH - 5
    path = tmp_path / "chat.jsonl"
    path.write_text(hostile_line(obj, ("metadata", "run"), "[" * depth + "]" * depth) + "\n", encoding="utf-8")
    ts, rep = load(path)
    assert list(ts.ids) == ["deep-ok"] and not rep.errors


def test_labels_csv_field_over_the_csv_limit_costs_only_its_row(tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("id,success,note\ngood-1,yes,a\ngood-2,no," + "x" * 140_000 + "\ngood-3,no,c\n",
                      encoding="utf-8")
    ts, rep = load(_unlabeled_copy(tmp_path), labels=labels)
    lab = dict(zip(ts.ids, ts.labels))
    assert lab["good-1"] == 1.0 and lab["good-3"] == 0.0 and lab["good-2"] != lab["good-2"]  # NaN: row lost
    (err,) = rep.errors
    assert err.line == 3 and "field larger than field limit" in err.reason
    assert rep.rejected == 0


# ------------------------------------------------------------------ CLI outputs
def test_import_over_an_existing_file_with_a_bad_line_keeps_every_good_one(tmp_path):
    out = tmp_path / "existing.jsonl"
    assert main(["import", str(ROOT / "sample_runs" / "units"), "--out", str(out)]) == 0
    assert main(["import", str(HOSTILE_DIR / "native_surrogate_question.jsonl"), "--out", str(out)]) == 0
    ts, rep = load(out)
    assert list(ts.ids) == EXPECTED["native_surrogate_question.jsonl"]["kept"] and not rep.problems


def _fail_after(n: int):
    """A json.dumps that fails on its (n+1)-th call: a fault in the middle of writing."""
    real = json.dumps
    calls = {"n": 0}

    def dumps(*a, **kw):
        calls["n"] += 1
        if calls["n"] > n:
            raise OSError(28, "No space left on device (injected)")
        return real(*a, **kw)
    return dumps


@pytest.mark.parametrize("command,name", [("import", "old.jsonl"), ("features", "old.csv")])
def test_a_failure_mid_write_leaves_the_previous_output_byte_for_byte(command, name, tmp_path, monkeypatch):
    from htc_core.formats import native

    out = tmp_path / name
    src = ROOT / "sample_runs" / "units"
    assert main([command, str(src), "--out", str(out)]) == 0
    before = out.read_bytes()
    assert before.count(b"\n") > 100
    if command == "import":
        monkeypatch.setattr(native.json, "dumps", _fail_after(5))   # dies after 5 of ~1000 lines
    else:  # the rows of each chunk are written by Arrow's CSV writer (htc_core.tablewriter)
        import pyarrow.csv as pacsv
        monkeypatch.setattr(pacsv, "write_csv", lambda table, fh, *a, **kw: (fh.write(b"id,\n1,"), 1 / 0))
    if command == "import":
        assert main([command, str(HOSTILE_DIR / "native_bom.jsonl"), "--out", str(out)]) == 1
    else:
        with pytest.raises(ZeroDivisionError):
            main([command, str(HOSTILE_DIR / "native_bom.jsonl"), "--out", str(out)])
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left behind


@pytest.mark.parametrize("command,out", [("import", "{file}/x.jsonl"), ("features", "{file}/x.csv"),
                                         ("fit", "{file}/m.json"), ("score", "{file}/s.csv")])
def test_an_unwritable_out_fails_before_any_work(command, out, tmp_path, capsys, uala_run_a):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    target = out.format(file=blocker)
    args = [command, str(uala_run_a), "--out", target]
    if command == "score":
        args.insert(1, str(tmp_path / "no-model.json"))  # the out check comes before reading the model
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"htc {command}: error: --out" in err and "Traceback" not in err
    assert "trajectories" not in err  # failed before the load report


def test_piping_into_head_prints_no_traceback():
    cmd = (f"{sys.executable} -m htc_core import {ROOT / 'sample_runs' / 'units'} 2>{{err}} | head -c 100 "
           ">/dev/null")
    import tempfile
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as err:
        subprocess.run(cmd.format(err=err.name), shell=True, check=False, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        text = Path(err.name).read_text()
    assert "Traceback" not in text and "BrokenPipeError" not in text


def test_features_of_hostile_files_write_only_good_rows(tmp_path):
    out = tmp_path / "f.csv"
    assert main(["features", str(HOSTILE_DIR), "--out", str(out)]) == 0
    import pandas as pd
    df = pd.read_csv(out)
    n_kept = sum(len(EXPECTED[n]["kept"]) for n in DATA_FILES)
    assert len(df) == n_kept and df["id"].tolist().count("bad") == 0


@pytest.mark.parametrize("n,n_fail,warns", [(9, 4, True), (40, 5, True), (40, 15, False)])
def test_fit_on_a_tiny_sample_warns_that_the_numbers_are_unstable(n, n_fail, warns, tmp_path, capsys):
    from test_cli_calibration import write_runs

    runs = write_runs(tmp_path / "runs.jsonl", n=n, n_fail=n_fail)
    assert main(["fit", str(runs), "--out", str(tmp_path / "m.json")]) == 0
    err = capsys.readouterr().err
    assert ("warning:" in err and "unstable" in err) == warns, err


@pytest.mark.parametrize("command", ["import", "features", "fit", "score"])
def test_disk_full_at_the_end_of_any_write_leaves_the_previous_output(command, tmp_path, monkeypatch, capsys):
    """Every command that writes a file goes through htc_core.atomic: a failure when the data is flushed (a full
    disk) leaves the previous output byte-for-byte, and no temporary file."""
    import os

    src = str(ROOT / "sample_runs" / "units")
    model = tmp_path / "model.json"
    assert main(["fit", src, "--out", str(model)]) == 0
    out = {"import": tmp_path / "o.jsonl", "features": tmp_path / "o.csv", "fit": model,
           "score": tmp_path / "o.csv"}[command]
    if not out.exists():
        out.write_bytes(b"the previous output\n")
    before = out.read_bytes()
    args = {"import": ["import", src], "features": ["features", src], "fit": ["fit", src],
            "score": ["score", str(model), src]}[command] + ["--out", str(out)]

    def full(fd):
        raise OSError(28, "No space left on device (injected)")

    monkeypatch.setattr(os, "fsync", full)
    capsys.readouterr()
    assert main(args) == 1       # issue 30 #13: an `htc X: error:` line, not a traceback
    err = capsys.readouterr().err
    assert f"htc {command}: error: No space left on device" in err and "Traceback" not in err
    assert out.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".htc-tmp")]
