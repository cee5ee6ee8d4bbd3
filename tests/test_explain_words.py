"""A reason's words never contradict themselves (docs/ui-review.md findings 14 and 15).

The direction word ("higher than in / lower than in / close to the typical ... run"), the value and the percentile
of a reason all come from the signal's lead feature against the same reference runs; "close to the typical run"
means within :data:`htc_core.explain.reasons.TYPICAL_BAND` of them; the model's reading says "so" only where the
reading and the run's side give the contribution's sign; values are written in the unit the words name."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from htc_core import explain
from htc_core.explain.measures import MAX_APART_DIGITS, MEASURES, UNITS, format_apart, format_measure
from htc_core.explain.reasons import TYPICAL_BAND, ModelReading, one_of, position_of, reason_text
from htc_core.features import FEATURE_NAMES, extract
from htc_core.formats import load

from conftest import REPO

SENTENCE = re.compile(
    r"^(?P<name>.+?) is (?P<value>[^,(]+?)(?:, (?P<stand>higher than in|lower than in|close to) the typical "
    r"(?P<one>.+?))? \((?P<cmp>(?:higher|lower) than (?:all|\d+%(?: of)?) \d+ .+|at the median of \d+ .+|not "
    r"comparable with .+)\); (?P<why>.+) \(logit (?P<c>[+-]\d+\.\d+)\)\.$")
PERCENT = re.compile(r"^(?P<word>higher|lower) than (?P<pct>\d+)% of (?P<n>\d+) (?P<ref>.+)$")


def _linear_model(X: np.ndarray, rng: np.random.Generator) -> SimpleNamespace:
    """A linear model over the 48 named features with random weights, centred on ``X`` (as a fit would be)."""
    d = X.shape[1]
    coef = rng.normal(size=(1, d)) * (rng.uniform(size=d) < 0.7)     # some features dropped, as a sparse fit
    model = SimpleNamespace(coef_=coef, intercept_=np.array([rng.normal()]), mean_=X.mean(axis=0),
                            scale_=np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0),
                            feature_names_in_=np.array(FEATURE_NAMES, dtype=object), variant="full")
    model.contributions = lambda A: ((A - model.mean_) / model.scale_) * model.coef_[0]
    return model


def _matrix(rng: np.random.Generator, n: int, ties: bool) -> np.ndarray:
    """Random features with shared factors (so that signals merge), some columns in whole numbers (ties)."""
    base = rng.normal(size=(n, 4))
    X = base[:, rng.integers(0, 4, size=48)] * rng.uniform(0.2, 3, size=48) + rng.normal(size=(n, 48))
    if ties:
        X[:, ::3] = np.round(X[:, ::3])
    X[:, FEATURE_NAMES.index("normalized_step_count")] = rng.integers(1, 12, size=n) / 10.0
    return X


def check_sentence(text: str, signal_row, reference: str) -> None:
    """One reason against its signal row: direction word, value, percentile and the model's reading agree."""
    m = SENTENCE.match(text)
    assert m, text
    pct = signal_row["success_percentile"]
    assert m["value"] == signal_row["shown_value"]
    stand = m["stand"] or "unknown"
    assert position_of(pct) == {"higher than in": "higher", "lower than in": "lower", "close to": "typical",
                                "unknown": "unknown"}[stand]
    if m["one"] is not None:
        assert m["one"] == one_of(reference)
    cmp = m["cmp"]
    assert cmp.endswith(reference)
    if stand == "higher than in":                 # never "higher" with a percentile under 50
        assert cmp.startswith("higher than") and pct > TYPICAL_BAND[1]
    if stand == "lower than in":                  # never "lower" with a percentile over 50
        assert cmp.startswith("lower than") and pct < TYPICAL_BAND[0]
    if stand == "close to":                       # "close to the typical run" only within the band
        assert TYPICAL_BAND[0] <= pct <= TYPICAL_BAND[1]
        shown = PERCENT.match(cmp)
        assert shown is not None or cmp.startswith("at the median"), cmp
        if shown is not None:
            assert int(shown["pct"]) <= TYPICAL_BAND[1]
    up = signal_row["contribution"] > 0           # the printed logit rounds: "+0.00" may be either sign
    assert float(m["c"]) == pytest.approx(signal_row["contribution"], abs=0.005)
    why = m["why"]
    assert (" raises the confidence" in why or " raise the confidence" in why) == up
    assert (" lowers the confidence" in why or " lower the confidence" in why) != up
    if ", so this" in why:
        reads_success = "reads higher values as a sign of success" in why
        assert (reads_success == (" is above the average" in why)) == up, text
    check_side(why, m["value"])


