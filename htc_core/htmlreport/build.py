"""The report's HTML: result objects in, one self-contained page out (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pandas as pd
from markupsafe import Markup

from ..bidi import isolate

__all__ = ["ReportData", "build_report"]

_METRIC_HEAD = (("ece", "ECE ↓"), ("brier", "Brier ↓"), ("auroc", "AUROC ↑"))


@dataclass
class ReportData:
    """What a report shows: result objects, each optional part a section of the page.

    ``evaluation`` and ``models`` are required; every other part is optional and its section is left out (with
    the line of ``skipped`` saying why) when it is None. :func:`~htc_core.htmlreport.compute.compute_report`
    computes one from a TraceSet.

    Parameters
    ----------
    evaluation : EvaluationResult
        The nested-CV evaluation (:func:`~htc_core.calibration.evaluation.evaluate`).
    models : dict of str to HTCCalibrator
        "HTC-Reduced" / "HTC-Full" -> fitted on all labeled runs (the weights section).
    title : str, default "HTC calibration report"
        The page's title.
    sources : list of str, default []
        The files the runs came from.
    groups : dict, default {}
        Group column -> {group: runs}.
    transfer : TransferResult or None, default None
        The transfer matrix.
    gac : GACResult or None, default None
        The GAC leave-one-out.
    ablation : AblationResult or None, default None
        The feature-family ablation.
    learning_curve : LearningCurve or None, default None
        A computed learning curve (:func:`~htc_core.htmlreport.learning.read_learning_curve`).
    mistakes : Mistakes or None, default None
        The worst mistakes (:func:`~htc_core.explain.examples.worst_mistakes`).
    skipped : dict of str to str, default {}
        Section -> why it is not in the report.
    notes : list of str, default []
        Notes shown at the top.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.htmlreport.build import ReportData
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> model = HTCCalibrator("reduced", alphas=(1.0,)).fit(extract(ts), ts.labels)
    >>> data = ReportData(evaluation=result, models={"HTC-Reduced": model}, title="Gemma3 on lists",
    ...                   skipped={"transfer": "the runs hold one dataset"})
    >>> data.title, list(data.models), data.transfer is None
    ('Gemma3 on lists', ['HTC-Reduced'], True)
    """

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
        """The report's results as JSON-ready values (each result object's own ``to_dict``; models left out).

        Returns
        -------
        dict
            Keys title, sources, groups, evaluation, skipped, notes, transfer, gac, ablation, learning_curve
            (None for a part not computed).

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.features import extract
        >>> from htc_core.calibration.evaluation import evaluate
        >>> from htc_core.calibration.calibrators import HTCCalibrator
        >>> from htc_core.htmlreport.build import ReportData
        >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
        ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
        >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
        >>> model = HTCCalibrator("reduced", alphas=(1.0,)).fit(extract(ts), ts.labels)
        >>> data = ReportData(evaluation=result, models={"HTC-Reduced": model}, title="Gemma3 on lists",
        ...                   skipped={"transfer": "the runs hold one dataset"})
        >>> d = data.to_dict()
        >>> sorted(d)
        ['ablation', 'evaluation', 'gac', 'groups', 'learning_curve', 'notes', 'skipped', 'sources', 'title', 'transfer']
        >>> d["transfer"], d["skipped"]
        (None, {'transfer': 'the runs hold one dataset'})
        """
        out = {"title": self.title, "sources": list(self.sources), "groups": self.groups,
               "evaluation": self.evaluation.to_dict(), "skipped": dict(self.skipped), "notes": list(self.notes)}
        for k in ("transfer", "gac", "ablation", "learning_curve"):
            v = getattr(self, k)
            out[k] = None if v is None else v.to_dict()
        return out


class _Figures:
    """Figures as plotly's own ``fig.to_html(full_html=False, include_plotlyjs=False)`` (plotly.js is in the page
    once): a <div> and a script whose JSON plotly writes with ``<`` / ``>`` / ``/`` as ``\\u003c`` / ... , so no
    value can close the script element. Numbered ids, so a report is the same bytes for the same results."""

    def __init__(self):
        """No figure drawn yet."""
        self.n = 0

    def __call__(self, fig) -> Markup:
        self.n += 1
        height = fig.layout.height
        return Markup(fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"htc-fig-{self.n}",
                                  default_width="100%", default_height=f"{height}px" if height else "450px",
                                  config={"displaylogo": False, "responsive": True}))


def _table(df: pd.DataFrame, *, text_cols=(), best: dict | None = None) -> dict:
    """A table for the template's ``table`` macro (which escapes every cell); ``best``: column -> boolean
    list marking the cells to highlight."""
    rows = []
    for i, r in enumerate(df.itertuples(index=False)):
        cells = []
        for c, v in zip(df.columns, r):
            cls = "text" if c in text_cols else ""
            if best and c in best and best[c][i]:
                cls += " best"
            cells.append({"cls": cls.strip(), "text": _fmt(v)})
        rows.append(cells)
    return {"columns": [str(c) for c in df.columns], "text_cols": [str(c) for c in text_cols], "rows": rows}


def _fmt(v) -> str:
    """A table cell's text: floats with 3 decimals, NaN and None as ""."""
    if isinstance(v, float):
        return "" if v != v else f"{v:.3f}"
    return "" if v is None else str(v)


