"""The label queue: selection strategies, the adapt-and-propose step, the bootstrap estimate, the stop suggestion
and ``htc label next``."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.calibration.active import STRATEGIES, confidence_bins, out_of_fold, queue_step, select
from htc_core.calibration.label_estimate import estimate, stop_suggestion
from htc_core.cli import main
from htc_core.formats import load, native


@settings(max_examples=150, deadline=None)
@given(scores=st.lists(st.floats(0, 1), min_size=1, max_size=60), data=st.data(),
       strategy=st.sampled_from([s for s in STRATEGIES if s != "refit"]), n=st.integers(1, 70))
def test_select_never_proposes_a_labeled_run_nor_twice(scores, data, strategy, n):
    labeled = data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores)))
    pick = select(scores, labeled, n, strategy=strategy, seed=3)
    assert len(pick) == min(n, len(scores) - sum(labeled)) and len(set(pick.tolist())) == len(pick)
    assert not np.asarray(labeled)[pick].any()
    assert np.array_equal(pick, select(scores, labeled, n, strategy=strategy, seed=3))   # seeded


def test_stratified_spreads_over_confidence_bins():
    s = np.linspace(0, 1, 1000)
    pick = select(s, np.zeros(1000, bool), 20, strategy="stratified", seed=0)
    assert np.bincount(confidence_bins(s, 10)[pick], minlength=10).tolist() == [2] * 10
    # calibration: more labels where the accuracy is least certain (middle bins), fewer at the extremes
    pick = select(s, np.zeros(1000, bool), 40, strategy="calibration", seed=0)
    per = np.bincount(confidence_bins(s, 10)[pick], minlength=10)
    assert per[4] + per[5] > per[0] + per[9] and per.min() >= 1


def test_the_cli_offers_every_strategy():
    from htc_core.cli import label_next

    assert label_next.STRATEGIES == STRATEGIES


def test_bad_arguments():
    with pytest.raises(ValueError, match="strategy"):
        select([0.1], [False], 1, strategy="best")
    with pytest.raises(ValueError, match="same length"):
        select([0.1, 0.2], [False], 1)
    with pytest.raises(ValueError, match="finite"):
        select([np.nan], [False], 1)
    with pytest.raises(ValueError, match="needs the current model"):
        select([0.1], [False], 1, strategy="refit")


@pytest.fixture(scope="module")
def units():
    from htc_core.features import extract

    ts, _ = load("sample_runs/units")
    return extract(ts), ts.labels


def test_queue_step_adapts_after_both_outcomes_and_estimate_has_an_interval(units):
    fm, y = units
    lab = np.full(len(y), np.nan)
    first = queue_step(fm, lab, "gac", n=10, seed=1)
    assert not first.adapted and len(first.positions) == 10
    lab[first.positions] = y[first.positions]
    rng = np.random.default_rng(0)
    more = rng.choice(np.flatnonzero(np.isnan(lab)), 30, replace=False)
    lab[more] = y[more]
    step = queue_step(fm, lab, "gac", n=5, seed=1)
    assert step.adapted and step.n_labeled == 40 and np.isnan(lab[step.positions]).all()
    oof = out_of_fold(fm, lab, "gac", folds=5)
    assert np.isfinite(oof[np.isfinite(lab)]).all() and np.isnan(oof[np.isnan(lab)]).all()
    est = estimate(lab, oof, n_boot=100)
    assert est.n == 40 and est.ece_low <= est.ece <= est.ece_high + 1e-12 and 0 < est.ece_width < 1
    assert "40 labels" in stop_suggestion(est, width=1.0) and stop_suggestion(est, width=1.0).startswith("enough")
    assert stop_suggestion(est, width=1e-9, ece_below=None).startswith("keep labeling")
    below = stop_suggestion(est, width=1e-9, ece_below=est.ece_high)       # the upper end at the bar: done
    assert below.startswith("enough") and f"at most {est.ece_high:.3f}" in below
    assert stop_suggestion(est, width=1e-9, ece_below=est.ece_high - 1e-6).startswith("keep labeling")


def test_the_adapted_model_names_its_prior_not_its_class(units):
    """adaptation_["prior"] (shown in the Label page's model card and the saved model file) is the prior's name:
    the shipped GAC's sub-model as gac/<kind> however it is passed, a fitted model by what it is."""
    from htc_core.app.label_views import compute_queue, model_card
    from htc_core.calibration.active import adapt_to_labels, linear_prior
    from htc_core.calibration.adapt import named_prior, prior_name
    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.calibration.models import load_model

    fm, y = units
    lab = np.full(len(y), np.nan)
    lab[:40] = y[:40]
    gac = load_model("gac")
    for prior in ("gac", gac, linear_prior("gac", fm)):
        model, adapted = adapt_to_labels(fm, lab, prior)
        assert adapted and model.adaptation_["prior"] == "gac/with_alternatives", prior
    sub = gac.models["with_alternatives"]
    named = named_prior(sub, "gac/with_alternatives")       # as the Label page passes it
    assert named is not sub and not hasattr(sub, "name_") and named.coef_ is sub.coef_
    view = compute_queue(fm, lab, named, n=5)
    assert model_card(view, selection="s")["adaptation"]["prior"] == "gac/with_alternatives"
    bare = adapt_to_labels(fm, lab, sub)[0].adaptation_["prior"]
    assert bare == prior_name(sub) == "HTC-Reduced model (paper profile, top-k 5, fitted on 2,096 runs)"
    mine = HTCCalibrator(alphas=(1.0,)).fit(fm, y)
    assert adapt_to_labels(fm, lab, mine)[0].adaptation_["prior"] == \
        f"HTC-Reduced model (paper profile, top-k 5, fitted on {len(y):,} runs)"


def test_cli_label_next_json(tmp_path, units, capsys):
    ts, _ = load("sample_runs/units")
    meta = ts.meta.copy()
    meta["success"] = pd.array([None] * len(meta), dtype="boolean")
    unl = tmp_path / "unlabeled.jsonl"
    with open(unl, "w") as fh:
        native.write(dataclasses.replace(ts, meta=meta), fh)
    assert main(["label", "next", str(unl), "--model", "gac", "-n", "4", "--seed", "7", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert len(first["ids"]) == 4 and first["labeled"] == 0 and not first["adapted"]
    truth = dict(zip(ts.ids, ts.labels))
    lab = tmp_path / "labels.csv"
    lab.write_text("id,success\n" + "".join(f"{i},{int(truth[i])}\n" for i in first["ids"]))
    assert main(["label", "next", str(unl), "--labels", str(lab), "-n", "4", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["labeled"] == 4 and not set(second["ids"]) & set(first["ids"])


def _integrated_variance(scores, picked):
    """mean over all runs of (p(1-p))^2 u' M^-1 u for the recalibration on the logit (as variance_reduction)."""
    s = np.clip(scores, 1e-4, 1 - 1e-4)
    t = np.log(s / (1 - s))
    u = np.column_stack([np.ones_like(t), t])
    w = s * (1 - s)
    M = np.eye(2) + (u[picked] * w[picked, None]).T @ u[picked]
    return float(np.mean(w ** 2 * np.einsum("ij,jk,ik->i", u, np.linalg.inv(M), u)))


def test_variance_reduction_lowers_the_integrated_variance_and_still_spreads():
    from htc_core.calibration.active import variance_reduction

    rng = np.random.default_rng(0)
    s = rng.beta(2, 1, 600)
    free = np.zeros(600, bool)
    greedy = variance_reduction(s, free, 20, np.random.default_rng(1), sharpness=50)
    drawn = select(s, free, 20, strategy="variance", seed=1)              # the default sharpness
    randoms = [rng.permutation(600)[:20] for _ in range(50)]
    assert _integrated_variance(s, greedy) < _integrated_variance(s, drawn) < np.mean(
        [_integrated_variance(s, r) for r in randoms])
    # the default draws over the whole range, not only at two logits as the greedy design does
    assert len(np.unique(confidence_bins(s, 10)[drawn])) >= 6


def _refit_integrated_variance(model, X, picked, lam):
    """mean over all runs of (p(1-p))^2 u' M^-1 u in the refit's parameter space (as refit_variance)."""
    unit = __import__("copy").copy(model)
    unit.coef_ = np.ones_like(model.coef_)
    u = np.column_stack([unit.contributions(X), np.ones(len(X))])
    p = model.predict_proba(X)[:, 1]
    w = p * (1 - p)
    M = np.diag(np.append(np.full(u.shape[1] - 1, lam), 1.0)) + (u[picked] * w[picked, None]).T @ u[picked]
    return float(np.mean(w ** 2 * np.einsum("ij,jk,ik->i", u, np.linalg.inv(M), u)))


def test_refit_variance_aims_at_the_refits_uncertainty(units):
    from htc_core.calibration.active import linear_prior, refit_variance

    fm, y = units
    prior = linear_prior("gac", fm)
    free = np.zeros(len(y), bool)
    greedy = refit_variance(prior, fm, free, 20, np.random.default_rng(1), sharpness=50)
    drawn = refit_variance(prior, fm, free, 20, np.random.default_rng(1))
    assert len(set(drawn.tolist())) == 20 and not free[drawn].any()
    rng = np.random.default_rng(0)
    randoms = [rng.permutation(len(y))[:20] for _ in range(30)]
    lam = 300.0            # the prior not adapted yet: the largest pull of the grid
    v = lambda picked: _refit_integrated_variance(prior, fm, picked, lam)     # noqa: E731
    assert v(greedy) < v(drawn) < np.mean([v(r) for r in randoms])
    lab = np.full(len(y), np.nan)
    lab[drawn] = y[drawn]
    step = queue_step(fm, lab, "gac", n=10, strategy="refit", seed=2)
    assert step.adapted and len(step.positions) == 10 and np.isnan(lab[step.positions]).all()
    with pytest.raises(ValueError, match="one value per run"):
        refit_variance(prior, fm, free[:5], 3, rng)


# ------------------------------------------------------------ the refit's weights (stratified estimation)
def test_label_weights_are_stratum_size_over_labels_in_the_stratum():
    from htc_core.calibration.active import label_weights

    s = np.linspace(0.01, 0.99, 100)            # 10 equal-mass bins of 10 runs
    lab = np.zeros(100, bool)
    lab[[0, 1, 15, 55, 56, 57, 58, 95]] = True  # bins 0 (2), 1 (1), 5 (4), 9 (1); bins 2-4 and 6-8 have none
    w = label_weights(s, lab)
    assert np.all(w[~lab] == 0)
    # bins without a label join the next bin up that has one: bin 5 stands for bins 2-5 (40 runs), bin 9 for
    # bins 6-9 (40 runs)
    assert w[[0, 1]].tolist() == [5.0, 5.0] and w[15] == 10.0
    assert w[[55, 56, 57, 58]].tolist() == [10.0] * 4 and w[95] == 40.0
    assert w.sum() == pytest.approx(100)
    # a proportional draw (one label per bin) weighs every label N / n
    lab = np.zeros(100, bool)
    lab[np.arange(5, 100, 10)] = True
    assert np.allclose(label_weights(s, lab)[lab], 10.0)
    assert not label_weights(s, np.zeros(100, bool)).any()


@settings(max_examples=200, deadline=None)
@given(scores=st.lists(st.floats(0, 1), min_size=1, max_size=80), data=st.data(), n_bins=st.integers(1, 15))
def test_label_weights_sum_to_the_runs_and_one_stratum_is_uniform(scores, data, n_bins):
    from htc_core.calibration.active import label_weights

    labeled = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores))))
    w = label_weights(scores, labeled, n_bins)
    assert np.all(w[~labeled] == 0) and np.all(w[labeled] >= 1)
    if labeled.any():
        assert w.sum() == pytest.approx(len(scores))
        one = label_weights(scores, labeled, 1)
        assert np.allclose(one[labeled], len(scores) / labeled.sum())


def test_mixed_draws_half_by_neyman_half_uniformly():
    s = np.linspace(0, 1, 1000)
    pick = select(s, np.zeros(1000, bool), 40, strategy="mixed", seed=0)
    neyman = select(s, np.zeros(1000, bool), 20, strategy="calibration", seed=0)
    assert len(set(pick.tolist())) == 40 and pick[0::2].tolist() == neyman.tolist()


def test_weighted_refit_counts_a_run_as_its_weight():
    """An integer weight is the same penalized fit as the run repeated that many times."""
    from htc_core.calibration.adapt import log_evidence

    rng = np.random.default_rng(1)
    A = np.column_stack([rng.normal(size=(40, 3)), np.ones(40)])
    y = (rng.random(40) < 1 / (1 + np.exp(-A[:, 0]))).astype(float)
    reps = np.where(np.arange(40) < 10, 3, 1)
    theta0, pen = np.array([1.0, 0, 0, 0]), np.array([1.0, 3.0, 3.0, 1.0])
    rep = np.repeat(np.arange(40), reps)
    assert np.allclose(log_evidence(A, y, theta0, pen, weight=reps.astype(float))[1],
                       log_evidence(A[rep], y[rep], theta0, pen)[1], atol=1e-6)
    assert not np.allclose(log_evidence(A, y, theta0, pen)[1], log_evidence(A[rep], y[rep], theta0, pen)[1])


def test_weighted_queue_step_and_bad_weights(units):
    from htc_core.calibration.active import adapt_to_labels, linear_prior, step_weights
    from htc_core.calibration.adapt import fit_with_prior
    from htc_core.calibration.calibrators import HTCCalibrator

    X, y = units
    lab = np.full(len(y), np.nan)
    lab[:30] = y[:30]
    prior = linear_prior("gac", X)
    w = step_weights(X, lab, prior, "calibration", weighted=True)
    assert w.sum() == pytest.approx(len(y)) and np.all(w[30:] == 0)
    step = queue_step(X, lab, "gac", n=5, strategy="calibration", weighted=True)
    assert step.model.adaptation_["weighted"] and step.adapted
    plain = queue_step(X, lab, "gac", n=5, strategy="calibration", weighted=False)
    assert not plain.model.adaptation_["weighted"]
    model, _ = adapt_to_labels(X, lab, prior, weights=np.where(np.arange(len(y)) < 30, 2.0, 0.0))
    assert np.allclose(model.coef_, plain.model.coef_)      # equal weights: the unweighted fit
    est = HTCCalibrator(prior=prior)
    with pytest.raises(ValueError, match="positive and finite.*position 2"):
        fit_with_prior(est, X.take(np.arange(5)), y[:5], sample_weight=[1, 1, 0, 1, 1])
    with pytest.raises(ValueError, match="one weight per labeled run"):
        fit_with_prior(est, X.take(np.arange(5)), y[:5], sample_weight=[1, 1])
    with pytest.raises(ValueError, match="not 'cv'"):
        fit_with_prior(est, X.take(np.arange(5)), y[:5], sample_weight=np.ones(5), criterion="cv")


def test_weighted_estimate_stands_for_every_run():
    """Labels drawn unevenly (many in a well-calibrated stratum, few in a badly calibrated one): the weighted ECE
    is the ECE of all the runs, the unweighted one that of the labeled runs; equal weights change nothing."""
    from htc_core.calibration.active import label_weights
    from htc_core.calibration.label_estimate import weighted_metrics
    from htc_core.calibration.metrics import expected_calibration_error

    rng = np.random.default_rng(0)
    p = np.concatenate([np.full(500, 0.2), np.full(500, 0.8)])
    y = np.concatenate([rng.random(500) < 0.2, rng.random(500) < 0.5]).astype(float)   # the top half is overconfident
    lab = np.zeros(1000, bool)
    lab[rng.choice(500, 200, replace=False)] = True           # 200 labels in the calibrated half
    lab[500 + rng.choice(500, 20, replace=False)] = True      # 20 in the overconfident one
    w = label_weights(p, lab, n_bins=2)
    ece_all = expected_calibration_error(y, p)
    ece_w, _ = weighted_metrics(y[lab], p[lab], w[lab])
    ece_plain = expected_calibration_error(y[lab], p[lab])
    assert abs(ece_w - ece_all) < 0.05 < abs(ece_plain - ece_all)
    yy = np.where(lab, y, np.nan)
    est = estimate(yy, np.where(lab, p, np.nan), weights=w, n_boot=100, debias=False)
    assert est.ece == pytest.approx(ece_w) and est.ece_low <= est.ece <= est.ece_high
    same = estimate(yy, np.where(lab, p, np.nan), weights=np.where(lab, 7.0, 0.0), n_boot=100)
    plain = estimate(yy, np.where(lab, p, np.nan), n_boot=100)
    assert same.to_dict() == pytest.approx(plain.to_dict())


def test_every_order_draws_from_one_random_key_per_run():
    """Common random numbers: with one bin, stratified (and Neyman) allocation is simple random sampling, so the
    same seed gives exactly random order's draw; with bins, each bin's pick is its smallest-key run, so the two
    orders share most of their draws (the benchmark's arms are paired, not independent)."""
    s = np.random.default_rng(0).random(300)
    lab = np.zeros(300, bool)
    lab[:40] = True
    rnd = select(s, lab, 30, strategy="random", seed=9)
    assert select(s, lab, 30, strategy="stratified", seed=9, n_bins=1).tolist() == rnd.tolist()
    assert select(s, lab, 30, strategy="calibration", seed=9, n_bins=1).tolist() == rnd.tolist()
    assert sorted(select(s, lab, 30, strategy="mixed", seed=9, n_bins=1).tolist()) == sorted(rnd.tolist())
    strat = select(s, lab, 30, strategy="stratified", seed=9)
    other = select(s, lab, 30, strategy="stratified", seed=10)
    assert len(set(strat) & set(rnd)) > len(set(other) & set(rnd)) + 5


def test_stratifying_on_the_true_probability_has_the_known_lower_variance():
    """The known best design for a base rate: proportional stratification on the true probability p gives the
    sample mean the variance E[p(1-p)]/n instead of p(1-p)/n (random order), here 0.09/n against 0.25/n (a ratio of
    0.36); stratifying on a score unrelated to the outcome gains nothing (ratio 1). What the benchmark's ``oracle``
    order rests on."""
    rng = np.random.default_rng(4)
    p = np.repeat([0.1, 0.9], 2000)
    noise = rng.random(len(p))
    err = {"random": [], "true p": [], "unrelated": []}
    for seed in range(400):
        y = (rng.random(len(p)) < p).astype(float)
        for name, score, strategy in (("random", p, "random"), ("true p", p, "stratified"),
                                      ("unrelated", noise, "stratified")):
            pick = select(score + 1e-9 * noise, np.zeros(len(p), bool), 30, strategy=strategy, seed=seed)
            err[name].append(y[pick].mean() - y.mean())
    var = {k: np.var(v) for k, v in err.items()}
    assert var["random"] == pytest.approx(0.25 / 30, rel=0.25)
    assert 0.2 < var["true p"] / var["random"] < 0.55
    assert 0.7 < var["unrelated"] / var["random"] < 1.4
