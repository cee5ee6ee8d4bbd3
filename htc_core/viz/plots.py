"""Plotly figure builders for the dashboard.

Each builder takes result objects (reliability curves, explanations, weight
frames, projections, ...) and only draws them: no metric, bin or weight is
computed here, so a figure can never disagree with the number next to it.
Trace text is untrusted: every string that reaches a hover label or the token
view goes through :func:`esc` (HTML-escaped; Plotly shows entities as text).
"""

from __future__ import annotations

import html
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..bidi import isolate
from ..features import FAMILIES, feature_label

__all__ = [
    "esc", "short", "FAMILY_COLORS", "METHOD_COLORS", "reliability_figure", "reliability_facets",
    "confidence_histogram", "weights_bar", "selection_bar", "weights_heatmap", "projection_scatter",
    "step_timeline_figure", "position_figure", "group_metric_bars", "feature_distribution",
    "token_html", "metric_bars",
]

FAMILY_COLORS = {"Dynamics": "#4C78A8", "Position": "#F58518", "Stability": "#54A24B", "Structure": "#B279A2"}
_PALETTE = ["#4C78A8", "#E45756", "#54A24B", "#F58518", "#B279A2", "#72B7B2", "#EECA3B", "#9D755D", "#FF9DA6",
            "#BAB0AC", "#2E86AB", "#A23B72"]
_SIGNAL_COLORS = {"LastStep-TP": "#F58518", "GlobalTrace-TP": "#54A24B", "Bottom10": "#B279A2",
                  "LowestGroup": "#72B7B2", "Tail": "#9D755D", "Verbalized": "#EECA3B"}
# one colour per signal, whatever its rescaling (raw, +Temp, +Platt, +Iso): a diagram rarely shows two of them
METHOD_COLORS = {"HTC-Reduced": "#E45756", "HTC-Full": "#4C78A8",
                 **{f"{b}{s}": c for b, c in _SIGNAL_COLORS.items() for s in ("", "+Temp", "+Platt", "+Iso")}}


def esc(value, limit: int | None = None) -> str:
    """HTML-escaped, bidi-isolated text of an untrusted value, for hover labels and titles.

    Plotly shows HTML entities as text, so escaped trace text reads as written and never becomes markup.

    Parameters
    ----------
    value : object
        Any value (its ``str``); None and NaN give "".
    limit : int or None, default None
        The most characters kept; longer text ends with "…".

    Returns
    -------
    str
        The escaped text.

    Examples
    --------
    >>> from htc_core.viz.plots import esc
    >>> esc("<b>bold</b> & co")
    '&lt;b&gt;bold&lt;/b&gt; &amp; co'
    >>> esc("a long answer", 6), esc(None)
    ('a lon…', '')
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    s = str(value)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    # quote=False: the text only ever lands in element content (Plotly shows &quot; literally); bidi-isolated
    return html.escape(isolate(s), quote=False)


def short(value, limit: int = 80) -> str:
    """Escaped, one-line, truncated text for hover labels.

    Parameters
    ----------
    value : object
        Any value (its ``str``); None gives "".
    limit : int, default 80
        The most characters kept.

    Returns
    -------
    str
        The text with its whitespace runs as single spaces, escaped as :func:`esc` does.

    Examples
    --------
    >>> from htc_core.viz.plots import short
    >>> short("line one\\n   line <two>", 12)
    'line one li…'
    """
    if value is None:
        return ""
    return esc(" ".join(str(value).split()), limit)


def series_color(name: str, i: int) -> str:
    """The colour of a method (its fixed colour, else the ``i``-th of the palette)."""
    return METHOD_COLORS.get(name, _PALETTE[i % len(_PALETTE)])


def apply_layout(fig: go.Figure, title: str | None = None, height: int = 420, *, subplot_titles: bool = False) -> go.Figure:
    """The figures' shared layout: title at the top, horizontal legend under it, margins, height; returns ``fig``."""
    # the title at the very top, the horizontal legend between it and the plot: room for both
    top = (80 if title else 20) + (45 if subplot_titles else 0)
    fig.update_layout(title=None if title is None else dict(text=title, x=0, xanchor="left", y=0.98, yref="container",
                                                            yanchor="top"),
                      height=height, margin=dict(l=50, r=20, t=top, b=40),
                      legend=dict(orientation="h", yanchor="bottom", y=1.12 if subplot_titles else 1.02,
                                  xanchor="left", x=0))
    return fig


def group_order(groups) -> list[str]:
    """The order every figure of one comparison draws its groups in: by name, case-insensitive (then exact).

    Parameters
    ----------
    groups : iterable of str
        Group names (repeats allowed).

    Returns
    -------
    list of str
        The distinct names, sorted.

    Examples
    --------
    >>> from htc_core.viz.plots import group_order
    >>> group_order(["SmolLM2", "gemma3", "Gemma3", "SmolLM2"])
    ['Gemma3', 'gemma3', 'SmolLM2']
    """
    return sorted({str(g) for g in groups}, key=lambda g: (g.casefold(), g))


