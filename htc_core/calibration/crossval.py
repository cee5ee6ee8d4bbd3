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
    """What the methods read, one entry per trajectory (made by
    :func:`~htc_core.calibration.evaluation.prepare_inputs`).

    Parameters
    ----------
    y : ndarray of shape (n,)
        0/1 labels.
    ids : ndarray of shape (n,)
        The trajectories' ids.
    columns : dict
        Input key -> values: ``"features"`` the (n, d) feature matrix, a baseline name its (n,) confidences.
    missing : dict
        Input key that cannot be used -> the reason.
    feature_names : list of str
        The feature matrix's columns.
    profile : str
        The features' token-confidence profile.
    top_k : int
        The features' top-k.
    partial : dict, optional
        Input key -> number of trajectories that carry it (only inputs some trajectories lack).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.crossval import EvalInputs
    >>> inputs = EvalInputs(y=np.array([1.0, 0.0, 1.0]), ids=np.array(["a", "b", "c"]),
    ...                     columns={"features": np.zeros((3, 2))}, missing={}, feature_names=["f0", "f1"],
    ...                     profile="paper", top_k=5)
    >>> inputs.n, inputs.partial
    (3, {})
    """

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
        """The number of trajectories.

        Returns
        -------
        int
            ``len(y)``.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.crossval import EvalInputs
        >>> EvalInputs(np.ones(4), np.arange(4), {}, {}, [], "paper", 5).n
        4
        """
        return len(self.y)


# ------------------------------------------------------------------ the outer CV loop
@dataclass
class CVRun:
    """What the outer loop (:func:`cross_validate`) collects.

    Parameters
    ----------
    oof : dict
        Method -> out-of-fold predictions of shape (n_repeats, n).
    folds : ndarray of shape (n_repeats, n)
        The outer fold of each trajectory in each repeat.
    rows : list of dict
        One row per method and fold (the per-fold table).
    selected : dict
        Feature-selecting method -> how often each feature was kept.
    weights : dict
        Feature-selecting method -> its weight vectors, one per (seed, fold) in order.
    fold_models : dict, optional
        Method -> {fold: fitted model} of the first repeat (models with ``to_dict``).

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.crossval import cross_validate, summarize
    >>> from htc_core.calibration.evaluation import EvaluationError, prepare_inputs
    >>> from htc_core.calibration.methods import resolve_methods
    >>> def fail(reason):
    ...     raise EvaluationError(reason)
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> run = resolve_methods(["GlobalTrace-TP", "LastStep-TP"])
    >>> inputs = prepare_inputs(ts, None, {m.input for m in run}, profile=None, top_k=None, fail=fail)
    >>> settings = dict(alphas=(1.0,), inner_folds=3, max_iter=1000, profile="paper", top_k=5)
    >>> cv = cross_validate(run, inputs, [42], 3, settings, None)
    >>> cv.oof["GlobalTrace-TP"].shape, cv.folds.shape, len(cv.rows), cv.fold_models
    ((1, 250), (1, 250), 6, {})
    """

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
    """ECE, Brier score and AUROC of one set of predictions.

    Parameters
    ----------
    y : ndarray of shape (n,)
        0/1 labels.
    p : ndarray of shape (n,)
        Confidences.

    Returns
    -------
    dict
        ``{"ece", "brier", "auroc"}`` as floats (AUROC NaN when ``y`` holds one outcome).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.crossval import fold_metrics
    >>> fold_metrics(np.array([1.0, 0, 1, 0]), np.array([0.9, 0.2, 0.6, 0.4]))
    {'ece': 0.275, 'brier': 0.0925..., 'auroc': 1.0}
    """
    P = p[None, :]
    return {"ece": float(fast_ece(y, P)[0]), "brier": float(fast_brier(y, P)[0]),
            "auroc": float(fast_auroc(y, P)[0])}


def cross_validate(run: list[Method], inputs: EvalInputs, seed_list: list[int], n_splits: int, settings: dict,
                   progress, n_jobs: int | None = None) -> CVRun:
    """Outer stratified K-fold x seeds; every method is fitted on the same training rows of every fold.

    ``n_jobs`` (scikit-learn's convention: None = 1, -1 = every core) outer folds run at once in threads; the
    path solver releases the GIL, so they run in parallel. The folds' results are gathered in the order of
    the serial loop, so the result is the same for every ``n_jobs``.

    Parameters
    ----------
    run : list of Method
        The methods.
    inputs : EvalInputs
        What they read.
    seed_list : list of int
        One repeat per seed (the folds are shuffled with it).
    n_splits : int
        Outer folds.
    settings : dict
        ``alphas``, ``inner_folds``, ``max_iter``, ``profile`` and ``top_k`` of the methods'
        :class:`~htc_core.calibration.methods.FitContext`.
    progress : callable or None
        ``progress(done, total, message)`` after every fold.
    n_jobs : int, optional
        Outer folds fitted at once in threads.

    Returns
    -------
    CVRun
        The out-of-fold predictions, folds, per-fold rows, selected features, weights and fold models.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.crossval import cross_validate, summarize
    >>> from htc_core.calibration.evaluation import EvaluationError, prepare_inputs
    >>> from htc_core.calibration.methods import resolve_methods
    >>> def fail(reason):
    ...     raise EvaluationError(reason)
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> run = resolve_methods(["GlobalTrace-TP", "LastStep-TP"])
    >>> inputs = prepare_inputs(ts, None, {m.input for m in run}, profile=None, top_k=None, fail=fail)
    >>> settings = dict(alphas=(1.0,), inner_folds=3, max_iter=1000, profile="paper", top_k=5)
    >>> cv = cross_validate(run, inputs, [42], 3, settings, None)
    >>> cv.rows[0]["method"], cv.rows[0]["n_test"], round(cv.rows[0]["auroc"], 3)
    ('LastStep-TP', 84, 0.744)
    """
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
    """Headline metrics on the pooled out-of-fold predictions of each repeat (mean and std over repeats).

    Parameters
    ----------
    run : list of Method
        The methods.
    inputs : EvalInputs
        What they read (the labels).
    cv : CVRun
        What the loop collected.

    Returns
    -------
    summary : dict
        Method -> metric -> ``{"mean", "std"}`` (and ``n_features`` for feature-selecting methods).
    per_fold : DataFrame
        One row per method and fold.
    selected : dict
        Feature-selecting method -> Series of how often each feature was kept, most often first.
    n_by_method : dict
        Method -> trajectories it was evaluated on (fewer for a signal some trajectories lack).

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.crossval import cross_validate, summarize
    >>> from htc_core.calibration.evaluation import EvaluationError, prepare_inputs
    >>> from htc_core.calibration.methods import resolve_methods
    >>> def fail(reason):
    ...     raise EvaluationError(reason)
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> run = resolve_methods(["GlobalTrace-TP", "LastStep-TP"])
    >>> inputs = prepare_inputs(ts, None, {m.input for m in run}, profile=None, top_k=None, fail=fail)
    >>> settings = dict(alphas=(1.0,), inner_folds=3, max_iter=1000, profile="paper", top_k=5)
    >>> cv = cross_validate(run, inputs, [42], 3, settings, None)
    >>> summary, per_fold, selected, n_by_method = summarize(run, inputs, cv)
    >>> round(summary["GlobalTrace-TP"]["ece"]["mean"], 3), per_fold.shape, n_by_method
    (0.39, (6, 10), {'LastStep-TP': 250, 'GlobalTrace-TP': 250})
    """
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
