"""``htc labels resolve`` (list the label conflicts, resolve one or all with --keep file|person|newest) and
``htc validate --labels`` on a labels file without a success column."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from htc_core.app.label_store import LabelStore
from htc_core.app.store import Store
from htc_core.cli import main
from htc_core.formats import load

RUNS = "tests/fixtures/formats/chat_trajectories.jsonl"   # q-paris T, q-tokyo T, q-mars T, q-gold F


@pytest.fixture()
def conflicted(tmp_path):
    """Three conflicts: q-paris and q-tokyo (file success vs person failure), q-mars (person success vs rule
    failure, so --keep file cannot decide it)."""
    ts, _ = load(RUNS)
    meta = ts.meta.copy()
    meta.loc[meta["id"] == "q-mars", "success"] = pd.NA
    store = Store(tmp_path)
    rs = store.add_run_set(dataclasses.replace(ts, meta=meta), name="chat").run_set_id
    labels = LabelStore(store)
    assert labels.record(rs, ["q-paris", "q-tokyo"], "failure", source="person").conflicts == ["q-paris", "q-tokyo"]
    labels.record(rs, ["q-mars"], "success", source="person")
    assert labels.record(rs, ["q-mars"], "failure", source="rule").conflicts == ["q-mars"]
    return store, rs, labels, ["labels", "resolve", "--data-dir", str(tmp_path)]


def _success(store, tid):
    v = store.trajectories().set_index("id").loc[tid, "success"]
    return None if pd.isna(v) else bool(v)


def test_list_then_resolve_one_keeping_the_file_label(conflicted, capsys):
    store, rs, labels, cmd = conflicted
    assert main(cmd) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and all(line.startswith(rs) for line in out)
    assert "q-paris\tnow success (file)\tproposed failure (person" in out[0]
    assert "q-mars\tnow success (person)\tproposed failure (rule" in out[2]
    assert main([*cmd, "--id", "q-paris", "--keep", "file"]) == 0
    assert "1 conflict(s) keeping the file label: 0 replaced by the proposed label, 1 kept" in capsys.readouterr().out
    assert _success(store, "q-paris") is True
    assert set(labels.conflicts()["id"]) == {"q-tokyo", "q-mars"}


def test_resolve_all_keeping_the_person_label(conflicted, capsys):
    store, rs, labels, cmd = conflicted
    assert main([*cmd, "--all", "--keep", "person"]) == 0
    assert "resolved 3 conflict(s) keeping the person label: 2 replaced by the proposed label, 1 kept" in \
        capsys.readouterr().out
    assert labels.conflicts().empty
    assert (_success(store, "q-paris"), _success(store, "q-tokyo"), _success(store, "q-mars")) == (False, False, True)
    h = labels.history(run_id="q-mars")
    assert list(zip(h["source"], h["status"])) == [("person", "active"), ("rule", "rejected")]


def test_keep_file_leaves_what_it_cannot_decide_and_says_so(conflicted, capsys):
    store, rs, labels, cmd = conflicted
    assert main([*cmd, "--all", "--keep", "file"]) == 1
    cap = capsys.readouterr()
    assert "resolved 2 conflict(s)" in cap.out
    assert "left 1 unresolved: neither side is a file label (q-mars: person vs rule)" in cap.err
    assert list(labels.conflicts()["id"]) == ["q-mars"]
    assert main([*cmd, "--all", "--keep", "newest"]) == 0              # the rule's label is the newest
    assert labels.conflicts().empty and _success(store, "q-mars") is False


def test_bad_requests_are_clear_errors(conflicted, capsys):
    store, rs, labels, cmd = conflicted
    assert main([*cmd, "--all"]) == 2
    assert "say which label wins: --keep file, --keep person or --keep newest" in capsys.readouterr().err
    assert main([*cmd, "--keep", "person"]) == 2
    assert "--id ID (one run) or --all" in capsys.readouterr().err
    assert main([*cmd, "--id", "q-gold", "--keep", "person"]) == 2
    assert "run 'q-gold' has no pending conflict" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*cmd, "--all", "--keep", "robot"])
    assert len(labels.conflicts()) == 3                                # nothing changed


def test_validate_labels_without_a_success_column_fails(tmp_path, capsys):
    bad = tmp_path / "labels.csv"
    bad.write_text("id,outcome\nq-paris,1\nq-gold,0\n", encoding="utf-8")
    assert main(["validate", RUNS, "--labels", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"the labels file {bad} cannot be used" in err
    assert f"{bad}:2" in err and "no success column" in err and "columns: id, outcome" in err
    good = tmp_path / "good.csv"
    good.write_text("id,success\nq-paris,1\nq-gold,0\n", encoding="utf-8")
    assert main(["validate", RUNS, "--labels", str(good)]) == 0
