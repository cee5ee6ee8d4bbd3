"""Single-signal baselines and temperature scaling (paper "Inference-based Baselines", DESIGN.md section 4).

Every raw confidence is computed vectorized over the whole trace set from the
token probabilities ``r`` of the confidence profile (``r = exp(chosen
logprob)``), with segment reductions over the step and trajectory offsets:

- ``LastStep-TP``: mean r of the last step.
- ``GlobalTrace-TP``: mean r of all tokens of the trajectory.
- ``Bottom10`` (DeepConf-style): mean of the lowest 10% of the trajectory's
  token probabilities, ``max(1, floor(0.1 n))`` tokens.
- ``LowestGroup`` (DeepConf-style): minimum over sliding windows of 16 tokens
  of the window's mean r; the whole-trajectory mean when shorter than 16.
- ``Tail`` (DeepConf-style): mean r of the last 32 tokens (all when fewer).
- ``Verbalized``: the stated confidence, when the traces carry it.

``TemperatureScaling`` rescales a confidence as ``sigmoid(logit(c) / T)`` with
one T fitted by minimizing the log loss on training data only. It has no
intercept, so it cannot move a signal whose mean sits far above the success
rate down to that rate: the fit flattens it toward 0.5 instead (the collapsed
"+Temp" baselines). ``PlattScaling`` (``sigmoid(a logit(c) + b)``, slope and
intercept fitted by log loss on training data only) can, and is the fair
single-signal baseline.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..confidence import token_confidence
from ..features.segments import seg_mean, seg_min, seg_sum
from ..traces import TraceSet

__all__ = [
    "RAW_BASELINES", "BASELINE_COLUMNS", "token_probabilities", "last_step_tp", "global_trace_tp", "bottom10",
    "lowest_group", "tail", "verbalized", "baseline_confidences", "TemperatureScaling",
    "PlattScaling",
]

RAW_BASELINES = ("LastStep-TP", "GlobalTrace-TP", "Bottom10", "LowestGroup", "Tail")
BASELINE_COLUMNS = {"LastStep-TP": "last_step_tp", "GlobalTrace-TP": "global_trace_tp", "Bottom10": "bottom10",
                    "LowestGroup": "lowest_group", "Tail": "tail", "Verbalized": "verbalized"}

BOTTOM_FRACTION = 0.1
GROUP_WINDOW = 16
TAIL_TOKENS = 32


def _check_ts(ts) -> TraceSet:
    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    return ts


def token_probabilities(ts: TraceSet, *, profile: str = "paper", top_k: int = 5) -> np.ndarray:
    """r of every token under the confidence profile."""
    return token_confidence(_check_ts(ts).logprob, ts.top_logprobs, profile=profile, top_k=top_k).r


def _token_offsets(ts: TraceSet) -> np.ndarray:
    return ts.step_offsets[ts.traj_offsets]


def _nan_if_empty(values: np.ndarray, lens: np.ndarray) -> np.ndarray:
    return np.where(lens > 0, values, np.nan)


def last_step_tp(ts: TraceSet, r: np.ndarray | None = None) -> np.ndarray:
    """Mean token probability of each trajectory's last step."""
    r = token_probabilities(ts) if r is None else r
    step_mean = seg_mean(r, ts.step_offsets)
    out = np.full(ts.n_trajectories, np.nan)
    has = ts.steps_per_trajectory > 0
    last = ts.traj_offsets[1:] - 1
    out[has] = step_mean[last[has]]
    lens = np.zeros(ts.n_trajectories, dtype=np.int64)
    lens[has] = ts.tokens_per_step[last[has]]
    return _nan_if_empty(out, lens)


def global_trace_tp(ts: TraceSet, r: np.ndarray | None = None) -> np.ndarray:
    """Mean token probability over all tokens of each trajectory."""
    r = token_probabilities(ts) if r is None else r
    off = _token_offsets(ts)
    return _nan_if_empty(seg_mean(r, off), np.diff(off))


def bottom10(ts: TraceSet, r: np.ndarray | None = None, *, fraction: float = BOTTOM_FRACTION) -> np.ndarray:
    """Mean of the lowest ``fraction`` of token probabilities (at least one token) per trajectory."""
    r = token_probabilities(ts) if r is None else r
    off = _token_offsets(ts)
    lens = np.diff(off)
    k = np.maximum(1, np.floor(fraction * lens + 1e-9).astype(np.int64))
    # per trajectory: sort its own tokens and sum the k lowest in ascending order (compiled: a global lexsort
    # by (trajectory, r) cost seconds per million tokens)
    s = _lowest_sums_compiled()(np.ascontiguousarray(r, dtype=np.float64), off.astype(np.int64), k)
    return _nan_if_empty(s / np.maximum(np.minimum(k, lens), 1), lens)


