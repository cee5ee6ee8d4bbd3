"""A self-contained HTML report of an HTC analysis (``htc report``, and the dashboard's report download).

:class:`ReportData` holds result objects (an :class:`~htc_core.calibration.results.EvaluationResult`, the
fitted HTC-Reduced / HTC-Full, and when computed a transfer matrix, a GAC leave-one-out, an ablation, a
learning-curve table and the worst mistakes); :func:`build_report` renders them into one HTML file: plotly.js
embedded once, inline, no external script, stylesheet, font or CDN (it opens offline); :func:`compute_report`
computes the result objects from a TraceSet (the CLI's path).

Not core: the figures are the dashboard's own plotly builders (``htc_core.viz``), so this package
needs the ``[app]`` extra (plotly). The CLI imports it only when ``htc report`` runs.

The page is a Jinja2 template shipped as package data (``templates/report.html.j2`` and ``report.css``),
rendered with autoescape on: untrusted text (ids, questions, answers, dataset and model names, notes) is
HTML-escaped and bidi-isolated wherever it is written (the environment's ``finalize``). Figures are plotly's
``fig.to_html(full_html=False, include_plotlyjs=False)``, whose JSON writes ``<``, ``>`` and ``/`` as
``\\u003c`` / ``\\u003e`` / ``\\u002f``, so no value can close the ``<script>`` element that draws it.
"""

from __future__ import annotations

from .build import ReportData, build_report
from .compute import compute_report
from .learning import LearningCurve, parse_learning_curve

__all__ = ["ReportData", "build_report", "compute_report", "LearningCurve", "parse_learning_curve"]
