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
# a budget is measured only when at least this many target runs are left to test on
MIN_TEST = 30


def _load_prior(prior):
    """A shipped model's name or a model file loaded; a model as it is."""
    if isinstance(prior, (str, Path)):
        from ..calibration.models import load_model

        return load_model(prior)
    return prior


def profile_for(prior, ts) -> tuple[str, int]:
    """The feature profile and top-k of the prior's sub-model for these runs.

    A GAC's with-alternatives model when every run lists top-k alternatives, else its without-alternatives
    model; a single calibrator's own.

    Parameters
    ----------
    prior : GeneralCalibrator or HTCCalibrator
        A fitted prior.
    ts : TraceSet
        The runs it is adapted to.

    Returns
    -------
    tuple of (str, int)
        The profile and top-k the runs' features must be extracted with.

    Examples
    --------
    >>> from htc_core.calibration.models import load_model
    >>> from htc_core.experiments.adapt_curve import profile_for
    >>> from htc_core.formats import load
    >>> units, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> profile_for(load_model("gac"), units)                  # the runs list top-5 alternatives
    ('paper', 5)
    """
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
    >>> from htc_core.experiments.adapt_curve import adapt_traces
    >>> from htc_core.formats import load
    >>> units, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> model = adapt_traces(units.take(range(40)), "gac")              # 40 labeled runs
    >>> model.profile_, model.adaptation_["choice"]
    ('paper', 'shrunk toward prior (lambda=30)')
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
    """Learning-curve entry: HTC-Reduced fitted on the training runs alone (alpha by inner CV).

    Parameters
    ----------
    train_ts : TraceSet
        The training runs.
    y_train : array-like of shape (n_train,)
        Their 0/1 labels.
    test_ts : TraceSet
        The runs scored (their labels are not read).
    seed : int
        The inner CV's random state.

    Returns
    -------
    numpy.ndarray of shape (n_test,)
        The success probability of each test run.

    Examples
    --------
    >>> from htc_core.experiments.adapt_curve import htc_from_scratch
    >>> from htc_core.formats import load
    >>> units, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> runs = units.take(range(40))
    >>> p = htc_from_scratch(runs.take(range(30)), runs.labels[:30], runs.take(range(30, 40)), 0)
    >>> p.shape, bool(((p >= 0) & (p <= 1)).all())
    ((10,), True)
    """
    from ..features import extract

    m = HTCCalibrator(random_state=int(seed)).fit(extract(train_ts), np.asarray(y_train, float))
    return m.predict_proba(extract(test_ts))[:, 1]


