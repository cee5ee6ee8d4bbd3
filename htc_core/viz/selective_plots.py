"""Plotly figures of selective prediction: risk-coverage with an abstention threshold, and ROC curves.

The curves come from :mod:`htc_core.calibration.selective` (computed, not re-derived, here); these functions
only draw them. Method names are escaped like every other label.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .plots import series_color, apply_layout, esc

__all__ = ["risk_coverage_figure", "roc_figure"]


def risk_coverage_figure(curves: Mapping[str, object], *, threshold: float | None = None, marked: str | None = None,
                         height: int = 420) -> go.Figure:
    """Selective accuracy (success rate of the kept runs) against coverage (share of runs kept) for each
    method's ``RiskCoverage``; the dotted line is the success rate of all runs. With ``threshold``, the point
    where ``marked``'s runs with confidence >= threshold are kept is drawn."""
    fig = go.Figure()
    base = None
    for i, (name, c) in enumerate(curves.items()):
        base = c.base_rate
        fig.add_trace(go.Scatter(
            x=np.r_[0.0, c.coverage], y=np.r_[c.accuracy[0], c.accuracy], mode="lines", line=dict(color=series_color(name, i)),
            name=f"{esc(name)} (AURC {c.aurc:.3f})", customdata=np.r_[np.nan, c.threshold],
            hovertemplate=(f"<b>{esc(name)}</b><br>keep confidence ≥ %{{customdata:.3f}}<br>coverage %{{x:.1%}}"
                           "<br>accuracy of the kept %{y:.1%}<extra></extra>")))
    if base is not None:
        fig.add_hline(y=base, line=dict(color="#999", dash="dot"),
                      annotation_text=f"all runs: {base:.1%}", annotation_position="bottom right")
    if threshold is not None and marked in curves:
        cov, acc, kept = curves[marked].at_threshold(float(threshold))
        if kept:
            fig.add_trace(go.Scatter(x=[cov], y=[acc], mode="markers", marker=dict(size=14, symbol="x", color="#222"),
                                     name=f"{esc(marked)} ≥ {threshold:.2f}: {kept} kept",
                                     hovertemplate=f"{kept} runs kept ({cov:.1%}), {acc:.1%} of them succeed<extra></extra>"))
    fig.update_xaxes(range=[0, 1], title_text="coverage (share of runs kept)", tickformat=".0%")
    fig.update_yaxes(range=[0, 1.02], title_text="success rate of the kept runs", tickformat=".0%")
    return apply_layout(fig, None, height)


def roc_figure(rocs: Mapping[str, pd.DataFrame], aucs: Mapping[str, float] | None = None, *,
               height: int = 420) -> go.Figure:
    """ROC curves (``selective.roc_curve`` frames: fpr, tpr, threshold), success as the positive class; the
    legend shows each method's AUROC from ``aucs`` (the evaluation table's) when given."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dash"),
                             name="chance", hoverinfo="skip"))
    for i, (name, roc) in enumerate(rocs.items()):
        label = esc(name) + (f" (AUROC {aucs[name]:.3f})" if aucs and name in aucs else "")
        fig.add_trace(go.Scatter(x=roc["fpr"], y=roc["tpr"], mode="lines", line=dict(color=series_color(name, i)), name=label,
                                 customdata=roc["threshold"],
                                 hovertemplate=(f"<b>{esc(name)}</b><br>threshold %{{customdata:.3f}}<br>"
                                                "false-positive rate %{x:.3f}<br>true-positive rate %{y:.3f}"
                                                "<extra></extra>")))
    fig.update_xaxes(range=[0, 1], title_text="false-positive rate (failures trusted)")
    fig.update_yaxes(range=[0, 1.02], title_text="true-positive rate (successes trusted)")
    return apply_layout(fig, None, height)
