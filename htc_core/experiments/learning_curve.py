"""Learning curves: HTC-Full / HTC-Reduced next to the learning baselines as the training set grows
(paper figure "Learning Curve Comparison", appendix "Learning-based Baselines").

**Protocol.** For every repeat (seed 42, 43, ...) the labeled runs are split into ``folds`` stratified outer
folds. For every outer fold and every training size n, a stratified subsample of n runs is drawn from the
fold's training part only (seeded by repeat, fold and n; one draw shared by every method), each method is
fitted on it and scores the fold's test runs. The test runs reach the methods **without their labels**
(set to NaN), and no test run is ever in a training subsample. Metrics (ECE, Brier, AUROC) are computed per
(repeat, fold, size, method) on that test fold; the curves are their mean +- std over the ``repeats x folds``
fits (each fit a different training draw, which is the variance a small-data user faces). A size larger
than a fold's training part is clipped to it (with a note).

**Method registry.** Each entry of :data:`CURVE_METHODS` is a :class:`CurveMethod` whose ``fit_predict`` has
ONE signature::

    fit_predict(train_ts: TraceSet, y_train: np.ndarray, test_ts: TraceSet, seed: int) -> np.ndarray

``train_ts`` / ``test_ts`` are ``TraceSet.take`` subsets (test labels are NaN), ``y_train`` the 0/1 labels
of the training runs, ``seed`` the repeat's seed (use it for every random choice); it returns the success
probability of each test run (float array of ``len(test_ts)`` in [0, 1]). The loop knows nothing else about
a method; another one (e.g. "GAC zero-shot", whose ``fit_predict`` ignores the training runs) is added with
``register_curve_method(CurveMethod("GAC zero-shot", fn, ...))`` or passed in ``methods=[...]``.

The built-in entries: HTC-Full / HTC-Reduced (``HTCCalibrator``, profile ``paper``, top-k 5, alpha by inner CV
on the training draw), MLP / XGBoost / GP on the same 48 features, LSTM / Transformer on
:func:`~htc_core.experiments.sequence_models.token_sequences`; every entry computes its inputs from the
TraceSets it is given, so nothing computed on the test runs can reach a fit.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..calibration.results import METRICS
from .curve_methods import CURVE_METHODS, CurveMethod, register_curve_method, resolve_curve_methods

__all__ = ["CurveMethod", "CURVE_METHODS", "register_curve_method", "resolve_curve_methods", "learning_curve",
           "LearningCurveResult", "DEFAULT_SIZES"]

DEFAULT_SIZES = (50, 100, 200, 400)


# ------------------------------------------------------------------ the result
@dataclass
class LearningCurveResult:
    """Learning curves: per-fit rows and their mean ± std by method and training size.

    Made by :func:`learning_curve`.

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per fit: method, size, n_train, seed, fold, n_test, ece, brier, auroc, seconds (fit and
        predict).
    methods : list of str
        The methods, in the tables' order.
    sizes : list of int
        The training sizes, increasing.
    seeds : list of int
        The repeats' seeds.
    folds : int
        Outer folds per repeat.
    n_runs : int
        The labeled runs.
    positive_rate : float
        Their success rate.
    notes : list of str, default []
        Unlabeled runs left out, sizes clipped to a fold's training part.
    predictions : dict, default {}
        (method, size, seed) -> out-of-fold success probabilities over all runs (NaN where not scored).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.learning_curve import learning_curve
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 32 runs
    >>> result = learning_curve(ts, sizes=(10, 16), methods=["HTC-Reduced"], folds=2)
    >>> result.methods, result.sizes, result.seeds, result.n_runs
    (['HTC-Reduced'], [10, 16], [42], 32)
    >>> len(result.rows), result.predictions[("HTC-Reduced", 10, 42)].shape
    (4, (32,))
    """

    rows: pd.DataFrame
    methods: list
    sizes: list
    seeds: list
    folds: int
    n_runs: int
    positive_rate: float
    notes: list = field(default_factory=list)
    # (method, size, seed) -> out-of-fold success probabilities over all runs (NaN where not scored)
    predictions: dict = field(default_factory=dict, repr=False)

    def curves(self) -> pd.DataFrame:
        """The curves: one row per (method, size), mean and std over the repeats x folds fits.

        Returns
        -------
        pandas.DataFrame
            Columns method, size, n_train (mean), n_fits and ``{metric}_mean`` / ``{metric}_std`` for ece,
            brier, auroc and seconds (fit + predict time of one fit); methods in ``methods`` order.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.learning_curve import learning_curve
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 32 runs
        >>> result = learning_curve(ts, sizes=(10, 16), methods=["HTC-Reduced"], folds=2)
        >>> result.curves()[["method", "size", "n_train", "n_fits", "ece_mean", "auroc_mean"]].round(3)
                method  size  n_train  n_fits  ece_mean  auroc_mean
        0  HTC-Reduced    10     10.0       2     0.334       0.417
        1  HTC-Reduced    16     16.0       2     0.415       0.430
        """
        g = self.rows.groupby(["method", "size"], sort=False)
        out = g.agg(n_train=("n_train", "mean"), n_fits=("n_train", "size"),
                    **{f"{m}_{s}": (m, s) for m in (*METRICS, "seconds") for s in ("mean", "std")})
        out = out.reset_index()
        out["method"] = pd.Categorical(out["method"], categories=self.methods, ordered=True)
        out = out.sort_values(["method", "size"]).reset_index(drop=True)
        out["method"] = out["method"].astype(str)
        return out

    def to_frame(self) -> pd.DataFrame:
        """The curves (:meth:`curves`).

        Returns
        -------
        pandas.DataFrame
            One row per (method, size).

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.learning_curve import learning_curve
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 32 runs
        >>> result = learning_curve(ts, sizes=(10, 16), methods=["HTC-Reduced"], folds=2)
        >>> result.to_frame()[["method", "size"]].values.tolist()
        [['HTC-Reduced', 10], ['HTC-Reduced', 16]]
        """
        return self.curves()

    def to_dict(self) -> dict:
        """The curves as JSON-ready values (the per-fit rows and predictions left out; missing numbers as None).

        Returns
        -------
        dict
            Keys experiment ("learning_curve"), n_runs, positive_rate, methods, sizes, seeds, folds, curves (each
            metric as {"mean", "std"}) and notes.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.learning_curve import learning_curve
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 32 runs
        >>> result = learning_curve(ts, sizes=(10, 16), methods=["HTC-Reduced"], folds=2)
        >>> d = result.to_dict()
        >>> d["experiment"], d["curves"][0]["size"], round(d["curves"][0]["auroc"]["mean"], 3)
        ('learning_curve', 10, 0.417)
        """

        def num(x):
            return None if x is None or not np.isfinite(x) else float(x)

        curves = []
        for r in self.curves().to_dict("records"):
            curves.append({"method": r["method"], "size": int(r["size"]), "n_train": float(r["n_train"]),
                           "n_fits": int(r["n_fits"]),
                           **{m: {"mean": num(r[f"{m}_mean"]), "std": num(r[f"{m}_std"])}
                              for m in (*METRICS, "seconds")}})
        return {"experiment": "learning_curve", "n_runs": int(self.n_runs), "positive_rate": float(self.positive_rate),
                "methods": list(self.methods), "sizes": [int(s) for s in self.sizes], "seeds": list(self.seeds),
                "folds": int(self.folds), "curves": curves, "notes": list(self.notes)}

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as a JSON string.

        Parameters
        ----------
        **kwargs
            Passed to :func:`json.dumps` (``indent=2``, ...).

        Returns
        -------
        str
            The JSON text.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.learning_curve import learning_curve
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 32 runs
        >>> result = learning_curve(ts, sizes=(10, 16), methods=["HTC-Reduced"], folds=2)
        >>> import json
        >>> json.loads(result.to_json())["sizes"]
        [10, 16]
        """
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """Plain text: one block per metric (and seconds per fit), methods by training size.

        Returns
        -------
        str
            The blocks, with the protocol in the first line and the notes at the end.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.learning_curve import learning_curve
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 32 runs
        >>> result = learning_curve(ts, sizes=(10, 16), methods=["HTC-Reduced"], folds=2)
        >>> print(result.table())
        learning curves on 32 labeled runs (34% success): 2 outer folds x seeds 42; mean ± std over the 2 fits per
        cell, each on a stratified draw of n training runs
        <BLANKLINE>
        ECE (lower is better)
        method                      n=10               n=16
        HTC-Reduced        0.334 ± 0.208      0.415 ± 0.203
        ...
        """
        c = self.curves()
        out = [f"learning curves on {self.n_runs} labeled runs ({self.positive_rate:.0%} success): {self.folds} "
               f"outer folds x seeds {', '.join(map(str, self.seeds))}; mean ± std over the "
               f"{len(self.seeds) * self.folds} fits per cell, each on a stratified draw of n training runs"]
        for metric in (*METRICS, "seconds"):
            label = {"ece": "ECE (lower is better)", "brier": "Brier (lower is better)",
                     "auroc": "AUROC (higher is better)", "seconds": "seconds per fit (fit + predict)"}[metric]
            out += ["", label, "method".ljust(13) + "".join(f"n={s}".rjust(19) for s in self.sizes)]
            for m in self.methods:
                cells = []
                for s in self.sizes:
                    r = c[(c.method == m) & (c["size"] == s)]
                    cells.append("-" if r.empty else f"{r[f'{metric}_mean'].iloc[0]:.3f} ± {r[f'{metric}_std'].iloc[0]:.3f}")
                out.append(m.ljust(13) + "".join(x.rjust(19) for x in cells))
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)


