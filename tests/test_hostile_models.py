"""Hostile model files (issue 16): every number finite and in a sane range, feature names checked by name
in the paper's order, lengths checked against the names, a size cap; refused with a clear message in the
library and the CLI; a model of a subset of the features scores by name; never a silent NaN score."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from htc_core.calibration import HTCCalibrator
from htc_core.calibration.model_file import MAX_FILE_BYTES
from htc_core.cli import main
from htc_core.features import FEATURE_NAMES, extract
from htc_core.formats import load
from hostile_records import ROOT

UNITS = ROOT / "sample_runs" / "units"


@pytest.fixture(scope="module")
def real():
    ts, _ = load(UNITS)
    ts = ts.labeled()
    fm = extract(ts)
    return ts, fm


@pytest.fixture(scope="module")
def model_text(real, tmp_path_factory):
    ts, fm = real
    path = tmp_path_factory.mktemp("m") / "model.json"
    HTCCalibrator(alphas=(0.05,)).fit(fm, ts.labels).save(path)
    return path.read_text()


def _write(tmp_path, text: str):
    p = tmp_path / "bad.json"
    p.write_text(text)
    return p


def _mutated(model_text, fn):
    obj = json.loads(model_text)
    fn(obj)
    return json.dumps(obj)


def _raw(model_text, key_path, raw):
    obj = json.loads(model_text)
    cur = obj
    for k in key_path[:-1]:
        cur = cur[k]
    cur[key_path[-1]] = "__RAW__"
    return json.dumps(obj).replace('"__RAW__"', raw)


BAD_TEXTS = {
    "coef_400_digits": (lambda t: _raw(t, ("coef", 0), "9" * 400), r"field coef\[0\]: .*does not fit a float64"),
    "alpha_5000_digits": (lambda t: _raw(t, ("alpha",), "9" * 5000), "field alpha: number with 5000 characters"),
    "intercept_400_digits": (lambda t: _raw(t, ("intercept",), "-" + "9" * 400), "field intercept"),
    "nested_100000_deep": (lambda t: _raw(t, ("training",), "[" * 100_000 + "]" * 100_000), "nested more than"),
    "coef_1e308": (lambda t: _raw(t, ("coef", 3), "1e308"), r"coef\[3\] = 1e\+308 is not a finite number in"),
    "scale_1e-320": (lambda t: _raw(t, ("scaler", "scale", 0), "1e-320"), r"scaler.scale\[0\] = 1e-320"),
    "intercept_nan": (lambda t: _raw(t, ("intercept",), "NaN"), "intercept = nan is not a finite number"),
    "coef_string": (lambda t: _raw(t, ("coef", 1), '"0.5"'), "coef must be a list of numbers"),
    "reversed_names": (lambda t: _mutated(t, lambda o: (o["feature_names"].reverse(), o["coef"].reverse())),
                       "must follow the paper's order"),
    "names_longer_than_coef": (lambda t: _mutated(t, lambda o: o.update(coef=o["coef"][:47])),
                               "coef must have 48 entries"),
    "surrogate_in_name": (lambda t: _raw(t, ("feature_names", 0), '"\\ud800"'), "lone surrogate"),
    "duplicate_names": (lambda t: _mutated(t, lambda o: o["feature_names"].__setitem__(1, o["feature_names"][0])),
                        "duplicates"),
    "top_k_huge": (lambda t: _raw(t, ("top_k",), "10" + "0" * 100), "top_k must be an integer in"),
    "tol_nan": (lambda t: _raw(t, ("tol",), "NaN"), "tol = nan is not a finite number"),
    "inner_folds_string": (lambda t: _raw(t, ("inner_folds",), '"5"'), "inner_folds must be an integer"),
    "max_iter_huge": (lambda t: _raw(t, ("max_iter",), "1" + "0" * 200), "max_iter must be an integer"),
}


@pytest.mark.parametrize("case", sorted(BAD_TEXTS))
def test_bad_model_file_is_refused_with_a_clear_message(case, model_text, tmp_path):
    make, match = BAD_TEXTS[case]
    p = _write(tmp_path, make(model_text))
    with pytest.raises(ValueError, match="is not a valid HTC model file: .*" + match):
        HTCCalibrator.load(p)


@pytest.mark.parametrize("case", ["coef_400_digits", "nested_100000_deep", "coef_1e308", "scale_1e-320",
                                  "reversed_names"])
def test_cli_score_refuses_a_bad_model_without_traceback(case, model_text, tmp_path, capsys):
    p = _write(tmp_path, BAD_TEXTS[case][0](model_text))
    out = tmp_path / "scores.csv"
    out.write_text("previous\n")
    assert main(["score", str(p), str(UNITS), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "htc score: error:" in err and "is not a valid HTC model file" in err and "Traceback" not in err
    assert out.read_text() == "previous\n"


def test_oversized_model_file_is_refused_before_reading(tmp_path):
    p = tmp_path / "big.json"
    with open(p, "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ValueError, match="more than the 16,777,216 a model file may have"):
        HTCCalibrator.load(p)


@pytest.mark.parametrize("k", [3, 47])
def test_a_model_of_a_subset_of_the_features_scores_by_name(k, real, tmp_path, capsys):
    ts, fm = real
    rng = np.random.default_rng(k)
    names = [FEATURE_NAMES[i] for i in sorted(rng.choice(len(FEATURE_NAMES), size=k, replace=False))]
    X = pd.DataFrame(fm.values, columns=list(fm.names))[names]
    sub = HTCCalibrator(alphas=(0.05,)).fit(X, ts.labels)
    path = tmp_path / "sub.json"
    text = json.loads(json.dumps(sub.to_dict()))
    text.update(profile=fm.profile, top_k=fm.top_k)
    path.write_text(json.dumps(text))
    model = HTCCalibrator.load(path)
    expected = sub.predict_proba(X)[:, 1]
    assert np.allclose(model.predict_proba(fm)[:, 1], expected, rtol=0, atol=1e-12)   # by name, from all 48
    out = tmp_path / "s.csv"
    assert main(["score", str(path), str(UNITS), "--out", str(out)]) == 0
    scored = pd.read_csv(out).set_index("id")["confidence"]
    assert np.allclose(scored.loc[list(ts.ids)].to_numpy(), expected, atol=1e-12)


def test_scores_never_nan_silently(real, model_text, tmp_path):
    """Numbers at the edges of the sane ranges and features far out of range: +inf and -inf in one logit."""
    ts, fm = real
    model = HTCCalibrator.load(_write(tmp_path, model_text))
    model.coef_ = np.zeros_like(model.coef_)
    model.coef_[0, :2] = [1e6, -1e6]
    model.scale_ = model.scale_.copy()
    model.scale_[:2] = 1e-12
    X = fm.values.copy()
    X[0, :2] = 1e300
    with pytest.raises(ValueError, match="score is not a number for 1 of 500 rows"):
        model.predict_proba(X)
    assert np.isfinite(model.predict_proba(fm.values)).all()
