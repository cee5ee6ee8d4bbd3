"""Why a trajectory got its confidence and where HTC changed the verdict (htc_core.explain.reasons,
.examples); the package imports no app library. Groups and steps: test_explain_groups.py, test_explain_steps.py."""

from __future__ import annotations

import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from htc_core import explain
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.features import FEATURE_NAMES, REGISTRY, extract
from htc_core.formats import load

from conftest import REPO


@pytest.fixture(scope="module")
def uala(uala_run_a):
    ts, _ = load(uala_run_a)
    ts = ts.take(np.arange(200))
    fm = extract(ts)
    model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    return ts, fm, model


def test_percentile_and_words():
    ref = np.arange(100, dtype=float)
    assert explain.percentile_of(-1, ref) == 0.0
    assert explain.percentile_of(50, ref) == pytest.approx(50.5)
    assert math.isnan(explain.percentile_of(1.0, np.array([])))
    assert [explain.describe_position(p) for p in (1, 10, 50, 80, 99)] == \
        ["far below", "below", "close to", "above", "far above"]


def test_contributions_sum_to_the_models_logit(uala):
    ts, fm, model = uala
    for i in (0, 17, 150):
        e = explain.explain_trajectory(model, fm, i, labels=ts.labels, ids=ts.ids)
        assert e.intercept + e.table["contribution"].sum() == pytest.approx(model.decision_function(fm.values[i:i + 1])[0])
        assert e.confidence == pytest.approx(model.predict_proba(fm.values[i:i + 1])[0, 1])
        assert len(e.table) == 48
        mags = e.table["contribution"].abs().to_numpy()
        assert np.all(mags[:-1] >= mags[1:])
        assert e.id == ts.ids[i]
        row = e.table.set_index("feature").loc["last_top1_avg"]
        assert row["contribution"] == pytest.approx(row["weight"] * row["z"] * e.cap_factor)
        assert row["formula"] == REGISTRY["last_top1_avg"].formula


def test_reasons_compare_with_successful_runs(uala):
    ts, fm, model = uala
    contrib = model.contributions(fm.values)
    i = int(np.unravel_index(np.argmin(contrib), contrib.shape)[0])   # holds the strongest push down anywhere
    j = int(np.argmax(np.abs(contrib[i])))
    e = explain.explain_trajectory(model, fm, i, labels=ts.labels, groups=ts.meta["dataset"], correlation=None)
    top = e.table.iloc[0]
    assert top["feature"] == FEATURE_NAMES[j]
    succ = fm.values[ts.labels == 1, j]
    assert top["success_percentile"] == pytest.approx(explain.percentile_of(fm.values[i, j], succ))
    lead = e.signals.iloc[0]
    assert top["feature"] == lead["signal"] or top["feature"] in e.table.loc[e.table["signal"] == lead["signal"],
                                                                          "feature"].tolist()
    first = e.reasons[0]
    assert first.startswith(lead["name"])
    assert "successful runs of HotpotQA" in first and lead["comparison"] in first
    assert ("lowers the confidence" if lead["contribution"] < 0 else "raises the confidence") in first
    assert e.summary.startswith(f"Calibrated confidence {explain.format_confidence(e.confidence)}")
    with pytest.raises(ValueError, match="index"):
        explain.explain_trajectory(model, fm, 10_000)


def test_reason_wording_on_a_hand_made_model():
    # one feature matters; successful runs have values 1..10, the trajectory has -5: far below
    X = np.zeros((21, 48))
    X[:10, 31] = np.arange(1, 11)
    X[10:20, 31] = np.arange(-9, 1)
    X[20, 31] = -5.0
    y = np.r_[np.ones(10), np.zeros(10), np.nan]
    model = SimpleNamespace(coef_=np.zeros((1, 48)), intercept_=np.array([0.2]), mean_=np.zeros(48),
                            scale_=np.ones(48), feature_names_in_=np.array(FEATURE_NAMES, dtype=object),
                            variant="reduced")
    model.coef_[0, 31] = 0.5
    model.contributions = lambda A: ((A - model.mean_) / model.scale_) * model.coef_[0]
    e = explain.explain_trajectory(model, X, 20, labels=y)
    assert e.logit == pytest.approx(0.2 - 2.5)
    # the feature named as every page names it (F31 on Feature weights), its meaning in the signal's "measures"
    assert e.signals["measures"].iloc[0] == "last step: probability of the most likely token, mean over its tokens"
    assert e.reasons == ["Last step top-1 probability, mean is -5, lower than in "
                         "the typical successful run (lower than all 10 successful runs); the model reads higher values "
                         "as a sign of success, and -5 is below the average of the runs it was fitted on (0), so this "
                         "lowers the confidence (logit -2.50)."]


