"""Scoring a model file with numpy alone (htc_core.calibration.linear_scoring, what ``htc score`` loads) gives
the estimators' numbers to the last bit, and refuses a broken file with the estimators' message."""

from __future__ import annotations

import glob
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import htc_core as htc
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.general import GeneralCalibrator
from htc_core.calibration.linear_scoring import GACScorer, LinearScorer
from htc_core.calibration.models import load_model, load_scorer
from htc_core.calibration.shift import COLUMNS, ShiftReport, shift_check
from htc_core.scoring import score_columns, score_frame

FILES = sorted(glob.glob("sample_runs/*/*.jsonl")) + sorted(glob.glob("../shared/data/*/*.jsonl"))


@pytest.fixture(scope="module")
def runs():
    return [htc.load(f)[0] for f in FILES[::3]]


@pytest.mark.parametrize("name", ["gac", "gac-full", "gac-prefix"])
def test_a_shipped_gac_scores_the_same_to_the_bit(name, runs):
    scorer, gac = load_scorer(name), load_model(name)
    assert isinstance(scorer, GACScorer) and isinstance(gac, GeneralCalibrator)
    for ts in runs:
        for as_set in (False, True):
            p1, r1 = scorer.confidences_traces(ts, set_level=as_set)
            p2, r2 = gac.confidences_traces(ts, set_level=as_set)
            assert np.array_equal(p1, p2) and np.array_equal(r1, r2)
        assert np.array_equal(scorer.kinds(ts), gac.kinds(ts))
        alt = scorer.kinds(ts) == "with_alternatives"
        a, b = (m.assess(shift_check(m, ts), alt, p1, r1).message() for m in (scorer, gac))
        assert a == b
        assert scorer.rescore_as_set(ts, r1) is None or np.array_equal(scorer.rescore_as_set(ts, r1),
                                                                       gac.rescore_as_set(ts, r2))


def test_the_table_of_htc_score_is_score_frames_table(runs):
    for model in (load_scorer("gac"), load_model("gac")):
        cols = score_columns(model, runs[0], verbalized_column=True)
        df = score_frame(load_model("gac"), runs[0], verbalized_column=True)
        assert list(cols) == list(df.columns)
        for c in cols:
            assert np.array_equal(np.asarray(cols[c]), df[c].to_numpy(), equal_nan=cols[c].dtype.kind == "f"), c


@pytest.fixture(scope="module")
def fitted():
    ts, _ = htc.load("sample_runs/units/")
    fm = htc.extract(ts)
    out = {}
    for variant, max_logit in (("reduced", 10.0), ("full", None), ("full", 3.0)):
        out[(variant, max_logit)] = HTCCalibrator(variant=variant, alphas=(0.1, 1.0), max_logit=max_logit).fit(
            fm, ts.labels)
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([0.1, 1.0, 30.0, 1e4]),
       which=st.sampled_from([("reduced", 10.0), ("full", None), ("full", 3.0)]))
def test_a_model_file_scores_as_its_estimator_on_any_features(fitted, seed, scale, which):
    model = fitted[which]
    scorer = LinearScorer.from_dict(json.loads(json.dumps(model.to_dict())))   # through the file's JSON text
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(int(rng.integers(1, 40)), 48)) * scale
    assert np.array_equal(scorer.predict_proba(X), model.predict_proba(X))
    assert np.array_equal(scorer.decision_function(X), model.decision_function(X))


def test_a_model_of_a_feature_subset_finds_its_columns_by_name(runs):
    ts = runs[0]
    fm = htc.extract(ts)
    names = list(fm.names)[::3]
    model = HTCCalibrator(alphas=(1.0,)).fit(pd.DataFrame(np.asarray(fm.values)[:, ::3], columns=names),
                                             (np.arange(len(ts)) % 2).astype(float))
    scorer = LinearScorer.from_dict(model.to_dict())
    assert np.array_equal(scorer.predict_proba(fm), model.predict_proba(fm))


def test_bad_input_gets_the_estimators_message(fitted):
    model = fitted[("reduced", 10.0)]
    scorer = LinearScorer.from_dict(model.to_dict())
    X = np.zeros((2, 48))
    X[1, 7] = np.nan
    for m in (scorer, model):
        with pytest.raises(ValueError, match="row 1, column 7"):
            m.predict_proba(X)
    ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    for m in (scorer, model):
        with pytest.raises(ValueError, match="profile 'chosen'"):
            m.predict_proba(htc.extract(ts, profile="chosen"))
    with pytest.raises(ValueError, match="expecting 48 features"):
        scorer.predict_proba(np.zeros((2, 5)))


def broken_files(tmp_path):
    gac = json.loads(open("htc_core/calibration/models/gac.json").read())
    one = gac["models"]["without_alternatives"]
    yield {**gac, "format_version": 99}
    yield {**gac, "models": []}
    yield {**gac, "models": {"with_alternatives": one}}
    yield {**gac, "transfer": {**gac["transfer"], "coef": [1, 2]}}
    yield {**gac, "models": {**gac["models"], "without_alternatives": {**one, "coef": one["coef"][:3]}}}
    yield {**one, "scaler": {"mean": one["scaler"]["mean"], "scale": [0.0] * len(one["coef"])}}
    yield {**one, "variant": "huge"}
    yield {**one, "feature_names": ["nope"] * len(one["coef"])}
    yield [1, 2]


def test_a_broken_file_is_refused_with_the_same_message(tmp_path):
    for i, obj in enumerate(broken_files(tmp_path)):
        path = tmp_path / f"m{i}.json"
        path.write_text(json.dumps(obj))
        with pytest.raises(ValueError) as light:
            load_scorer(path)
        with pytest.raises(ValueError) as heavy:
            load_model(path)
        assert str(light.value) == str(heavy.value), obj if not isinstance(obj, dict) else list(obj)


def pandas_worst(rows, k):
    """The order ShiftReport.worst had with pandas: used rows, moved first, then |shift| descending, NaN last."""
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    used = frame[frame.used].copy()
    used["_abs"] = used["shift"].abs()
    return used.sort_values(["moved", "_abs"], ascending=False).head(k).drop(columns="_abs")


shift_values = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 2.5, -2.5, math.inf, -math.inf, math.nan]),
                         st.floats(-5, 5))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), shift_values, st.booleans()), min_size=0, max_size=25),
       st.integers(0, 30))
def test_the_shift_report_without_pandas_orders_and_sums_as_with_pandas(rows, k):
    rows = [("model", f"f{i}", used, 0.0, 1.0, 0.0, s, 2.0, used and moved)
            for i, (used, s, moved) in enumerate(rows)]
    rep = ShiftReport(model="m", n_runs=10, threshold=2.0, rows=rows)
    if not rows:     # pandas raised KeyError here (an empty object column selects columns); plain rows do not
        assert rep.worst(k).empty and rep.moved_features() == [] and not rep.shifted and not rep.known
        assert rep.to_dict()["features"] == [] and math.isnan(rep.max_shift)
        return
    ref = pandas_worst(rows, k)
    got = rep.worst(k)
    assert got.index.tolist() == ref.index.tolist()
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    used = frame[frame.used]
    expected_max = float(used["shift"].abs().max()) if len(used) else float("nan")
    assert (math.isnan(rep.max_shift) and math.isnan(expected_max)) or rep.max_shift == expected_max
    assert rep.shifted == (bool(frame["moved"].any()) if len(frame) else False)
    w = pandas_worst(rows, len(frame))
    assert rep.moved_features() == list(dict.fromkeys(w.feature[w.moved]))
