"""Experiments built on the calibration core: the paper's and ours, each returning a result object.

    from htc_core.experiments import transfer, gac_leave_one_out, ablation, learning_curve

Modules:

- ``grouping`` (with ``group_keys``): runs split into groups by a metadata column, DirectTrain, the guarded
  fit on some groups only; what the cross-group experiments share.
- ``transfer``: the transfer matrix across groups; ``gac``: the General Agent Calibrator leave-one-group-out;
  ``transfer_lofo``: the GAC's transfer method chosen leave-one-family-out (used by ``htc_dev.train_gac``), with
  ``transfer_families`` (the families, the runs prepared once), ``transfer_candidates`` (the candidate methods
  on one held-out family), ``transfer_maps`` (out-of-family Platt maps), ``transfer_choice`` (the result and
  its choice rule), ``transfer_entry`` (the GAC file's transfer entry) and ``transfer_range`` (the
  expected-error points).
- ``ablation``: feature-family ablation and selection frequency.
- ``learning_curve`` with ``curve_methods`` (the registry of curve entries), the learning baselines
  ``learning`` (MLP, XGBoost, GP) and ``sequence_models`` (LSTM, Transformer; extra ``[learning]``) and
  ``gac_entries`` (the GAC as a curve entry).
- ``adapt_curve``: zero-shot GAC, from-scratch HTC and the adapted GAC by label budget.

This package imports :mod:`htc_core.calibration` and the rest of the core; the core never imports it
(tests/test_architecture.py). Names resolve on first use (PEP 562).
"""

from __future__ import annotations

from htc_core.lazy import lazy_exports

#: public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    "transfer": "transfer",
    "TransferResult": "transfer",
    "gac_leave_one_out": "gac",
    "GACResult": "gac",
    "ablation": "ablation",
    "AblationResult": "ablation",
    "selection_frequency": "ablation",
    "SelectionFrequency": "ablation",
    "learning_curve": "learning_curve",
    "LearningCurveResult": "learning_curve",
    "CurveMethod": "learning_curve",
    "register_curve_method": "learning_curve",
    "adapt_traces": "adapt_curve",
    "adaptation_curve": "adapt_curve",
}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
