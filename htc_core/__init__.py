"""HTC: Holistic Trajectory Calibration for LLM agents.

The small public API (loaded lazily, so ``import htc_core`` stays fast and pulls in no numeric library)::

    import htc_core as htc

    ts, report = htc.load("sample_runs/arithmetic/")       # any supported trace format -> TraceSet
    fm = htc.extract(ts)                                     # the paper's 48 features (FeatureMatrix)
    model = htc.HTCCalibrator(variant="reduced").fit(fm, ts.labels)
    conf = model.predict_proba(fm)[:, 1]                     # calibrated confidence per run
    result = htc.evaluate(ts)                                # honest nested CV against the baselines
    htc.expected_calibration_error(ts.labels, conf)

Everything else lives in the subpackages: ``formats`` (readers), ``traces``, ``features``, ``calibration``,
``explain``, ``collect`` (recording), ``monitor``; on top of them ``experiments`` (the paper's and our
experiments), ``viz`` (the plotly figures), ``htmlreport``, ``app`` (dashboard side) and ``cli``. The map of
the rooms and what each may import: docs/house.md.
"""

from __future__ import annotations

from .lazy import lazy_exports

from ._version import __version__

#: public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # reading
    "load": "htc_core.formats",
    "load_bytes": "htc_core.formats",
    "iter_chunks": "htc_core.formats",
    "detect": "htc_core.formats",
    "LoadReport": "htc_core.report",
    # the columnar trace set
    "TraceSet": "htc_core.traces",
    "concat": "htc_core.traces",
    # features
    "extract": "htc_core.features",
    "FeatureMatrix": "htc_core.features",
    "FEATURE_NAMES": "htc_core.features",
    "REGISTRY": "htc_core.features",
    # calibration
    "HTCCalibrator": "htc_core.calibration",
    "evaluate": "htc_core.calibration",
    "EvaluationResult": "htc_core.calibration",
    "EvaluationError": "htc_core.calibration",
    "label_problem": "htc_core.calibration",
    "transfer": "htc_core.experiments.transfer",     # the module (same name as the function) shadows it
    "gac_leave_one_out": "htc_core.experiments",
    "ablation": "htc_core.experiments.ablation",
    "compare_run_sets": "htc_core.calibration",
    "learning_curve": "htc_core.experiments.learning_curve",
    "load_model": "htc_core.calibration",
    "adapt_traces": "htc_core.experiments.adapt_curve",
    "adaptation_curve": "htc_core.experiments.adapt_curve",
    "shift_check": "htc_core.calibration.shift",
    # metrics
    "expected_calibration_error": "htc_core.calibration",
    "brier_score": "htc_core.calibration",
    "auroc": "htc_core.calibration",
    "reliability_curve": "htc_core.calibration",
    "wilson_interval": "htc_core.calibration",
    # explanation
    "explain_trajectory": "htc_core.explain",
    # recording and live monitoring
    "Recorder": "htc_core.collect",
    "Monitor": "htc_core.monitor",
}

__all__ = ["__version__", *_EXPORTS]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

