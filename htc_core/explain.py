"""Why a trajectory got its confidence, and where calibration changed the verdict.

Everything here turns fitted models, feature matrices and evaluation results
into small typed result objects (data frames and dataclasses) that
``htc_core.app.plots`` draws and the pages show; nothing here imports Streamlit.

- :func:`explain_trajectory`: per-feature contributions to the logit
  (weight x standardized value, summing with the intercept to the model's
  logit) and plain-language reasons, each comparing the trajectory's value
  with the distribution of the same feature over successful runs.
- :func:`confidence_examples`: over-confident failures (baseline high, HTC
  low, wrong) and under-confident successes (baseline low, HTC high, right).
- :func:`reliability_curves`, :func:`group_metrics`, :func:`group_curves`:
  views of an evaluation's out-of-fold predictions (same binning as the ECE).
- :func:`step_timeline`, :func:`token_steps`: what the inspector shows of one
  trajectory.
- :func:`weights_frame`, :func:`selection_frequency`, :func:`dataset_weights`:
  the feature-weight views.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .features import FEATURE_NAMES, REGISTRY, build_context
from .calibration.metrics import ReliabilityCurve, auroc, brier_score, expected_calibration_error, reliability_curve
from .traces import TraceSet

__all__ = [
    "TrajectoryExplanation", "explain_trajectory", "describe_position", "ExampleSet", "confidence_examples",
    "reliability_curves", "group_metrics", "group_curves", "step_timeline", "StepTokens", "token_steps",
    "weights_frame", "selection_frequency", "dataset_weights", "DatasetWeights", "feature_table",
    "percentile_of",
]


# ------------------------------------------------------------------ helpers
def feature_table() -> pd.DataFrame:
    """The registry as a frame: feature, code, family, group, display_name, formula, description."""
    return pd.DataFrame([{"feature": s.name, "code": s.code, "family": s.family, "group": s.group,
                          "display_name": s.display_name, "formula": s.formula, "description": s.description}
                         for s in REGISTRY.values()])


def percentile_of(value: float, reference: np.ndarray) -> float:
    """Percent of ``reference`` below ``value`` (ties count one half); NaN for an empty reference."""
    ref = np.asarray(reference, dtype=np.float64)
    ref = ref[np.isfinite(ref)]
    if ref.size == 0 or not np.isfinite(value):
        return float("nan")
    below = np.count_nonzero(ref < value)
    equal = np.count_nonzero(ref == value)
    return float(100.0 * (below + 0.5 * equal) / ref.size)


def describe_position(pct: float) -> str:
    """'far below' / 'below' / 'close to' / 'above' / 'far above' for a percentile."""
    if not np.isfinite(pct):
        return "not comparable with"
    if pct < 5:
        return "far below"
    if pct < 25:
        return "below"
    if pct > 95:
        return "far above"
    if pct > 75:
        return "above"
    return "close to"


def _ordinal(p: float) -> str:
    n = int(round(p))
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _check_matrix(X, name: str = "X") -> np.ndarray:
    values = X.values if hasattr(X, "values") and hasattr(X, "profile") else X
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D feature matrix, got shape {arr.shape}")
    return arr


# ------------------------------------------------------- one trajectory
@dataclass
class TrajectoryExplanation:
    """Contributions of every feature to one trajectory's logit, and the strongest reasons in words.

    ``table`` columns: feature, code, family, display_name, formula, value, z
    (standardized value), weight, contribution (= weight x z), success_median,
    success_percentile (percent of successful reference runs below this value),
    position ('far below' ... 'far above'). Sorted by |contribution|, largest first.
    ``intercept + table.contribution.sum() == logit``.
    """

    index: int
    id: str
    variant: str
    intercept: float
    logit: float
    confidence: float
    table: pd.DataFrame
    reasons: list[str]
    n_reference: int
    reference: str

    @property
    def summary(self) -> str:
        head = f"Calibrated confidence {self.confidence:.2f} (logit {self.logit:+.2f}, HTC-{self.variant.capitalize()})."
        if not self.reasons:
            return head + " No feature moves this trajectory's logit away from the intercept."
        return head + " Strongest reasons: " + " ".join(self.reasons)


def explain_trajectory(model, X, index: int, *, labels=None, groups=None, ids=None, n_reasons: int = 3,
                       min_abs_contribution: float = 0.05) -> TrajectoryExplanation:
    """Explain row ``index`` of ``X`` under a fitted ``HTCCalibrator``.

    ``labels`` (1 success, 0 failure, NaN unknown) and ``groups`` (e.g. the
    dataset of every row) choose the reference: successful runs of the same
    group (all successful runs when the group has fewer than 5).
    """
    Xv = _check_matrix(X)
    n = Xv.shape[0]
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not (0 <= index < n):
        raise ValueError(f"index must be a row of X (0..{n - 1}), got {index!r}")
    index = int(index)
    contrib = model.contributions(Xv[index:index + 1])[0]
    z = (Xv[index] - model.mean_) / model.scale_
    w = model.coef_[0]
    logit = float(model.intercept_[0] + contrib.sum())
    conf = float(1.0 / (1.0 + np.exp(-logit)))
    y = np.full(n, np.nan) if labels is None else np.asarray(labels, dtype=np.float64).reshape(-1)
    if y.shape[0] != n:
        raise ValueError(f"labels must have {n} entries, got {y.shape[0]}")
    succ = y == 1
    ref_mask = succ.copy()
    ref_name = "successful runs"
    if groups is not None:
        g = np.asarray(groups, dtype=object)
        same = succ & (g == g[index])
        if same.sum() >= 5:
            ref_mask = same
            ref_name = f"successful runs of {g[index]}"
    ref = Xv[ref_mask]
    names = list(model.feature_names_in_)
    col = [FEATURE_NAMES.index(nm) if nm in FEATURE_NAMES else None for nm in names]
    rows = []
    for j, nm in enumerate(names):
        spec = REGISTRY.get(nm)
        v = float(Xv[index, col[j] if col[j] is not None else j])
        refj = ref[:, col[j] if col[j] is not None else j] if len(ref) else np.zeros(0)
        pct = percentile_of(v, refj)
        rows.append({
            "feature": nm, "code": spec.code if spec else nm, "family": spec.family if spec else "",
            "display_name": spec.display_name if spec else nm, "formula": spec.formula if spec else "",
            "value": v, "z": float(z[j]), "weight": float(w[j]), "contribution": float(contrib[j]),
            "success_median": float(np.median(refj)) if len(refj) else float("nan"),
            "success_percentile": pct, "position": describe_position(pct),
        })
    table = pd.DataFrame(rows)
    table = table.reindex(table["contribution"].abs().sort_values(ascending=False, kind="stable").index)
    table = table.reset_index(drop=True)
    reasons = []
    for _, r in table.iterrows():
        if len(reasons) >= n_reasons or abs(r["contribution"]) < min_abs_contribution:
            break
        effect = "lowers" if r["contribution"] < 0 else "raises"
        if np.isfinite(r["success_percentile"]):
            where = (f"{r['display_name']} is {r['position']} typical {ref_name} "
                     f"({_ordinal(r['success_percentile'])} percentile of {len(ref)})")
        else:
            where = f"{r['display_name']} is {r['value']:.3g} (no labeled successful runs to compare with)"
        reasons.append(f"{where}; this {effect} the confidence (logit {r['contribution']:+.2f}).")
    tid = str(ids[index]) if ids is not None else str(index)
    return TrajectoryExplanation(index=index, id=tid, variant=str(model.variant), intercept=float(model.intercept_[0]),
                                 logit=logit, confidence=conf, table=table, reasons=reasons,
                                 n_reference=int(len(ref)), reference=ref_name)


# ---------------------------------------------------------------- examples
@dataclass
class ExampleSet:
    """Where calibration changed the verdict, like the paper's qualitative examples.

    ``over``: over-confident failures (baseline high, HTC low, wrong), largest
    drop first. ``under``: under-confident successes (baseline low, HTC high,
    right), largest rise first. Columns: position, id, dataset, model,
    question, answer, gold, success, baseline, htc, change (htc - baseline).
    """

    baseline: str
    htc: str
    over: pd.DataFrame
    under: pd.DataFrame


def confidence_examples(meta: pd.DataFrame, labels, baseline_conf, htc_conf, *, baseline: str, htc: str,
                        n: int = 5) -> ExampleSet:
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    b = np.asarray(baseline_conf, dtype=np.float64).reshape(-1)
    h = np.asarray(htc_conf, dtype=np.float64).reshape(-1)
    if not (len(y) == len(b) == len(h) == len(meta)):
        raise ValueError(f"meta, labels, baseline_conf and htc_conf must have one entry per trajectory, got "
                         f"{len(meta)}, {len(y)}, {len(b)}, {len(h)}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    change = h - b
    cols = [c for c in ("id", "dataset", "model", "question", "answer", "gold") if c in meta.columns]
    base = meta[cols].reset_index(drop=True).copy()
    base.insert(0, "position", np.arange(len(meta)))
    base["success"] = y
    base["baseline"] = b
    base["htc"] = h
    base["change"] = change
    ok = np.isfinite(b) & np.isfinite(h)
    over = base[ok & (y == 0) & (change < 0)].sort_values("change", kind="stable").head(n)
    under = base[ok & (y == 1) & (change > 0)].sort_values("change", ascending=False, kind="stable").head(n)
    return ExampleSet(baseline=baseline, htc=htc, over=over.reset_index(drop=True), under=under.reset_index(drop=True))


# ----------------------------------------------------------- evaluation views
def reliability_curves(labels, predictions: Mapping[str, np.ndarray], *, n_bins: int = 10,
                       interval: str | None = "wilson") -> dict[str, ReliabilityCurve]:
    """One reliability curve per method (the metrics module's binning, so it agrees with the ECE)."""
    y = np.asarray(labels, dtype=np.float64)
    out = {}
    for name, p in predictions.items():
        p = np.asarray(p, dtype=np.float64)
        ok = np.isfinite(p) & np.isfinite(y)
        if ok.sum() == 0:
            continue
        out[name] = reliability_curve(y[ok], p[ok], n_bins=n_bins, interval=interval)
    return out


def _safe_metrics(y: np.ndarray, p: np.ndarray) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"ece": expected_calibration_error(y, p), "brier": brier_score(y, p), "auroc": auroc(y, p)}


