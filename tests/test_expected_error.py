"""The expected-ECE range and applicability verdict given with every zero-shot GAC score."""

import json

import numpy as np
import pytest

from htc_core.calibration.expected_error import FLAGS, ece_floor, expected_ece, labels_to_know
from htc_core.calibration.general import GeneralCalibrator

POINTS = [{"family": "a", "ece": 0.05, "max_shift": 0.5, "rate_gap": 0.01, "em_gap": 0.02, "missing_topk": 0.0},
          {"family": "b", "ece": 0.08, "max_shift": 1.0, "rate_gap": 0.03, "em_gap": 0.05, "missing_topk": 0.0},
          {"family": "c", "ece": 0.12, "max_shift": 1.5, "rate_gap": 0.05, "em_gap": 0.08, "missing_topk": 0.0},
          {"family": "d", "ece": 0.30, "max_shift": 4.0, "rate_gap": 0.20, "em_gap": 0.30, "missing_topk": 0.0},
          {"family": "e", "ece": 0.45, "max_shift": 6.0, "rate_gap": 0.30, "em_gap": 0.40, "missing_topk": 1.0}]
CONF = np.random.default_rng(0).uniform(0.2, 0.8, 400)


def test_a_set_like_a_measured_family_gets_a_range_around_its_error():
    e = expected_ece(POINTS, {"max_shift": 0.6, "rate_gap": 0.01, "em_gap": 0.02, "missing_topk": 0.0}, CONF)
    assert e.verdict == "within the training data" and not e.flagged and not e.extrapolated
    assert e.low <= 0.05 <= e.high and e.high < 0.25
    assert "expected ECE" in e.message() and "label about" in e.message()


def test_a_shifted_base_rate_alone_is_flagged():
    # feature means unshifted, but the predicted success rate is 0.14 away from the training rate
    e = expected_ece(POINTS, {"max_shift": 0.5, "rate_gap": 0.14, "em_gap": 0.05, "missing_topk": 0.0}, CONF)
    assert e.verdict == "outside the training data" and e.flagged == ["rate_gap"]
    assert "rate_gap 0.14" in e.message()
    e2 = expected_ece(POINTS, {"max_shift": 0.5, "rate_gap": 0.02, "em_gap": 0.2, "missing_topk": 0.0}, CONF)
    assert e2.flagged == []                       # the EM estimate is a distance, not a flag


def test_beyond_every_measured_shift_the_upper_end_is_the_worst_measured():
    e = expected_ece(POINTS, {"max_shift": 12.0, "rate_gap": 0.5, "em_gap": 0.6, "missing_topk": 1.0}, CONF)
    assert e.extrapolated and e.high >= 0.45 and "beyond the shifts measured" in e.message()
    assert set(e.flagged) == set(FLAGS)


def test_ece_floor_is_the_sampling_noise_and_shrinks_with_n():
    rng = np.random.default_rng(1)
    small, large = ece_floor(rng.uniform(0, 1, 50)), ece_floor(rng.uniform(0, 1, 5000))
    assert 0.05 < small < 0.2 and large < 0.03
    assert labels_to_know(0.05) == 100 and labels_to_know(0.5) == 20 and labels_to_know(float("nan")) == 400


def test_no_points_gives_an_honest_wide_range():
    e = expected_ece([], {"max_shift": 0.0, "rate_gap": 0.0, "em_gap": 0.0, "missing_topk": 0.0}, CONF)
    assert e.high == 1.0 and e.extrapolated


def _tiny_gac():
    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.features import FEATURE_NAMES

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, len(FEATURE_NAMES)))
    y = (X[:, 0] + rng.normal(size=80) > 0).astype(int)
    m = HTCCalibrator(alphas=[1.0], inner_folds=2, profile="chosen", top_k=5).fit(X, y, feature_names=FEATURE_NAMES)
    return m


def test_transfer_entry_round_trips_and_is_validated(tmp_path):
    m = _tiny_gac()
    t = {"method": "stack-oof", "signal": "min_prob", "coef": [0.5, 1.0, -0.2], "fill": 0.3}
    g = GeneralCalibrator.from_models({"without_alternatives": m}, transfer=t, card={"expected_error": {"points": POINTS}})
    back = GeneralCalibrator.load(g.save(tmp_path / "g.json"))
    assert back.transfer == t and back.card["expected_error"]["points"] == POINTS
    obj = json.loads((tmp_path / "g.json").read_text())
    for bad, match in ((dict(t, signal="nope"), "signal"), (dict(t, signal="neg_entropy"), "a probability"),
                       (dict(t, coef=[1, 2]), "coef"),
                       (dict(t, coef=[1, float("nan"), 0]), "coef")):
        obj["transfer"] = bad
        with pytest.raises(ValueError, match=match):
            GeneralCalibrator.from_dict(obj)


