"""HTC-GAM's shape functions as small multiples (plotly): one panel per feature, most important first."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .plots import FAMILY_COLORS, apply_layout, esc

__all__ = ["shape_curves_figure"]


def shape_curves_figure(shapes, *, top: int = 12, cols: int = 3, panel_height: int = 210) -> go.Figure:
    """HTC-GAM's ``top`` most important shape curves as small multiples.

    Each panel draws the contribution to the logit (line, coloured by feature family; dotted zero line)
    against the feature's raw value, over a grey histogram of the rows' values (right-hand axis hidden; the
    bars fill the lower third of the panel).

    Parameters
    ----------
    shapes : ShapeCurves
        The curves (:func:`htc_core.explain.shapes.shape_curves`).
    top : int, default 12
        The number of panels (the most important curves).
    cols : int, default 3
        Panels per row.
    panel_height : int, default 210
        The height of one row of panels in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        A density bar and a curve per panel, the panels titled by F-code and name.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.gam import HTCGAM
    >>> from htc_core.explain.shapes import shape_curves
    >>> from htc_core.viz.gam_plots import shape_curves_figure
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(200, 3))
    >>> y = (rng.uniform(size=200) < 1 / (1 + np.exp(1.5 - X[:, 0] ** 2))).astype(float)
    >>> model = HTCGAM(select="gam", alphas=(4.0,), n_knots=5).fit(X, y)
    >>> fig = shape_curves_figure(shape_curves(model, X), top=2)
    >>> [trace.type for trace in fig.data]
    ['bar', 'scatter', 'bar', 'scatter']
    >>> [a.text for a in fig.layout.annotations]
    ['x0 x0', 'x1 x1']
    """
    curves = shapes.curves[:max(1, int(top))]
    n = max(1, len(curves))
    cols = max(1, min(int(cols), n))
    rows = math.ceil(n / cols)
    titles = [esc(f"{c.code} {c.display_name}", 46) for c in curves]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.07,
                        vertical_spacing=min(0.5 / rows, 0.16), specs=[[{"secondary_y": True}] * cols] * rows)
    for k, c in enumerate(curves):
        r, cc = k // cols + 1, k % cols + 1
        centers = (c.bin_edges[:-1] + c.bin_edges[1:]) / 2
        width = float(np.diff(c.bin_edges).min()) if len(c.bin_edges) > 1 else 1.0
        # the bars on the primary axis (hidden), the curve on the secondary one, which plotly draws on top,
        # moved to the left so it reads as the panel's only axis
        fig.add_trace(go.Bar(x=centers, y=c.counts, width=width, marker_color="#bbb", opacity=0.6, showlegend=False,
                             hovertemplate="value %{x:.3g}<br>%{y} runs<extra>data</extra>"),
                      row=r, col=cc, secondary_y=False)
        fig.add_trace(go.Scatter(x=c.x, y=c.y, mode="lines", line=dict(color=FAMILY_COLORS.get(c.family, "#4C78A8"),
                                                                        width=2.5), showlegend=False,
                                 hovertemplate=(f"{esc(c.display_name, 60)}<br>value %{{x:.4g}}<br>contribution "
                                                "%{y:+.3f} logits<extra></extra>")),
                      row=r, col=cc, secondary_y=True)
        fig.add_hline(y=0, line=dict(color="#999", dash="dot", width=1), row=r, col=cc, secondary_y=True)
        fig.update_yaxes(range=[0, max(1, int(c.counts.max())) * 3.2], showticklabels=False, showgrid=False,
                         row=r, col=cc, secondary_y=False)
        fig.update_yaxes(side="left", title_text="logit" if cc == 1 else None, tickmode="auto", nticks=5,
                         tickformat=".2~f", row=r, col=cc, secondary_y=True)
    fig.update_layout(showlegend=False)
    return apply_layout(fig, None, panel_height * rows + 40, subplot_titles=True)
