"""The adaptation curve: zero-shot GAC, from-scratch HTC and the GAC adapted to N labels of a held-out group.

:func:`adapt_traces` fits an adapted model on labeled runs (the prior's sub-model for the runs' kind, see
:mod:`.adapt`). :func:`adaptation_curve` measures, for a target group of a labeled TraceSet and for each
label budget N (10, 20, 50, 100, 200): N runs of the target drawn at random (stratified by outcome), the
rest of the target as the test set, repeated over seeds; three methods on the same draws:

- ``GAC zero-shot``: the prior, never refitted;
- ``HTC from scratch``: HTC-Reduced fitted on the N runs alone (alpha by inner CV);
- ``GAC adapted``: ``HTCCalibrator(prior=GAC)`` fitted on the N runs.

The prior never saw the target group: by default it is a GAC fitted inside the function on the *other* groups
of the input (leave-one-group-out; the shipped GAC was trained on every dataset the repository holds, so it
cannot be the prior for one of them). ``prior=`` a shipped name or file is refused when that model's card
lists the target among its training datasets.

:func:`htc_from_scratch` has the learning-curve signature ``fit_predict(train_ts, y_train, test_ts, seed) ->
probabilities``; ``gac_zero_shot`` and ``gac_adapted`` (same signature) live in :mod:`htc_core.experiments.gac_entries`,
because they read the shipped GAC's training files (the calibration layer reads no files).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..calibration.calibrators import HTCCalibrator
from ..calibration.general import fit_general
from ..calibration.results import METRICS
from .grouping import finite_or_none, has_alternatives, mean_std, score_metrics

__all__ = ["adapt_traces", "profile_for", "adaptation_curve", "AdaptCurveResult", "compare_on_labels", "LabelComparison",
           "htc_from_scratch", "DEFAULT_SIZES", "METHODS"]

DEFAULT_SIZES = (10, 20, 50, 100, 200)
METHODS = ("GAC zero-shot", "HTC from scratch", "GAC adapted")
#: a budget is measured only when at least this many target runs are left to test on
MIN_TEST = 30


def _load_prior(prior):
    if isinstance(prior, (str, Path)):
        from ..calibration.models import load_model

        return load_model(prior)
    return prior


def profile_for(prior, ts) -> tuple[str, int]:
    """The features the prior's sub-model for these runs uses (runs with alternatives -> its paper model)."""
    subs = getattr(prior, "models", None)
    if isinstance(subs, dict):
        m = subs.get("with_alternatives")
        if m is not None and len(ts) and has_alternatives(ts).all():
            return m.profile_, m.top_k_
        m = subs["without_alternatives"]
        return m.profile_, m.top_k_
    return prior.profile_, prior.top_k_


def adapt_traces(ts, prior="gac", *, y=None, random_state: int | None = 42, **params) -> HTCCalibrator:
    """An HTC calibrator adapted from a prior to the labeled runs of a trace set.

    A GAC prior gives its with-alternatives model when every run lists top-k alternatives, else its
    without-alternatives model (which scores any run).

    Parameters
    ----------
    ts : TraceSet
        The runs (unlabeled ones are left out).
    prior : HTCCalibrator, GeneralCalibrator, str or path, default="gac"
        The prior.
    y : array-like, optional
        Labels overriding the runs'.
    random_state : int or None, default=42
        Seed of the inner CV.
    **params
        Further :class:`~htc_core.HTCCalibrator` parameters.

    Returns
    -------
    HTCCalibrator
        Fitted; ``adaptation_`` holds the choice and the inner-CV grid.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/")
    >>> model = htc.adapt_traces(ts.take(list(range(40))), "gac")
    >>> model.profile_, "choice" in model.adaptation_
    ('paper', True)
    """
    from ..features import extract

    prior = _load_prior(prior)
    if y is None:
        ts = ts.labeled()
        y = ts.labels
    profile, top_k = profile_for(prior, ts)
    fm = extract(ts, profile=profile, top_k=top_k)
    return HTCCalibrator(prior=prior, random_state=random_state, **params).fit(fm, y, meta=ts.meta)


