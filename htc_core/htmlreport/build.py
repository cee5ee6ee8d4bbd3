"""The report's HTML: result objects in, one self-contained page out (see the package docstring)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..bidi import isolate

__all__ = ["ReportData", "build_report"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1200px;
padding:0 24px 48px;color:#222;line-height:1.45}
h1{margin-top:28px}h2{margin-top:40px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:14px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.text,th.text{text-align:left;max-width:420px;white-space:pre-wrap;word-break:break-word}
td.best{background:#e6f4ea;font-weight:600}.note{color:#666;font-size:13px}.fig{width:100%}
nav a{margin-right:14px}
"""
_METRIC_HEAD = (("ece", "ECE ↓"), ("brier", "Brier ↓"), ("auroc", "AUROC ↑"))


@dataclass
class ReportData:
    """What a report shows. ``evaluation`` and ``models`` are required; every other part is optional and
    its section is left out (with a line saying why) when it is None."""

    evaluation: Any                                   # EvaluationResult
    models: dict                                      # "HTC-Reduced"/"HTC-Full" -> fitted HTCCalibrator (all runs)
    title: str = "HTC calibration report"
    sources: list = field(default_factory=list)
    groups: dict = field(default_factory=dict)        # group column -> {group: runs}
    transfer: Any = None                              # TransferResult
    gac: Any = None                                   # GACResult
    ablation: Any = None                              # AblationResult
    learning_curve: Any = None                        # LearningCurve
    mistakes: Any = None                              # explain.Mistakes
    skipped: dict = field(default_factory=dict)       # section -> why it is not in the report
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {"title": self.title, "sources": list(self.sources), "groups": self.groups,
               "evaluation": self.evaluation.to_dict(), "skipped": dict(self.skipped), "notes": list(self.notes)}
        for k in ("transfer", "gac", "ablation", "learning_curve"):
            v = getattr(self, k)
            out[k] = None if v is None else v.to_dict()
        return out


def _e(v) -> str:
    """Escaped and bidi-isolated (a U+202E in a name cannot reverse the text after it)."""
    return html.escape(isolate(v), quote=True)


class _Figures:
    """Figures as <div> + inline script; the JSON cannot close the script element (see the package doc)."""

    def __init__(self):
        self.n = 0

    def __call__(self, fig) -> str:
        self.n += 1
        div = f"htc-fig-{self.n}"
        data = fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        return (f'<div id="{div}" class="fig"></div><script>(function(){{var f={data};'
                f'Plotly.newPlot("{div}",f.data,f.layout,{{"displaylogo":false,"responsive":true}});}})();</script>')


