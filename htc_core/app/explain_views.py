"""View-models of the explanation pages (inspector, examples, runs download): tables built from
``htc_core.explain`` results; no Streamlit here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..explain import Mistakes, explain_runs, explain_trajectory, run_reasons, shape_curves, worst_mistakes
from ..features import feature_label
from .workspace import Workspace

__all__ = ["oof_column", "export_frame", "step_texts", "signal_frame", "mistakes_for"]





def oof_column(evaluated, n: int, method: str) -> np.ndarray | None:
    """Out-of-fold confidences of ``method`` for all ``n`` workspace rows (NaN where a row was not evaluated),
    or None when the evaluation has no such method yet."""
    if evaluated is None or method not in evaluated.result.oof:
        return None
    out = np.full(n, np.nan)
    out[evaluated.positions] = evaluated.result.oof[method]
    return out


def export_frame(ws: Workspace, positions, shown, evaluated=None) -> pd.DataFrame:
    """The rows ``positions`` of the workspace for download, with what the pages show of each run: id, dataset,
    model, question, final answer, gold, success, the confidence in use and its scorer (``shown``, an
    :class:`~htc_core.app.shown.InUse` of the same rows: out-of-fold where the evaluation held the run out),
    the out-of-fold HTC confidences (when evaluated), the structural flags, the three strongest reasons of each
    run's own model and the 48 features."""
    pos = np.asarray(positions, dtype=np.int64)
    if len(shown.confidence) != len(pos):
        raise ValueError(f"shown must hold one confidence per exported run ({len(pos)}), got {len(shown.confidence)}")
    sub = ws.take(pos)
    meta = sub.ts.meta
    out = pd.DataFrame({c: meta[c].to_numpy(dtype=object) for c in ("id", "dataset", "model", "question",
                                                                   "answer", "gold") if c in meta.columns})
    out = out.rename(columns={"answer": "final_answer"})
    out["success"] = sub.labels
    out["confidence"] = shown.confidence
    out["scorer"] = shown.scorer_names()
    for m in ("HTC-Reduced", "HTC-Full"):
        col = oof_column(evaluated, len(ws), m)
        if col is not None:
            out[f"{m} (out-of-fold)"] = col[pos]
    extra = explain_runs(sub.ts, sub.features)
    reasons = _reasons_by_features(ws, pos, shown)
    for k in range(3):
        extra.insert(1 + k, f"reason_{k + 1}", [r[k] if len(r) > k else "" for r in reasons])
    return pd.concat([out, extra], axis=1)


def _reasons_by_features(ws: Workspace, pos: np.ndarray, shown) -> list[list[str]]:
    """Each exported run's reasons from its own model, with signals and references taken over the selection
    (as the inspector takes them), one pass per feature matrix (the GAC's models use two profiles)."""
    out: list[list[str]] = [[] for _ in range(len(pos))]
    groups: dict = {}       # (feature matrix, the model's columns) -> the models' indices
    for k, (f, m) in enumerate(zip(shown.features, shown.models)):
        groups.setdefault((id(f), tuple(m.feature_names_in_)), []).append(k)
    for ks in groups.values():
        fm = shown.features[ks[0]]
        cols = [list(fm.names).index(nm) for nm in shown.models[ks[0]].feature_names_in_]
        which = np.full(len(ws), -1, dtype=np.int64)
        mine = np.isin(shown.which, ks)
        which[pos[mine]] = shown.which[mine]
        texts = run_reasons(np.asarray(fm.values, dtype=np.float64)[:, cols], ws.labels, ws.ts.meta["dataset"],
                            shown.models, which)
        for i in np.flatnonzero(mine):
            out[i] = texts[pos[i]]
    return out


def step_texts(ts, index: int) -> list[tuple[str, str | None]]:
    """(name, generated text) of every step of trajectory ``index``, in order."""
    a, b = int(ts.traj_offsets[index]), int(ts.traj_offsets[index + 1])
    return [(str(ts.step_name[j] or ""), ts.step_text[j]) for j in range(a, b)]