def wrap_label(text: str, width: int = 13) -> str:
    """A label broken into lines of about ``width`` characters after its hyphens, underscores or spaces.

    Parameters
    ----------
    text : str
        The label (already escaped).
    width : int, default 13
        The longest line aimed at (a word longer than that stays whole).

    Returns
    -------
    str
        The lines joined with ``<br>``.

    Examples
    --------
    >>> from htc_core.viz.plots import wrap_label
    >>> wrap_label("SmolLM2-135M-sampled-t0.7")
    'SmolLM2-135M-<br>sampled-t0.7'
    >>> wrap_label("facts")
    'facts'
    """
    import re

    lines, line = [], ""
    for part in re.findall(r"[^-_ ]*[-_ ]?", str(text)):
        if line and len(line) + len(part.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += part
    return "<br>".join(lines + ([line.rstrip()] if line.strip() else []))


# ------------------------------------------------------------ calibration
#: the axis range of a reliability diagram's confidence and success rate: [0, 1] and a margin, so a point and its
#: whisker at 0 or 1 are drawn whole (at [0, 1] exactly, half of a marker and its whisker's cap fell outside)
UNIT_RANGE = [-0.04, 1.04]


def reliability_figure(curves: Mapping[str, object], *, title: str | None = None, height: int = 520,
                       ece: Mapping[str, float] | None = None) -> go.Figure:
    """Overlaid reliability diagrams with the per-bin counts below.

    Each method's curve is the success rate against the mean confidence of each bin, with Wilson intervals;
    a click on a point or bar selects its bin (the drill-down lists its runs).

    Parameters
    ----------
    curves : mapping of str to ReliabilityCurve
        Method name -> curve (:func:`htc_core.explain.groups.reliability_curves`).
    title : str or None, default None
        The figure's title.
    height : int, default 520
        The figure's height in pixels.
    ece : mapping of str to float or None, default None
        The ECE each legend entry shows (an evaluation's table value, so legend and table agree); default
        the curve's own.

    Returns
    -------
    plotly.graph_objects.Figure
        The diagonal, then a line and a count bar per method.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)             # calibrated by construction
    >>> from htc_core.explain.groups import reliability_curves
    >>> from htc_core.viz.plots import reliability_figure
    >>> curves = reliability_curves(y, {"HTC-Full": p, "LastStep-TP": np.clip(p + 0.2, 0, 1)}, n_bins=5)
    >>> fig = reliability_figure(curves)
    >>> [trace.name for trace in fig.data]
    ['perfect calibration', 'HTC-Full (ECE 0.041)', 'HTC-Full count', 'LastStep-TP (ECE 0.206)', 'LastStep-TP count']
    >>> fig.layout.yaxis.title.text, fig.layout.xaxis2.title.text
    ('observed success rate', 'predicted confidence')
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26], vertical_spacing=0.05)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dash"),
                             name="perfect calibration", hoverinfo="skip"), row=1, col=1)
    for i, (name, c) in enumerate(curves.items()):
        col = series_color(name, i)
        nz = np.asarray(c.count) > 0
        x = np.asarray(c.mean_confidence)[nz]
        y = np.asarray(c.accuracy)[nz]
        lo = np.asarray(c.lower)[nz]
        hi = np.asarray(c.upper)[nz]
        cnt = np.asarray(c.count)[nz]
        edges = np.asarray(c.edges)
        bins = [f"({edges[j]:.1f}, {edges[j + 1]:.1f}]" for j in np.flatnonzero(nz)]
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines+markers", name=f"{esc(name)} (ECE {(ece or {}).get(name, c.ece):.3f})",
            line=dict(color=col),
            error_y=dict(type="data", symmetric=False, array=hi - y, arrayminus=y - lo, thickness=1, width=3),
            # the last two customdata fields name the bin (method, bin index): a click lists its runs
            customdata=np.column_stack([cnt, lo, hi, np.array(bins, dtype=object), np.full(len(x), name, dtype=object),
                                        np.flatnonzero(nz)]),
            hovertemplate=(f"<b>{esc(name)}</b><br>bin %{{customdata[3]}}<br>mean confidence %{{x:.3f}}<br>"
                           "accuracy %{y:.3f} (95% Wilson %{customdata[1]:.2f}-%{customdata[2]:.2f})<br>"
                           "trajectories %{customdata[0]}<extra></extra>")), row=1, col=1)
        fig.add_trace(go.Bar(x=np.asarray(c.centers), y=np.asarray(c.count), name=f"{esc(name)} count",
                             marker_color=col, opacity=0.6, showlegend=False,
                             customdata=np.column_stack([np.full(c.n_bins, name, dtype=object), np.arange(c.n_bins)]),
                             hovertemplate=f"{esc(name)}<br>bin centre %{{x:.2f}}<br>count %{{y}}<extra></extra>"),
                      row=2, col=1)
    fig.update_xaxes(range=UNIT_RANGE, row=1, col=1)
    fig.update_xaxes(range=UNIT_RANGE, title_text="predicted confidence", row=2, col=1)
    fig.update_yaxes(range=UNIT_RANGE, title_text="observed success rate", row=1, col=1)
    fig.update_yaxes(title_text="count", row=2, col=1)
    fig.update_layout(barmode="group", clickmode="event+select")   # a plain click selects a bin (drill-down)
    return apply_layout(fig, title, height)


def reliability_facets(curves: Mapping[str, Mapping[str, object]], *, height: int = 380) -> go.Figure:
    """Side-by-side reliability diagrams, one panel per group.

    Parameters
    ----------
    curves : mapping of str to mapping of str to ReliabilityCurve
        Group -> {method -> curve}; each method appears once in the legend.
    height : int, default 380
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Per panel, the diagonal and one line per method.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)             # calibrated by construction
    >>> from htc_core.explain.groups import group_curves
    >>> from htc_core.viz.plots import reliability_facets
    >>> by_group = group_curves(y, p, np.where(np.arange(200) < 100, "facts", "lists"), n_bins=5)
    >>> fig = reliability_facets({g: {"HTC-Full": c} for g, c in by_group.items()})
    >>> len(fig.data), [a.text for a in fig.layout.annotations]
    (4, ['facts', 'lists'])
    """
    groups = group_order(curves)               # the order of group_metric_bars and feature_distribution
    n = max(1, len(groups))
    # titles wrapped at their hyphens: four long model names side by side ran into each other at 900 px
    fig = make_subplots(rows=1, cols=n, subplot_titles=[wrap_label(esc(g, 40)) for g in groups], shared_yaxes=True,
                        horizontal_spacing=0.04)
    fig.update_annotations(font_size=12)
    seen = set()
    for gi, g in enumerate(groups):
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dash"),
                                 showlegend=False, hoverinfo="skip"), row=1, col=gi + 1)
        for i, (name, c) in enumerate(curves[g].items()):
            nz = np.asarray(c.count) > 0
            x = np.asarray(c.mean_confidence)[nz]
            y = np.asarray(c.accuracy)[nz]
            lo = np.asarray(c.lower)[nz]
            hi = np.asarray(c.upper)[nz]
            fig.add_trace(go.Scatter(
                x=x, y=y, mode="lines+markers", name=esc(name), legendgroup=name, showlegend=name not in seen,
                line=dict(color=series_color(name, i)),
                error_y=dict(type="data", symmetric=False, array=hi - y, arrayminus=y - lo, thickness=1, width=2),
                customdata=np.asarray(c.count)[nz],
                hovertemplate=(f"{esc(g)}<br>{esc(name)}<br>confidence %{{x:.2f}}<br>accuracy %{{y:.2f}}<br>"
                               "n %{customdata}<extra></extra>")), row=1, col=gi + 1)
            seen.add(name)
        fig.update_xaxes(range=UNIT_RANGE, title_text="confidence", row=1, col=gi + 1)
    fig.update_yaxes(range=UNIT_RANGE, title_text="success rate", row=1, col=1)
    apply_layout(fig, None, height, subplot_titles=True)
    if any("<br>" in a.text for a in fig.layout.annotations):    # two-line titles: the legend one line higher
        fig.update_layout(margin_t=fig.layout.margin.t + 18, legend_y=1.2)
    return fig


def confidence_histogram(confidence, success, *, title: str | None = None, nbins: int = 20,
                         height: int = 320) -> go.Figure:
    """Histogram of confidences, split into successful, failed and (when any) unlabeled runs.

    Parameters
    ----------
    confidence : array-like of shape (n_runs,)
        The confidences.
    success : array-like of shape (n_runs,)
        1 success, 0 failure, NaN unlabeled.
    title : str or None, default None
        The figure's title.
    nbins : int, default 20
        Equal-width bins on [0, 1].
    height : int, default 320
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One overlaid histogram per outcome, its count in the legend.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)             # calibrated by construction
    >>> from htc_core.viz.plots import confidence_histogram
    >>> y[:5] = np.nan
    >>> fig = confidence_histogram(p, y, nbins=10)
    >>> [trace.name for trace in fig.data], fig.layout.xaxis.title.text
    (['success (98)', 'failure (97)', 'unlabeled (5)'], 'confidence')
    """
    c = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(success, dtype=np.float64)
    fig = go.Figure()
    for val, name, col in ((1.0, "success", "#54A24B"), (0.0, "failure", "#E45756")):
        m = (y == val) & np.isfinite(c)
        fig.add_trace(go.Histogram(x=c[m], name=f"{name} ({int(m.sum())})", marker_color=col, opacity=0.65,
                                   xbins=dict(start=0, end=1, size=1.0 / nbins)))
    unl = ~np.isfinite(y) & np.isfinite(c)
    if unl.any():
        fig.add_trace(go.Histogram(x=c[unl], name=f"unlabeled ({int(unl.sum())})", marker_color="#999",
                                   opacity=0.5, xbins=dict(start=0, end=1, size=1.0 / nbins)))
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(range=[0, 1], title_text="confidence")
    fig.update_yaxes(title_text="trajectories")
    return apply_layout(fig, title, height)     # legend above the plot: inside it covered the first bars


def metric_bars(frame: pd.DataFrame, *, height: int = 320) -> go.Figure:
    """Bars of mean metric values with std error bars, one panel per metric.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns method, metric, mean, std (:func:`htc_core.viz.tables.metrics_long`).
    height : int, default 320
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace per metric.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.viz.plots import metric_bars
    >>> frame = pd.DataFrame({"method": ["HTC-Full", "LastStep-TP"] * 2, "metric": ["ECE", "ECE", "AUROC", "AUROC"],
    ...                       "mean": [0.05, 0.2, 0.8, 0.7], "std": [0.01, 0.02, 0.03, 0.02]})
    >>> fig = metric_bars(frame)
    >>> [a.text for a in fig.layout.annotations], list(fig.data[0].x)
    (['ECE', 'AUROC'], ['HTC-Full', 'LastStep-TP'])
    """
    metrics = list(dict.fromkeys(frame["metric"]))
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=metrics)
    for j, m in enumerate(metrics):
        sub = frame[frame["metric"] == m]
        fig.add_trace(go.Bar(x=sub["method"], y=sub["mean"], error_y=dict(type="data", array=sub["std"]),
                             marker_color=[series_color(v, i) for i, v in enumerate(sub["method"])], showlegend=False,
                             hovertemplate="%{x}<br>%{y:.3f}<extra></extra>"), row=1, col=j + 1)
    fig.update_xaxes(tickangle=-40)
    return apply_layout(fig, None, height, subplot_titles=True)


# ---------------------------------------------------------- feature weights
def weights_bar(frame: pd.DataFrame, *, title: str | None = None, height: int = 520,
                only_selected: bool = False) -> go.Figure:
    """Bars of calibrator weights, largest first, coloured by family, each feature's formula on hover.

    Several models are drawn as grouped bars (the second and later hatched).

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per model and feature (:func:`htc_core.viz.tables.weights_frame`).
    title : str or None, default None
        The figure's title.
    height : int, default 520
        The figure's height in pixels.
    only_selected : bool, default False
        Draw only the features with a non-zero weight.

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace per family (and model).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.viz.tables import weights_frame
    >>> from htc_core.viz.plots import weights_bar
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> model = HTCCalibrator(variant="reduced", alphas=(1.0,)).fit(extract(ts), ts.labels)
    >>> fig = weights_bar(weights_frame({"HTC-Reduced": model}), only_selected=True)
    >>> [(trace.name, len(trace.x)) for trace in fig.data]
    [('Position', 1), ('Stability', 2)]
    >>> fig.layout.yaxis.title.text
    'weight on the standardized feature'
    """
    fig = go.Figure()
    models = list(dict.fromkeys(frame["model"]))
    # bars by size (|weight| of the first model, largest first), not in the paper's order
    first = frame[frame["model"] == models[0]] if models else frame
    ranked = first.assign(_abs=first["weight"].abs()).sort_values(["_abs", "code"], ascending=[False, True])
    category = [feature_label(f) for f in ranked["feature"]]
    category += [feature_label(f) for f in frame["feature"] if feature_label(f) not in set(category)]
    for fam in FAMILIES:
        for mi, mdl in enumerate(models):
            sub = frame[(frame["family"] == fam) & (frame["model"] == mdl)]
            if only_selected:
                sub = sub[sub["selected"]]
            if sub.empty:
                continue
            fig.add_trace(go.Bar(
                x=[feature_label(f) for f in sub["feature"]], y=sub["weight"],
                name=f"{fam}" + (f" · {mdl}" if len(models) > 1 else ""),
                marker=dict(color=FAMILY_COLORS.get(fam, "#888"), pattern_shape="" if mi == 0 else "/"),
                customdata=np.column_stack([sub["feature"], sub["formula"], sub["model"]]),
                hovertemplate=("<b>%{x}</b><br>%{customdata[0]}<br>formula: %{customdata[1]}<br>"
                               "model: %{customdata[2]}<br>weight %{y:.3f}<extra></extra>")))
    fig.update_layout(barmode="group", xaxis=dict(categoryorder="array", categoryarray=category))
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=9), automargin=True)   # the 48 rotated labels are not clipped
    fig.update_yaxes(title_text="weight on the standardized feature")
    return apply_layout(fig, title, height)


def selection_bar(frame: pd.DataFrame, *, title: str | None = None, height: int = 460) -> go.Figure:
    """How often each feature was selected across an evaluation's fits, most often first.

    Parameters
    ----------
    frame : pandas.DataFrame
        The rows of one method of :func:`htc_core.viz.tables.selection_frequency`.
    title : str or None, default None
        The figure's title.
    height : int, default 460
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace per feature family.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.viz.tables import selection_frequency
    >>> from htc_core.viz.plots import selection_bar
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced",), seeds=1, n_splits=3, alphas=(1.0,))
    >>> freq = selection_frequency(result)
    >>> fig = selection_bar(freq[freq["method"] == "HTC-Reduced"])
    >>> [trace.name for trace in fig.data]
    ['Dynamics', 'Position', 'Stability', 'Structure']
    >>> list(fig.data[0].x[:2]), fig.layout.yaxis.title.text
    (['F12 Token gradient, max', 'F16 Spread progression (CV)'], 'fraction of fits (folds x seeds)')
    """
    sub = frame.sort_values(["frequency", "code"], ascending=[False, True])
    fig = go.Figure()
    for fam in FAMILIES:
        s = sub[sub["family"] == fam]
        if s.empty:
            continue
        fig.add_trace(go.Bar(x=[feature_label(f) for f in s["feature"]], y=s["frequency"], name=fam,
                             marker_color=FAMILY_COLORS.get(fam, "#888"),
                             customdata=np.column_stack([s["times"], s["fits"], s["feature"]]),
                             hovertemplate=("<b>%{x}</b><br>%{customdata[2]}<br>selected in %{customdata[0]} of "
                                            "%{customdata[1]} fits<extra></extra>")))
    fig.update_layout(xaxis=dict(categoryorder="array", categoryarray=[feature_label(f) for f in sub["feature"]]))
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=9))
    fig.update_yaxes(range=[0, 1.02], title_text="fraction of fits (folds x seeds)")
    return apply_layout(fig, title, height)


def weights_heatmap(weights: pd.DataFrame, *, title: str | None = None, height: int = 360) -> go.Figure:
    """Heatmap of weights: rows are groups (e.g. datasets), columns are features (named by :func:`~htc_core.features.feature_label`).

    Parameters
    ----------
    weights : pandas.DataFrame
        Groups x features (:class:`htc_core.explain.groups.DatasetWeights`'s ``weights``).
    title : str or None, default None
        The figure's title.
    height : int, default 360
        The least height in pixels (it grows with the number of groups).

    Returns
    -------
    plotly.graph_objects.Figure
        One heatmap trace, centred on 0 (red-blue).

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.viz.plots import weights_heatmap
    >>> weights = pd.DataFrame([[0.5, -1.2], [0.1, 0.8]], index=["facts", "lists"],
    ...                        columns=["last_top1_avg", "normalized_step_count"])
    >>> fig = weights_heatmap(weights)
    >>> fig.data[0].type, list(fig.data[0].x), list(fig.data[0].y)
    ('heatmap', ['F31 Last step top-1 probability, mean', 'F43 Number of steps / 10'], ['facts', 'lists'])
    """
    z = weights.to_numpy(dtype=np.float64)
    lim = float(np.nanmax(np.abs(z))) if z.size else 1.0
    # columns named as on every page (feature_label), the snake-case name on hover
    cols = [str(c) for c in weights.columns]
    x = [esc(feature_label(c), 60) for c in cols]
    names = np.tile(np.array([esc(c, 60) for c in cols], dtype=object), (len(weights.index), 1))
    fig = go.Figure(go.Heatmap(z=z, x=x, y=[esc(v, 40) for v in weights.index], customdata=names,
                               colorscale="RdBu", zmid=0, zmin=-lim, zmax=lim,
                               hovertemplate="%{y}<br><b>%{x}</b><br>%{customdata}<br>weight %{z:.3f}<extra></extra>",
                               colorbar=dict(title="weight")))
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=9), automargin=True)
    return apply_layout(fig, title, max(height, 120 + 28 * len(weights.index)))


# ------------------------------------------------------------ feature space
def projection_scatter(frame: pd.DataFrame, *, color: str, title: str | None = None, height: int = 600) -> go.Figure:
    """Scatter of a 2-D projection of the runs, coloured by a column.

    Points carry their position as ``customdata[0]`` (read back when a point is selected); sets of more than
    3,000 points are drawn with WebGL.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns x, y, position, id, question, dataset, model, success, htc_confidence, baseline_confidence and
        the ``color`` column.
    color : str
        The column that colours the points: a confidence column (a colour scale) or any other (one trace per
        value; for ``success``: success, failure, unknown).
    title : str or None, default None
        The figure's title.
    height : int, default 600
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One scatter trace, or one per value of ``color``.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from htc_core.viz.plots import projection_scatter
    >>> frame = pd.DataFrame({"x": [0.1, 0.5, 0.9], "y": [0.2, 0.4, 0.1], "position": [0, 1, 2],
    ...                       "id": ["a", "b", "c"], "question": ["q1", "q2", "q3"], "dataset": ["facts"] * 3,
    ...                       "model": ["m"] * 3, "success": [1.0, 0.0, np.nan], "htc_confidence": [0.9, 0.2, 0.5],
    ...                       "baseline_confidence": [0.8, 0.7, np.nan]})
    >>> [trace.name for trace in projection_scatter(frame, color="success").data]
    ['failure', 'success', 'unknown']
    >>> projection_scatter(frame, color="htc_confidence").data[0].marker.colorbar.title.text
    'confidence'
    """
    fig = go.Figure()
    Scatter = go.Scatter if len(frame) <= 3000 else go.Scattergl   # SVG points take clicks; WebGL for big sets
    hover = ("<b>%{customdata[1]}</b><br>%{customdata[2]}<br>dataset %{customdata[3]} · model %{customdata[4]}"
             "<br>success %{customdata[5]}<br>HTC confidence %{customdata[6]}<br>baseline %{customdata[7]}"
             "<extra></extra>")

    def cd(sub: pd.DataFrame) -> np.ndarray:
        def fmt(v):
            return "—" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.2f}"

        succ = sub["success"].map(lambda v: "?" if v is None or (isinstance(v, float) and np.isnan(v))
                                  else ("yes" if v else "no"))
        return np.column_stack([sub["position"].to_numpy(), sub["id"].map(lambda v: short(v, 60)),
                                sub["question"].map(lambda v: short(v, 100)), sub["dataset"].map(lambda v: short(v, 40)),
                                sub["model"].map(lambda v: short(v, 40)), succ,
                                sub["htc_confidence"].map(fmt), sub["baseline_confidence"].map(fmt)])

    if color in ("htc_confidence", "baseline_confidence"):
        fig.add_trace(Scatter(x=frame["x"], y=frame["y"], mode="markers", customdata=cd(frame),
                                   marker=dict(size=6, color=frame[color], colorscale="RdYlGn", cmin=0, cmax=1,
                                               colorbar=dict(title="confidence")),
                                   hovertemplate=hover, name="trajectories"))
    else:
        vals = frame[color].map(lambda v: "unknown" if v is None or (isinstance(v, float) and np.isnan(v))
                                else (("success" if v else "failure") if color == "success" else str(v)))
        for i, v in enumerate(sorted(set(vals))):
            sub = frame[vals == v]
            col = {"success": "#54A24B", "failure": "#E45756", "unknown": "#999"}.get(v, _PALETTE[i % len(_PALETTE)])
            fig.add_trace(Scatter(x=sub["x"], y=sub["y"], mode="markers", name=esc(v, 40), customdata=cd(sub),
                                       marker=dict(size=6, color=col, opacity=0.8), hovertemplate=hover))
    fig.update_xaxes(showticklabels=False, title_text="")
    fig.update_yaxes(showticklabels=False, title_text="")
    # zoom, not box select, as the drag: in select mode Streamlit turns a plain click's selection off
    fig.update_layout(dragmode="zoom", hovermode="closest", clickmode="event+select")
    return apply_layout(fig, title, height)


# ----------------------------------------------------------- the inspector
def step_timeline_figure(timeline: pd.DataFrame, *, height: int = 460) -> go.Figure:
    """Per-step confidences (top-1, top-k, mean r) above per-step statistics and token counts.

    Parameters
    ----------
    timeline : pandas.DataFrame
        One row per step (:func:`htc_core.explain.steps.step_timeline`).
    height : int, default 460
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Three confidence lines, three statistic lines and the token bars.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.explain.steps import step_timeline
    >>> from htc_core.viz.plots import step_timeline_figure
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> fig = step_timeline_figure(step_timeline(ts, 0))
    >>> [trace.name for trace in fig.data]
    ['mean token probability', 'top-k confidence', 'top-1 confidence', 'entropy', 'concentration', 'spread', 'tokens']
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.55, 0.45], vertical_spacing=0.08,
                        specs=[[{}], [{"secondary_y": True}]])
    names = timeline["name"].map(lambda v: esc(v, 40))
    # top-1 drawn last, dashed and with larger markers: it often equals the mean token probability and
    # would otherwise hide under it
    for col, label, c, dash, size in (("mean_confidence", "mean token probability", "#54A24B", "solid", 6),
                                      ("topk_confidence", "top-k confidence", "#F58518", "solid", 6),
                                      ("top1_confidence", "top-1 confidence", "#4C78A8", "dash", 9)):
        fig.add_trace(go.Scatter(x=timeline["step"], y=timeline[col], mode="lines+markers", name=label,
                                 line=dict(color=c, dash=dash, width=2.5 if dash == "dash" else 2),
                                 marker=dict(size=size, symbol="diamond-open" if dash == "dash" else "circle"),
                                 customdata=names,
                                 hovertemplate="step %{x} (%{customdata})<br>" + label + " %{y:.3f}<extra></extra>"),
                      row=1, col=1)
    for col, label, c in (("entropy", "entropy", "#B279A2"), ("concentration", "concentration", "#72B7B2"),
                          ("spread", "spread", "#9D755D")):
        fig.add_trace(go.Scatter(x=timeline["step"], y=timeline[col], mode="lines+markers", name=label,
                                 line=dict(color=c, dash="dot"),
                                 hovertemplate="step %{x}<br>" + label + " %{y:.3f}<extra></extra>"), row=2, col=1)
    fig.add_trace(go.Bar(x=timeline["step"], y=timeline["tokens"], name="tokens", marker_color="#ccc", opacity=0.5,
                         hovertemplate="step %{x}<br>%{y} tokens<extra></extra>"), row=2, col=1, secondary_y=True)
    fig.update_yaxes(range=[0, 1.02], title_text="confidence", row=1, col=1)
    fig.update_yaxes(title_text="statistic", row=2, col=1)
    fig.update_yaxes(title_text="tokens", row=2, col=1, secondary_y=True, rangemode="tozero", tick0=0,
                     tickformat=",d", showgrid=False)           # whole token counts from 0, not 0.9 / 8.1 / 15.3
    fig.update_xaxes(title_text="step", dtick=1, row=2, col=1)
    return apply_layout(fig, None, height)


