"""Every transfer method of htc_core.calibration.transfer_methods against a synthetic shift with a known answer."""

import numpy as np
import pandas as pd
import pytest

from htc_core.experiments.grouping import score_metrics
from htc_core.calibration.transfer_methods import (domain_weights, em_prior, logit, prior_adjust, sigmoid,
                                                   stack_logits, target_standardized_logit, training_free_signals,
                                                   weighted_platt)
from htc_core.traces import TraceSet, empty_meta


def _posterior(x, prior):
    """Exact p(y=1|x) for x ~ N(+1, 1) (y=1) / N(-1, 1) (y=0) at base rate ``prior``: logit = 2x + log odds."""
    return sigmoid(2 * x + np.log(prior / (1 - prior)))


def _sample(n, prior, rng):
    y = (rng.random(n) < prior).astype(float)
    return rng.normal(np.where(y == 1, 1.0, -1.0), 1.0), y


@pytest.mark.parametrize("train_prior,target_prior", [(0.4, 0.15), (0.4, 0.7), (0.2, 0.5), (0.5, 0.5)])
def test_em_recovers_a_known_base_rate_change(train_prior, target_prior):
    rng = np.random.default_rng(0)
    x, y = _sample(20_000, target_prior, rng)
    p = _posterior(x, train_prior)            # a model calibrated at the training base rate
    res = em_prior(p, train_prior)
    assert res.converged
    assert abs(res.prior - target_prior) <= 0.02
    # the adjusted confidences are the exact posterior at the target rate, up to the estimate's error
    assert np.max(np.abs(res.adjusted - _posterior(x, target_prior))) < 0.05
    before, after = score_metrics(y, p)["ece"], score_metrics(y, res.adjusted)["ece"]
    assert after <= 0.02
    if abs(train_prior - target_prior) > 0.1:
        assert before > 0.05


def test_prior_adjust_is_identity_at_the_same_rate_and_inverts():
    p = np.linspace(0.01, 0.99, 50)
    assert np.allclose(prior_adjust(p, 0.3, 0.3), p)
    assert np.allclose(prior_adjust(prior_adjust(p, 0.3, 0.6), 0.6, 0.3), p, atol=1e-9)


def test_em_rejects_bad_input():
    with pytest.raises(ValueError, match="train_prior"):
        em_prior([0.5], 1.0)
    with pytest.raises(ValueError, match="finite"):
        em_prior([0.5, np.nan], 0.5)


class _Linear:
    def __init__(self, mean, scale, coef, b):
        self.mean_, self.scale_ = np.asarray(mean, float), np.asarray(scale, float)
        self.coef_, self.intercept_ = np.asarray([coef], float), np.asarray([b], float)

    def decision_function(self, X):
        return (np.asarray(X) - self.mean_) / self.scale_ @ self.coef_[0] + self.intercept_[0]


def test_test_time_standardization_undoes_a_location_and_scale_shift():
    rng = np.random.default_rng(1)
    X = rng.normal(0, 1, (4000, 3))
    m = _Linear([0, 0, 0], [1, 1, 1], [1.0, -0.5, 0.2], -0.3)
    shifted = X * np.array([3.0, 0.5, 1.0]) + np.array([5.0, -2.0, 0.0])   # a known affine shift per feature
    z_plain = m.decision_function(shifted)
    z_tts = target_standardized_logit(m, shifted)
    z_true = m.decision_function(X)
    assert np.max(np.abs(z_tts - z_true)) < 0.1          # recovered up to the sampling error of mean/std
    assert np.max(np.abs(z_plain - z_true)) > 3           # the plain logit is far off
    assert np.allclose(target_standardized_logit(m, shifted[:5]), z_plain[:5])   # too few rows: unchanged


