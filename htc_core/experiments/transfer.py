"""Transfer across groups (paper section "Cross-Domain Transferability").

For every source group (a value of the ``dataset``, ``model`` or ``framework`` column), HTC-Full and
HTC-Reduced are fitted on all of its labeled runs (alpha chosen by inner CV on the source only) and applied
unchanged to every other group. The diagonal is DirectTrain: the honest nested CV of the group itself
(:func:`htc_core.calibration.evaluation.evaluate` on that group's runs). Off-diagonal cells are mean ± std
over seeds (the seed drives the inner folds, hence the alpha); diagonal cells are mean ± std over CV
repeats. No run of a target group ever reaches the fit of another source (:func:`grouping.fit_rows`
refuses it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Sequence

import pandas as pd

from ..calibration.results import METRICS
from ..calibration.solvers import DEFAULT_ALPHAS
from .grouping import (VARIANT_NAMES, finite_or_none, direct_train, fit_rows, grouped_data, mean_std, score_metrics,
                       seed_list)

__all__ = ["transfer", "TransferResult"]

CELL_COLUMNS = ("variant", "source", "target", "kind", "n_target", *(f"{m}_{s}" for m in (*METRICS, "n_features")
                                                                      for s in ("mean", "std")))


@dataclass
class TransferResult:
    """Source x target matrices of ECE, Brier and AUROC for each HTC variant (made by :func:`transfer`).

    The diagonal is DirectTrain (the group's own nested CV); off-diagonal cells are a model fitted on all of
    the source's runs, scored zero-shot on the target.

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
    variants : list of str
        The HTC variants ("full", "reduced").
    seeds : list of int
        The seeds of the inner alpha selection (off-diagonal) and of the CV repeats (diagonal).
    profile : str
        The features' token-confidence profile.
    top_k : int
        The features' alternatives per token.
    cells : pandas.DataFrame
        One row per (variant, source, target): kind ("direct" or "transfer"), n_target and every metric's
        mean and std (also ``n_features``, the features kept).
    models : dict, default {}
        (variant, source, seed) -> the fitted :class:`~htc_core.calibration.calibrators.HTCCalibrator`.
    notes : list of str, default []
        What was left out and why.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.transfer import transfer
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> result = transfer(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> result.groups, result.n_runs, list(result.models)
    (['facts', 'lists'], {'facts': 16, 'lists': 16}, [('reduced', 'facts', 42), ('reduced', 'lists', 42)])
    """

    by: str
    groups: list
    n_runs: dict
    positive_rate: dict
    variants: list
    seeds: list
    profile: str
    top_k: int
    cells: pd.DataFrame                          # one row per (variant, source, target); see CELL_COLUMNS
    models: dict = field(default_factory=dict)   # (variant, source, seed) -> fitted HTCCalibrator
    notes: list = field(default_factory=list)

    def matrix(self, metric: str = "ece", variant: str = "reduced", stat: str = "mean") -> pd.DataFrame:
        """One metric of one variant as a source x target table.

        Parameters
        ----------
        metric : {"ece", "brier", "auroc", "n_features"}, default "ece"
            The metric (``n_features``: the features the models kept).
        variant : str, default "reduced"
            An HTC variant of the result.
        stat : {"mean", "std"}, default "mean"
            Mean or std over the seeds (the CV repeats on the diagonal).

        Returns
        -------
        pandas.DataFrame
            Rows the source, columns the target, both in ``groups`` order.

        Raises
        ------
        ValueError
            If ``metric``, ``variant`` or ``stat`` is not one of the result's.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.transfer import transfer
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = transfer(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> result.matrix("auroc").round(3)
        target  facts  lists
        source
        facts   0.600  0.364
        lists   0.533  0.782
        """
        if metric not in (*METRICS, "n_features"):
            raise ValueError(f"metric must be one of {(*METRICS, 'n_features')}, got {metric!r}")
        if variant not in self.variants:
            raise ValueError(f"variant must be one of {self.variants}, got {variant!r}")
        if stat not in ("mean", "std"):
            raise ValueError(f"stat must be 'mean' or 'std', got {stat!r}")
        c = self.cells[self.cells.variant == variant]
        m = c.pivot(index="source", columns="target", values=f"{metric}_{stat}")
        return m.reindex(index=self.groups, columns=self.groups)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the cells: one row per (variant, source, target).

        Returns
        -------
        pandas.DataFrame
            The ``cells`` table.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.transfer import transfer
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = transfer(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> result.to_frame()[["source", "target", "kind", "auroc_mean"]].round(3)
          source target      kind  auroc_mean
        0  facts  facts    direct       0.600
        1  facts  lists  transfer       0.364
        2  lists  facts  transfer       0.533
        3  lists  lists    direct       0.782
        """
        return self.cells.copy()

    def to_dict(self) -> dict:
        """The result as JSON-ready values (the fitted models left out; missing numbers as None).

        Returns
        -------
        dict
            Keys experiment ("transfer"), by, groups, n_runs, positive_rate, variants, seeds, profile, top_k,
            cells (each metric as {"mean", "std"}) and notes.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.transfer import transfer
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = transfer(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> d = result.to_dict()
        >>> d["experiment"], d["cells"][1]["target"], d["cells"][1]["auroc"]
        ('transfer', 'lists', {'mean': 0.36363636363636365, 'std': 0.0})
        """
        cells = []
        for r in self.cells.itertuples(index=False):
            d = r._asdict()
            cells.append({"variant": d["variant"], "source": d["source"], "target": d["target"], "kind": d["kind"],
                          "n_target": int(d["n_target"]),
                          **{m: {"mean": finite_or_none(d[f"{m}_mean"]), "std": finite_or_none(d[f"{m}_std"])}
                             for m in (*METRICS, "n_features")}})
        return {"experiment": "transfer", "by": self.by, "groups": list(self.groups),
                "n_runs": {g: int(v) for g, v in self.n_runs.items()},
                "positive_rate": {g: float(v) for g, v in self.positive_rate.items()},
                "variants": list(self.variants), "seeds": list(self.seeds), "profile": self.profile,
                "top_k": int(self.top_k), "cells": cells, "notes": list(self.notes)}

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
        >>> from htc_core.experiments.transfer import transfer
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = transfer(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> import json
        >>> json.loads(result.to_json(indent=2))["groups"]
        ['facts', 'lists']
        """
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """Plain text: one source x target block per variant and metric (mean; the diagonal, bracketed, is
        DirectTrain).

        Returns
        -------
        str
            The blocks, with the runs per group and the notes.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.experiments.transfer import transfer
        >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
        >>> result = transfer(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> print(result.table())
        transfer by dataset: rows = source (fitted on all its runs), columns = target; diagonal = DirectTrain (nested CV
        of the group); mean over seeds 42
        runs: facts 16 (38% success), lists 16 (31% success)
        ...
        HTC-Reduced, AUROC
        source \\ target    facts    lists
        facts      [0.600]    0.364
        lists        0.533  [0.782]
        """
        out = [f"transfer by {self.by}: rows = source (fitted on all its runs), columns = target; diagonal = "
               f"DirectTrain (nested CV of the group); mean over seeds {', '.join(map(str, self.seeds))}",
               "runs: " + ", ".join(f"{g} {self.n_runs[g]} ({self.positive_rate[g]:.0%} success)" for g in self.groups)]
        w = max(8, *(len(g) for g in self.groups)) + 1
        for v in self.variants:
            for metric in METRICS:
                m = self.matrix(metric, v)
                out.append("")
                out.append(f"{VARIANT_NAMES[v]}, {metric.upper() if metric != 'brier' else 'Brier'}")
                out.append("source \\ target".ljust(w) + "".join(t.rjust(w) for t in m.columns))
                for s, row in m.iterrows():
                    out.append(str(s).ljust(w) + "".join(
                        (f"[{x:.3f}]" if s == t else f"{x:.3f}").rjust(w) for t, x in row.items()))
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)


def transfer(data, *, by: str = "dataset", variants: Sequence[str] = ("full", "reduced"), seeds=3,
             n_splits: int = 5, profile: str = "paper", top_k: int = 5, alphas: Sequence[float] = DEFAULT_ALPHAS,
             inner_folds: int = 5, max_iter: int = 1000,
             progress: Callable[[int, int, str], None] | None = None) -> TransferResult:
    """The transfer matrix: fit on each group, score every other group zero-shot.

    Unlabeled runs and groups whose labels cannot be evaluated (too few runs or one outcome) are left out,
    each with a note; at least two groups are needed (:class:`EvaluationError` otherwise).

    Parameters
    ----------
    data : TraceSet
        Labeled runs.
    by : {"dataset", "model", "framework"}, default="dataset"
        The grouping column.
    variants : sequence of str, default=("full", "reduced")
        HTC variants.
    seeds : int or sequence of int, default=3
        Repeats of the inner alpha selection.
    n_splits, profile, top_k, alphas, inner_folds, max_iter
        As :func:`evaluate`.
    progress : callable, optional
        ``progress(done, total, message)`` after each source group.

    Returns
    -------
    TransferResult
        ``to_frame()``, ``to_dict()``, ``table()``.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.transfer import transfer
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> result = transfer(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> result.matrix("ece").round(3)                  # the diagonal is DirectTrain
    target  facts  lists
    source
    facts   0.242  0.369
    lists   0.516  0.280
    """
    variants = check_variants(variants)
    seeds_ = seed_list(seeds)
    data_ = grouped_data(data, by=by, profiles=(profile,), top_k=top_k, what="a transfer matrix")
    rows, models = [], {}
    total = len(data_.names)
    for i, src in enumerate(data_.names):
        direct = direct_train(data_, src, variants, seeds=seeds_, profile=profile, n_splits=n_splits, alphas=alphas,
                              inner_folds=inner_folds, max_iter=max_iter)
        src_rows = data_.rows(src)
        per_target: dict = {}
        for v in variants:
            for seed in seeds_:
                # everything but the source is forbidden in this fit
                cal = fit_rows(data_, profile, v, src_rows, forbidden=[g for g in data_.names if g != src], seed=seed,
                               alphas=alphas, inner_folds=inner_folds, max_iter=max_iter)
                models[(v, src, seed)] = cal
                for tgt in data_.names:
                    if tgt != src:
                        t = data_.rows(tgt)
                        m = score_metrics(data_.y[t], cal.predict_proba(data_.features[profile][t])[:, 1])
                        m["n_features"] = cal.n_selected_
                        per_target.setdefault((v, tgt), []).append(m)
        for v in variants:
            for tgt in data_.names:
                if tgt == src:
                    cell, kind = direct[v], "direct"
                else:
                    vals = per_target[(v, tgt)]
                    cell, kind = {k: mean_std([x[k] for x in vals]) for k in (*METRICS, "n_features")}, "transfer"
                rows.append(_cell_row(v, src, tgt, kind, data_.n_runs[tgt], cell))
        if progress is not None:
            progress(i + 1, total, f"source {src}")
    cells = pd.DataFrame(rows, columns=list(CELL_COLUMNS))
    return TransferResult(by=by, groups=list(data_.names), n_runs=data_.n_runs, positive_rate=data_.positive_rate,
                          variants=list(variants), seeds=seeds_, profile=profile, top_k=int(top_k), cells=cells,
                          models=models, notes=data_.notes)


def _cell_row(variant, source, target, kind, n_target, cell) -> dict:
    """One row of ``TransferResult.cells``."""
    row = {"variant": variant, "source": source, "target": target, "kind": kind, "n_target": int(n_target)}
    for k in (*METRICS, "n_features"):
        row[f"{k}_mean"], row[f"{k}_std"] = cell[k]["mean"], cell[k]["std"]
    return row


def check_variants(variants) -> list[str]:
    """The HTC variants asked for (one name or several) as a list, each checked against ``VARIANT_NAMES``."""
    if isinstance(variants, str):
        variants = [variants]
    variants = list(variants)
    bad = [v for v in variants if v not in VARIANT_NAMES]
    if not variants or bad:
        raise ValueError(f"variants must be a non-empty list of {tuple(VARIANT_NAMES)}, got {variants!r}")
    return list(dict.fromkeys(variants))
