"""The dashboard's report download: the ``htc report`` HTML file built from the results the dashboard already
computed for the selection (no new computation but the two whole-selection fits, which are cached too)."""

from __future__ import annotations

from ..experiments.grouping import GROUP_KEYS
from ..htmlreport import ReportData, build_report
from . import experiments, fits
from .explain_views import mistakes_for
from .workspace import Workspace

__all__ = ["report_data", "report_html"]


def report_data(ws: Workspace, evaluated, *, title: str = "HTC calibration report (dashboard selection)") -> ReportData:
    """A :class:`ReportData` of the selection: the evaluation (``evaluated``), the fitted HTC-Reduced / HTC-Full,
    the transfer matrix and ablation when already computed on the Compare / Feature weights pages, the worst
    mistakes (out-of-fold). The GAC leave-one-out is not part of the dashboard (``htc report`` has it)."""
    res = evaluated.result
    models = {f"HTC-{v.capitalize()}": fits.fitted_model(ws, v) for v in ("reduced", "full")}
    transfer = next((t for t in (experiments.cached_transfer(by) for by in GROUP_KEYS) if t is not None), None)
    ablation = experiments.cached_ablation()
    skipped = {"gac": "the GAC leave-one-out runs on the command line: htc report INPUT... --out report.html"}
    if transfer is None:
        skipped["transfer"] = "not computed for this selection (Compare LLMs page: 'Compute the transfer matrix')"
    if ablation is None:
        skipped["ablation"] = "not computed for this selection (Feature weights page: 'Run the ablation')"
    skipped["learning"] = "learning curves are computed on the command line (htc learning-curve --json)"
    meta = ws.ts.meta.iloc[evaluated.positions]
    groups = {c: {str(k): int(n) for k, n in meta[c].astype(str).value_counts().sort_index().items()}
              for c in GROUP_KEYS if c in meta.columns and meta[c].notna().any()}
    return ReportData(evaluation=res, models=models, title=title, sources=["the dashboard's selection"],
                      groups=groups, transfer=transfer, ablation=ablation,
                      mistakes=mistakes_for(ws, evaluated, htc="HTC-Reduced", n=10), skipped=skipped)


def report_html(ws: Workspace, evaluated) -> str:
    return build_report(report_data(ws, evaluated))
