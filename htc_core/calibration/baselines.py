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

from typing import TYPE_CHECKING

import numpy as np

from ..confidence import token_confidence
from ..features.segments import seg_mean, seg_min, seg_sum
from ..traces import TraceSet

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "RAW_BASELINES", "BASELINE_COLUMNS", "token_probabilities", "last_step_tp", "global_trace_tp", "bottom10",
    "lowest_group", "tail", "verbalized", "baseline_confidences", "TemperatureScaling",
    "PlattScaling",
]

# the token-probability baselines of the paper's table, in its order (each gets a "+Temp" twin)
RAW_BASELINES = ("LastStep-TP", "GlobalTrace-TP", "Bottom10", "LowestGroup", "Tail")
# baseline name -> its column in the scores table (htc_core.scoring): the function of this module that computes it
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
    """r of every token under the confidence profile (the input of every token-probability baseline).

    Parameters
    ----------
    ts : TraceSet
        The runs.
    profile : str, default="paper"
        The token-confidence profile (:func:`htc_core.extract`); every shipped profile has
        ``r = exp(chosen logprob)``.
    top_k : int, default=5
        The number of alternatives the profile reads.

    Returns
    -------
    ndarray of shape (n_tokens,)
        One probability per token of the trace set, in trace-set order.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.baselines import token_probabilities
    >>> runs = (b'{"id": "a", "steps": [{"logprobs": [-0.105, -0.693]}, {"logprobs": [-0.223]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-1.609, -0.916, -0.511]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")   # token probabilities 0.9, 0.5 | 0.8 and 0.2, 0.4, 0.6
    >>> token_probabilities(ts).round(2).tolist()
    [0.9, 0.5, 0.8, 0.2, 0.4, 0.6]
    """
    return token_confidence(_check_ts(ts).logprob, ts.top_logprobs, profile=profile, top_k=top_k).r


def _token_offsets(ts: TraceSet) -> np.ndarray:
    return ts.step_offsets[ts.traj_offsets]


def _nan_if_empty(values: np.ndarray, lens: np.ndarray) -> np.ndarray:
    return np.where(lens > 0, values, np.nan)


def last_step_tp(ts: TraceSet, r: np.ndarray | None = None) -> np.ndarray:
    """Mean token probability of each trajectory's last step (the ``LastStep-TP`` baseline).

    Parameters
    ----------
    ts : TraceSet
        The runs.
    r : ndarray of shape (n_tokens,), optional
        The token probabilities of ``ts`` (:func:`token_probabilities`); computed when omitted (pass them to
        compute several baselines from one pass).

    Returns
    -------
    ndarray of shape (n_trajectories,)
        One confidence per run, NaN for a run without tokens.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.baselines import last_step_tp
    >>> runs = (b'{"id": "a", "steps": [{"logprobs": [-0.105, -0.693]}, {"logprobs": [-0.223]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-1.609, -0.916, -0.511]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")   # token probabilities 0.9, 0.5 | 0.8 and 0.2, 0.4, 0.6
    >>> last_step_tp(ts).round(2).tolist()
    [0.8, 0.4]
    """
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
    """Mean token probability over all tokens of each trajectory (the ``GlobalTrace-TP`` baseline).

    Parameters
    ----------
    ts : TraceSet
        The runs.
    r : ndarray of shape (n_tokens,), optional
        The token probabilities of ``ts`` (:func:`token_probabilities`); computed when omitted (pass them to
        compute several baselines from one pass).

    Returns
    -------
    ndarray of shape (n_trajectories,)
        One confidence per run, NaN for a run without tokens.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.baselines import global_trace_tp
    >>> runs = (b'{"id": "a", "steps": [{"logprobs": [-0.105, -0.693]}, {"logprobs": [-0.223]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-1.609, -0.916, -0.511]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")   # token probabilities 0.9, 0.5 | 0.8 and 0.2, 0.4, 0.6
    >>> global_trace_tp(ts).round(2).tolist()
    [0.73, 0.4]
    """
    r = token_probabilities(ts) if r is None else r
    off = _token_offsets(ts)
    return _nan_if_empty(seg_mean(r, off), np.diff(off))


