"""View-models of the explanation pages (inspector, examples, runs download): tables built from
``htc_core.explain`` results; no Streamlit here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..explain import Mistakes, explain_runs, explain_trajectory, shape_curves, worst_mistakes
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


def export_frame(ws: Workspace, positions, evaluated=None, model=None) -> pd.DataFrame:
    """The rows ``positions`` of the workspace for download: id, dataset, model, success, the out-of-fold
    HTC confidences (when evaluated), the structural flags, the three strongest reasons of ``model`` and the
    48 features."""
    pos = np.asarray(positions, dtype=np.int64)
    sub = ws.take(pos)
    meta = sub.ts.meta
    out = pd.DataFrame({c: meta[c].to_numpy(dtype=object) for c in ("id", "dataset", "model")})
    out["success"] = sub.labels
    for m in ("HTC-Reduced", "HTC-Full"):
        col = oof_column(evaluated, len(ws), m)
        if col is not None:
            out[f"{m} (out-of-fold)"] = col[pos]
    extra = explain_runs(sub.ts, sub.features, model)
    return pd.concat([out, extra], axis=1)


def step_texts(ts, index: int) -> list[tuple[str, str | None]]:
    """(name, generated text) of every step of trajectory ``index``, in order."""
    a, b = int(ts.traj_offsets[index]), int(ts.traj_offsets[index + 1])
    return [(str(ts.step_name[j] or ""), ts.step_text[j]) for j in range(a, b)]


def signal_frame(explanation) -> pd.DataFrame:
    """The explanation's distinct signals as a table for the page (members joined in words)."""
    t = explanation.signals.copy()
    t["related features"] = t["members"].map(lambda m: ", ".join(m))
    return t[["display_name", "kind", "related features", "value", "success_median", "comparison", "contribution"]]


def mistakes_for(ws: Workspace, evaluated, *, htc: str, n: int, model=None) -> Mistakes:
    """:func:`htc_core.explain.worst_mistakes` of ``htc`` on the evaluated trajectories (out-of-fold
    confidences) with their structural flags, workspace ``key`` and, when ``model`` is given, the top reason
    of each (from that model, fitted on the whole selection)."""
    res = evaluated.result
    pos = evaluated.positions
    meta = ws.ts.meta.iloc[pos].reset_index(drop=True)
    flags = ws.flags
    sub = type(flags)(frame=flags.frame.iloc[pos].reset_index(drop=True), available=flags.available)
    out = worst_mistakes(meta, res.labels, res.oof[htc], method=htc, flags=sub, n=n)
    for frame in (out.confident_failures, out.doubted_successes):
        rows = [int(pos[int(p)]) for p in frame["position"]]
        frame["key"] = [str(ws.keys[r]) for r in rows]
        if model is not None:
            frame["reason"] = [_top_reason(model, ws, r) for r in rows]
    return out


def _top_reason(model, ws: Workspace, row: int) -> str:
    expl = explain_trajectory(model, ws.features, row, labels=ws.labels, groups=ws.ts.meta["dataset"], n_reasons=1)
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
