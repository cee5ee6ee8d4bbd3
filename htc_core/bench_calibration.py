"""Calibration benchmarks: nested-CV time of HTC-Reduced and scoring throughput.

>>> from htc_core.bench_calibration import run
>>> run()

Targets (issue 3): full nested CV of HTC-Reduced on 500 trajectories (15
alphas, 5 outer x 5 inner folds) under 3 s on one core; scoring >= 100,000
trajectories/s from features. Both are measured here (BLAS limited to one
thread), never asserted in tests.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

NESTED_TARGET_S = 3.0
SCORING_TARGET_PER_S = 100_000
REAL_FILE = Path(__file__).resolve().parents[2] / "shared/data/uala-hotpotqa/hotpotqa_llama2-70b_run-a.jsonl"


def _data_500(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, str]:
    """Real run-a features (466) topped up to 500 with jittered resampled rows; synthetic when absent."""
    from .features import N_FEATURES, extract
    from .formats import load

    if REAL_FILE.exists():
        ts, _ = load([str(REAL_FILE)])
        ts = ts.labeled()
        X = extract(ts).values
        y = ts.labels
        extra = rng.integers(0, len(y), size=500 - len(y))
        Xe = X[extra] * (1 + 0.01 * rng.standard_normal((len(extra), X.shape[1])))
        return np.vstack([X, Xe]), np.concatenate([y, y[extra]]), f"run-a ({len(y)} real) + {len(extra)} jittered"
    X = rng.standard_normal((500, N_FEATURES))
    w = rng.standard_normal(N_FEATURES) * (rng.random(N_FEATURES) < 0.3)
    y = (rng.random(500) < 1 / (1 + np.exp(-(X @ w) * 0.5 + 0.5))).astype(float)
    return X, y, "synthetic 500"


def nested_cv_seconds(X: np.ndarray, y: np.ndarray, *, variant: str = "reduced", seed: int = 42) -> float:
    from sklearn.model_selection import StratifiedKFold

    from .calibrators import HTCCalibrator

    t = time.perf_counter()
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y.astype(int)):
        HTCCalibrator(variant=variant, random_state=seed).fit(X[tr], y[tr]).predict_proba(X[te])
    return time.perf_counter() - t


def run(print_fn=print) -> dict:
    from threadpoolctl import threadpool_limits

    from .calibrators import HTCCalibrator

    rng = np.random.default_rng(0)
    results: dict = {}
    with threadpool_limits(limits=1, user_api="blas"):
        X, y, what = _data_500(rng)
        n_real = int(what.split("(")[1].split()[0]) if what.startswith("run-a") else 0
        if n_real:
            s = nested_cv_seconds(X[:n_real], y[:n_real], variant="reduced")
            results["nested_cv_reduced_real_s"] = s
            print_fn(f"nested CV HTC-Reduced on the {n_real} real run-a trajectories, 15 alphas, 5x5 folds: "
                     f"{s:.2f} s (target < {NESTED_TARGET_S:g} s for 500) {'OK' if s < NESTED_TARGET_S else 'MISSED'}")
        for variant in ("reduced", "full"):
            s = nested_cv_seconds(X, y, variant=variant)
            results[f"nested_cv_{variant}_s"] = s
            flag = "OK" if s < NESTED_TARGET_S else "MISSED"
            print_fn(f"nested CV HTC-{variant.capitalize()} on {len(y)} trajectories [{what}], 15 alphas, 5x5 folds: "
                     f"{s:.2f} s (target < {NESTED_TARGET_S:g} s) {flag}")
        # where the time goes: one liblinear fit per alpha on 80% of the data (standardized)
        from .calibrators import DEFAULT_ALPHAS, fit_path, standardize_params

        m, sc = standardize_params(X[:400])
        per = []
        for a in DEFAULT_ALPHAS:
            t = time.perf_counter()
            fit_path((X[:400] - m) / sc, y[:400], [a], "l1")
            per.append(time.perf_counter() - t)
        results["l1_fit_s_per_alpha"] = dict(zip(DEFAULT_ALPHAS, per))
        print_fn("  one L1 liblinear fit on 400 rows, seconds per alpha: "
                 + ", ".join(f"{a:g}: {s:.3f}" for a, s in zip(DEFAULT_ALPHAS, per)))
        model = HTCCalibrator("reduced").fit(X, y)
        big = X[rng.integers(0, len(X), size=200_000)]
        model.predict_proba(big[:1000])
        t = time.perf_counter()
        model.predict_proba(big)
        vec = len(big) / (time.perf_counter() - t)
        # plain per-row reference: standardize, dot, sigmoid one trajectory at a time
        w, b, mu, sc = model.coef_[0].tolist(), float(model.intercept_[0]), model.mean_.tolist(), model.scale_.tolist()
        import math

        rows = big[:20_000].tolist()
        t = time.perf_counter()
        for row in rows:
            z = b
            for j in range(len(w)):
                z += w[j] * (row[j] - mu[j]) / sc[j]
            1.0 / (1.0 + math.exp(-z))
        ref = len(rows) / (time.perf_counter() - t)
    results.update(scoring_per_s=vec, scoring_reference_per_s=ref)
    flag = "OK" if vec >= SCORING_TARGET_PER_S else "MISSED"
    print_fn(f"scoring from features: {vec:,.0f} trajectories/s (target >= {SCORING_TARGET_PER_S:,}) {flag}; "
             f"plain per-row reference {ref:,.0f}/s ({vec / ref:.0f}x)")
    return results


if __name__ == "__main__":
    run()
