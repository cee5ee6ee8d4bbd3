"""Label-free evaluation and aggregation of rankers (htc_core.calibration.rank_ensemble), against synthetic run sets
with a known answer, and the GAC's set-level transfer built on it."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from htc_core.calibration import rank_ensemble as rk
from htc_core.calibration.metrics import auroc

TRUE_AUROC = np.array([0.60, 0.70, 0.80, 0.90])


def independent_rankers(n=6000, rate=0.4, aurocs=TRUE_AUROC, seed=0):
    """Labels and one column per ranker, conditionally independent given the label: N(0, 1) for failures,
    N(mu, 1) for successes, mu = sqrt(2) * Phi^-1(AUROC) (so each column's population AUROC is the given one)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < rate).astype(float)
    mu = np.sqrt(2) * norm.ppf(aurocs)
    return y, rng.standard_normal((n, len(aurocs))) + y[:, None] * mu


def test_label_free_estimates_recover_known_aurocs():
    y, S = independent_rankers()
    est = rk.estimate_auroc(S, rate=y.mean(), names=["a", "b", "c", "d"])
    measured = np.array([auroc(y, rk.scaled_ranks(S[:, j])[:, 0]) for j in range(S.shape[1])])
    np.testing.assert_allclose(measured, TRUE_AUROC, atol=0.02)          # the synthetic set is what it says
    np.testing.assert_allclose(est.auroc, TRUE_AUROC, atol=0.03)
    assert est.residual < 0.1 and list(np.argsort(est.auroc)) == [0, 1, 2, 3]
    assert est.to_dict()["auroc"]["d"] == pytest.approx(est.auroc[3], abs=1e-4)


def test_the_order_of_the_rankers_needs_no_base_rate():
    y, S = independent_rankers(seed=1)
    for rate in (0.2, 0.5, 0.8):                      # a wrong base rate scales the estimates, not their order
        assert list(np.argsort(rk.estimate_auroc(S, rate=rate).auroc)) == [0, 1, 2, 3]


def test_weighted_ensemble_ranks_at_least_as_well_as_the_best_single_ranker():
    y, S = independent_rankers(seed=2)
    est = rk.estimate_auroc(S, rate=y.mean())
    w = rk.ensemble_weights(est)
    assert w.sum() == pytest.approx(1.0) and np.all(np.diff(w) > 0)     # better rankers weigh more
    combined = rk.combine_ranks(S, w)
    best_single = max(auroc(y, rk.scaled_ranks(S[:, j])[:, 0]) for j in range(4))
    assert auroc(y, combined) >= best_single + 0.005
    # the plain mean rank is no better than the weighted one here (equal weights give the weak rankers too much)
    assert auroc(y, rk.rank_mean(S)) <= auroc(y, combined) + 1e-9


def test_conditional_dependence_inflates_the_estimates():
    """The limitation measured on real runs: two copies of a weak ranker share their noise, which the rank-one
    model reads as signal, so the copies are estimated far above their true AUROC (and above a better ranker)."""
    y, S = independent_rankers(seed=3)
    weak = S[:, 0] + 0.05 * np.random.default_rng(4).standard_normal(len(y))
    est = rk.estimate_auroc(np.column_stack([S[:, 0], weak, S[:, 2], S[:, 3]]), rate=y.mean())
    assert est.raw[0] > 0.9 and est.raw[0] > est.raw[2]        # true 0.60 vs 0.80
    assert est.residual > 0.1


def test_rank_one_fit_and_consensus():
    u = np.array([0.3, 0.2, 0.1, 0.25])
    C = np.outer(u, u) + np.diag([1.0, 2.0, 3.0, 4.0])           # the diagonal is ignored
    got, resid = rk.rank_one_fit(C)
    np.testing.assert_allclose(got, u, atol=1e-8)
    assert resid < 1e-8
    np.testing.assert_allclose(rk.rank_one_fit(np.outer(-u, -u))[0], u, atol=1e-8)   # signed: sum(u) >= 0
    with pytest.raises(ValueError, match="at least 3 rankers"):
        rk.rank_one_fit(np.eye(2))
    y, S = independent_rankers(seed=5)
    assert int(np.argmax(rk.consensus_agreement(S))) == 3


def test_rank_mean_reorder_and_usable_columns():
    S = np.array([[1.0, np.nan, 5.0, 2.0], [2.0, np.nan, 5.0, 1.0], [3.0, 0.3, 5.0, 3.0]])
    np.testing.assert_array_equal(rk.usable_columns(S), [True, False, False, True])   # mostly NaN; constant
    r = rk.rank_mean(S)
    np.testing.assert_allclose(r, [(1 / 3 + 2 / 3) / 2, (2 / 3 + 1 / 3) / 2, 1 - 0.5 / 3])   # clipped into (0, 1)
    np.testing.assert_allclose(rk.rank_mean(np.full((4, 2), np.nan)), 0.5)
    np.testing.assert_allclose(rk.reorder([0.9, 0.1, 0.5], [3.0, 1.0, 2.0]), [0.9, 0.1, 0.5])
    np.testing.assert_allclose(rk.reorder([0.9, 0.1, 0.5], [1.0, 2.0, 3.0]), [0.1, 0.5, 0.9])


def test_rank_mean_platt_recovers_a_known_map():
    """Per set, ranks of conditionally independent scores; labels drawn from sigmoid(2 logit(r) - 0.3)."""
    from htc_core.calibration.transfer_methods import logit, sigmoid

    rng = np.random.default_rng(6)
    sets = np.repeat(np.arange(40), 100)
    S = rng.standard_normal((len(sets), 3))
    r = np.concatenate([rk.rank_mean(S[sets == s]) for s in range(40)])
    y = (rng.random(len(r)) < sigmoid(2.0 * logit(r) - 0.3)).astype(float)
    a, b = rk.fit_rank_mean_platt(S, y, sets)
    assert a == pytest.approx(2.0, abs=0.15) and b == pytest.approx(-0.3, abs=0.1)


RANKER = {"method": "stack-oof", "signal": "min_prob", "coef": [1.0, 0.5, 0.0], "fill": 0.3}


def test_apply_set_level_and_its_checks():
    from htc_core.calibration.general import check_transfer

    entry = rk.check_set_level({"method": "rank-mean-platt", "coef": [1, 0], "min_runs": 5, "ranker": RANKER},
                               check_transfer)
    sig = pd.DataFrame({"seq_prob": np.linspace(0.2, 0.9, 6), "min_prob": np.linspace(0.1, 0.6, 6),
                        "neg_entropy": np.linspace(-2, -0.5, 6)})
    p = rk.apply_set_level(entry, np.linspace(-1, 1, 6), sig, ["with_alternatives"] * 6)
    assert np.all(np.diff(p) > 0) and np.all((p > 0) & (p < 1))          # every ranker agrees: monotone
    assert rk.apply_set_level(entry, np.zeros(4), sig.iloc[:4], ["with_alternatives"] * 4) is None   # < min_runs
    for bad in ({"method": "summa", "coef": [1, 0], "min_runs": 5, "ranker": RANKER},
                {"method": "rank-mean-platt", "coef": [1, float("nan")], "min_runs": 5, "ranker": RANKER},
                {"method": "rank-mean-platt", "coef": [1, 0], "min_runs": 2, "ranker": RANKER},
                {"method": "rank-mean-platt", "coef": [1, 0], "min_runs": 5}):
        with pytest.raises(ValueError, match="transfer.set_level"):
            rk.check_set_level(bad)


def with_set_level():
    """The shipped gac with a set-level step added (the shipped files hold none since signal-oof won
    leave-one-family-out and no set-level method beat it there; the step stays available, opt-in): a hand-made
    rank-mean-platt entry whose ranker is a stack-oof entry, as fit_set_level makes them."""
    import htc_core as htc

    gac = htc.load_model("gac")
    assert "set_level" not in gac.transfer
    gac.transfer = {**gac.transfer, "set_level": {"method": "rank-mean-platt", "coef": [0.85, -0.45], "min_runs": 50,
                                                  "ranker": dict(RANKER)}}
    return gac


def test_a_gac_with_a_set_level_entry_scores_a_set_and_a_single_run(tmp_path):
    """A gac with set_level=True: a set of >= min_runs runs is scored from its own ranks (its file round-trips
    the entry); fewer runs, or the default, give the per-run confidences a Monitor gives."""
    import htc_core as htc
    from htc_core.calibration.general import GeneralCalibrator

    from conftest import REPO

    gac = with_set_level()
    sl = gac.transfer["set_level"]
    assert sl["method"] == "rank-mean-platt" and gac.scores_as_set(sl["min_runs"])
    assert not gac.scores_as_set(sl["min_runs"] - 1)
    ts, _ = htc.load(str(REPO / "sample_runs" / "units"))
    ts = ts.take(np.arange(120))
    as_set = gac.predict_proba_traces(ts, set_level=True)[:, 1]
    per_run = gac.predict_proba_traces(ts)[:, 1]
    assert not np.allclose(as_set, per_run)
    np.testing.assert_allclose(gac.score_traces(ts, set_level=True).confidence, as_set)
    np.testing.assert_allclose(gac.score_traces(ts).confidence, per_run)      # the default: one number per run
    np.testing.assert_allclose(gac.predict_proba_traces(ts.take(np.arange(60)))[:, 1], per_run[:60], rtol=1e-12)
    few = ts.take(np.arange(10))
    np.testing.assert_allclose(gac.predict_proba_traces(few, set_level=True)[:, 1], per_run[:10], rtol=1e-12)
    back = GeneralCalibrator.load(gac.save(tmp_path / "gac.json"))
    assert back.transfer == gac.transfer
    np.testing.assert_allclose(back.predict_proba_traces(ts, set_level=True)[:, 1], as_set, rtol=1e-12)
    obj = gac.to_dict()
    obj["transfer"]["set_level"]["min_runs"] = "many"
    with pytest.raises(ValueError, match="transfer.set_level"):
        GeneralCalibrator.from_dict(obj)


def test_best_set_level_needs_no_higher_ece_and_a_higher_auroc():
    from htc_core.experiments.transfer_choice import SET_LEVEL, TransferChoice

    fams = [("big", 500), ("small", 16)]
    rows = []
    for f, n in fams:
        rows.append({"family": f, "method": "stack-oof", "n": n, "ece": 0.20, "brier": 0.2, "auroc": 0.70})
        for m in SET_LEVEL:
            good = m == "rank-mean-platt"
            # on the small family every set-level row is worse, but below set_min_runs the per-run rows count
            rows.append({"family": f, "method": m, "n": n, "ece": 0.15 if good and n > 50 else 0.30, "brier": 0.2,
                         "auroc": 0.75 if good and n > 50 else 0.60})
    shifts = pd.DataFrame({"family": [f for f, _ in fams], "n": [n for _, n in fams]})
    choice = TransferChoice(pd.DataFrame(rows), shifts, pd.DataFrame(), set_min_runs=50)
    assert choice.best_set_level("stack-oof") == "rank-mean-platt"
    choice.set_min_runs = 10                       # now the small family's worse rows count: no set-level wins
    assert choice.best_set_level("stack-oof") is None


def test_assess_takes_the_points_of_how_the_set_was_scored():
    """A set scored as a set gets the range of the set-level method's leave-one-family-out points, one scored run
    by run the per-run method's, and its base-rate measures from the per-run confidences either way."""
    import htc_core as htc
    from htc_core.calibration.shift import shift_check

    from conftest import REPO

    gac = with_set_level()
    info = gac.card["expected_error"]
    gac.card = {**gac.card, "expected_error": {
        **info, "points": [dict(p, ece=0.5) for p in info["points"]],
        "points_per_run": [dict(p, ece=0.05) for p in info["points_per_run"]]}}
    ts, _ = htc.load(str(REPO / "sample_runs" / "units"))
    ts = ts.take(np.arange(100))
    rep = shift_check(gac, ts)
    alt = gac.kinds(ts) == "with_alternatives"
    p, per_run = gac.confidences_traces(ts, set_level=True)
    as_set, one_by_one = gac.assess(rep, alt, p, per_run), gac.assess(rep, alt, per_run)
    assert as_set.high > 0.5 and one_by_one.high < 0.3           # the lower end is the noise's 1% quantile either way
    assert as_set.measures["rate_gap"] == pytest.approx(one_by_one.measures["rate_gap"])


def test_htc_score_scores_run_by_run_and_a_chunk_as_a_set_on_request(tmp_path, capsys):
    from htc_core.cli import main

    from conftest import REPO

    src = str(REPO / "sample_runs" / "units")
    model = str(with_set_level().save(tmp_path / "gac-set.json"))
    assert main(["score", model, src, "--out", str(tmp_path / "a.csv"), "--as-set"]) == 0
    assert "scored as a set: 1 chunk(s) of at least 50 runs" in capsys.readouterr().out
    assert main(["score", model, src, "--out", str(tmp_path / "b.csv")]) == 0
    assert "scored as a set" not in capsys.readouterr().out
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert "confidence_per_run" in a and "confidence_per_run" not in b
    np.testing.assert_allclose(a.confidence_per_run, b.confidence, rtol=1e-12)
    assert not np.allclose(a.confidence, b.confidence)
    # chunks too small to be a set are scored run by run, with the same columns
    assert main(["score", model, src, "--out", str(tmp_path / "c.csv"), "--chunk-size", "40", "--as-set"]) == 0
    c = pd.read_csv(tmp_path / "c.csv")
    assert list(c.columns) == list(a.columns)
    np.testing.assert_allclose(c.confidence, b.confidence, rtol=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=16), min_size=1, max_size=60))