def position_figure(confidence, success, value: float, *, label: str = "this trajectory",
                    height: int = 300) -> go.Figure:
    """Where one trajectory's confidence sits among its group's: a histogram by outcome and a marker line.

    Parameters
    ----------
    confidence : array-like of shape (n_runs,)
        The group's confidences.
    success : array-like of shape (n_runs,)
        Their labels (1, 0, NaN).
    value : float
        The trajectory's confidence, marked by a dashed line.
    label : str, default "this trajectory"
        The marker's label (escaped).
    height : int, default 300
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        :func:`confidence_histogram` with the marker.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)             # calibrated by construction
    >>> from htc_core.viz.plots import position_figure
    >>> fig = position_figure(p, y, 0.8, label="run 7")
    >>> [trace.type for trace in fig.data], [a.text for a in fig.layout.annotations]
    (['histogram', 'histogram'], ['run 7'])
    """
    fig = confidence_histogram(confidence, success, nbins=20, height=height)
    fig.add_vline(x=float(value), line=dict(color="#222", width=3, dash="dash"))
    right = float(value) > 0.5      # the label inside the plot, beside the line, on the side with more room:
    fig.add_annotation(x=float(value), y=0.98, yref="paper", text=esc(label), showarrow=False, yanchor="top",
                       xanchor="right" if right else "left", xshift=-6 if right else 6,     # clear of the legend
                       bgcolor="rgba(255,255,255,0.85)")
    return fig


