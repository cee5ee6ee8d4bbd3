"""The feature-family ablation and the selection frequency, on real runs."""

import numpy as np
import pytest

from htc_core.experiments.ablation import LEVELS, ablation, family_combinations, selection_frequency
from htc_core.calibration.evaluation import evaluate
from htc_core.features import FEATURE_NAMES, REGISTRY, extract
from htc_core.formats import load

FAST = (0.1, 1.0, 10.0)
KW = dict(alphas=FAST, inner_folds=3, n_splits=3, seeds=[42, 43])


@pytest.fixture(scope="module")
def run_a(uala_run_a):
    ts, _ = load(uala_run_a)
    return ts


@pytest.fixture(scope="module")
def result(run_a):
    return ablation(run_a, **KW)


def test_fifteen_combinations_each_variant():
    combos = family_combinations()
    assert len(combos) == 15 and len(set(combos)) == 15
    assert combos[0] == ("Dynamics", "Position", "Stability", "Structure")
    assert sum(len(c) == 1 for c in combos) == 4 and sum(len(c) == 2 for c in combos) == 6


def test_all_families_row_equals_evaluate(run_a, result):
    ev = evaluate(run_a, methods=["HTC-Full", "HTC-Reduced"], **KW)
    rows = result.to_frame().set_index(["variant", "families"])
    for v, name in (("full", "HTC-Full"), ("reduced", "HTC-Reduced")):
        row = rows.loc[(v, "Dynamics+Position+Stability+Structure")]
        assert row.n_columns == 48
        for m in ("ece", "brier", "auroc", "n_features"):
            for s in ("mean", "std"):
                assert row[f"{m}_{s}"] == ev.summary[name][m][s], (v, m, s)
    # and the selection counts of its fits equal evaluate's
    assert result.evaluation.selected_counts["HTC-Reduced"].equals(ev.selected_counts["HTC-Reduced"])


def test_family_subsets_use_only_their_columns(result):
    ev = result.evaluation
    for name, W in ev.weights.items():
        if "[" not in name:
            continue
        fams = name.split("[")[1].rstrip("]").split("+")
        outside = np.array([REGISTRY[f].family not in fams for f in FEATURE_NAMES])
        assert W.shape == (6, 48) and not W[:, outside].any(), name
    rows = result.to_frame()
    assert len(rows) == 30 and set(rows.variant) == {"full", "reduced"}
    full = rows[rows.variant == "full"]
    assert (full.n_features_mean == full.n_columns).all()           # L2 keeps every column of its families
    assert list(full.auroc_mean) == sorted(full.auroc_mean, reverse=True)


def test_selection_frequency_counts_by_hand(result):
    sf = result.selection["reduced"]
    W = np.abs(result.evaluation.weights["HTC-Reduced"])
    assert sf.n_fits == 6 == W.shape[0]
    top1 = np.bincount(W.argmax(axis=1), minlength=48)
    assert list(sf.by_feature.top1) == list(top1)
    assert list(sf.by_feature.selected) == list((W > 0).sum(axis=0))
    for level, k in LEVELS[:3]:
        assert sf.by_feature[level].sum() == np.minimum((W > 0).sum(axis=1), k).sum()
        assert sf.by_family[level].sum() == sf.by_feature[level].sum()
    assert sf.by_family.set_index("family").n_features.to_dict() == {"Dynamics": 19, "Position": 14,
                                                                     "Stability": 10, "Structure": 5}
    assert sf.by_feature.top1_pct.sum() == pytest.approx(100.0)
    assert list(sf.top("top1", 3).columns) == ["feature", "family", "top1", "top1_pct"]
    with pytest.raises(ValueError, match="level must be one of"):
        sf.top("top7")


def test_selection_frequency_of_a_plain_evaluation(run_a):
    ev = evaluate(run_a, methods=["HTC-Reduced"], **KW)
    sf = selection_frequency(ev)
    assert sf.method == "HTC-Reduced" and sf.n_fits == 6
    with pytest.raises(ValueError, match="feature-selecting methods"):
        selection_frequency(ev, "Bottom10")
    with pytest.raises(ValueError, match="must be an EvaluationResult"):
        selection_frequency({"weights": {}})


def test_result_dict_and_table(result):
    d = result.to_dict()
    assert d["experiment"] == "ablation" and d["n"] == 466 and len(d["rows"]) == 30
    assert set(d["selection_frequency"]) == {"full", "reduced"}
    fam = d["selection_frequency"]["reduced"]["by_family"]
    assert {f["family"] for f in fam} == {"Dynamics", "Position", "Stability", "Structure"}
    t = result.table()
    assert "Structure (5)" in t and "feature selection frequency, HTC-Reduced (6 fits" in t


def test_ablation_needs_the_48_features(run_a):
    X = extract(run_a).values[:, :10]
    with pytest.raises(ValueError, match="HTC features"):
        ablation(X, run_a.labels, **KW)
