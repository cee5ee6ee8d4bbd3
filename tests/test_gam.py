"""HTC-GAM (issue 14): shape functions on real sample_runs features, the inner-CV choice against HTC-Reduced,
the JSON model file (every number checked, no pickle), htc fit --variant gam / score / evaluate --gam."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.evaluation import evaluate
from htc_core.calibration.gam import HTCGAM
from htc_core.calibration.gam import dedup_columns
from htc_core.calibration.general import load_any_model
from htc_core.calibration.metrics import auroc
from htc_core.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_runs"
FAST = (1.0, 10.0, 100.0)


@pytest.fixture(scope="module")
def real():
    """Features and labels of 400 of the project's real SmolLM2 runs (every 5th run)."""
    from htc_core.features import extract
    from htc_core.formats import load

    ts = load(str(SAMPLE))[0].labeled()
    ts = ts.filter(ts.meta["model"].astype(str).str.startswith("SmolLM2").to_numpy())
    ts = ts.take(np.arange(0, len(ts), 5))
    return ts, extract(ts)


@pytest.fixture(scope="module")
def gam(real):
    ts, fm = real
    return HTCGAM(select="gam", linear_alphas=FAST).fit(fm, ts.labels, meta=ts.meta)


def test_contributions_add_up_and_shapes_are_centred(real, gam):
    ts, fm = real
    c = gam.contributions(fm)
    assert c.shape == fm.values.shape
    np.testing.assert_allclose(c.sum(1) + gam.intercept_, gam.decision_function(fm), atol=1e-12)
    np.testing.assert_allclose(c.mean(0), 0.0, atol=1e-9)     # each shape function: mean 0 on its training rows
    p = gam.predict_proba(fm)[:, 1]
    assert np.all((p > 0) & (p < 1)) and auroc(ts.labels, p) > 0.8
    # features without a shape function (constant or duplicated columns) contribute nothing
    names = [str(n) for n in fm.names]
    no_shape = [j for j, n in enumerate(names) if n not in {s.name for s in gam.shapes_}]
    assert no_shape and np.all(c[:, no_shape] == 0)


def test_dedup_drops_constants_and_copies():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=200), rng.normal(size=200)
    X = np.column_stack([a, np.ones(200), 3 * a + 1, b, b + 1e-9 * rng.normal(size=200), -b])
    assert dedup_columns(X).tolist() == [True, False, False, True, False, False]


def test_shape_is_flat_beyond_the_training_range(gam):
    s = gam.shapes_[0]
    lo, hi = s.range
    np.testing.assert_allclose(s.value([lo - 1e3, hi + 1e3]), s.value([lo, hi]))
    grid, val = s.curve(50)
    assert grid[0] == lo and grid[-1] == hi and np.isfinite(val).all()
    assert gam.shape(s.name) is s
    with pytest.raises(ValueError, match="name must be a feature with a shape function"):
        gam.shape("nope")