def test_domain_weights_reweight_the_source_to_the_target_mean():
    rng = np.random.default_rng(2)
    xs, xt = rng.normal(0, 1, (6000, 1)), rng.normal(0.8, 1, (3000, 1))
    w = domain_weights(xs, xt, C=10.0)
    assert w.min() > 0 and abs(w.mean() - 1) < 1e-9
    assert abs(float(np.average(xs[:, 0], weights=w)) - 0.8) < 0.1       # the importance-weighted source mean
    # the true density ratio is exp(0.8 x - 0.32): the weights follow it
    assert np.corrcoef(np.log(w), xs[:, 0])[0, 1] > 0.99


def test_weighted_platt_recovers_slope_and_intercept():
    rng = np.random.default_rng(3)
    z = rng.normal(0, 2, 40_000)
    y = (rng.random(z.size) < sigmoid(0.5 * z - 0.7)).astype(float)
    a, b = weighted_platt(z, y)
    assert abs(a - 0.5) < 0.03 and abs(b + 0.7) < 0.05
    # weights that drop half of the rows give the same answer on the other half
    w = (np.arange(z.size) % 2 == 0).astype(float)
    a2, b2 = weighted_platt(z, y, w)
    assert abs(a2 - 0.5) < 0.05 and abs(b2 + 0.7) < 0.07


def test_stack_ranks_as_the_signal_when_the_model_is_noise():
    rng = np.random.default_rng(4)
    y = (rng.random(5000) < 0.4).astype(float)
    signal = sigmoid(np.where(y == 1, 1.0, -1.0) + rng.normal(0, 1, y.size))
    z_model = rng.normal(0, 1, y.size)
    a, b, c = stack_logits(z_model, signal, y)
    assert b > 0.5 and abs(a) < 0.1
    p = sigmoid(a * z_model + b * logit(signal) + c)
    assert score_metrics(y, p)["auroc"] >= score_metrics(y, signal)["auroc"] - 0.01
    # a signal that is anti-correlated is never turned upside down
    _, b_neg, _ = stack_logits(z_model, 1 - signal, y)
    assert b_neg == 0.0


def _traceset(token_lp, top, steps_per_traj):
    n_tok = [len(s) for s in token_lp]
    meta = empty_meta(len(steps_per_traj))
    meta["id"] = np.array([f"t{i}" for i in range(len(steps_per_traj))], dtype=object)
    return TraceSet(logprob=np.concatenate(token_lp), top_logprobs=np.concatenate(top),
                    step_offsets=np.r_[0, np.cumsum(n_tok)].astype(np.int64),
                    traj_offsets=np.r_[0, np.cumsum(steps_per_traj)].astype(np.int64), meta=meta)


def test_training_free_signals_by_hand():
    lp = [np.log([0.5, 0.25]), np.log([1.0]), np.log([0.8, 0.2])]
    top = [np.log([[0.5, 0.5], [0.25, 0.25]]), np.log([[1.0, 1e-300]]), np.full((2, 2), np.nan)]
    ts = _traceset(lp, top, [2, 1])
    s = training_free_signals(ts)
    assert s.seq_prob.iloc[0] == pytest.approx((0.5 * 0.25 * 1.0) ** (1 / 3))
    assert s.min_prob.iloc[0] == pytest.approx(0.25)
    assert s.neg_entropy.iloc[0] == pytest.approx(-(np.log(2) + np.log(2) + 0.0) / 3)
    assert s.seq_prob.iloc[1] == pytest.approx(0.4)
    assert np.isnan(s.neg_entropy.iloc[1])                    # no alternatives: no entropy
    assert isinstance(s, pd.DataFrame) and list(s.columns) == ["seq_prob", "min_prob", "neg_entropy"]


