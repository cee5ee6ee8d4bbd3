"""The inspector's waterfall of contributions to the logit (plotly), on distinct signals."""

from __future__ import annotations

import plotly.graph_objects as go

from ..features import feature_label
from .plots import apply_layout, esc

__all__ = ["waterfall"]


def waterfall(explanation, *, top: int = 12, height: int = 480) -> go.Figure:
    """The inspector's waterfall: one run's logit built from its contributions, largest first.

    The bars are the intercept, the ``top`` strongest distinct signals (exact copies and strongly correlated
    features summed), the rest summed, and the total logit.

    Parameters
    ----------
    explanation : TrajectoryExplanation
        One run's explanation (:func:`htc_core.explain.reasons.explain_trajectory`).
    top : int, default 12
        The number of signals drawn one by one.
    height : int, default 480
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One horizontal waterfall trace (red: lowers the confidence, green: raises it, blue: the total).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.explain.reasons import explain_trajectory
    >>> from htc_core.viz.inspector_plots import waterfall
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> fm = extract(ts)
    >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    >>> fig = waterfall(explain_trajectory(model, fm, 3, labels=ts.labels), top=3)
    >>> fig.data[0].type, list(fig.data[0].measure)
    ('waterfall', ['absolute', 'relative', 'relative', 'relative', 'relative', 'total'])
    >>> fig.data[0].y[0], fig.data[0].y[-2:]
    ('intercept', ('5 other signals', 'logit'))
    """
    t = explanation.signals
    t = t[t["contribution"] != 0]          # features a sparse model dropped add nothing
    head = t.head(top)
    rest = float(t["contribution"].iloc[top:].sum()) if len(t) > top else 0.0
    x = ["intercept"] + [feature_label(s) + (f" (+{n - 1} related)" if n > 1 else "")
                         for s, n in zip(head["signal"], head["n_members"])]
    y = [explanation.intercept] + list(head["contribution"])
    shown = head["shown_value"] if "shown_value" in head else head["value"].map(lambda v: f"{v:.4g}")
    text = ["baseline log-odds of the model"] + [f"value {esc(v)}; {esc(c)}" for v, c in zip(shown, head["comparison"])]
    measure = ["absolute"] + ["relative"] * len(head)
    if len(t) > top:
        x.append(f"{len(t) - top} other signals")
        y.append(rest)
        text.append("sum of the remaining contributions")
        measure.append("relative")
    x.append("logit")
    y.append(explanation.logit)
    text.append(f"calibrated confidence {explanation.confidence:.4f}")
    measure.append("total")
    fig = go.Figure(go.Waterfall(orientation="h", y=[esc(v) for v in x], x=y, measure=measure, customdata=text,
                                 decreasing=dict(marker=dict(color="#E45756")),
                                 increasing=dict(marker=dict(color="#54A24B")),
                                 totals=dict(marker=dict(color="#4C78A8")),
                                 hovertemplate="%{y}<br>%{x:+.3f}<br>%{customdata}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text="contribution to the logit (" + ("shape function at this run's value)"
                                 if explanation.variant == "gam" else "weight × standardized value)"))
    return apply_layout(fig, None, height)
