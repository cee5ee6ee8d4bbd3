"""Every calibrator (HTC, HTC-GAM, the GAC, an adapted HTC) behaves as a scikit-learn classifier.

- scikit-learn's own conformance suite (``parametrize_with_checks``) on each, the checks it cannot pass
  declared with their reasons by :func:`htc_core.calibration.inputs.expected_failed_checks` (strict: a
  declared check that starts passing fails here, so the list stays true);
- ``cross_val_score`` on the real sample runs exactly as the README writes it, with a ``FeatureMatrix``;
- a feature frame (``fm.to_frame()``, id as the index) goes back into ``fit`` and scores like the matrix.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from htc_core import extract, load
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.gam import HTCGAM
from htc_core.calibration.general import GeneralCalibrator, gac_features
from htc_core.calibration.inputs import expected_failed_checks
from htc_core.features import FeatureMatrix

SAMPLE = ["sample_runs/units/", "sample_runs/facts/"]


def _prior():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(int)
    return HTCCalibrator(alphas=(1.0,)).fit(X, y)


ESTIMATORS = [HTCCalibrator(alphas=(0.1, 1.0)), HTCGAM(alphas=(2.0,), linear_alphas=(1.0,)),
              GeneralCalibrator(alphas=(0.1, 1.0)), HTCCalibrator(alphas=(1.0,), prior=_prior())]


@pytest.mark.heavy  # ~220 conformance checks, about a minute of CPU: the second test command
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks, xfail_strict=True)
def test_scikit_learn_conformance(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def runs():
    ts, _ = load(SAMPLE)
    return ts.labeled()


def test_feature_matrix_is_array_like(runs):
    fm = extract(runs)
    assert np.asarray(fm) is fm.values and fm.shape == (len(runs), 48) and len(fm) == len(runs)
    sub = fm[np.array([3, 1])]
    assert sub.profile == fm.profile and list(sub.ids) == [fm.ids[3], fm.ids[1]]
    assert np.array_equal(fm[[True] * 2 + [False] * (len(fm) - 2)].values, fm.values[:2])
    assert np.array_equal(fm[5:7].values, fm.values[5:7]) and fm[4].shape == (1, 48)
    assert np.array_equal(fm[np.array([0, 2]), ...].values, fm.values[[0, 2]])
    with pytest.raises(IndexError, match="indexed by rows only"):
        fm[:, 3]
    with pytest.raises(IndexError, match="integer positions or a boolean mask"):
        fm[np.array([0.5])]


def test_cross_val_score_as_the_readme_writes_it(runs):
    fm = extract(runs)
    scores = cross_val_score(HTCCalibrator(alphas=(0.1, 1.0, 10.0)), fm, runs.labels, cv=3,
                             scoring="neg_brier_score")
    assert scores.shape == (3,) and np.all((-0.26 < scores) & (scores <= 0))
    # the folds keep the FeatureMatrix's profile: a model of other settings refuses them
    with pytest.raises(ValueError, match="profile='chosen' was given"):
        cross_val_score(HTCCalibrator(profile="chosen"), fm, runs.labels, cv=3, error_score="raise")


@pytest.mark.parametrize("make", [lambda: HTCGAM(alphas=(2.0,), linear_alphas=(1.0,), select="gam"),
                                  lambda: HTCCalibrator(alphas=(1.0,), prior="gac")],
                         ids=["gam", "adapted"])
def test_cross_val_score_on_every_calibrator(runs, make):
    fm = extract(runs, profile="chosen")
    scores = cross_val_score(make(), fm, runs.labels, cv=3, scoring="roc_auc")
    assert scores.shape == (3,) and np.all(scores > 0.5)


def test_cross_val_score_and_grid_search_on_the_gac(runs):
    X = gac_features(runs)
    scores = cross_val_score(GeneralCalibrator(alphas=(0.1, 1.0)), X, runs.labels, cv=3, scoring="roc_auc")
    assert scores.shape == (3,) and np.all(scores > 0.5)
    grid = GridSearchCV(GeneralCalibrator(alphas=(1.0,)), {"variant": ["reduced", "full"]}, cv=3,
                        scoring="neg_brier_score").fit(X, runs.labels)
    assert grid.best_params_["variant"] in ("reduced", "full")
    assert clone(grid.best_estimator_).get_params()["variant"] == grid.best_params_["variant"]


def test_the_gac_frame_and_the_trace_set_give_the_same_confidences(runs):
    gac = GeneralCalibrator(alphas=(0.1, 1.0)).fit_traces(runs)
    assert gac.models_["with_alternatives"] is not None
    via_frame = gac.predict_proba(gac_features(runs))
    np.testing.assert_allclose(via_frame, gac.predict_proba_traces(runs), rtol=0, atol=1e-12)
    np.testing.assert_allclose(gac.predict_proba(runs), via_frame, rtol=0, atol=1e-12)   # the earlier call
    np.testing.assert_array_equal(gac.predict_proba(gac_features(runs).to_numpy()), via_frame)
    with pytest.raises(ValueError, match="column 0 must be the 0/1 has_alternatives flag"):
        gac.predict_proba(gac_features(runs).assign(has_alternatives=0.5))


# a frame carries no token-confidence profile: HTC and the GAM record the default ("paper"), an adapted model
# the profile of its prior's without-alternatives model ("chosen" for the shipped GAC)
@pytest.mark.parametrize("make, profile", [(lambda: HTCCalibrator(alphas=(0.1, 1.0)), "paper"),
                                           (lambda: HTCGAM(alphas=(2.0,), linear_alphas=(1.0,), select="gam"), "paper"),
                                           (lambda: HTCCalibrator(alphas=(1.0,), prior="gac"), "chosen")],
                         ids=["htc", "gam", "adapted"])
def test_a_feature_frame_round_trips_into_fit(runs, make, profile):
    fm = extract(runs, profile=profile)
    frame = fm.to_frame()
    assert frame.index.name == "id" and list(frame.index) == list(fm.ids) and list(frame.columns) == list(fm.names)
    a = make().fit(fm, runs.labels)
    b = make().fit(frame, runs.labels)
    np.testing.assert_array_equal(a.predict_proba(frame), b.predict_proba(fm))
    np.testing.assert_array_equal(a.predict_proba(fm), b.predict_proba(frame))
    # columns are found by name: a frame in another order scores the same
    shuffled = frame[frame.columns[::-1]]
    np.testing.assert_array_equal(b.predict_proba(shuffled), b.predict_proba(frame))


def test_labels_of_any_two_values_and_the_model_file(runs, tmp_path):
    fm = extract(runs)
    words = np.where(runs.labels == 1, "success", "failure")
    m = HTCCalibrator(alphas=(1.0,)).fit(fm, words)
    assert list(m.classes_) == ["failure", "success"]
    ref = HTCCalibrator(alphas=(1.0,)).fit(fm, runs.labels)
    np.testing.assert_array_equal(m.predict_proba(fm), ref.predict_proba(fm))
    assert set(m.predict(fm)) <= {"failure", "success"}
    with pytest.raises(ValueError, match="model files hold 0/1 labels"):
        m.save(tmp_path / "m.json")
    assert list(ref.classes_) == [0, 1] and ref.save(tmp_path / "ok.json").exists()
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        HTCCalibrator().fit(fm, np.arange(len(fm)) % 3)
    with pytest.raises(ValueError, match="Unknown label type"):
        HTCCalibrator().fit(fm, np.linspace(0, 1, len(fm)))


def test_bad_features_are_named_by_row_and_column(runs):
    X = extract(runs).to_frame()
    X.iloc[7, 3] = np.inf
    with pytest.raises(ValueError, match=r"X contains NaN or infinity: inf at row 7, column 3"):
        HTCCalibrator().fit(X, runs.labels)
    m = HTCCalibrator(alphas=(1.0,)).fit(extract(runs), runs.labels)
    with pytest.raises(ValueError, match="X has 3 features, but HTCCalibrator is expecting 48 features"):
        m.predict_proba(np.zeros((2, 3)))
    bad = pd.DataFrame(np.zeros((2, 2)), columns=["a", "b"])
    with pytest.raises(ValueError, match="X lacks 48 feature"):
        m.predict_proba(bad)


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_feature_matrix_rows_match_numpy_indexing(data):
    n = data.draw(st.integers(1, 12))
    fm = FeatureMatrix(np.arange(n * 3, dtype=float).reshape(n, 3), np.array([f"r{i}" for i in range(n)], dtype=object),
                       "paper", 5, ("a", "b", "c"))
    kind = data.draw(st.sampled_from(["ints", "mask", "slice", "int"]))
    if kind == "ints":
        key = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=2 * n)), dtype=np.intp)
    elif kind == "mask":
        key = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    elif kind == "slice":
        key = slice(data.draw(st.integers(-n, n)), data.draw(st.integers(-n, n)), data.draw(st.sampled_from([1, 2, -1])))
    else:
        key = data.draw(st.integers(-n, n - 1))
    sub = fm[key]
    want = fm.values[key] if kind != "int" else fm.values[[key]]
    ids = fm.ids[key] if kind != "int" else fm.ids[[key]]
    assert np.array_equal(sub.values, want) and list(sub.ids) == list(ids)
    assert (sub.profile, sub.top_k, sub.names) == (fm.profile, fm.top_k, fm.names)
    assert np.array_equal(np.asarray(sub), want) and len(sub) == len(want)