# ------------------------------------------------------------ comparisons
def group_metric_bars(frame: pd.DataFrame, *, metrics: Sequence[str] = ("ece", "brier", "auroc"),
                      height: int | None = None) -> go.Figure:
    """Grouped bars of per-group metrics, one panel per metric, with whiskers when the frame has intervals.

    The panels are stacked and share one x axis, whose group names are written once under the last panel (side by
    side, the rotated names of one panel ran under the next); the groups are in :func:`group_order`, the order of
    :func:`reliability_facets` and :func:`feature_distribution`.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`htc_core.explain.groups.group_metrics` rows (with ``n_boot``: bootstrap whiskers).
    metrics : sequence of str, default ("ece", "brier", "auroc")
        The panels.
    height : int or None, default None
        The figure's height in pixels (None: 170 per panel and 120 for the legend and the names).

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace per method and metric.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)             # calibrated by construction
    >>> from htc_core.explain.groups import group_metrics
    >>> from htc_core.viz.plots import group_metric_bars
    >>> frame = group_metrics(y, {"HTC-Full": p}, np.where(np.arange(200) < 100, "facts", "lists"), n_boot=20)
    >>> fig = group_metric_bars(frame)
    >>> [a.text for a in fig.layout.annotations], list(fig.data[0].x), fig.data[0].error_y.type
    (['ECE', 'Brier', 'AUROC'], ['facts', 'lists'], 'data')
    """
    fig = make_subplots(rows=len(metrics), cols=1, shared_xaxes=True, vertical_spacing=0.09,
                        subplot_titles=[m.upper() if m != "brier" else "Brier" for m in metrics])
    methods = list(dict.fromkeys(frame["method"]))
    order = [esc(g, 30) for g in group_order(frame["group"])]
    for j, met in enumerate(metrics):
        for i, meth in enumerate(methods):
            sub = frame[frame["method"] == meth]
            err = None
            if f"{met}_low" in sub:   # bootstrap intervals (explain.group_metrics(n_boot=...))
                err = dict(type="data", symmetric=False, array=(sub[f"{met}_high"] - sub[met]).to_numpy(),
                           arrayminus=(sub[met] - sub[f"{met}_low"]).to_numpy(), thickness=1.2, width=3)
            fig.add_trace(go.Bar(x=sub["group"].map(lambda v: esc(v, 30)), y=sub[met], name=esc(meth), legendgroup=meth,
                                 error_y=err,
                                 showlegend=j == 0, marker_color=series_color(meth, i), customdata=sub["n"],
                                 hovertemplate="%{x}<br>" + esc(meth) + f"<br>{met} " + "%{y:.3f}<br>n %{customdata}<extra></extra>"),
                          row=j + 1, col=1)
    fig.update_layout(barmode="group")
    fig.update_xaxes(categoryorder="array", categoryarray=order, automargin=True)
    fig.update_yaxes(automargin=True)
    return apply_layout(fig, None, height or 170 * len(metrics) + 120, subplot_titles=True)


