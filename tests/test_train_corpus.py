"""`python -m htc_dev.train_gac --corpus-of MODEL_JSON`: the runs a shipped model file was trained on, taken back
out of a sample_runs/ that has grown by appending since (its card's table is then reproducible)."""
import csv
import json
from pathlib import Path

import pytest

from htc_core.formats import load
from htc_dev.train_gac import corpus_of, run_sets

REPO = Path(__file__).resolve().parents[1]
GAC = REPO / "htc_core" / "calibration" / "models" / "gac.json"


@pytest.fixture(scope="module")
def sample():
    ts, _ = load([str(REPO / "sample_runs")])
    return ts.labeled()


def relabeled(corpus) -> dict[str, int]:
    """Per run set of ``corpus``: the successes the labels logged in sample_runs/relabels.tsv added (a label
    graded again after a judge fix; sample_runs/relabel.py)."""
    log = REPO / "sample_runs" / "relabels.tsv"
    if not log.exists():
        return {}
    with open(log, newline="", encoding="utf-8") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh, delimiter="\t")}
    m = corpus.meta
    out: dict[str, int] = {}
    for tid, d, mo in zip(corpus.ids, m["dataset"].astype(str), m["model"].astype(str)):
        if tid in rows:
            out[f"{d}_{mo}"] = out.get(f"{d}_{mo}", 0) + (rows[tid]["now"] == "true") - (rows[tid]["was"] == "true")
    return out


def test_the_corpus_of_the_shipped_gac_is_its_cards_run_sets_with_their_counts_and_rates(sample):
    """The card's rates, as trained: a card made before a logged relabel counts the old labels."""
    card = {r["run_set"]: r for r in json.loads(GAC.read_text())["card"]["training_data"]["run_sets"]}
    corpus = corpus_of(sample, GAC)
    got = {r["run_set"]: r for r in run_sets(corpus)}
    moved = relabeled(corpus)
    assert got.keys() == card.keys()
    for name, r in card.items():
        assert got[name]["runs"] == r["runs"], name
        now, before = got[name]["success_rate"], got[name]["success_rate"] - moved.get(name, 0) / r["runs"]
        assert r["success_rate"] in (pytest.approx(now, abs=1e-4), pytest.approx(before, abs=1e-4)), name


def test_the_first_runs_of_each_run_set_are_kept_in_file_order(sample, tmp_path):
    card = json.loads(GAC.read_text())
    card["card"]["training_data"]["run_sets"] = [
        {"run_set": "units_Gemma3-270M-greedy", "runs": 3}, {"run_set": "facts_SmolLM2-135M-greedy", "runs": 2}]
    f = tmp_path / "m.json"
    f.write_text(json.dumps(card))
    sub = corpus_of(sample, f)
    m = sample.meta
    first = []
    for d, mo, n in [("units", "Gemma3-270M-greedy", 3), ("facts", "SmolLM2-135M-greedy", 2)]:
        first += list(sample.ids[(m["dataset"] == d).to_numpy() & (m["model"] == mo).to_numpy()][:n])
    assert sorted(sub.ids) == sorted(first)


def test_a_card_counting_more_runs_than_the_files_hold_is_refused_with_the_run_set_named(sample, tmp_path):
    card = json.loads(GAC.read_text())
    card["card"]["training_data"]["run_sets"] = [{"run_set": "units_Gemma3-270M-greedy", "runs": 10**6}]
    f = tmp_path / "m.json"
    f.write_text(json.dumps(card))
    with pytest.raises(ValueError, match="units_Gemma3-270M-greedy"):
        corpus_of(sample, f)