def test_confidence_examples():
    meta = pd.DataFrame({"id": list("abcdef"), "dataset": ["D"] * 6, "model": ["m"] * 6, "question": list("QQQQQQ"),
                         "answer": list("AAAAAA"), "gold": list("GGGGGG")})
    y = np.array([0, 0, 1, 1, 0, 1])
    base = np.array([0.9, 0.6, 0.2, 0.5, 0.3, 0.9])
    htc = np.array([0.2, 0.5, 0.8, 0.55, 0.6, 0.5])
    ex = explain.confidence_examples(meta, y, base, htc, baseline="B", htc="H", n=5)
    assert list(ex.over["id"]) == ["a", "b"]            # failures HTC lowered, biggest drop first
    assert list(ex.under["id"]) == ["c", "d"]           # successes HTC raised, biggest rise first
    assert ex.over["change"].iloc[0] == pytest.approx(-0.7)
    assert list(ex.over["position"]) == [0, 1]
    assert len(explain.confidence_examples(meta, y, base, htc, baseline="B", htc="H", n=1).over) == 1
    with pytest.raises(ValueError, match="one entry per trajectory"):
        explain.confidence_examples(meta, y[:3], base, htc, baseline="B", htc="H")


def test_group_position(uala):
    ts, fm, model = uala
    groups = np.where(np.arange(len(ts)) % 3 == 0, "A", None)
    i = 4                                             # group '(none)'
    place = explain.group_position(model, fm, i, groups, labels=ts.labels)
    same = np.flatnonzero(np.arange(len(ts)) % 3 != 0)
    conf = model.predict_proba(fm.values[same])[:, 1]
    assert place.group == "(none)" and place.n == len(same)
    assert np.allclose(place.confidence, conf) and np.array_equal(place.labels, ts.labels[same], equal_nan=True)
    assert place.value == pytest.approx(model.predict_proba(fm.values[i:i + 1])[0, 1])
    assert place.percentile == pytest.approx(explain.percentile_of(place.value, conf))
    with pytest.raises(ValueError, match="groups"):
        explain.group_position(model, fm, i, groups[:10])


