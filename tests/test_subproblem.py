"""The L1 subproblem's feature-sign start: an exact minimizer where it finishes, never a higher model than
no step, and no harm where a block of the Hessian is singular (the HTC features' exact dependencies)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.calibration.pathsolver import logistic_hessian, _violation, fit_path_newton
from htc_core.calibration.solvers import distinct_columns, standardize_params
from htc_core.calibration.subproblem import _feature_sign, l1_direction, l1_coordinate_step, _model
from htc_core.features import extract
from htc_core.formats import load

from conftest import REPO


def _subproblem_kkt(H, g, w, alpha, step):
    """Largest violation of the subproblem's optimality conditions at ``step``: the path's own L1 measure with
    the model's gradient ``g + H step`` at ``w + step``."""
    return float(_violation(g + H @ step, w + step, alpha, True))


@functools.lru_cache(maxsize=1)
def _real_subproblems():
    """(H, g, w) at the iterates of a real path: the sample runs' features, w = the path's solution at the
    alpha above, the Hessian and gradient there (what the solver meets)."""
    ts, _ = load(str(REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"))
    X, y = extract(ts).values, ts.labels.astype(float)
    mean, scale = standardize_params(X)
    Xs = (X - mean) / scale
    Xs = np.ascontiguousarray(Xs[:, distinct_columns(Xs)])
    Xa = np.ascontiguousarray(np.column_stack([Xs, np.ones(len(y))]))
    alphas = [50.0, 5.0, 1.0, 0.1, 0.01, 0.001]
    W, b, _ = fit_path_newton(Xs, y, alphas, "l1")
    out = []
    for k in range(1, len(alphas)):
        w = np.append(W[k - 1], b[k - 1])
        p = 1.0 / (1.0 + np.exp(-(Xa @ w)))
        out.append((alphas[k], logistic_hessian(Xa, p, np.empty_like(Xa)), Xa.T @ (p - y), w))
    return out


@pytest.mark.parametrize("k", range(5))
def test_feature_sign_reaches_the_minimizer_that_long_coordinate_descent_approaches(k):
    alpha, H, g, w = _real_subproblems()[k]
    fs = _feature_sign(H, g, w, alpha, 4 * len(w))
    cd = l1_coordinate_step(H, g, w, alpha, 1e-13, 20_000)
    assert _model(H, g, w, alpha, fs) <= _model(H, g, w, alpha, cd) + 1e-9 * abs(_model(H, g, w, alpha, cd))
    assert _subproblem_kkt(H, g, w, alpha, fs) < 1e-8 * np.abs(g).max()
    direction = l1_direction(H, g, w, alpha, 1e-9, 1000)   # the solver's direction: feature sign + sweeps
    assert _model(H, g, w, alpha, direction) <= _model(H, g, w, alpha, fs) + 1e-12 * abs(_model(H, g, w, alpha, fs))


def test_a_singular_block_stops_the_start_and_coordinate_descent_finishes():
    """A column that is the exact difference of two others (as top1_confidence_change = last - first): the
    start stops where the block is singular, never above the model at no step; the direction still solves
    the subproblem."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 6))
    X = np.column_stack([X, X[:, 0] - X[:, 1], np.ones(400)])
    y = (rng.random(400) < 1 / (1 + np.exp(-(X[:, 0] - X[:, 2])))).astype(float)
    w = np.zeros(X.shape[1])
    p = np.full(400, 0.5)
    H = logistic_hessian(np.ascontiguousarray(X), p, np.empty_like(X))
    g = X.T @ (p - y)
    for alpha in (0.001, 0.1, 5.0):
        fs = _feature_sign(H, g, w, alpha, 4 * len(w))
        assert np.all(np.isfinite(fs))
        assert _model(H, g, w, alpha, fs) <= 0.0
        direction = l1_direction(H, g, w, alpha, 1e-10, 5000)
        assert _subproblem_kkt(H, g, w, alpha, direction) < 1e-6 * np.abs(g).max()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 12), alpha=st.sampled_from([1e-3, 0.1, 1.0, 10.0]),
       start_zero=st.booleans())
def test_feature_sign_never_raises_the_model(seed, d, alpha, start_zero):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((max(2, d // 2 + 1), d))          # often rank-deficient, as a Hessian can be
    H = A.T @ A + np.diag(rng.random(d) * (rng.random() < 0.5))
    g = rng.standard_normal(d) * 3
    w = np.zeros(d) if start_zero else np.where(rng.random(d) < 0.5, 0.0, rng.standard_normal(d))
    fs = _feature_sign(H, g, w, alpha, 4 * d)
    assert np.all(np.isfinite(fs))
    assert _model(H, g, w, alpha, fs) <= _model(H, g, w, alpha, np.zeros(d)) + 1e-12