def feature_distribution(frame: pd.DataFrame, *, feature_label: str, height: int = 360) -> go.Figure:
    """Box plots of one feature per group and outcome.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns group, success (1, 0) and value.
    feature_label : str
        The y axis's title (escaped).
    height : int, default 360
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        A box trace for successes and one for failures; the groups in :func:`group_order`.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.viz.plots import feature_distribution
    >>> frame = pd.DataFrame({"group": ["facts", "facts", "lists", "lists"], "success": [1.0, 0.0, 1.0, 0.0],
    ...                       "value": [0.9, 0.4, 0.8, 0.5]})
    >>> fig = feature_distribution(frame, feature_label="F31 last step top-1")
    >>> [trace.name for trace in fig.data], fig.layout.yaxis.title.text
    (['success', 'failure'], 'F31 last step top-1')
    """
    fig = go.Figure()
    for val, name, col in ((1.0, "success", "#54A24B"), (0.0, "failure", "#E45756")):
        sub = frame[frame["success"] == val]
        fig.add_trace(go.Box(x=sub["group"].map(lambda v: esc(v, 30)), y=sub["value"], name=name, marker_color=col,
                             boxmean=True))
    fig.update_layout(boxmode="group")
    fig.update_xaxes(categoryorder="array", categoryarray=[esc(g, 30) for g in group_order(frame["group"])])
    fig.update_yaxes(title_text=esc(feature_label))
    return apply_layout(fig, None, height)