# ------------------------------------------------- learning-curve entries
def htc_from_scratch(train_ts, y_train, test_ts, seed) -> np.ndarray:
    """Learning-curve entry: HTC-Reduced fitted on (``train_ts``, ``y_train``) alone."""
    from ..features import extract

    m = HTCCalibrator(random_state=int(seed)).fit(extract(train_ts), np.asarray(y_train, float))
    return m.predict_proba(extract(test_ts))[:, 1]


# ------------------------------------------------------------- the curve
@dataclass
class AdaptCurveResult:
    """Per label budget and method: mean ± std of ECE, Brier, AUROC on the target's untouched runs."""

    group: str
    target: str
    n_target: int
    positive_rate: float
    prior: str
    sizes: list
    seeds: list
    rows: pd.DataFrame            # size, method, n_repeats, <metric>_mean, <metric>_std
    choices: dict                 # size -> {adapted model's choice: count}
    seconds: float
    notes: list = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        return self.rows.copy()

    def metric(self, name: str = "ece") -> pd.DataFrame:
        """size x method: mean of ``name``."""
        return self.rows.pivot(index="size", columns="method", values=f"{name}_mean")[list(METHODS)]

    def to_dict(self) -> dict:
        rows = [{"size": int(r["size"]), "method": r["method"], "n_repeats": int(r["n_repeats"]),
                 **{m: {"mean": finite_or_none(r[f"{m}_mean"]), "std": finite_or_none(r[f"{m}_std"])} for m in METRICS}}
                for r in self.rows.to_dict("records")]
        return {"experiment": "adaptation-curve", "group": self.group, "target": self.target,
                "n_target": self.n_target, "positive_rate": self.positive_rate, "prior": self.prior,
                "sizes": list(self.sizes), "seeds": list(self.seeds), "rows": rows,
                "adapted_choices": {str(k): v for k, v in self.choices.items()}, "seconds": round(self.seconds, 2),
                "notes": list(self.notes)}

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    def table(self) -> str:
        out = [f"adaptation curve on {self.group} = {self.target} ({self.n_target} runs, success rate "
               f"{self.positive_rate:.3f}); prior: {self.prior}; N labeled target runs, the rest tested; mean ± std "
               f"over seeds {', '.join(map(str, self.seeds))}",
               f"{'N':>4}  {'method':<17} {'ECE':>15} {'Brier':>15} {'AUROC':>15}"]
        for r in self.rows.to_dict("records"):
            out.append(f"{int(r['size']):>4}  {r['method']:<17} " + " ".join(
                f"{r[f'{m}_mean']:>7.3f} ± {r[f'{m}_std']:.3f}" for m in METRICS))
        for size, ch in self.choices.items():
            out.append(f"adapted model's choice at N={size}: " + ", ".join(f"{k} x{v}" for k, v in ch.items()))
        out.append(f"took {self.seconds:.1f} s")
        return "\n".join(out + [f"note: {n}" for n in self.notes])


def _target_rows(ts, group: str, target: str) -> tuple[np.ndarray, np.ndarray]:
    if group not in ts.meta.columns:
        raise ValueError(f"group must be a metadata column of the runs ({', '.join(map(str, ts.meta.columns))}), "
                         f"got {group!r}")
    g = ts.meta[group].astype(str).to_numpy()
    if target not in set(g):
        raise ValueError(f"target {target!r} is not a value of {group!r} in these runs "
                         f"(values: {', '.join(sorted(set(g)))})")
    return np.flatnonzero(g == target), np.flatnonzero(g != target)


def _prior_for_curve(ts, group, target, others, prior, notes):
    if prior is None:
        pool = ts.take(others)
        if len(set(pool.labels)) < 2:
            raise ValueError(f"the other {group} values hold fewer than 2 outcomes; a GAC cannot be fitted on them")
        notes.append(f"prior: a GAC fitted here on the {len(others)} runs of the other {group} values "
                     "(leave-one-group-out: no target run reaches it)")
        return fit_general(pool, variant="reduced", name=f"GAC without {target}")
    model = _load_prior(prior)
    card = getattr(model, "card", {}) or {}
    trained = {str(r.get(group)) for r in card.get("training_data", {}).get("by_dataset_and_model", [])}
    if target in trained:
        raise ValueError(f"the prior {prior} was trained on {group} {target!r}; use the default prior (a GAC fitted "
                         "on the other groups of the input) for an honest curve")
    return model


