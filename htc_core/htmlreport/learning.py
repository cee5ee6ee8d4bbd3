"""Learning curves from a computed result (``htc learning-curve --json`` or any table of method x size).

Accepted JSON (decided here, since the learning-curve command is built elsewhere): the rows are the first
of: the object itself when it is a list; its ``"rows"``, ``"curve"``, ``"results"``, ``"table"`` or
``"points"`` list; else its first value that is a list of objects. Each row names a method (``method`` or
``model``), a training size (``size``, ``n_train``, ``train_size`` or ``n``) and metrics as
``{"ece": {"mean": m, "std": s}}``, ``"ece_mean"`` / ``"ece_std"``, or a plain ``"ece": m`` (std 0).
Metrics: ECE, Brier, AUROC (those present).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

METRICS = ("ece", "brier", "auroc")
_ROW_KEYS = ("rows", "curve", "results", "table", "points")
_SIZE_KEYS = ("size", "n_train", "train_size", "n")


@dataclass
class LearningCurve:
    """method, size, metric, mean, std (long form), and where it came from."""

    source: str
    frame: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        return self.frame.copy()

    def to_dict(self) -> dict:
        return {"source": self.source, "rows": self.frame.to_dict("records")}


def _rows(obj):
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict):
        for k in _ROW_KEYS:
            if isinstance(obj.get(k), list):
                return obj[k]
        for v in obj.values():
            if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
                return v
    return None


def _metric(row: dict, m: str):
    v = row.get(m)
    if isinstance(v, dict) and "mean" in v:
        return v.get("mean"), v.get("std", 0.0)
    if f"{m}_mean" in row:
        return row[f"{m}_mean"], row.get(f"{m}_std", 0.0)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v, 0.0
    return None


def _number(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def parse_learning_curve(obj, *, source: str = "learning curve") -> LearningCurve:
    """A :class:`LearningCurve` from a parsed JSON value; ValueError naming ``source`` and the problem."""
    rows = _rows(obj)
    if not rows:
        raise ValueError(f"{source}: no table of rows found (expected a list of objects, or an object with "
                         f"one of {list(_ROW_KEYS)})")
    out = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise ValueError(f"{source}: row {i} must be an object, got {type(r).__name__}")
        method = r.get("method", r.get("model"))
        size = next((r[k] for k in _SIZE_KEYS if k in r), None)
        if method is None or size is None:
            raise ValueError(f"{source}: row {i} needs a method ('method' or 'model') and a training size "
                             f"(one of {list(_SIZE_KEYS)}); it has {sorted(r)[:8]}")
        for m in METRICS:
            got = _metric(r, m)
            if got is not None:
                out.append({"method": str(method), "size": _number(size), "metric": m,
                            "mean": _number(got[0]), "std": _number(got[1])})
    if not out:
        raise ValueError(f"{source}: no row carries a metric ({', '.join(METRICS)})")
    return LearningCurve(source=source, frame=pd.DataFrame(out).sort_values(["metric", "method", "size"],
                                                                           kind="stable").reset_index(drop=True))


def read_learning_curve(path: str | Path) -> LearningCurve:
    p = Path(path)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"{p}: cannot read the learning-curve file ({e.strerror or e})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:   # arrays or objects nested thousands deep: no learning curve nests like that
        raise ValueError(f"{p}: nested deeper than can be read (a learning curve is a list of rows, or an object "
                         "holding one)") from None
    return parse_learning_curve(obj, source=str(p))


def learning_curve_figure(curve: LearningCurve, *, height: int = 380):
    """One panel per metric: mean ± std against the training size, one line per method."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..viz.plots import series_color, apply_layout, esc

    df = curve.frame
    metrics = [m for m in METRICS if m in set(df.metric)]
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[{"ece": "ECE ↓", "brier": "Brier ↓",
                                                                    "auroc": "AUROC ↑"}[m] for m in metrics])
    methods = list(dict.fromkeys(df.method))
    for j, m in enumerate(metrics, start=1):
        for i, name in enumerate(methods):
            s = df[(df.metric == m) & (df.method == name)]
            if s.empty:
                continue
            fig.add_trace(go.Scatter(x=s["size"], y=s["mean"], error_y=dict(type="data", array=s["std"]),
                                     mode="lines+markers", name=esc(name), legendgroup=name, showlegend=j == 1,
                                     line=dict(color=series_color(name, i)),
                                     hovertemplate=f"{esc(name)}<br>size %{{x}}<br>%{{y:.3f}}<extra></extra>"),
                          row=1, col=j)
        fig.update_xaxes(title_text="training runs", type="log", row=1, col=j)
    return apply_layout(fig, None, height, subplot_titles=True)
