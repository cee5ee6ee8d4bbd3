"""Feature-family ablation and feature-selection frequency (paper appendix "Ablation Study on Feature
Categories" and "Feature Importance Analysis").

:func:`ablation` evaluates HTC-Full and HTC-Reduced on each of the 15 non-empty combinations of the four
feature families (Dynamics, Position, Stability, Structure) with the honest protocol of
:func:`~htc_core.calibration.evaluation.evaluate`: one call, every combination is a
:class:`~htc_core.calibration.methods.HTCMethod` restricted to its families, all on the same outer folds.
The all-families row is exactly ``evaluate``'s HTC-Full / HTC-Reduced (same code path, same folds).

:func:`selection_frequency` counts, over every outer fit (folds x seeds) of one method, how often each
feature is the Top-1, among the Top-3 and Top-5 by absolute standardized weight (non-zero weights only),
and selected at all (non-zero weight), by feature and by family.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..calibration.methods import HTCMethod
from ..calibration.results import METRICS, EvaluationResult
from ..calibration.solvers import DEFAULT_ALPHAS
from .grouping import VARIANT_NAMES
from .grouping import finite_or_none
from .transfer import check_variants

__all__ = ["ablation", "AblationResult", "selection_frequency", "SelectionFrequency", "family_combinations",
           "LEVELS"]

# selection levels of the paper's table: top-1, top-3, top-5 by |weight|, and selected at all
LEVELS = (("top1", 1), ("top3", 3), ("top5", 5), ("selected", None))


def family_combinations() -> list[tuple[str, ...]]:
    """The 15 non-empty combinations of the four feature families, largest first (all four first).

    Returns
    -------
    list of tuple of str
        Each combination's families in the registry's order.

    Examples
    --------
    >>> from htc_core.experiments.ablation import family_combinations
    >>> combos = family_combinations()
    >>> len(combos), combos[0], combos[-1]
    (15, ('Dynamics', 'Position', 'Stability', 'Structure'), ('Structure',))
    """
    from ..features.registry import FAMILIES

    combos = [c for r in range(len(FAMILIES), 0, -1) for c in itertools.combinations(FAMILIES, r)]
    return combos


def _method_name(variant: str, families: tuple[str, ...], n_all: int) -> str:
    """The evaluation's method name of one variant restricted to ``families``."""
    return VARIANT_NAMES[variant] if len(families) == n_all else f"{VARIANT_NAMES[variant]} [{'+'.join(families)}]"


# ------------------------------------------------------------------ selection frequency
@dataclass
class SelectionFrequency:
    """How often each feature (and family) is Top-1, in the Top-3, the Top-5, or selected at all.

    Made by :func:`selection_frequency`. Counts are over the ``n_fits`` outer fits of one method; the
    ``*_pct`` columns are shares of the Top-k slots (count / (k x fits), the paper's convention), and for
    "selected" the share of fits that kept the feature (by family: of all selections).

    Parameters
    ----------
    method : str
        The method whose fits were counted.
    n_fits : int
        Its outer fits (folds x seeds).
    by_feature : pandas.DataFrame
        feature, family, top1, top3, top5, selected (counts) and their ``*_pct``.
    by_family : pandas.DataFrame
        family, n_features, top1, top3, top5, selected (counts) and their ``*_pct``.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.experiments.ablation import selection_frequency
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> freq = selection_frequency(result, "HTC-Reduced")
    >>> freq.method, freq.n_fits
    ('HTC-Reduced', 3)
    >>> freq.by_family[["family", "n_features", "top1", "top3", "selected"]]
          family  n_features  top1  top3  selected
    0   Dynamics          19     2     5         5
    1   Position          14     0     2         2
    2  Stability          10     0     0         1
    3  Structure           5     1     1         1
    """

    method: str
    n_fits: int
    by_feature: pd.DataFrame     # feature, family, top1, top3, top5, selected (counts) + *_pct
    by_family: pd.DataFrame      # family, n_features, top1, top3, top5, selected (counts) + *_pct

    def to_frame(self) -> pd.DataFrame:
        """A copy of the per-feature counts.

        Returns
        -------
        pandas.DataFrame
            ``by_feature``, one row per feature in the paper's order.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> from htc_core.calibration.evaluation import evaluate
        >>> from htc_core.experiments.ablation import selection_frequency
        >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
        >>> freq = selection_frequency(result, "HTC-Reduced")
        >>> freq.to_frame()[["feature", "family", "top1", "selected"]].head(2)
                      feature    family  top1  selected
        0  top1_gradient_mean  Dynamics     1         1
        1   top1_gradient_std  Dynamics     0         0
        """
        return self.by_feature.copy()

    def to_dict(self) -> dict:
        """The counts as JSON-ready values (missing numbers as None).

        Returns
        -------
        dict
            Keys method, n_fits, by_feature and by_family (lists of records).

        Examples
        --------
        >>> from htc_core.formats import load
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> from htc_core.calibration.evaluation import evaluate
        >>> from htc_core.experiments.ablation import selection_frequency
        >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
        >>> freq = selection_frequency(result, "HTC-Reduced")
        >>> d = freq.to_dict()
        >>> list(d), d["by_family"][0]["family"], d["by_family"][0]["top1"]
        (['method', 'n_fits', 'by_feature', 'by_family'], 'Dynamics', 2)
        """

        def records(df):
            return [{k: (finite_or_none(v) if isinstance(v, float) else (int(v) if isinstance(v, (int, np.integer)) else v))
                     for k, v in r.items()} for r in df.to_dict("records")]

        return {"method": self.method, "n_fits": int(self.n_fits), "by_feature": records(self.by_feature),
                "by_family": records(self.by_family)}

    def top(self, level: str = "top1", n: int = 10) -> pd.DataFrame:
        """The ``n`` most frequent features at one level, like the paper's table.

        Parameters
        ----------
        level : {"top1", "top3", "top5", "selected"}, default "top1"
            The level.
        n : int, default 10
            The most features listed (only those counted at least once).

        Returns
        -------
        pandas.DataFrame
            Columns feature, family, the count and its percentage; most frequent first, ties by name.

        Raises
        ------
        ValueError
            If ``level`` is not one of the four.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> from htc_core.calibration.evaluation import evaluate
        >>> from htc_core.experiments.ablation import selection_frequency
        >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
        >>> freq = selection_frequency(result, "HTC-Reduced")
        >>> freq.top("selected", 2)
                            feature    family  selected  selected_pct
        16  step_progression_spread  Dynamics         2     66.666667
        12       token_gradient_max  Dynamics         2     66.666667
        """
        if level not in dict(LEVELS):
            raise ValueError(f"level must be one of {[lv for lv, _ in LEVELS]}, got {level!r}")
        df = self.by_feature[self.by_feature[level] > 0]
        return df.sort_values([level, "feature"], ascending=[False, True]).head(n)[
            ["feature", "family", level, f"{level}_pct"]]


