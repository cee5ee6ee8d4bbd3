"""The expected-error points of a leave-one-family-out result, and the range checked on them.

One point per held-out family (:func:`expected_error_points`: its shift measures and the ECE a method reached
there) is what the expected-error range (:mod:`htc_core.calibration.expected_error`) is built from;
:func:`range_self_check` checks that range on the families it is built from, each left out in turn.
"""

from __future__ import annotations

import numpy as np

from .transfer_choice import TransferChoice

__all__ = ["expected_error_points", "range_self_check"]


def expected_error_points(choice: TransferChoice, method: str) -> list[dict]:
    """One point per held-out family: its shift measures and the ECE ``method`` reached there.

    The points the expected-error range (:mod:`htc_core.calibration.expected_error`) is built from.

    Parameters
    ----------
    choice : TransferChoice
        A leave-one-family-out result.
    method : str
        A method of ``choice.rows``.

    Returns
    -------
    list of dict
        Per family: family, n, ece, rate_gap, em_gap, max_shift, missing_topk (rounded to 4 decimals).

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.experiments.transfer_choice import TransferChoice
    >>> from htc_core.experiments.transfer_range import expected_error_points
    >>> families = ["facts | m", "lists | m", "units | m"]
    >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
    ...                      "method": ["gac", "signal"] * 3, "n": 40,
    ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
    ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
    ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
    ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
    ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
    >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
    ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
    ...                        "train_rate": [0.55, 0.5, 0.45]})
    >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
    ...                             index=families)
    >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
    >>> expected_error_points(choice, "signal")[1]
    {'family': 'lists | m', 'n': 40, 'ece': 0.12, 'rate_gap': 0.03, 'em_gap': 0.05, 'max_shift': 3.0,
     'missing_topk': 0.0}
    """
    rows = choice.rows[choice.rows.method == method].set_index("family")
    return [{"family": r["family"], "n": int(r["n"]), "ece": round(float(rows.ece[r["family"]]), 4),
             "rate_gap": round(float(rows.rate_gap[r["family"]]), 4), "em_gap": round(float(rows.em_gap[r["family"]]), 4),
             **{k: round(float(r[k]), 4) for k in ("max_shift", "missing_topk")}}
            for r in choice.shifts.to_dict("records")]


def range_self_check(choice: TransferChoice, points: list[dict], method: str) -> list[dict]:
    """The expected-error range checked on the families it is built from, each left out in turn.

    For each held-out family, the range :func:`~htc_core.calibration.expected_error.expected_ece` gives it from
    the *other* families' points (its own shift measures, its ``method`` confidences for the noise; 0.5 where
    the result holds none), and whether its measured ECE lies inside.

    Parameters
    ----------
    choice : TransferChoice
        A leave-one-family-out result.
    points : list of dict
        :func:`expected_error_points` of ``choice`` and ``method``.
    method : str
        The method whose ECE the range predicts.

    Returns
    -------
    list of dict
        Per family: family, n, ece, low, high (rounded to 4 decimals), inside.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.experiments.transfer_choice import TransferChoice
    >>> from htc_core.experiments.transfer_range import expected_error_points, range_self_check
    >>> families = ["facts | m", "lists | m", "units | m"]
    >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
    ...                      "method": ["gac", "signal"] * 3, "n": 40,
    ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
    ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
    ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
    ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
    ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
    >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
    ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
    ...                        "train_rate": [0.55, 0.5, 0.45]})
    >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
    ...                             index=families)
    >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
    >>> checks = range_self_check(choice, expected_error_points(choice, "signal"), "signal")
    >>> [(c["family"], c["ece"], c["low"], c["high"], c["inside"]) for c in checks]
    [('facts | m', 0.08, 0.0, 0.2546, True), ('lists | m', 0.12, 0.0, 0.2246, True),
     ('units | m', 0.09, 0.0, 0.2546, True)]
    """
    from ..calibration.expected_error import expected_ece, holds

    conf = choice.predictions.get(method)
    out = []
    for i, p in enumerate(points):
        rows = np.flatnonzero(choice.groups == p["family"]) if choice.groups is not None else np.array([], int)
        c = conf[rows] if conf is not None and len(rows) else np.full(int(p["n"]), 0.5)
        e = expected_ece(points[:i] + points[i + 1:], p, c)
        out.append({"family": p["family"], "n": int(p["n"]), "ece": p["ece"], "low": round(e.low, 4),
                    "high": round(e.high, 4), "inside": holds(e, p["ece"], tol=5e-5)})   # the points' ECE: 4 decimals
    return out
