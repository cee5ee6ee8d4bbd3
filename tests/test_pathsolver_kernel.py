"""The path solver's L1 kernel gives, to the last bit, what the plain coordinate-descent loop gives (its speed-ups
only change how memory is read and hoist a division that is the same in every sweep)."""

from __future__ import annotations

import numpy as np
import pytest

from htc_core.calibration.pathsolver import logistic_hessian
from htc_core.calibration.subproblem import l1_coordinate_step
from htc_core.calibration.solvers import distinct_columns, standardize_params
from htc_core.features import extract
from htc_core.formats import load

from conftest import REPO


def _plain(H, g, w, alpha, inner_tol, max_sweeps):
    """The textbook loop in Python: column j of H read as H[m, j], the threshold divided out every time."""
    d = len(w)
    step, Hd = [0.0] * d, [0.0] * d
    for _ in range(max_sweeps):
        biggest = 0.0
        for j in range(d):
            a = float(H[j, j])
            if a <= 1e-10:
                continue
            u = float(w[j]) - (float(g[j]) + Hd[j] - a * step[j]) / a
            thr = alpha / a
            u = u - thr if u > thr else (u + thr if u < -thr else 0.0)
            change = (u - float(w[j])) - step[j]
            if change != 0.0:
                step[j] += change
                for m in range(d):
                    Hd[m] += change * float(H[m, j])
                biggest = max(biggest, abs(change) * a)
        if biggest <= inner_tol:
            break
    return np.array(step)


@pytest.mark.parametrize("alpha", [0.01, 1.0, 20.0])
def test_l1_kernel_is_bit_identical_to_the_plain_loop(alpha):
    ts, _ = load(str(REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"))
    X, y = extract(ts).values, ts.labels
    mean, scale = standardize_params(X)
    Xs = (X - mean) / scale
    Xs = np.ascontiguousarray(np.column_stack([Xs[:, distinct_columns(Xs)], np.ones(len(y))]))
    rng = np.random.default_rng(0)
    w = np.where(rng.random(Xs.shape[1]) < 0.5, 0.0, rng.normal(0, 0.3, Xs.shape[1]))   # some at 0, some not
    z = Xs @ w
    p = 1.0 / (1.0 + np.exp(-z))
    H = logistic_hessian(Xs, p, np.empty_like(Xs))
    g = Xs.T @ (p - y)
    got = l1_coordinate_step(H, g, w, alpha, 1e-9, 40)
    want = _plain(H, g, w, alpha, 1e-9, 40)
    assert np.array_equal(got, want)
    assert np.count_nonzero(got) > 0


@pytest.mark.parametrize("alpha", [0.001, 0.01, 1.0])
def test_accelerated_direction_solves_the_subproblem_at_least_as_well_as_plain_coordinate_descent(alpha):
    """Anderson extrapolation keeps coordinate descent's fixed point: with the same sweep budget its
    direction's model objective is never worse, and near alpha = 0 (where plain sweeps stall) it is better."""
    from htc_core.calibration.subproblem import l1_direction, _model

    ts, _ = load(str(REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"))
    X, y = extract(ts).values, ts.labels
    mean, scale = standardize_params(X)
    Xs = (X - mean) / scale
    Xs = np.ascontiguousarray(np.column_stack([Xs[:, distinct_columns(Xs)], np.ones(len(y))]))
    w = np.zeros(Xs.shape[1])
    p = np.full(len(y), 0.5)
    H = logistic_hessian(Xs, p, np.empty_like(Xs))
    g = Xs.T @ (p - y)
    for budget in (50, 200):
        plain = _model(H, g, w, alpha, l1_coordinate_step(H, g, w, alpha, 1e-12, budget))
        fast = _model(H, g, w, alpha, l1_direction(H, g, w, alpha, 1e-12, budget))
        assert fast <= plain + 1e-9 * abs(plain), (budget, fast, plain)
    if alpha <= 0.01:
        assert fast < plain - 1e-6 * abs(plain)