def _ms(mean, std, digits: int = 3) -> str:
    """'mean ± std' with ``digits`` decimals."""
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


# ------------------------------------------------------------------ sections
# Each returns the context of its macro in templates/report.html.j2 (text and numbers, never markup; figures
# as plotly's HTML).
def _evaluation(d: ReportData, fig) -> dict:
    from ..explain import reliability_curves
    from ..viz import plots, tables

    res = d.evaluation
    t = tables.metrics_frame(res)
    table = pd.DataFrame({"method": t["method"], **{h: [_ms(a, b) for a, b in zip(t[f"{k}_mean"], t[f"{k}_std"])]
                                                     for k, h in _METRIC_HEAD},
                          "features": [_ms(a, b, 1) for a, b in zip(t.features_mean, t.features_std)], "n": t["n"]})
    best = {h: list(t[f"best_{k}"]) for k, h in _METRIC_HEAD}
    shown = [m for m in ("HTC-Reduced", "HTC-Full", res.strongest_baseline()) if m and m in res.oof]
    curves = reliability_curves(res.labels, {m: res.oof[m] for m in shown})
    return {"n": int(res.n), "positive_rate": float(res.positive_rate), "n_splits": res.n_splits,
            "seeds": list(res.seeds), "profile": res.profile, "top_k": res.top_k,
            "table": _table(table, text_cols=("method",), best=best),
            "reliability": fig(plots.reliability_figure(curves, ece=tables.table_ece(res, shown))),
            "notes": list(res.notes)}


def _weights(d: ReportData, fig) -> dict:
    from ..experiments.ablation import selection_frequency
    from ..viz import experiment_plots, plots, tables

    models = []
    for name, m in d.models.items():
        frame = tables.weights_frame({name: m})
        models.append({"name": name, "alpha": m.alpha_, "n_selected": m.n_selected_, "n_features": len(frame),
                       "figure": fig(plots.weights_bar(frame, height=460))})
    res = d.evaluation
    sel = tables.selection_view(res)
    selection = []
    for method in sel.methods:
        levels = selection_frequency(res, method)
        top = pd.concat([levels.top(lv, 5).rename(columns={lv: "times", f"{lv}_pct": "% of slots"}).assign(level=lv)
                         for lv in ("top1", "top3", "top5")], ignore_index=True)
        selection.append({"method": method, "bar": fig(plots.selection_bar(sel.of(method))),
                          "levels": fig(experiment_plots.selection_levels_bar(levels.by_family)),
                          "table": _table(top[["level", "feature", "family", "times", "% of slots"]],
                                          text_cols=("level", "feature", "family"))})
    return {"models": models, "fits": sel.fits, "selection": selection}


def _transfer(d: ReportData, fig) -> dict:
    from ..viz import experiment_plots

    r = d.transfer
    return {"by": r.by, "notes": list(r.notes),
            "variants": [{"name": v.capitalize(), "figure": fig(experiment_plots.transfer_heatmaps(r, v))}
                         for v in r.variants]}


def _gac(d: ReportData, fig) -> dict:
    g = d.gac
    rows = g.rows
    t = pd.DataFrame({"variant": rows.variant, "held out": rows.heldout, "method": rows.method,
                      "runs": rows.n_heldout, **{h: [_ms(a, b) for a, b in zip(rows[f"{k}_mean"], rows[f"{k}_std"])]
                                                 for k, h in _METRIC_HEAD}})
    return {"by": g.by, "seeds": list(g.seeds), "notes": list(g.notes),
            "table": _table(t, text_cols=("variant", "held out", "method"))}


def _ablation(d: ReportData, fig) -> dict:
    from ..viz import experiment_plots

    a = d.ablation
    variants = []
    for v in a.rows.variant.unique():
        r = a.rows[a.rows.variant == v]
        t = pd.DataFrame({"families": r.families, "columns": r.n_columns,
                          **{h: [_ms(x, y) for x, y in zip(r[f"{k}_mean"], r[f"{k}_std"])] for k, h in _METRIC_HEAD}})
        variants.append({"name": str(v).capitalize(), "figure": fig(experiment_plots.ablation_bars(a.rows, v)),
                         "table": _table(t, text_cols=("families",))})
    return {"variants": variants}