def _table(df: pd.DataFrame, *, text_cols=(), best: dict | None = None) -> str:
    """An escaped HTML table; ``best``: column -> boolean list marking the cells to highlight."""
    head = "".join(f'<th class="{"text" if c in text_cols else ""}">{_e(c)}</th>' for c in df.columns)
    rows = []
    for i, r in enumerate(df.itertuples(index=False)):
        cells = []
        for c, v in zip(df.columns, r):
            cls = "text" if c in text_cols else ""
            if best and c in best and best[c][i]:
                cls += " best"
            cells.append(f'<td class="{cls.strip()}">{_e(_fmt(v))}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _fmt(v) -> str:
    if isinstance(v, float):
        return "" if v != v else f"{v:.3f}"
    return "" if v is None else str(v)


def _ms(mean, std, digits: int = 3) -> str:
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


# ------------------------------------------------------------------ sections
def _evaluation(d: ReportData, fig) -> str:
    from ..viz import plots, tables
    from ..explain import reliability_curves

    res = d.evaluation
    t = tables.metrics_frame(res)
    table = pd.DataFrame({"method": t["method"], **{h: [_ms(a, b) for a, b in zip(t[f"{k}_mean"], t[f"{k}_std"])]
                                                     for k, h in _METRIC_HEAD},
                          "features": [_ms(a, b, 1) for a, b in zip(t.features_mean, t.features_std)], "n": t["n"]})
    best = {h: list(t[f"best_{k}"]) for k, h in _METRIC_HEAD}
    shown = [m for m in ("HTC-Reduced", "HTC-Full", res.strongest_baseline()) if m and m in res.oof]
    curves = reliability_curves(res.labels, {m: res.oof[m] for m in shown})
    return (f'<h2 id="evaluation">Evaluation</h2><p>{res.n:,} labeled runs, success rate {res.positive_rate:.3f}; '
            f"outer {res.n_splits}-fold stratified CV x {len(res.seeds)} repeat(s) (seeds "
            f"{', '.join(map(str, res.seeds))}), alpha chosen by an inner CV on the training folds only; metrics on "
            f"pooled out-of-fold predictions, mean ± std over repeats; highlighted: the best of each column among "
            f"the methods evaluated on all runs. Profile {_e(res.profile)}, top-k {res.top_k}.</p>"
            + _table(table, text_cols=("method",), best=best)
            + "<h3>Reliability diagrams</h3><p class=note>Out-of-fold predictions of the first repeat, HTC next to "
              "the strongest baseline (by Brier); whiskers: 95% Wilson intervals; bars: runs per bin.</p>"
            + fig(plots.reliability_figure(curves, ece=tables.table_ece(res, shown)))
            + "".join(f"<p class=note>note: {_e(n)}</p>" for n in res.notes))


def _weights(d: ReportData, fig) -> str:
    from ..viz import experiment_plots, plots, tables
    from ..experiments.ablation import selection_frequency

    out = ['<h2 id="weights">Feature weights and selection frequency</h2><p>Weights of the calibrators fitted on '
           "every labeled run, on standardized features (a positive weight raises the confidence).</p>"]
    for name, m in d.models.items():
        frame = tables.weights_frame({name: m})
        out.append(f"<h3>{_e(name)}</h3><p class=note>alpha {m.alpha_:g}; {m.n_selected_} of {len(frame)} "
                   "features kept</p>" + fig(plots.weights_bar(frame, height=460)))
    res = d.evaluation
    sel = tables.selection_view(res)
    for method in sel.methods:
        levels = selection_frequency(res, method)
        top = pd.concat([levels.top(lv, 5).rename(columns={lv: "times", f"{lv}_pct": "% of slots"}).assign(level=lv)
                         for lv in ("top1", "top3", "top5")], ignore_index=True)
        out.append(f"<h3>Selection frequency, {_e(method)}</h3><p class=note>Over the {sel.fits} outer-fold fits "
                   "(folds x seeds) of the evaluation: the fraction of fits that kept each feature, and each "
                   "family's share of the Top-1 / Top-3 / Top-5 slots by |standardized weight|.</p>"
                   + fig(plots.selection_bar(sel.of(method)))
                   + fig(experiment_plots.selection_levels_bar(levels.by_family))
                   + _table(top[["level", "feature", "family", "times", "% of slots"]],
                            text_cols=("level", "feature", "family")))
    return "".join(out)


def _transfer(d: ReportData, fig) -> str:
    from ..viz import experiment_plots

    r = d.transfer
    out = [f'<h2 id="transfer">Transfer across {_e(r.by)}s</h2><p>Fitted on all runs of the source (row), '
           "applied unchanged to the target (column); the diagonal [in brackets] is DirectTrain, the honest nested "
           "CV of that group. Runs per group in parentheses.</p>"]
    for v in r.variants:
        out.append(f"<h3>HTC-{_e(v.capitalize())}</h3>" + fig(experiment_plots.transfer_heatmaps(r, v)))
    return "".join(out) + "".join(f"<p class=note>note: {_e(n)}</p>" for n in r.notes)


def _gac(d: ReportData, fig) -> str:
    g = d.gac
    rows = g.rows
    t = pd.DataFrame({"variant": rows.variant, "held out": rows.heldout, "method": rows.method,
                      "runs": rows.n_heldout, **{h: [_ms(a, b) for a, b in zip(rows[f"{k}_mean"], rows[f"{k}_std"])]
                                                 for k, h in _METRIC_HEAD}})
    return (f'<h2 id="gac">General Agent Calibrator, leave one {_e(g.by)} out</h2><p>Each group held out in turn: '
            "a calibrator pooled over all other groups, applied zero-shot to it, next to DirectTrain (its own nested "
            f"CV); mean ± std over seeds {', '.join(map(str, g.seeds))}.</p>"
            + _table(t, text_cols=("variant", "held out", "method"))
            + "".join(f"<p class=note>note: {_e(n)}</p>" for n in g.notes))


def _ablation(d: ReportData, fig) -> str:
    from ..viz import experiment_plots

    a = d.ablation
    out = ['<h2 id="ablation">Feature-family ablation</h2><p>HTC on each of the 15 combinations of the four feature '
           "families, same protocol and outer folds as the evaluation (mean ± std over repeats).</p>"]
    for v in a.rows.variant.unique():
        r = a.rows[a.rows.variant == v]
        t = pd.DataFrame({"families": r.families, "columns": r.n_columns,
                          **{h: [_ms(x, y) for x, y in zip(r[f"{k}_mean"], r[f"{k}_std"])] for k, h in _METRIC_HEAD}})
        out.append(f"<h3>HTC-{_e(str(v).capitalize())}</h3>" + fig(experiment_plots.ablation_bars(a.rows, v))
                   + _table(t, text_cols=("families",)))
    return "".join(out)


def _learning(d: ReportData, fig) -> str:
    from .learning import learning_curve_figure

    lc = d.learning_curve
    wide = lc.frame.assign(value=[_ms(a, b) for a, b in zip(lc.frame["mean"], lc.frame["std"])]).pivot_table(
        index=["method", "size"], columns="metric", values="value", aggfunc="first").reset_index()
    return (f'<h2 id="learning">Learning curves</h2><p>From {_e(lc.source)}: mean ± std against the number of '
            "training runs.</p>" + fig(learning_curve_figure(lc)) + _table(wide, text_cols=("method",)))


def _mistakes(d: ReportData, fig) -> str:
    mk = d.mistakes
    cols = [c for c in ("id", "dataset", "model", "question", "answer", "gold", "confidence", "flags", "reason")
            if c in mk.confident_failures.columns]
    text = tuple(c for c in cols if c != "confidence")

    def clip(df):
        df = df[cols].copy()
        for c in ("question", "answer", "gold"):
            if c in df:
                df[c] = [s if len(s) <= 400 else s[:399] + "…" for s in df[c].fillna("").astype(str)]
        return df

    return (f'<h2 id="mistakes">Over- and under-confident examples ({_e(mk.method)}, out-of-fold)</h2>'
            "<h3>Confident failures</h3><p class=note>Failed runs with the highest confidence.</p>"
            + _table(clip(mk.confident_failures), text_cols=text)
            + "<h3>Doubted successes</h3><p class=note>Successful runs with the lowest confidence.</p>"
            + _table(clip(mk.doubted_successes), text_cols=text))


SECTIONS = (("evaluation", "Evaluation", _evaluation), ("weights", "Feature weights", _weights),
            ("transfer", "Transfer", _transfer), ("gac", "GAC leave-one-out", _gac),
            ("ablation", "Ablation", _ablation), ("learning", "Learning curves", _learning),
            ("mistakes", "Examples", _mistakes))
_NEEDS = {"transfer": "transfer", "gac": "gac", "ablation": "ablation", "learning": "learning_curve",
          "mistakes": "mistakes"}


def build_report(data: ReportData) -> str:
    """The report as one HTML document (a str): plotly.js inline once, every figure drawn from ``data``."""
    from plotly.offline import get_plotlyjs

    from .._version import __version__

    if not isinstance(data, ReportData):
        raise ValueError(f"data must be a ReportData, got {type(data).__name__}")
    fig = _Figures()
    body, nav, left_out = [], [], []
    for key, label, render in SECTIONS:
        attr = _NEEDS.get(key)
        if attr is not None and getattr(data, attr) is None:
            if key in data.skipped:
                left_out.append(f"<li>{_e(label)}: {_e(data.skipped[key])}</li>")
            continue
        body.append(render(data, fig))
        nav.append(f'<a href="#{key}">{_e(label)}</a>')
    groups = "; ".join(f"{_e(col)}: " + ", ".join(f"{_e(g)} ({n:,})" for g, n in counts.items())
                       for col, counts in data.groups.items())
    head = (f"<h1>{_e(data.title)}</h1><p>Sources: {', '.join(_e(s) for s in data.sources) or '—'}<br>"
            f"{groups}</p><p class=note>Written by htc {_e(__version__)} (Holistic Trajectory Calibration). Every "
            "number is computed from the runs listed above; the figures are interactive (hover, zoom) and the file "
            "needs no network.</p>")
    if left_out:
        head += "<p>Not in this report:</p><ul>" + "".join(left_out) + "</ul>"
    head += "".join(f"<p class=note>note: {_e(n)}</p>" for n in data.notes)
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{_e(data.title)}</title>"
            f"<style>{_CSS}</style><script type=\"text/javascript\">{get_plotlyjs()}</script></head><body>"
            f"<nav>{''.join(nav)}</nav>{head}{''.join(body)}</body></html>\n")
