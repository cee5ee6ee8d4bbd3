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
from ..features import FAMILIES, REGISTRY

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
#: one colour per signal, whatever its rescaling (raw, +Temp, +Platt, +Iso): a diagram rarely shows two of them
METHOD_COLORS = {"HTC-Reduced": "#E45756", "HTC-Full": "#4C78A8",
                 **{f"{b}{s}": c for b, c in _SIGNAL_COLORS.items() for s in ("", "+Temp", "+Platt", "+Iso")}}


def esc(value, limit: int | None = None) -> str:
    """HTML-escaped text of an untrusted value (None -> '')."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    s = str(value)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    # quote=False: the text only ever lands in element content (Plotly shows &quot; literally); bidi-isolated
    return html.escape(isolate(s), quote=False)


def short(value, limit: int = 80) -> str:
    """Escaped, one-line, truncated text for hover labels."""
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


# ------------------------------------------------------------ calibration
def reliability_figure(curves: Mapping[str, object], *, title: str | None = None, height: int = 520,
                       ece: Mapping[str, float] | None = None) -> go.Figure:
    """Overlaid reliability diagrams (accuracy vs mean confidence per bin, Wilson intervals) with the
    per-bin counts below. ``curves``: name -> ``metrics.ReliabilityCurve``. ``ece``: the ECE each legend
    entry shows (an evaluation's table value, so legend and table agree); default the curve's own."""
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
    fig.update_xaxes(range=[0, 1], row=1, col=1)
    fig.update_xaxes(range=[0, 1], title_text="predicted confidence", row=2, col=1)
    fig.update_yaxes(range=[0, 1], title_text="observed success rate", row=1, col=1)
    fig.update_yaxes(title_text="count", row=2, col=1)
    fig.update_layout(barmode="group", clickmode="event+select")   # a plain click selects a bin (drill-down)
    return apply_layout(fig, title, height)


def reliability_facets(curves: Mapping[str, Mapping[str, object]], *, height: int = 380) -> go.Figure:
    """Side-by-side reliability diagrams: ``curves`` group -> {method -> ReliabilityCurve}."""
    groups = list(curves)
    n = max(1, len(groups))
    fig = make_subplots(rows=1, cols=n, subplot_titles=[esc(g, 40) for g in groups], shared_yaxes=True,
                        horizontal_spacing=0.04)
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
        fig.update_xaxes(range=[0, 1], title_text="confidence", row=1, col=gi + 1)
    fig.update_yaxes(range=[0, 1], title_text="success rate", row=1, col=1)
    return apply_layout(fig, None, height, subplot_titles=True)


def confidence_histogram(confidence, success, *, title: str | None = None, nbins: int = 20,
                         height: int = 320) -> go.Figure:
    """Histogram of confidences, split into successful and failed runs."""
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
    """Bars of mean metric values with std error bars; ``frame`` columns: method, metric, mean, std."""
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
    """Bars of calibrator weights (one row of ``explain.weights_frame`` per feature), coloured by family,
    with each feature's formula on hover. Several models are drawn as grouped bars."""
    fig = go.Figure()
    models = list(dict.fromkeys(frame["model"]))
    # bars by size (|weight| of the first model, largest first), not in the paper's order
    first = frame[frame["model"] == models[0]] if models else frame
    ranked = first.assign(_abs=first["weight"].abs()).sort_values(["_abs", "code"], ascending=[False, True])
    category = [f"{c} {f}" for c, f in zip(ranked["code"], ranked["feature"])]
    category += [f"{c} {f}" for c, f in zip(frame["code"], frame["feature"]) if f"{c} {f}" not in set(category)]
    for fam in FAMILIES:
        for mi, mdl in enumerate(models):
            sub = frame[(frame["family"] == fam) & (frame["model"] == mdl)]
            if only_selected:
                sub = sub[sub["selected"]]
            if sub.empty:
                continue
            fig.add_trace(go.Bar(
                x=sub["code"] + " " + sub["feature"], y=sub["weight"], name=f"{fam}" + (f" · {mdl}" if len(models) > 1 else ""),
                marker=dict(color=FAMILY_COLORS.get(fam, "#888"), pattern_shape="" if mi == 0 else "/"),
                customdata=np.column_stack([sub["display_name"], sub["formula"], sub["model"]]),
                hovertemplate=("<b>%{x}</b><br>%{customdata[0]}<br>formula: %{customdata[1]}<br>"
                               "model: %{customdata[2]}<br>weight %{y:.3f}<extra></extra>")))
    fig.update_layout(barmode="group", xaxis=dict(categoryorder="array", categoryarray=category))
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=9), automargin=True)   # the 48 rotated labels are not clipped
    fig.update_yaxes(title_text="weight on the standardized feature")
    return apply_layout(fig, title, height)


