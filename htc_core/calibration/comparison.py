"""A/B comparison of two run sets (or of two calibrators on the same runs).

:func:`compare_run_sets` answers "is B better calibrated / more accurate than A, and what changed?":

- metrics of each side (ECE, Brier, AUROC, verdict accuracy, success rate) with percentile bootstrap
  intervals, and the difference B - A with its own interval (resampling both sides independently; when the
  two sides are the *same runs* scored by two calibrators, ``paired=True`` resamples the runs once, so the
  interval of the difference is the paired one);
- one reliability curve per side (same binning as the ECE: ``strategy`` "uniform" = equal width,
  "quantile" = equal mass);
- the shift of every one of the 48 features, ranked by the absolute standardized mean difference
  (B mean - A mean over the pooled standard deviation ``sqrt((var_A + var_B) / 2)``, Cohen's d);
- the runs whose verdict flipped: a verdict is "trust" when the confidence is at least ``threshold``
  (default 0.5), else "doubt". Runs are paired by their keys (see :func:`pairing_keys`: the same task, i.e. the
  same metadata task id or the same trajectory id once the model name is taken out of it, else the same
  question; for two calibrators, the same run); a key that occurs more than once on a side is ambiguous and
  left unpaired (counted in the notes).

Everything returns result objects (``to_frame()`` / ``to_dict()``); nothing here draws.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .bootstrap import check_resampling, percentile_intervals, renamed_seed
from .metrics import check_n_bins, check_strategy, ReliabilityCurve, bin_predictions, reliability_curve

__all__ = ["metric_intervals", "paired_metric_intervals", "MetricComparison", "FeatureShift", "RunSetComparison",
           "compare_metrics", "feature_shift", "pairing_keys", "flipped_verdicts", "compare_run_sets", "COMPARED_METRICS"]

# metric -> (label, True when higher is better)
COMPARED_METRICS = {"ece": ("ECE", False), "brier": ("Brier", False), "auroc": ("AUROC", True),
                    "accuracy": ("verdict accuracy", True), "success_rate": ("success rate", True)}


# --------------------------------------------------------------- metrics
def _row_auroc(Y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """AUROC of every row (Mann-Whitney with average ranks for ties); NaN where a row has one outcome."""
    from scipy.stats import rankdata

    R = rankdata(P, axis=1)
    n_pos = Y.sum(axis=1)
    n_neg = Y.shape[1] - n_pos
    with np.errstate(invalid="ignore", divide="ignore"):
        out = ((R * Y).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    out[(n_pos == 0) | (n_neg == 0)] = np.nan
    return out


def _row_ece(Y: np.ndarray, P: np.ndarray, n_bins: int, strategy: str) -> np.ndarray:
    if strategy == "uniform":     # vectorized: the same equal-width bins as metrics._bin
        m, n = P.shape
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        ids = np.searchsorted(edges[1:-1], P.ravel()).reshape(m, n) + (np.arange(m) * n_bins)[:, None]
        s = np.bincount(ids.ravel(), weights=(P - Y).ravel(), minlength=m * n_bins).reshape(m, n_bins)
        return np.abs(s).sum(axis=1) / n
    return np.array([bin_predictions(y, p, n_bins=n_bins, strategy=strategy).ece() for y, p in zip(Y, P)])


def _metric_rows(Y: np.ndarray, P: np.ndarray, threshold: float, n_bins: int, strategy: str) -> dict:
    """Every compared metric of every row of (Y, P) [m, n]."""
    return {"ece": _row_ece(Y, P, n_bins, strategy), "brier": ((P - Y) ** 2).mean(axis=1),
            "auroc": _row_auroc(Y, P), "accuracy": ((P >= threshold) == (Y == 1)).mean(axis=1),
            "success_rate": Y.mean(axis=1)}


def _clean(y, p, name: str) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"labels and confidences of side {name} differ in length: {y.size} vs {p.size}")
    ok = np.isfinite(y) & np.isfinite(p)
    y, p = y[ok], p[ok]
    if y.size == 0:
        raise ValueError(f"side {name} has no run with both a label and a confidence")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"labels of side {name} must be 0/1, got {sorted(set(y.tolist()))[:5]}")
    if ((p < 0) | (p > 1)).any():
        raise ValueError(f"confidences of side {name} must lie in [0, 1]")
    return y, p


def metric_intervals(y_true, y_prob, *, n_boot: int = 1000, level: float = 0.95, random_state=0, n_bins: int = 10,
                     strategy: str = "uniform", threshold: float = 0.5,
                     seed=None) -> dict[str, tuple[float, float, float]]:
    """Every compared metric of one set of runs with its percentile bootstrap interval.

    The metrics of ``COMPARED_METRICS`` (ECE, Brier, AUROC, verdict accuracy, success rate), all from the same
    ``n_boot`` resamples of the runs (:func:`~htc_core.calibration.bootstrap.percentile_intervals`). Runs
    without a label or a confidence are left out. Several calibrators on the same runs:
    :func:`paired_metric_intervals`.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 labels.
    y_prob : array-like of shape (n,)
        Confidences in [0, 1].
    n_boot : int, default=1000
        Bootstrap resamples.
    level : float, default=0.95
        Level of the intervals.
    random_state : int, Generator, RandomState or None, default=0
        Seed of the resamples.
    n_bins : int, default=10
        Bins of the ECE.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width or equal-mass bins.
    threshold : float, default=0.5
        The verdict "trust" is confidence >= threshold (verdict accuracy).
    seed : int, optional
        Deprecated old name of ``random_state``.

    Returns
    -------
    dict
        Metric -> ``(value, low, high)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)                       # calibrated confidences ...
    >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
    >>> from htc_core.calibration.comparison import metric_intervals
    >>> iv = metric_intervals(y, p, n_boot=200)
    >>> list(iv)
    ['ece', 'brier', 'auroc', 'accuracy', 'success_rate']
    >>> [round(v, 3) for v in iv["auroc"]]
    [0.861, 0.804, 0.917]
    """
    return paired_metric_intervals(y_true, {"y_prob": y_prob}, n_boot=n_boot, level=level, random_state=random_state,
                                   n_bins=n_bins, strategy=strategy, threshold=threshold, seed=seed)["y_prob"]


def paired_metric_intervals(y_true, y_probs: Mapping[str, object], *, n_boot: int = 1000, level: float = 0.95,
                            random_state=0, n_bins: int = 10, strategy: str = "uniform", threshold: float = 0.5,
                            seed=None) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Every compared metric of several calibrators scored on the same runs, all from one resample of the runs.

    The paired bootstrap of :func:`metric_intervals`: the ``n_boot`` resamples of the runs are drawn once and
    every calibrator's metrics are computed on each of them, so their intervals are comparable resample by
    resample. A run is left out when its label or any calibrator's confidence is missing. With one calibrator
    (or an int ``random_state``, the same for each call) the intervals equal :func:`metric_intervals`'s.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 labels.
    y_probs : mapping of str to array-like of shape (n,)
        Confidences in [0, 1] by calibrator name (at least one).
    n_boot : int, default=1000
        Bootstrap resamples.
    level : float, default=0.95
        Level of the intervals.
    random_state : int, Generator, RandomState or None, default=0
        Seed of the resamples.
    n_bins : int, default=10
        Bins of the ECE.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width or equal-mass bins.
    threshold : float, default=0.5
        The verdict "trust" is confidence >= threshold (verdict accuracy).
    seed : int, optional
        Deprecated old name of ``random_state``.

    Returns
    -------
    dict
        Calibrator -> metric -> ``(value, low, high)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)                       # calibrated confidences ...
    >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
    >>> from htc_core.calibration.comparison import metric_intervals, paired_metric_intervals
    >>> iv = paired_metric_intervals(y, {"raw": p, "sqrt": np.sqrt(p)}, n_boot=200)
    >>> [round(v, 3) for v in iv["raw"]["ece"]], [round(v, 3) for v in iv["sqrt"]["ece"]]
    ([0.064, 0.06, 0.13], [0.187, 0.136, 0.24])
    >>> iv["raw"] == metric_intervals(y, p, n_boot=200)
    True
    """
    n_bins = check_n_bins(n_bins)
    strategy = check_strategy(strategy)
    n_boot, level = check_resampling(n_boot, level)
    random_state = renamed_seed(seed, random_state)
    if not y_probs:
        raise ValueError("y_probs must hold at least one calibrator's confidences")
    y = np.asarray(y_true, dtype=np.float64).reshape(-1)
    probs = {name: np.asarray(p, dtype=np.float64).reshape(-1) for name, p in y_probs.items()}
    ok = np.isfinite(y)
    for name, p in probs.items():
        if p.shape != y.shape:
            raise ValueError(f"labels and confidences of side {name} differ in length: {y.size} vs {p.size}")
        ok &= np.isfinite(p)
    clean = {name: _clean(y[ok], p[ok], name) for name, p in probs.items()}
    yy = y[ok]
    k = len(COMPARED_METRICS)

    def stat(i):
        out = []
        for _, p in clean.values():
            rows = _metric_rows(yy[i], p[i], threshold, n_bins, strategy)
            out.extend(rows[m] for m in COMPARED_METRICS)
        return np.stack(out)

    iv = percentile_intervals(stat, (yy.size,), n_boot=n_boot, level=level, random_state=random_state)
    return {name: {m: iv.triple(j * k + c) for c, m in enumerate(COMPARED_METRICS)} for j, name in enumerate(clean)}


