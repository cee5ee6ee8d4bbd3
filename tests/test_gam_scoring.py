"""Scoring an HTC-GAM model file with numpy alone (htc_core.calibration.gam_scoring, what ``htc score`` loads)
gives the numbers of the scipy path it replaced to the last bit, and the estimator's errors word for word.

The reference is scipy itself: ``BSpline.design_matrix(clip(x), knots, 3, extrapolate=True).toarray()``, the
basis ``calibration/gam.py`` evaluated before (scipy stays installed: scikit-learn needs it). Every check is
``np.array_equal`` (bit for bit), not a tolerance."""

from __future__ import annotations

import glob
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.interpolate import BSpline

import htc_core as htc
from htc_core.calibration.gam import HTCGAM, make_knots
from htc_core.calibration.gam_scoring import DEGREE, GAMScorer, ShapeFunction, basis, bspline_basis
from htc_core.calibration.linear_scoring import LinearScorer
from htc_core.calibration.models import load_model, load_scorer
from htc_core.scoring import score_columns

FILES = sorted(f for f in glob.glob("sample_runs/*/*.jsonl")) + sorted(glob.glob("../shared/data/*/*.jsonl"))


def is_gam_file(path: str) -> bool:
    with open(path, encoding="utf-8") as fh:
        obj = json.load(fh)
    return isinstance(obj, dict) and obj.get("format") == "htc-gam"


#: HTC-GAM model files the project ships (none today: the shipped models are GACs); each is held to its estimator
SHIPPED_GAMS = [p for p in sorted(glob.glob("htc_core/**/*.json", recursive=True)) if is_gam_file(p)]
FINITE = st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False)


def scipy_basis(x, knots) -> np.ndarray:
    """The basis as calibration/gam.py computed it with scipy (clipped to the base interval)."""
    return BSpline.design_matrix(np.clip(x, knots[DEGREE], knots[-DEGREE - 1]), knots, DEGREE,
                                 extrapolate=True).toarray()


def scipy_logit(model, X: np.ndarray) -> np.ndarray:
    """A GAM's logit on the model's columns X, by the code path of calibration/gam.py with scipy's basis."""
    out = np.zeros_like(X)
    index = {str(n): j for j, n in enumerate(model.feature_names_in_)}
    for s in model.shapes_:
        j = index[s.name]
        out[:, j] = scipy_basis(X[:, j], s.knots) @ s.coef - s.offset
    return out.sum(axis=1) + model.intercept_


@st.composite
def knot_vectors(draw, min_degree=0, max_degree=5, repeats=True):
    k = draw(st.integers(min_degree, max_degree))
    m = draw(st.integers(k + 1, 14))
    scale = 10.0 ** draw(st.integers(-8, 8))
    shift = draw(st.floats(-1e4, 1e4)) * scale
    steps = draw(st.lists(st.floats(0.01, 10.0), min_size=m + k, max_size=m + k))
    if repeats:     # some interior knots repeated (scipy's zero-span terms)
        steps = [0.0 if draw(st.booleans()) and 0 < i < len(steps) - 1 and draw(st.booleans()) else s
                 for i, s in enumerate(steps)]
    t = shift + scale * np.concatenate([[0.0], np.cumsum(steps)])
    return k, t


@settings(max_examples=400, deadline=None)
@given(knot_vectors(), st.lists(st.floats(-3.0, 3.0), min_size=0, max_size=30), st.data())
def test_the_basis_is_scipys_design_matrix_to_the_bit(kt, rel, data):
    k, t = kt
    span = t[-1] - t[0]
    x = np.array([t[0] + (r + 0.5) * span for r in rel] + list(t) + data.draw(st.lists(FINITE, max_size=5)))
    ref = BSpline.design_matrix(x, t, k, extrapolate=True).toarray()
    got = bspline_basis(x, t, k)
    assert got.shape == ref.shape and np.array_equal(got, ref)


@settings(max_examples=300, deadline=None)
@given(knot_vectors(3, 3, repeats=False),
       st.lists(st.one_of(FINITE, st.sampled_from([np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308])), max_size=40))
def test_the_clipped_basis_is_the_scipy_path_including_infinity_and_far_outside(kt, xs):
    _, t = kt
    x = np.array(xs, dtype=np.float64)
    assert np.array_equal(basis(x, t), scipy_basis(x, t)) and basis(x, t).shape == (len(xs), len(t) - 4)


