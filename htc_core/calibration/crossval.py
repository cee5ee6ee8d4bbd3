"""The outer cross-validation loop of :func:`htc_core.calibration.evaluation.evaluate` and its summary.

The loop knows nothing about any particular method: every :class:`~htc_core.calibration.methods.Method`
is fitted on the same outer-training rows of every fold and predicts the fold's test rows; the summary
computes the headline metrics on the pooled out-of-fold predictions of each repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .blas_threads import one_blas_thread
from .methods import FitContext, Method
from .metrics import fast_auroc, fast_brier, fast_ece
from .results import METRICS

__all__ = ["EvalInputs", "CVRun", "cross_validate", "summarize", "fold_metrics"]


@dataclass
class EvalInputs:
    """What the methods read, one entry per trajectory: ``columns`` maps an input key (``"features"``: the
    [n, d] feature matrix; a baseline name: its [n] confidences) to values, ``missing`` an input key that
    cannot be used to the reason."""

    y: np.ndarray
    ids: np.ndarray
    columns: dict
    missing: dict
    feature_names: list
    profile: str
    top_k: int
    partial: dict = None    # input key -> number of trajectories that carry it (only inputs some lack)

    def __post_init__(self):
        if self.partial is None:
            self.partial = {}

    @property
    def n(self) -> int:
        return len(self.y)


# ------------------------------------------------------------------ the outer CV loop
@dataclass
class CVRun:
    """What the loop collects."""

    oof: dict           # method -> [n_repeats, n]
    folds: np.ndarray   # [n_repeats, n]
    rows: list          # per-fold rows
    selected: dict      # feature-selecting method -> times each feature was kept
    weights: dict       # feature-selecting method -> list of weight vectors, one per (seed, fold) in order
    fold_models: dict = None   # method -> {fold: fitted model} of the first repeat (models with ``to_dict``)

    def __post_init__(self):
        if self.fold_models is None:
            self.fold_models = {}


def fold_metrics(y: np.ndarray, p: np.ndarray) -> dict:
    P = p[None, :]
    return {"ece": float(fast_ece(y, P)[0]), "brier": float(fast_brier(y, P)[0]),
            "auroc": float(fast_auroc(y, P)[0])}


def cross_validate(run: list[Method], inputs: EvalInputs, seed_list: list[int], n_splits: int, settings: dict,
                   progress, n_jobs: int | None = None) -> CVRun:
    """Outer stratified K-fold x seeds; every method is fitted on the same training rows of every fold.

    ``n_jobs`` (scikit-learn's convention: None = 1, -1 = every core) outer folds run at once in threads; the
    path solver releases the GIL, so they run in parallel. The folds' results are gathered in the order of
    the serial loop, so the result is the same for every ``n_jobs``."""
    from sklearn.model_selection import StratifiedKFold

    n, y = inputs.n, inputs.y
    cv = CVRun(oof={m.name: np.full((len(seed_list), n), np.nan) for m in run},
               folds=np.full((len(seed_list), n), -1, dtype=np.int64), rows=[], selected={}, weights={})
    jobs = []
    for r, seed in enumerate(seed_list):
        ctx = FitContext(seed=seed, feature_names=inputs.feature_names, **settings)
        skf = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        for f, (tr, te) in enumerate(skf.split(np.zeros((n, 1)), y.astype(int))):
            cv.folds[r, te] = f
            jobs.append((r, f, tr, te, ctx))
    total = len(jobs)

    def one(job):
        r, f, tr, te, ctx = job
        return [_fit_fold(m, inputs, tr, te, ctx, f) for m in run]

    with one_blas_thread():
        for done, (job, fits) in enumerate(zip(jobs, _map_in_threads(one, jobs, _workers(n_jobs, total))), 1):
            for fit in fits:
                if fit is not None:
                    _keep(cv, job[0], *fit)
            if progress is not None:
                progress(done, total, f"seed {job[4].seed}, fold {job[1] + 1}/{n_splits}")
    return cv


def _workers(n_jobs: int | None, total: int) -> int:
    """Threads for ``total`` folds: joblib's reading of ``n_jobs`` (None = 1, -1 = every core), at most
    ``total``."""
    from joblib import effective_n_jobs

    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer))
                               or n_jobs == 0):
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}")
    return max(1, min(effective_n_jobs(None if n_jobs is None else int(n_jobs)), total))


def _map_in_threads(fn, items: list, workers: int):
    """``map(fn, items)`` in order; with ``workers`` > 1 on a thread pool (results yielded as they come in
    order, so progress moves while later folds still run)."""
    if workers <= 1:
        yield from map(fn, items)
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="htc-cv")
    try:
        futures = [pool.submit(fn, item) for item in items]
        for fut in futures:
            yield fut.result()
    finally:   # also when the caller stops early (an error, a cancelled job): drop the folds not started
        pool.shutdown(wait=True, cancel_futures=True)


def _fit_fold(m: Method, inputs: EvalInputs, tr, te, ctx: FitContext, f: int):
    """(method, test rows, predictions, fitted, fold row) of one method on one outer fold; None when no test
    row carries the method's input. Touches nothing shared: the caller keeps it."""
    x, y = inputs.columns[m.input], inputs.y
    if m.input in inputs.partial:                      # a signal some trajectories lack: fit and test on the rest
        ok = np.isfinite(x)
        tr, te = tr[ok[tr]], te[ok[te]]
        if len(te) == 0:
            return None
    fitted = m.fit(x[tr], y[tr], ctx)
    p = fitted.predict(x[te])
    row = {"method": m.name, "seed": ctx.seed, "fold": f, "n_test": len(te), **fold_metrics(y[te], p),
           "n_features": np.nan, "alpha": np.nan, "temperature": np.nan, **fitted.info}
    return m, te, p, fitted, row


def _keep(cv: CVRun, r: int, m: Method, te, p, fitted, row: dict) -> None:
    cv.oof[m.name][r, te] = p
    if r == 0 and fitted.model is not None:
        cv.fold_models.setdefault(m.name, {})[int(row["fold"])] = fitted.model
    if fitted.selected is not None:
        counts = cv.selected.setdefault(m.name, np.zeros(len(fitted.selected), dtype=np.int64))
        counts += fitted.selected
    if fitted.weights is not None:
        cv.weights.setdefault(m.name, []).append(np.asarray(fitted.weights, dtype=np.float64))
    cv.rows.append(row)


# ------------------------------------------------------------------ the summary
def _mean_std(values) -> dict:
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0}


def summarize(run: list[Method], inputs: EvalInputs, cv: CVRun) -> tuple[dict, pd.DataFrame, dict, dict]:
    """Headline metrics on the pooled OOF predictions of each repeat (mean and std over repeats), and the
    number of trajectories each method was evaluated on (fewer for a signal some trajectories lack)."""
    per_fold = pd.DataFrame(cv.rows)
    summary: dict = {}
    n_by_method: dict = {}
    for m in run:
        ok = np.isfinite(cv.oof[m.name]).all(axis=0)
        n_by_method[m.name] = int(ok.sum())
        pooled = [fold_metrics(inputs.y[ok], oof[ok]) for oof in cv.oof[m.name]]
        summary[m.name] = {k: _mean_std([p[k] for p in pooled]) for k in METRICS}
        if m.selects_features:
            summary[m.name]["n_features"] = _mean_std(per_fold.loc[per_fold.method == m.name, "n_features"])
    selected = {m: pd.Series(v, index=inputs.feature_names, name="times_selected").sort_values(ascending=False)
                for m, v in cv.selected.items()}
    return summary, per_fold, selected, n_by_method
