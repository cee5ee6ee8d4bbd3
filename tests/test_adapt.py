"""Adaptation from a prior (htc_core.calibration.adapt / adapt_curve) on real runs: the UALA HotpotQA runs
(chosen-token log-probabilities only) and the project's SmolLM2 sample runs."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from htc_core.calibration.adapt import DEFAULT_STRENGTHS, fit_with_prior
from htc_core.experiments.adapt_curve import _prior_for_curve, adapt_traces, adaptation_curve
from htc_core.experiments.gac_entries import gac_adapted
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.general import load_any_model
from htc_core.calibration.metrics import auroc, brier_score
from htc_core.calibration.models import load_model
from htc_core.cli import main
from htc_core.features import extract
from htc_core.formats import load

REPO = Path(__file__).resolve().parents[1]
UNITS = REPO / "sample_runs" / "units"
FACTS = REPO / "sample_runs" / "facts"


@pytest.fixture(scope="module")
def uala(uala_dir):
    ts, _ = load([str(uala_dir)])
    ts = ts.labeled()
    return ts, extract(ts, profile="chosen", top_k=5)


@pytest.fixture(scope="module")
def gac():
    return load_model("gac")


def _draw(y, n, seed):
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    k = max(2, int(round(n * len(pos) / len(y))))
    return np.sort(np.concatenate([rng.choice(pos, k, replace=False), rng.choice(neg, n - k, replace=False)]))


def test_grid_holds_prior_recalibrated_shrinkage_and_no_prior_and_the_choice_is_the_best_score(uala, gac):
    ts, fm = uala
    tr = _draw(ts.labels, 40, 0)
    m = HTCCalibrator(prior=gac).fit(fm.take(tr), ts.labels[tr])
    a = m.adaptation_
    names = [r["name"] for r in a["grid"]]
    assert names[0] == "prior" and names[1] == "recalibrated prior" and names[-1] == "no prior"
    assert sorted(r["lambda"] for r in a["grid"] if r["kind"] == "shrink") == sorted(DEFAULT_STRENGTHS)
    ok = [r for r in a["grid"] if r["available"]]
    assert "no prior" not in [r["name"] for r in ok]        # the leave-one-out criterion: no plain-HTC candidate
    best = min(ok, key=lambda r: r["log_loss"])
    # the most prior-like candidate within one standard error of the lowest leave-one-out log loss
    [chosen] = [r for r in ok if r.get("chosen_within_one_se")]
    assert a["choice"] == chosen["name"] and chosen["log_loss"] >= best["log_loss"]
    assert names.index(chosen["name"]) <= names.index(best["name"])
    cv = fit_with_prior(HTCCalibrator(prior=gac), fm.take(tr), ts.labels[tr], criterion="cv").adaptation_
    assert cv["choice"] == min((r for r in cv["grid"] if r["available"]), key=lambda r: r["log_loss"])["name"]
    assert a["prior"] == "gac/without_alternatives"     # UALA lists no alternatives: the chosen-profile model
    assert m.profile_ == "chosen" and list(m.feature_names_in_) == list(gac.models["without_alternatives"].feature_names_in_)


def test_an_inverted_prior_is_not_kept_the_cv_picks_a_model_that_ranks(uala):
    """A prior that ranks the new runs backwards (a model fitted on other UALA runs, its weights negated) is not
    kept: the adaptation's CV picks a model that ranks. (The shipped GAC's own logit ranks UALA at chance since
    UALA left its training, so it cannot serve as the good model to invert.)"""
    ts, fm = uala
    y = ts.labels
    tr = _draw(y, 100, 1)
    rest = np.setdiff1d(np.arange(len(y)), tr)
    other, te = rest[: len(rest) // 2], rest[len(rest) // 2:]
    good = HTCCalibrator(alphas=(1.0,), profile=None).fit(fm.take(other), y[other])
    obj = good.to_dict()
    obj["coef"] = [-v for v in obj["coef"]]
    obj["intercept"] = -obj["intercept"]
    bad = HTCCalibrator.from_dict(obj)
    assert auroc(y[te], bad.predict_proba(fm.take(te))[:, 1]) < 0.4
    m = HTCCalibrator(prior=bad).fit(fm.take(tr), y[tr])
    assert m.adaptation_["choice"] != "prior"
    assert auroc(y[te], m.predict_proba(fm.take(te))[:, 1]) > 0.6


def test_many_labels_from_the_priors_own_distribution_are_not_worse_than_plain_htc(uala):
    ts, fm = uala
    y = ts.labels
    rng = np.random.default_rng(3)
    idx = rng.permutation(len(y))
    a, b, te = idx[:250], idx[250:450], idx[450:]
    prior = HTCCalibrator(profile=None).fit(fm.take(a), y[a])
    adapted = HTCCalibrator(prior=prior).fit(fm.take(b), y[b])
    plain = HTCCalibrator().fit(fm.take(b), y[b])
    pa, pp = adapted.predict_proba(fm.take(te))[:, 1], plain.predict_proba(fm.take(te))[:, 1]
    assert brier_score(y[te], pa) <= brier_score(y[te], pp) + 0.01
    assert auroc(y[te], pa) >= auroc(y[te], pp) - 0.03


def test_fallbacks_with_very_few_labels_are_said(uala, gac):
    ts, fm = uala
    y = ts.labels
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    only = HTCCalibrator(prior=gac).fit(fm.take(pos[:8]), y[pos[:8]])
    assert only.adaptation_["choice"] == "prior" and "only successes" in " ".join(only.adaptation_["notes"])
    p0 = gac.models["without_alternatives"].predict_proba(fm)[:, 1]
    assert np.allclose(only.predict_proba(fm)[:, 1], p0)
    one = np.concatenate([pos[:9], neg[:1]])
    m = fit_with_prior(HTCCalibrator(prior=gac), fm.take(one), y[one], criterion="cv")
    assert m.adaptation_["choice"] == "recalibrated prior" and "no inner CV" in " ".join(m.adaptation_["notes"])
    m = HTCCalibrator(prior=gac).fit(fm.take(one), y[one])      # leave-one-out: defined with a single failure
    assert m.adaptation_["grid"] and "leave-one-out" in " ".join(m.adaptation_["notes"])
    few = np.concatenate([pos[:9], neg[:3]])   # 12 labels, 3 failures: 3 stratified folds
    m = fit_with_prior(HTCCalibrator(prior=gac), fm.take(few), y[few], criterion="cv")
    assert "3 stratified folds" in " ".join(m.adaptation_["notes"])
    assert m.adaptation_["grid"] and m.adaptation_["choice"] in [r["name"] for r in m.adaptation_["grid"]]


def test_model_file_round_trip(tmp_path, uala, gac):
    ts, fm = uala
    tr = _draw(ts.labels, 50, 2)
    m = HTCCalibrator(prior="gac").fit(fm.take(tr), ts.labels[tr])
    path = m.save(tmp_path / "adapted.json")
    obj = json.loads(path.read_text())
    assert obj["adaptation"]["choice"] == m.adaptation_["choice"] and obj["adaptation"]["grid"]
    assert len(obj["training"]["feature_stats"]["mean"]) == len(obj["feature_names"])
    back = load_any_model(path)
    assert isinstance(back, HTCCalibrator) and back.adaptation_ == json.loads(json.dumps(m.adaptation_))
    assert np.array_equal(back.predict_proba(fm)[:, 1], m.predict_proba(fm)[:, 1])
    assert back.profile_ == "chosen"


def test_gac_prior_follows_the_features_kind_and_refuses_other_profiles(gac):
    ts, _ = load([str(UNITS)])
    ts = ts.take(np.arange(0, 500, 5)).labeled()
    m = adapt_traces(ts, gac)                         # SmolLM2 runs list top-5 alternatives
    assert m.adaptation_["prior"] == "gac/with_alternatives" and m.profile_ == "paper"
    with pytest.raises(ValueError, match="no model of the prior"):
        HTCCalibrator(prior=gac).fit(extract(ts, profile="paper", top_k=3), ts.labels)
    with pytest.raises(ValueError, match="profile"):
        HTCCalibrator(prior=gac, profile="chosen").fit(extract(ts, profile="paper", top_k=5), ts.labels)
    with pytest.raises(ValueError, match="neither a shipped model"):
        HTCCalibrator(prior="no-such-model").fit(extract(ts), ts.labels)


def test_clone_shares_the_fitted_prior(gac):
    prior = gac.models["without_alternatives"]
    c = clone(HTCCalibrator(prior=prior))
    assert c.prior is prior and not hasattr(c, "coef_")


def _units_and_facts(step=3):
    """Every ``step``-th run of the units and facts families (a small real set with two groups)."""
    ts, _ = load([str(UNITS), str(FACTS)])
    return ts.take(np.arange(0, len(ts), step)).labeled()


def _flip(ts, rows):
    """A copy of ``ts`` whose runs ``rows`` carry the opposite label."""
    out = copy.copy(ts)
    meta = ts.meta.copy()
    col = meta.columns.get_loc("success")
    meta.iloc[rows, col] = [not bool(v) for v in meta.iloc[rows, col]]
    object.__setattr__(out, "meta", meta)
    return out


@pytest.mark.heavy   # refits the GAC without the target from its training sources (2,000+ runs)
def test_a_poisoned_target_never_reaches_the_prior_or_the_fit():
    ts = _units_and_facts()
    rows = np.flatnonzero(ts.meta["dataset"].to_numpy() == "units")
    others = np.flatnonzero(ts.meta["dataset"].to_numpy() != "units")
    flipped = _flip(ts, rows)
    assert np.array_equal(flipped.labels[rows], 1 - ts.labels[rows])
    p1 = _prior_for_curve(ts, "dataset", "units", others, None, [])
    p2 = _prior_for_curve(flipped, "dataset", "units", others, None, [])
    for k in ("with_alternatives", "without_alternatives"):
        assert np.array_equal(p1.models[k].coef_, p2.models[k].coef_)
    # a learning-curve entry: the test runs' labels (poisoned here) never reach the fit
    tr, te = rows[:60], rows[60:120]
    y_tr = ts.labels[tr]
    a = gac_adapted(ts.take(tr), y_tr, ts.take(te), 0)
    b = gac_adapted(ts.take(tr), y_tr, flipped.take(te), 0)
    assert np.array_equal(a, b)


@pytest.mark.heavy
def test_adaptation_curve_small(tmp_path):
    ts = _units_and_facts()
    res = adaptation_curve(ts, target="units", sizes=(10, 40), seeds=2)
    f = res.to_frame()
    assert set(f.method) == {"GAC zero-shot", "HTC from scratch", "GAC adapted"} and set(f["size"]) == {10, 40}
    assert (f.n_repeats == 2).all() and res.n_target == int((ts.meta["dataset"] == "units").sum())
    assert "leave-one-group-out" in " ".join(res.notes)
    obj = json.loads(res.to_json())
    assert obj["experiment"] == "adaptation-curve" and len(obj["rows"]) == 6
    with pytest.raises(ValueError, match="target"):
        adaptation_curve(ts, target="nope")
    with pytest.raises(ValueError, match="trained on"):
        adaptation_curve(ts, target="units", prior="gac")


def test_cli_fit_with_prior(tmp_path, capsys, uala_run_a):
    out = tmp_path / "m.json"
    assert main(["fit", str(uala_run_a), "--prior", "gac", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Choice: " in text and "recalibrated prior" in text and "no prior" in text
    obj = json.loads(out.read_text())
    assert obj["adaptation"]["prior"] == "gac/without_alternatives" and obj["profile"] == "chosen"
    assert main(["fit", str(uala_run_a), "--prior", "gac", "--variant", "gam", "--out", str(out)]) == 2
    assert "cannot be combined" in capsys.readouterr().err