def group_metrics(labels, predictions: Mapping[str, np.ndarray], groups) -> pd.DataFrame:
    """ECE, Brier and AUROC of every method inside every group (AUROC NaN with one class).

    Columns: group, method, n, success_rate, ece, brier, auroc, note.
    """
    y = np.asarray(labels, dtype=np.float64)
    g = pd.Series(np.asarray(groups, dtype=object)).fillna("(none)").astype(str).to_numpy()
    rows = []
    for grp in sorted(set(g)):
        m = (g == grp) & np.isfinite(y)
        if not m.any():
            continue
        for name, p in predictions.items():
            p = np.asarray(p, dtype=np.float64)
            mm = m & np.isfinite(p)
            if not mm.any():
                continue
            met = _safe_metrics(y[mm], p[mm])
            note = "AUROC undefined: one outcome only" if not np.isfinite(met["auroc"]) else ""
            rows.append({"group": grp, "method": name, "n": int(mm.sum()), "success_rate": float(y[mm].mean()),
                         **met, "note": note})
    return pd.DataFrame(rows, columns=["group", "method", "n", "success_rate", "ece", "brier", "auroc", "note"])


def group_curves(labels, prediction, groups, *, n_bins: int = 10) -> dict[str, ReliabilityCurve]:
    y = np.asarray(labels, dtype=np.float64)
    p = np.asarray(prediction, dtype=np.float64)
    g = pd.Series(np.asarray(groups, dtype=object)).fillna("(none)").astype(str).to_numpy()
    out = {}
    for grp in sorted(set(g)):
        m = (g == grp) & np.isfinite(y) & np.isfinite(p)
        if m.any():
            out[grp] = reliability_curve(y[m], p[m], n_bins=n_bins)
    return out


