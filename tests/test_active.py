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

from htc_core.calibration.active import (STRATEGIES, confidence_bins, estimate, out_of_fold, queue_step, select,
                                         stop_suggestion)
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
    assert stop_suggestion(est, width=1e-9).startswith("keep labeling")


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