# --------------------------------------------------------------- tokens
def probability_color(p: float) -> str:
    """Red (low) -> yellow -> green (high) background for a probability."""
    if not np.isfinite(p):
        return "#eeeeee"
    p = min(1.0, max(0.0, float(p)))
    if p < 0.5:
        r, g = 230, int(80 + 2 * p * 150)
    else:
        r, g = int(230 - (p - 0.5) * 2 * 150), 200
    return f"rgb({r},{g},90)"


def token_html(tokens: Sequence[str], probability: Sequence[float]) -> str:
    """Tokens as coloured spans: the colour is the probability, the exact value shows on hover.

    Every token is HTML-escaped, so trace text can never become markup; an empty token shows as "␣" and a
    newline as "↵".

    Parameters
    ----------
    tokens : sequence of str
        The tokens.
    probability : sequence of float
        Their probabilities (red low, green high).

    Returns
    -------
    str
        One ``<div>`` of ``<span>`` elements.

    Examples
    --------
    >>> from htc_core.viz.plots import token_html
    >>> html = token_html(["Paris", " <b>"], [0.93, 0.12])
    >>> html.count("<span"), "&lt;b&gt;" in html, 'title="p = 0.120"' in html
    (2, True, True)
    """
    parts = ['<div style="font-family: monospace; font-size: 0.85rem; line-height: 1.9; white-space: pre-wrap; '
             'word-break: break-word;">']
    for t, p in zip(tokens, probability):
        txt = esc(t) if t != "" else "␣"
        txt = txt.replace("\n", "↵\n")
        parts.append(f'<span title="p = {float(p):.3f}" style="background:{probability_color(p)}; border-radius:3px; '
                     f'padding:1px 1px; margin:0 1px;">{txt}</span>')
    parts.append("</div>")
    return "".join(parts)
