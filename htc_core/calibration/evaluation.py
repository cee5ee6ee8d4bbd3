"""The honest evaluation protocol (DESIGN.md section 4).

Outer stratified K-fold CV (default 5), repeated over seeds 42, 43, ...; in
every outer fold HTC-Full / HTC-Reduced choose alpha by inner stratified CV on
the outer-training part only, and each baseline's temperature is fitted on the
outer-training part only. Every method uses the same folds. Each repeat gives
one out-of-fold (OOF) prediction per trajectory; the headline ECE / Brier /
AUROC are computed on the pooled OOF predictions of each repeat and reported
as mean and std (ddof=1) over repeats. Per-fold values stay in the result.

:func:`evaluate` runs in four parts: preparation (:func:`prepare_inputs`: the
feature matrix and single-signal confidences, the label checks of
:func:`label_problem`, which methods cannot run and why), the methods
(:mod:`htc_core.calibration.methods`, one interface, a registry), the outer
cross-validation loop (the same for every method) and
the summary (:mod:`htc_core.calibration.crossval` -> :class:`EvaluationResult`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NoReturn, Sequence

import numpy as np
import pandas as pd

from .baselines import baseline_confidences
from .crossval import EvalInputs, cross_validate, summarize
from .methods import FEATURES, Method, resolve_methods
from .results import METRICS, EvaluationResult
from .solvers import DEFAULT_ALPHAS

__all__ = ["evaluate", "prepare_inputs", "EvalInputs", "EvaluationResult", "EvaluationError", "label_problem",
           "small_sample_warning", "merge_results", "METRICS", "MIN_TRAJECTORIES", "MIN_PER_CLASS"]

MIN_TRAJECTORIES = 10
MIN_PER_CLASS = 5
MIN_FIT_PER_CLASS = 2  # HTCCalibrator.fit: at least 2 successes and 2 failures
HTC_METHODS = ("HTC-Full", "HTC-Reduced")
DEFAULT_PROFILE, DEFAULT_TOP_K = "paper", 5
NOT_TRACES = "baselines need the token traces (a TraceSet), not a feature matrix"


class EvaluationError(ValueError):
    """The input cannot be evaluated; the message says which methods and why (a ValueError).

    Examples
    --------
    >>> import htc_core as htc
    >>> issubclass(htc.EvaluationError, ValueError)
    True
    """


def label_problem(labels, *, for_evaluation: bool = True) -> str | None:
    """Why these labels cannot be evaluated or fitted, or None when they can.

    NaN entries are unlabeled runs and are left out, as the dashboard leaves them out. The one place this
    rule lives: the pages and the CLI ask here.

    Parameters
    ----------
    labels : array-like
        1 success, 0 failure, NaN unknown.
    for_evaluation : bool, default=True
        True: the nested CV's needs; False: a single fit's.

    Returns
    -------
    str or None
        The reason, or None.

    Examples
    --------
    >>> import htc_core as htc
    >>> print(htc.label_problem([1, 1, 0, 0, 1, 0, 1, 0, 1, 0] * 3))
    None
    >>> htc.label_problem([1, 1, 1]) is not None
    True
    """
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    y = y[np.isfinite(y)]
    n, n_pos = len(y), int((y == 1).sum())
    n_neg = n - n_pos
    need_total, need_class = (MIN_TRAJECTORIES, MIN_PER_CLASS) if for_evaluation else (MIN_FIT_PER_CLASS * 2,
                                                                                       MIN_FIT_PER_CLASS)
    what = "an honest evaluation" if for_evaluation else "fitting a calibrator"
    if n == 0:
        return f"no labeled trajectories: {what} needs success labels"
    if n < need_total:
        return f"only {n} labeled trajectories: {what} needs at least {need_total}"
    if n_pos == 0 or n_neg == 0:
        return f"all {n} labeled trajectories are {'successes' if n_neg == 0 else 'failures'}: {what} needs both outcomes"
    if min(n_pos, n_neg) < need_class:
        rarer = "successes" if n_pos < n_neg else "failures"
        return f"only {min(n_pos, n_neg)} {rarer}: {what} needs at least {need_class} of each outcome"
    return None


#: below these (labeled trajectories, trajectories of the smaller class) calibration numbers are unstable
STABLE_TRAJECTORIES = 30
STABLE_PER_CLASS = 10


def small_sample_warning(labels) -> str | None:
    """A warning when the labeled sample is too small for stable calibration numbers, else None.

    Too small: fewer than 30 labeled trajectories or fewer than 10 of the smaller class. Fitting and
    evaluating still run; the CLI and the Calibration page show this next to their numbers.

    Parameters
    ----------
    labels : array-like
        1 success, 0 failure, NaN unknown (left out).

    Returns
    -------
    str or None
        The warning, or None when the sample is large enough (or holds no label at all).

    Examples
    --------
    >>> from htc_core.calibration.evaluation import small_sample_warning
    >>> print(small_sample_warning([1, 0] * 20))
    None
    >>> small_sample_warning([1, 0] * 10)
    'only 20 labeled trajectories (10 successes, 10 failures): with fewer than 30 labeled ...'
    """
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    y = y[np.isfinite(y)]
    n, n_pos = len(y), int((y == 1).sum())
    smaller = min(n_pos, n - n_pos)
    if n == 0 or (n >= STABLE_TRAJECTORIES and smaller >= STABLE_PER_CLASS):
        return None
    return (f"only {n} labeled trajectories ({n_pos} successes, {n - n_pos} failures): with fewer than "
            f"{STABLE_TRAJECTORIES} labeled or fewer than {STABLE_PER_CLASS} of the smaller class, the numbers are "
            f"unstable (another sample of the same size could give quite different ones)")


def merge_results(results: Sequence[EvaluationResult]) -> EvaluationResult:
    """One result holding the methods of several evaluations of the same trajectories with the same seeds.

    The evaluations must share their folds (same trajectories, same seeds, same ``n_splits``), e.g. the
    baselines and each HTC variant computed separately; a ValueError says so otherwise.

    Parameters
    ----------
    results : sequence of EvaluationResult
        The evaluations (None entries are skipped).

    Returns
    -------
    EvaluationResult
        Every method of every result, HTC methods first.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.evaluation import merge_results
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> base = htc.evaluate(ts, seeds=1, n_splits=3, methods=["GlobalTrace-TP"])
    >>> htc_only = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3, methods=["HTC-Reduced"])
    >>> merge_results([base, htc_only]).methods
    ['HTC-Reduced', 'GlobalTrace-TP']
    """
    results = [r for r in results if r is not None]
    if not results:
        raise ValueError("merge_results needs at least one EvaluationResult")
    first = results[0]
    for r in results[1:]:
        if not np.array_equal(r.folds, first.folds):
            raise ValueError("the evaluations used different folds (other trajectories or seeds); cannot merge")
    methods = [m for r in results for m in r.methods]
    order = [m for m in HTC_METHODS if m in methods] + [m for m in methods if m not in HTC_METHODS]
    merged = lambda attr: {k: v for r in results for k, v in getattr(r, attr).items()}  # noqa: E731
    return dataclasses.replace(
        first, methods=order, summary=merged("summary"), oof_all=merged("oof_all"),
        per_fold=pd.concat([r.per_fold for r in results], ignore_index=True),
        selected_counts=merged("selected_counts"), weights=merged("weights"), n_by_method=merged("n_by_method"),
        fold_models=merged("fold_models"),
        notes=list(dict.fromkeys(n for r in results for n in r.notes)),
        skipped={k: v for k, v in merged("skipped").items() if k not in order})


# ------------------------------------------------------------------ (a) preparation
def prepare_inputs(data, labels, needed, *, profile: str | None, top_k: int | None,
                   fail: Callable[[str], NoReturn], baselines: pd.DataFrame | None = None) -> EvalInputs:
    """The inputs of the evaluation's methods: the first step of :func:`evaluate`.

    Converts ``data`` into the arrays the ``needed`` input keys name, after checking the labels. Features and
    baselines are computed only when a method needs them; with a feature matrix, ``baselines`` (the raw
    single-signal confidences, as :func:`~htc_core.calibration.baselines.baseline_confidences` returns them)
    feed the baseline methods.

    Parameters
    ----------
    data : TraceSet, FeatureMatrix, DataFrame or array
        The runs or their features.
    labels : array-like or None
        0/1 labels (None: the trace set's).
    needed : iterable of str
        Input keys: ``"features"`` and/or single-signal confidence names (each method's ``input``).
    profile : str or None
        The features' token-confidence profile (None: ``"paper"``, or the FeatureMatrix's).
    top_k : int or None
        The features' top-k (None: 5, or the FeatureMatrix's).
    fail : callable
        ``fail(reason)`` raises the caller's error when the labels cannot be evaluated.
    baselines : DataFrame, optional
        The raw single-signal confidences, with a feature matrix only.

    Returns
    -------
    EvalInputs
        Labels, ids, the available inputs (``columns``) and why each unavailable one is missing
        (``missing``).

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.evaluation import EvaluationError, prepare_inputs
    >>> def fail(reason):
    ...     raise EvaluationError(reason)
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> inputs = prepare_inputs(ts, None, {"features", "GlobalTrace-TP"}, profile=None, top_k=None, fail=fail)
    >>> inputs.n, inputs.columns["features"].shape, sorted(inputs.columns), inputs.missing
    (250, (250, 48), ['GlobalTrace-TP', 'features'], {})
    >>> prepare_inputs(ts, [1] * 250, {"features"}, profile=None, top_k=None, fail=fail)
    Traceback (most recent call last):
    ...
    htc_core.calibration.evaluation.EvaluationError: all 250 labeled trajectories are successes: an honest evaluation needs both outcomes
    """
    from ..traces import TraceSet

    needed = set(needed)
    if isinstance(data, TraceSet):
        if baselines is not None:
            raise ValueError("baselines= goes with a feature matrix; with a TraceSet they are computed from it")
        out = _from_traces(data, labels, needed, profile, top_k, fail)
    else:
        out = _from_matrix(data, labels, needed, profile, top_k, fail)
        if baselines is not None:
            _add_signals(out, _checked_baselines(baselines, out.n), needed - {FEATURES})
    X = out.columns.get(FEATURES)
    if X is not None and not np.isfinite(X).all():
        bad_rows = np.flatnonzero(~np.isfinite(X).all(axis=1))
        out.missing[FEATURES] = f"{len(bad_rows)} trajectories have non-finite features (e.g. row {bad_rows[0]})"
    return out


def _checked_labels(labels, n: int, fail) -> np.ndarray:
    if labels is None:
        fail("no success labels were given")
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    if len(y) != n:
        raise ValueError(f"labels must have one entry per trajectory ({n}), got {len(y)}")
    n_unlab = int(np.isnan(y).sum())
    if n_unlab:
        fail(f"{n_unlab} of {n} trajectories have no success label; evaluation needs every trajectory "
             "labeled (drop the unlabeled ones, e.g. trace_set.labeled())")
    if not np.all((y == 0) | (y == 1)):
        fail("labels must be 0/1 (success)")
    why = label_problem(y)
    if why:
        fail(why)
    return y


def _from_traces(ts, labels, needed, profile, top_k, fail) -> EvalInputs:
    from ..features import extract

    y = _checked_labels(ts.labels if labels is None else labels, len(ts), fail)
    profile = DEFAULT_PROFILE if profile is None else profile
    top_k = DEFAULT_TOP_K if top_k is None else top_k
    out = EvalInputs(y=y, ids=ts.ids, columns={}, missing={}, feature_names=[], profile=profile, top_k=top_k)
    if FEATURES in needed:
        fm = extract(ts, profile=profile, top_k=top_k)
        out.columns[FEATURES] = fm.values
        out.feature_names = list(fm.names)
    if needed - {FEATURES}:
        _add_signals(out, baseline_confidences(ts, profile=profile, top_k=top_k), needed - {FEATURES})
    return out


def _checked_baselines(baselines, n: int) -> pd.DataFrame:
    if not isinstance(baselines, pd.DataFrame):
        raise ValueError(f"baselines must be a DataFrame of confidences (one column per baseline), got "
                         f"{type(baselines).__name__}")
    if len(baselines) != n:
        raise ValueError(f"baselines must have one row per trajectory ({n}), got {len(baselines)}")
    return baselines


def _add_signals(out: EvalInputs, base: pd.DataFrame, signals) -> None:
    """The single-signal confidences the baseline methods read, from ``base`` (one column per signal); a signal
    that cannot be evaluated goes to ``out.missing`` with the reason."""
    for key in sorted(signals):
        values = base[key].to_numpy(dtype=np.float64) if key in base else None
        why = _signal_problem(key, values, out.y)
        out.missing.pop(key, None)
        if why:
            out.missing[key] = why
        else:
            out.columns[key] = values
            finite = int(np.isfinite(values).sum())
            if finite < out.n:
                out.partial[key] = finite


def _signal_problem(key: str, values, y: np.ndarray) -> str | None:
    """Why a single-signal confidence cannot be evaluated (absent, or missing for some trajectories). The
    verbalized confidence is evaluated on the subset that carries it when that subset is evaluable."""
    n = len(y)
    finite = 0 if values is None else int(np.isfinite(values).sum())
    if key == "Verbalized":
        if values is None or finite == 0:
            return "no trajectory carries a verbalized confidence"
        why = None if finite == n else label_problem(y[np.isfinite(values)])
        return None if why is None else f"only {finite} of {n} trajectories carry a verbalized confidence: {why}"
    if values is None:
        return f"the traces give no {key} confidence"
    return None if finite == n else "some trajectories have no tokens"


def _from_matrix(data, labels, needed, profile, top_k, fail) -> EvalInputs:
    n = len(data) if hasattr(data, "__len__") else 0
    y = _checked_labels(labels, n, fail)
    values, names, ids, profile, top_k = _matrix_parts(data, profile, top_k)
    X = np.asarray(values, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"data must be a TraceSet or a 2-D feature matrix with {n} rows, got shape {X.shape}")
    if names is None:
        from ..features import FEATURE_NAMES

        names = list(FEATURE_NAMES) if X.shape[1] == len(FEATURE_NAMES) else [f"x{i}" for i in range(X.shape[1])]
    if ids is None:
        ids = np.array([str(i) for i in range(n)], dtype=object)
    return EvalInputs(y=y, ids=ids, columns={FEATURES: X}, missing={k: NOT_TRACES for k in needed - {FEATURES}},
                      feature_names=names, profile=profile, top_k=top_k)


def _matrix_parts(data, profile, top_k):
    """(values, names or None, ids or None, profile, top_k) of a FeatureMatrix, DataFrame or array. A
    FeatureMatrix knows its profile and top-k; one given here that differs is an error."""
    from ..features import FeatureMatrix

    if isinstance(data, FeatureMatrix):
        for param, given, own in (("profile", profile, data.profile), ("top_k", top_k, data.top_k)):
            if given is not None and given != own:
                raise ValueError(f"{param}={given!r} was given, but data is a FeatureMatrix computed with "
                                 f"profile {data.profile!r} and top_k {data.top_k}")
        return data.values, list(data.names), data.ids, data.profile, int(data.top_k)
    profile = DEFAULT_PROFILE if profile is None else profile
    top_k = DEFAULT_TOP_K if top_k is None else top_k
    if isinstance(data, pd.DataFrame):
        return data.to_numpy(dtype=np.float64), [str(c) for c in data.columns], None, profile, top_k
    return data, None, None, profile, top_k


def seed_list(seeds) -> list[int]:
    """The seeds of ``seeds`` repeats (42, 43, ...) or the given seeds, checked (the experiments share it)."""
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds must be a positive number of repeats or a list of seeds, got {seeds!r}")
        return [42 + i for i in range(int(seeds))]
    try:
        out = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise ValueError(f"seeds must be a positive number of repeats or a list of seeds, got {seeds!r}") from None
    if not out:
        raise ValueError("seeds must not be empty")
    return out


def _outer_folds(y: np.ndarray, n_splits: int, notes: list) -> int:
    """``n_splits``, or fewer when the rarer outcome has fewer trajectories (stratified CV needs one a fold)."""
    n_pos = int(y.sum())
    rarer = min(n_pos, len(y) - n_pos)
    if rarer < n_splits:
        notes.append(f"only {rarer} of the rarer outcome: using {rarer} outer folds")
        return rarer
    return n_splits


def _runnable(chosen: list[Method], inputs: EvalInputs, n_splits: int, notes: list) -> tuple[list[Method], dict]:
    """The methods that can run, and the reason of each one that cannot (also written to ``notes``)."""
    skipped: dict[str, str] = {}
    for m in chosen:
        why = m.unavailable(inputs.missing)
        if why is None and m.input not in inputs.columns:
            why = f"its input {m.input!r} is not available"
        rows = inputs.partial.get(m.input, inputs.n)
        smallest_train = rows - -(-rows // n_splits)
        if why is None and smallest_train < m.min_train:
            why = (f"it needs at least {m.min_train} runs in every training fold, the smallest has "
                   f"{smallest_train}")
        if why:
            skipped[m.name] = why
            notes.append(f"{m.name}: not evaluated, {why}")
    return [m for m in chosen if m.name not in skipped], skipped


# ------------------------------------------------------------------ the protocol
def evaluate(data, labels=None, *, seeds: int | Sequence[int] = 3, n_splits: int = 5, profile: str | None = None,
             top_k: int | None = None, alphas: Sequence[float] = DEFAULT_ALPHAS, inner_folds: int = 5,
             methods: Sequence[str | Method] | None = None, max_iter: int = 1000,
             progress: Callable[[int, int, str], None] | None = None, n_jobs: int | None = None,
             baselines: pd.DataFrame | None = None) -> EvaluationResult:
    """Honest nested cross-validation of HTC against the baselines (DESIGN.md section 4).

    Outer stratified folds; alpha is chosen by an inner CV on each outer training part only; ECE, Brier and
    AUROC are computed on the pooled out-of-fold predictions of each repeat (mean and std over repeats).

    Parameters
    ----------
    data : TraceSet, FeatureMatrix, DataFrame or array
        A TraceSet (features and baselines are computed here) or features (then only the methods on
        features run, unless ``baselines`` is given).
    labels : array-like, optional
        0/1 labels; default the trace set's success labels.
    seeds : int or sequence of int, default=3
        Repeats (seeds 42, 43, ...) or the seeds themselves.
    n_splits : int, default=5
        Outer folds.
    profile, top_k : str, int, optional
        The features' token-confidence profile and top-k (default ``"paper"`` / 5; a FeatureMatrix brings
        its own).
    alphas : sequence of float, default=DEFAULT_ALPHAS
        HTC's candidate alphas.
    inner_folds : int, default=5
        Folds of the inner alpha selection.
    methods : sequence of str or Method, optional
        Registered method names (``htc_core.calibration.methods.METHODS``, default all) and/or ``Method``
        objects.
    max_iter : int, default=1000
        Iteration cap of HTC's solver.
    progress : callable, optional
        ``progress(done, total, message)``, called after every outer fold.
    n_jobs : int, optional
        Outer folds fitted at once in threads (None = 1, -1 = every core); the result does not depend on it.
    baselines : DataFrame, optional
        The raw single-signal confidences (as ``baseline_confidences`` returns, e.g. kept in a store).

    Returns
    -------
    EvaluationResult
        ``table()``, ``summary``, ``per_fold``, out-of-fold predictions, ``to_json()``.

    Raises
    ------
    EvaluationError
        With a readable message on unusable input.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
    ...                       methods=["HTC-Reduced", "GlobalTrace-TP"])
    >>> result.methods
    ['HTC-Reduced', 'GlobalTrace-TP']
    >>> 0 <= result.summary["HTC-Reduced"]["ece"]["mean"] <= 1
    True
    """
    seed_values = seed_list(seeds)
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 2:
        raise ValueError(f"n_splits must be an integer >= 2, got {n_splits!r}")
    chosen = resolve_methods(methods)

    def fail(reason: str) -> NoReturn:
        raise EvaluationError(f"cannot evaluate ({', '.join(m.name for m in chosen)}): {reason}")

    inputs = prepare_inputs(data, labels, {m.input for m in chosen}, profile=profile, top_k=top_k, fail=fail,
                            baselines=baselines)
    notes: list[str] = []
    n_splits = _outer_folds(inputs.y, n_splits, notes)
    run, skipped = _runnable(chosen, inputs, n_splits, notes)
    for key, k in inputs.partial.items():
        names = [m.name for m in run if m.input == key]
        if names:
            notes.append(f"{', '.join(names)}: evaluated on the {k:,} of {inputs.n:,} trajectories that carry "
                         f"{key} (same folds, the others left out); the other methods on all {inputs.n:,}")
    if not run:
        fail("; ".join(f"{m}: {w}" for m, w in skipped.items()) or "no method selected")
    settings = dict(alphas=alphas, inner_folds=inner_folds, max_iter=max_iter, profile=inputs.profile,
                    top_k=inputs.top_k)
    cv = cross_validate(run, inputs, seed_values, n_splits, settings, progress, n_jobs=n_jobs)
    summary, per_fold, selected, n_by_method = summarize(run, inputs, cv)
    return EvaluationResult(n=inputs.n, positive_rate=float(inputs.y.mean()), seeds=seed_values, n_splits=n_splits,
                            profile=inputs.profile, top_k=inputs.top_k, methods=[m.name for m in run],
                            summary=summary, per_fold=per_fold, oof_all=cv.oof,
                            ids=np.asarray(inputs.ids, dtype=object), labels=inputs.y, folds=cv.folds,
                            selected_counts=selected, notes=notes, skipped=skipped,
                            weights={m: np.vstack(w) for m, w in cv.weights.items()}, n_by_method=n_by_method,
                            fold_models={m: [f[k] for k in sorted(f)] for m, f in cv.fold_models.items()})
