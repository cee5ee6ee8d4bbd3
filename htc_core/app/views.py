"""Page view-models: the tables and small choices the pages show, built from workspaces, evaluation results
and fitted models.

Pure pandas/numpy (no Streamlit), so every number a page shows is computed
here or in ``htc_core.explain`` / ``htc_core.calibration`` and tested without
the app. Pages call these and draw the result with ``st.*`` and ``plots``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..explain import ExampleSet, confidence_examples, group_curves, group_metrics
from .explain_views import export_frame, mistakes_for, oof_column, signal_frame, step_texts  # noqa: F401 (pages)
from ..features import FEATURE_NAMES, REGISTRY
from ..viz.tables import (BEST_MARK, HTC_METHODS, SelectionView, metrics_frame, metrics_long,  # noqa: F401 (pages)
                          selection_frequency, selection_view, table_ece, weights_frame)
from .workspace import Workspace, browse

__all__ = [
    "feature_table", "weights_frame", "selection_frequency", "SelectionView", "selection_view", "split_methods",
    "metrics_frame", "metrics_long", "overall_metrics", "oof_predictions", "table_ece", "example_baselines", "SelectiveViews", "selective_views", "CalibrationChoices",
    "calibration_choices", "ScoredSelection", "score_selection", "calibrated_confidence", "evaluated_groups",
    "group_reliability", "feature_values", "preferred_baseline", "examples_for", "projection_frame",
    "browse_confidences", "trajectory_choices", "trajectory_label", "oof_confidence",
    "outcome_word", "LinkedPair", "linked_pair", "unlabeled_extremes", "faint_rows",
]

#: baselines shown next to HTC in the reliability diagram when the evaluation names no strongest baseline
DIAGRAM_BASELINES = ("Bottom10+Platt", "GlobalTrace-TP+Platt")
#: the baseline the Examples page starts on when no evaluation says which is strongest (the first present)
EXAMPLE_BASELINES = ("GlobalTrace-TP+Platt", "LastStep-TP+Platt", "GlobalTrace-TP+Temp", "LastStep-TP+Temp",
                     "GlobalTrace-TP")
#: raw confidences the Runs page can filter on (those present in the workspace frame)
BROWSE_CONFIDENCES = ("GlobalTrace-TP", "LastStep-TP", "Bottom10", "LowestGroup", "Tail", "Verbalized")
#: at most this many trajectories are offered in the inspector's picker
MAX_CHOICES = 2000


# ------------------------------------------------------------ feature weights
def feature_table() -> pd.DataFrame:
    """The registry as a frame: feature, code, family, group, display_name, formula, description."""
    return pd.DataFrame([{"feature": s.name, "code": s.code, "family": s.family, "group": s.group,
                          "display_name": s.display_name, "formula": s.formula, "description": s.description}
                         for s in REGISTRY.values()])


# ------------------------------------------------------------ evaluation tables
#: a per-dataset weight row whose largest |weight| is under this share of the heatmap's colour scale looks blank
FAINT_SHARE = 0.1
#: an alpha at least this large (the top of the default grid: 10, 20, 50) is strong regularization
STRONG_ALPHA = 10.0


def faint_rows(dw) -> list[str]:
    """Why rows of the per-dataset weight heatmap look blank, one sentence each (ui-review 21: the "lists" row was
    all near zero without a word). The colour scale spans the largest |weight| of any dataset; a row under
    :data:`FAINT_SHARE` of it is explained by its own fit: a strong regularization chosen by its inner CV (alpha
    of at least :data:`STRONG_ALPHA`), or weights merely small next to those of the dataset that sets the scale;
    and, under 50 labeled runs, how few runs it was fitted on."""
    w = dw.weights
    if w.empty or dw.fits is None:
        return []
    peak = w.abs().max(axis=1)
    lim, top = float(peak.max()), str(peak.idxmax())
    notes = []
    for grp, mx in peak.items():
        if lim <= 0 or mx >= FAINT_SHARE * lim:
            continue
        fit = dw.fits.loc[grp]
        if fit["alpha"] >= STRONG_ALPHA:
            why = (f"its inner CV chose alpha {fit['alpha']:g}, strong regularization that shrinks every weight "
                   "toward zero: this dataset alone does not support larger weights")
        else:
            why = (f"its weights (alpha {fit['alpha']:g}) are small next to those of {top}, whose inner CV chose alpha "
                   f"{dw.fits.loc[top, 'alpha']:g} (weaker regularization, larger weights)")
        few = f"; it has only {int(fit['n'])} labeled runs ({int(fit['successes'])} successes)" if fit["n"] < 50 else ""
        notes.append(f"{grp}: largest |weight| {mx:.2f}, under {FAINT_SHARE:.0%} of the colour scale's ±{lim:.1f} "
                     f"(set by {top}), so its row looks blank: {why}{few}.")
    return notes


def split_methods(methods: Sequence[str]) -> tuple[list[str], list[str]]:
    """(HTC methods present, HTC-Reduced first; every other method in its order)."""
    htc = [m for m in HTC_METHODS if m in methods]
    return htc, [m for m in methods if m not in htc]


def overall_metrics(labels, predictions: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """ECE, Brier and AUROC of each prediction on the labeled rows (AUROC NaN with one class)."""
    y = np.asarray(labels, dtype=np.float64)
    df = group_metrics(y, predictions, np.full(len(y), "all", dtype=object))
    return df.drop(columns=["group"])


def oof_predictions(result, methods: Sequence[str]) -> dict[str, np.ndarray]:
    """The out-of-fold predictions (first repeat) of ``methods`` (NaN where a method was not evaluated,
    e.g. Verbalized on runs without a stated confidence)."""
    return {m: result.oof[m] for m in methods}


@dataclass
class SelectiveViews:
    """Risk-coverage (``calibration.selective.RiskCoverage``) and ROC frames of each method, on the runs
    the method was evaluated on (first-repeat out-of-fold confidences), and the table's AUROC."""

    risk_coverage: dict
    roc: dict
    auroc: dict