def test_average_ranks_are_scipys_rankdata_to_the_bit(values):
    # numpy alone, so that `htc score --as-set` imports no scipy: the same numbers, ties (many at width 16) included
    from scipy.stats import rankdata

    from htc_core.calibration.rank_ensemble import average_ranks

    x = np.asarray(values, dtype=np.float64)
    assert np.array_equal(average_ranks(x), rankdata(x))


def test_bimodality_coefficient_known_values():
    """Sarle's coefficient of distributions with a known value: normal 1/3, uniform 5/9, two equal point masses 1;
    NaN where it is undefined; NaNs in a column are left out."""
    rng = np.random.default_rng(5)
    n = 200_000
    S = np.column_stack([rng.standard_normal(n), rng.random(n), np.repeat([0.0, 1.0], n // 2)])
    np.testing.assert_allclose(rk.bimodality_coefficient(S), [1 / 3, 5 / 9, 1.0], atol=0.01)
    with_nan = np.column_stack([np.r_[S[:1000, 0], np.full(50, np.nan)], np.full(1050, 2.0),
                                np.r_[1.0, 2.0, 3.0, np.full(1047, np.nan)]])
    bc = rk.bimodality_coefficient(with_nan)
    assert bc[0] == pytest.approx(rk.bimodality_coefficient(S[:1000, 0])[0]) and np.isnan(bc[1:]).all()


def separated_and_noise(n=2000, rate=0.4, shift=4.0, seed=6):
    """Labels and three scores: pure noise, a score that splits successes from failures by ``shift`` sd (bimodal,
    AUROC about 1), and a weak one (0.5 sd)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < rate).astype(float)
    S = rng.standard_normal((n, 3)) + y[:, None] * np.array([0.0, shift, 0.5])
    return y, S


def test_choose_by_bimodality_picks_the_score_that_splits_the_runs():
    """Known answer: the separating score is the most bimodal, so the label-free choice ranks as the best score;
    a default is kept under a margin larger than the gap, and an unusable column never wins."""
    y, S = separated_and_noise()
    assert rk.choose_by_bimodality(S) == 1
    R = rk.scaled_ranks(S)                                               # auroc takes values in [0, 1]
    assert auroc(y, R[:, rk.choose_by_bimodality(S)]) == max(auroc(y, R[:, j]) for j in range(3)) > 0.99
    bc = rk.bimodality_coefficient(S)
    assert rk.choose_by_bimodality(S, default=2, margin=bc[1] - bc[2] + 0.01) == 2
    assert rk.choose_by_bimodality(S, default=2, margin=bc[1] - bc[2] - 0.01) == 1
    flat = np.column_stack([S, np.full(len(S), 7.0)])
    assert rk.choose_by_bimodality(flat, default=3) == 1                 # a constant default is not usable
    assert rk.choose_by_bimodality(np.full((5, 2), np.nan), default=1) == 1
    # a weak separation is not bimodal: the coefficient stays near the normal's 1/3
    assert bc[0] == pytest.approx(1 / 3, abs=0.03) and bc[2] == pytest.approx(1 / 3, abs=0.03) and bc[1] > 5 / 9


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 100.0), st.floats(-50.0, 50.0), st.integers(0, 10_000))
def test_choose_by_bimodality_ignores_each_scores_scale_and_location(scale, loc, seed):
    _, S = separated_and_noise(n=300, shift=2.5, seed=seed)
    moved = S * np.array([scale, 1.0, 1 / scale]) + np.array([loc, -loc, 0.0])
    assert rk.choose_by_bimodality(moved) == rk.choose_by_bimodality(S)
    np.testing.assert_allclose(rk.bimodality_coefficient(moved), rk.bimodality_coefficient(S), rtol=1e-6)