@pytest.mark.parametrize("x", [[np.nan], [0.5, np.nan], [np.nan, np.inf]])
def test_nan_raises_scipys_error(x):
    t = np.arange(-3.0, 6.0)
    with pytest.raises(ValueError) as ref:
        scipy_basis(np.array(x), t)
    with pytest.raises(ValueError) as got:
        basis(np.array(x), t)
    assert str(got.value) == str(ref.value)
    with pytest.raises(ValueError, match="infs or nans"):
        bspline_basis([np.inf], t)             # unclipped: as scipy's design_matrix


def test_the_basis_of_the_knots_a_fit_makes_is_scipys():
    rng = np.random.default_rng(3)
    for n_unique in (2, 3, 4, 7, 50):
        x = rng.choice(rng.normal(size=n_unique) * 10.0 ** rng.integers(-6, 6), size=200)
        t = make_knots(x, 6)
        grid = np.concatenate([x, np.linspace(x.min() - 1, x.max() + 1, 301)])
        assert np.array_equal(basis(grid, t), scipy_basis(grid, t))


# ------------------------------------------------------------------ fitted models
def fit(path: str, **kw) -> HTCGAM:
    ts, _ = htc.load(path)
    ts = ts.labeled()
    opts = dict(alphas=(16.0,), linear_alphas=(1.0,), select="gam")
    opts.update(kw)
    profile = opts.pop("profile", "paper")
    return HTCGAM(**opts).fit(htc.extract(ts, profile=profile), ts.labels)


@pytest.fixture(scope="module")
def models():
    return {"units-paper": fit("sample_runs/units/units_SmolLM2-135M-greedy.jsonl"),
            "strings-chosen": fit("sample_runs/strings/strings_SmolLM2-135M-greedy.jsonl", profile="chosen"),
            "hotpotqa-paper": fit("../shared/data/uala-hotpotqa/hotpotqa_llama2-70b_run-c.jsonl", n_knots=9),
            "units-linear": fit("sample_runs/units/units_SmolLM2-135M-greedy.jsonl", select="linear")}


@pytest.fixture(scope="module")
def runs():
    return [htc.load(f)[0] for f in FILES]


def test_every_file_scores_the_same_to_the_bit(models, runs, tmp_path):
    shipped = {p: HTCGAM.load(p) for p in SHIPPED_GAMS}
    for name, gam in {**models, **shipped}.items():
        path = name if name in shipped else gam.save(tmp_path / f"{name}.json")
        scorer = load_scorer(path)
        assert isinstance(scorer, GAMScorer) and isinstance(load_model(path), HTCGAM)
        assert scorer.display_name == gam.display_name and scorer.kind_ == gam.kind_
        for ts in runs:
            fm = htc.extract(ts, profile=gam.profile_, top_k=gam.top_k_)
            p = scorer.predict_proba(fm)
            assert np.array_equal(p, gam.predict_proba(fm)) and np.array_equal(p, load_model(path).predict_proba(fm))
            assert np.array_equal(scorer.predict(fm), gam.predict(fm))
            if gam.kind_ == "gam":
                X = np.asarray(fm.values, dtype=np.float64)
                assert np.array_equal(scorer.decision_function(fm), scipy_logit(gam, X))
            one = fm[:1]
            assert np.array_equal(scorer.predict_proba(one), gam.predict_proba(one))


def test_a_linear_kind_file_scores_with_its_embedded_linear_scorer(models):
    scorer = GAMScorer.from_dict(models["units-linear"].to_dict())
    assert isinstance(scorer.linear_, LinearScorer) and scorer.shapes_ == []


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_rows_far_outside_the_knots_score_as_the_scipy_path(models, data):
    gam = models[data.draw(st.sampled_from(["units-paper", "strings-chosen", "hotpotqa-paper"]))]
    n = data.draw(st.integers(1, 6))
    vals = st.one_of(FINITE, st.sampled_from([np.inf, -np.inf, 1e300, -1e300, 0.0]))
    X = np.array(data.draw(st.lists(st.lists(vals, min_size=48, max_size=48), min_size=n, max_size=n)))
    scorer = GAMScorer.from_dict(json.loads(json.dumps(gam.to_dict())))     # through the file's JSON text
    finite = np.isfinite(X).all()
    if finite:
        assert np.array_equal(scorer.decision_function(X), gam.decision_function(X))
        assert np.array_equal(scorer.decision_function(X), scipy_logit(gam, X))
        assert np.array_equal(scorer.predict_proba(X), gam.predict_proba(X))
    else:     # non-finite features: the estimator's error, word for word
        with pytest.raises(ValueError) as a:
            gam.predict_proba(X)
        with pytest.raises(ValueError) as b:
            scorer.predict_proba(X)
        assert str(a.value) == str(b.value)
    for s in gam.shapes_[:3]:     # the shape functions alone, infinities clipped like any other value
        col = X[:, 0]
        assert np.array_equal(s.value(col), scipy_basis(col, s.knots) @ s.coef - s.offset)


