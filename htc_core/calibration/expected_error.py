"""The expected calibration error of a zero-shot score, from the leave-one-family-out errors at a similar shift.

A GAC's card holds, for every family it was evaluated on leave-one-family-out
(:mod:`htc_core.experiments.transfer_lofo`), the shift of that family from the rest and the ECE the shipped
method reached there (``card["expected_error"]["points"]``). For a new run set the same shift is measured
without labels (:func:`shift_measures`):

- ``max_shift``: the largest standardized mean shift of a used feature (:mod:`htc_core.calibration.shift`);
- ``rate_gap``: ``|mean zero-shot confidence - the training base rate|``: a run set whose predicted success rate
  is far from the training one has a shifted base rate (the check fires on it, not only on feature means);
- ``em_gap``: ``|EM estimate of the base rate - the training base rate|`` (Saerens et al. 2002) (distance only);
- ``missing_topk``: the share of runs without top-k alternatives minus that share in training.

:func:`expected_ece` takes the ``k`` families nearest in these measures (each scaled by its flag level) and
returns the range of their ECE, widened by the ECE a perfectly calibrated confidence shows on this many runs
(sampling noise, :func:`ece_noise`): up by how far that noise exceeds its mean 1 time in 100 (its 99% quantile
minus its mean: the nearest families' ECEs hold a typical noise already), and down to its 1% quantile (a GAC
whose confidences sit near the set's success rate is as well calibrated as noise allows, whatever its
neighbours measured). Beyond every measured shift the upper end is the worst ECE measured, widened the same
way, and the message says the set is beyond what was measured. The verdict is "outside the training data" when any
measure passes its flag level (:data:`FLAGS`). The EM estimate is a distance measure only, not a flag: with a
confidence that ranks weakly (AUROC ~0.75) EM drifts far from the true base rate on the project's own held-out
families (gaps of 0.2-0.56 where the true base rates differ by under 0.2), so it would flag every set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["FLAGS", "ExpectedError", "ece_floor", "ece_noise", "expected_ece", "labels_to_know", "zero_shot_check"]

# measure -> the level at which it flags the set as outside the training data
FLAGS = {"max_shift": 2.0, "rate_gap": 0.10, "missing_topk": 0.5}
# measure -> its distance scale for "a similar shift" (the flag level where there is one)
SCALES = {**FLAGS, "em_gap": 0.3}
MEASURES = tuple(SCALES)


def ece_noise(p: np.ndarray, *, n_sims: int = 200, seed: int = 0) -> tuple[float, float]:
    """The ECE that perfectly calibrated confidences show on this many runs: its mean and 1% quantile.

    Labels are drawn as Bernoulli(p) ``n_sims`` times. The mean is the part of a measured ECE on ``len(p)``
    runs that is sampling noise; the 1% quantile the value below which a measured ECE falls only 1 time in
    100 even with no miscalibration at all.

    Parameters
    ----------
    p : array-like of shape (n,)
        The confidences.
    n_sims : int, default=200
        Simulated label draws.
    seed : int, default=0
        Seed of the draws.

    Returns
    -------
    mean : float
        Mean ECE over the draws (NaN for no runs).
    q01 : float
        Its 1% quantile.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.expected_error import ece_noise
    >>> mean, q01 = ece_noise(np.random.default_rng(0).uniform(0.2, 0.9, 100), n_sims=50)
    >>> round(mean, 3), round(q01, 3)
    (0.103, 0.055)
    """
    vals = noise_draws(p, n_sims=n_sims, seed=seed)
    if vals.size == 0:
        return float("nan"), float("nan")
    return float(vals.mean()), float(np.quantile(vals, 0.01))


def noise_draws(p: np.ndarray, *, n_sims: int = 200, seed: int = 0) -> np.ndarray:
    """The ECE of the confidences ``p`` against ``n_sims`` label draws Bernoulli(p) (empty for no runs): the
    draws :func:`ece_noise` and :func:`expected_ece` summarize."""
    from .metrics import fast_ece

    p = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    if p.size == 0:
        return np.empty(0)
    rng = np.random.default_rng(seed)
    return np.array([float(fast_ece((rng.random(p.size) < p).astype(float), p[None, :])[0]) for _ in range(n_sims)])


def ece_floor(p: np.ndarray, *, n_sims: int = 200, seed: int = 0) -> float:
    """Mean ECE of *perfectly calibrated* confidences: the part of a measured ECE that is sampling noise.

    Parameters
    ----------
    p : array-like of shape (n,)
        The confidences (labels drawn as Bernoulli(p)).
    n_sims : int, default=200
        Simulated label draws.
    seed : int, default=0
        Seed of the draws.

    Returns
    -------
    float
        The mean of :func:`ece_noise`.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.expected_error import ece_floor
    >>> round(ece_floor(np.full(400, 0.7), n_sims=50), 3) < round(ece_floor(np.full(40, 0.7), n_sims=50), 3)
    True
    """
    return ece_noise(p, n_sims=n_sims, seed=seed)[0]


def labels_to_know(half_width: float) -> int:
    """Labeled runs whose success rate has a standard error under ``half_width`` (at most 0.5/sqrt(n)).

    Parameters
    ----------
    half_width : float
        The precision wanted (NaN or infinite: no range at all).

    Returns
    -------
    int
        Between 20 and 400.

    Examples
    --------
    >>> from htc_core.calibration.expected_error import labels_to_know
    >>> labels_to_know(0.05), labels_to_know(0.2), labels_to_know(float("inf"))
    (100, 20, 400)
    """
    if not math.isfinite(half_width):
        return 400                      # no range (no runs scored): the most the rule ever asks for
    return int(min(400, max(20, math.ceil(0.25 / max(half_width, 1e-3) ** 2))))


@dataclass
class ExpectedError:
    """The expected ECE range of a run set scored zero-shot, and the verdict (made by :func:`expected_ece`).

    Parameters
    ----------
    low, high : float
        The expected ECE range.
    verdict : str
        "within the training data" or "outside the training data".
    flagged : list of str, default=[]
        The measures past their flag level (``FLAGS``).
    measures : dict, default={}
        The run set's shift measures.
    nearest : list of str, default=[]
        The families the range comes from.
    extrapolated : bool, default=False
        True when the set lies beyond every measured shift (the upper end is then the worst ECE measured).
    floor : float, default=0.0
        The ECE a perfectly calibrated confidence shows on this many runs (:func:`ece_noise`).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.expected_error import expected_ece
    >>> points = [{"family": "units", "max_shift": 0.5, "rate_gap": 0.02, "em_gap": 0.1, "ece": 0.05},
    ...           {"family": "facts", "max_shift": 1.5, "rate_gap": 0.08, "em_gap": 0.2, "ece": 0.12},
    ...           {"family": "lists", "max_shift": 3.0, "rate_gap": 0.2, "em_gap": 0.3, "ece": 0.25}]
    >>> confidences = np.random.default_rng(0).uniform(0.2, 0.9, 100)
    >>> expected = expected_ece(points, {"max_shift": 1.0, "rate_gap": 0.05, "em_gap": 0.1}, confidences, k=2)
    >>> expected.verdict, expected.nearest, round(expected.low, 3), round(expected.high, 3)
    ('within the training data', ['units', 'facts'], 0.045, 0.204)
    """

    low: float
    high: float
    verdict: str                        # "within the training data" / "outside the training data"
    flagged: list = field(default_factory=list)        # the measures past their flag level
    measures: dict = field(default_factory=dict)
    nearest: list = field(default_factory=list)        # the families the range comes from
    extrapolated: bool = False
    floor: float = 0.0

    @property
    def half_width(self) -> float:
        """Half the range's width (at least 0.025): the precision labels must beat to say more than it.

        Returns
        -------
        float
            ``max((high - low) / 2, 0.025)``.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.expected_error import expected_ece
        >>> points = [{"family": "units", "max_shift": 0.5, "rate_gap": 0.02, "em_gap": 0.1, "ece": 0.05},
        ...           {"family": "facts", "max_shift": 1.5, "rate_gap": 0.08, "em_gap": 0.2, "ece": 0.12},
        ...           {"family": "lists", "max_shift": 3.0, "rate_gap": 0.2, "em_gap": 0.3, "ece": 0.25}]
        >>> confidences = np.random.default_rng(0).uniform(0.2, 0.9, 100)
        >>> expected = expected_ece(points, {"max_shift": 1.0, "rate_gap": 0.05, "em_gap": 0.1}, confidences, k=2)
        >>> round(expected.half_width, 3)
        0.08
        """
        return max((self.high - self.low) / 2, 0.025)

    @property
    def n_labels(self) -> int:
        """Labels that measure the success rate to :attr:`half_width`.

        A wide range is improved on by a few labels, a narrow one only by many.

        Returns
        -------
        int
            :func:`labels_to_know` of the half width.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.expected_error import expected_ece
        >>> points = [{"family": "units", "max_shift": 0.5, "rate_gap": 0.02, "em_gap": 0.1, "ece": 0.05},
        ...           {"family": "facts", "max_shift": 1.5, "rate_gap": 0.08, "em_gap": 0.2, "ece": 0.12},
        ...           {"family": "lists", "max_shift": 3.0, "rate_gap": 0.2, "em_gap": 0.3, "ece": 0.25}]
        >>> confidences = np.random.default_rng(0).uniform(0.2, 0.9, 100)
        >>> expected = expected_ece(points, {"max_shift": 1.0, "rate_gap": 0.05, "em_gap": 0.1}, confidences, k=2)
        >>> expected.n_labels
        40
        """
        return labels_to_know(self.half_width)

    def message(self) -> str:
        """One line for a user: the verdict, the range, where it comes from and how many labels would beat it.

        Returns
        -------
        str
            The message.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.expected_error import expected_ece
        >>> points = [{"family": "units", "max_shift": 0.5, "rate_gap": 0.02, "em_gap": 0.1, "ece": 0.05},
        ...           {"family": "facts", "max_shift": 1.5, "rate_gap": 0.08, "em_gap": 0.2, "ece": 0.12},
        ...           {"family": "lists", "max_shift": 3.0, "rate_gap": 0.2, "em_gap": 0.3, "ece": 0.25}]
        >>> confidences = np.random.default_rng(0).uniform(0.2, 0.9, 100)
        >>> expected = expected_ece(points, {"max_shift": 1.0, "rate_gap": 0.05, "em_gap": 0.1}, confidences, k=2)
        >>> print(expected.message())
        within the training data; expected ECE 0.05-0.20, from the leave-one-family-out errors of units, facts: label
        about 40 runs to measure it to +/-0.08, better than this range
        """
        why = "; ".join(f"{m} {self.measures[m]:.2f} >= {FLAGS[m]:g}" for m in self.flagged)
        head = f"{self.verdict}" + (f" ({why})" if why else "")
        tail = (" (beyond the shifts measured leave-one-family-out: the upper end is the worst measured)"
                if self.extrapolated else "")
        return (f"{head}; expected ECE {self.low:.2f}-{self.high:.2f}{tail}, from the leave-one-family-out "
                f"errors of {', '.join(self.nearest)}: label about {self.n_labels} runs to measure it to "
                f"+/-{self.half_width:.2f}, better than this range")

    def to_dict(self) -> dict:
        """The expected error as a JSON object (rounded to 4 digits).

        Returns
        -------
        dict
            low, high, verdict, flagged, measures, nearest, extrapolated, ece_floor, labels_to_know, message.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.expected_error import expected_ece
        >>> points = [{"family": "units", "max_shift": 0.5, "rate_gap": 0.02, "em_gap": 0.1, "ece": 0.05},
        ...           {"family": "facts", "max_shift": 1.5, "rate_gap": 0.08, "em_gap": 0.2, "ece": 0.12},
        ...           {"family": "lists", "max_shift": 3.0, "rate_gap": 0.2, "em_gap": 0.3, "ece": 0.25}]
        >>> confidences = np.random.default_rng(0).uniform(0.2, 0.9, 100)
        >>> expected = expected_ece(points, {"max_shift": 1.0, "rate_gap": 0.05, "em_gap": 0.1}, confidences, k=2)
        >>> d = expected.to_dict()
        >>> d["low"], d["high"], d["labels_to_know"]
        (0.0452, 0.2042, 40)
        """
        return {"low": round(self.low, 4), "high": round(self.high, 4), "verdict": self.verdict,
                "flagged": list(self.flagged), "measures": {k: round(float(v), 4) for k, v in self.measures.items()},
                "nearest": list(self.nearest), "extrapolated": self.extrapolated, "ece_floor": round(self.floor, 4),
                "labels_to_know": self.n_labels, "message": self.message()}


def _scaled(m: dict) -> np.ndarray:
    return np.array([abs(float(m.get(k, 0.0) or 0.0)) / SCALES[k] for k in MEASURES])


def expected_ece(points: list[dict], measures: dict, confidences: np.ndarray, *, k: int = 3) -> ExpectedError:
    """The expected ECE range of a run set from the leave-one-family-out errors at a similar shift.

    The ``k`` points nearest in the shift measures (each scaled by its flag level) give the range of their
    ECE, widened by the sampling noise of ECE on this many runs (module docstring).

    Parameters
    ----------
    points : list of dict
        The leave-one-family-out points: the measures, ``family`` and ``ece``; optionally ``ece_high``, the
        highest ECE that family showed over prefix cuts, which then bounds the range from above (``ece_low``,
        the lowest, is kept in the cards but no longer bounds it from below). No points: the range is the
        noise floor to 1.
    measures : dict
        The run set's measures (``max_shift``, ``rate_gap``, ``em_gap``, ``missing_topk``; absent ones 0).
    confidences : array-like of shape (n,)
        The zero-shot confidences of the run set.
    k : int, default=3
        Nearest points used.

    Returns
    -------
    ExpectedError
        The range, the verdict and the measures behind it.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.expected_error import expected_ece
    >>> points = [{"family": "units", "max_shift": 0.5, "rate_gap": 0.02, "em_gap": 0.1, "ece": 0.05},
    ...           {"family": "facts", "max_shift": 1.5, "rate_gap": 0.08, "em_gap": 0.2, "ece": 0.12},
    ...           {"family": "lists", "max_shift": 3.0, "rate_gap": 0.2, "em_gap": 0.3, "ece": 0.25}]
    >>> confidences = np.random.default_rng(0).uniform(0.2, 0.9, 100)
    >>> expected = expected_ece(points, {"max_shift": 1.0, "rate_gap": 0.05, "em_gap": 0.1}, confidences, k=2)
    >>> expected.verdict, expected.nearest
    ('within the training data', ['units', 'facts'])
    >>> far = expected_ece(points, {"max_shift": 5.0, "rate_gap": 0.3}, confidences, k=2)
    >>> far.verdict, far.flagged, far.extrapolated
    ('outside the training data', ['max_shift', 'rate_gap'], True)
    """
    flagged = [m for m in FLAGS if abs(float(measures.get(m, 0.0) or 0.0)) >= FLAGS[m]]
    verdict = "outside the training data" if flagged else "within the training data"
    draws = noise_draws(confidences)
    floor, q01, q99 = (float(draws.mean()), *np.quantile(draws, [0.01, 0.99]).tolist()) if draws.size else (
        float("nan"),) * 3
    if not points:
        return ExpectedError(floor, 1.0, verdict, flagged, dict(measures), [], True, floor)
    P = np.array([_scaled(p) for p in points])
    x = _scaled(measures)
    dist = np.sqrt(((P - x) ** 2).sum(axis=1))
    order = np.argsort(dist)[: max(1, min(k, len(points)))]
    hi = np.array([float(p.get("ece_high", p["ece"])) for p in points])
    extrapolated = bool(np.any(x > P.max(axis=0) + 1e-9) and dist[order[0]] > 1.0)
    # the range is widened by the sampling noise of ECE on this many runs both ways: up by how far it exceeds its
    # mean 1 time in 100 (the neighbours' ECEs hold a typical noise already), down to its 1% quantile (a calibrated
    # confidence's ECE is below that only 1 time in 100; the neighbours' ECEs do not bound a better-calibrated
    # set from below: measured with the flattened signal-oof confidences, whose ECE reaches that quantile)
    low = q01
    high = float(hi.max() if extrapolated else hi[order].max()) + max(q99 - floor, 0.0)
    return ExpectedError(min(low, high), min(1.0, high), verdict, flagged, dict(measures),
                         [str(points[i].get("family", i)) for i in order], extrapolated, floor)


def zero_shot_check(gac, ts, *, set_level: bool = False) -> dict:
    """A GAC scored zero-shot on labeled runs, against what it says beforehand without labels.

    Labels only score: nothing is fitted.

    Parameters
    ----------
    gac : GeneralCalibrator
        The GAC (e.g. ``htc.load_model("gac")``).
    ts : TraceSet
        Labeled runs.
    set_level : bool, default False
        False: the per-run confidences even where the GAC would score ``ts`` as a set
        (:meth:`~htc_core.calibration.general.GeneralCalibrator.predict_proba_traces`).

    Returns
    -------
    dict
        n, success_rate; the GAC's ece, brier and auroc; ``signals`` (each training-free signal's AUROC,
        :mod:`.transfer_methods`), best_signal_auroc and gac_ranks_at_least_as_well; ``expected`` (the verdict
        and expected ECE range computed without labels, :meth:`ExpectedError.to_dict`) and ``inside``
        (whether the measured ECE lies in that range).

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.expected_error import zero_shot_check
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> check = zero_shot_check(htc.load_model("gac"), ts)
    >>> round(check["ece"], 3), check["expected"]["verdict"], check["inside"]      # each run scored on its own
    (0.249, 'within the training data', True)
    """
    from .metrics import auroc, brier_score, expected_calibration_error
    from .shift import shift_check
    from .transfer_methods import SIGNALS, training_free_signals

    y = np.asarray(ts.labels, dtype=np.float64)
    p, per_run = gac.confidences_traces(ts, set_level=set_level)
    expected = gac.assess(shift_check(gac, ts, name=gac.name), gac.kinds(ts) == "with_alternatives", p, per_run)
    def rank(yy, v):   # AUROC of any score: its ranks scaled into [0, 1] (ties kept) are a valid "probability"
        from scipy.stats import rankdata

        return float(auroc(yy, rankdata(v) / len(v))) if len(set(yy)) == 2 else float("nan")

    sig, aur = training_free_signals(ts), {}
    for s in SIGNALS:
        v = sig[s].to_numpy()
        ok = np.isfinite(v)
        aur[s] = rank(y[ok], v[ok]) if ok.sum() > 1 else float("nan")
    m = {"ece": float(expected_calibration_error(y, p)), "brier": float(brier_score(y, p)), "auroc": rank(y, p)}
    best = max((v for v in aur.values() if v == v), default=float("nan"))
    return {"n": int(len(y)), "success_rate": float(y.mean()), **m, "signals": aur, "best_signal_auroc": best,
            "gac_ranks_at_least_as_well": bool(m["auroc"] >= best - 1e-9),
            "expected": expected.to_dict(), "inside": holds(expected, m["ece"])}


def holds(expected, ece: float, *, tol: float = 1e-9) -> bool:
    """Whether the range of ``expected`` (an :class:`ExpectedError`) holds ``ece``, to ``tol``: the lowest ECE a set
    can show is a value of the noise draws (its 1% quantile can be exactly that), computed in another order; an ECE
    rounded to 4 decimals (a card's points) needs ``tol=5e-5``."""
    return bool(expected.low - tol <= ece <= expected.high + tol)