def bottom10(ts: TraceSet, r: np.ndarray | None = None, *, fraction: float = BOTTOM_FRACTION) -> np.ndarray:
    """Mean of the lowest ``fraction`` of token probabilities (at least one token) per trajectory.

    The ``Bottom10`` baseline (DeepConf-style): the ``max(1, floor(fraction * n))`` lowest of a run's ``n``
    token probabilities, averaged.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    r : ndarray of shape (n_tokens,), optional
        The token probabilities of ``ts`` (:func:`token_probabilities`); computed when omitted (pass them to
        compute several baselines from one pass).
    fraction : float, default=0.1
        The share of lowest tokens averaged.

    Returns
    -------
    ndarray of shape (n_trajectories,)
        One confidence per run, NaN for a run without tokens.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.baselines import bottom10
    >>> runs = (b'{"id": "a", "steps": [{"logprobs": [-0.105, -0.693]}, {"logprobs": [-0.223]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-1.609, -0.916, -0.511]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")   # token probabilities 0.9, 0.5 | 0.8 and 0.2, 0.4, 0.6
    >>> bottom10(ts).round(2).tolist()                   # one token each: the lowest
    [0.5, 0.2]
    >>> bottom10(ts, fraction=0.7).round(2).tolist()     # floor(0.7 * 3) = 2 tokens each
    [0.65, 0.3]
    """
    r = token_probabilities(ts) if r is None else r
    off = _token_offsets(ts)
    lens = np.diff(off)
    k = np.maximum(1, np.floor(fraction * lens + 1e-9).astype(np.int64))
    # per trajectory: sort its own tokens and sum the k lowest in ascending order (compiled: a global lexsort
    # by (trajectory, r) cost seconds per million tokens; up to SORTED_RUNS runs numpy per run, no compile)
    r = np.ascontiguousarray(r, dtype=np.float64)
    sums = lowest_sums_sorted if len(lens) <= SORTED_RUNS else _lowest_sums_compiled()
    s = sums(r, off.astype(np.int64), k)
    return _nan_if_empty(s / np.maximum(np.minimum(k, lens), 1), lens)


# up to this many trajectories :func:`bottom10` sorts each with numpy (~6 us a run) instead of calling the
# compiled heap, whose first compile costs ~0.7 s CPU in a fresh install (issue 29): the sample runs' 2,000
# runs take ~15 ms this way. Both give the same sums to the bit (tests/test_kernels.py).
SORTED_RUNS = 20_000


def lowest_sums_sorted(r: np.ndarray, off: np.ndarray, k: np.ndarray) -> np.ndarray:
    """:func:`htc_core.calibration.lowest_sums.lowest_sums` with numpy, one segment at a time: ``np.sort`` of the
    segment, then its first ``k`` values added in order by ``np.cumsum`` (a sequential sum; ``+ 0.0`` gives
    an all-zero sum the kernel's sign, as its sum starts at 0.0)."""
    out = np.zeros(len(off) - 1)
    with np.errstate(invalid="ignore"):         # inf + -inf is NaN, silently, as in the kernel
        for i in range(len(off) - 1):
            a, b = int(off[i]), int(off[i + 1])
            kk = min(int(k[i]), b - a)
            if kk > 0:
                out[i] = np.cumsum(np.sort(r[a:b])[:kk])[-1] + 0.0
    return out


def _lowest_sums_compiled():
    """The compiled sum of the k lowest values per segment (:mod:`.lowest_sums`, imported on first use so that
    importing the metrics stays light)."""
    from .lowest_sums import lowest_sums

    return lowest_sums


