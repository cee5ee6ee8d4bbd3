"""Calibration: metrics, baselines, the HTC calibrator and the honest evaluation protocol.

    from htc_core.calibration import HTCCalibrator, evaluate, expected_calibration_error

Modules (each name below is also importable from here):

- ``metrics``: ECE, Brier score, AUROC, reliability curve, Wilson interval (one binning routine).
- ``streaming``: :class:`MetricState`, ECE/Brier/AUROC merged exactly from per-chunk sufficient statistics.
- ``selective``: risk-coverage (selective prediction), ROC curve, bootstrap intervals of any metric.
- ``bootstrap``: the one bootstrap engine (percentile intervals over :func:`scipy.stats.bootstrap`, one shared
  resample for every metric of a comparison); every interval above goes through it.
- ``baselines``: the single-signal confidences and temperature scaling.
- ``calibrators``: :class:`HTCCalibrator` (a scikit-learn estimator); ``model_file``: its JSON model file;
  ``solvers`` / ``pathsolver``: the regularized logistic-regression fits.
- ``general``: the General Agent Calibrator model (one HTC model per kind of run); ``models``: the shipped
  ``gac`` / ``gac-full`` files and :func:`load_model`; the script that writes them is ``htc_dev.train_gac``.
- ``evaluation``: :func:`evaluate` (nested CV) with ``methods`` (the table's methods behind one
  interface, a registry), ``crossval`` (the outer loop and summary) and ``results``
  (:class:`EvaluationResult`).
- ``prefixes``: :func:`early_warning`, the same protocol on the first k steps of every run
  (:class:`EarlyWarningResult`).

The experiments built on this core (transfer, GAC leave-one-group-out, ablation, learning curves, the
adaptation curve) live in :mod:`htc_core.experiments`, which imports the core and never the reverse.

The names are resolved on first use (PEP 562), so ``import htc_core.calibration.metrics`` stays as light
as numpy: scikit-learn (which the estimator inherits from) is imported only with :class:`HTCCalibrator`
or :func:`evaluate`.
"""

from __future__ import annotations

from htc_core.lazy import lazy_exports

#: public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    "HTCCalibrator": "calibrators",
    "DEFAULT_ALPHAS": "solvers",
    "evaluate": "evaluation",
    "EvaluationResult": "results",
    "EvaluationError": "evaluation",
    "merge_results": "evaluation",
    "label_problem": "evaluation",
    "small_sample_warning": "evaluation",
    "early_warning": "prefixes",
    "EarlyWarningResult": "prefixes",
    "Method": "methods",
    "Fitted": "methods",
    "FitContext": "methods",
    "METHODS": "methods",
    "register_method": "methods",
    "RAW_BASELINES": "baselines",
    "baseline_confidences": "baselines",
    "TemperatureScaling": "baselines",
    "expected_calibration_error": "metrics",
    "brier_score": "metrics",
    "auroc": "metrics",
    "reliability_curve": "metrics",
    "wilson_interval": "metrics",
    "bin_predictions": "metrics",
    "ReliabilityCurve": "metrics",
    "BinnedStats": "metrics",
    "UndefinedMetricWarning": "metrics",
    "risk_coverage_curve": "selective",
    "RiskCoverage": "selective",
    "roc_curve": "selective",
    "bootstrap_interval": "selective",
    "compare_run_sets": "comparison",
    "RunSetComparison": "comparison",
    "compare_metrics": "comparison",
    "metric_intervals": "comparison",
    "paired_metric_intervals": "comparison",
    "feature_shift": "comparison",
    "pairing_keys": "comparison",
    "MetricState": "streaming",
    "GeneralCalibrator": "general",
    "GACScores": "general",
    "load_model": "models",
    "shipped_models": "models",
}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

