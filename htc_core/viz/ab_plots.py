"""Plotly figures of the "Compare run sets" page: the metric differences B - A with their intervals and the
feature shifts ranked by effect size. Only draws what :mod:`htc_core.calibration.comparison` computed."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .plots import apply_layout, esc

__all__ = ["difference_figure", "shift_figure"]


def difference_figure(cmp, *, height: int = 300) -> go.Figure:
    """B - A of every metric as a dot with its bootstrap interval (one row per metric, 0 marked)."""
    f = cmp.metrics.frame.iloc[::-1]
    labels = [f"{lab} ({'higher' if b == 'higher' else 'lower'} is better)" for lab, b in zip(f["label"], f["better"])]
    fig = go.Figure(go.Scatter(
        x=f["diff"], y=labels, mode="markers", marker=dict(size=10, color="#4C78A8"),
        error_x=dict(type="data", symmetric=False, array=(f["diff_high"] - f["diff"]).to_numpy(),
                     arrayminus=(f["diff"] - f["diff_low"]).to_numpy(), thickness=1.5, width=4),
        hovertemplate="%{y}<br>B − A %{x:+.3f}<extra></extra>", showlegend=False))
    fig.add_vline(x=0, line=dict(color="#999", dash="dash"))
    fig.update_xaxes(title_text=f"B − A, {cmp.metrics.level:.0%} bootstrap interval", zeroline=False)
    fig.update_yaxes(automargin=True)
    return apply_layout(fig, height=height)


def shift_figure(cmp, *, k: int = 15, height: int = 460) -> go.Figure:
    """The ``k`` largest standardized mean differences (B - A), largest at the top, labelled by F-code."""
    if cmp.shifts is None:
        return apply_layout(go.Figure(), height=height)
    f = cmp.shifts.top(k)
    f = f[np.isfinite(f["smd"])].iloc[::-1]
    labels = [f"{c} {esc(n, 40)}" for c, n in zip(f["code"], f["name"])]
    colors = np.where(f["smd"] > 0, "#E45756", "#4C78A8")
    fig = go.Figure(go.Bar(x=f["smd"], y=labels, orientation="h", marker_color=colors,
                           customdata=np.column_stack([f["mean_a"], f["mean_b"]]),
                           hovertemplate="%{y}<br>SMD %{x:+.2f}<br>mean A %{customdata[0]:.4g}, "
                                         "mean B %{customdata[1]:.4g}<extra></extra>", showlegend=False))
    fig.add_vline(x=0, line=dict(color="#999"))
    fig.update_xaxes(title_text="SMD, B − A (0.2 small, 0.5 medium, 0.8 large)")
    fig.update_yaxes(automargin=True)
    return apply_layout(fig, height=height)