def lowest_group(ts: TraceSet, r: np.ndarray | None = None, *, window: int = GROUP_WINDOW) -> np.ndarray:
    """Minimum over sliding windows of ``window`` tokens of the mean r (whole-trajectory mean when shorter).

    The ``LowestGroup`` baseline (DeepConf-style); windows never cross from one run into the next.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    r : ndarray of shape (n_tokens,), optional
        The token probabilities of ``ts`` (:func:`token_probabilities`); computed when omitted (pass them to
        compute several baselines from one pass).
    window : int, default=16
        Tokens per window.

    Returns
    -------
    ndarray of shape (n_trajectories,)
        One confidence per run, NaN for a run without tokens.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.baselines import lowest_group
    >>> runs = (b'{"id": "a", "steps": [{"logprobs": [-0.105, -0.693]}, {"logprobs": [-0.223]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-1.609, -0.916, -0.511]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")   # token probabilities 0.9, 0.5 | 0.8 and 0.2, 0.4, 0.6
    >>> lowest_group(ts).round(2).tolist()               # shorter than 16 tokens: the mean
    [0.73, 0.4]
    >>> lowest_group(ts, window=2).round(2).tolist()     # windows (0.9, 0.5), (0.5, 0.8) | (0.2, 0.4), (0.4, 0.6)
    [0.65, 0.3]
    """
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
    """Mean r of the last ``n_last`` tokens of each trajectory (all tokens when fewer): the ``Tail`` baseline.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    r : ndarray of shape (n_tokens,), optional
        The token probabilities of ``ts`` (:func:`token_probabilities`); computed when omitted (pass them to
        compute several baselines from one pass).
    n_last : int, default=32
        Tokens at the end of the run that are averaged.

    Returns
    -------
    ndarray of shape (n_trajectories,)
        One confidence per run, NaN for a run without tokens.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.baselines import tail
    >>> runs = (b'{"id": "a", "steps": [{"logprobs": [-0.105, -0.693]}, {"logprobs": [-0.223]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-1.609, -0.916, -0.511]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")   # token probabilities 0.9, 0.5 | 0.8 and 0.2, 0.4, 0.6
    >>> tail(ts, n_last=2).round(2).tolist()
    [0.65, 0.5]
    """
    r = token_probabilities(ts) if r is None else r
    off = _token_offsets(ts)
    lens = np.diff(off)
    from_end = np.repeat(off[1:], lens) - np.arange(len(r))      # 1 for the last token
    s = seg_sum(np.where(from_end <= n_last, r, 0.0), off)
    return _nan_if_empty(s / np.maximum(np.minimum(lens, n_last), 1), lens)


def verbalized(ts: TraceSet) -> np.ndarray:
    """The stated confidence in [0, 1] (NaN where absent): the ``Verbalized`` baseline.

    Parameters
    ----------
    ts : TraceSet
        The runs; the confidence is their ``verbalized_confidence`` metadata column.

    Returns
    -------
    ndarray of shape (n_trajectories,)
        One confidence per run, NaN where the run states none.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.baselines import verbalized
    >>> runs = (b'{"id": "a", "verbalized_confidence": 0.9, "steps": [{"logprobs": [-0.1]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-0.5]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")
    >>> verbalized(ts).tolist()
    [0.9, nan]
    """
    # a copy of the metadata column (float64, NaN where absent), without building the meta DataFrame
    return np.array(_check_ts(ts).meta_column("verbalized_confidence"), dtype=np.float64)


def baseline_confidences(ts: TraceSet, *, profile: str = "paper", top_k: int = 5) -> pd.DataFrame:
    """Raw confidence of every single-signal baseline, one row per trajectory.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    profile : str, default="paper"
        The token-confidence profile (as :func:`htc_core.extract`).
    top_k : int, default=5
        The number of alternatives the profile reads.

    Returns
    -------
    DataFrame
        One column per baseline (LastStep-TP, GlobalTrace-TP, ...); ``Verbalized`` only when at least one
        trajectory carries it.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration import baseline_confidences
    >>> runs = (b'{"id": "a", "verbalized_confidence": 0.9, "steps": [{"logprobs": [-0.105, -0.693]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-1.609, -0.916, -0.511]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")
    >>> baseline_confidences(ts).round(2)
       LastStep-TP  GlobalTrace-TP  Bottom10  LowestGroup  Tail  Verbalized
    0          0.7             0.7       0.5          0.7   0.7         0.9
    1          0.4             0.4       0.2          0.4   0.4         NaN
    """
    import pandas as pd

    return pd.DataFrame(baseline_arrays(ts, profile=profile, top_k=top_k))