def _lowest_sums_compiled():
    """The compiled sum of the k lowest values per segment (:mod:`.lowest_sums`, imported on first use so that
    importing the metrics stays light)."""
    from .lowest_sums import lowest_sums

    return lowest_sums


def lowest_group(ts: TraceSet, r: np.ndarray | None = None, *, window: int = GROUP_WINDOW) -> np.ndarray:
    """Minimum over sliding windows of ``window`` tokens of the mean r (whole-trajectory mean when shorter)."""
    r = token_probabilities(ts) if r is None else r
    off = _token_offsets(ts)
    lens = np.diff(off)
    out = seg_mean(r, off)
    if len(r) >= window:
        win = np.lib.stride_tricks.sliding_window_view(r, window).mean(axis=1)   # window starting at i
        traj = np.repeat(np.arange(len(lens)), lens)
        starts = np.arange(len(win))
        valid = starts + window <= off[1:][traj[: len(win)]]                      # window inside its trajectory
        idx = traj[: len(win)][valid]
        woff = np.concatenate([[0], np.cumsum(np.bincount(idx, minlength=len(lens)))])
        mins = seg_min(win[valid], woff, empty=np.nan)
        out = np.where(lens >= window, mins, out)
    return _nan_if_empty(out, lens)


def tail(ts: TraceSet, r: np.ndarray | None = None, *, n_last: int = TAIL_TOKENS) -> np.ndarray:
    """Mean r of the last ``n_last`` tokens of each trajectory (all tokens when fewer)."""
    r = token_probabilities(ts) if r is None else r
    off = _token_offsets(ts)
    lens = np.diff(off)
    from_end = np.repeat(off[1:], lens) - np.arange(len(r))      # 1 for the last token
    s = seg_sum(np.where(from_end <= n_last, r, 0.0), off)
    return _nan_if_empty(s / np.maximum(np.minimum(lens, n_last), 1), lens)


def verbalized(ts: TraceSet) -> np.ndarray:
    """The stated confidence in [0, 1] (NaN where absent)."""
    return _check_ts(ts).meta["verbalized_confidence"].to_numpy(dtype=np.float64)


def baseline_confidences(ts: TraceSet, *, profile: str = "paper", top_k: int = 5) -> pd.DataFrame:
    """Raw confidence of every single-signal baseline, one row per trajectory.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    profile : str, default="paper"
    top_k : int, default=5
        The token-confidence definitions (as :func:`htc_core.extract`).

    Returns
    -------
    DataFrame
        One column per baseline (LastStep-TP, GlobalTrace-TP, ...); ``Verbalized`` only when at least one
        trajectory carries it.

    Examples
    --------
    >>> from htc_core.calibration import baseline_confidences
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/")
    >>> baseline_confidences(ts).columns.tolist()[:2]
    ['LastStep-TP', 'GlobalTrace-TP']
    """
    r = token_probabilities(ts, profile=profile, top_k=top_k)
    cols = {
        "LastStep-TP": last_step_tp(ts, r),
        "GlobalTrace-TP": global_trace_tp(ts, r),
        "Bottom10": bottom10(ts, r),
        "LowestGroup": lowest_group(ts, r),
        "Tail": tail(ts, r),
    }
    v = verbalized(ts)
    if np.isfinite(v).any():
        cols["Verbalized"] = v
    return pd.DataFrame(cols)


