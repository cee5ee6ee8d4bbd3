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
# what marks the best value of a metric column in the metrics table
BEST_MARK = "★ "


def weights_frame(models: Mapping[str, object]) -> pd.DataFrame:
    """The weights of fitted calibrators as one long table.

    Parameters
    ----------
    models : mapping of str to HTCCalibrator
        Label -> a fitted linear calibrator (``feature_names_in_`` and ``coef_``).

    Returns
    -------
    pandas.DataFrame
        One row per model and feature: model, feature, code, family, display_name, formula, weight (on the
        standardized feature), selected (weight not 0).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.viz.tables import weights_frame
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> model = HTCCalibrator(variant="reduced", alphas=(1.0,)).fit(extract(ts), ts.labels)
    >>> frame = weights_frame({"HTC-Reduced": model})
    >>> frame.shape
    (48, 8)
    >>> frame[frame["selected"]][["code", "feature", "weight"]].round(3)
       code                 feature  weight
    24  F24          first_top1_avg  -0.192
    33  F33  attention_entropy_mean  -0.258
    38  F38    attention_spread_std  -0.061
    """
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

    Parameters
    ----------
    result : EvaluationResult
        An evaluation (:func:`htc_core.calibration.evaluation.evaluate`).

    Returns
    -------
    pandas.DataFrame
        One row per HTC method and feature: method, feature, code, family, times, fits (folds x seeds),
        frequency (times / fits).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.viz.tables import selection_frequency
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> freq = selection_frequency(result)
    >>> freq.head(3)
            method                  feature code    family  times  fits  frequency
    0  HTC-Reduced       token_gradient_max  F12  Dynamics      2     3   0.666667
    1  HTC-Reduced  step_progression_spread  F16  Dynamics      2     3   0.666667
    2  HTC-Reduced   last_attention_entropy  F26  Position      1     3   0.333333
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
    """The selection frequency of an evaluation, by HTC method (made by :func:`selection_view`).

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`selection_frequency`'s rows.
    fits : int
        The outer-fold fits (folds x seeds).
    methods : list of str
        The HTC methods present, in :data:`HTC_METHODS` order.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.viz.tables import selection_view
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> view = selection_view(result)
    >>> view.fits, view.methods
    (3, ['HTC-Reduced'])
    """

    frame: pd.DataFrame
    fits: int
    methods: list[str]

    def of(self, method: str) -> pd.DataFrame:
        """The rows of one method.

        Parameters
        ----------
        method : str
            An HTC method's name.

        Returns
        -------
        pandas.DataFrame
            Its rows of ``frame`` (empty for a method not evaluated).

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.calibration.evaluation import evaluate
        >>> from htc_core.viz.tables import selection_view
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
        >>> rows = selection_view(result).of("HTC-Reduced")
        >>> len(rows), int(rows["times"].max())
        (48, 2)
        """
        return self.frame[self.frame["method"] == method]


def selection_view(result) -> SelectionView:
    """The selection frequency of an evaluation with its number of fits and the HTC methods present.

    Parameters
    ----------
    result : EvaluationResult
        An evaluation (:func:`htc_core.calibration.evaluation.evaluate`).

    Returns
    -------
    SelectionView
        The rows, the fits and the methods.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.viz.tables import selection_view
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> view = selection_view(result)
    >>> view.methods, len(view.frame)
    (['HTC-Reduced'], 48)
    """
    freq = selection_frequency(result)
    present = set(freq["method"])
    return SelectionView(frame=freq, fits=len(result.seeds) * int(result.n_splits),
                         methods=[m for m in HTC_METHODS if m in present])


def _mean_std(a: float, b: float, digits: int) -> str:
    """'mean ± std' with ``digits`` decimals ('n/a' for a missing mean)."""
    return "n/a" if not np.isfinite(a) else f"{a:.{digits}f} ± {b:.{digits}f}"


def metrics_frame(result) -> pd.DataFrame:
    """The evaluation's headline table: one row per method.

    ECE, Brier and AUROC as mean and std over repeats (pooled out-of-fold predictions), the features kept,
    the trajectories evaluated (``n``: fewer for a signal only some runs carry), and 'mean ± std' display
    strings; the best value of each metric column among the methods evaluated on all runs (``result.best``)
    starts with :data:`BEST_MARK` and is True in ``best_<metric>``.

    Parameters
    ----------
    result : EvaluationResult
        An evaluation (:func:`htc_core.calibration.evaluation.evaluate`).

    Returns
    -------
    pandas.DataFrame
        Columns method, n, best_ece, best_brier, best_auroc, <metric>_mean, <metric>_std, features_mean,
        features_std and the display columns "ECE ↓", "Brier ↓", "AUROC ↑", "features" (empty without
        methods).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.viz.tables import metrics_frame
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> metrics_frame(result)[["method", "n", "ECE ↓", "AUROC ↑", "features"]]
            method   n            ECE ↓          AUROC ↑   features
    0  HTC-Reduced  16  ★ 0.280 ± 0.000    0.782 ± 0.000  3.0 ± 1.0
    1  LastStep-TP  16    0.534 ± 0.000  ★ 0.927 ± 0.000  1.0 ± 0.0
    """
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
    """The headline metrics in long form, for bar charts (:func:`htc_core.viz.plots.metric_bars`).

    Parameters
    ----------
    result : EvaluationResult
        An evaluation (:func:`htc_core.calibration.evaluation.evaluate`).
    methods : sequence of str or None, default None
        The methods, in this order (those not evaluated are left out); None: all of the result's.

    Returns
    -------
    pandas.DataFrame
        Columns method, metric ("ECE", "Brier", "AUROC"), mean, std.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.viz.tables import metrics_long
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> metrics_long(result, ["HTC-Reduced"]).round(3)
            method metric   mean  std
    0  HTC-Reduced    ECE  0.280  0.0
    1  HTC-Reduced  Brier  0.193  0.0
    2  HTC-Reduced  AUROC  0.782  0.0
    """
    rows = []
    for m in methods or result.methods:
        if m not in result.summary:
            continue
        for k, label in (("ece", "ECE"), ("brier", "Brier"), ("auroc", "AUROC")):
            rows.append({"method": m, "metric": label, "mean": result.summary[m][k]["mean"],
                         "std": result.summary[m][k]["std"]})
    return pd.DataFrame(rows, columns=["method", "metric", "mean", "std"])


def table_ece(result, methods: Sequence[str]) -> dict[str, float]:
    """The ECE the metrics table shows for each method (mean over repeats): the one ECE every legend uses.

    Parameters
    ----------
    result : EvaluationResult
        An evaluation (:func:`htc_core.calibration.evaluation.evaluate`).
    methods : sequence of str
        The methods (those not evaluated are left out).

    Returns
    -------
    dict of str to float
        Method -> mean ECE.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.viz.tables import table_ece
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> {m: round(e, 3) for m, e in table_ece(result, ["HTC-Reduced", "GP"]).items()}
    {'HTC-Reduced': 0.28}
    """
    return {m: float(result.summary[m]["ece"]["mean"]) for m in methods if m in result.summary}