def baseline_arrays(ts: TraceSet, *, profile: str = "paper", top_k: int = 5) -> dict:
    """The columns of :func:`baseline_confidences` as a dict of float64 arrays, in its order (no pandas)."""
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
    return cols


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
    min_temperature : float, default=0.01
        The temperature's lower bound.
    max_temperature : float, default=100.0
        The temperature's upper bound.
    max_iter : int, default=100
        Cap on the Newton iterations.
    tol : float, default=1e-10
        Relative change of ``1 / T`` at which the iterations stop.

    Attributes
    ----------
    temperature_ : float
        The fitted temperature T.
    beta_ : float
        ``1 / T``.

    Examples
    --------
    On 250 real runs whose mean token probability (0.87) sits far above their success rate (0.48), the
    temperature flattens the confidences toward 0.5 but cannot bring their mean down to the success rate:

    >>> import htc_core as htc
    >>> from htc_core.calibration import TemperatureScaling, baseline_confidences
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> raw = baseline_confidences(ts)["GlobalTrace-TP"].to_numpy()
    >>> scaler = TemperatureScaling().fit(raw, ts.labels)
    >>> round(scaler.temperature_, 2), round(float(scaler.transform(raw).mean()), 2), float(ts.labels.mean())
    (5.12, 0.6, 0.48)
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

    def _logit_and_labels(self, confidence, y) -> tuple[np.ndarray, np.ndarray]:
        """The checked logits of the confidences and their 0/1 labels (what both scalings fit on)."""
        z = self._logit(confidence)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape != z.shape:
            raise ValueError(f"y must have one label per confidence ({len(z)}), got {len(y)}")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("y must contain only 0 and 1")
        return z, y

    def fit(self, confidence, y) -> "TemperatureScaling":
        """Fit the temperature by minimizing the log loss of ``sigmoid(logit(confidence) / T)`` against ``y``.

        Parameters
        ----------
        confidence : array-like of shape (n,)
            Raw confidences in [0, 1] (finite).
        y : array-like of shape (n,)
            0/1 outcomes.

        Returns
        -------
        TemperatureScaling
            This scaler, fitted (``temperature_``, ``beta_``).

        Raises
        ------
        ValueError
            If a confidence is not finite or outside [0, 1], the lengths differ, or a label is not 0/1.

        Examples
        --------
        >>> from htc_core.calibration import TemperatureScaling
        >>> scaler = TemperatureScaling().fit([0.95, 0.9, 0.9, 0.85, 0.8, 0.7], [1, 1, 0, 1, 0, 0])
        >>> round(scaler.temperature_, 2)
        4.8
        """
        z, y = self._logit_and_labels(confidence, y)
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
        """The rescaled confidences, 1-D.

        Parameters
        ----------
        confidence : array-like of shape (n,)
            Raw confidences in [0, 1] (finite).

        Returns
        -------
        ndarray of shape (n,)
            ``sigmoid(logit(confidence) / temperature_)``.

        Examples
        --------
        >>> from htc_core.calibration import TemperatureScaling
        >>> scaler = TemperatureScaling().fit([0.95, 0.9, 0.9, 0.85, 0.8, 0.7], [1, 1, 0, 1, 0, 0])
        >>> scaler.transform([0.9, 0.6]).round(3).tolist()
        [0.612, 0.521]
        """
        if not hasattr(self, "beta_"):
            raise ValueError("this TemperatureScaling is not fitted yet; call fit(confidence, y)")
        z = self._logit(confidence)
        return 1.0 / (1.0 + np.exp(-self.beta_ * z))

    def predict_proba(self, confidence) -> np.ndarray:
        """The rescaled confidences as scikit-learn's two columns ``[P(failure), P(success)]``.

        Parameters
        ----------
        confidence : array-like of shape (n,)
            Raw confidences in [0, 1] (finite).

        Returns
        -------
        ndarray of shape (n, 2)
            ``1 - transform(confidence)`` and ``transform(confidence)``.

        Examples
        --------
        >>> from htc_core.calibration import TemperatureScaling
        >>> scaler = TemperatureScaling().fit([0.95, 0.9, 0.9, 0.85, 0.8, 0.7], [1, 1, 0, 1, 0, 0])
        >>> scaler.predict_proba([0.9]).round(3).tolist()
        [[0.388, 0.612]]
        """
        p = self.transform(confidence)
        return np.column_stack([1 - p, p])