def selective_views(result, methods: Sequence[str]) -> SelectiveViews:
    from ..calibration.selective import risk_coverage_curve, roc_curve

    rc, roc = {}, {}
    for m in methods:
        p = np.asarray(result.oof[m], dtype=np.float64)
        ok = np.isfinite(p)
        if ok.sum() >= 2:
            rc[m] = risk_coverage_curve(result.labels[ok], p[ok])
            roc[m] = roc_curve(result.labels[ok], p[ok])
    return SelectiveViews(risk_coverage=rc, roc=roc,
                          auroc={m: float(result.summary[m]["auroc"]["mean"]) for m in rc})


# ------------------------------------------------------------ calibration page
@dataclass
class CalibrationChoices:
    """The Calibration page's method lists: HTC and baselines, the diagram's default methods and the
    histogram's default (an index into the evaluation's methods)."""

    htc: list[str]
    baselines: list[str]
    diagram: list[str]
    histogram_index: int


def calibration_choices(methods: Sequence[str], strongest: str | None = None) -> CalibrationChoices:
    """``strongest``: the evaluation's strongest baseline (``EvaluationResult.strongest_baseline()``), drawn
    next to HTC by default; without it the first of :data:`DIAGRAM_BASELINES` present."""
    htc, baselines = split_methods(methods)
    adapted = [m for m in baselines if m.startswith("adapted ")]     # the selection's adapted scorer, when evaluated
    if strongest in baselines:
        diagram = [*htc, *adapted, strongest]
    else:
        diagram = [*htc, *adapted, *[m for m in DIAGRAM_BASELINES if m in baselines][:1]]
    return CalibrationChoices(htc=htc, baselines=baselines, diagram=diagram,
                              histogram_index=list(methods).index(htc[0]) if htc else 0)


def calibrated_confidence(model, features) -> np.ndarray:
    """A fitted calibrator's confidence (probability of success) for every row of ``features``."""
    return model.predict_proba(features)[:, 1]


@dataclass
class ScoredSelection:
    """A workspace scored by an uploaded model: the browse frame with ``htc_confidence`` next to the
    ids, the confidences, and the metrics against GlobalTrace-TP (None without labels)."""

    frame: pd.DataFrame
    confidence: np.ndarray
    metrics: pd.DataFrame | None


def score_selection(ws: Workspace, model) -> ScoredSelection:
    conf = calibrated_confidence(model, ws.features)
    frame = ws.frame()
    frame.insert(5, "htc_confidence", conf)
    metrics = None
    if np.isfinite(ws.labels).any():
        metrics = overall_metrics(ws.labels, {"uploaded model": conf, "GlobalTrace-TP": frame["GlobalTrace-TP"]})
    return ScoredSelection(frame=frame, confidence=conf, metrics=metrics)


