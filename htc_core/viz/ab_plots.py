"""Plotly figures of the "Compare run sets" page: the metric differences B - A with their intervals and the
feature shifts ranked by effect size. Only draws what :mod:`htc_core.calibration.comparison` computed."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..features import feature_label
from .plots import apply_layout, esc

__all__ = ["difference_figure", "shift_figure"]


def difference_figure(cmp, *, height: int = 300) -> go.Figure:
    """B - A of every metric as a dot with its bootstrap interval (one row per metric, 0 marked).

    Parameters
    ----------
    cmp : RunSetComparison
        A comparison of two run sets (:func:`~htc_core.calibration.comparison.compare_run_sets`).
    height : int, default 300
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One scatter trace with horizontal error bars; the y labels say which direction is better.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.comparison import compare_run_sets
    >>> from htc_core.viz.ab_plots import difference_figure
    >>> rng = np.random.default_rng(0)
    >>> p_a, p_b = rng.uniform(size=100), rng.uniform(size=100)
    >>> y_a, y_b = (rng.uniform(size=100) < p_a).astype(float), (rng.uniform(size=100) < 0.5).astype(float)
    >>> X_a, X_b = rng.normal(size=(100, 48)), rng.normal(size=(100, 48))
    >>> X_b[:, 0] += 1.0                                            # B's first feature shifted
    >>> cmp = compare_run_sets(y_a, p_a, y_b, p_b, X_a=X_a, X_b=X_b, n_boot=200)
    >>> fig = difference_figure(cmp)
    >>> [trace.type for trace in fig.data], fig.layout.xaxis.title.text
    (['scatter'], 'B − A, 95% bootstrap interval')
    >>> for label in fig.data[0].y:
    ...     print(label)
    success rate (higher is better)
    verdict accuracy (higher is better)
    AUROC (higher is better)
    Brier (lower is better)
    ECE (lower is better)
    >>> dot = fig.data[0]
    >>> bool(float(dot.x[0]) == y_b.mean() - y_a.mean())              # success rate: B's minus A's (0.48 each)
    True
    >>> low, high = dot.x - dot.error_x.arrayminus, dot.x + dot.error_x.array
    >>> bool(np.all((low <= dot.x) & (dot.x <= high)))               # every interval holds its dot
    True
    >>> round(float(dot.x[2]), 2), bool(high[2] < 0)                 # B's confidences are noise: its AUROC drops
    (-0.31, True)
    """
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
    """The ``k`` largest standardized mean differences of the features (B - A), largest at the top.

    Parameters
    ----------
    cmp : RunSetComparison
        A comparison of two run sets with features (``X_a`` and ``X_b`` given); without them the figure is
        empty.
    k : int, default 15
        The number of features shown.
    height : int, default 460
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One horizontal bar trace, the bars labelled by F-code and name (red: B higher, blue: B lower).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.comparison import compare_run_sets
    >>> from htc_core.viz.ab_plots import shift_figure
    >>> rng = np.random.default_rng(0)
    >>> p_a, p_b = rng.uniform(size=100), rng.uniform(size=100)
    >>> y_a, y_b = (rng.uniform(size=100) < p_a).astype(float), (rng.uniform(size=100) < 0.5).astype(float)
    >>> X_a, X_b = rng.normal(size=(100, 48)), rng.normal(size=(100, 48))
    >>> X_b[:, 0] += 1.0                                            # B's first feature shifted
    >>> cmp = compare_run_sets(y_a, p_a, y_b, p_b, X_a=X_a, X_b=X_b, n_boot=200)
    >>> fig = shift_figure(cmp, k=2)
    >>> fig.data[0].type, fig.data[0].y[-1]                       # the largest shift on top
    ('bar', 'F0 Top-1 gradient, mean')
    >>> fig.layout.xaxis.title.text
    'SMD, B − A<br>(0.2 small, 0.5 medium, 0.8 large)'
    """
    if cmp.shifts is None:
        return apply_layout(go.Figure(), height=height)
    f = cmp.shifts.top(k)
    f = f[np.isfinite(f["smd"])].iloc[::-1]
    labels = [esc(feature_label(n), 48) for n in f["feature"]]
    colors = np.where(f["smd"] > 0, "#E45756", "#4C78A8")
    fig = go.Figure(go.Bar(x=f["smd"], y=labels, orientation="h", marker_color=colors,
                           customdata=np.column_stack([f["mean_a"], f["mean_b"]]),
                           hovertemplate="%{y}<br>SMD %{x:+.2f}<br>mean A %{customdata[0]:.4g}, "
                                         "mean B %{customdata[1]:.4g}<extra></extra>", showlegend=False))
    fig.add_vline(x=0, line=dict(color="#999"))
    # two lines: centred under the bars (right of the labels), one line ran past the figure's edge at 440 px
    fig.update_xaxes(title_text="SMD, B − A<br>(0.2 small, 0.5 medium, 0.8 large)")
    fig.update_yaxes(automargin=True)
    return apply_layout(fig, height=height)