# ------------------------------------------------------------------ the loop
def _check_sizes(sizes) -> list[int]:
    """The training sizes sorted and unique, each an integer >= 10."""
    try:
        out = sorted({int(s) for s in sizes})
    except (TypeError, ValueError):
        raise ValueError(f"sizes must be training sizes (integers >= 10), got {sizes!r}") from None
    if not out or out[0] < 10:
        raise ValueError(f"sizes must be a non-empty list of training sizes >= 10, got {sizes!r}")
    return out


def _draw(tr: np.ndarray, y: np.ndarray, size: int, seed: int) -> np.ndarray:
    """A stratified draw of ``size`` rows of ``tr`` (every row when size >= len(tr)), at least 2 per class."""
    if size >= len(tr):
        return tr
    rng = np.random.default_rng(seed)
    pos, neg = tr[y[tr] == 1], tr[y[tr] == 0]
    n_pos = int(round(size * len(pos) / len(tr)))
    n_pos = min(len(pos), max(n_pos, 2), size - min(2, len(neg)))
    pick = np.concatenate([rng.choice(pos, n_pos, replace=False), rng.choice(neg, size - n_pos, replace=False)])
    return np.sort(pick)


def learning_curve(data, *, sizes: Sequence[int] = DEFAULT_SIZES, repeats=1, folds: int = 5, methods=None,
                   progress: Callable[[int, int, str], None] | None = None) -> LearningCurveResult:
    """Learning curves: each method's held-out metrics by training size (protocol in the module docstring).

    Parameters
    ----------
    data : TraceSet
        Labeled runs.
    sizes : sequence of int, default=(50, 100, 200, 400)
        Training sizes.
    repeats : int or sequence of int, default=1
        A number (seeds 42, ...) or the seeds.
    folds : int, default=5
        Outer folds.
    methods : sequence of str or CurveMethod, optional
        Entries of ``CURVE_METHODS`` (default: all; the neural baselines need the ``[learning]`` extra).
    progress : callable, optional
        ``progress(done, total, message)`` after each fit.

    Returns
    -------
    LearningCurveResult
        ``to_frame()``, ``to_dict()``, ``table()``.

    Raises
    ------
    ValueError
        If ``data`` is not a TraceSet, or ``sizes``, ``folds`` or ``methods`` is invalid.
    EvaluationError
        If the labels cannot be evaluated (too few runs, fewer than ``folds`` of one outcome).
    MissingExtraError
        If a method needs an optional package that is not installed.

    Examples
    --------
    Any ``fit_predict`` with the contract is a method; a constant shows what a curve is measured against:

    >>> import numpy as np
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.learning_curve import CurveMethod, learning_curve
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 32 runs
    >>> constant = CurveMethod("always 0.4", lambda train_ts, y_train, test_ts, seed: np.full(len(test_ts), 0.4),
    ...                        kind="zero-shot")
    >>> result = learning_curve(ts, sizes=(10,), methods=["HTC-Reduced", constant], folds=2)
    >>> result.curves()[["method", "size", "brier_mean", "auroc_mean"]].round(3)
            method  size  brier_mean  auroc_mean
    0  HTC-Reduced    10       0.358       0.417
    1   always 0.4    10       0.229       0.500
    """
    from sklearn.model_selection import StratifiedKFold

    from ..traces import TraceSet
    from ..calibration.blas_threads import one_blas_thread
    from ..calibration.evaluation import EvaluationError, seed_list, label_problem
    from .grouping import score_metrics

    if not isinstance(data, TraceSet):
        raise ValueError(f"data must be a TraceSet, got {type(data).__name__}")
    sizes_ = _check_sizes(sizes)
    seeds = seed_list(repeats)
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, got {folds!r}")
    run = resolve_curve_methods(methods)
    notes = []
    y_all = data.labels
    if np.isnan(y_all).any():
        notes.append(f"{int(np.isnan(y_all).sum())} unlabeled runs left out")
        data = data.labeled()
    y = data.labels.astype(np.int64)
    why = label_problem(y.astype(np.float64))
    if why or min(np.bincount(y, minlength=2)) < folds:
        raise EvaluationError(f"cannot compute learning curves: {why or f'fewer than {folds} runs of one outcome'}")
    blind = _without_labels(data)
    rows, preds = [], {}
    total, done = len(seeds) * folds * len(sizes_) * len(run), 0
    clipped = set()
    for seed in seeds:
        skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        for f, (tr, te) in enumerate(skf.split(np.zeros((len(y), 1)), y)):
            test_ts = blind.take(te)
            for size in sizes_:
                sub = _draw(tr, y, size, seed * 1_000_003 + f * 1_009 + size)
                if len(sub) < size:
                    clipped.add((size, len(sub)))
                train_ts = data.take(sub)
                for m in run:
                    t0 = time.perf_counter()
                    with one_blas_thread():     # small matrices: BLAS threads spun 6x the time (GP, issue 29)
                        p = np.asarray(m.fit_predict(train_ts, y[sub].copy(), test_ts, int(seed)), dtype=np.float64)
                    dt = time.perf_counter() - t0
                    if p.shape != (len(te),) or not np.all((p >= 0) & (p <= 1)):
                        raise RuntimeError(f"{m.name}: fit_predict must return {len(te)} probabilities in [0, 1], "
                                           f"got shape {p.shape}")
                    preds.setdefault((m.name, size, seed), np.full(len(y), np.nan))[te] = p
                    rows.append({"method": m.name, "size": size, "n_train": len(sub), "seed": seed, "fold": f,
                                 "n_test": len(te), **score_metrics(y[te].astype(np.float64), p), "seconds": dt})
                    done += 1
                    if progress is not None:
                        progress(done, total, f"seed {seed}, fold {f + 1}/{folds}, n={size}, {m.name}")
    for size, n in sorted(clipped):
        notes.append(f"size {size} is larger than some outer training parts: those fits used all {n} runs")
    return LearningCurveResult(rows=pd.DataFrame(rows), methods=[m.name for m in run], sizes=sizes_, seeds=seeds,
                               folds=folds, n_runs=len(y), positive_rate=float(y.mean()), notes=notes,
                               predictions=preds)


def _without_labels(ts):
    """``ts`` with its success column set to NaN: what a method sees of the test runs."""
    from dataclasses import replace

    meta = ts.meta.copy()
    meta["success"] = np.nan
    return replace(ts, meta=meta)