def selection_frequency(result: EvaluationResult, method: str = "HTC-Reduced") -> SelectionFrequency:
    """How often each feature of ``method``'s outer fits is Top-1, in the Top-3, the Top-5, or selected.

    Ranks are by absolute standardized weight, non-zero weights only. Percentages: for Top-1/3/5, the share of
    all Top-k slots (count / (k x fits), the paper's convention); for "selected", the share of fits that kept
    the feature (by family: of all selections).

    Parameters
    ----------
    result : EvaluationResult
        An evaluation (:func:`~htc_core.calibration.evaluation.evaluate`).
    method : str, default "HTC-Reduced"
        A feature-selecting method of the result (one with weights).

    Returns
    -------
    SelectionFrequency
        The counts by feature and by family.

    Raises
    ------
    ValueError
        If ``result`` is not an EvaluationResult or ``method`` has no weights in it.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.experiments.ablation import selection_frequency
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> freq = selection_frequency(result, "HTC-Reduced")
    >>> freq.top("top1", 3)
                   feature     family  top1   top1_pct
    45    last_token_count  Structure     1  33.333333
    12  token_gradient_max   Dynamics     1  33.333333
    0   top1_gradient_mean   Dynamics     1  33.333333
    >>> selection_frequency(result, "LastStep-TP")
    Traceback (most recent call last):
    ...
    ValueError: method must be one of the feature-selecting methods of the result ['HTC-Reduced'], got 'LastStep-TP'
    """
    if not isinstance(result, EvaluationResult):
        raise ValueError(f"result must be an EvaluationResult, got {type(result).__name__}")
    if method not in result.weights:
        raise ValueError(f"method must be one of the feature-selecting methods of the result "
                         f"{sorted(result.weights)}, got {method!r}")
    from ..features import REGISTRY

    W = np.abs(np.asarray(result.weights[method], dtype=np.float64))
    n_fits, d = W.shape
    names = _names_in_order(d)
    order = np.argsort(-W, axis=1, kind="stable")
    counts = {}
    for level, k in LEVELS:
        c = np.zeros(d, dtype=np.int64)
        if k is None:
            c += (W > 0).sum(axis=0)
        else:
            for i in range(n_fits):
                top = order[i, :k]
                c[top[W[i, top] > 0]] += 1
        counts[level] = c
    fam = [REGISTRY[n].family if n in REGISTRY else "" for n in names]
    by_feature = pd.DataFrame({"feature": names, "family": fam, **counts})
    by_family = by_feature.groupby("family", sort=False).agg(
        n_features=("feature", "size"), **{lv: (lv, "sum") for lv, _ in LEVELS}).reset_index()
    for level, k in LEVELS:
        slots = max(1, int(by_feature[level].sum())) if k is None else max(1, k * n_fits)
        by_feature[f"{level}_pct"] = 100.0 * by_feature[level] / (n_fits if k is None else slots)
        by_family[f"{level}_pct"] = 100.0 * by_family[level] / slots
    return SelectionFrequency(method=method, n_fits=int(n_fits), by_feature=by_feature, by_family=by_family)