@dataclass
class MetricComparison:
    """Metrics of A and B with bootstrap intervals and the difference B - A (made by :func:`compare_metrics`).

    Parameters
    ----------
    frame : DataFrame
        One row per metric: metric, label, better (higher/lower), a, a_low, a_high, b, b_low, b_high, diff,
        diff_low, diff_high, n_a, n_b.
    n_boot : int
        Bootstrap resamples.
    level : float
        Level of the intervals.
    paired : bool
        Whether both sides are the same runs (resampled once).
    strategy : str
        The ECE's binning.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)                       # calibrated confidences ...
    >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
    >>> from htc_core.calibration.comparison import compare_metrics
    >>> cmp = compare_metrics(y, p, y, np.sqrt(p), paired=True, n_boot=200)
    >>> cmp.frame[["metric", "a", "b", "diff"]].round(3)
             metric      a      b   diff
    0           ece  0.064  0.187  0.124
    1         brier  0.154  0.198  0.044
    2         auroc  0.861  0.861  0.000
    3      accuracy  0.795  0.685 -0.110
    4  success_rate  0.505  0.505  0.000
    """

    frame: pd.DataFrame
    n_boot: int
    level: float
    paired: bool
    strategy: str

    def to_frame(self) -> pd.DataFrame:
        """The metric table (a copy of ``frame``).

        Returns
        -------
        DataFrame
            One row per metric.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=200)                       # calibrated confidences ...
        >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
        >>> from htc_core.calibration.comparison import compare_metrics
        >>> cmp = compare_metrics(y, p, y, np.sqrt(p), paired=True, n_boot=200)
        >>> cmp.to_frame()["metric"].tolist()
        ['ece', 'brier', 'auroc', 'accuracy', 'success_rate']
        """
        return self.frame.copy()

    def to_dict(self) -> dict:
        """The comparison as a JSON object.

        Returns
        -------
        dict
            ``n_boot``, ``level``, ``paired``, ``strategy`` and ``rows`` (one dict per metric).

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=200)                       # calibrated confidences ...
        >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
        >>> from htc_core.calibration.comparison import compare_metrics
        >>> cmp = compare_metrics(y, p, y, np.sqrt(p), paired=True, n_boot=200)
        >>> d = cmp.to_dict()
        >>> d["paired"], d["rows"][0]["metric"]
        (True, 'ece')
        """
        return {"n_boot": self.n_boot, "level": self.level, "paired": self.paired, "strategy": self.strategy,
                "rows": self.frame.to_dict(orient="records")}


