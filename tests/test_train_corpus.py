"""`python -m htc_dev.train_gac --corpus-of MODEL_JSON`: the runs a shipped model file was trained on, taken back
out of a sample_runs/ that has grown by appending since (its card's table is then reproducible)."""
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


def test_the_corpus_of_the_shipped_gac_is_its_cards_run_sets_with_their_counts_and_rates(sample):
    card = {r["run_set"]: r for r in json.loads(GAC.read_text())["card"]["training_data"]["run_sets"]}
    got = {r["run_set"]: r for r in run_sets(corpus_of(sample, GAC))}
    assert got.keys() == card.keys()
    for name, r in card.items():
        assert got[name]["runs"] == r["runs"], name
        assert got[name]["success_rate"] == pytest.approx(r["success_rate"], abs=1e-4), name


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
