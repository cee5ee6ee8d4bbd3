import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from htc_core import __version__
from htc_core.calibration.calibrators import DEFAULT_ALPHAS, HTCCalibrator
from htc_core.features import FEATURE_NAMES

FAST = (1.0, 5.0, 20.0)
RUN_A = Path(__file__).resolve().parents[2] / "shared/data/uala-hotpotqa/hotpotqa_llama2-70b_run-a.jsonl"


def _data(seed=0, n=200, d=48):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 20, d) + rng.uniform(-5, 5, d)
    w = np.zeros(d)
    w[:5] = [1.0, -0.8, 0.6, 0.5, -0.4]
    z = ((X - X.mean(0)) / X.std(0)) @ w
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(float)
    return X, y


def test_defaults_follow_the_paper():
    c = HTCCalibrator()
    assert c.variant == "reduced" and c.inner_folds == 5 and c.random_state == 42 and c.max_iter == 1000
    assert c.tol == 1e-4 and c.solver == "path"  # see the HTCCalibrator docstring
    assert tuple(c.alphas) == (0.001, 0.01, 0.1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 50)
    assert DEFAULT_ALPHAS == tuple(c.alphas)


@pytest.mark.parametrize("variant,penalty", [("reduced", "l1"), ("full", "l2")])
def test_liblinear_solver_matches_sklearn_pipeline_at_chosen_alpha(variant, penalty):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    X, y = _data()
    c = HTCCalibrator(variant=variant, alphas=FAST, solver="liblinear", tol=1e-3, max_logit=None).fit(X, y)
    assert c.fit(X, y) is c
    Xs = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegression(C=1 / c.alpha_, l1_ratio=1.0 if penalty == "l1" else 0.0, solver="liblinear",
                                 tol=c.tol, max_iter=1000, random_state=42).fit(Xs, y)
    np.testing.assert_allclose(c.coef_, ref.coef_, atol=1e-10)
    np.testing.assert_allclose(c.predict_proba(X), ref.predict_proba(Xs), atol=1e-10)
    assert c.coef_.shape == (1, 48) and c.intercept_.shape == (1,)