BAD_X = {"nan": [[np.nan] * 48], "inf": [[0.0] * 47 + [np.inf]], "empty": np.zeros((0, 48)),
         "one-d": np.zeros(48), "scalar": 3.0, "3-d": np.zeros((1, 2, 48)), "no columns": np.zeros((2, 0)),
         "few columns": np.zeros((2, 5)), "text": [["a"] * 48]}


@pytest.mark.parametrize("case", list(BAD_X))
def test_bad_rows_get_the_estimators_message(models, case):
    for gam in (models["units-paper"], models["units-linear"]):
        scorer = GAMScorer.from_dict(gam.to_dict())
        with pytest.raises(ValueError) as a:
            gam.predict_proba(BAD_X[case])
        with pytest.raises(ValueError) as b:
            scorer.predict_proba(BAD_X[case])
        assert str(a.value) == str(b.value), (gam.kind_, case)


def test_a_feature_matrix_of_another_profile_is_refused_and_columns_are_found_by_name(models):
    ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    gam = models["units-paper"]
    scorer = GAMScorer.from_dict(gam.to_dict())
    other = htc.extract(ts, profile="chosen")
    with pytest.raises(ValueError) as a:
        gam.predict_proba(other)
    with pytest.raises(ValueError) as b:
        scorer.predict_proba(other)
    assert str(a.value) == str(b.value)
    frame = htc.extract(ts).to_frame()
    frame = frame[list(frame.columns[::-1])]            # columns reversed: found by name
    assert np.array_equal(scorer.predict_proba(frame), gam.predict_proba(frame))


def test_the_shape_function_is_the_scipy_path_and_raises_its_nan_error(models):
    s = models["units-paper"].shape("top1_gradient_mean")
    assert isinstance(s, ShapeFunction)
    lo, hi = s.range
    x = np.array([-np.inf, lo - 1e9, lo, (lo + hi) / 2, hi, hi + 1e9, np.inf])
    assert np.array_equal(s.value(x), scipy_basis(x, s.knots) @ s.coef - s.offset)
    assert s.value([]).shape == (0,)
    with pytest.raises(ValueError, match="Array must not contain infs or nans."):
        s.value([np.nan])


BROKEN = [lambda d: d.update(format_version=9), lambda d: d.pop("intercept"), lambda d: d.update(kind="tree"),
          lambda d: d["shapes"][0].update(knots=d["shapes"][0]["knots"][::-1]),
          lambda d: d["shapes"][0].update(coef=d["shapes"][0]["coef"][:-1]),
          lambda d: d["shapes"][1].update(name=d["shapes"][0]["name"]),
          lambda d: d["shapes"][0].update(offset=float("nan")), lambda d: d.update(shapes=None),
          lambda d: d.update(kind="linear", linear={"format": "htc"}), lambda d: d.update(select="best")]


@pytest.mark.parametrize("i", range(len(BROKEN)))
def test_a_broken_file_is_refused_with_the_estimators_message(models, tmp_path, i):
    d = models["units-paper"].to_dict()
    BROKEN[i](d)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError) as a:
        load_model(path)
    with pytest.raises(ValueError) as b:
        load_scorer(path)
    assert str(a.value) == str(b.value) and "is not a valid HTC-GAM model file" in str(b.value)


def test_htc_scores_table_is_the_same_through_the_scorer_and_the_estimator(models, runs, tmp_path):
    path = models["strings-chosen"].save(tmp_path / "gam.json")
    for ts in runs[::4]:
        a, b = score_columns(load_scorer(path), ts), score_columns(load_model(path), ts)
        assert list(a) == list(b)
        for c in a:
            assert np.array_equal(a[c], b[c], equal_nan=a[c].dtype.kind == "f"), c


def test_a_monitor_reads_a_gam_file_as_the_scorer_and_steps_as_the_estimator(models, tmp_path):
    path = models["units-paper"].save(tmp_path / "gam.json")
    ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    a, b = htc.Monitor(str(path)), htc.Monitor(load_model(path))
    assert isinstance(a.model, GAMScorer)
    for k in range(min(6, int(ts.traj_offsets[1]))):      # the first run's first steps
        lo, hi = ts.step_offsets[k], ts.step_offsets[k + 1]
        lp, top = ts.logprob[lo:hi], ts.top_logprobs[lo:hi]
        assert a.add_step(lp, top) == b.add_step(lp, top)
