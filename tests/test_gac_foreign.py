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
        assert e["low"] <= r["ece"] <= e["high"], (name, r["ece"], e)
        assert e["verdict"] == "outside the training data" and "missing_topk" in e["flagged"]
        assert set(r["signals"]) == set(SIGNALS) and np.isnan(r["signals"]["neg_entropy"])   # no top-k there
        # without alternatives the shipped transfer falls back to the Platt-scaled min token probability, the
        # best training-free signal on UALA: same ranking, run by run
        assert r["per_run"]["auroc"] == pytest.approx(r["signals"]["min_prob"], abs=1e-9)
        # each file is scored as a set (rank-mean-platt): it ranks at least as well, and is better calibrated
        assert r["as_set"] and r["gac_ranks_at_least_as_well"] and r["per_run"]["gac_ranks_at_least_as_well"]
        assert r["ece"] < r["per_run"]["ece"] and r["brier"] < r["per_run"]["brier"]


def test_expected_range_holds_the_measured_ece_of_gac_prefix_at_every_cut(uala):
    gac = load_model("gac-prefix")
    assert gac.transfer is not None and gac.transfer["signal"] in SIGNALS
    for name, ts in uala:
        rows = evaluate_prefixes(gac, ts)
        assert [r["cut"] for r in rows] == [c for c, _ in CUTS]
        for r in rows:
            assert r["expected"]["low"] <= r["ece"] <= r["expected"]["high"], (name, r["cut"], r["ece"])
            assert r["auroc"] > 0.7                        # 0.495 before the running signal was combined


def test_fixture_sets_are_the_labeled_ones():
    names = [n for n, _ in fixture_sets()]
    assert names == ["fixture cod_native.jsonl (synthetic)"]       # the call logs and OTel files carry no labels


@pytest.mark.slow
def test_new_model_family_case():
    """GACs trained as the shipped ones on the SmolLM2 runs alone score the Gemma runs: every expected range
    holds the measured ECE, and the GAC ranks all Gemma runs at least as well as the best single signal."""
    gacs, pre, sets = new_family_case()
    assert all(not str(m).startswith("Gemma") for g in gacs.values()
               for m in g.models_["without_alternatives"].training_summary_["models"])
    for name, ts in sets:
        for gac in gacs.values():
            r = evaluate_set(gac, ts)
            assert r["expected"]["low"] <= r["ece"] <= r["expected"]["high"], (name, r["ece"], r["expected"])
        for r in evaluate_prefixes(pre, ts):
            assert r["expected"]["low"] <= r["ece"] <= r["expected"]["high"], (name, r["cut"], r["ece"])
    r = evaluate_set(gacs["gac"], sets[-1][1])
    # the 96 Gemma runs are scored as a set: run by run, the GAC ranks them at least as well as the best signal;
    # as a set it does not (AUROC 0.591 vs 0.609) and its ECE is worse (0.197 vs 0.127): measured, docs/gac.md
    assert sets[-1][0].startswith("Gemma3 all tasks") and r["as_set"] and r["per_run"]["gac_ranks_at_least_as_well"]
