"""The General Agent Calibrator, measured: leave-one-group-out (paper section "Generalization").

For every group (a value of ``dataset``, ``model`` or ``framework``), a calibrator is fitted on the pooled
runs of all the other groups and applied zero-shot to the held-out one, next to DirectTrain (the honest
nested CV of the held-out group alone). mean ± std over seeds (the seed drives the inner folds of the
alpha selection). No run of the held-out group ever reaches a pooled fit (:func:`grouping.fit_rows`).

How runs with and without top-k alternatives are pooled is the ``strategy`` (they give systematically
different features: without alternatives Top1Conf and TopkConf fall back to r):

- ``"by-kind"`` (the shipped GAC): runs with alternatives are scored by a ``paper``-profile model fitted
  on the pooled runs *with* alternatives; runs without them by a ``chosen``-profile model (alternatives
  ignored everywhere) fitted on all pooled runs;
- ``"pooled"``: one ``paper``-profile model on all pooled runs, whatever their kind (the trap);
- ``"chosen"``: one ``chosen``-profile model on all pooled runs, for every run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..calibration.general import WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES
from ..calibration.results import METRICS
from ..calibration.solvers import DEFAULT_ALPHAS
from .grouping import VARIANT_NAMES, direct_train, fit_rows, grouped_data, mean_std, score_metrics, seed_list
from .grouping import finite_or_none
from .transfer import check_variants

__all__ = ["gac_leave_one_out", "GACResult", "STRATEGIES", "WITH_ALTERNATIVES", "WITHOUT_ALTERNATIVES"]

STRATEGIES = ("by-kind", "pooled", "chosen")
# the feature profile of each kind's model in the by-kind strategy
KIND_PROFILE = {WITH_ALTERNATIVES: "paper", WITHOUT_ALTERNATIVES: "chosen"}
ROW_COLUMNS = ("variant", "heldout", "method", "n_heldout", "n_train",
               *(f"{m}_{s}" for m in (*METRICS, "n_features") for s in ("mean", "std")))


@dataclass
class GACResult:
    """Leave-one-group-out: for each held-out group and variant, the GAC (per strategy) next to DirectTrain.

    Made by :func:`gac_leave_one_out`.

    Parameters
    ----------
    by : str
        The grouping column.
    groups : list of str
        The groups, sorted.
    n_runs : dict of str to int
        Runs per group.
    positive_rate : dict of str to float
        Success rate per group.
    alternatives : dict of str to int
        Runs with top-k alternatives per group.
    variants : list of str
        The HTC variants.
    seeds : list of int
        The seeds of the inner alpha selection.
    strategies : list of str
        How runs with and without alternatives were pooled (``STRATEGIES``).
    rows : pandas.DataFrame
        One row per (variant, held-out group, method): n_heldout, n_train and every metric's mean and std
        (also ``n_features``); the methods are "GAC (<strategy>)" and "DirectTrain".
    models : dict, default {}
        (variant, held-out group, seed, "<profile>/<runs>") -> the fitted
        :class:`~htc_core.calibration.calibrators.HTCCalibrator`.
    notes : list of str, default []
        What was left out or fell back, and why.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.gac import gac_leave_one_out
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> result = gac_leave_one_out(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> result.groups, result.alternatives, list(result.models)[0]
    (['facts', 'lists'], {'facts': 16, 'lists': 16}, ('reduced', 'facts', 42, 'paper/with'))
    """

    by: str
    groups: list
    n_runs: dict
    positive_rate: dict
    alternatives: dict                           # group -> runs with top-k alternatives
    variants: list
    seeds: list
    strategies: list
    rows: pd.DataFrame                           # one row per (variant, held-out group, method); ROW_COLUMNS
    models: dict = field(default_factory=dict)   # (variant, heldout, seed, model key) -> fitted HTCCalibrator
    notes: list = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the rows: one per (variant, held-out group, method).

        Returns
        -------
        pandas.DataFrame
            The ``rows`` table.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.gac import gac_leave_one_out
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = gac_leave_one_out(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> result.to_frame()[["heldout", "method", "n_train", "auroc_mean"]].round(3)
          heldout         method  n_train  auroc_mean
        0   facts  GAC (by-kind)       16       0.533
        1   facts    DirectTrain       16       0.600
        2   lists  GAC (by-kind)       16       0.364
        3   lists    DirectTrain       16       0.782
        """
        return self.rows.copy()

    def summary(self, metric: str = "ece", variant: str = "reduced") -> pd.DataFrame:
        """One metric as a held-out group x method table (means over the seeds).

        Parameters
        ----------
        metric : {"ece", "brier", "auroc", "n_features"}, default "ece"
            The metric.
        variant : str, default "reduced"
            An HTC variant of the result.

        Returns
        -------
        pandas.DataFrame
            Rows the held-out groups (in ``groups`` order), columns the methods.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.gac import gac_leave_one_out
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = gac_leave_one_out(ts, variants=("reduced",), seeds=1, strategies=("by-kind", "chosen"),
        ...                            alphas=(1.0,), inner_folds=3, direct=False)
        >>> result.summary("auroc").round(3)
        method   GAC (by-kind)  GAC (chosen)
        heldout
        facts            0.533         0.533
        lists            0.364         0.400
        """
        r = self.rows[self.rows.variant == variant]
        return r.pivot(index="heldout", columns="method", values=f"{metric}_mean").reindex(index=self.groups)

    def to_dict(self) -> dict:
        """The result as JSON-ready values (the fitted models left out; missing numbers as None).

        Returns
        -------
        dict
            Keys experiment ("gac-leave-one-out"), by, groups, n_runs, positive_rate, runs_with_alternatives,
            variants, seeds, strategies, rows (each metric as {"mean", "std"}) and notes.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.gac import gac_leave_one_out
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = gac_leave_one_out(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> row = result.to_dict()["rows"][0]
        >>> row["heldout"], row["method"], round(row["ece"]["mean"], 3)
        ('facts', 'GAC (by-kind)', 0.516)
        """
        rows = []
        for r in self.rows.to_dict("records"):
            rows.append({k: r[k] for k in ("variant", "heldout", "method")} |
                        {"n_heldout": int(r["n_heldout"]), "n_train": int(r["n_train"])} |
                        {m: {"mean": finite_or_none(r[f"{m}_mean"]), "std": finite_or_none(r[f"{m}_std"])} for m in (*METRICS, "n_features")})
        return {"experiment": "gac-leave-one-out", "by": self.by, "groups": list(self.groups),
                "n_runs": {g: int(v) for g, v in self.n_runs.items()},
                "positive_rate": {g: float(v) for g, v in self.positive_rate.items()},
                "runs_with_alternatives": {g: int(v) for g, v in self.alternatives.items()},
                "variants": list(self.variants), "seeds": list(self.seeds), "strategies": list(self.strategies),
                "rows": rows, "notes": list(self.notes)}

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
        >>> from htc_core.experiments.gac import gac_leave_one_out
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = gac_leave_one_out(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> import json
        >>> json.loads(result.to_json())["experiment"]
        'gac-leave-one-out'
        """
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """Plain text: one line per held-out group and method, metrics as mean ± std.

        Returns
        -------
        str
            The table, with the protocol in the first line and the notes at the end.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.gac import gac_leave_one_out
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = gac_leave_one_out(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> print(result.table())
        GAC leave-one-dataset-out: fitted on all other groups, applied zero-shot to the held-out one, next to ...
        held out  runs  method                           ECE          Brier          AUROC  features
        --------  ----  ---------------------  -------------  -------------  -------------  --------
        facts       16  GAC (by-kind) Reduced  0.516 ± 0.000  0.366 ± 0.000  0.533 ± 0.000       4.0
        facts       16  DirectTrain Reduced    0.242 ± 0.000  0.234 ± 0.000  0.600 ± 0.000       3.3
        lists       16  GAC (by-kind) Reduced  0.369 ± 0.000  0.373 ± 0.000  0.364 ± 0.000       4.0
        lists       16  DirectTrain Reduced    0.280 ± 0.000  0.193 ± 0.000  0.782 ± 0.000       3.0
        """
        head = (f"GAC leave-one-{self.by}-out: fitted on all other groups, applied zero-shot to the held-out one, "
                f"next to DirectTrain (nested CV of the held-out group); mean ± std over seeds "
                f"{', '.join(map(str, self.seeds))}")
        cols = ("held out", "runs", "method", "ECE", "Brier", "AUROC", "features")
        lines = [cols]
        for r in self.rows.to_dict("records"):
            lines.append((r["heldout"], str(int(r["n_heldout"])), f"{r['method']} {VARIANT_NAMES[r['variant']][4:]}",
                          *(f"{r[f'{m}_mean']:.3f} ± {r[f'{m}_std']:.3f}" for m in METRICS),
                          f"{r['n_features_mean']:.1f}"))
        w = [max(len(x[i]) for x in lines) for i in range(len(cols))]
        out = [head] + ["  ".join(c.ljust(w[i]) if i in (0, 2) else c.rjust(w[i]) for i, c in enumerate(x))
                        for x in lines]
        out.insert(2, "  ".join("-" * x for x in w))
        return "\n".join(out + [f"note: {n}" for n in self.notes])


def _check_strategies(strategies) -> list[str]:
    """The strategies asked for (one name or several) as a list, each checked against ``STRATEGIES``."""
    if isinstance(strategies, str):
        strategies = [strategies]
    strategies = list(dict.fromkeys(strategies))
    bad = [s for s in strategies if s not in STRATEGIES]
    if not strategies or bad:
        raise ValueError(f"strategies must be a non-empty list of {STRATEGIES}, got {strategies!r}")
    return strategies


def _needed_models(strategies, heldout_alt: np.ndarray) -> set:
    """Which pooled models a held-out group needs: ("paper", "all"), ("paper", "with"), ("chosen", "all")."""
    need = set()
    if "pooled" in strategies:
        need.add(("paper", "all"))
    if "chosen" in strategies or ("by-kind" in strategies and not heldout_alt.all()):
        need.add(("chosen", "all"))
    if "by-kind" in strategies and heldout_alt.any():
        need.add(("paper", "with"))
    return need


def _predict_heldout(data, strategies, fitted: dict, te: np.ndarray, notes: list, g: str) -> dict:
    """strategy -> confidences of the held-out rows ``te``."""
    feats = data.features
    preds = {}
    for s in strategies:
        if s == "pooled":
            preds[s] = fitted[("paper", "all")].predict_proba(feats["paper"][te])[:, 1]
        elif s == "chosen":
            preds[s] = fitted[("chosen", "all")].predict_proba(feats["chosen"][te])[:, 1]
        else:
            alt = data.alternatives[te]
            p = np.empty(len(te))
            if (~alt).any():
                p[~alt] = fitted[("chosen", "all")].predict_proba(feats["chosen"][te[~alt]])[:, 1]
            if alt.any():
                with_alt = fitted.get(("paper", "with"))
                if with_alt is None:   # no pooled run carries alternatives: the chosen-profile model scores all
                    note = f"{g}: no pooled run carries alternatives; by-kind used the chosen-profile model for all"
                    if note not in notes:
                        notes.append(note)
                    p[alt] = fitted[("chosen", "all")].predict_proba(feats["chosen"][te[alt]])[:, 1]
                else:
                    p[alt] = with_alt.predict_proba(feats["paper"][te[alt]])[:, 1]
            preds[s] = p
    return preds


def gac_leave_one_out(data, *, by: str = "dataset", variants: Sequence[str] = ("full", "reduced"), seeds=3,
                      strategies: Sequence[str] = ("by-kind",), n_splits: int = 5, top_k: int = 5,
                      alphas: Sequence[float] = DEFAULT_ALPHAS, inner_folds: int = 5, max_iter: int = 1000,
                      direct: bool = True, progress: Callable[[int, int, str], None] | None = None) -> GACResult:
    """Leave-one-group-out General Agent Calibrator: fit on all other groups, score the held-out one zero-shot.

    Parameters
    ----------
    data : TraceSet
        Labeled runs.
    by : {"dataset", "model", "framework"}, default="dataset"
        The grouping column.
    variants : sequence of str, default=("full", "reduced")
        HTC variants.
    seeds : int or sequence of int, default=3
        Repeats of the inner alpha selection (a number: seeds 42, 43, ...).
    strategies : sequence of str, default=("by-kind",)
        How runs with and without alternatives are pooled (``STRATEGIES``; module docstring).
    n_splits, top_k, alphas, inner_folds, max_iter
        As :func:`evaluate`.
    direct : bool, default=True
        Also the DirectTrain rows (the held-out group's own nested CV).
    progress : callable, optional
        ``progress(done, total, message)`` after each held-out group.

    Returns
    -------
    GACResult
        ``to_frame()``, ``to_dict()``, ``table()``.

    Raises
    ------
    ValueError
        If ``by``, a variant or a strategy is unknown.
    EvaluationError
        If fewer than two groups have evaluable labels.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.gac import gac_leave_one_out
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> result = gac_leave_one_out(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> result.summary("ece").round(3)                 # the GAC never saw the held-out dataset
    method   DirectTrain  GAC (by-kind)
    heldout
    facts          0.242          0.516
    lists          0.280          0.369
    """
    variants = check_variants(variants)
    strategies = _check_strategies(strategies)
    seeds_ = seed_list(seeds)
    d = grouped_data(data, by=by, profiles=("paper", "chosen"), top_k=top_k, what="leave-one-group-out GAC")
    notes = list(d.notes)
    rows, models = [], {}
    fit_kw = dict(alphas=alphas, inner_folds=inner_folds, max_iter=max_iter)
    for i, g in enumerate(d.names):
        te = d.rows(g)
        pool = np.flatnonzero(d.groups != g)
        pool_with = pool[d.alternatives[pool]]
        need = _needed_models(strategies, d.alternatives[te])
        if ("paper", "with") in need and len(set(d.y[pool_with])) < 2:
            need.add(("chosen", "all"))   # by-kind falls back to the chosen-profile model (noted)
        per = {s: {v: [] for v in variants} for s in strategies}
        for v in variants:
            for seed in seeds_:
                fitted = {}
                for profile, which in sorted(need):
                    tr = pool if which == "all" else pool_with
                    if len(tr) == 0 or len(set(d.y[tr])) < 2:
                        continue
                    fitted[(profile, which)] = fit_rows(d, profile, v, tr, forbidden=[g], seed=seed, **fit_kw)
                    models[(v, g, seed, f"{profile}/{which}")] = fitted[(profile, which)]
                for s, p in _predict_heldout(d, strategies, fitted, te, notes, g).items():
                    m = score_metrics(d.y[te], p)
                    m["n_features"] = _n_features(s, fitted, d.alternatives[te])
                    per[s][v].append(m)
        for v in variants:
            for s in strategies:
                cell = {k: mean_std([x[k] for x in per[s][v]]) for k in (*METRICS, "n_features")}
                only_with = s == "by-kind" and d.alternatives[te].all() and len(set(d.y[pool_with])) == 2
                rows.append(_row(v, g, f"GAC ({s})", len(te), len(pool_with) if only_with else len(pool), cell))
        if direct:
            dt = direct_train(d, g, variants, seeds=seeds_, profile="paper", n_splits=n_splits, **fit_kw)
            for v in variants:
                rows.append(_row(v, g, "DirectTrain", len(te), len(te), dt[v]))
        if progress is not None:
            progress(i + 1, len(d.names), f"held out {g}")
    frame = pd.DataFrame(rows, columns=list(ROW_COLUMNS))
    return GACResult(by=by, groups=list(d.names), n_runs=d.n_runs, positive_rate=d.positive_rate,
                     alternatives={g: int(d.alternatives[d.rows(g)].sum()) for g in d.names}, variants=variants,
                     seeds=seeds_, strategies=strategies, rows=frame, models=models, notes=notes)


def _n_features(strategy: str, fitted: dict, alt: np.ndarray) -> float:
    """The features a strategy's models kept, averaged over the held-out runs they scored."""
    if strategy == "pooled":
        return float(fitted[("paper", "all")].n_selected_)
    chosen = fitted[("chosen", "all")].n_selected_ if ("chosen", "all") in fitted else 0
    if strategy == "chosen":
        return float(chosen)
    with_alt = fitted[("paper", "with")].n_selected_ if ("paper", "with") in fitted else chosen
    return float(np.mean(np.where(alt, with_alt, chosen)))


def _row(variant, heldout, method, n_heldout, n_train, cell) -> dict:
    """One row of ``GACResult.rows``."""
    row = {"variant": variant, "heldout": heldout, "method": method, "n_heldout": int(n_heldout),
           "n_train": int(n_train)}
    for k in (*METRICS, "n_features"):
        row[f"{k}_mean"], row[f"{k}_std"] = cell[k]["mean"], cell[k]["std"]
    return row