# ------------------------------------------------------------- the curve
@dataclass
class AdaptCurveResult:
    """The adaptation curve: per label budget and method, the metrics on the target's untouched runs.

    Made by :func:`adaptation_curve`.

    Parameters
    ----------
    group : str
        The grouping column.
    target : str
        The group adapted to.
    n_target : int
        Its labeled runs.
    positive_rate : float
        Their success rate.
    prior : str
        The prior's name.
    sizes : list of int
        The label budgets measured.
    seeds : list of int
        The repeats' seeds.
    rows : pandas.DataFrame
        One row per (size, method): n_repeats and every metric's mean and std.
    choices : dict
        Size -> {the adapted model's choice: how many repeats made it}.
    seconds : float
        The curve's wall time.
    notes : list of str, default []
        The prior used, budgets left out, fits that failed.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.traces import concat
    >>> from htc_core.experiments.adapt_curve import adaptation_curve
    >>> others, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...                   "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...                   "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...                   "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])   # facts, lists: 32 runs
    >>> units, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> runs = concat([others, units.take(range(50))])                                 # the target: 50 units runs
    >>> curve = adaptation_curve(runs, target="units", sizes=(10,), seeds=1)
    >>> curve.prior, curve.n_target, curve.sizes, curve.choices
    ('GAC without units', 50, [10], {10: {'recalibrated prior': 1}})
    """

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
        """A copy of the rows: one per (label budget, method).

        Returns
        -------
        pandas.DataFrame
            The ``rows`` table.

        Examples
        --------
        The result of :func:`adaptation_curve`'s example, written out (the curve itself takes a second):

        >>> import pandas as pd
        >>> from htc_core.experiments.adapt_curve import METHODS, AdaptCurveResult
        >>> rows = pd.DataFrame({"size": 10, "method": METHODS, "n_repeats": 1,
        ...                      "ece_mean": [0.631, 0.242, 0.242], "ece_std": 0.0,
        ...                      "brier_mean": [0.609, 0.208, 0.208], "brier_std": 0.0,
        ...                      "auroc_mean": [0.294, 0.987, 0.987], "auroc_std": 0.0})
        >>> curve = AdaptCurveResult(group="dataset", target="units", n_target=50, positive_rate=0.6,
        ...                          prior="GAC without units", sizes=[10], seeds=[42], rows=rows,
        ...                          choices={10: {"no prior": 1}}, seconds=0.6)
        >>> curve.to_frame()[["size", "method", "n_repeats", "ece_mean"]].round(3)
           size            method  n_repeats  ece_mean
        0    10     GAC zero-shot          1     0.631
        1    10  HTC from scratch          1     0.242
        2    10       GAC adapted          1     0.242
        """
        return self.rows.copy()

    def metric(self, name: str = "ece") -> pd.DataFrame:
        """One metric as a label budget x method table (means over the repeats).

        Parameters
        ----------
        name : {"ece", "brier", "auroc"}, default "ece"
            The metric.

        Returns
        -------
        pandas.DataFrame
            Rows the budgets, columns the three methods.

        Examples
        --------
        The result of :func:`adaptation_curve`'s example, written out (the curve itself takes a second):

        >>> import pandas as pd
        >>> from htc_core.experiments.adapt_curve import METHODS, AdaptCurveResult
        >>> rows = pd.DataFrame({"size": 10, "method": METHODS, "n_repeats": 1,
        ...                      "ece_mean": [0.631, 0.242, 0.242], "ece_std": 0.0,
        ...                      "brier_mean": [0.609, 0.208, 0.208], "brier_std": 0.0,
        ...                      "auroc_mean": [0.294, 0.987, 0.987], "auroc_std": 0.0})
        >>> curve = AdaptCurveResult(group="dataset", target="units", n_target=50, positive_rate=0.6,
        ...                          prior="GAC without units", sizes=[10], seeds=[42], rows=rows,
        ...                          choices={10: {"no prior": 1}}, seconds=0.6)
        >>> curve.metric("auroc").round(3)
        method  GAC zero-shot  HTC from scratch  GAC adapted
        size
        10              0.294             0.987        0.987
        """
        return self.rows.pivot(index="size", columns="method", values=f"{name}_mean")[list(METHODS)]

    def to_dict(self) -> dict:
        """The result as JSON-ready values (missing numbers as None).

        Returns
        -------
        dict
            Keys experiment ("adaptation-curve"), group, target, n_target, positive_rate, prior, sizes, seeds,
            rows (each metric as {"mean", "std"}), adapted_choices, seconds and notes.

        Examples
        --------
        The result of :func:`adaptation_curve`'s example, written out (the curve itself takes a second):

        >>> import pandas as pd
        >>> from htc_core.experiments.adapt_curve import METHODS, AdaptCurveResult
        >>> rows = pd.DataFrame({"size": 10, "method": METHODS, "n_repeats": 1,
        ...                      "ece_mean": [0.631, 0.242, 0.242], "ece_std": 0.0,
        ...                      "brier_mean": [0.609, 0.208, 0.208], "brier_std": 0.0,
        ...                      "auroc_mean": [0.294, 0.987, 0.987], "auroc_std": 0.0})
        >>> curve = AdaptCurveResult(group="dataset", target="units", n_target=50, positive_rate=0.6,
        ...                          prior="GAC without units", sizes=[10], seeds=[42], rows=rows,
        ...                          choices={10: {"no prior": 1}}, seconds=0.6)
        >>> d = curve.to_dict()
        >>> d["experiment"], d["rows"][2]["method"], d["adapted_choices"]
        ('adaptation-curve', 'GAC adapted', {'10': {'no prior': 1}})
        """
        rows = [{"size": int(r["size"]), "method": r["method"], "n_repeats": int(r["n_repeats"]),
                 **{m: {"mean": finite_or_none(r[f"{m}_mean"]), "std": finite_or_none(r[f"{m}_std"])} for m in METRICS}}
                for r in self.rows.to_dict("records")]
        return {"experiment": "adaptation-curve", "group": self.group, "target": self.target,
                "n_target": self.n_target, "positive_rate": self.positive_rate, "prior": self.prior,
                "sizes": list(self.sizes), "seeds": list(self.seeds), "rows": rows,
                "adapted_choices": {str(k): v for k, v in self.choices.items()}, "seconds": round(self.seconds, 2),
                "notes": list(self.notes)}

    def to_json(self, **kw) -> str:
        """:meth:`to_dict` as a JSON string.

        Parameters
        ----------
        **kw
            Passed to :func:`json.dumps` (``indent=2``, ...).

        Returns
        -------
        str
            The JSON text.

        Examples
        --------
        The result of :func:`adaptation_curve`'s example, written out (the curve itself takes a second):

        >>> import pandas as pd
        >>> from htc_core.experiments.adapt_curve import METHODS, AdaptCurveResult
        >>> rows = pd.DataFrame({"size": 10, "method": METHODS, "n_repeats": 1,
        ...                      "ece_mean": [0.631, 0.242, 0.242], "ece_std": 0.0,
        ...                      "brier_mean": [0.609, 0.208, 0.208], "brier_std": 0.0,
        ...                      "auroc_mean": [0.294, 0.987, 0.987], "auroc_std": 0.0})
        >>> curve = AdaptCurveResult(group="dataset", target="units", n_target=50, positive_rate=0.6,
        ...                          prior="GAC without units", sizes=[10], seeds=[42], rows=rows,
        ...                          choices={10: {"no prior": 1}}, seconds=0.6)
        >>> import json
        >>> json.loads(curve.to_json())["target"]
        'units'
        """
        return json.dumps(self.to_dict(), **kw)

    def table(self) -> str:
        """Plain text: one line per budget and method, the adapted model's choices, the time and the notes.

        Returns
        -------
        str
            The table.

        Examples
        --------
        The result of :func:`adaptation_curve`'s example, written out (the curve itself takes a second):

        >>> import pandas as pd
        >>> from htc_core.experiments.adapt_curve import METHODS, AdaptCurveResult
        >>> rows = pd.DataFrame({"size": 10, "method": METHODS, "n_repeats": 1,
        ...                      "ece_mean": [0.631, 0.242, 0.242], "ece_std": 0.0,
        ...                      "brier_mean": [0.609, 0.208, 0.208], "brier_std": 0.0,
        ...                      "auroc_mean": [0.294, 0.987, 0.987], "auroc_std": 0.0})
        >>> curve = AdaptCurveResult(group="dataset", target="units", n_target=50, positive_rate=0.6,
        ...                          prior="GAC without units", sizes=[10], seeds=[42], rows=rows,
        ...                          choices={10: {"no prior": 1}}, seconds=0.6)
        >>> print(curve.table())
        adaptation curve on dataset = units (50 runs, success rate 0.600); prior: GAC without units; ...
           N  method                        ECE           Brier           AUROC
          10  GAC zero-shot       0.631 ± 0.000   0.609 ± 0.000   0.294 ± 0.000
          10  HTC from scratch    0.242 ± 0.000   0.208 ± 0.000   0.987 ± 0.000
          10  GAC adapted         0.242 ± 0.000   0.208 ± 0.000   0.987 ± 0.000
        adapted model's choice at N=10: no prior x1
        took 0.6 s
        """
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
    """The rows of the target group and of the others (checked: the column and the value exist)."""
    if group not in ts.meta.columns:
        raise ValueError(f"group must be a metadata column of the runs ({', '.join(map(str, ts.meta.columns))}), "
                         f"got {group!r}")
    g = ts.meta[group].astype(str).to_numpy()
    if target not in set(g):
        raise ValueError(f"target {target!r} is not a value of {group!r} in these runs "
                         f"(values: {', '.join(sorted(set(g)))})")
    return np.flatnonzero(g == target), np.flatnonzero(g != target)


