"""BLAS runs on one thread inside every path-solver fit (issue 29, item 4): asserted on the limit itself, by
reading threadpoolctl's view of the BLAS libraries from inside the solver, never by timing."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from htc_core.calibration import pathsolver
from htc_core.calibration.blas_threads import one_blas_thread
from htc_core.calibration.calibrators import HTCCalibrator


def blas_threads() -> set:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


@pytest.fixture
def two_blas_threads():
    if not blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can control")
    with threadpool_limits(limits=2, user_api="blas"):
        yield


def _spy(monkeypatch) -> list:
    seen = []
    original = pathsolver.fit_path_newton

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(pathsolver, "fit_path_newton", spy)
    return seen


@pytest.mark.parametrize("variant", ["reduced", "full"])
def test_fit_runs_the_path_solver_on_one_blas_thread(monkeypatch, two_blas_threads, variant):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 6))
    y = (X[:, 0] + rng.normal(size=120) > 0).astype(float)
    seen = _spy(monkeypatch)
    HTCCalibrator(variant=variant, alphas=[1.0, 0.1]).fit(X, y)
    assert seen and all(s == {1} for s in seen), seen     # inner-CV paths and the final refit
    assert blas_threads() == {2}                           # the caller's limit is back afterwards


def test_nested_and_concurrent_blocks_share_one_limit(two_blas_threads):
    inside, release, out = threading.Event(), threading.Event(), threading.Event()

    def worker():
        with one_blas_thread():
            inside.set()
            release.wait(30)
        out.set()

    t = threading.Thread(target=worker)
    with one_blas_thread():
        t.start()
        inside.wait(30)
        with one_blas_thread():
            assert blas_threads() == {1}
        assert blas_threads() == {1}
        release.set()
        t.join(30)
        assert out.is_set() and blas_threads() == {1}      # the worker left; this block still holds the limit
    assert blas_threads() == {2}                           # the last one out restored the caller's limit


def test_the_gaussian_process_baseline_fits_and_predicts_on_one_blas_thread(monkeypatch, two_blas_threads):
    # GPBaseline (htc learn, the learning curves, any user's fit) holds the limit itself: measured on 400 runs x 48
    # features, its fit took 8.6-15.5 s CPU with default BLAS threads against 0.55-0.60 s on one (load 10)
    from sklearn.gaussian_process import GaussianProcessClassifier

    from htc_core.experiments.learning import GPBaseline

    seen = []
    fit, proba = GaussianProcessClassifier.fit, GaussianProcessClassifier.predict_proba

    def spy_fit(self, *args, **kwargs):
        seen.append(("fit", blas_threads()))
        return fit(self, *args, **kwargs)

    def spy_proba(self, *args, **kwargs):
        seen.append(("predict_proba", blas_threads()))
        return proba(self, *args, **kwargs)

    monkeypatch.setattr(GaussianProcessClassifier, "fit", spy_fit)
    monkeypatch.setattr(GaussianProcessClassifier, "predict_proba", spy_proba)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + rng.normal(size=40) > 0).astype(int)
    GPBaseline(n_restarts_optimizer=0).fit(X, y).predict_proba(X[:5])
    assert seen == [("fit", {1}), ("predict_proba", {1})], seen
    assert blas_threads() == {2}                           # the caller's limit is back afterwards
