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
#: the feature profile of each kind's model in the by-kind strategy
KIND_PROFILE = {WITH_ALTERNATIVES: "paper", WITHOUT_ALTERNATIVES: "chosen"}
ROW_COLUMNS = ("variant", "heldout", "method", "n_heldout", "n_train",
               *(f"{m}_{s}" for m in (*METRICS, "n_features") for s in ("mean", "std")))


@dataclass
class GACResult:
    """Leave-one-group-out: for each held-out group and variant, GAC (per strategy) next to DirectTrain."""

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
        return self.rows.copy()

    def summary(self, metric: str = "ece", variant: str = "reduced") -> pd.DataFrame:
        """held-out group x method: mean of ``metric``."""
        r = self.rows[self.rows.variant == variant]
        return r.pivot(index="heldout", columns="method", values=f"{metric}_mean").reindex(index=self.groups)

    def to_dict(self) -> dict:
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
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
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
    seeds : int or sequence of int, default=3
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

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load(["sample_runs/units/", "sample_runs/facts/"])
    >>> result = htc.gac_leave_one_out(ts, variants=("reduced",), seeds=1, alphas=(1.0,), inner_folds=3,
    ...                                direct=False)
    >>> sorted(result.groups)
    ['facts', 'units']
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
    if strategy == "pooled":
        return float(fitted[("paper", "all")].n_selected_)
    chosen = fitted[("chosen", "all")].n_selected_ if ("chosen", "all") in fitted else 0
    if strategy == "chosen":
        return float(chosen)
    with_alt = fitted[("paper", "with")].n_selected_ if ("paper", "with") in fitted else chosen
    return float(np.mean(np.where(alt, with_alt, chosen)))


def _row(variant, heldout, method, n_heldout, n_train, cell) -> dict:
    row = {"variant": variant, "heldout": heldout, "method": method, "n_heldout": int(n_heldout),
           "n_train": int(n_train)}
    for k in (*METRICS, "n_features"):
        row[f"{k}_mean"], row[f"{k}_std"] = cell[k]["mean"], cell[k]["std"]
    return row