def compare_metrics(y_a, p_a, y_b, p_b, *, paired: bool = False, threshold: float = 0.5, n_bins: int = 10,
                    strategy: str = "uniform", n_boot: int = 1000, level: float = 0.95,
                    random_state=0, seed=None) -> MetricComparison:
    """The metrics of A and B, each with its percentile bootstrap interval, and B - A with its interval.

    The metrics: ECE, Brier, AUROC, verdict accuracy (confidence >= ``threshold`` agrees with the outcome)
    and success rate.

    One resample serves every metric of the comparison (both sides and their differences:
    :func:`~htc_core.calibration.bootstrap.percentile_intervals`). ``paired=True``: A and B are the same runs
    (same order) scored twice; one resample of the runs serves both sides. Otherwise each side is resampled on
    its own. Runs without a label or a confidence are left out (each side on its own).

    Parameters
    ----------
    y_a, p_a : array-like of shape (n_a,)
        Side A's labels and confidences.
    y_b, p_b : array-like of shape (n_b,)
        Side B's.
    paired : bool, default=False
        A and B are the same runs in the same order (resampled once).
    threshold : float, default=0.5
        The verdict's confidence threshold, in (0, 1).
    n_bins : int, default=10
        Bins of the ECE.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width or equal-mass bins.
    n_boot : int, default=1000
        Bootstrap resamples.
    level : float, default=0.95
        Level of the intervals.
    random_state : int, Generator, RandomState or None, default=0
        Seed of the resamples.
    seed : int, optional
        Deprecated old name of ``random_state``.

    Returns
    -------
    MetricComparison
        One row per metric.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)                       # calibrated confidences ...
    >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
    >>> from htc_core.calibration.comparison import compare_metrics
    >>> cmp = compare_metrics(y, p, y, np.sqrt(p), paired=True, n_boot=200)
    >>> row = cmp.frame.set_index("metric").loc["ece"]
    >>> bool(row["diff_low"] > 0)                       # sqrt(p) is worse calibrated: the interval excludes 0
    True
    """
    n_bins = check_n_bins(n_bins)
    strategy = check_strategy(strategy)
    n_boot, level = check_resampling(n_boot, level)
    random_state = renamed_seed(seed, random_state)
    if not 0.0 < float(threshold) < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
    ya, pa, yb, pb = _sides(y_a, p_a, y_b, p_b, paired)
    names = list(COMPARED_METRICS)

    def stat(ia, ib=None):
        ib = ia if ib is None else ib
        a = _metric_rows(ya[ia], pa[ia], threshold, n_bins, strategy)
        b = _metric_rows(yb[ib], pb[ib], threshold, n_bins, strategy)
        return np.stack([a[m] for m in names] + [b[m] for m in names] + [b[m] - a[m] for m in names])

    sizes = (ya.size,) if paired else (ya.size, yb.size)
    iv = percentile_intervals(stat, sizes, n_boot=n_boot, level=level, random_state=random_state)
    k = len(names)
    rows = []
    for j, (m, (label, higher)) in enumerate(COMPARED_METRICS.items()):
        row = {"metric": m, "label": label, "better": "higher" if higher else "lower"}
        for side, off in (("a", 0), ("b", k)):
            row[side], row[f"{side}_low"], row[f"{side}_high"] = iv.triple(off + j)
        row["diff"] = row["b"] - row["a"]
        row["diff_low"], row["diff_high"] = iv.triple(2 * k + j)[1:]
        row["n_a"], row["n_b"] = int(ya.size), int(yb.size)
        rows.append(row)
    return MetricComparison(frame=pd.DataFrame(rows), n_boot=n_boot, level=level, paired=bool(paired),
                            strategy=strategy)