# ------------------------------------------------------------ compare page
#: the metric columns of :func:`group_summary` (arrows: lower / higher is better, as on Calibration)
GROUP_METRICS = ("ECE ↓", "Brier ↓", "AUROC ↑")


@dataclass
class GroupTables:
    """Compare LLMs' per-group tables: ``counts`` (the group, its labeled runs ``n`` and success rate) and
    ``metrics`` (method -> the group and that method's :data:`GROUP_METRICS`), groups in the same order."""

    counts: pd.DataFrame
    metrics: dict


def group_summary(gm: pd.DataFrame, group_by: str) -> GroupTables:
    """:func:`htc_core.explain.group_metrics` as a table of counts and one small metrics table per method, groups in
    its order. Four columns at most each: one row per group with every method's three metrics side by side was 9
    columns for two methods and scrolled sideways in the 440 px a 900 px window leaves beside the sidebar."""
    if gm.empty:
        return GroupTables(pd.DataFrame(columns=[group_by, "n", "success rate"]), {})
    renamed = gm.rename(columns={"group": group_by, "success_rate": "success rate",
                                 **dict(zip(("ece", "brier", "auroc"), GROUP_METRICS))})
    counts = renamed.groupby(group_by, sort=False).agg(
        {"n": "max", "success rate": "first"}).reset_index()      # every method scores the group's same runs
    metrics = {str(m): part[[group_by, *GROUP_METRICS]].reset_index(drop=True)
               for m, part in renamed.groupby("method", sort=False)}
    return GroupTables(counts, metrics)


def evaluated_groups(ws: Workspace, evaluated, column: str) -> np.ndarray:
    """The ``column`` (model, framework, dataset) of every evaluated trajectory, in the evaluation's order."""
    return ws.ts.meta[column].to_numpy(dtype=object)[evaluated.positions]


def group_reliability(result, groups, methods: Sequence[str]) -> dict[str, dict[str, object]]:
    """Reliability curves per group and method: {group: {method: curve}} (for faceted diagrams)."""
    curves: dict[str, dict[str, object]] = {}
    for m in methods:
        for g, c in group_curves(result.labels, result.oof[m], groups).items():
            curves.setdefault(g, {})[m] = c
    return curves


def feature_values(X, groups, labels, feature: str) -> pd.DataFrame:
    """One feature's values with their group and outcome (for side-by-side distributions)."""
    if feature not in REGISTRY:
        raise ValueError(f"unknown feature {feature!r}; valid features: {', '.join(FEATURE_NAMES)}")
    values = np.asarray(X.values if hasattr(X, "profile") else X, dtype=np.float64)
    g = pd.Series(np.asarray(groups, dtype=object)).fillna("(none)").astype(str)
    return pd.DataFrame({"group": g.to_numpy(), "success": np.asarray(labels, dtype=np.float64),
                         "value": values[:, REGISTRY[feature].index]})


# ------------------------------------------------------------ examples page
def rate_change(rate: float, base: float) -> str:
    """A rate against a base rate, as a metric's delta: the difference in percentage points and the base, e.g.
    ``"+28.6 pp vs all runs (38.9%)"``. Not "+28.6%": that reads as a relative change (38.9% x 1.286 = 50.0%)."""
    return f"{100 * (rate - base):+.1f} pp vs all runs ({base:.1%})"


def preferred_baseline(baselines: Sequence[str], strongest: str | None = None) -> int:
    """Index of the baseline the Examples page starts on: the evaluation's strongest baseline by Brier
    (``EvaluationResult.strongest_baseline()``) when given and offered, else the first of
    :data:`EXAMPLE_BASELINES` present."""
    if strongest in baselines:
        return list(baselines).index(strongest)
    pref = next((m for m in EXAMPLE_BASELINES if m in baselines), baselines[0])
    return list(baselines).index(pref)


def example_baselines(result) -> list[str]:
    """The baselines the Examples page offers: those evaluated on every run (a subset-only signal such as
    Verbalized has no confidence for some runs, so it cannot be compared run by run)."""
    _, base = split_methods(result.methods)
    return [m for m in base if result.n_of(m) == result.n]