def test_training_free_signals_of_runs_without_tokens_are_nan():
    """A run without tokens (an empty step; a TraceSet built by hand or cut short) gets NaN signals wherever it
    lies, the last position included (which raised IndexError), and the other runs keep their values."""
    lp = [np.log([0.5, 0.25]), np.log([0.8, 0.2])]
    top = [np.log([[0.5, 0.5], [0.25, 0.25]]), np.log([[0.8, 0.2], [0.5, 0.5]])]
    alone = training_free_signals(_traceset(lp, top, [1, 1]))
    for order in ([0, None, 1], [0, 1, None], [None, 0, 1]):
        steps_lp = [lp[i] if i is not None else np.zeros(0) for i in order]
        steps_top = [top[i] if i is not None else np.zeros((0, 2)) for i in order]
        s = training_free_signals(_traceset(steps_lp, steps_top, [1, 1, 1]))
        empty = order.index(None)
        assert s.iloc[empty].isna().all()
        kept = [j for j in range(3) if j != empty]
        np.testing.assert_array_equal(s.iloc[kept].to_numpy(), alone.to_numpy())


def test_importance_weighted_platt_is_the_platt_a_labeled_target_would_give():
    """Covariate shift with a known answer: p(y|x) is the same in source and target, but the model's logit z = x
    is misspecified (true logit x + 0.4 x^2), so the best Platt step differs where the runs lie. Weighted by the
    domain classifier's weights, the Platt step fitted on the source's labels is the one fitted on the target's."""
    rng = np.random.default_rng(5)
    xs, xt = rng.normal(-1.0, 1.0, 30_000), rng.normal(1.5, 1.0, 30_000)
    truth = lambda x: sigmoid(x + 0.4 * x ** 2)                       # noqa: E731
    ys, yt = (rng.random(xs.size) < truth(xs)).astype(float), (rng.random(xt.size) < truth(xt)).astype(float)
    target = weighted_platt(xt, yt)                                  # the answer (target labels, never used below)
    plain = weighted_platt(xs, ys)
    w = domain_weights(xs[:, None], xt[:, None], C=10.0, clip=1e6)
    iw = weighted_platt(xs, ys, w)
    assert abs(plain[0] - target[0]) > 0.5                           # the shift matters
    assert abs(iw[0] - target[0]) < 0.25 and abs(iw[1] - target[1]) < 0.25


def test_fit_transfer_signal_recovers_a_known_platt_and_never_stacks_an_entropy():
    """A signal that is itself calibrated (labels drawn as Bernoulli(signal)) gets slope 1 and intercept 0; minus
    an entropy that ranks perfectly is still not stacked (its logit would be a constant)."""
    from htc_core.experiments.transfer_entry import fit_transfer
    from htc_core.calibration.transfer_methods import STACKABLE

    rng = np.random.default_rng(6)
    s = sigmoid(rng.normal(0, 1.5, 20_000))
    y = (rng.random(s.size) < s).astype(float)
    sig = pd.DataFrame({"seq_prob": s, "min_prob": rng.uniform(0.05, 0.95, s.size), "neg_entropy": y - 1.0})
    entry = fit_transfer({"y": y, "signals": sig, "alt": np.ones(s.size, bool)}, "signal")
    assert entry["signal"] == "seq_prob" and entry["signal"] in STACKABLE
    # every training run lists alternatives: runs without them get the signal alone (here the same Platt)
    assert entry["fallback"]["kinds"] == ["without_alternatives"] and entry["fallback"]["coef"] == entry["coef"]
    a, b, c = entry["coef"]
    assert a == 0.0 and abs(b - 1) < 0.05 and abs(c) < 0.05