def _sides(y_a, p_a, y_b, p_b, paired: bool):
    """The two sides' clean (labels, confidences); paired: the runs finite on both sides, in order."""
    if not paired:
        return (*_clean(y_a, p_a, "A"), *_clean(y_b, p_b, "B"))
    ya, pa, yb, pb = (np.asarray(v, dtype=np.float64).reshape(-1) for v in (y_a, p_a, y_b, p_b))
    if not (ya.shape == pa.shape == yb.shape == pb.shape):
        raise ValueError("paired=True needs A and B of the same length (the same runs)")
    ok = np.isfinite(ya) & np.isfinite(pa) & np.isfinite(yb) & np.isfinite(pb)
    return (*_clean(ya[ok], pa[ok], "A"), *_clean(yb[ok], pb[ok], "B"))


# ------------------------------------------------------- feature shifts
@dataclass
class FeatureShift:
    """How far every feature moved between two run sets (made by :func:`feature_shift`).

    Parameters
    ----------
    frame : DataFrame
        Per feature: code, feature, name, mean_a, mean_b, sd_a, sd_b, smd (B - A over the pooled sd),
        abs_smd; sorted by abs_smd, largest first (features constant on both sides last, smd NaN).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.comparison import feature_shift
    >>> rng = np.random.default_rng(0)
    >>> shift = feature_shift(rng.normal(size=(50, 3)), rng.normal(size=(60, 3)) + [0, 1, 0], names=["f0", "f1", "f2"])
    >>> shift.frame["feature"].tolist()
    ['f1', 'f2', 'f0']
    """

    frame: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        """Every feature's shift (a copy of ``frame``).

        Returns
        -------
        DataFrame
            One row per feature, the largest shift first.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.comparison import feature_shift
        >>> rng = np.random.default_rng(0)
        >>> shift = feature_shift(rng.normal(size=(50, 3)), rng.normal(size=(60, 3)) + [0, 1, 0], names=["f0", "f1", "f2"])
        >>> shift.to_frame().columns.tolist()
        ['code', 'feature', 'name', 'mean_a', 'mean_b', 'sd_a', 'sd_b', 'smd', 'abs_smd']
        """
        return self.frame.copy()

    def to_dict(self) -> dict:
        """The shifts as a JSON object.

        Returns
        -------
        dict
            ``{"rows": [...]}``, one dict per feature.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.comparison import feature_shift
        >>> rng = np.random.default_rng(0)
        >>> shift = feature_shift(rng.normal(size=(50, 3)), rng.normal(size=(60, 3)) + [0, 1, 0], names=["f0", "f1", "f2"])
        >>> shift.to_dict()["rows"][0]["feature"]
        'f1'
        """
        return {"rows": self.frame.to_dict(orient="records")}

    def top(self, k: int = 10) -> pd.DataFrame:
        """The ``k`` features that moved most.

        Parameters
        ----------
        k : int, default=10
            How many.

        Returns
        -------
        DataFrame
            The first ``k`` rows of ``frame``.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.comparison import feature_shift
        >>> rng = np.random.default_rng(0)
        >>> shift = feature_shift(rng.normal(size=(50, 3)), rng.normal(size=(60, 3)) + [0, 1, 0], names=["f0", "f1", "f2"])
        >>> shift.top(1)[["feature", "smd"]].round(2)
          feature   smd
        0      f1  0.83
        """
        return self.frame.head(int(k)).copy()


