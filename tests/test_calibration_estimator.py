"""HTCCalibrator as a scikit-learn estimator, and the token-confidence profile it records."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.features import extract
from htc_core.synthetic import synthetic_trace_set

FAST = (1.0, 5.0, 20.0)


def _data(seed=0, n=120, d=48):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-(X[:, 0] - 0.7 * X[:, 1])))).astype(float)
    return X, y


@pytest.fixture(scope="module")
def traces():
    return synthetic_trace_set(n_traj=60, n_steps=3, n_tokens=12, k=5, seed=1)


# ---------------------------------------------------------------- scikit-learn API
def test_cross_val_score_with_default_parameters():
    X, y = _data()
    scores = cross_val_score(HTCCalibrator(), X, y, cv=3)
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    assert scores.mean() > 0.6        # the labels follow the first two columns


def test_clone_copies_parameters_not_state():
    c = HTCCalibrator(variant="full", alphas=FAST, inner_folds=3, random_state=7, profile="deepconf", top_k=3)
    k = clone(c)
    assert k is not c and k.get_params() == c.get_params()
    X, y = _data(1)
    c.fit(X, y)
    fresh = clone(c)
    assert not hasattr(fresh, "coef_") and fresh.get_params() == c.get_params()


def test_check_is_fitted_and_not_fitted_error():
    X, y = _data(2)
    c = HTCCalibrator(alphas=FAST)
    with pytest.raises(NotFittedError):
        check_is_fitted(c)
    for call in (c.predict_proba, c.predict, c.decision_function, c.contributions):
        with pytest.raises(NotFittedError, match="not fitted"):
            call(X)
    with pytest.raises(NotFittedError):
        c.to_dict()
    with pytest.raises(ValueError, match="not fitted"):       # NotFittedError is a ValueError: old callers work
        c.predict_proba(X)
    assert not hasattr(c, "selected_features_")               # ... and an AttributeError, so hasattr is False
    check_is_fitted(c.fit(X, y))


def test_params_tags_and_score():
    c = HTCCalibrator()
    assert set(c.get_params()) == {"variant", "alphas", "inner_folds", "random_state", "max_iter", "tol", "profile",
                                   "top_k", "solver", "prior", "max_logit"}
    assert c.set_params(variant="full", alphas=FAST) is c and c.variant == "full"
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        c.set_params(nope=1)
    assert is_classifier(c) and get_tags(c).estimator_type == "classifier"
    X, y = _data(3)
    c.fit(X, y)
    np.testing.assert_array_equal(c.classes_, [0, 1])
    assert c.score(X, y) == np.mean(c.predict(X) == y)
    assert repr(c).startswith("HTCCalibrator(variant='full', alpha_=")


def test_init_only_stores_parameters():
    c = HTCCalibrator(alphas=[0.5, 2.0], profile=None, top_k=None)
    assert c.alphas == [0.5, 2.0] and c.profile is None and c.top_k is None
    assert not [k for k in vars(c) if k.endswith("_")]


# ---------------------------------------------------------------- profile and top-k
def test_feature_matrix_profile_is_kept_saved_and_enforced(traces, tmp_path):
    fm = extract(traces, profile="deepconf", top_k=3)
    c = HTCCalibrator(alphas=FAST).fit(fm, traces.labels)
    assert (c.profile_, c.top_k_) == ("deepconf", 3)
    path = c.save(tmp_path / "m.json")
    obj = json.loads(path.read_text())
    assert obj["profile"] == "deepconf" and obj["top_k"] == 3
    d = HTCCalibrator.load(path)
    assert (d.profile_, d.top_k_) == ("deepconf", 3) and (d.profile, d.top_k) == ("deepconf", 3)
    np.testing.assert_array_equal(d.predict_proba(fm), c.predict_proba(fm))
    paper = extract(traces)
    for model in (c, d):
        for call in (model.predict_proba, model.predict, model.decision_function, model.contributions):
            with pytest.raises(ValueError, match="profile 'paper' and top_k 5, but this model was fitted on "
                                                 "features of profile 'deepconf' and top_k 3"):
                call(paper)
    with pytest.raises(ValueError, match="top_k 5, but .* top_k 3"):
        d.predict_proba(extract(traces, profile="deepconf", top_k=5))


def test_arrays_and_dataframes_record_the_parameters(traces):
    X, y = extract(traces).values, traces.labels
    a = HTCCalibrator(alphas=FAST).fit(X, y)
    assert (a.profile_, a.top_k_) == ("paper", 5)
    deep = extract(traces, profile="deepconf", top_k=3)
    c = HTCCalibrator(alphas=FAST, profile="deepconf", top_k=3).fit(pd.DataFrame(deep.values, columns=deep.names), y)
    assert (c.profile_, c.top_k_) == ("deepconf", 3)
    c.predict_proba(X)                              # arrays carry no profile: taken on trust
    c.predict_proba(extract(traces, profile="deepconf", top_k=3))
    with pytest.raises(ValueError, match="profile 'paper'"):
        c.predict_proba(extract(traces))


def test_explicit_profile_that_contradicts_the_feature_matrix_is_refused(traces):
    fm = extract(traces, profile="deepconf", top_k=3)
    with pytest.raises(ValueError, match="profile='paper' was given, but X is a FeatureMatrix computed with "
                                         "profile 'deepconf' and top_k 3"):
        HTCCalibrator(alphas=FAST, profile="paper").fit(fm, traces.labels)
    with pytest.raises(ValueError, match="top_k=5 was given"):
        HTCCalibrator(alphas=FAST, top_k=5).fit(fm, traces.labels)
    same = HTCCalibrator(alphas=FAST, profile="deepconf", top_k=3).fit(fm, traces.labels)
    assert (same.profile_, same.top_k_) == ("deepconf", 3)
    with pytest.raises(ValueError, match="profile must be one of"):
        HTCCalibrator(alphas=FAST, profile="magic").fit(fm.values, traces.labels)
    with pytest.raises(ValueError, match="top_k must be"):
        HTCCalibrator(alphas=FAST, top_k=-1).fit(fm.values, traces.labels)


def test_old_model_files_without_profile_load_as_paper_5(tmp_path):
    X, y = _data(4)
    obj = HTCCalibrator(alphas=(5.0,)).fit(X, y).to_dict()
    del obj["profile"], obj["top_k"]
    m = HTCCalibrator.from_dict(json.loads(json.dumps(obj)))
    assert (m.profile_, m.top_k_) == ("paper", 5)
    assert m.to_dict()["profile"] == "paper"
