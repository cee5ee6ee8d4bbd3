"""Plotly figures of the experiments (transfer matrix, selection frequency by level, ablation); they only
draw the result objects of :mod:`htc_core.experiments.transfer` / ``ablation``. Group names are untrusted
metadata and go through :func:`~htc_core.viz.plots.esc`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .plots import FAMILY_COLORS, apply_layout, esc

__all__ = ["transfer_heatmaps", "selection_levels_bar", "ablation_bars", "learning_curve_lines"]

METRIC_TITLES = {"ece": "ECE ↓", "brier": "Brier ↓", "auroc": "AUROC ↑"}


def transfer_heatmaps(result, variant: str = "reduced", *, height: int = 420) -> go.Figure:
    """Source x target heatmaps of ECE, Brier and AUROC of a transfer matrix, with the runs per group.

    The diagonal cells (DirectTrain, the group's own nested CV) are bracketed.

    Parameters
    ----------
    result : TransferResult
        A transfer matrix (:func:`htc_core.experiments.transfer.transfer`).
    variant : str, default "reduced"
        The HTC variant drawn.
    height : int, default 420
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One heatmap per metric, rows the source, columns the target.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> from htc_core.experiments.transfer import transfer
    >>> from htc_core.viz.experiment_plots import transfer_heatmaps
    >>> result = transfer(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> fig = transfer_heatmaps(result)
    >>> [trace.type for trace in fig.data], list(fig.data[0].x)
    (['heatmap', 'heatmap', 'heatmap'], ['facts (16)', 'lists (16)'])
    >>> fig.data[0].text                                                # ECE; DirectTrain bracketed
    (['[0.242]', '0.369'], ['0.516', '[0.280]'])
    """
    groups = [f"{esc(g, 24)} ({result.n_runs[g]:,})" for g in result.groups]
    fig = make_subplots(rows=1, cols=3, subplot_titles=[METRIC_TITLES[m] for m in METRIC_TITLES],
                        horizontal_spacing=0.09)
    for j, metric in enumerate(METRIC_TITLES, start=1):
        m = result.matrix(metric, variant).to_numpy()
        s = result.matrix(metric, variant, stat="std").to_numpy()
        text = [[f"{'[' if a == b else ''}{m[a, b]:.3f}{']' if a == b else ''}" for b in range(len(groups))]
                for a in range(len(groups))]
        hover = [[f"source {groups[a]}<br>target {groups[b]}<br>{metric}: {m[a, b]:.3f} ± {s[a, b]:.3f}"
                  f"<br>{'DirectTrain (nested CV)' if a == b else 'transfer (fitted on the source)'}"
                  for b in range(len(groups))] for a in range(len(groups))]
        scale = "Blues" if metric == "auroc" else "Reds"
        fig.add_trace(go.Heatmap(z=m, x=groups, y=groups, text=text, texttemplate="%{text}", hovertext=hover,
                                 hoverinfo="text", colorscale=scale, showscale=False,
                                 zmin=0.5 if metric == "auroc" else 0.0,
                                 zmax=1.0 if metric == "auroc" else float(np.nanmax(m)) if np.isfinite(m).any() else 1),
                      row=1, col=j)
        fig.update_xaxes(title_text="target", row=1, col=j, tickangle=-30)
        fig.update_yaxes(title_text="source" if j == 1 else None, autorange="reversed", row=1, col=j,
                         showticklabels=j == 1)
    return apply_layout(fig, height=height, subplot_titles=True)


def selection_levels_bar(by_family: pd.DataFrame, *, height: int = 340) -> go.Figure:
    """Share of each feature family at Top-1 / Top-3 / Top-5 / selected: the paper's selection-frequency figure.

    Parameters
    ----------
    by_family : pandas.DataFrame
        :class:`~htc_core.experiments.ablation.SelectionFrequency`'s ``by_family``.
    height : int, default 340
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One stacked bar trace per family (its number of features in the legend).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> from htc_core.experiments.ablation import ablation
    >>> result = ablation(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> from htc_core.viz.experiment_plots import selection_levels_bar
    >>> fig = selection_levels_bar(result.selection["reduced"].by_family)
    >>> [trace.name for trace in fig.data]
    ['Dynamics (19)', 'Position (14)', 'Stability (10)', 'Structure (5)']
    >>> list(fig.data[0].x), fig.layout.yaxis.title.text
    (['Top-1', 'Top-3', 'Top-5', 'selected at all'], '% of the slots at that level')
    """
    levels = [("top1", "Top-1"), ("top3", "Top-3"), ("top5", "Top-5"), ("selected", "selected at all")]
    fig = go.Figure()
    for r in by_family.to_dict("records"):
        fig.add_trace(go.Bar(x=[name for _, name in levels], y=[r[f"{lv}_pct"] for lv, _ in levels],
                             name=f"{r['family']} ({r['n_features']})",
                             marker_color=FAMILY_COLORS.get(r["family"], "#888"),
                             customdata=[[r[lv]] for lv, _ in levels],
                             hovertemplate="%{x}: %{y:.1f}% (%{customdata[0]} times)<extra>" + r["family"] + "</extra>"))
    fig.update_layout(barmode="stack", yaxis_title="% of the slots at that level")
    return apply_layout(fig, height=height)


def ablation_bars(rows: pd.DataFrame, variant: str, *, metric: str = "auroc", height: int = 460) -> go.Figure:
    """One bar per feature-family combination (mean ± std over repeats), in the result's order.

    Parameters
    ----------
    rows : pandas.DataFrame
        :class:`~htc_core.experiments.ablation.AblationResult`'s ``rows``.
    variant : str
        The HTC variant drawn ("full" or "reduced").
    metric : {"auroc", "brier", "ece"}, default "auroc"
        The metric.
    height : int, default 460
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One horizontal bar trace, the best combination on top.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> from htc_core.experiments.ablation import ablation
    >>> result = ablation(ts, variants=("reduced",), seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3)
    >>> from htc_core.viz.experiment_plots import ablation_bars
    >>> fig = ablation_bars(result.rows, "reduced")
    >>> fig.data[0].type, len(fig.data[0].y), fig.layout.xaxis.title.text
    ('bar', 15, 'AUROC ↑')
    """
    r = rows[rows.variant == variant]
    labels = [f"{f} ({n})" for f, n in zip(r.families, r.n_columns)]
    fig = go.Figure(go.Bar(x=r[f"{metric}_mean"], y=labels, orientation="h",
                           error_x=dict(type="data", array=r[f"{metric}_std"]), marker_color="#4C78A8",
                           hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    lo = float(np.nanmin(r[f"{metric}_mean"] - r[f"{metric}_std"])) if len(r) else 0
    fig.update_layout(xaxis_title=METRIC_TITLES[metric], xaxis_range=[max(0.0, lo - 0.02), None])
    fig.update_yaxes(autorange="reversed")
    return apply_layout(fig, height=height)


CURVE_COLORS = {"HTC-Full": "#1F77B4", "HTC-Reduced": "#D62728", "MLP": "#9467BD", "XGBoost": "#2CA02C",
                "GP": "#FF7F0E", "LSTM": "#8C564B", "Transformer": "#7F7F7F"}


def _rgba(hex_color: str, alpha: float) -> str:
    """A ``#rrggbb`` colour as an ``rgba(...)`` string with opacity ``alpha``."""
    h = hex_color.lstrip("#")
    return f"rgba({int(h[0:2], 16)}, {int(h[2:4], 16)}, {int(h[4:6], 16)}, {alpha})"


def learning_curve_lines(curves: pd.DataFrame, *, height: int = 380) -> go.Figure:
    """ECE, Brier and AUROC against the training size, one line per method, mean ± std as a band.

    Parameters
    ----------
    curves : pandas.DataFrame
        :meth:`LearningCurveResult.curves() <htc_core.experiments.learning_curve.LearningCurveResult.curves>`.
    height : int, default 380
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Per metric panel and method, a band and a line; the x axes are logarithmic.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 datasets, 16 runs each
    >>> from htc_core.experiments.learning_curve import learning_curve
    >>> from htc_core.viz.experiment_plots import learning_curve_lines
    >>> result = learning_curve(ts, sizes=(10, 16), methods=["HTC-Reduced"], folds=2)
    >>> fig = learning_curve_lines(result.curves())
    >>> len(fig.data), [a.text for a in fig.layout.annotations], fig.layout.xaxis.type
    (6, ['ECE ↓', 'Brier ↓', 'AUROC ↑'], 'log')
    """
    fig = make_subplots(rows=1, cols=3, subplot_titles=[METRIC_TITLES[m] for m in METRIC_TITLES],
                        horizontal_spacing=0.07)
    palette = iter(["#17BECF", "#BCBD22", "#E377C2", "#AEC7E8"])
    for name in dict.fromkeys(curves["method"]):
        c = curves[curves.method == name].sort_values("size")
        color = CURVE_COLORS.get(name) or next(palette, "#333333")
        label = esc(str(name), 30)
        for j, metric in enumerate(METRIC_TITLES, start=1):
            x, m, s = c["n_train"].to_numpy(), c[f"{metric}_mean"].to_numpy(), c[f"{metric}_std"].fillna(0).to_numpy()
            fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([m + s, (m - s)[::-1]]),
                                     mode="lines", fill="toself", fillcolor=_rgba(color, 0.10), line=dict(width=0),
                                     hoverinfo="skip", showlegend=False, legendgroup=label), row=1, col=j)
            fig.add_trace(go.Scatter(x=x, y=m, mode="lines+markers", name=label, legendgroup=label,
                                     line=dict(color=color, width=2.5 if name.startswith("HTC") else 1.5),
                                     customdata=np.stack([s, c["n_fits"].to_numpy()], axis=1),
                                     hovertemplate=f"{label}<br>n=%{{x:.0f}}: %{{y:.3f}} ± %{{customdata[0]:.3f}} "
                                                   f"(%{{customdata[1]}} fits)<extra></extra>",
                                     showlegend=j == 1), row=1, col=j)
            fig.update_xaxes(title_text="training runs", type="log", row=1, col=j)
    return apply_layout(fig, height=height, subplot_titles=True)