SIDE = re.compile(r"and (?P<value>.+?) is (?P<side>above|below|at) the average of the runs it was fitted on "
                  r"\((?P<centre>.+?)\)")


def check_side(why: str, value: str) -> None:
    """docs/ui-review.md 34: "above" / "below" never sits next to a value and a centre that print alike, and "at"
    only next to two that do."""
    side = SIDE.search(why)
    if side is None:                              # a model without weights: no reading
        return
    assert side["value"] == value
    assert (side["side"] == "at") == (side["value"] == side["centre"]), why


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(6, 80), ties=st.booleans(), labeled=st.floats(0.0, 1.0),
       grouped=st.booleans())
def test_a_sentence_never_contradicts_itself(seed, n, ties, labeled, grouped):
    rng = np.random.default_rng(seed)
    X = _matrix(rng, n, ties)
    model = _linear_model(X, rng)
    y = np.where(rng.uniform(size=n) < labeled, (rng.uniform(size=n) < 0.5).astype(float), np.nan)
    groups = rng.choice(["a", "b"], size=n) if grouped else None
    i = int(rng.integers(0, n))
    e = explain.explain_trajectory(model, X, i, labels=y, groups=groups, n_reasons=48, min_abs_contribution=0.0)
    assert len(e.reasons) == len(e.signals)
    ref_rows = (y == 1) & ((groups == groups[i]) if grouped and np.sum((y == 1) & (groups == groups[i])) >= 5 else True)
    if not (y == 1).any():
        ref_rows = np.ones(n, dtype=bool)
        assert e.reference == "runs"
    assert e.n_reference == int(ref_rows.sum())
    for text, (_, row) in zip(e.reasons, e.signals.iterrows()):
        j = FEATURE_NAMES.index(row["signal"])
        assert row["success_percentile"] == pytest.approx(explain.percentile_of(X[i, j], X[ref_rows, j]),
                                                          nan_ok=True)
        check_sentence(text, row, e.reference)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(6, 60))