def _learning(d: ReportData, fig) -> dict:
    from .learning import learning_curve_figure

    lc = d.learning_curve
    wide = lc.frame.assign(value=[_ms(a, b) for a, b in zip(lc.frame["mean"], lc.frame["std"])]).pivot_table(
        index=["method", "size"], columns="metric", values="value", aggfunc="first").reset_index()
    return {"source": lc.source, "figure": fig(learning_curve_figure(lc)), "table": _table(wide, text_cols=("method",))}


def _mistakes(d: ReportData, fig) -> dict:
    mk = d.mistakes
    cols = [c for c in ("id", "dataset", "model", "question", "answer", "gold", "confidence", "flags", "reason")
            if c in mk.confident_failures.columns]
    text = tuple(c for c in cols if c != "confidence")

    def clip(df):
        df = df[cols].copy()
        for c in ("question", "answer", "gold"):
            if c in df:
                df[c] = [s if len(s) <= 400 else s[:399] + "…" for s in df[c].fillna("").astype(str)]
        return _table(df, text_cols=text)

    return {"method": mk.method, "failures": clip(mk.confident_failures), "doubted": clip(mk.doubted_successes)}


SECTIONS = (("evaluation", "Evaluation", _evaluation), ("weights", "Feature weights", _weights),
            ("transfer", "Transfer", _transfer), ("gac", "GAC leave-one-out", _gac),
            ("ablation", "Ablation", _ablation), ("learning", "Learning curves", _learning),
            ("mistakes", "Examples", _mistakes))
_NEEDS = {"transfer": "transfer", "gac": "gac", "ablation": "ablation", "learning": "learning_curve",
          "mistakes": "mistakes"}


def _text(value):
    """The environment's ``finalize``: every ``{{ value }}`` that is not Markup is bidi-isolated (a U+202E in a
    name cannot reverse the text after it) before autoescape escapes it."""
    return value if isinstance(value, Markup) else isolate(value)


@lru_cache(maxsize=1)
def _template():
    """The report's Jinja2 template (autoescape on, every value bidi-isolated), loaded once."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("htc_core.htmlreport", "templates"), autoescape=True,
                      finalize=_text, undefined=StrictUndefined, trim_blocks=False)
    return env.get_template("report.html.j2")


def build_report(data: ReportData) -> str:
    """The report as one self-contained HTML document: plotly.js inline once, every figure drawn from ``data``.

    The page is ``templates/report.html.j2`` (Jinja2, autoescape on: every value from the runs is escaped and
    bidi-isolated); the figures are plotly's ``fig.to_html(full_html=False, include_plotlyjs=False)``, numbered
    so that the same results give the same bytes. It opens offline: no external script, stylesheet or font.

    Parameters
    ----------
    data : ReportData
        The results to show; a part that is None leaves its section out.

    Returns
    -------
    str
        The HTML document.

    Raises
    ------
    ValueError
        If ``data`` is not a ReportData.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.evaluation import evaluate
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.htmlreport.build import ReportData, build_report
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs
    >>> result = evaluate(ts, methods=("HTC-Reduced", "LastStep-TP"), seeds=1, n_splits=3, alphas=(1.0,))
    >>> model = HTCCalibrator("reduced", alphas=(1.0,)).fit(extract(ts), ts.labels)
    >>> data = ReportData(evaluation=result, models={"HTC-Reduced": model}, title="Gemma3 on lists",
    ...                   skipped={"transfer": "the runs hold one dataset"})
    >>> html = build_report(data)
    >>> html.startswith("<!DOCTYPE html>"), "<title>Gemma3 on lists</title>" in html
    (True, True)
    >>> html.count('id="htc-fig-'), "the runs hold one dataset" in html      # 4 figures; why transfer is left out
    (4, True)
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "report.html")
    >>> with open(path, "w", encoding="utf-8") as fh:
    ...     n = fh.write(html)
    """
    from plotly.offline import get_plotlyjs

    from .._version import __version__

    if not isinstance(data, ReportData):
        raise ValueError(f"data must be a ReportData, got {type(data).__name__}")
    fig = _Figures()
    sections, left_out = [], []
    for key, label, render in SECTIONS:
        attr = _NEEDS.get(key)
        if attr is not None and getattr(data, attr) is None:
            if key in data.skipped:
                left_out.append((label, data.skipped[key]))
            continue
        sections.append({"key": key, "label": label, "context": render(data, fig)})
    groups = {str(col): {str(g): int(n) for g, n in counts.items()} for col, counts in data.groups.items()}
    return _template().render(title=data.title, sources=[str(s) for s in data.sources], groups=groups,
                              version=__version__, left_out=left_out, report_notes=list(data.notes),
                              sections=sections, plotlyjs=Markup(get_plotlyjs())) + "\n"