def test_the_choice_follows_the_inner_cv():
    """A nonlinear signal (success when |x0| is small) makes the GAM win; a linear one may not; either way the
    kind is exactly the one with the better inner-CV criterion, on the same folds as HTC-Reduced's."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y_nl = (rng.random(300) < 1 / (1 + np.exp(-(2.5 - 2.5 * X[:, 0] ** 2)))).astype(float)
    m = HTCGAM(linear_alphas=FAST).fit(X, y_nl)
    assert m.kind_ == "gam" and m.cv_results_["gam_criterion"] > m.cv_results_["linear_criterion"]
    y_lin = (rng.random(300) < 1 / (1 + np.exp(-1.5 * X[:, 1]))).astype(float)
    m2 = HTCGAM(linear_alphas=FAST).fit(X, y_lin)
    cv = m2.cv_results_
    assert m2.kind_ == ("gam" if cv["gam_criterion"] > cv["linear_criterion"] else "linear")
    lin = HTCGAM(linear_alphas=FAST, select="linear").fit(X, y_lin)
    ref = HTCCalibrator(alphas=FAST).fit(X, y_lin)
    np.testing.assert_array_equal(lin.predict_proba(X), ref.predict_proba(X))
    assert lin.kind_ == "linear" and lin.display_name.startswith("HTC-GAM (linear")


@pytest.mark.parametrize("kwargs,match", [
    ({"alphas": []}, "alphas must be"), ({"n_knots": 1}, "n_knots must be"), ({"select": "x"}, "select must be"),
    ({"ridge": 0}, "ridge must be"), ({"dedup_threshold": 2}, "dedup_threshold must be"),
])
def test_bad_parameters_name_the_argument(kwargs, match):
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 2
    with pytest.raises(ValueError, match=match):
        HTCGAM(**kwargs).fit(X, y)


def test_model_file_round_trip_is_json(real, gam, tmp_path):
    ts, fm = real
    path = gam.save(tmp_path / "gam.json")
    obj = json.loads(path.read_text())
    assert obj["format"] == "htc-gam" and obj["kind"] == "gam" and obj["profile"] == fm.profile
    back = load_any_model(path)
    assert isinstance(back, HTCGAM)
    np.testing.assert_array_equal(back.predict_proba(fm), gam.predict_proba(fm))
    np.testing.assert_array_equal(back.contributions(fm), gam.contributions(fm))
    lin = HTCGAM(select="linear", linear_alphas=FAST).fit(fm, ts.labels)
    back = HTCGAM.load(lin.save(tmp_path / "lin.json"))
    np.testing.assert_array_equal(back.predict_proba(fm), lin.predict_proba(fm))


def _tamper(obj, edit):
    obj = json.loads(json.dumps(obj))
    edit(obj)
    return obj


@pytest.mark.parametrize("edit,match", [
    (lambda o: o["shapes"][0]["knots"].reverse(), r"shapes\[0\].knots must increase strictly"),
    (lambda o: o["shapes"][0]["coef"].pop(), r"shapes\[0\].coef must have"),
    (lambda o: o["shapes"][0].update(coef=["1"] * len(o["shapes"][0]["coef"])), "must be a list of numbers"),
    (lambda o: o["shapes"][0].update(offset=1e300), r"shapes\[0\].offset must be a finite number"),
    (lambda o: o["shapes"][0].update(name="Bogus"), "must be one of feature_names"),
    (lambda o: o["shapes"].append(o["shapes"][0]), "has two shape functions"),
    (lambda o: o.update(kind="tree"), "kind must be 'gam' or 'linear'"),
    (lambda o: o.update(intercept=float("inf")), "intercept"),
    (lambda o: o.update(format_version=9), "unsupported format_version"),
    (lambda o: o.pop("alpha"), "missing field 'alpha'"),
    (lambda o: o.update(n_knots=True), "n_knots must be an integer"),
])
def test_model_file_checks_every_number(gam, edit, match):
    with pytest.raises(ValueError, match="is not a valid HTC-GAM model file: .*" + match):
        HTCGAM.from_dict(_tamper(gam.to_dict(), edit), source="m.json")


def test_evaluate_runs_htc_gam_only_when_named(real):
    ts, _ = real
    small = ts.take(np.arange(0, len(ts), 2))
    res = evaluate(small, seeds=1, methods=["HTC-Reduced", "HTC-GAM"], alphas=FAST)
    assert res.methods == ["HTC-Reduced", "HTC-GAM"]
    assert res.summary["HTC-GAM"]["auroc"]["mean"] > 0.7
    assert "HTC-GAM" not in evaluate(small, seeds=1, methods=None, alphas=FAST).methods


def test_cli_fit_score_evaluate(tmp_path, capsys, real):
    ts, fm = real
    runs = SAMPLE / "facts"
    model = tmp_path / "gam.json"
    assert main(["fit", str(runs), "--variant", "gam", "--out", str(model)]) == 0
    out = capsys.readouterr().out
    assert "inner-CV criterion" in out and "HTC-Reduced" in out and f"wrote {model}" in out
    assert json.loads(model.read_text())["format"] == "htc-gam"
    csv = tmp_path / "scores.csv"
    assert main(["score", str(model), str(runs), "--out", str(csv)]) == 0
    assert "HTC-GAM" in capsys.readouterr().out
    df = pd.read_csv(csv)
    m = HTCGAM.load(model)
    from htc_core.features import extract
    from htc_core.formats import load

    runs_ts = load(str(runs))[0]
    np.testing.assert_allclose(df["confidence"], m.predict_proba(extract(runs_ts))[:, 1], rtol=1e-12)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_tamper(m.to_dict(), lambda o: o.update(kind="tree"))))
    assert main(["score", str(bad), str(runs), "--out", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert "htc score: error:" in err and "kind must be" in err and "Traceback" not in err


def test_cli_evaluate_gam_flag(tmp_path, capsys):
    from test_cli_calibration import write_runs

    f = write_runs(tmp_path / "runs.jsonl", n=60)
    assert main(["evaluate", str(f), "--json", "--seeds", "1", "--gam"]) == 0
    assert "HTC-GAM" in json.loads(capsys.readouterr().out)["methods"]


def test_method_reuses_htc_reduced_only_for_the_same_rows(real):
    """In one outer fold HTC-GAM reuses HTC-Reduced's fit on the same rows: the result equals a fresh fit, and a
    fit on other rows (another fold) is never reused."""
    from htc_core.calibration import methods as mm

    ts, fm = real
    X, y = fm.values[:200], ts.labels[:200]
    ctx = mm.FitContext(seed=42, feature_names=list(fm.names), alphas=FAST)
    mm._REDUCED_FITS.clear()
    fresh = mm.METHODS["HTC-GAM"].fit(X, y, ctx).predict(fm.values[200:])
    assert not mm._REDUCED_FITS                      # HTC-GAM alone caches nothing
    mm.METHODS["HTC-Reduced"].fit(X[:150], y[:150], ctx)   # another fold's rows
    mm.METHODS["HTC-Reduced"].fit(X, y, ctx)
    assert len(mm._REDUCED_FITS) == 2
    reused = mm.METHODS["HTC-GAM"].fit(X, y, ctx).predict(fm.values[200:])
    np.testing.assert_array_equal(reused, fresh)
    with pytest.raises(ValueError, match="linear must be HTC-Reduced fitted with this model's"):
        HTCGAM(linear_alphas=(1.0,)).fit(X, y, linear=next(iter(mm._REDUCED_FITS.values())))


def test_nothing_varies_falls_back_to_linear_or_says_why():
    X = np.ones((40, 3))
    y = np.arange(40) % 2
    m = HTCGAM(linear_alphas=FAST).fit(X, y)
    assert m.kind_ == "linear" and m.cv_results_["gam"] is None and m.cv_results_["gam_criterion"] is None
    with pytest.raises(ValueError, match="X has no column that varies"):
        HTCGAM(select="gam").fit(X, y)
