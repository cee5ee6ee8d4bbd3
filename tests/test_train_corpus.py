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


# --- the fair comparison (--compare-corpus): both procedures scored on the same held-out runs -----------------------

EXAMPLES = REPO / "sample_runs" / "_examples"
SMALL = [str(EXAMPLES / f"{t}_Gemma3-270M-{m}.jsonl") for t in ("facts", "lists", "units")
         for m in ("greedy", "sampled-t0.7")]           # 3 families, 16 runs each (8 per run set)
FAST = {"alphas": (1.0,), "inner_folds": 2}


@pytest.fixture(scope="module")
def small():
    """The prepared data of 3 small families, and the "old" corpus: the first 4 runs of each run set."""
    import numpy as np

    from htc_core.experiments.transfer_families import prepare

    ts, _ = load(SMALL)
    ts = ts.labeled()
    position = ts.meta.groupby(["dataset", "model"]).cumcount().to_numpy()
    return prepare(ts), np.asarray(position < 4)


HELD = "lists | Gemma3-270M"


@pytest.fixture(scope="module")
def compared(small):
    from htc_core.experiments.corpus_compare import compare_corpora

    d, old = small
    return compare_corpora(d, old, families=[HELD], **FAST)


def test_both_procedures_score_every_run_of_the_heldout_family_and_the_same_ones(small, compared):
    import numpy as np

    d, old = small
    c, fams = compared, [HELD]
    for fam in fams:
        everything = sorted(d["ids"][d["groups"] == fam])
        assert sorted(c.heldout_ids[("old", fam)]) == sorted(c.heldout_ids[("new", fam)]) == everything
        rows = d["groups"] == fam
        for key, p in c.predictions.items():
            assert np.isfinite(p[rows]).all(), key
    # the old procedure trained on fewer runs: its held-out rows are not a subset of its training corpus
    assert old.sum() < len(old) and not old[d["groups"] == fams[0]].all()
    r = c.rows.set_index(["family", "corpus", "role"])
    assert r.loc[(fams[0], "old", "chosen")].n == r.loc[(fams[0], "new", "chosen")].n == 16


def test_no_label_of_the_heldout_family_reaches_a_fit_of_either_procedure(small, compared):
    """Flip every label of the held-out family: neither procedure's choice nor confidence on it may move. Move a
    training family's labels between its runs instead: they must move (the check can fail)."""
    import numpy as np

    from htc_core.experiments.corpus_compare import compare_corpora

    d, old = small
    fam, base = HELD, compared
    held = d["groups"] == fam
    flipped = compare_corpora({**d, "y": np.where(held, 1 - d["y"], d["y"])}, old, families=[fam], **FAST)
    for key in base.predictions:
        np.testing.assert_array_equal(base.predictions[key][held], flipped.predictions[key][held], err_msg=str(key))
    assert list(base.rows.method) == list(flipped.rows.method)
    other = np.flatnonzero(d["groups"] == "facts | Gemma3-270M")
    y = d["y"].copy()
    y[other] = np.roll(y[other], 3)                          # a training family's labels moved between its runs
    moved = compare_corpora({**d, "y": y}, old, families=[fam], **FAST)
    assert any(not np.allclose(base.predictions[k][held], moved.predictions[k][held]) for k in base.predictions)


def test_a_fold_whose_training_rows_hold_the_heldout_family_is_refused(small):
    import numpy as np

    from htc_core.experiments.corpus_compare import nested_fold

    d, _ = small
    with pytest.raises(ValueError, match="lists"):
        nested_fold(d, np.ones(len(d["y"]), dtype=bool), "lists | Gemma3-270M", **FAST)


def test_the_paired_bootstrap_of_identical_vectors_is_zero_and_of_a_shift_holds_it():
    import numpy as np

    from htc_core.experiments.corpus_compare import paired_bootstrap

    rng = np.random.default_rng(1)
    p = rng.uniform(0.1, 0.8, 6000)
    y = (rng.random(6000) < p).astype(float)                 # p is calibrated: its ECE is sampling noise only
    cells = np.repeat(["a", "b", "c"], 2000)
    same = paired_bootstrap(y, p, p, cells, n_boot=200)
    assert (same[["diff", "low", "high"]].abs().to_numpy() < 1e-12).all()
    worse = paired_bootstrap(y, p, p + 0.2, cells, n_boot=200)
    assert worse.loc["ece_mean", "a"] < 0.04 and worse.loc["ece_mean", "b"] == pytest.approx(0.2, abs=0.02)
    assert 0.15 < worse.loc["ece_mean", "low"] < worse.loc["ece_mean", "diff"] < worse.loc["ece_mean", "high"]
    assert worse.loc["auroc_mean", "diff"] == pytest.approx(0.0, abs=1e-12)      # a shift keeps the ranking


def test_the_bootstrap_draws_a_runs_prefixes_together():
    """Clusters of two rows with opposite outcomes: every resample keeps each pair whole, so a constant 0.5
    confidence is calibrated in every resample (row-wise resampling would not keep it so)."""
    import numpy as np

    from htc_core.experiments.corpus_compare import paired_bootstrap

    y = np.tile([0.0, 1.0], 100)
    clusters = np.repeat(np.arange(100), 2)
    b = paired_bootstrap(y, np.full(200, 0.5), np.full(200, 0.5), np.zeros(200), clusters=clusters, n_boot=100,
                         names=("old", "new"))
    assert b.loc["ece_mean", "old"] == 0.0
    draws = paired_bootstrap(y, np.full(200, 0.5), np.full(200, 0.6), np.zeros(200), clusters=clusters, n_boot=100)
    assert draws.loc["ece_mean", ["low", "high"]].tolist() == pytest.approx([0.1, 0.1])


def test_the_ship_rule_takes_the_tolerance_or_the_interval():
    from htc_dev.compare_corpus import TOLERANCE, no_worse

    assert TOLERANCE == 0.01
    assert no_worse(0.009, 0.005, 0.013)                     # within the tolerance
    assert no_worse(0.03, -0.01, 0.07)                       # within the noise
    assert not no_worse(0.031, 0.020, 0.039)                 # worse, and the interval says so
    assert no_worse(-0.05, -0.07, -0.03)                     # better
    assert not no_worse(-0.02, -0.03, -0.01, higher_is_better=True)   # AUROC down 0.02, interval below 0
    assert no_worse(0.02, 0.01, 0.03, higher_is_better=True)


def test_compare_corpus_refuses_corpus_of_and_uala(capsys, tmp_path):
    from htc_dev.train_gac import main
    from htc_dev.train_gac_prefix import main as main_prefix

    assert main(["--corpus-of", str(GAC), "--compare-corpus", str(GAC), "--table-only"]) == 2
    assert "neither --corpus-of" in capsys.readouterr().err
    assert main_prefix(["--uala", str(tmp_path), "--compare-corpus", str(GAC)]) == 2
    assert "neither --corpus-of" in capsys.readouterr().err
