"""Done-when of issue 25 on the foreign sets held here: the expected ECE range the GAC prints before any label
is seen holds the ECE measured afterwards, and the GAC ranks as the benchmark says, side by side with each
training-free signal (``python -m htc_dev.bench gac_foreign`` prints the same rows)."""

import numpy as np
import pytest

from htc_dev.bench.gac_foreign import (CUTS, evaluate_prefixes, evaluate_set, fixture_sets, new_family_case,
                                        uala_sets)
from htc_core.calibration.models import load_model
from htc_core.calibration.transfer_methods import SIGNALS


@pytest.fixture(scope="module")
def uala(uala_dir):
    sets = uala_sets(uala_dir)
    assert len(sets) >= 3                       # run-a, run-c and both together
    return sets


@pytest.mark.parametrize("model", ["gac", "gac-full"])
def test_expected_range_holds_the_measured_ece_on_every_uala_file(uala, model):
    gac = load_model(model)
    for name, ts in uala:
        r = evaluate_set(gac, ts)
        e = r["expected"]
        assert r["inside"], (name, r["ece"], e)                    # expected_error.holds (to 1e-9)
        assert e["verdict"] == "outside the training data" and "missing_topk" in e["flagged"]
        assert set(r["signals"]) == set(SIGNALS) and np.isnan(r["signals"]["neg_entropy"])   # no top-k there
        # the shipped transfer (signal-oof) scores every run by the minimum token probability through its
        # out-of-family Platt map, the best training-free signal on UALA: same ranking, run by run
        assert r["per_run"]["auroc"] == pytest.approx(r["signals"]["min_prob"], abs=1e-9)
        assert r["per_run"]["gap"]["verdict"] == "at least as well" and r["per_run"]["gap"]["signal"] == "min_prob"
        # no set-level step won leave-one-family-out against signal-oof, so --as-set changes nothing
        assert not r["as_set"] and r["ece"] == r["per_run"]["ece"] and r["gac_ranks_at_least_as_well"]
        if name == "UALA all files":           # the new-model-family bar (docs/gac.md); run-c alone: ECE 0.167
            assert r["ece"] <= 0.15 and r["auroc"] >= 0.70


def test_expected_range_holds_the_measured_ece_of_gac_prefix_at_every_cut(uala):
    gac = load_model("gac-prefix")
    assert gac.transfer is not None and gac.transfer["signal"] in SIGNALS
    for name, ts in uala:
        rows = evaluate_prefixes(gac, ts)
        assert [r["cut"] for r in rows] == [c for c, _ in CUTS]
        for r in rows:
            assert r["inside"], (name, r["cut"], r["ece"], r["expected"])
            assert r["auroc"] > 0.7                        # 0.495 before the running signal was combined


def test_auroc_gap_tells_noise_from_a_clear_loss(uala):
    """The paired bootstrap of the AUROC difference: the best signal itself is "at least as well"; that signal
    turned upside down on 616 runs is a clear loss; a slightly blurred copy on 16 runs is within noise."""
    from htc_dev.bench.gac_foreign import auroc_gap
    from htc_core.calibration.transfer_methods import training_free_signals

    ts = uala[-1][1]                                        # both UALA files: the best signal is min_prob
    y = np.asarray(ts.labels, dtype=np.float64)
    best = training_free_signals(ts)["min_prob"].to_numpy()
    same = auroc_gap(y, best, ts)
    assert same["signal"] == "min_prob" and same["verdict"] == "at least as well" and same["diff"] == 0
    flipped = auroc_gap(y, -best, ts)
    assert flipped["verdict"] == "clear loss" and flipped["high"] < 0
    assert flipped["diff"] == pytest.approx(1 - 2 * r_auroc(y, best), abs=1e-9)    # AUROC(-s) = 1 - AUROC(s)
    rng = np.random.default_rng(1)
    few = np.sort(rng.choice(len(y), 16, replace=False))
    g = auroc_gap(y[few], best[few] + rng.normal(0, 0.02, 16), ts.take(few))
    assert g["low"] <= g["diff"] <= g["high"] and g["high"] >= 0
    assert g["verdict"] == ("at least as well" if g["diff"] >= 0 else "within noise")


def r_auroc(y, s):
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(y, s)


def test_fixture_sets_are_the_labeled_ones():
    names = [n for n, _ in fixture_sets()]
    assert names == ["fixture cod_native.jsonl (synthetic)"]       # the call logs and OTel files carry no labels


@pytest.mark.slow
def test_new_model_family_case():
    """GACs trained as the shipped ones on the SmolLM2 runs alone score the Gemma runs: every expected range
    holds the measured ECE, and the GAC ranks all Gemma runs within 0.03 AUROC of the best single signal (within
    sampling noise on the 1,521 runs of 2026-11-27; a clear loss by a hair on the 2,001 of 2026-11-28)."""
    gacs, pre, sets = new_family_case()
    assert all(not str(m).startswith("Gemma") for g in gacs.values()
               for m in g.models_["without_alternatives"].training_summary_["models"])
    for name, ts in sets:
        for gac in gacs.values():
            r = evaluate_set(gac, ts)
            assert r["inside"], (name, r["ece"], r["expected"])        # expected_error.holds (to 1e-9)
        for r in evaluate_prefixes(pre, ts):
            assert r["inside"], (name, r["cut"], r["ece"], r["expected"])
    r = evaluate_set(gacs["gac"], sets[-1][1])
    # all 2,001 Gemma runs (with the easy tier of facts and lists), run by run (no set-level step is chosen): ranked
    # by the minimum token probability, AUROC 0.659 against the sequence probability's 0.674, a gap of -0.015 whose
    # 95% paired bootstrap interval [-0.029, -0.001] just misses 0: a clear loss, so bar 1 is not met on this set
    # (on the 1,521 runs before: 0.651 against 0.652, within noise; on the 96 before those it was the best signal);
    # ECE 0.044 (was 0.067)
    assert sets[-1][0].startswith("Gemma3 all tasks") and not r["as_set"]
    assert r["per_run"]["gap"]["diff"] > -0.03, r["per_run"]["gap"]
    assert r["ece"] < 0.08