def examples_for(ws: Workspace, evaluated, *, baseline: str, htc: str, n: int) -> ExampleSet:
    """:func:`htc_core.explain.confidence_examples` on the evaluated trajectories (out-of-fold confidences),
    with each example's workspace ``key`` (to open it in the inspector)."""
    res = evaluated.result
    meta = ws.ts.meta.iloc[evaluated.positions].reset_index(drop=True)
    exs = confidence_examples(meta, res.labels, res.oof[baseline], res.oof[htc], baseline=baseline, htc=htc, n=n)
    keys = ws.keys[evaluated.positions]
    for frame in (exs.over, exs.under):
        frame["key"] = [str(keys[int(p)]) for p in frame["position"]]
    return exs


# ------------------------------------------------------------ feature space page
def projection_frame(ws: Workspace, projection, htc_confidence: np.ndarray | None, *,
                     cap: int | None = None, seed: int = 0) -> pd.DataFrame:
    """The workspace frame with the 2-D coordinates (x, y) and the colours: baseline_confidence
    (GlobalTrace-TP) and htc_confidence (NaN when no model could be fitted). With more than ``cap`` runs,
    a uniform random sample of ``cap`` of them (seeded; ``position`` keeps each run's workspace row)."""
    idx = np.arange(len(ws))
    if cap is not None and len(ws) > cap:
        idx = np.sort(np.random.default_rng(seed).choice(len(ws), cap, replace=False))
    frame = ws.take(idx).frame() if len(idx) < len(ws) else ws.frame()
    frame["position"] = idx
    frame["x"] = projection.coords[idx, 0]
    frame["y"] = projection.coords[idx, 1]
    frame["baseline_confidence"] = frame["GlobalTrace-TP"]
    frame["htc_confidence"] = np.nan if htc_confidence is None else np.asarray(htc_confidence)[idx]
    return frame


# ------------------------------------------------------------ runs page
def browse_confidences(frame: pd.DataFrame) -> list[str]:
    """The raw confidences of ``frame`` the Runs page can filter on."""
    return [c for c in BROWSE_CONFIDENCES if c in frame.columns]


# ------------------------------------------------------------ inspector page
def trajectory_choices(frame: pd.DataFrame, needle: str, current: int | None) -> tuple[list[int], int]:
    """The positions the inspector offers (rows whose question or id contains ``needle``, or every row;
    at most 2,000) and the one to show: ``current`` when offered (or prepended when there is no search),
    the first match of a search, else the longest trajectory (the richest timeline)."""
    searching = bool(needle)
    cand = (browse(frame, text=needle)["position"].to_numpy() if searching else np.arange(len(frame)))[:MAX_CHOICES]
    if len(cand) == 0:
        return [], 0
    if current is not None and current in set(cand.tolist()):
        return cand.tolist(), int(np.flatnonzero(cand == current)[0])
    if current is not None and not searching:
        return [int(current), *cand.tolist()], 0
    if searching:
        return cand.tolist(), 0
    return cand.tolist(), int(np.argmax(frame["steps"].to_numpy()[cand]))


def missing_trajectory_note(wanted: str) -> str:
    """The inspector's message (plain text, to escape) for a link whose ``?id=`` names no trajectory of the
    current selection: an unknown or mistyped id, a deleted run set, or one the sidebar's filters leave out."""
    return (f"No trajectory {clipped(wanted, 80)} in the current selection: the id is unknown, its run set was deleted, or the "
            "sidebar's filters leave it out. Pick one below, or widen the filters.")


@dataclass
class LinkedPair:
    """The two runs of the Side by side page: their keys (None: the page's default) and the link's ids that name
    no run of the selection."""

    keys: tuple
    missing: list


def linked_pair(ws: Workspace, linked: Sequence, current: Sequence) -> LinkedPair:
    """The runs a link names (``linked``: an id or key per side, or None) where the selection holds them, else
    ``current`` (the pair chosen before, e.g. a flipped pair of Compare run sets). A side left open is filled so
    that the page never opens on one run twice: run A the longest trajectory (the inspector's default), run B
    its :func:`partner`."""
    keys, missing = list(current), []
    for side, wanted in enumerate(linked):
        if wanted:
            position = ws.position_of(wanted)
            if position is None:
                missing.append(wanted)
            else:
                keys[side] = str(ws.keys[position])
    frame = ws.frame()
    if len(frame) and keys[0] is None:
        keys[0] = str(frame["key"].iat[trajectory_choices(frame, "", None)[1]])
    if len(frame) and keys[1] is None:
        keys[1] = str(frame["key"].iat[partner(frame, ws.position_of(keys[0]))])
    return LinkedPair(tuple(keys), missing)