def _prior_for_curve(ts, group, target, others, prior, notes):
    """The curve's prior: a GAC fitted on the ``others`` rows, or ``prior`` when it never saw the target."""
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

    For each budget N and seed, N target runs are drawn (stratified by outcome) and the rest of the target is
    the test set; a budget is measured only when at least 30 target runs remain to test on.

    Parameters
    ----------
    ts : TraceSet
        Labeled runs of several groups.
    group : str, default="dataset"
        The grouping column.
    target : str
        The group adapted to.
    sizes : sequence of int, default=(10, 20, 50, 100, 200)
        Label budgets (each at least 4).
    seeds : int, default=5
        Repeats (seeds 42, 43, ...).
    prior : GeneralCalibrator, HTCCalibrator, str, path or None, default=None
        The prior. None: a GAC fitted here on the runs of the other groups (leave-one-group-out; the shipped
        GAC was trained on every dataset of the repository). A model whose card lists the target among its
        training data is refused.
    progress : callable, optional
        ``progress(done, total, message)``.

    Returns
    -------
    AdaptCurveResult
        Per budget and method: mean and std of ECE, Brier, AUROC on the target's untouched runs.

    Raises
    ------
    ValueError
        If ``seeds``, ``sizes``, ``group`` or ``target`` is invalid, the other groups hold one outcome, or the
        prior was trained on the target.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.traces import concat
    >>> from htc_core.experiments.adapt_curve import adaptation_curve
    >>> others, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...                   "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...                   "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...                   "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])   # facts, lists: 32 runs
    >>> units, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> runs = concat([others, units.take(range(50))])                                 # the target: 50 units runs
    >>> curve = adaptation_curve(runs, target="units", sizes=(10,), seeds=1)
    >>> curve.rows[["method", "ece_mean", "auroc_mean"]].round(3)
                 method  ece_mean  auroc_mean
    0     GAC zero-shot     0.631       0.294
    1  HTC from scratch     0.242       0.987
    2       GAC adapted     0.308       0.294
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
    """The three methods scored by cross-validation on the labeled runs a user has (made by
    :func:`compare_on_labels`; the dashboard's section).

    Parameters
    ----------
    n : int
        The labeled runs.
    positive_rate : float
        Their success rate.
    prior : str
        The prior's name.
    n_folds : int
        The folds used.
    labels : numpy.ndarray
        The runs' labels.
    oof : dict of str to numpy.ndarray
        Method -> out-of-fold confidences (the zero-shot prior's: on every run).
    metrics : pandas.DataFrame
        method, ece, brier, auroc.
    choice : str
        The adapted model's choice when fitted on all the runs.
    model : dict
        That adapted model's JSON object.
    trained_on_these : list of str
        Datasets of these runs the prior was trained on (its numbers are then optimistic).
    notes : list of str, default []
        Folds where a fit failed.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.adapt_curve import compare_on_labels
    >>> units, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> comparison = compare_on_labels(units.take(range(20)), "gac", folds=2)    # 20 labeled runs
    >>> comparison.n, comparison.n_folds, comparison.choice, comparison.trained_on_these
    (20, 2, 'prior', ['units'])
    """

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
        """A copy of the metrics: one row per method.

        Returns
        -------
        pandas.DataFrame
            method, ece, brier, auroc.

        Examples
        --------
        The table of :func:`compare_on_labels`'s example, written out (the comparison itself takes a second;
        neither method reads the confidences or the model):

        >>> import numpy as np
        >>> import pandas as pd
        >>> from htc_core.experiments.adapt_curve import LabelComparison
        >>> metrics = pd.DataFrame({"method": ["GAC zero-shot", "HTC from scratch", "GAC adapted"],
        ...                         "ece": [0.246, 0.235, 0.106], "brier": [0.167, 0.153, 0.121],
        ...                         "auroc": [0.923, 0.868, 0.879]})
        >>> comparison = LabelComparison(n=20, positive_rate=0.65, prior="gac", n_folds=2, labels=np.array([]),
        ...                              oof={}, metrics=metrics, choice="prior", model={},
        ...                              trained_on_these=["units"])
        >>> comparison.to_frame().round(3)
                     method    ece  brier  auroc
        0     GAC zero-shot  0.246  0.167  0.923
        1  HTC from scratch  0.235  0.153  0.868
        2       GAC adapted  0.106  0.121  0.879
        """
        return self.metrics.copy()

    def to_dict(self) -> dict:
        """The comparison as JSON-ready values (the confidences and the model left out).

        Returns
        -------
        dict
            Keys n, positive_rate, prior, n_folds, metrics (records), choice, trained_on_these and notes.

        Examples
        --------
        The table of :func:`compare_on_labels`'s example, written out (the comparison itself takes a second;
        neither method reads the confidences or the model):

        >>> import numpy as np
        >>> import pandas as pd
        >>> from htc_core.experiments.adapt_curve import LabelComparison
        >>> metrics = pd.DataFrame({"method": ["GAC zero-shot", "HTC from scratch", "GAC adapted"],
        ...                         "ece": [0.246, 0.235, 0.106], "brier": [0.167, 0.153, 0.121],
        ...                         "auroc": [0.923, 0.868, 0.879]})
        >>> comparison = LabelComparison(n=20, positive_rate=0.65, prior="gac", n_folds=2, labels=np.array([]),
        ...                              oof={}, metrics=metrics, choice="prior", model={},
        ...                              trained_on_these=["units"])
        >>> d = comparison.to_dict()
        >>> d["prior"], d["choice"], d["metrics"][2]["method"]
        ('gac', 'prior', 'GAC adapted')
        """
        return {"n": self.n, "positive_rate": self.positive_rate, "prior": self.prior, "n_folds": self.n_folds,
                "metrics": self.metrics.to_dict("records"), "choice": self.choice,
                "trained_on_these": list(self.trained_on_these), "notes": list(self.notes)}