# ----------------------------------------------------------- the inspector
def step_timeline(ts: TraceSet, index: int, *, profile: str = "paper", top_k: int = 5) -> pd.DataFrame:
    """Per-step statistics of trajectory ``index``: step, name, tokens, mean r, top-1/top-k confidence,
    entropy, concentration, spread, skewness."""
    if not (0 <= int(index) < ts.n_trajectories):
        raise ValueError(f"index must be a trajectory of the set (0..{ts.n_trajectories - 1}), got {index!r}")
    one = ts.take([int(index)])
    st = build_context(one, profile=profile, top_k=top_k).steps
    return pd.DataFrame({
        "step": np.arange(1, one.n_steps + 1), "name": [str(v or "") for v in one.step_name],
        "tokens": st.n.astype(int), "mean_confidence": st.mu, "top1_confidence": st.top1,
        "topk_confidence": st.topk, "entropy": st.entropy, "concentration": st.concentration,
        "spread": st.spread, "skewness": st.skewness,
    })


@dataclass
class StepTokens:
    step: int
    name: str
    tokens: list          # token strings (placeholders when the source had none)
    probability: np.ndarray
    has_token_text: bool
    text: str | None = None


def token_steps(ts: TraceSet, index: int, *, profile: str = "paper", top_k: int = 5,
                max_tokens: int = 4000) -> list[StepTokens]:
    """The tokens of every step of trajectory ``index`` with their probability r (first ``max_tokens``)."""
    from .confidence import token_confidence

    if not (0 <= int(index) < ts.n_trajectories):
        raise ValueError(f"index must be a trajectory of the set (0..{ts.n_trajectories - 1}), got {index!r}")
    one = ts.take([int(index)])
    r = token_confidence(one.logprob, one.top_logprobs, profile=profile, top_k=top_k).r
    out, shown = [], 0
    for s in range(one.n_steps):
        a, b = int(one.step_offsets[s]), int(one.step_offsets[s + 1])
        b = min(b, a + max(0, max_tokens - shown))
        shown += b - a
        has = one.tokens is not None
        toks = [("" if t is None else str(t)) for t in one.tokens[a:b]] if has else ["▪"] * (b - a)
        out.append(StepTokens(step=s + 1, name=str(one.step_name[s] or ""), tokens=toks,
                              probability=np.asarray(r[a:b]), has_token_text=has, text=one.step_text[s]))
    return out