def partner(frame: pd.DataFrame, position: int) -> int:
    """The run to show next to run ``position`` when nobody chose one: the same question answered by another
    model, else the same question in another run, else the next longest trajectory (``position`` itself only
    when the selection holds one run)."""
    others = np.flatnonzero(np.arange(len(frame)) != position)
    if len(others) == 0:
        return int(position)
    same_q = others[(frame["question"].to_numpy()[others] == frame["question"].iat[position])]
    other_model = same_q[frame["model"].to_numpy()[same_q] != frame["model"].iat[position]]
    for pool in (other_model, same_q):
        if len(pool):
            return int(pool[0])
    steps = frame["steps"].to_numpy()[others]
    return int(others[np.argsort(-steps, kind="stable")[0]])


def short_key(value) -> str:
    """A widget-key-safe stand-in for a (possibly huge) id: its length and a hash, stable across reruns."""
    text, hashlib = "" if value is None else str(value), __import__("hashlib")
    return f"{len(text)}-{hashlib.blake2b(text.encode('utf-8', 'surrogatepass'), digest_size=8).hexdigest()}"


def clipped(value, limit: int = 200) -> str:
    """A name or id for a one-line caption: at most ``limit`` characters, saying how long it really is."""
    text = "" if value is None else str(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}... ({len(text):,} characters)"


def trajectory_label(frame: pd.DataFrame, position: int) -> str:
    """How the inspector's picker names a trajectory: its id and the start of its question."""
    q = frame["question"].iat[position]
    tid = str(frame["id"].iat[position])
    tid = tid if len(tid) <= 120 else f"{tid[:117]}..."      # a hostile id can be a megabyte
    return f"{tid} · {'(no question recorded)' if _missing(q) else str(q)[:80]}"


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip())


def blank_missing(frame: pd.DataFrame, columns: Sequence[str], missing: str = "—") -> pd.DataFrame:
    """``frame`` for a table on screen: None / NaN / blank text in ``columns`` (those present) shown as
    ``missing`` (st.dataframe writes the word "None" in a cell that has no value)."""
    out = frame.copy()
    for c in columns:
        if c in out.columns:     # a whole number read as float (a column with gaps) keeps its integer form
            out[c] = [shown_text(int(v) if isinstance(v, float) and v.is_integer() else v, missing) for v in out[c]]
    return out


def shown_text(v, missing: str = "—") -> str:
    """A metadata text for display: ``missing`` for None / NaN / blank (never the words 'None' or 'nan')."""
    return missing if _missing(v) else str(v)


def oof_confidence(evaluated, position: int, method: str) -> float | None:
    """The out-of-fold confidence of workspace row ``position`` under ``method`` (None when that row or
    method was not evaluated)."""
    if evaluated is None or method not in evaluated.result.oof:
        return None
    hit = np.flatnonzero(evaluated.positions == position)
    return float(evaluated.result.oof[method][hit[0]]) if hit.size else None


def workspace_oof(evaluated, method: str, n: int) -> np.ndarray:
    """The out-of-fold confidence (first repeat) of ``method`` for every workspace row (NaN where the row or
    the method was not evaluated)."""
    out = np.full(n, np.nan)
    if evaluated is not None and evaluated.result is not None and method in evaluated.result.oof:
        out[evaluated.positions] = evaluated.result.oof[method]
    return out


def outcome_word(success) -> str:
    return {1.0: "success", 0.0: "failure"}.get(success, "unlabeled")


def unlabeled_extremes(ws, confidence, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``n`` unlabeled runs with the lowest and the ``n`` with the highest ``confidence`` (key, id, dataset,
    model, question, answer, gold, flags, confidence): the runs to check first and the ones trusted most."""
    df = ws.frame()
    df["confidence"] = np.asarray(confidence, dtype=np.float64)
    free = df[~np.isfinite(df["success"].to_numpy(dtype=np.float64))].sort_values(["confidence", "position"])
    cols = ["key", "id", "dataset", "model", "question", "answer", "gold", "flags", "confidence"]
    return free.head(n)[cols].reset_index(drop=True), free.tail(n).iloc[::-1][cols].reset_index(drop=True)