def feature_shift(X_a, X_b, names: Sequence[str] | None = None) -> FeatureShift:
    """The standardized mean difference of every column between two feature matrices (NaNs ignored).

    The difference is B mean - A mean over the pooled standard deviation ``sqrt((var_A + var_B) / 2)``
    (Cohen's d).

    Parameters
    ----------
    X_a : array-like of shape (n_a, d)
        Side A's features (at least 2 runs).
    X_b : array-like of shape (n_b, d)
        Side B's, same columns.
    names : sequence of str, optional
        The columns' names (default the 48 HTC feature names).

    Returns
    -------
    FeatureShift
        Every column's shift, the largest first.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.comparison import feature_shift
    >>> rng = np.random.default_rng(0)
    >>> shift = feature_shift(rng.normal(size=(50, 3)), rng.normal(size=(60, 3)) + [0, 1, 0], names=["f0", "f1", "f2"])
    >>> shift.frame.loc[0, "feature"], round(float(shift.frame.loc[0, "smd"]), 2)
    ('f1', 0.83)
    """
    from ..features import FEATURE_NAMES, REGISTRY

    A = np.asarray(X_a, dtype=np.float64)
    B = np.asarray(X_b, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"X_a and X_b must be 2-D with the same columns, got shapes {A.shape} and {B.shape}")
    if len(A) < 2 or len(B) < 2:
        raise ValueError(f"each side needs at least 2 runs to measure a shift, got {len(A)} and {len(B)}")
    names = list(FEATURE_NAMES if names is None else names)
    if len(names) != A.shape[1]:
        raise ValueError(f"names must have one entry per column ({A.shape[1]}), got {len(names)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ma, mb = np.nanmean(A, axis=0), np.nanmean(B, axis=0)
        sa, sb = np.nanstd(A, axis=0, ddof=1), np.nanstd(B, axis=0, ddof=1)
    pooled = np.sqrt((sa ** 2 + sb ** 2) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        smd = np.where(pooled > 0, (mb - ma) / pooled, np.nan)
    frame = pd.DataFrame({
        "code": [REGISTRY[n].code if n in REGISTRY else "" for n in names], "feature": names,
        "name": [REGISTRY[n].display_name if n in REGISTRY else n for n in names],
        "mean_a": ma, "mean_b": mb, "sd_a": sa, "sd_b": sb, "smd": smd, "abs_smd": np.abs(smd)})
    frame = frame.sort_values("abs_smd", ascending=False, na_position="last", kind="mergesort")
    return FeatureShift(frame=frame.reset_index(drop=True))


# ------------------------------------------------------------- pairing
_SPACE = re.compile(r"\s+")


#: metadata fields that name the task a run solved (the first one present wins)
TASK_FIELDS = ("task_id", "task", "problem_id", "instance_id")


def _task_from_metadata(raw) -> str | None:
    if isinstance(raw, str) and raw.startswith("{"):
        import json

        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if isinstance(raw, dict):
        for f in TASK_FIELDS:
            v = raw.get(f)
            if v not in (None, ""):
                return str(v)
    return None


def _blank(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v)) or str(v).strip() == ""


def pairing_keys(meta: pd.DataFrame) -> np.ndarray:
    """How runs of two run sets are paired, per run, the first rule that applies:

    1. ``task:<dataset>:<value>`` from a metadata field naming the task (:data:`TASK_FIELDS`);
    2. ``task:<dataset>:<trajectory id without the model name>`` when the id contains the run's model name
       (the sample runs: ``facts-0007-SmolLM2-135M-greedy`` and ``facts-0007-SmolLM2-135M-sampled-t0.7`` are
       task ``facts-0007``); an id without the model name is kept whole, so the same id in two uploads pairs;
    3. ``question:<dataset>:<question text>`` (case and runs of whitespace ignored) when the run has no id.

    A run with none of these gets None and stays unpaired.

    Parameters
    ----------
    meta : DataFrame
        The runs' metadata (columns ``dataset``, ``id``, ``model``, ``question``, ``metadata``; missing ones
        count as empty).

    Returns
    -------
    ndarray of object, shape (n_runs,)
        The key of each run, or None.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.calibration.comparison import pairing_keys
    >>> meta = pd.DataFrame({"dataset": ["facts", "facts"], "model": ["SmolLM2-135M-greedy", "SmolLM2-135M-sampled"],
    ...                      "id": ["facts-0007-SmolLM2-135M-greedy", "facts-0007-SmolLM2-135M-sampled"]})
    >>> keys = pairing_keys(meta)
    >>> keys[0] == keys[1], keys[0].replace("\x1f", "|")
    (True, 'task:facts|facts-0007')
    """
    n = len(meta)

    def col(name):
        return meta[name].to_numpy(dtype=object) if name in meta else np.full(n, None, dtype=object)

    ds, ids, models, qs, md = col("dataset"), col("id"), col("model"), col("question"), col("metadata")
    out = np.empty(n, dtype=object)
    for i in range(n):
        d = "" if _blank(ds[i]) else str(ds[i])
        task = _task_from_metadata(md[i])
        if task is None and not _blank(ids[i]):
            tid, model = str(ids[i]), "" if _blank(models[i]) else str(models[i])
            task = tid.replace(model, "").strip("-_:/. ") if model and model in tid else tid
            task = task or tid
        if task is not None:
            out[i] = f"task:{d}\x1f{task}"
        elif not _blank(qs[i]):
            out[i] = f"question:{d}\x1f{_SPACE.sub(' ', str(qs[i])).strip().lower()}"
        else:
            out[i] = None
    return out


def _unique_index(keys: np.ndarray) -> tuple[dict, int]:
    """key -> row for the keys that occur exactly once, and how many rows had an ambiguous key."""
    s = pd.Series(keys, dtype=object)
    s = s[s.notna()]
    counts = s.value_counts()
    once = set(counts.index[counts == 1])
    return {k: i for i, k in s.items() if k in once}, int(counts[counts > 1].sum())


def flipped_verdicts(keys_a, p_a, y_a, keys_b, p_b, y_b, *, threshold: float = 0.5) -> tuple[pd.DataFrame, dict]:
    """The runs paired across two sides by their keys, and whose verdict flipped.

    A verdict is "trust" when the confidence is at least ``threshold``, else "doubt". A key that occurs more
    than once on a side is ambiguous and left unpaired; None keys never pair.

    Parameters
    ----------
    keys_a, p_a, y_a : array-like of shape (n_a,)
        Side A's pairing keys (:func:`pairing_keys`), confidences and labels.
    keys_b, p_b, y_b : array-like of shape (n_b,)
        Side B's.
    threshold : float, default=0.5
        The verdict's confidence threshold, in (0, 1).

    Returns
    -------
    pairs : DataFrame
        One row per pair: pos_a, pos_b (positions in the inputs), confidence_a, confidence_b, verdict_a,
        verdict_b, success_a, success_b, flipped, change (B - A); the flipped ones first, then by the size of
        the change.
    counts : dict
        paired, flipped, ambiguous_a, ambiguous_b, unpaired_a, unpaired_b.

    Examples
    --------
    >>> from htc_core.calibration.comparison import flipped_verdicts
    >>> pairs, counts = flipped_verdicts(["t1", "t2", "t3"], [0.8, 0.3, 0.6], [1, 0, 1],
    ...                                  ["t2", "t3", "t4"], [0.35, 0.4, 0.9], [0, 1, 1])
    >>> pairs[["pos_a", "pos_b", "verdict_a", "verdict_b", "flipped"]]
       pos_a  pos_b verdict_a verdict_b  flipped
    0      2      1     trust     doubt     True
    1      1      0     doubt     doubt    False
    >>> counts
    {'paired': 2, 'flipped': 1, 'ambiguous_a': 0, 'ambiguous_b': 0, 'unpaired_a': 1, 'unpaired_b': 1}
    """
    if not 0.0 < float(threshold) < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
    ka, kb = np.asarray(keys_a, dtype=object), np.asarray(keys_b, dtype=object)
    pa, pb = np.asarray(p_a, dtype=np.float64), np.asarray(p_b, dtype=np.float64)
    ya, yb = np.asarray(y_a, dtype=np.float64), np.asarray(y_b, dtype=np.float64)
    if not (len(ka) == len(pa) == len(ya)) or not (len(kb) == len(pb) == len(yb)):
        raise ValueError("keys, confidences and labels of a side must have the same length")
    ua, amb_a = _unique_index(ka)
    ub, amb_b = _unique_index(kb)
    common = [k for k in ua if k in ub and np.isfinite(pa[ua[k]]) and np.isfinite(pb[ub[k]])]
    ia = np.array([ua[k] for k in common], dtype=np.int64)
    ib = np.array([ub[k] for k in common], dtype=np.int64)
    va, vb = pa[ia] >= threshold, pb[ib] >= threshold
    pairs = pd.DataFrame({"pos_a": ia, "pos_b": ib, "confidence_a": pa[ia], "confidence_b": pb[ib],
                          "verdict_a": np.where(va, "trust", "doubt"), "verdict_b": np.where(vb, "trust", "doubt"),
                          "success_a": ya[ia], "success_b": yb[ib], "flipped": va != vb})
    pairs["change"] = pairs["confidence_b"] - pairs["confidence_a"]
    pairs = pairs.assign(_abs=pairs["change"].abs()).sort_values(["flipped", "_abs"], ascending=[False, False],
                                                                 kind="mergesort").drop(columns="_abs")
    counts = {"paired": len(common), "flipped": int(pairs["flipped"].sum()), "ambiguous_a": amb_a,
              "ambiguous_b": amb_b, "unpaired_a": int(len(ka) - len(common)), "unpaired_b": int(len(kb) - len(common))}
    return pairs.reset_index(drop=True), counts


# ------------------------------------------------------------ together
@dataclass
class RunSetComparison:
    """Everything the "Compare run sets" page shows about A vs B (made by :func:`compare_run_sets`).

    Parameters
    ----------
    name_a, name_b : str
        The sides' names.
    metrics : MetricComparison
        The metrics with intervals.
    curves : dict
        Side name -> its :class:`~htc_core.calibration.metrics.ReliabilityCurve`.
    shifts : FeatureShift or None
        The feature shifts (None without features, or for paired sides).
    pairs : DataFrame
        The paired runs (see :func:`flipped_verdicts`).
    counts : dict
        Paired, flipped, ambiguous and unpaired runs.
    threshold : float
        The verdict's confidence threshold.
    notes : list of str, default=[]
        What could not be done and why.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)                       # calibrated confidences ...
    >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
    >>> from htc_core.calibration.comparison import compare_run_sets
    >>> cmp = compare_run_sets(y, p, y, np.sqrt(p), paired=True, name_a="raw", name_b="sqrt", n_boot=100)
    >>> sorted(cmp.curves), cmp.counts["paired"], cmp.counts["flipped"]
    (['raw', 'sqrt'], 200, 44)
    """

    name_a: str
    name_b: str
    metrics: MetricComparison
    curves: dict                      # side name -> ReliabilityCurve
    shifts: FeatureShift | None
    pairs: pd.DataFrame               # see flipped_verdicts
    counts: dict
    threshold: float
    notes: list = field(default_factory=list)

    @property
    def flipped(self) -> pd.DataFrame:
        """The pairs whose verdict flipped.

        Returns
        -------
        DataFrame
            The rows of ``pairs`` with ``flipped`` True.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=200)                       # calibrated confidences ...
        >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
        >>> from htc_core.calibration.comparison import compare_run_sets
        >>> cmp = compare_run_sets(y, p, y, np.sqrt(p), paired=True, name_a="raw", name_b="sqrt", n_boot=100)
        >>> cmp.flipped[["verdict_a", "verdict_b"]].drop_duplicates().values.tolist()
        [['doubt', 'trust']]
        """
        return self.pairs[self.pairs["flipped"]].reset_index(drop=True)

    def to_frame(self) -> pd.DataFrame:
        """The metric table (one row per metric).

        Returns
        -------
        DataFrame
            :meth:`MetricComparison.to_frame` of ``metrics``.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=200)                       # calibrated confidences ...
        >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
        >>> from htc_core.calibration.comparison import compare_run_sets
        >>> cmp = compare_run_sets(y, p, y, np.sqrt(p), paired=True, name_a="raw", name_b="sqrt", n_boot=100)
        >>> cmp.to_frame().shape
        (5, 14)
        """
        return self.metrics.to_frame()

    def to_dict(self) -> dict:
        """Everything about A vs B as a JSON object.

        Returns
        -------
        dict
            a, b, threshold, metrics, curves, shifts, counts, flipped (records) and notes.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=200)                       # calibrated confidences ...
        >>> y = (rng.uniform(size=200) < p).astype(float)   # ... and outcomes drawn from them
        >>> from htc_core.calibration.comparison import compare_run_sets
        >>> cmp = compare_run_sets(y, p, y, np.sqrt(p), paired=True, name_a="raw", name_b="sqrt", n_boot=100)
        >>> d = cmp.to_dict()
        >>> d["a"], d["b"], d["notes"]
        ('raw', 'sqrt', ['the same runs on both sides: every run is paired with itself'])
        """
        return {"a": self.name_a, "b": self.name_b, "threshold": self.threshold, "metrics": self.metrics.to_dict(),
                "curves": {k: c.to_dict() for k, c in self.curves.items()},
                "shifts": None if self.shifts is None else self.shifts.to_dict(), "counts": dict(self.counts),
                "flipped": self.flipped.to_dict(orient="records"), "notes": list(self.notes)}


def compare_run_sets(y_a, p_a, y_b, p_b, *, name_a: str = "A", name_b: str = "B", X_a=None, X_b=None,
                     keys_a=None, keys_b=None, paired: bool = False, threshold: float = 0.5, n_bins: int = 10,
                     strategy: str = "uniform", n_boot: int = 1000, level: float = 0.95,
                     random_state=0, seed=None) -> RunSetComparison:
    """Compare two run sets (or two calibrators on the same runs): metrics with intervals, reliability curves,
    feature shifts and the runs whose verdict flipped.

    Parameters
    ----------
    y_a, p_a : array-like of shape (n_a,)
        Side A's labels and confidences.
    y_b, p_b : array-like of shape (n_b,)
        Side B's.
    name_a, name_b : str, default="A", "B"
        The sides' names.
    X_a, X_b : array-like, optional
        Their features (for the feature shifts).
    keys_a, keys_b : array-like, optional
        Pairing keys of the runs (:func:`pairing_keys`), for the flipped verdicts.
    paired : bool, default=False
        True: two calibrators on the same runs, row i paired with row i and resampled once.
    threshold : float, default=0.5
        The verdict's confidence threshold.
    n_bins : int, default=10
    strategy : {"uniform", "quantile"}, default="uniform"
        The binning of ECE and the reliability curves.
    n_boot : int, default=1000
    level : float, default=0.95
    random_state : int, Generator, RandomState or None, default=0
        The bootstrap intervals (one resample for every metric; see
        :func:`~htc_core.calibration.bootstrap.percentile_intervals`).
    seed : int, optional
        Deprecated old name of ``random_state``.

    Returns
    -------
    RunSetComparison
        Everything the "Compare run sets" page shows.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(float)
    >>> cmp = htc.compare_run_sets(y[:100], p[:100], y[100:], p[100:], n_boot=100)
    >>> cmp.counts["unpaired_a"], cmp.counts["unpaired_b"]
    (100, 100)
    """
    if not isinstance(name_a, str) or not isinstance(name_b, str) or name_a == name_b:
        raise ValueError(f"name_a and name_b must be two different strings, got {name_a!r} and {name_b!r}")
    metrics = compare_metrics(y_a, p_a, y_b, p_b, paired=paired, threshold=threshold, n_bins=n_bins,
                              strategy=strategy, n_boot=n_boot, level=level,
                              random_state=renamed_seed(seed, random_state))
    curves: dict[str, ReliabilityCurve] = {}
    for name, y, p in ((name_a, y_a, p_a), (name_b, y_b, p_b)):
        yc, pc = _clean(y, p, name)
        curves[name] = reliability_curve(yc, pc, n_bins=n_bins, strategy=strategy)
    notes = []
    shifts = None
    if X_a is not None and X_b is not None and not paired:
        shifts = feature_shift(X_a, X_b)
    if paired:
        n = len(np.asarray(p_a))
        keys_a = keys_b = np.arange(n).astype(str).astype(object)
        notes.append("the same runs on both sides: every run is paired with itself")
    elif keys_a is None or keys_b is None:
        keys_a = np.full(len(np.asarray(p_a)), None, dtype=object)
        keys_b = np.full(len(np.asarray(p_b)), None, dtype=object)
        notes.append("no pairing keys given: no run could be paired")
    pairs, counts = flipped_verdicts(keys_a, p_a, y_a, keys_b, p_b, y_b, threshold=threshold)
    if counts["ambiguous_a"] or counts["ambiguous_b"]:
        notes.append(f"{counts['ambiguous_a']} run(s) of {name_a} and {counts['ambiguous_b']} of {name_b} share "
                     "their pairing key with another run of the same side and are left unpaired")
    return RunSetComparison(name_a=name_a, name_b=name_b, metrics=metrics, curves=curves, shifts=shifts, pairs=pairs,
                            counts=counts, threshold=float(threshold), notes=notes)