def adaptation_curve(ts, *, group: str = "dataset", target: str, sizes: Sequence[int] = DEFAULT_SIZES,
                     seeds: int = 5, prior=None,
                     progress: Callable[[int, int, str], None] | None = None) -> AdaptCurveResult:
    """GAC zero-shot vs HTC from scratch vs GAC adapted, at each label budget, on the target group's runs.

    Parameters
    ----------
    ts : TraceSet
        Labeled runs of several groups.
    group : str, default="dataset"
        The grouping column.
    target : str
        The group adapted to (the prior is refitted without it when it was trained on it).
    sizes : sequence of int, default=(10, 20, 50, 100, 200)
        Label budgets.
    seeds : int, default=5
        Repeats.
    prior : optional
        The prior (default: the shipped GAC).
    progress : callable, optional
        ``progress(done, total, message)``.

    Returns
    -------
    AdaptCurveResult
        Per budget and method: mean and std of ECE, Brier, AUROC on the target's untouched runs.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load(["sample_runs/units/", "sample_runs/facts/"])
    >>> curve = htc.adaptation_curve(ts, target="units", sizes=(20,), seeds=1)
    >>> curve.rows["method"].tolist()
    ['GAC zero-shot', 'HTC from scratch', 'GAC adapted']
    """
    from sklearn.model_selection import StratifiedShuffleSplit

    from ..features import extract

    t0 = time.perf_counter()
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise ValueError(f"seeds must be a positive integer, got {seeds!r}")
    sizes = sorted({int(s) for s in sizes})
    if not sizes or sizes[0] < 4:
        raise ValueError(f"sizes must be integers >= 4, got {sizes!r}")
    ts = ts.labeled()
    rows_t, others = _target_rows(ts, group, str(target))
    notes: list = []
    gac = _prior_for_curve(ts, group, str(target), others, prior, notes)
    tgt = ts.take(rows_t)
    y = tgt.labels
    p0 = gac.predict_proba_traces(tgt)[:, 1]
    profile, top_k = profile_for(gac, tgt)
    fm = extract(tgt, profile=profile, top_k=top_k)
    seed_values = [42 + i for i in range(int(seeds))]
    usable = [n for n in sizes if len(y) - n >= MIN_TEST]
    if len(usable) < len(sizes):
        notes.append(f"budgets {[n for n in sizes if n not in usable]} left out: fewer than {MIN_TEST} target runs "
                     "would remain to test on")
    out, choices = [], {}
    for i, n in enumerate(usable):
        per = {m: [] for m in METHODS}
        choices[n] = {}
        for seed in seed_values:
            tr, te = next(StratifiedShuffleSplit(n_splits=1, train_size=n, random_state=seed).split(fm.values, y))
            per["GAC zero-shot"].append(score_metrics(y[te], p0[te]))
            try:
                m = HTCCalibrator(random_state=seed).fit(fm.take(tr), y[tr])
                per["HTC from scratch"].append(score_metrics(y[te], m.predict_proba(fm.take(te))[:, 1]))
            except ValueError as e:   # fewer than 2 runs of an outcome among the N
                notes.append(f"N={n}, seed {seed}: HTC from scratch not fitted ({e})")
            a = HTCCalibrator(prior=gac, random_state=seed).fit(fm.take(tr), y[tr])
            per["GAC adapted"].append(score_metrics(y[te], a.predict_proba(fm.take(te))[:, 1]))
            choices[n][a.adaptation_["choice"]] = choices[n].get(a.adaptation_["choice"], 0) + 1
        for meth in METHODS:
            cell = {k: mean_std([x[k] for x in per[meth]]) if per[meth] else {"mean": np.nan, "std": np.nan}
                    for k in METRICS}
            out.append({"size": n, "method": meth, "n_repeats": len(per[meth]),
                        **{f"{k}_{s}": cell[k][s] for k in METRICS for s in ("mean", "std")}})
        if progress is not None:
            progress(i + 1, len(usable), f"N={n}")
    return AdaptCurveResult(group=group, target=str(target), n_target=len(y), positive_rate=float(y.mean()),
                            prior=getattr(gac, "name", str(prior)), sizes=usable, seeds=seed_values,
                            rows=pd.DataFrame(out), choices=choices, seconds=time.perf_counter() - t0, notes=notes)


