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
    """The early-warning figure: how well each method does on the first k steps, and how soon it flags.

    Left: ``metric`` of each method on the k-step prefixes; right: the share of failing runs flagged by step
    k by a one-threshold monitor at the result's false-alarm rate.

    Parameters
    ----------
    result : EarlyWarningResult
        An early-warning evaluation (:func:`htc_core.calibration.prefixes.early_warning`).
    metric : {"auroc", "brier", "ece"}, default "auroc"
        The metric of the left panel.
    height : int, default 420
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Two line traces per method (one per panel).

    Examples
    --------
    >>> from htc_core.synthetic import synthetic_trace_set
    >>> from htc_core.calibration.prefixes import early_warning
    >>> from htc_core.viz.prefix_plots import early_warning_figure
    >>> ts = synthetic_trace_set(n_traj=40, n_steps=3, n_tokens=10, seed=0)        # random labels
    >>> result = early_warning(ts, seeds=1, n_splits=2, methods=("HTC-Reduced",), alphas=(1.0,))
    >>> fig = early_warning_figure(result)
    >>> [trace.type for trace in fig.data]
    ['scatter', 'scatter']
    >>> [a.text for a in fig.layout.annotations]
    ['AUROC ↑ on the first k steps', 'failing runs flagged by step k (10% false alarms)']
    """
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
    """The calibrated confidence of one run after each of its steps, with an optional alert line.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns step, name and confidence (:func:`htc_core.explain.steps.confidence_after_steps`).
    threshold : float or None, default None
        A monitor's alert threshold, drawn as a dashed line.
    height : int, default 300
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One line trace.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.viz.prefix_plots import step_confidence_figure
    >>> frame = pd.DataFrame({"step": [1, 2, 3], "name": ["plan", "search", "answer"],
    ...                       "confidence": [0.4, 0.3, 0.8]})
    >>> fig = step_confidence_figure(frame, threshold=0.35)
    >>> fig.data[0].type, [a.text for a in fig.layout.annotations], fig.layout.yaxis.title.text
    ('scatter', ['alert below 0.35'], 'calibrated confidence')
    """
    fig = go.Figure(go.Scatter(x=frame["step"], y=frame["confidence"], mode="lines+markers", name="confidence",
                               customdata=frame["name"].map(lambda v: esc(v, 40)),
                               hovertemplate="after step %{x} (%{customdata}): %{y:.3f}<extra></extra>"))
    if threshold is not None:
        fig.add_hline(y=threshold, line_dash="dash", line_color="#E45756",
                      annotation_text=f"alert below {threshold:.2f}")
    fig.update_yaxes(range=[0, 1.02], title_text="calibrated confidence")
    fig.update_xaxes(title_text="step", dtick=1)
    return apply_layout(fig, None, height)