def test_stack_scores_weighs_the_informative_signals_and_keeps_weights_non_negative():
    """Known answer: the label's log odds are 1.0 x1 + 0.5 x2 (two signals' scores), a third score is noise and a
    fourth is anti-correlated; the stack recovers 1.0 and 0.5, gives the noise ~0 and the inverted score 0."""
    from htc_core.calibration.transfer_methods import signal_scores, stack_scores

    rng = np.random.default_rng(7)
    n = 40_000
    S = rng.normal(0, 1, (n, 4))
    y = (rng.random(n) < sigmoid(1.0 * S[:, 0] + 0.5 * S[:, 1] - 0.2)).astype(float)
    S[:, 3] = -S[:, 0] + rng.normal(0, 1, n)
    c = stack_scores(rng.normal(0, 1, n), S, y, ridge=1e-6)
    assert abs(c[1] - 1.0) < 0.05 and abs(c[2] - 0.5) < 0.05 and abs(c[3]) < 0.05 and c[4] == 0.0
    assert abs(c[0]) < 0.05 and abs(c[-1] + 0.2) < 0.05
    # the scores of the signals: logit of the probabilities, minus the entropy as it is; NaN -> the column median
    sig = pd.DataFrame({"seq_prob": [0.5, 0.8, np.nan], "min_prob": [0.1, 0.2, 0.3],
                        "neg_entropy": [-1.0, np.nan, -0.5]})
    A, fill = signal_scores(sig)
    assert A[0, 0] == pytest.approx(0.0) and A[2, 0] == pytest.approx(fill["seq_prob"])
    assert A[1, 2] == pytest.approx(-0.75) and A[0, 1] == pytest.approx(np.log(0.1 / 0.9))


def test_out_of_family_stack_drops_a_model_that_only_fits_in_sample():
    """Known answer: in each of 4 families one feature of its own carries the label (noise elsewhere), and a
    training-free signal carries it everywhere. A model fitted on all families ranks its own runs well through
    those features (the in-sample stack trusts its logit), but on a family it has not seen its logit is noise:
    the out-of-family stack (stack-oof, the shipped method) learns that and leans on the signal."""
    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.experiments.transfer_entry import fit_transfer

    rng = np.random.default_rng(8)
    n_fam, per, width = 4, 300, 48
    groups = np.repeat([f"task{i} | M" for i in range(n_fam)], per)
    y = (rng.random(n_fam * per) < 0.4).astype(float)
    X = rng.normal(0, 1, (n_fam * per, width))
    for i in range(n_fam):
        rows = slice(i * per, (i + 1) * per)
        X[rows, i] += 2.5 * (2 * y[rows] - 1)               # family i's own informative feature
    s = sigmoid(0.8 * (2 * y - 1) + rng.normal(0, 1, y.size))
    sig = pd.DataFrame({"seq_prob": s, "min_prob": s, "neg_entropy": np.full(y.size, np.nan)})
    d = {"y": y, "groups": groups, "alt": np.zeros(y.size, bool), "signals": sig,
         "features": {"chosen": X, "paper": X}}
    model = HTCCalibrator(profile="chosen", alphas=(0.1, 1.0), inner_folds=3).fit(X, y)
    models = {"without_alternatives": model}
    inside = fit_transfer(d, "stack", models=models)["coef"]
    oof = fit_transfer(d, "stack-oof", models=models)["coef"]
    assert inside[0] > 0.5                                 # in-sample, the model's logit looks strong
    assert abs(oof[0]) < 0.25 * inside[0] and oof[1] > 0.5  # out of family it is near noise: the signal carries


def test_out_of_family_platt_keeps_a_shared_map_and_flattens_one_that_does_not_carry():
    """Known answers: four families that share sigmoid(2x - 0.5) give that map back (the second step is the
    identity); where x tells the outcome in one family only and is noise in the other three, the map that carries
    to a new family is nearly flat (the pooled Platt map is not); one family: the plain Platt map."""
    from htc_core.experiments.transfer_maps import out_of_family_platt

    rng = np.random.default_rng(9)
    x, groups = rng.normal(size=40_000), np.repeat(["a", "b", "c", "d"], 10_000)
    y = (rng.random(x.size) < sigmoid(2 * x - 0.5)).astype(float)
    a, b = out_of_family_platt(x, y, groups)
    assert abs(a - 2.0) < 0.08 and abs(b + 0.5) < 0.05
    y_one = np.where(groups == "a", y, (rng.random(x.size) < 0.4).astype(float))
    pooled, shrunk = weighted_platt(x, y_one)[0], out_of_family_platt(x, y_one, groups)[0]
    assert pooled > 0.3 and abs(shrunk) < 0.1
    assert out_of_family_platt(x, y, np.full(x.size, "a")) == pytest.approx(weighted_platt(x, y))


