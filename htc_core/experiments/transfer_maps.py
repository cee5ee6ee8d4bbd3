"""Out-of-family Platt maps: a score's map calibrated for a family it has not seen.

:func:`out_of_family_platt` composes a score's Platt map with a second Platt step fitted on out-of-family
scores (the ``signal-oof`` transfer method); :func:`fit_nearest_family` fits the ``nearest-family`` set-level
entry (:mod:`htc_core.calibration.signal_choice`) with one such map per signal.
"""

from __future__ import annotations

import numpy as np

from ..calibration.transfer_methods import logit, sigmoid, weighted_platt
from .transfer_choice import SET_MIN_RUNS

__all__ = ["out_of_family_platt", "fit_nearest_family"]


def out_of_family_platt(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of a Platt map on the score ``x`` that is calibrated for a family it has not seen.

    The score's Platt map is fitted on all rows, and again once without each family to score that family
    (out-of-family scores); a second Platt step fitted on the out-of-family scores of all rows says how far the
    map carries to a new family, and the two compose into one map: ``sigmoid(slope * x + intercept)``. Where
    every family follows one map, the second step is the identity and the result is the plain Platt map; where
    the map moves from family to family, the second step flattens it (``slope`` toward 0, confidences toward the
    base rate), as ``stack-oof`` weighs the GAC as it transfers rather than as it fits.

    Parameters
    ----------
    x : ndarray of shape (n,)
        A score, larger = more confident (e.g. the logit of a training-free signal; no NaN).
    y : ndarray of shape (n,)
        The 0/1 outcomes.
    groups : ndarray of shape (n,)
        Each row's family; with fewer than 2 families the plain Platt map is returned.

    Returns
    -------
    slope : float
        The composed map's slope.
    intercept : float
        Its intercept.

    Examples
    --------
    Three families that share one map: the plain Platt map, nearly unchanged. Three where the score tells the
    outcome in one family only: a much flatter map than the pooled one.

    >>> import numpy as np
    >>> from htc_core.calibration.transfer_methods import weighted_platt
    >>> from htc_core.experiments.transfer_maps import out_of_family_platt
    >>> rng = np.random.default_rng(0)
    >>> x, groups = rng.normal(size=3000), np.repeat(["a", "b", "c"], 1000)
    >>> y = (rng.random(3000) < 1 / (1 + np.exp(-(2 * x - 0.5)))).astype(float)
    >>> [round(v, 2) for v in weighted_platt(x, y)], [round(v, 2) for v in out_of_family_platt(x, y, groups)]
    ([1.92, -0.45], [1.92, -0.45])
    >>> y2 = np.where(groups == "a", y, (rng.random(3000) < 0.5).astype(float))
    >>> [round(v, 2) for v in weighted_platt(x, y2)], [round(v, 2) for v in out_of_family_platt(x, y2, groups)]
    ([0.45, -0.13], [0.07, -0.14])
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    groups = np.asarray(groups, dtype=object)
    a1, b1 = weighted_platt(x, y)
    fams = sorted(set(groups))
    if len(fams) < 2:
        return a1, b1
    oof = np.empty(len(y))
    for f in fams:
        m = groups == f
        a, b = weighted_platt(x[~m], y[~m])
        oof[m] = a * x[m] + b
    a2, b2 = weighted_platt(oof, y)
    return a2 * a1, a2 * b1 + b2


def fit_nearest_family(S: np.ndarray, y: np.ndarray, groups: np.ndarray, *, min_runs: int = SET_MIN_RUNS,
                       max_distance: float | None = None) -> dict:
    """The ``nearest-family`` set-level entry fitted on training runs (:mod:`htc_core.calibration.signal_choice`).

    Per training family its signals' profile and the signal that ranks it best; per signal its out-of-family
    Platt map (:func:`out_of_family_platt` on the runs where it is defined, as ``signal-oof`` fits its map), kept
    increasing (:func:`~htc_core.calibration.signal_choice.increasing_map`).

    Parameters
    ----------
    S : ndarray of shape (n, 3)
        The training runs' signal scores (:func:`~htc_core.calibration.transfer_methods.signal_matrix`, NaN kept).
    y : ndarray of shape (n,)
        Their 0/1 outcomes.
    groups : ndarray of shape (n,)
        Each run's family.
    min_runs : int, default 50
        The fewest runs a scored set must hold to be scored as a set.
    max_distance : float or None, default None
        Keep the minimum token probability where no training family lies within this distance of the set.

    Returns
    -------
    dict
        The JSON entry (:func:`~htc_core.calibration.signal_choice.build_entry`).

    Examples
    --------
    Two families: in "a" the first signal ranks, in "b" the third, and "b"'s scores sit 5 sd higher.

    >>> import numpy as np
    >>> from htc_core.calibration.signal_choice import choose_signal
    >>> from htc_core.experiments.transfer_maps import fit_nearest_family
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(800) < 0.5).astype(float)
    >>> S = rng.standard_normal((800, 3))
    >>> S[:400, 0] += 3 * y[:400]; S[400:, 2] += 3 * y[400:]; S[400:] += 5
    >>> entry = fit_nearest_family(S, y, np.repeat(["a", "b"], 400))
    >>> [f["best"] for f in entry["families"]], choose_signal(entry, S[400:500]).signal
    (['seq_prob', 'neg_entropy'], 'neg_entropy')
    """
    from ..calibration.signal_choice import NAMES, build_entry, increasing_map

    S = np.asarray(S, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    groups = np.asarray(groups, dtype=object)
    maps = {}
    for j, name in enumerate(NAMES):
        ok = np.isfinite(S[:, j])
        maps[name] = increasing_map(out_of_family_platt(S[ok, j], y[ok], groups[ok]), S[ok, j], y[ok]) \
            if ok.sum() > 1 and len(set(y[ok].tolist())) == 2 else (1e-3, float(logit(np.mean(y))))
    return build_entry(S, y, groups, maps, min_runs=min_runs, max_distance=max_distance)


def platt_signal(a_tr: np.ndarray, y_tr: np.ndarray, a_te: np.ndarray) -> np.ndarray:
    """A signal's score on the held-out rows, Platt-scaled on the training rows (NaN -> the training median)."""
    fill = float(np.nanmedian(a_tr)) if np.isfinite(a_tr).any() else 0.0
    a, b = weighted_platt(np.where(np.isfinite(a_tr), a_tr, fill), y_tr)
    return sigmoid(a * np.where(np.isfinite(a_te), a_te, fill) + b)
