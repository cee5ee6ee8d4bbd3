"""The honest evaluation protocol (DESIGN.md section 4).

Outer stratified K-fold CV (default 5), repeated over seeds 42, 43, ...; in
every outer fold HTC-Full / HTC-Reduced choose alpha by inner stratified CV on
the outer-training part only, and each baseline's temperature is fitted on the
outer-training part only. Every method uses the same folds. Each repeat gives
one out-of-fold (OOF) prediction per trajectory; the headline ECE / Brier /
AUROC are computed on the pooled OOF predictions of each repeat and reported
as mean and std (ddof=1) over repeats. Per-fold values stay in the result.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .baselines import RAW_BASELINES, TemperatureScaling, baseline_confidences
from .calibrators import DEFAULT_ALPHAS, HTCCalibrator
from .metrics import _fast_auroc, _fast_brier, _fast_ece

__all__ = ["evaluate", "EvaluationResult", "EvaluationError", "METRICS", "MIN_TRAJECTORIES", "MIN_PER_CLASS"]

METRICS = ("ece", "brier", "auroc")
MIN_TRAJECTORIES = 10
MIN_PER_CLASS = 5
MIN_FIT_PER_CLASS = 2  # HTCCalibrator.fit: at least 2 successes and 2 failures
HTC_METHODS = ("HTC-Full", "HTC-Reduced")


class EvaluationError(ValueError):
    """The input cannot be evaluated; the message says which methods and why."""


@dataclass
class EvaluationResult:
    n: int
    positive_rate: float
    seeds: list[int]
    n_splits: int
    profile: str
    top_k: int
    methods: list[str]
    summary: dict                   # method -> metric -> {"mean", "std"}
    per_fold: pd.DataFrame          # method, seed, fold, n_test, ece, brier, auroc, n_features, alpha, temperature
    oof_all: dict                   # method -> [n_repeats, n] OOF predictions
    ids: np.ndarray
    labels: np.ndarray
    folds: np.ndarray               # [n_repeats, n] outer fold of each trajectory
    selected_counts: dict = field(default_factory=dict)   # HTC method -> Series(feature -> times selected)
    notes: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)           # method -> reason

    @property
    def oof(self) -> dict:
        """Out-of-fold predictions of the first repeat, per method."""
        return {m: v[0] for m, v in self.oof_all.items()}

    def oof_frame(self) -> pd.DataFrame:
        """First-repeat OOF predictions, one row per trajectory."""
        df = pd.DataFrame({"id": self.ids, "success": self.labels, "fold": self.folds[0]})
        for m, v in self.oof_all.items():
            df[m] = v[0]
        return df

    def to_dict(self) -> dict:
        def num(x):
            return None if x is None or not np.isfinite(x) else float(x)

        methods = {m: {k: {"mean": num(v["mean"]), "std": num(v["std"])} for k, v in self.summary[m].items()}
                   for m in self.methods}
        return {"n": int(self.n), "positive_rate": float(self.positive_rate), "methods": methods}

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """Plain-text table: methods x ECE, Brier, AUROC (mean +- std), features kept."""
        rows = [("method", "ECE", "Brier", "AUROC", "features")]
        for m in self.methods:
            s = self.summary[m]
            cells = [m]
            for k in METRICS:
                cells.append(f"{s[k]['mean']:.3f} ± {s[k]['std']:.3f}")
            nf = s.get("n_features")
            cells.append(f"{nf['mean']:.1f} ± {nf['std']:.1f}" if nf else "1")
            rows.append(tuple(cells))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        head = (f"n = {self.n}, success rate = {self.positive_rate:.3f}, {self.n_splits}-fold CV x "
                f"{len(self.seeds)} repeat(s) (seeds {', '.join(map(str, self.seeds))}); "
                "metrics on pooled out-of-fold predictions, mean ± std over repeats")
        out = [head, *lines]
        out += [f"note: {t}" for t in self.notes]
        return "\n".join(out)


def label_problem(labels, *, for_evaluation: bool = True) -> str | None:
    """Why these labels cannot be evaluated (nested CV, ``for_evaluation=True``) or fitted
    (``for_evaluation=False``), or None when they can. NaN entries are unlabeled runs and are left out,
    as the dashboard leaves them out. The one place this rule lives: the pages and the CLI ask here."""
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


def merge_results(results: Sequence[EvaluationResult]) -> EvaluationResult:
    """One result holding the methods of several evaluations of the same trajectories with the same seeds
    (hence the same folds), e.g. the baselines and each HTC variant computed separately. HTC methods first."""
    import dataclasses

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
        selected_counts=merged("selected_counts"),
        notes=list(dict.fromkeys(n for r in results for n in r.notes)),
        skipped={k: v for k, v in merged("skipped").items() if k not in order})


def _seed_list(seeds) -> list[int]:
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


def _metrics(y: np.ndarray, p: np.ndarray) -> dict:
    P = p[None, :]
    return {"ece": float(_fast_ece(y, P)[0]), "brier": float(_fast_brier(y, P)[0]),
            "auroc": float(_fast_auroc(y, P)[0])}


def _mean_std(values) -> dict:
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0}


def evaluate(data, labels=None, *, seeds: int | Sequence[int] = 3, n_splits: int = 5, profile: str = "paper",
             top_k: int = 5, alphas: Sequence[float] = DEFAULT_ALPHAS, inner_folds: int = 5,
             methods: Sequence[str] | None = None, max_iter: int = 1000,
             progress: Callable[[int, int, str], None] | None = None) -> EvaluationResult:
    """Run the DESIGN.md section 4 protocol.

    ``data`` is a ``TraceSet`` (features and baselines are computed here) or a
    feature matrix / ``FeatureMatrix`` (then only HTC-Full and HTC-Reduced).
    ``labels`` default to the trace set's success labels. ``progress(done,
    total, message)`` is called after every outer fold.
    Raises :class:`EvaluationError` with a readable message on unusable input.
    """
    from ..features import extract
    from ..traces import TraceSet

    seed_list = _seed_list(seeds)
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 2:
        raise ValueError(f"n_splits must be an integer >= 2, got {n_splits!r}")
    notes: list[str] = []
    skipped: dict[str, str] = {}
    baselines = None
    if isinstance(data, TraceSet):
        ts = data
        if labels is None:
            labels = ts.labels
        ids = ts.ids
    else:
        ts = None
        ids = getattr(data, "ids", None)
    y = np.asarray(labels, dtype=np.float64).reshape(-1) if labels is not None else None
    n = len(ts) if ts is not None else (len(data) if hasattr(data, "__len__") else 0)
    all_methods = list(HTC_METHODS) + [m for b in RAW_BASELINES for m in (b, b + "+Temp")]

    def fail(reason: str):
        raise EvaluationError(f"cannot evaluate ({', '.join(all_methods)}): {reason}")

    if y is None:
        fail("no success labels were given")
    if len(y) != n:
        raise ValueError(f"labels must have one entry per trajectory ({n}), got {len(y)}")
    n_unlab = int(np.isnan(y).sum())
    if n_unlab:
        fail(f"{n_unlab} of {n} trajectories have no success label; evaluation needs every trajectory "
             "labeled (drop the unlabeled ones, e.g. trace_set.labeled())")
    if not np.all((y == 0) | (y == 1)):
        fail("labels must be 0/1 (success)")
    n_pos = int(y.sum())
    n_neg = n - n_pos
    if n < MIN_TRAJECTORIES:
        fail(f"only {n} labeled trajectories; at least {MIN_TRAJECTORIES} are needed")
    if n_pos == 0 or n_neg == 0:
        fail(f"all {n} trajectories are {'successes' if n_neg == 0 else 'failures'}; AUROC and the "
             "calibrators need both outcomes")
    if min(n_pos, n_neg) < MIN_PER_CLASS:
        fail(f"only {min(n_pos, n_neg)} {'successes' if n_pos < n_neg else 'failures'}; at least "
             f"{MIN_PER_CLASS} of each outcome are needed for {n_splits}-fold stratified CV")
    if min(n_pos, n_neg) < n_splits:
        notes.append(f"only {min(n_pos, n_neg)} of the rarer outcome: using {min(n_pos, n_neg)} outer folds")
        n_splits = min(n_pos, n_neg)

    # features and raw baselines -------------------------------------------------
    if ts is not None:
        fm = extract(ts, profile=profile, top_k=top_k)
        X = fm.values
        names = list(fm.names)
        baselines = baseline_confidences(ts, profile=profile, top_k=top_k)
        if "Verbalized" in baselines:
            v = baselines["Verbalized"].to_numpy()
            if np.isfinite(v).all():
                all_methods.append("Verbalized")
            else:
                skipped["Verbalized"] = (f"only {int(np.isfinite(v).sum())} of {n} trajectories carry a "
                                         "verbalized confidence")
        else:
            skipped["Verbalized"] = "no trajectory carries a verbalized confidence"
        for b in RAW_BASELINES:
            if not np.isfinite(baselines[b].to_numpy()).all():
                for m in (b, b + "+Temp"):
                    skipped[m] = "some trajectories have no tokens"
    else:
        values = data.values if hasattr(data, "values") and hasattr(data, "profile") else data
        if isinstance(values, pd.DataFrame):
            names = [str(c) for c in values.columns]
            values = values.to_numpy(dtype=np.float64)
        else:
            names = list(getattr(data, "names", [])) or None
        X = np.asarray(values, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != n:
            raise ValueError(f"data must be a TraceSet or a 2-D feature matrix with {n} rows, got shape {X.shape}")
        for b in RAW_BASELINES:
            for m in (b, b + "+Temp"):
                skipped[m] = "baselines need the token traces (a TraceSet), not a feature matrix"
        skipped["Verbalized"] = "baselines need the token traces (a TraceSet), not a feature matrix"
    if names is None:
        from ..features import FEATURE_NAMES

        names = list(FEATURE_NAMES) if X.shape[1] == len(FEATURE_NAMES) else [f"x{i}" for i in range(X.shape[1])]
    if not np.isfinite(X).all():
        bad_rows = np.flatnonzero(~np.isfinite(X).all(axis=1))
        for m in HTC_METHODS:
            skipped[m] = f"{len(bad_rows)} trajectories have non-finite features (e.g. row {bad_rows[0]})"
    if ids is None:
        ids = np.array([str(i) for i in range(n)], dtype=object)

    run = [m for m in all_methods if m not in skipped]
    if methods is not None:
        unknown = [m for m in methods if m not in all_methods + ["Verbalized"]]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; valid methods: {all_methods}")
        run = [m for m in run if m in methods]
    for m, why in skipped.items():
        if methods is None or m in methods:
            notes.append(f"{m}: not evaluated, {why}")
    if not run:
        fail("; ".join(f"{m}: {w}" for m, w in skipped.items()) or "no method selected")

    # the protocol ----------------------------------------------------------------
    from sklearn.model_selection import StratifiedKFold

    try:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(limits=1, user_api="blas")
    except Exception:  # pragma: no cover - threadpoolctl ships with scikit-learn
        limiter = None
    R = len(seed_list)
    oof = {m: np.full((R, n), np.nan) for m in run}
    folds = np.full((R, n), -1, dtype=np.int64)
    rows: list[dict] = []
    selected = {m: np.zeros(len(names), dtype=np.int64) for m in run if m in HTC_METHODS}
    total = R * n_splits
    done = 0
    yi = y.astype(int)
    try:
        for r, seed in enumerate(seed_list):
            skf = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
            for f, (tr, te) in enumerate(skf.split(X, yi)):
                folds[r, te] = f
                for m in run:
                    extra: dict = {"n_features": np.nan, "alpha": np.nan, "temperature": np.nan}
                    if m in HTC_METHODS:
                        cal = HTCCalibrator(variant="full" if m == "HTC-Full" else "reduced", alphas=alphas,
                                            inner_folds=inner_folds, random_state=seed, max_iter=max_iter,
                                            profile=profile, top_k=top_k)
                        cal.fit(X[tr], y[tr], feature_names=names)
                        p = cal.predict_proba(X[te])[:, 1]
                        nz = cal.coef_[0] != 0
                        selected[m] += nz
                        extra = {"n_features": int(nz.sum()), "alpha": cal.alpha_, "temperature": np.nan}
                    elif m.endswith("+Temp"):
                        c = baselines[m[: -len("+Temp")]].to_numpy()
                        t = TemperatureScaling().fit(c[tr], y[tr])
                        p = t.transform(c[te])
                        extra = {"n_features": 1, "alpha": np.nan, "temperature": t.temperature_}
                    else:
                        p = np.clip(baselines[m].to_numpy()[te], 0.0, 1.0)
                        extra = {"n_features": 1, "alpha": np.nan, "temperature": np.nan}
                    oof[m][r, te] = p
                    rows.append({"method": m, "seed": seed, "fold": f, "n_test": len(te),
                                 **_metrics(y[te], p), **extra})
                done += 1
                if progress is not None:
                    progress(done, total, f"seed {seed}, fold {f + 1}/{n_splits}")
    finally:
        if limiter is not None:
            limiter.restore_original_limits()

    per_fold = pd.DataFrame(rows)
    summary: dict = {}
    for m in run:
        pooled = [_metrics(y, oof[m][r]) for r in range(R)]
        summary[m] = {k: _mean_std([p[k] for p in pooled]) for k in METRICS}
        if m in HTC_METHODS:
            summary[m]["n_features"] = _mean_std(per_fold.loc[per_fold.method == m, "n_features"])
    sel_counts = {m: pd.Series(v, index=names, name="times_selected").sort_values(ascending=False)
                  for m, v in selected.items()}
    return EvaluationResult(n=n, positive_rate=float(y.mean()), seeds=seed_list, n_splits=n_splits, profile=profile,
                            top_k=top_k, methods=run, summary=summary, per_fold=per_fold, oof_all=oof,
                            ids=np.asarray(ids, dtype=object), labels=y, folds=folds, selected_counts=sel_counts,
                            notes=notes, skipped=skipped)
