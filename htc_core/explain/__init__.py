"""Why a trajectory got its confidence, and where calibration changed the verdict.

Fitted models, feature matrices and evaluation results in, small typed result
objects (data frames and dataclasses) out; ``htc_core.viz`` draws them. Nothing
here imports Streamlit, DuckDB, Plotly or UMAP, nor ``htc_core.app``.

- ``reasons``:  :func:`explain_trajectory` (contributions to the logit and reasons in words),
  :func:`group_position`, :func:`percentile_of`, :func:`describe_position`, :func:`compare_with`,
  :func:`format_confidence`
- ``flags``:    :func:`structural_flags` (no final answer, step limit, tool error, repeated action, ...)
- ``export``:   :func:`explain_runs` (flags, top reasons and features per run, for CSV export)
- ``signals``:  :func:`signal_groups` (exact copies and strongly correlated features as one signal)
- ``examples``: :func:`confidence_examples` (where HTC changed a baseline's verdict), :func:`worst_mistakes`
  (HTC's own most confident failures and least confident successes)
- ``steps``:    :func:`step_timeline`, :func:`token_steps`, :func:`confidence_after_steps` (one trajectory,
  step by step)
- ``drill``:    :func:`reliability_members`, :func:`binned_runs` (the runs behind a bin of a reliability
  diagram or a confidence histogram)
- ``shapes``:   :func:`shape_curves` (HTC-GAM's shape functions with the data density, by importance)
- ``groups``:   :func:`reliability_curves`, :func:`group_metrics`, :func:`group_curves`,
  :func:`dataset_weights` (an evaluation by group; one calibrator per group)

The result tables the dashboard and the report show (metrics, weights, selection frequency, ...) are in
``htc_core.viz.tables``.
"""

from htc_core.lazy import lazy_exports

#: public name -> submodule that defines it, imported on first use (PEP 562): ``import htc_core.explain.flags``
#: (the dashboard's store, ``htc serve``) loads neither scikit-learn nor scipy, which ``groups`` needs for its
#: per-group calibrators
_EXPORTS: dict[str, str] = {
    "BinnedRuns": "drill", "binned_runs": "drill", "reliability_members": "drill",
    "ExampleSet": "examples", "Mistakes": "examples", "confidence_examples": "examples", "worst_mistakes": "examples",
    "explain_runs": "export", "run_reasons": "export",
    "FLAGS": "flags", "StructuralFlags": "flags", "structural_flags": "flags",
    "DatasetWeights": "groups", "dataset_weights": "groups", "group_curves": "groups", "group_metrics": "groups",
    "reliability_curves": "groups",
    "GroupPosition": "reasons", "TrajectoryExplanation": "reasons", "compare_with": "reasons",
    "describe_position": "reasons", "explain_trajectory": "reasons", "format_confidence": "reasons",
    "group_position": "reasons", "percentile_of": "reasons",
    "ShapeCurve": "shapes", "ShapeCurves": "shapes", "shape_curves": "shapes",
    "measure_of": "measures",
    "Signal": "signals", "signal_groups": "signals",
    "StepTokens": "steps", "confidence_after_steps": "steps", "step_timeline": "steps", "token_steps": "steps",
}

__all__ = [
    "TrajectoryExplanation", "explain_trajectory", "GroupPosition", "group_position", "percentile_of",
    "describe_position", "ExampleSet", "confidence_examples", "reliability_curves", "group_metrics", "group_curves",
    "DatasetWeights", "dataset_weights", "step_timeline", "StepTokens", "token_steps", "compare_with",
    "format_confidence", "Signal", "signal_groups", "FLAGS", "StructuralFlags", "structural_flags",
    "Mistakes", "worst_mistakes", "confidence_after_steps", "explain_runs", "run_reasons", "measure_of",
    "BinnedRuns", "binned_runs", "reliability_members", "ShapeCurve", "ShapeCurves", "shape_curves",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