# ---------------------------------------------------------- feature weights
def weights_frame(models: Mapping[str, object]) -> pd.DataFrame:
    """Long frame of the weights of fitted calibrators: model, feature, code, family, display_name,
    formula, weight (on standardized features), selected."""
    ft = feature_table().set_index("feature")
    rows = []
    for label, m in models.items():
        for nm, w in zip(m.feature_names_in_, m.coef_[0]):
            spec = ft.loc[nm] if nm in ft.index else None
            rows.append({"model": label, "feature": nm,
                         "code": spec["code"] if spec is not None else nm,
                         "family": spec["family"] if spec is not None else "",
                         "display_name": spec["display_name"] if spec is not None else nm,
                         "formula": spec["formula"] if spec is not None else "",
                         "weight": float(w), "selected": bool(w != 0)})
    return pd.DataFrame(rows)


def selection_frequency(result) -> pd.DataFrame:
    """How often each feature was kept (non-zero weight) across the outer folds and seeds of an evaluation.

    Columns: method, feature, code, family, times, fits, frequency.
    """
    fits = len(result.seeds) * int(result.n_splits)
    ft = feature_table().set_index("feature")
    rows = []
    for method, counts in result.selected_counts.items():
        for nm, c in counts.items():
            rows.append({"method": method, "feature": nm, "code": ft.loc[nm, "code"] if nm in ft.index else nm,
                         "family": ft.loc[nm, "family"] if nm in ft.index else "", "times": int(c), "fits": fits,
                         "frequency": float(c) / fits if fits else float("nan")})
    return pd.DataFrame(rows, columns=["method", "feature", "code", "family", "times", "fits", "frequency"])


