"""How the refit from a prior chooses its pull toward the prior (htc_core.calibration.adapt): synthetic priors
whose right answer is known (labels drawn from the prior itself; from the prior off by a known logit offset; from
other weights), for every criterion."""

from __future__ import annotations

import numpy as np
import pytest

from htc_core.calibration.adapt import CRITERIA, DEFAULT_CRITERION, fit_with_prior, log_evidence, loo_logits
from htc_core.calibration.calibrators import HTCCalibrator

D = 6


def _prior(seed=0):
    """A linear HTC model on D features (fitted on synthetic runs), the prior of every test."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, D))
    y = (rng.random(600) < 1 / (1 + np.exp(-(1.5 * X[:, 0] - X[:, 1] + 0.5 * X[:, 2])))).astype(int)
    return HTCCalibrator(alphas=(1.0,)).fit(X, y)


def _labels_from(logit, seed):
    return (np.random.default_rng(seed).random(len(logit)) < 1 / (1 + np.exp(-logit))).astype(int)


def _fit(prior, X, y, criterion):
    return fit_with_prior(HTCCalibrator(prior=prior, random_state=0), X, y, criterion=criterion)


@pytest.mark.parametrize("criterion", ["evidence", "loo"])
@pytest.mark.parametrize("n", [30, 200])
def test_labels_drawn_from_the_prior_keep_the_prior_or_nearly(criterion, n):
    prior = _prior()
    hits = 0
    for seed in range(5):
        X = np.random.default_rng(100 + seed).normal(size=(n, D))
        y = _labels_from(prior.decision_function(X), seed)
        m = _fit(prior, X, y, criterion)
        Xt = np.random.default_rng(999).normal(size=(2000, D))
        gap = np.abs(m.predict_proba(Xt)[:, 1] - prior.predict_proba(Xt)[:, 1]).mean()
        assert gap < (0.06 if n == 30 else 0.03), (criterion, n, seed, m.adaptation_["choice"], gap)
        hits += m.adaptation_["choice"] in ("prior", "recalibrated prior")
    assert hits >= 4          # the 48-weight shrinkage is not chosen when the prior is right


@pytest.mark.parametrize("criterion", ["evidence", "loo"])
def test_a_prior_off_by_a_known_logit_offset_is_recovered(criterion):
    prior = _prior()
    X = np.random.default_rng(7).normal(size=(400, D))
    y = _labels_from(prior.decision_function(X) - 1.5, 8)      # the task is harder: 1.5 logits lower
    m = _fit(prior, X, y, criterion)
    a = m.adaptation_
    assert a["choice"] != "prior"
    assert abs(a["intercept_shift"] + 1.5) < 0.4 and abs(a["slope"] - 1.0) < 0.3, a
    Xt = np.random.default_rng(999).normal(size=(2000, D))
    truth = 1 / (1 + np.exp(-(prior.decision_function(Xt) - 1.5)))
    assert np.abs(m.predict_proba(Xt)[:, 1] - truth).mean() < 0.04


@pytest.mark.parametrize("criterion", ["evidence", "loo"])
def test_many_labels_of_other_weights_loosen_the_pull(criterion):
    prior = _prior()
    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, D))
    logit = prior.decision_function(X) + 2.0 * X[:, 4]           # a feature the prior ignores matters here
    y = _labels_from(logit, 4)
    m = _fit(prior, X, y, criterion)
    assert m.adaptation_["choice"].startswith("shrunk toward prior")
    assert m.adaptation_["lambda"] <= 10
    Xt = rng.normal(size=(2000, D))
    truth = 1 / (1 + np.exp(-(prior.decision_function(Xt) + 2.0 * Xt[:, 4])))
    assert np.abs(m.predict_proba(Xt)[:, 1] - truth).mean() < np.abs(prior.predict_proba(Xt)[:, 1] - truth).mean() / 2


def test_the_record_names_the_criterion_and_scores_every_candidate():
    prior = _prior()
    X = np.random.default_rng(5).normal(size=(60, D))
    y = _labels_from(prior.decision_function(X), 6)
    for criterion in CRITERIA:
        a = _fit(prior, X, y, criterion).adaptation_
        assert a["choice"] in [r["name"] for r in a["grid"]] and a["criterion"]
        scored = [r for r in a["grid"] if r["available"]]
        assert {"prior", "recalibrated prior"} <= {r["name"] for r in scored}
        key = {"evidence": "log_evidence", "loo": "log_loss", "cv": "log_loss"}[criterion]
        assert all(np.isfinite(r[key]) for r in scored)
    a = _fit(prior, X, y, "evidence").adaptation_
    assert a["choice"] == max((r for r in a["grid"] if r["available"]), key=lambda r: r["log_evidence"])["name"]
    assert HTCCalibrator(prior=prior).fit(X, y).adaptation_["criterion"] == \
        _fit(prior, X, y, DEFAULT_CRITERION).adaptation_["criterion"]
    with pytest.raises(ValueError, match="criterion must be one of"):
        _fit(prior, X, y, "aic")


def test_loo_logits_match_refits_without_each_run():
    rng = np.random.default_rng(1)
    A = np.column_stack([rng.normal(size=(40, 3)), np.ones(40)])
    y = (rng.random(40) < 0.4).astype(float)
    theta0, pen = np.zeros(4), np.array([2.0, 2.0, 2.0, 0.5])
    z = loo_logits(A, y, theta0, pen)
    exact = []
    for i in range(40):
        keep = np.arange(40) != i
        fit = log_evidence(A[keep], y[keep], theta0, pen)[1]          # the penalized fit without run i
        exact.append(A[i] @ fit)
    assert np.max(np.abs(z - np.array(exact))) < 0.02


def test_log_evidence_prefers_the_true_pull():
    """Weights drawn around theta0 with precision 4: the evidence peaks near 4, not at 0.04 or 400."""
    rng = np.random.default_rng(2)
    k, n = 20, 3000
    A = rng.normal(size=(n, k))
    theta = rng.normal(scale=0.5, size=k)
    y = (rng.random(n) < 1 / (1 + np.exp(-A @ theta))).astype(float)
    ev = {lam: log_evidence(A, y, np.zeros(k), np.full(k, lam))[0] for lam in (0.04, 0.4, 4.0, 40.0, 400.0)}
    assert max(ev, key=ev.get) in (0.4, 4.0, 40.0) and ev[4.0] > ev[0.04] and ev[4.0] > ev[400.0]
