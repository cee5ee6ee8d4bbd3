"""Figures of partial runs: the early-warning curve (Calibration page) and the confidence after each step
(Trajectory inspector). They draw result objects of ``htc_core.calibration.prefixes`` and
``htc_core.explain``; no metric is computed here."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .plots import series_color, apply_layout, esc

__all__ = ["early_warning_figure", "step_confidence_figure"]

_METRIC_LABELS = {"auroc": "AUROC ↑", "brier": "Brier ↓", "ece": "ECE ↓"}


def early_warning_figure(result, *, metric: str = "auroc", height: int = 420) -> go.Figure:
    """Left: ``metric`` of each method on the k-step prefixes; right: failing runs flagged by step k by a
    one-threshold monitor at the result's false-alarm rate."""
    fa = f"{result.false_alarm:.0%}"
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"{_METRIC_LABELS.get(metric, metric)} on the first k steps",
                                                        f"failing runs flagged by step k ({fa} false alarms)"))
    curve = result.curve[result.curve.kind == "steps"]
    for i, m in enumerate(result.methods):
        c = curve[curve.method == m]
        color = series_color(m, i)
        fig.add_trace(go.Scatter(x=c["k"], y=c[metric], mode="lines+markers", name=esc(m), legendgroup=m,
                                 line=dict(color=color), customdata=c["running"],
                                 hovertemplate=esc(m) + "<br>first %{x} steps: %{y:.3f}<br>%{customdata} runs still "
                                               "going<extra></extra>"), row=1, col=1)
        a = result.alerts[result.alerts.method == m]
        fig.add_trace(go.Scatter(x=a["step"], y=a["flagged_by_step"], mode="lines+markers", name=esc(m),
                                 legendgroup=m, showlegend=False, line=dict(color=color, dash="dot"),
                                 hovertemplate=esc(m) + "<br>by step %{x}: %{y:.1%} of failing runs<extra></extra>"),
                      row=1, col=2)
    fig.update_xaxes(title_text="steps seen (k)", dtick=1)
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    return apply_layout(fig, None, height, subplot_titles=True)


def step_confidence_figure(frame: pd.DataFrame, *, threshold: float | None = None, height: int = 300) -> go.Figure:
    """The calibrated confidence after each step (``explain.confidence_after_steps``)."""
    fig = go.Figure(go.Scatter(x=frame["step"], y=frame["confidence"], mode="lines+markers", name="confidence",
                               customdata=frame["name"].map(lambda v: esc(v, 40)),
                               hovertemplate="after step %{x} (%{customdata}): %{y:.3f}<extra></extra>"))
    if threshold is not None:
        fig.add_hline(y=threshold, line_dash="dash", line_color="#E45756",
                      annotation_text=f"alert below {threshold:.2f}")
    fig.update_yaxes(range=[0, 1.02], title_text="calibrated confidence")
    fig.update_xaxes(title_text="step", dtick=1)
    return apply_layout(fig, None, height)