def _names_in_order(d: int) -> list[str]:
    """Feature names in column order (the paper's order for the 48 features)."""
    from ..features import FEATURE_NAMES

    if d == len(FEATURE_NAMES):
        return list(FEATURE_NAMES)
    return [f"x{i}" for i in range(d)]


# ------------------------------------------------------------------ ablation
@dataclass
class AblationResult:
    """HTC-Full / HTC-Reduced on each combination of feature families (made by :func:`ablation`).

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per variant and combination, best AUROC first within a variant: variant, families
        ("+"-joined), n_families, n_columns, method, and every metric's mean and std (also ``n_features``).
    selection : dict of str to SelectionFrequency
        Variant -> the selection frequency of its all-families fits.
    evaluation : EvaluationResult
        The underlying evaluation, every combination a method.
    notes : list of str, default []
        The evaluation's notes.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> from htc_core.experiments.ablation import ablation
    >>> result = ablation(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> len(result.rows), list(result.selection), result.evaluation.methods[0]
    (15, ['reduced'], 'HTC-Reduced')
    """

    rows: pd.DataFrame            # variant, families, n_families, n_columns, method, metrics mean/std, n_features
    selection: dict               # variant -> SelectionFrequency (all-families fits)
    evaluation: EvaluationResult
    notes: list = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the rows: one per variant and family combination.

        Returns
        -------
        pandas.DataFrame
            The ``rows`` table.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> from htc_core.experiments.ablation import ablation
        >>> result = ablation(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> result.to_frame()[["families", "n_columns", "auroc_mean"]].round(3).head(3)
                               families  n_columns  auroc_mean
        0  Position+Stability+Structure         29       0.909
        1            Position+Stability         24       0.909
        2           Stability+Structure         15       0.909
        """
        return self.rows.copy()

    def to_dict(self) -> dict:
        """The result as JSON-ready values (missing numbers as None).

        Returns
        -------
        dict
            Keys experiment ("ablation"), n, positive_rate, seeds, n_splits, profile, top_k, rows (families as
            lists, each metric as {"mean", "std"}), selection_frequency (by variant) and notes.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> from htc_core.experiments.ablation import ablation
        >>> result = ablation(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> row = result.to_dict()["rows"][0]
        >>> row["families"], row["n_columns"], round(row["auroc"]["mean"], 3)
        (['Position', 'Stability', 'Structure'], 29, 0.909)
        """
        rows = [{"variant": r["variant"], "families": r["families"].split("+"), "n_columns": int(r["n_columns"]),
                 **{m: {"mean": finite_or_none(r[f"{m}_mean"]), "std": finite_or_none(r[f"{m}_std"])} for m in (*METRICS, "n_features")}}
                for r in self.rows.to_dict("records")]
        ev = self.evaluation
        return {"experiment": "ablation", "n": int(ev.n), "positive_rate": float(ev.positive_rate),
                "seeds": list(ev.seeds), "n_splits": int(ev.n_splits), "profile": ev.profile, "top_k": int(ev.top_k),
                "rows": rows, "selection_frequency": {v: s.to_dict() for v, s in self.selection.items()},
                "notes": list(self.notes)}

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
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> from htc_core.experiments.ablation import ablation
        >>> result = ablation(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> import json
        >>> json.loads(result.to_json())["experiment"]
        'ablation'
        """
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """Plain text: each variant's combinations by AUROC, then the selection frequency by family and the
        most frequent features.

        Returns
        -------
        str
            The table.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> from htc_core.experiments.ablation import ablation
        >>> result = ablation(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
        >>> print(result.table())
        feature-family ablation: n = 16, 3-fold CV x 1 repeat(s) (seeds 42), metrics on pooled out-of-fold
        predictions, sorted by AUROC
        <BLANKLINE>
        HTC-Reduced
        families (columns)                                   AUROC           Brier             ECE   kept
        Position+Stability+Structure (29)            0.909 ± 0.000   0.143 ± 0.000   0.235 ± 0.000    3.7
        ...
        """
        ev = self.evaluation
        out = [f"feature-family ablation: n = {ev.n}, {ev.n_splits}-fold CV x {len(ev.seeds)} repeat(s) "
               f"(seeds {', '.join(map(str, ev.seeds))}), metrics on pooled out-of-fold predictions, sorted by AUROC"]
        for v in self.rows.variant.unique():
            r = self.rows[self.rows.variant == v]
            out += ["", f"{VARIANT_NAMES[v]}", f"{'families (columns)':<42}{'AUROC':>16}{'Brier':>16}{'ECE':>16}{'kept':>7}"]
            for x in r.to_dict("records"):
                label = f"{x['families']} ({x['n_columns']})"
                out.append(f"{label:<42}" + "".join(f"{x[f'{m}_mean']:.3f} ± {x[f'{m}_std']:.3f}".rjust(16)
                                                     for m in ("auroc", "brier", "ece"))
                           + f"{x['n_features_mean']:7.1f}")
        for v, s in self.selection.items():
            out += ["", f"feature selection frequency, {s.method} ({s.n_fits} fits: folds x seeds)"]
            fam = s.by_family
            out.append(f"{'family':<12}{'features':>9}" + "".join(f"{lv:>16}" for lv, _ in LEVELS))
            for x in fam.to_dict("records"):
                out.append(f"{x['family']:<12}{x['n_features']:>9}" + "".join(
                    f"{x[lv]:>6} ({x[f'{lv}_pct']:5.1f}%)".rjust(16) for lv, _ in LEVELS))
            for lv, _ in LEVELS[:3]:
                top = s.top(lv, 5)
                out.append(f"{lv}: " + ", ".join(f"{a} {c}" for a, c in zip(top.feature, top[lv])))
        return "\n".join(out + [f"note: {n}" for n in self.notes])


def ablation(data, labels=None, *, variants: Sequence[str] = ("full", "reduced"), seeds=3, n_splits: int = 5,
             profile: str | None = None, top_k: int | None = None, alphas: Sequence[float] = DEFAULT_ALPHAS,
             inner_folds: int = 5, max_iter: int = 1000,
             progress: Callable[[int, int, str], None] | None = None) -> AblationResult:
    """The 15-combination feature-family ablation, same protocol as :func:`evaluate`.

    Parameters
    ----------
    data : TraceSet, FeatureMatrix, DataFrame or array
        Runs or their 48 features.
    labels : array-like, optional
        Labels for features (default: the trace set's).
    variants : sequence of str, default=("full", "reduced")
        HTC variants.
    seeds, n_splits, profile, top_k, alphas, inner_folds, max_iter, progress
        As :func:`evaluate`.

    Returns
    -------
    AblationResult
        One row per family combination and variant (``to_frame()``, ``table()``).

    Raises
    ------
    ValueError
        If ``data`` is neither a TraceSet nor the 48 HTC features, or a variant is unknown.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> from htc_core.features import extract
    >>> from htc_core.experiments.ablation import ablation
    >>> result = ablation(extract(ts), ts.labels, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,),
    ...                   inner_folds=3)
    >>> len(result.to_frame())
    15
    >>> result.rows[["families", "auroc_mean"]].round(3).tail(1)
         families  auroc_mean
    14  Structure       0.673
    """
    from ..features import FEATURE_NAMES
    from ..calibration.evaluation import evaluate

    from ..traces import TraceSet

    if not isinstance(data, TraceSet):
        shape = np.shape(getattr(data, "values", data))
        if len(shape) != 2 or shape[1] != len(FEATURE_NAMES):
            raise ValueError(f"data must be a TraceSet or hold the {len(FEATURE_NAMES)} HTC features (to split them "
                             f"into families), got shape {shape}")
    variants = check_variants(variants)
    combos = family_combinations()
    n_all = len(combos[0])
    methods = [HTCMethod(_method_name(v, c, n_all), v, None if len(c) == n_all else c) for v in variants for c in combos]
    ev = evaluate(data, labels, seeds=seeds, n_splits=n_splits, profile=profile, top_k=top_k, alphas=alphas,
                  inner_folds=inner_folds, methods=methods, max_iter=max_iter, progress=progress)
    from ..features import family_of

    rows = []
    for v in variants:
        for c in combos:
            name = _method_name(v, c, n_all)
            s = ev.summary[name]
            row = {"variant": v, "families": "+".join(c), "n_families": len(c),
                   "n_columns": sum(family_of(f) in c for f in FEATURE_NAMES), "method": name}
            for k in (*METRICS, "n_features"):
                row[f"{k}_mean"], row[f"{k}_std"] = s[k]["mean"], s[k]["std"]
            rows.append(row)
    frame = pd.DataFrame(rows).sort_values(["variant", "auroc_mean"], ascending=[True, False], kind="stable")
    frame["variant"] = pd.Categorical(frame.variant, categories=variants, ordered=True)
    frame = frame.sort_values(["variant", "auroc_mean"], ascending=[True, False], kind="stable").reset_index(drop=True)
    frame["variant"] = frame.variant.astype(str)
    selection = {v: selection_frequency(ev, VARIANT_NAMES[v]) for v in variants}
    return AblationResult(rows=frame, selection=selection, evaluation=ev, notes=list(ev.notes))