def test_signal_oof_entry_holds_the_map_its_base_rate_measures_read():
    """fit_transfer(..., "signal-oof"): the map is the out-of-family Platt map of the chosen signal, the fallback
    the same map, and ``rate_map`` turns its confidences back into the plain Platt map's (the ``signal`` entry's)
    exactly; a GAC whose transfer holds a rate_map measures the base-rate gap on those, and a bad rate_map is
    refused with a message."""
    from htc_core.calibration.general import check_transfer
    from htc_core.experiments.transfer_entry import fit_transfer
    from htc_core.experiments.transfer_maps import out_of_family_platt

    rng = np.random.default_rng(10)
    groups = np.repeat([f"t{i} | M" for i in range(4)], 500)
    shift = np.repeat([-1.0, 0.0, 0.5, 1.5], 500)                   # each family its own intercept
    s = sigmoid(rng.normal(0, 1.5, groups.size))
    y = (rng.random(s.size) < sigmoid(1.2 * logit(s) + shift)).astype(float)
    sig = pd.DataFrame({"seq_prob": np.full(s.size, 0.5), "min_prob": s, "neg_entropy": np.full(s.size, np.nan)})
    d = {"y": y, "groups": groups, "alt": np.ones(s.size, bool), "signals": sig}
    oof, plain = fit_transfer(d, "signal-oof"), fit_transfer(d, "signal")
    assert oof["signal"] == plain["signal"] == "min_prob" and "rate_map" not in plain
    assert oof["coef"][1:] == pytest.approx(list(out_of_family_platt(logit(s), y, groups)), abs=1e-12)
    assert oof["fallback"]["coef"] == oof["coef"] and 0 < oof["coef"][1] < plain["coef"][1]
    p = sigmoid(oof["coef"][1] * logit(s) + oof["coef"][2])
    rm = oof["rate_map"]
    np.testing.assert_allclose(sigmoid(rm[0] * logit(p) + rm[1]),
                               sigmoid(plain["coef"][1] * logit(s) + plain["coef"][2]), rtol=1e-9)
    assert check_transfer(oof)["rate_map"] == rm
    for bad in ([1.0], [1.0, float("nan")], "steep", [True, 0.0]):
        with pytest.raises(ValueError, match="transfer.rate_map"):
            check_transfer({**oof, "rate_map": bad})


def test_assess_reads_the_base_rate_before_the_flattening():
    """A shipped-style GAC with signal-oof: the rate gap of a set of successes is measured on the plain map's
    confidences (through rate_map), which move with the base rate; without the rate_map it is far smaller."""
    from htc_core.calibration.models import load_model
    from htc_core.calibration.shift import shift_check
    from htc_core.formats import load

    from conftest import REPO

    gac = load_model("gac")
    assert gac.transfer["method"] == "signal-oof" and "rate_map" in gac.transfer
    ts, _ = load(str(REPO / "sample_runs" / "units"))
    ok = ts.filter(ts.labels == 1)
    rep, alt = shift_check(gac, ok), gac.kinds(ok) == "with_alternatives"
    p = gac.predict_proba_traces(ok)[:, 1]
    rm, rate = gac.transfer["rate_map"], gac.card["expected_error"]["training_rate"]
    e = gac.assess(rep, alt, p)
    assert e.measures["rate_gap"] == pytest.approx(abs(float(sigmoid(rm[0] * logit(p) + rm[1]).mean()) - rate))
    assert "rate_gap" in e.flagged                            # all successes: 0.100 above the training rate
    gac.transfer = {k: v for k, v in gac.transfer.items() if k != "rate_map"}
    without = gac.assess(rep, alt, p).measures["rate_gap"]
    assert e.measures["rate_gap"] > 2 * without and without == pytest.approx(abs(float(p.mean()) - rate))