@dataclass
class DatasetWeights:
    """Weights of one calibrator per group: ``weights`` [groups x features] and why groups were skipped."""

    variant: str
    weights: pd.DataFrame
    skipped: dict = field(default_factory=dict)


def dataset_weights(X, labels, groups, *, variant: str = "full", min_per_class: int = 5,
                    alphas: Sequence[float] | None = None) -> DatasetWeights:
    """Fit one HTC calibrator per group (e.g. dataset) and collect the weights."""
    from .calibration.calibrators import DEFAULT_ALPHAS, HTCCalibrator

    Xv = _check_matrix(X)
    y = np.asarray(labels, dtype=np.float64)
    g = pd.Series(np.asarray(groups, dtype=object)).fillna("(none)").astype(str).to_numpy()
    rows, index, skipped = [], [], {}
    for grp in sorted(set(g)):
        m = (g == grp) & np.isfinite(y)
        n_pos = int(y[m].sum())
        n_neg = int(m.sum()) - n_pos
        if min(n_pos, n_neg) < min_per_class:
            skipped[grp] = (f"{n_pos} successes and {n_neg} failures; at least {min_per_class} of each are "
                            "needed to fit a calibrator")
            continue
        cal = HTCCalibrator(variant=variant, alphas=alphas or DEFAULT_ALPHAS).fit(Xv[m], y[m])
        rows.append(cal.coef_[0])
        index.append(grp)
    names = list(FEATURE_NAMES) if Xv.shape[1] == len(FEATURE_NAMES) else [f"x{i}" for i in range(Xv.shape[1])]
    w = pd.DataFrame(np.array(rows).reshape(len(rows), Xv.shape[1]), index=index, columns=names)
    return DatasetWeights(variant=variant, weights=w, skipped=skipped)


# ------------------------------------------------------------ tables
def metrics_frame(result) -> pd.DataFrame:
    """The evaluation's headline table: one row per method with ECE, Brier, AUROC as mean and std over
    repeats (pooled out-of-fold predictions), the features kept, and 'mean ± std' display strings."""
    rows = []
    for m in result.methods:
        s = result.summary[m]
        row = {"method": m}
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
        df[label] = [("n/a" if not np.isfinite(a) else f"{a:.3f} ± {b:.3f}" if k != "features" else f"{a:.1f} ± {b:.1f}")
                     for a, b in zip(df[f"{k}_mean"], df[f"{k}_std"])]
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


def overall_metrics(labels, predictions: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """ECE, Brier and AUROC of each prediction on the labeled rows (AUROC NaN with one class)."""
    y = np.asarray(labels, dtype=np.float64)
    df = group_metrics(y, predictions, np.full(len(y), "all", dtype=object))
    return df.drop(columns=["group"])


def feature_values(X, groups, labels, feature: str) -> pd.DataFrame:
    """One feature's values with their group and outcome (for side-by-side distributions)."""
    Xv = _check_matrix(X)
    j = REGISTRY[feature].index if feature in REGISTRY else None
    if j is None:
        raise ValueError(f"unknown feature {feature!r}; valid features: {', '.join(FEATURE_NAMES)}")
    g = pd.Series(np.asarray(groups, dtype=object)).fillna("(none)").astype(str)
    return pd.DataFrame({"group": g.to_numpy(), "success": np.asarray(labels, dtype=np.float64), "value": Xv[:, j]})