def signal_frame(explanation) -> pd.DataFrame:
    """The explanation's distinct signals as a table for the page (members joined in words)."""
    t = explanation.signals.copy()
    members = explanation.table.groupby("signal")["feature"].agg(list)       # each lead's signal, in model order
    t["related features"] = ["; ".join(feature_label(f) for f in members.get(s, []) if f != s) for s in t["signal"]]
    t["display_name"] = [feature_label(s) for s in t["signal"]]
    t = t.rename(columns={"display_name": "lead feature", "shown_value": "value (as worded)",
                          "measures": "what it measures", "value": "lead feature's value",
                          "direction": "against the typical reference run"})
    return t[["name", "value (as worded)", "what it measures", "lead feature", "lead feature's value", "kind",
              "related features", "against the typical reference run", "success_median", "comparison",
              "contribution"]]


def mistakes_for(ws: Workspace, evaluated, *, htc: str, n: int, explain: bool = True) -> Mistakes:
    """:func:`htc_core.explain.worst_mistakes` of ``htc`` on the evaluated trajectories (out-of-fold
    confidences) with their structural flags, workspace ``key`` and (``explain``) the top reason of each from
    the fold model that produced its confidence (the inspector's explanation of the same number): the strongest
    reason that pushed the confidence the wrong way (up for a failure, down for a success), the one that answers
    "why this mistake"."""
    res = evaluated.result
    pos = evaluated.positions
    meta = ws.ts.meta.iloc[pos].reset_index(drop=True)
    flags = ws.flags
    sub = type(flags)(frame=flags.frame.iloc[pos].reset_index(drop=True), available=flags.available)
    out = worst_mistakes(meta, res.labels, res.oof[htc], method=htc, flags=sub, n=n)
    for frame, wrong_way in ((out.confident_failures, 1.0), (out.doubted_successes, -1.0)):
        rows = [int(pos[int(p)]) for p in frame["position"]]
        frame["key"] = [str(ws.keys[r]) for r in rows]
        if explain and res.fold_models.get(htc):
            frame["reason"] = [mistake_reason(res.fold_model(htc, int(p)), ws, r, wrong_way)
                               for p, r in zip(frame["position"], rows)]
    return out


#: a signal moving the logit by less than this is no reason (as :func:`htc_core.explain.explain_trajectory`)
MIN_REASON = 0.05


def mistake_reason(model, ws: Workspace, row: int, wrong_way: float) -> str:
    """The strongest reason of ``model`` that moved run ``row``'s logit in the sign of ``wrong_way`` (+1: raised
    a failure's confidence, -1: lowered a success's), in the inspector's words; the strongest reason of any sign
    when none did."""
    expl = explain_trajectory(model, ws.features, row, labels=ws.labels, groups=ws.ts.meta["dataset"], n_reasons=1)
    sig = expl.signals
    if sig is not None and len(sig):
        pushed = sig[(sig["contribution"] * wrong_way >= MIN_REASON)]
        if len(pushed):
            return str(pushed.iloc[0]["reason"])
    return expl.reasons[0] if expl.reasons else "no feature moves this run far from the model's intercept"


def gam_shapes(ws: Workspace, model, order_by: str = "mean_abs"):
    """:func:`htc_core.explain.shape_curves` of an HTC-GAM fitted on the selection's labeled runs, with the
    density of those same runs under each curve."""
    return shape_curves(model, ws.features.take(np.flatnonzero(np.isfinite(ws.labels))), order_by=order_by)


def gam_choice(model) -> str:
    """In words, what HTC-GAM's inner CV chose on this selection (criterion: mean AUROC - Brier - ECE)."""
    cv = model.cv_results_
    gam, lin = cv.get("gam_criterion"), cv.get("linear_criterion")
    scores = ("" if gam is None or lin is None else
              f" (inner-CV criterion AUROC - Brier - ECE: shape functions {gam:.3f}, HTC-Reduced {lin:.3f})")
    if model.kind_ == "gam":
        return f"the shape functions won the inner CV{scores}; penalty alpha {model.alpha_:g}"
    return f"HTC-Reduced won the inner CV{scores}, so HTC-GAM scores as HTC-Reduced on this selection"