# ------------------------------------------------- the labels a user has
@dataclass
class LabelComparison:
    """Out-of-fold confidences of the three methods on the labeled runs a user has (the dashboard's section)."""

    n: int
    positive_rate: float
    prior: str
    n_folds: int
    labels: np.ndarray
    oof: dict                     # method -> out-of-fold confidence [n]
    metrics: pd.DataFrame         # method, ece, brier, auroc
    choice: str                   # the adapted model's choice when fitted on all n runs
    model: dict                   # that adapted model's JSON object
    trained_on_these: list        # datasets of these runs the prior was trained on (its numbers are optimistic)
    notes: list = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        return self.metrics.copy()

    def to_dict(self) -> dict:
        return {"n": self.n, "positive_rate": self.positive_rate, "prior": self.prior, "n_folds": self.n_folds,
                "metrics": self.metrics.to_dict("records"), "choice": self.choice,
                "trained_on_these": list(self.trained_on_these), "notes": list(self.notes)}


def compare_on_labels(ts, prior="gac", *, folds: int = 5, seed: int = 42) -> LabelComparison:
    """Zero-shot prior, HTC-Reduced from scratch and the adapted prior, each scored by stratified
    cross-validation on the labeled runs of ``ts`` (folds: at most ``folds``, as many as the smaller outcome
    allows); then the adapted model fitted on all of them. Needs 2 runs of each outcome."""
    from sklearn.model_selection import StratifiedKFold

    from ..features import extract

    name = prior if isinstance(prior, str) else getattr(prior, "name", "prior")
    gac = _load_prior(prior)
    ts = ts.labeled()
    y = ts.labels
    n_pos = int(y.sum())
    k = int(min(folds, n_pos, len(y) - n_pos))
    if k < 2:
        raise ValueError(f"comparing needs at least 2 successes and 2 failures among the labeled runs, got {n_pos} "
                         f"and {len(y) - n_pos}")
    profile, top_k = profile_for(gac, ts)
    fm = extract(ts, profile=profile, top_k=top_k)
    oof = {m: np.full(len(y), np.nan) for m in METHODS}
    oof["GAC zero-shot"] = gac.predict_proba_traces(ts)[:, 1]
    notes = []
    for tr, te in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(fm.values, y):
        try:
            m = HTCCalibrator(random_state=seed).fit(fm.take(tr), y[tr])
            oof["HTC from scratch"][te] = m.predict_proba(fm.take(te))[:, 1]
        except ValueError as e:
            notes.append(f"HTC from scratch not fitted on a fold: {e}")
        a = HTCCalibrator(prior=gac, random_state=seed).fit(fm.take(tr), y[tr])
        oof["GAC adapted"][te] = a.predict_proba(fm.take(te))[:, 1]
    rows = []
    for meth, p in oof.items():
        ok = np.isfinite(p)
        rows.append({"method": meth, **(score_metrics(y[ok], p[ok]) if ok.all() else
                                        {"ece": np.nan, "brier": np.nan, "auroc": np.nan})})
    final = HTCCalibrator(prior=gac, random_state=seed).fit(fm, y, meta=ts.meta)
    card = getattr(gac, "card", {}) or {}
    trained = {str(r.get("dataset")) for r in card.get("training_data", {}).get("by_dataset_and_model", [])}
    mine = set(ts.meta["dataset"].dropna().astype(str)) if "dataset" in ts.meta.columns else set()
    return LabelComparison(n=len(y), positive_rate=float(y.mean()), prior=str(name), n_folds=k, labels=y, oof=oof,
                           metrics=pd.DataFrame(rows), choice=final.adaptation_["choice"], model=final.to_dict(),
                           trained_on_these=sorted(mine & trained), notes=notes)
