"""Scoring trace sets with a fitted model: the table ``htc score`` writes, one chunk at a time.

``score_frame(model, ts)`` is a library function (the CLI and the scale-out engines of ``htc_core.engines`` both
call it): id, calibrated confidence and the raw baseline confidences of each trajectory.
"""

from __future__ import annotations


def score_frame(model, ts, *, verbalized_column: bool | None = None, explain: bool = False):
    """id, calibrated confidence and the raw baseline confidences of ``ts`` (one chunk). ``verbalized_column``:
    None writes the Verbalized column when some trajectory has it, True/False always/never. A shipped General
    Agent Calibrator scores each run with the sub-model of its kind (column gac_model). ``explain`` adds the
    structural flags, the three strongest reasons (HTC models) and the features."""
    import numpy as np
    import pandas as pd

    from .calibration.baselines import BASELINE_COLUMNS, baseline_confidences
    from .calibration.general import GeneralCalibrator
    from .features import extract

    gac = isinstance(model, GeneralCalibrator)
    # ValueError: scores that would not be finite, never written as NaN
    if gac:
        profile, top_k = "paper", 5
        df = pd.DataFrame({"id": ts.ids, "confidence": model.predict_proba_traces(ts)[:, 1], "gac_model": model.kinds(ts)})
    else:
        # the features of the model's own token-confidence profile and top-k (recorded in the model file)
        profile, top_k = model.profile_, model.top_k_
        fm = extract(ts, profile=profile, top_k=top_k)
        df = pd.DataFrame({"id": ts.ids, "confidence": model.predict_proba(fm)[:, 1]})
    base = baseline_confidences(ts, profile=profile, top_k=top_k)
    if verbalized_column and "Verbalized" not in base:
        base["Verbalized"] = np.full(ts.n_trajectories, np.nan)
    for col in base:
        if col != "Verbalized" or verbalized_column is not False:
            df[BASELINE_COLUMNS[col]] = base[col].to_numpy()
    if explain:
        from .explain import explain_runs

        fm = extract(ts, profile=profile, top_k=top_k)
        from .calibration.calibrators import HTCCalibrator

        reasons_from = model if isinstance(model, HTCCalibrator) else None   # linear reasons only (not GAC/GAM)
        df = pd.concat([df, explain_runs(ts, fm, reasons_from)], axis=1)
    return df


__all__ = ["score_frame"]