def test_the_vectorized_export_says_the_same_words(seed, n):
    rng = np.random.default_rng(seed)
    X = _matrix(rng, n, ties=True)
    model = _linear_model(X, rng)
    y = (rng.uniform(size=n) < 0.5).astype(float)
    groups = rng.choice(["a", "b"], size=n)
    texts = explain.run_reasons(X, y, groups, [model], np.zeros(n, dtype=int), n_reasons=4)
    for i in range(0, n, max(1, n // 5)):
        one = explain.explain_trajectory(model, X, i, labels=y, groups=groups, n_reasons=4)
        assert texts[i] == one.reasons


@pytest.mark.parametrize("pct,where", [(0.0, "lower"), (24.9, "lower"), (25.0, "typical"), (50.0, "typical"),
                                       (75.0, "typical"), (75.1, "higher"), (100.0, "higher"),
                                       (float("nan"), "unknown")])
def test_the_typical_band(pct, where):
    assert position_of(pct) == where


def test_the_reported_contradictions_cannot_recur():
    """docs/ui-review.md 14: "-0.715, close to the typical run (higher than 99% ...)" and "-1.57, higher than in the
    typical run (lower than 97% ...)": the direction word now comes from the same percentile."""
    a = explain.reasons.reason_text("X", "-0.715", 99.5, 220, "successful runs of units", -0.3)
    assert "higher than in the typical successful run of units (higher than 99% of 220" in a
    b = explain.reasons.reason_text("X", "-1.57", 2.5, 146, "successful runs", 0.4)
    assert "lower than in the typical successful run (lower than 97% of 146 successful runs)" in b


def test_values_are_written_in_the_unit_the_words_name():
    """docs/ui-review.md 15: F43 is the step count / 10 but reads "number of steps"; the token counts are tokens.
    Checked on real runs against the trace set's own counts, and every other feature is written as stored."""
    ts, _ = load(REPO / "sample_runs" / "gemma3" / "units_Gemma3-270M-greedy.jsonl")
    fm = extract(ts)
    v = fm.values
    steps = ts.steps_per_trajectory
    for i in range(len(ts)):
        k = int(steps[i])
        assert format_measure("normalized_step_count", v[i, 43]) == f"{k} step{'s' if k != 1 else ''}"
        first = int(ts.tokens_per_step[int(ts.traj_offsets[i])])
        assert format_measure("first_token_count", v[i, 44]) == f"{first} token{'s' if first != 1 else ''}"
    assert MEASURES["normalized_step_count"] == "number of steps"
    assert set(UNITS) == {"normalized_step_count", "first_token_count", "last_token_count", "avg_tokens_per_step",
                          "std_tokens_per_step"}
    for name in FEATURE_NAMES:
        if name not in UNITS:
            assert format_measure(name, 0.52149) == "0.521"
            assert "number" not in MEASURES[name] and "tokens)" not in MEASURES[name]
    assert format_measure("normalized_step_count", float("nan")) == "n/a"


def test_a_reason_about_steps_says_steps():
    """On the shipped runs a reason led by F43 says "is N steps" with N the run's step count."""
    ts, _ = load(REPO / "sample_runs" / "arithmetic")
    fm = extract(ts)
    X = fm.values.copy()
    rng = np.random.default_rng(0)
    model = _linear_model(X, rng)
    model.coef_[:] = 0.0
    model.coef_[0, 43] = 1.0                      # the number of steps is the only reason
    for i in (0, 5, 40):
        e = explain.explain_trajectory(model, fm, i, labels=ts.labels, groups=ts.meta["dataset"], n_reasons=1)
        k = int(ts.steps_per_trajectory[i])
        assert re.match(rf"^Number of steps( \(one signal of \d+ correlated features\))? is {k} steps?, ",
                        e.reasons[0]), e.reasons[0]
        centre = format_apart("normalized_step_count", X[i, 43], model.mean_[43])[1]
        assert f"({centre})" in e.reasons[0]


NAMES = st.sampled_from(["last_top1_avg", "normalized_step_count", "avg_tokens_per_step", "first_token_count"])
CLOSE = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)


@settings(max_examples=300, deadline=None)
@given(name=NAMES, centre=CLOSE, rel=st.sampled_from([0.0, 1e-12, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 3e-3, 0.02, 0.5]),
       sign=st.sampled_from([-1.0, 1.0]), weight=st.floats(-3, 3).filter(lambda w: w != 0), members=st.integers(1, 4),
       contribution=st.floats(-2, 2).filter(lambda c: abs(c) > 1e-9))
def test_above_or_below_only_where_the_numbers_differ(name, centre, rel, sign, weight, members, contribution):
    """docs/ui-review.md 34: "1.19 is below the average of the runs it was fitted on (1.19)". For any value and
    centre: if they differ, the printed texts differ (up to MAX_APART_DIGITS significant digits) or the words say
    "at"; "above" / "below" never sits next to two texts alike; the side word has the offset's sign."""
    value = centre + sign * rel * max(abs(centre), 1e-3)
    shown, mid = format_apart(name, value, centre)
    if value != centre and abs(value - centre) > 10.0 ** (1 - MAX_APART_DIGITS) * max(abs(value), abs(centre)):
        assert shown != mid, (value, centre)
    if value == centre:
        assert shown == mid
    text = reason_text("X", shown, 50.0, 20, "runs", contribution,
                       ModelReading(weight=weight, offset=value - centre, centre=mid, n_members=members))
    side = SIDE.search(text)
    assert side is not None and side["value"] == shown and side["centre"] == mid
    if shown == mid:
        assert side["side"] == "at", text
    else:
        assert side["side"] == ("above" if value > centre else "below"), text
    assert "0 other" not in text


def test_the_reported_reason_now_reads_apart():
    """The finding's numbers: a value of 1.187 against a centre of 1.193 printed both as "1.19"."""
    shown, mid = format_apart("last_top1_avg", 1.1874, 1.1931)
    text = reason_text("X", shown, 50.0, 20, "runs", -0.3, ModelReading(weight=0.5, offset=1.1874 - 1.1931, centre=mid))
    assert "1.187 is below the average of the runs it was fitted on (1.193), so this lowers" in text
