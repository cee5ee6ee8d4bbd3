"""The default solver (warm-started proximal-Newton path) against liblinear on the same objective."""

import warnings
from pathlib import Path

import numpy as np
import pytest

from htc_core.calibration.solvers import DEFAULT_ALPHAS, _fit_liblinear, distinct_columns, fit_path, standardize_params

ROOT = Path(__file__).resolve().parents[1]
RUN_A = ROOT.parent / "shared/data/uala-hotpotqa/hotpotqa_llama2-70b_run-a.jsonl"
SAMPLE = ROOT / "sample_runs/arithmetic/arithmetic_SmolLM2-135M-greedy.jsonl"


def objective(Xs, y, W, b, alphas, penalty):
    """liblinear's objective divided by C: alpha * penalty(w, b) + sum of log-losses."""
    z = W @ Xs.T + b[:, None]
    loss = np.logaddexp(0, -(2 * y - 1) * z).sum(axis=1)
    a = np.asarray(alphas)
    if penalty == "l1":
        return loss + a * (np.abs(W).sum(1) + np.abs(b))
    return loss + a * ((W ** 2).sum(1) + b ** 2) / 2


def _synthetic(seed, n=300, d=20):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = np.where(rng.random(d) < 0.4, rng.standard_normal(d), 0.0)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ w) + 0.3))).astype(float)
    m, s = standardize_params(X)
    return (X - m) / s, y


def _converged_liblinear(Xs, y, alphas, penalty, tol=1e-12):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _fit_liblinear(Xs, y, alphas, penalty, 100_000, 42, tol)


@pytest.mark.parametrize("penalty", ["l1", "l2"])
@pytest.mark.parametrize("seed", [0, 1])
def test_whole_path_matches_converged_liblinear(penalty, seed):
    Xs, y = _synthetic(seed)
    W, b = fit_path(Xs, y, DEFAULT_ALPHAS, penalty, tol=1e-9)
    Wr, br = _converged_liblinear(Xs, y, DEFAULT_ALPHAS, penalty)
    np.testing.assert_allclose(W, Wr, atol=1e-5)
    np.testing.assert_allclose(b, br, atol=1e-5)
    if penalty == "l1":
        assert np.array_equal(W != 0, Wr != 0)


def _real_sets():
    from htc_core.features import extract
    from htc_core.formats import load

    out = []
    for path in (SAMPLE, RUN_A):
        if path.exists():
            ts, _ = load([str(path)])
            ts = ts.labeled()
            X = extract(ts).values
            m, s = standardize_params(X)
            out.append((path.name, (X - m) / s, ts.labels))
    return out


def kkt_violation(Xs, y, W, b, alphas, penalty):
    """Largest entry of the minimum-norm subgradient of the objective (0 exactly at the optimum), relative
    to the largest gradient entry at w = 0 (the solver's own stopping scale)."""
    Xa = np.column_stack([Xs, np.ones(len(y))])
    g0 = np.abs(Xa.T @ (0.5 - y)).max()
    out = []
    for Wj, bj, a in zip(W, b, alphas):
        w = np.r_[Wj, bj]
        g = Xa.T @ (np.exp(-np.logaddexp(0, -(Xa @ w))) - y)
        if penalty == "l1":
            v = np.where(w != 0, np.abs(g + a * np.sign(w)), np.maximum(np.abs(g) - a, 0))
        else:
            v = np.abs(g + a * w)
        out.append(v.max() / g0)
    return np.array(out)


@pytest.mark.parametrize("penalty", ["l1", "l2"])
def test_real_features_reach_the_optimum_and_beat_liblinear_default(penalty):
    """On real HTC features (exact duplicate and linearly dependent columns) the default path solver meets
    its optimality tolerance at every alpha of the grid (a certificate: convex problem, KKT conditions)
    and ends at least as low as liblinear with tol 1e-3, the previous default (up to 1e-6 relative). (A converged liblinear is
    no reference here: at alpha 0.001 it needs minutes per fit on these features.)"""
    sets = _real_sets()
    assert sets, "sample_runs/ is part of the repository"
    for name, Xs, y in sets:
        W, b = fit_path(Xs, y, DEFAULT_ALPHAS, penalty)
        assert np.all(kkt_violation(Xs, y, W, b, DEFAULT_ALPHAS, penalty) <= 1e-4), name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Wl, bl = _fit_liblinear(Xs, y, DEFAULT_ALPHAS, penalty, 1000, 42, 1e-3)
        f = objective(Xs, y, W, b, DEFAULT_ALPHAS, penalty)
        fl = objective(Xs, y, Wl, bl, DEFAULT_ALPHAS, penalty)
        assert np.all(f <= fl + 1e-6 * np.abs(fl)), (name, f - fl)


def test_duplicate_and_constant_columns_get_no_weight_and_change_nothing():
    Xs, y = _synthetic(3, d=8)
    X2 = np.column_stack([Xs, Xs[:, 2], np.zeros(len(y)), Xs[:, 5]])   # copies of 2 and 5, a constant column
    assert distinct_columns(X2).tolist() == list(range(8))
    W, b = fit_path(Xs, y, DEFAULT_ALPHAS, "l1", tol=1e-9)
    W2, b2 = fit_path(X2, y, DEFAULT_ALPHAS, "l1", tol=1e-9)
    assert np.all(W2[:, 8:] == 0)
    np.testing.assert_array_equal(W2[:, :8], W)
    np.testing.assert_array_equal(b2, b)
    # the same optimum for liblinear's objective on the full matrix
    Wr, br = _converged_liblinear(X2, y, DEFAULT_ALPHAS, "l1")
    np.testing.assert_allclose(objective(X2, y, W2, b2, DEFAULT_ALPHAS, "l1"),
                               objective(X2, y, Wr, br, DEFAULT_ALPHAS, "l1"), rtol=1e-8)


@pytest.mark.parametrize("penalty", ["l1", "l2"])
def test_alpha_order_and_warm_starts_do_not_change_the_solution(penalty):
    Xs, y = _synthetic(4)
    alphas = np.array(DEFAULT_ALPHAS)
    perm = np.random.default_rng(0).permutation(alphas.size)
    W, b = fit_path(Xs, y, alphas, penalty, tol=1e-9)
    Wp, bp = fit_path(Xs, y, alphas[perm], penalty, tol=1e-9)
    np.testing.assert_array_equal(Wp, W[perm])
    np.testing.assert_array_equal(bp, b[perm])
    for j in (0, 5, 14):                       # each alpha fitted alone (cold start)
        Wa, ba = fit_path(Xs, y, alphas[j:j + 1], penalty, tol=1e-9)
        np.testing.assert_allclose(Wa[0], W[j], atol=1e-6)
        np.testing.assert_allclose(ba[0], b[j], atol=1e-6)


def test_separable_data_stays_finite():
    rng = np.random.default_rng(5)
    Xs = rng.standard_normal((100, 5))
    y = (Xs[:, 0] > 0).astype(float)                    # perfectly separable
    for penalty in ("l1", "l2"):
        W, b = fit_path(Xs, y, DEFAULT_ALPHAS, penalty)
        assert np.all(np.isfinite(W)) and np.all(np.isfinite(b))
        z = W[0] @ Xs.T + b[0]                          # alpha 0.001: nearly unregularized
        assert np.all((z > 0) == (y == 1))
