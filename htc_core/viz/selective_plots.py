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
    """Risk-coverage curves: the success rate of the kept runs against the share of runs kept.

    The dotted line is the success rate of all runs; with ``threshold``, the point where ``marked``'s runs
    with confidence >= threshold are kept is drawn.

    Parameters
    ----------
    curves : mapping of str to RiskCoverage
        Each method's curve (:func:`~htc_core.calibration.selective.risk_coverage_curve`).
    threshold : float or None, default None
        An abstention threshold to mark.
    marked : str or None, default None
        The method whose point at ``threshold`` is drawn.
    height : int, default 420
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One line per method (its AURC in the legend), and the marked point.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)
    >>> from htc_core.calibration.selective import risk_coverage_curve
    >>> from htc_core.viz.selective_plots import risk_coverage_figure
    >>> curves = {"HTC-Full": risk_coverage_curve(y, p), "LastStep-TP": risk_coverage_curve(y, rng.uniform(size=200))}
    >>> fig = risk_coverage_figure(curves, threshold=0.5, marked="HTC-Full")
    >>> [trace.name for trace in fig.data]
    ['HTC-Full (AURC 0.229)', 'LastStep-TP (AURC 0.488)', 'HTC-Full ≥ 0.50: 112 kept']
    >>> fig.layout.xaxis.title.text
    'coverage (share of runs kept)'
    """
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
    """ROC curves, success as the positive class, over the chance diagonal.

    Parameters
    ----------
    rocs : mapping of str to pandas.DataFrame
        Each method's ROC curve (:func:`~htc_core.calibration.selective.roc_curve` frames: fpr, tpr,
        threshold).
    aucs : mapping of str to float or None, default None
        The AUROC each legend entry shows (the evaluation table's, so legend and table agree).
    height : int, default 420
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        The chance line, then one line per method.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)
    >>> from htc_core.calibration.selective import roc_curve
    >>> from htc_core.viz.selective_plots import roc_figure
    >>> fig = roc_figure({"HTC-Full": roc_curve(y, p)}, {"HTC-Full": 0.8})
    >>> [trace.name for trace in fig.data]
    ['chance', 'HTC-Full (AUROC 0.800)']
    >>> fig.layout.yaxis.title.text
    'true-positive rate (successes trusted)'
    """
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