def selection_bar(frame: pd.DataFrame, *, title: str | None = None, height: int = 460) -> go.Figure:
    """How often each feature was selected (``explain.selection_frequency`` rows of one method)."""
    sub = frame.sort_values(["frequency", "code"], ascending=[False, True])
    fig = go.Figure()
    for fam in FAMILIES:
        s = sub[sub["family"] == fam]
        if s.empty:
            continue
        fig.add_trace(go.Bar(x=s["code"] + " " + s["feature"], y=s["frequency"], name=fam,
                             marker_color=FAMILY_COLORS.get(fam, "#888"), customdata=np.column_stack([s["times"], s["fits"]]),
                             hovertemplate="%{x}<br>selected in %{customdata[0]} of %{customdata[1]} fits<extra></extra>"))
    fig.update_layout(xaxis=dict(categoryorder="array", categoryarray=list(sub["code"] + " " + sub["feature"])))
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=9))
    fig.update_yaxes(range=[0, 1.02], title_text="fraction of fits (folds x seeds)")
    return apply_layout(fig, title, height)


def weights_heatmap(weights: pd.DataFrame, *, title: str | None = None, height: int = 360) -> go.Figure:
    """Heatmap of weights, rows = groups (e.g. datasets), columns = features."""
    z = weights.to_numpy(dtype=np.float64)
    lim = float(np.nanmax(np.abs(z))) if z.size else 1.0
    # columns named by their F-codes, as the weight bars name them (the feature name on hover)
    cols = [str(c) for c in weights.columns]
    x = [f"{REGISTRY[c].code} {c}" if c in REGISTRY else c for c in cols]
    fig = go.Figure(go.Heatmap(z=z, x=x, y=[esc(v, 40) for v in weights.index],
                               colorscale="RdBu", zmid=0, zmin=-lim, zmax=lim,
                               hovertemplate="%{y}<br>%{x}<br>weight %{z:.3f}<extra></extra>",
                               colorbar=dict(title="weight")))
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=9), automargin=True)
    return apply_layout(fig, title, max(height, 120 + 28 * len(weights.index)))


# ------------------------------------------------------------ feature space
def projection_scatter(frame: pd.DataFrame, *, color: str, title: str | None = None, height: int = 600) -> go.Figure:
    """Scatter of a 2-D projection. ``frame`` columns: x, y, position, id, question, dataset, model,
    success, htc_confidence, baseline_confidence and the ``color`` column. Points carry their position
    as customdata[0] (read back when a point is selected)."""
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
    """Per-step confidences (top-1, top-k, mean r) above per-step statistics and token counts."""
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
    """Where one trajectory's confidence sits among its dataset's (histogram by outcome + a marker line)."""
    fig = confidence_histogram(confidence, success, nbins=20, height=height)
    fig.add_vline(x=float(value), line=dict(color="#222", width=3, dash="dash"))
    fig.add_annotation(x=float(value), y=1, yref="paper", text=esc(label), showarrow=False, yanchor="bottom")
    return fig


# ------------------------------------------------------------ comparisons
def group_metric_bars(frame: pd.DataFrame, *, metrics: Sequence[str] = ("ece", "brier", "auroc"),
                      height: int = 360) -> go.Figure:
    """Grouped bars of per-group metrics (``explain.group_metrics``): one panel per metric, with whiskers when the
    frame has bootstrap intervals."""
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[m.upper() if m != "brier" else "Brier" for m in metrics])
    methods = list(dict.fromkeys(frame["method"]))
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
                          row=1, col=j + 1)
    fig.update_layout(barmode="group")
    return apply_layout(fig, None, height, subplot_titles=True)


def feature_distribution(frame: pd.DataFrame, *, feature_label: str, height: int = 360) -> go.Figure:
    """Box plots of one feature per group and outcome; ``frame`` columns: group, success, value."""
    fig = go.Figure()
    for val, name, col in ((1.0, "success", "#54A24B"), (0.0, "failure", "#E45756")):
        sub = frame[frame["success"] == val]
        fig.add_trace(go.Box(x=sub["group"].map(lambda v: esc(v, 30)), y=sub["value"], name=name, marker_color=col,
                             boxmean=True))
    fig.update_layout(boxmode="group")
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
    """Tokens as coloured spans (colour = probability, exact value on hover). Every token is
    HTML-escaped, so trace text can never become markup."""
    parts = ['<div style="font-family: monospace; font-size: 0.85rem; line-height: 1.9; white-space: pre-wrap; '
             'word-break: break-word;">']
    for t, p in zip(tokens, probability):
        txt = esc(t) if t != "" else "␣"
        txt = txt.replace("\n", "↵\n")
        parts.append(f'<span title="p = {float(p):.3f}" style="background:{probability_color(p)}; border-radius:3px; '
                     f'padding:1px 1px; margin:0 1px;">{txt}</span>')
    parts.append("</div>")
    return "".join(parts)