class TemperatureScaling:
    """``sigmoid(logit(c) / T)`` with one temperature fitted by minimizing log loss.

    The log loss is convex in ``beta = 1 / T``; it is minimized by projected Newton steps over ``T`` in
    ``[min_temperature, max_temperature]``. The upper bound keeps the signal's ranking (AUROC) when the
    unconstrained optimum is T = inf (a signal far above the success rate, or one that ranks failures above
    successes): the fit then flattens the confidences toward 0.5 without making them constant.

    Parameters
    ----------
    eps : float, default=1e-6
        Confidences are clipped to ``[eps, 1 - eps]`` before the logit.
    min_temperature, max_temperature : float, default=0.01, 100.0
        The temperature's bounds.
    max_iter : int, default=100
    tol : float, default=1e-10
        The Newton iterations' cap and tolerance.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration import TemperatureScaling, baseline_confidences
    >>> ts, _ = htc.load("sample_runs/units/")
    >>> raw = baseline_confidences(ts)["GlobalTrace-TP"].to_numpy()
    >>> scaler = TemperatureScaling().fit(raw, ts.labels)
    >>> bool(1.0 < scaler.temperature_ < 100.0), scaler.transform(raw).shape
    (True, (500,))
    """

    def __init__(self, *, eps: float = 1e-6, min_temperature: float = 0.01, max_temperature: float = 100.0,
                 max_iter: int = 100, tol: float = 1e-10):
        if not (0 < min_temperature < max_temperature):
            raise ValueError(f"need 0 < min_temperature < max_temperature, got {min_temperature!r}, {max_temperature!r}")
        self.eps = eps
        self.min_temperature = min_temperature
        self.max_temperature = max_temperature
        self.max_iter = max_iter
        self.tol = tol

    def _logit(self, c) -> np.ndarray:
        c = np.asarray(c, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(c)):
            raise ValueError("confidences must be finite (remove trajectories without this signal)")
        if np.any((c < 0) | (c > 1)):
            bad = float(c[(c < 0) | (c > 1)][0])
            raise ValueError(f"confidences must be in [0, 1], got {bad!r}")
        c = np.clip(c, self.eps, 1 - self.eps)
        return np.log(c) - np.log1p(-c)

    def fit(self, confidence, y) -> "TemperatureScaling":
        z = self._logit(confidence)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape != z.shape:
            raise ValueError(f"y must have one label per confidence ({len(z)}), got {len(y)}")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("y must contain only 0 and 1")
        lo, hi = 1.0 / self.max_temperature, 1.0 / self.min_temperature
        beta = 1.0
        for _ in range(self.max_iter):
            p = 1.0 / (1.0 + np.exp(-beta * z))
            g = float(z @ (p - y))
            h = float((z * z) @ (p * (1 - p)))
            if h <= 1e-300:
                new = lo if g > 0 else hi
            else:
                new = beta - g / h
            new = min(max(new, lo, beta / 10), hi, beta * 10)     # projected, damped Newton step
            done = abs(new - beta) <= self.tol * max(1.0, beta)
            beta = new
            if done:
                break
        self.beta_ = float(beta)
        self.temperature_ = 1.0 / beta
        return self

    def transform(self, confidence) -> np.ndarray:
        """The rescaled confidences, 1-D."""
        if not hasattr(self, "beta_"):
            raise ValueError("this TemperatureScaling is not fitted yet; call fit(confidence, y)")
        z = self._logit(confidence)
        return 1.0 / (1.0 + np.exp(-self.beta_ * z))

    def predict_proba(self, confidence) -> np.ndarray:
        p = self.transform(confidence)
        return np.column_stack([1 - p, p])


class PlattScaling(TemperatureScaling):
    """``sigmoid(a * logit(c) + b)`` (Platt scaling on the signal's logit), ``a`` and ``b`` fitted by
    minimizing the log loss plus ``ridge * (a**2 + b**2) / 2`` with Newton steps.

    The tiny ridge keeps the fit finite when the training rows are separable by the signal or hold one
    outcome only (then the confidences go to the success rate of those rows, not to 0 or 1 exactly).
    ``slope_`` and ``intercept_`` hold the fit; ``temperature_`` is ``1 / slope_`` (for the per-fold table).
    """

    def __init__(self, *, eps: float = 1e-6, ridge: float = 1e-4, max_iter: int = 100, tol: float = 1e-10):
        if not (ridge > 0 and np.isfinite(ridge)):
            raise ValueError(f"ridge must be a positive number, got {ridge!r}")
        self.eps = eps
        self.ridge = ridge
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, confidence, y) -> "PlattScaling":
        z = self._logit(confidence)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape != z.shape:
            raise ValueError(f"y must have one label per confidence ({len(z)}), got {len(y)}")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("y must contain only 0 and 1")
        A = np.column_stack([z, np.ones_like(z)])
        w = np.zeros(2)
        lam = self.ridge * max(len(z), 1)
        for _ in range(self.max_iter):
            p = 1.0 / (1.0 + np.exp(-(A @ w)))
            g = A.T @ (p - y) + lam * w
            H = (A * (p * (1 - p))[:, None]).T @ A + lam * np.eye(2)
            step = np.linalg.solve(H, g)
            w = w - step
            if np.max(np.abs(step)) <= self.tol * max(1.0, float(np.max(np.abs(w)))):
                break
        self.slope_, self.intercept_ = float(w[0]), float(w[1])
        self.beta_ = self.slope_
        self.temperature_ = 1.0 / self.slope_ if self.slope_ != 0 else float("inf")
        return self

    def transform(self, confidence) -> np.ndarray:
        """The rescaled confidences, 1-D."""
        if not hasattr(self, "slope_"):
            raise ValueError("this PlattScaling is not fitted yet; call fit(confidence, y)")
        z = self._logit(confidence)
        return 1.0 / (1.0 + np.exp(-(self.slope_ * z + self.intercept_)))
