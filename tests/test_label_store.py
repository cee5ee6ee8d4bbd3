"""Labels as data in the store: history, supersession, conflicts with file labels, export/import and the CLI."""

from __future__ import annotations

import pandas as pd
import pytest

from htc_core.app.label_store import UPLOAD_NOTE, LabelStore
from htc_core.app.store import Store
from htc_core.cli import main
from htc_core.formats import load

RUNS = "tests/fixtures/formats/chat_trajectories.jsonl"   # q-paris T, q-tokyo T, q-mars T, q-gold F


@pytest.fixture()
def stored(tmp_path):
    ts, _ = load(RUNS)
    meta = ts.meta.copy()
    meta.loc[meta["id"] == "q-mars", "success"] = pd.NA       # one unlabeled run
    import dataclasses

    ts = dataclasses.replace(ts, meta=meta)
    store = Store(tmp_path)
    rs = store.add_run_set(ts, name="chat").run_set_id
    return store, rs, LabelStore(store)


def _success(store, tid):
    t = store.trajectories().set_index("id")
    v = t.loc[tid, "success"]
    return None if pd.isna(v) else bool(v)


def test_person_label_on_an_unlabeled_run_is_applied_and_superseded_with_history(stored):
    store, rs, labels = stored
    rev = store.revision()
    assert labels.record(rs, ["q-mars"], "failure", source="person", note="wrong city").applied == ["q-mars"]
    assert _success(store, "q-mars") is False and store.revision() != rev
    assert labels.record(rs, ["q-mars"], "success", source="person").applied == ["q-mars"]
    assert labels.record(rs, ["q-mars"], "skip", source="person").applied == ["q-mars"]
    assert _success(store, "q-mars") is None
    h = labels.history(run_id="q-mars")
    assert list(h["value"]) == ["failure", "success", "skip"]
    assert list(h["status"]) == ["superseded", "superseded", "active"] and h["note"][0] == "wrong city"


def test_a_file_label_is_never_overwritten_silently(stored):
    store, rs, labels = stored
    res = labels.record(rs, ["q-paris", "q-gold"], ["failure", "failure"], source="person")
    assert res.conflicts == ["q-paris"] and res.unchanged == ["q-gold"]
    assert _success(store, "q-paris") is True                       # the upload's label still holds
    c = labels.conflicts()
    assert c.loc[0, ["id", "current", "current_source", "proposed"]].tolist() == ["q-paris", "success", "file",
                                                                                  "failure"]
    assert labels.resolve(rs, "q-paris", accept=True)
    assert _success(store, "q-paris") is False and labels.conflicts().empty
    h = labels.history(run_id="q-paris")
    assert list(zip(h["source"], h["note"].where(h["source"] == "file", ""), h["status"])) == [
        ("file", UPLOAD_NOTE, "superseded"), ("person", "", "active")]


def test_rule_never_overrides_a_person_and_rejecting_keeps_the_current(stored):
    store, rs, labels = stored
    labels.record(rs, ["q-mars"], "success", source="person")
    assert labels.record(rs, ["q-mars"], "failure", source="rule").conflicts == ["q-mars"]
    assert labels.resolve(rs, "q-mars", accept=False)
    assert _success(store, "q-mars") is True and not labels.resolve(rs, "q-mars", accept=False)
    assert labels.record(rs, ["q-mars"], "failure", source="person", force=True).applied == ["q-mars"]


def test_bad_values_and_unknown_ids(stored):
    _, rs, labels = stored
    with pytest.raises(ValueError, match="success, failure, skip"):
        labels.record(rs, ["q-mars"], "maybe", source="person")
    with pytest.raises(ValueError, match="source"):
        labels.record(rs, ["q-mars"], "skip", source="robot")
    assert labels.record(rs, ["nope"], "skip", source="person").unknown == ["nope"]


def test_export_import_round_trip_and_labels_survive_a_new_store_object(stored, tmp_path):
    store, rs, labels = stored
    labels.record(rs, ["q-mars"], "failure", source="person")
    text = labels.export_csv()
    again = LabelStore(Store(store.data_dir))                        # a restart: a fresh store object
    assert again.export_csv() == text
    assert "q-mars,0,failure,person" in text
    f = tmp_path / "l.csv"
    f.write_text(text)
    assert again.import_file(f, rs).applied == []                    # the same labels: nothing changes
    ts, rep = load(RUNS, labels=f)                                   # our export is a valid --labels file
    assert rep.labels["labeled"] == 4


def test_cli_export_and_import(stored, tmp_path, capsys):
    store, rs, _ = stored
    f = tmp_path / "in.tsv"
    f.write_text("id\tsuccess\nq-mars\t1\nghost\t0\n")
    assert main(["labels", "import", str(f), "--data-dir", str(store.data_dir), "--run-set", "chat"]) == 0
    out = capsys.readouterr().out
    assert "1 labels written, 0 unchanged, 0 conflicts to resolve, 1 ids match no run" in out and "'ghost'" in out
    assert main(["labels", "export", "--data-dir", str(store.data_dir), "--out", str(tmp_path / "o.csv")]) == 0
    assert "q-mars,1,success,file,imported from in.tsv" in (tmp_path / "o.csv").read_text()
    assert main(["labels", "export", "--data-dir", str(store.data_dir), "--run-set", "nope"]) == 2
    assert "no run set named 'nope'" in capsys.readouterr().err


def test_deleting_a_run_set_deletes_its_labels(stored):
    store, rs, labels = stored
    labels.record(rs, ["q-mars"], "failure", source="person")
    assert store.delete_run_set(rs)
    assert labels.history().empty and labels.current().empty