def compare_on_labels(ts, prior="gac", *, folds: int = 5, seed: int = 42) -> LabelComparison:
    """The zero-shot prior, HTC-Reduced from scratch and the adapted prior, scored on the labeled runs.

    Each is scored by stratified cross-validation on the labeled runs of ``ts`` (at most ``folds`` folds, as
    many as the smaller outcome allows); then the adapted model is fitted on all of them.

    Parameters
    ----------
    ts : TraceSet
        The runs (unlabeled ones are left out); at least 2 successes and 2 failures.
    prior : GeneralCalibrator, HTCCalibrator, str or path, default "gac"
        The prior (a shipped model's name, a model file or a fitted model).
    folds : int, default 5
        The most folds.
    seed : int, default 42
        The folds' and the inner CV's random state.

    Returns
    -------
    LabelComparison
        The out-of-fold confidences, the metrics and the adapted model fitted on all runs.

    Raises
    ------
    ValueError
        If the labeled runs hold fewer than 2 successes or 2 failures.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.adapt_curve import compare_on_labels
    >>> units, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> comparison = compare_on_labels(units.take(range(20)), "gac", folds=2)    # 20 labeled runs
    >>> comparison.metrics.round(3)                       # the shipped GAC was trained on units: optimistic
                 method    ece  brier  auroc
    0     GAC zero-shot  0.226  0.249  0.890
    1  HTC from scratch  0.235  0.153  0.868
    2       GAC adapted  0.117  0.107  0.868
    """
    from sklearn.model_selection import StratifiedKFold

    from ..calibration.adapt import prior_name
    from ..features import extract

    name = prior_name(prior)
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