class PlattScaling(TemperatureScaling):
    """``sigmoid(a * logit(c) + b)`` (Platt scaling on the signal's logit), ``a`` and ``b`` fitted by
    minimizing the log loss plus ``ridge * (a**2 + b**2) / 2`` with Newton steps.

    The tiny ridge keeps the fit finite when the training rows are separable by the signal or hold one
    outcome only (then the confidences go to the success rate of those rows, not to 0 or 1 exactly).
    ``slope_`` and ``intercept_`` hold the fit; ``temperature_`` is ``1 / slope_`` (for the per-fold table).

    Parameters
    ----------
    eps : float, default=1e-6
        Confidences are clipped to ``[eps, 1 - eps]`` before the logit.
    ridge : float, default=1e-4
        The penalty per training row (positive).
    max_iter : int, default=100
        Cap on the Newton iterations.
    tol : float, default=1e-10
        Relative size of a Newton step at which the iterations stop.

    Attributes
    ----------
    slope_, intercept_ : float
        The fitted ``a`` and ``b``.
    temperature_ : float
        ``1 / slope_`` (inf for a zero slope).

    Examples
    --------
    The intercept brings a signal that sits far above the success rate down to it (compare
    :class:`TemperatureScaling` on the same 250 runs):

    >>> import htc_core as htc
    >>> from htc_core.calibration.baselines import PlattScaling, baseline_confidences
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> raw = baseline_confidences(ts)["GlobalTrace-TP"].to_numpy()
    >>> scaler = PlattScaling().fit(raw, ts.labels)
    >>> round(float(raw.mean()), 2), round(float(scaler.transform(raw).mean()), 2), float(ts.labels.mean())
    (0.87, 0.48, 0.48)
    """

    def __init__(self, *, eps: float = 1e-6, ridge: float = 1e-4, max_iter: int = 100, tol: float = 1e-10):
        if not (ridge > 0 and np.isfinite(ridge)):
            raise ValueError(f"ridge must be a positive number, got {ridge!r}")
        self.eps = eps
        self.ridge = ridge
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, confidence, y) -> "PlattScaling":
        """Fit slope and intercept by minimizing the ridge-penalized log loss of ``sigmoid(a logit(c) + b)``.

        Parameters
        ----------
        confidence : array-like of shape (n,)
            Raw confidences in [0, 1] (finite).
        y : array-like of shape (n,)
            0/1 outcomes.

        Returns
        -------
        PlattScaling
            This scaler, fitted (``slope_``, ``intercept_``, ``temperature_``).

        Raises
        ------
        ValueError
            If a confidence is not finite or outside [0, 1], the lengths differ, or a label is not 0/1.

        Examples
        --------
        >>> from htc_core.calibration.baselines import PlattScaling
        >>> scaler = PlattScaling().fit([0.95, 0.9, 0.9, 0.85, 0.8, 0.7], [1, 1, 0, 1, 0, 0])
        >>> round(scaler.slope_, 2), round(scaler.intercept_, 2)
        (2.69, -5.07)
        """
        z, y = self._logit_and_labels(confidence, y)
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
        """The rescaled confidences, 1-D.

        Parameters
        ----------
        confidence : array-like of shape (n,)
            Raw confidences in [0, 1] (finite).

        Returns
        -------
        ndarray of shape (n,)
            ``sigmoid(slope_ * logit(confidence) + intercept_)``.

        Examples
        --------
        >>> from htc_core.calibration.baselines import PlattScaling
        >>> scaler = PlattScaling().fit([0.95, 0.9, 0.9, 0.85, 0.8, 0.7], [1, 1, 0, 1, 0, 0])
        >>> scaler.transform([0.9, 0.6]).round(3).tolist()
        [0.697, 0.018]
        """
        if not hasattr(self, "slope_"):
            raise ValueError("this PlattScaling is not fitted yet; call fit(confidence, y)")
        z = self._logit(confidence)
        return 1.0 / (1.0 + np.exp(-(self.slope_ * z + self.intercept_)))