@pytest.mark.parametrize("variant,penalty", [("reduced", "l1"), ("full", "l2")])
def test_path_solver_matches_converged_sklearn_pipeline_at_chosen_alpha(variant, penalty):
    """The default solver and a fully converged liblinear reach the same model (same objective)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    X, y = _data()
    c = HTCCalibrator(variant=variant, alphas=FAST, tol=1e-9, max_logit=None).fit(X, y)
    Xs = StandardScaler().fit_transform(X)
    ref = LogisticRegression(C=1 / c.alpha_, l1_ratio=1.0 if penalty == "l1" else 0.0, solver="liblinear",
                             tol=1e-12, max_iter=100_000, random_state=42).fit(Xs, y)
    np.testing.assert_allclose(c.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(c.intercept_, ref.intercept_, atol=1e-6)
    np.testing.assert_allclose(c.predict_proba(X), ref.predict_proba(Xs), atol=1e-7)
    if penalty == "l1":
        assert np.array_equal(c.coef_ != 0, ref.coef_ != 0)


def test_reduced_is_sparse_and_selected_features_are_named():
    X, y = _data(1)
    c = HTCCalibrator(variant="reduced", alphas=(20.0,)).fit(X, y)
    sel = c.selected_features_
    assert 0 < len(sel) < 48
    assert all(s in FEATURE_NAMES for s in sel)
    assert sel == [n for n, w in zip(FEATURE_NAMES, c.coef_[0]) if w != 0]
    full = HTCCalibrator(variant="full", alphas=(20.0,)).fit(X, y)
    assert len(full.selected_features_) == 48


def test_alpha_selection_maximizes_criterion():
    X, y = _data(2)
    c = HTCCalibrator(alphas=(0.1, 1.0, 10.0, 50.0)).fit(X, y)
    cv = c.cv_results_
    crit = np.array(cv["auroc"]) - np.array(cv["brier"]) - np.array(cv["ece"])
    np.testing.assert_allclose(crit, cv["criterion"])
    assert c.alpha_ == cv["alpha"][int(np.argmax(crit))]


def test_selection_sees_only_the_fit_data():
    """Labels of rows not passed to fit cannot influence alpha (trivially), and changing the
    row order of the fit data only re-shuffles folds: both runs are deterministic."""
    X, y = _data(3)
    a = HTCCalibrator(alphas=FAST).fit(X, y)
    b = HTCCalibrator(alphas=FAST).fit(X, y)
    assert a.alpha_ == b.alpha_ and np.array_equal(a.coef_, b.coef_)


def test_contributions_sum_to_decision_function():
    X, y = _data(4)
    c = HTCCalibrator(alphas=FAST).fit(X, y)
    contrib = c.contributions(X[:10])
    np.testing.assert_allclose(contrib.sum(1) + c.intercept_[0], c.linear_score(X[:10]), atol=1e-12)
    k = c.cap_factor(X[:10])           # the soft logit bound: scaled terms add up to the logit itself
    np.testing.assert_allclose((contrib.sum(1) + c.intercept_[0]) * k, c.decision_function(X[:10]), atol=1e-12)
    p = c.predict_proba(X[:10])
    np.testing.assert_allclose(p[:, 1], 1 / (1 + np.exp(-c.decision_function(X[:10]))), atol=1e-15)
    assert set(c.predict(X[:10])) <= {0, 1}


def test_json_round_trip_gives_identical_predictions(tmp_path):
    X, y = _data(5)
    import pandas as pd

    meta = pd.DataFrame({"dataset": ["A", "B"] * 100, "model": ["m"] * 200})
    c = HTCCalibrator(variant="reduced", alphas=FAST, profile="paper", top_k=5).fit(X, y, meta=meta)
    path = c.save(tmp_path / "m.json")
    obj = json.loads(path.read_text())
    assert obj["format"] == "htc-calibrator" and obj["htc_version"] == __version__
    stats = obj["training"].pop("feature_stats")
    assert obj["training"] == {"n": 200, "positive_rate": float(y.mean()), "datasets": ["A", "B"], "models": ["m"]}
    assert np.allclose(stats["mean"], X.mean(axis=0)) and np.allclose(stats["std"], X.std(axis=0))
    assert obj["profile"] == "paper" and obj["top_k"] == 5 and obj["alpha"] == c.alpha_
    assert b"pickle" not in path.read_bytes()
    d = HTCCalibrator.load(path)
    assert np.array_equal(d.predict_proba(X), c.predict_proba(X))
    assert np.array_equal(d.contributions(X), c.contributions(X))
    assert d.selected_features_ == c.selected_features_ and d.alpha_ == c.alpha_


def _good(tmp_path):
    X, y = _data(6)
    return json.loads(HTCCalibrator(alphas=(5.0,)).fit(X, y).save(tmp_path / "g.json").read_text())


@pytest.mark.parametrize("mutate,match", [
    (lambda o: {"weights": [1, 2]}, "expected a JSON object with \"format\": \"htc-calibrator\""),
    (lambda o: [1, 2, 3], "got 'list'"),
    (lambda o: {**o, "coef": o["coef"][:-1]}, "coef must have 48 entries"),
    (lambda o: {**o, "scaler": {"mean": o["scaler"]["mean"], "scale": [0.0] * 48}}, r"scaler.scale\[0\] = 0.0 is not a finite number in \[1e-12"),
    (lambda o: {**o, "feature_names": ["nope"] + o["feature_names"][1:]}, "unknown feature names \\['nope'\\]"),
    (lambda o: {**o, "format_version": 99}, "unsupported format_version 99"),
    (lambda o: {k: v for k, v in o.items() if k != "intercept"}, "missing field 'intercept'"),
    (lambda o: {**o, "profile": "magic"}, "unknown confidence profile 'magic'"),
    (lambda o: {**o, "variant": "huge"}, "variant must be one of"),
])
def test_load_rejects_bad_files(tmp_path, mutate, match):
    obj = mutate(_good(tmp_path))
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(obj))
    with pytest.raises(ValueError, match=match):
        HTCCalibrator.load(p)


def test_load_rejects_non_json_and_missing(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("not json at all")
    with pytest.raises(ValueError, match="not JSON"):
        HTCCalibrator.load(p)
    with pytest.raises(ValueError, match="does not exist"):
        HTCCalibrator.load(tmp_path / "missing.json")


def test_parameter_and_input_validation():
    X, y = _data(7)
    with pytest.raises(ValueError, match="variant must be one of .* got 'lasso'"):
        HTCCalibrator(variant="lasso").fit(X, y)
    with pytest.raises(ValueError, match="alphas must be"):
        HTCCalibrator(alphas=(0.0, 1.0)).fit(X, y)
    with pytest.raises(ValueError, match="y holds NaN at index 199: unlabeled runs"):
        HTCCalibrator(alphas=FAST).fit(X, np.r_[y[:-1], np.nan])
    with pytest.raises(ValueError, match="at least 2 successes and 2 failures"):
        HTCCalibrator(alphas=FAST).fit(X, np.r_[np.ones(199), 0.0])
    with pytest.raises(ValueError, match="not fitted"):
        HTCCalibrator().predict_proba(X)
    c = HTCCalibrator(alphas=FAST).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features"):
        c.predict_proba(X[:, :3])


def test_real_data_fit_and_feature_matrix_input():
    if not RUN_A.exists():
        pytest.skip(f"real data not found at {RUN_A}")
    from htc_core.features import extract
    from htc_core.formats import load

    ts, _ = load([str(RUN_A)])
    fm = extract(ts)
    c = HTCCalibrator(alphas=FAST).fit(fm, ts.labels, meta=ts.meta)
    assert c.training_summary_["datasets"] == ["HotpotQA"]
    p = c.predict_proba(fm)[:, 1]
    assert np.all((p > 0) & (p < 1))


def test_the_soft_logit_bound_keeps_the_order_and_every_logit_within_it():
    """Issue 27: near-separable runs gave logits of -236; with max_logit (default 10) no input goes beyond it,
    the ranking is the linear score's, small scores barely move, and None is the plain linear model."""
    X, y = _data(6)
    X = np.vstack([X, X[:5] * 40.0])                   # far outside the training range: huge linear scores
    c = HTCCalibrator(alphas=FAST).fit(X[:-5], y)
    s, z = c.linear_score(X), c.decision_function(X)
    assert np.abs(s).max() > 10 and np.abs(z).max() <= 10.0
    assert np.array_equal(np.argsort(s, kind="stable"), np.argsort(z, kind="stable"))
    small = np.abs(s) < 1
    np.testing.assert_allclose(z[small], s[small], atol=0.04)
    plain = HTCCalibrator(alphas=FAST, max_logit=None).fit(X[:-5], y)
    np.testing.assert_allclose(plain.decision_function(X), plain.linear_score(X))
    with pytest.raises(ValueError, match="max_logit"):
        HTCCalibrator(alphas=FAST, max_logit=-1).fit(X[:-5], y)
    loaded = HTCCalibrator.from_dict(c.to_dict())
    np.testing.assert_array_equal(loaded.decision_function(X), z)
    old = c.to_dict()
    old.pop("max_logit")                               # a model file written before the bound: plain linear
    assert HTCCalibrator.from_dict(old).max_logit is None
