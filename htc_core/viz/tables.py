"""The result tables that the dashboard and the HTML report both show, built from evaluation results and
fitted models (pure pandas: the figures in this package draw them, the pages and the report lay them out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..features import REGISTRY

__all__ = ["HTC_METHODS", "BEST_MARK", "weights_frame", "selection_frequency", "SelectionView", "selection_view",
           "metrics_frame", "metrics_long", "table_ece"]

HTC_METHODS = ("HTC-Reduced", "HTC-Full")
#: what marks the best value of a metric column in the metrics table
BEST_MARK = "★ "


def weights_frame(models: Mapping[str, object]) -> pd.DataFrame:
    """Long frame of the weights of fitted calibrators: model, feature, code, family, display_name,
    formula, weight (on standardized features), selected."""
    rows = []
    for label, m in models.items():
        for nm, w in zip(m.feature_names_in_, m.coef_[0]):
            spec = REGISTRY.get(nm)
            rows.append({"model": label, "feature": nm, "code": spec.code if spec else nm,
                         "family": spec.family if spec else "", "display_name": spec.display_name if spec else nm,
                         "formula": spec.formula if spec else "", "weight": float(w), "selected": bool(w != 0)})
    return pd.DataFrame(rows)


def selection_frequency(result) -> pd.DataFrame:
    """How often each feature was kept (non-zero weight) across the outer folds and seeds of an evaluation.

    Columns: method, feature, code, family, times, fits, frequency.
    """
    fits = len(result.seeds) * int(result.n_splits)
    rows = []
    for method, counts in result.selected_counts.items():
        for nm, c in counts.items():
            spec = REGISTRY.get(nm)
            rows.append({"method": method, "feature": nm, "code": spec.code if spec else nm,
                         "family": spec.family if spec else "", "times": int(c), "fits": fits,
                         "frequency": float(c) / fits if fits else float("nan")})
    return pd.DataFrame(rows, columns=["method", "feature", "code", "family", "times", "fits", "frequency"])


@dataclass
class SelectionView:
    """The selection frequency of an evaluation: ``fits`` outer-fold fits (folds x seeds), the HTC
    ``methods`` present, and :meth:`of` one method's rows."""

    frame: pd.DataFrame
    fits: int
    methods: list[str]

    def of(self, method: str) -> pd.DataFrame:
        return self.frame[self.frame["method"] == method]


def selection_view(result) -> SelectionView:
    freq = selection_frequency(result)
    present = set(freq["method"])
    return SelectionView(frame=freq, fits=len(result.seeds) * int(result.n_splits),
                         methods=[m for m in HTC_METHODS if m in present])


def _mean_std(a: float, b: float, digits: int) -> str:
    return "n/a" if not np.isfinite(a) else f"{a:.{digits}f} ± {b:.{digits}f}"


def metrics_frame(result) -> pd.DataFrame:
    """The evaluation's headline table: one row per method with ECE, Brier, AUROC as mean and std over
    repeats (pooled out-of-fold predictions), the features kept, the trajectories evaluated (``n``: fewer for
    a signal only some runs carry), and 'mean ± std' display strings; the best value of each metric column
    among the methods evaluated on all runs (``result.best``) starts with :data:`BEST_MARK` and is True in
    ``best_<metric>``."""
    rows = []
    best = {k: result.best(k) for k in ("ece", "brier", "auroc")}
    for m in result.methods:
        s = result.summary[m]
        row = {"method": m, "n": result.n_of(m)}
        for k in best:
            row[f"best_{k}"] = best[k] == m
        for k in ("ece", "brier", "auroc"):
            row[f"{k}_mean"] = s[k]["mean"]
            row[f"{k}_std"] = s[k]["std"]
        nf = s.get("n_features")
        row["features_mean"] = nf["mean"] if nf else 1.0
        row["features_std"] = nf["std"] if nf else 0.0
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    for k, label in (("ece", "ECE ↓"), ("brier", "Brier ↓"), ("auroc", "AUROC ↑"), ("features", "features")):
        digits = 1 if k == "features" else 3
        df[label] = [_mean_std(a, b, digits) for a, b in zip(df[f"{k}_mean"], df[f"{k}_std"])]
        if k != "features":
            df[label] = [BEST_MARK + v if b else v for v, b in zip(df[label], df[f"best_{k}"])]
    return df


def metrics_long(result, methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Long form of the headline metrics (method, metric, mean, std) for bar charts."""
    rows = []
    for m in methods or result.methods:
        if m not in result.summary:
            continue
        for k, label in (("ece", "ECE"), ("brier", "Brier"), ("auroc", "AUROC")):
            rows.append({"method": m, "metric": label, "mean": result.summary[m][k]["mean"],
                         "std": result.summary[m][k]["std"]})
    return pd.DataFrame(rows, columns=["method", "metric", "mean", "std"])


def table_ece(result, methods: Sequence[str]) -> dict[str, float]:
    """The ECE the metrics table shows for each method (mean over repeats): the one ECE every legend uses."""
    return {m: float(result.summary[m]["ece"]["mean"]) for m in methods if m in result.summary}