def test_shipped_gac_flags_a_base_rate_shift_that_feature_means_miss():
    """Real runs: the successful units runs (base rate 1.0 instead of 0.38) move no used feature's mean by 2
    training sd, but the GAC's predicted base rate moves by 0.10 or more, and the check says so."""
    from htc_core.calibration.models import load_model
    from htc_core.calibration.shift import shift_check
    from htc_core.formats import load

    from conftest import REPO

    gac = load_model("gac")
    ts, _ = load(str(REPO / "sample_runs" / "units"))
    ok = ts.filter(ts.labels == 1)
    rep = shift_check(gac, ok)
    assert not rep.shifted and rep.max_shift < 2
    assert not gac.scores_as_set(len(ok))      # the shipped files hold no set-level step: run by run
    p = gac.predict_proba_traces(ok)[:, 1]
    e = gac.assess(rep, gac.kinds(ok) == "with_alternatives", p)
    assert "rate_gap" in e.flagged and e.verdict == "outside the training data"
    assert e.measures["rate_gap"] >= 0.1 and e.low < e.high
    # signal-oof's confidences are flattened toward the training base rate: their own mean hardly moves (0.036
    # here); the base-rate measures read them before the flattening (transfer.rate_map, test_transfer_methods)
    assert abs(float(p.mean()) - gac.card["expected_error"]["training_rate"]) < 0.05


def test_htc_score_gac_prints_verdict_and_expected_range(tmp_path, capsys, uala_run_a):
    from htc_core.cli import main

    assert main(["score", "gac", str(uala_run_a), "--out", str(tmp_path / "s.csv")]) == 0
    cap = capsys.readouterr()
    assert "applicability: outside the training data" in cap.err and "expected ECE" in cap.err
    assert "missing_topk 1.00" in cap.err and "label about" in cap.err
    # the metrics line says what the runs are to the model: UALA was never trained on (zero-shot)
    assert "(zero-shot: no run's dataset x model is in the model's training data)" in cap.out


def test_htc_score_says_in_sample_only_for_runs_the_model_was_trained_on(tmp_path, capsys, uala_run_a):
    from htc_core.cli import main

    from conftest import REPO

    units = REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"
    assert main(["score", "gac", str(units), "--out", str(tmp_path / "s.csv")]) == 0
    assert "(in-sample: every run's dataset x model is in the model's training data)" in capsys.readouterr().out
    assert main(["score", "gac", str(units), str(uala_run_a), "--out", str(tmp_path / "s.csv")]) == 0
    assert "(250 in-sample (their dataset x model is in the model's training data), 466 zero-shot)" in \
        capsys.readouterr().out


def test_expected_range_uses_the_cut_extremes_and_a_noise_floor_below():
    pts = [dict(p, ece_low=p["ece"] - 0.02, ece_high=p["ece"] + 0.1) for p in POINTS]
    m = {"max_shift": 0.6, "rate_gap": 0.01, "em_gap": 0.02, "missing_topk": 0.0}
    plain, cuts = expected_ece(POINTS, m, CONF), expected_ece(pts, m, CONF)
    assert cuts.high == pytest.approx(plain.high + 0.1) and cuts.low <= plain.low
    # 16 runs: the sampling noise of ECE is large; the low end never drops below what a perfectly calibrated
    # confidence shows 99 times in 100, and never above the high end
    from htc_core.calibration.expected_error import ece_noise

    few = CONF[:16]
    mean, q01 = ece_noise(few)
    e = expected_ece(POINTS, m, few)
    assert 0 < q01 < mean and e.low >= q01 - 1e-12 and e.low <= e.high and e.high >= 0.05 + mean - 1e-12


@pytest.mark.parametrize("name", ["gac", "gac-prefix"])
def test_cards_hold_the_range_checked_on_their_own_held_out_families(name):
    """Each held-out family's ECE against the range built from the *other* families' points (the card says how
    often it held; the numbers are in docs/gac.md)."""
    from htc_core.calibration.models import load_model

    card = load_model(name).card
    rows = card["leave_one_out"]["range_self_check"]
    assert [r["family"] for r in rows] == [p["family"] for p in card["expected_error"]["points"]]
    for r in rows:
        # the card's numbers are rounded to 4 decimals: inside allows half that unit (expected_error.holds)
        assert r["inside"] == (r["low"] - 5e-5 <= r["ece"] <= r["high"] + 5e-5) and 0 <= r["low"] <= r["high"] <= 1
    assert sum(r["inside"] for r in rows) >= len(rows) // 2