def test_the_package_is_light_until_a_name_is_used_and_every_name_resolves():
    # no app library nor htc_core.app module, with every explain module imported: held for all core modules at
    # once by tests/test_architecture.py::test_core_and_cli_import_no_app_library_at_run_time
    code = ("import sys, htc_core.explain, htc_core.explain.flags\n"
            "print(sorted(m for m in ('pandas', 'sklearn', 'scipy', 'htc_core.explain.groups', "
            "'htc_core.calibration.calibrators', 'htc_core.app') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['pandas']"      # flags' frame; the per-group calibrators stay unloaded
    for name in explain.__all__:
        assert getattr(explain, name) is not None, name
    assert set(dir(explain)) >= set(explain.__all__)


def test_signals_merge_copies_and_correlated_features_and_still_sum_to_the_logit(uala):
    """On real data the paper's definitions make exact copies (token_volatility_mean == attention_spread_mean):
    they are one signal, never two reasons with the same value and weight, and nothing listed cancels."""
    ts, fm, model = uala
    for i in range(0, 200, 7):
        e = explain.explain_trajectory(model, fm, i, labels=ts.labels, groups=ts.meta["dataset"], ids=ts.ids,
                                       n_reasons=5)
        assert e.intercept + e.signals["contribution"].sum() == pytest.approx(e.logit, abs=1e-9)
        assert e.signals["n_members"].sum() == 48
        lead = e.table.set_index("feature")["signal"]
        assert lead["token_volatility_mean"] == lead["attention_spread_mean"]
        shown = e.signals.head(len(e.reasons))
        assert not shown.duplicated(["value", "contribution"]).any()
        big = shown[shown["contribution"].abs() > 2.0]["contribution"].to_numpy()
        for a in range(len(big)):
            for b in range(a + 1, len(big)):
                assert abs(big[a] + big[b]) > 0.1 * max(abs(big[a]), abs(big[b])), (i, big)


def test_signal_groups_on_hand_made_columns():
    rng = np.random.default_rng(0)
    a = rng.normal(size=200)
    X = np.column_stack([a, a, a + 1e-3 * rng.normal(size=200), rng.normal(size=200), np.ones(200), np.ones(200)])
    sig = explain.signal_groups(X)
    assert [(s.members, s.kind) for s in sig] == [((0, 1, 2), "correlated"), ((3,), "single"),
                                                  ((4, 5), "duplicate")]
    assert [(s.members, s.kind) for s in explain.signal_groups(X, threshold=None)] == [
        ((0, 1), "duplicate"), ((2,), "single"), ((3,), "single"), ((4, 5), "duplicate")]
    with pytest.raises(ValueError, match="threshold"):
        explain.signal_groups(X, threshold=1.5)


@pytest.mark.parametrize("p,text", [(0.0, "< 0.001"), (0.0004, "< 0.001"), (0.004, "0.004"), (0.5, "0.50"),
                                    (0.995, "0.995"), (0.9996, "> 0.999"), (float("nan"), "n/a")])
def test_format_confidence_never_shows_a_bare_zero_or_one(p, text):
    assert explain.format_confidence(p) == text


@pytest.mark.parametrize("pct,words", [(0.0, "lower than all 40 successful runs"),
                                       (100.0, "higher than all 40 successful runs"),
                                       (2.5, "lower than 97% of 40 successful runs"),
                                       (99.9, "higher than 99% of 40 successful runs"),
                                       (50.0, "at the median of 40 successful runs")])
def test_comparison_words_never_pass_all(pct, words):
    assert explain.compare_with(pct, 40, "successful runs") == words


def test_reasons_read_as_what_is_measured_and_their_words_follow_the_sign():
    """Issue 27: on the project's runs, every reason's words agree with its logit (raises <-> positive; a higher or
    lower value read as a sign of success exactly when it raises), no reason's name says 'attention', and
    correlated features are one signal (entropy within a step and tokens per step no longer pull apart)."""
    import re

    ts, _ = load(REPO / "sample_runs" / "arithmetic")
    fm = extract(ts)
    for variant in ("reduced", "full"):
        model = HTCCalibrator(variant=variant).fit(fm, ts.labels)
        pattern = re.compile(r"^(?P<name>.+) is (?P<v>[^,]+), (?P<stand>higher than in|lower than in|close to) the "
                             r"typical successful run of \S+ \(.*\); (?P<why>.+) \(logit (?P<c>[+-]\d+\.\d+)\)\.$")
        for i in range(0, len(ts), 9):
            e = explain.explain_trajectory(model, fm, i, labels=ts.labels, groups=ts.meta["dataset"], n_reasons=5)
            assert e.intercept + e.signals["contribution"].sum() == pytest.approx(e.logit, abs=1e-9)
            for r in e.reasons:
                m = pattern.match(r)
                assert m, r
                up = float(m["c"]) > 0
                assert "attention" not in m["name"].lower()
                raises = " raises the confidence" in m["why"] or " raise the confidence" in m["why"]
                lowers = " lowers the confidence" in m["why"] or " lower the confidence" in m["why"]
                assert raises == up and lowers != up
                if ", so this" in m["why"]:      # the model's reading and the run's side give the effect
                    reads_success = "reads higher values as a sign of success" in m["why"]
                    above = " is above the average" in m["why"]
                    assert (reads_success == above) == up, r
            lead = e.table.set_index("feature")["signal"]
            assert lead["attention_entropy_mean"] == lead["avg_tokens_per_step"]
