"""Prefixes of trajectories: the first k steps of each run, as a new :class:`TraceSet`.

A prefix keeps the trajectory's id, metadata and label (the outcome of the whole run: what an early
warning predicts). ``prefixes(ts, 3)`` cuts every trajectory after its third step (a run with fewer steps
stays whole: it had already finished by then); ``prefixes(ts, fraction=0.5)`` keeps ceil(0.5 * S) steps
of a run of S steps (at least one); an array gives each trajectory its own number of steps.
"""

from __future__ import annotations

import numpy as np

from .traceset import TraceSet, concat_ranges

__all__ = ["prefixes", "prefix_pairs", "prefix_lengths"]


def prefix_lengths(ts: TraceSet, steps=None, *, fraction: float | None = None) -> np.ndarray:
    """Number of steps each trajectory keeps: min(steps, S) or ceil(fraction * S), at least 1.

    Parameters
    ----------
    ts : TraceSet
        The runs (S = each one's number of steps).
    steps : int or array-like of int of shape (n_trajectories,), optional
        The number of steps to keep (>= 1), one for all or one per trajectory. Give exactly one of ``steps``
        and ``fraction``.
    fraction : float in (0, 1], optional
        The share of each run's steps to keep, rounded up.

    Returns
    -------
    ndarray of int64 of shape (n_trajectories,)

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.traces.prefix import prefix_lengths
    >>> ts, _ = htc.load("sample_runs/_examples/strings_Gemma3-270M-sampled-t0.7.jsonl")
    >>> ts.steps_per_trajectory[:3].tolist()
    [4, 2, 2]
    >>> prefix_lengths(ts, 3)[:3].tolist(), prefix_lengths(ts, fraction=0.5)[:3].tolist()
    ([3, 2, 2], [2, 1, 1])
    """
    S = ts.steps_per_trajectory
    if (steps is None) == (fraction is None):
        raise ValueError("give exactly one of steps and fraction")
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.floating)) \
                or not 0.0 < float(fraction) <= 1.0:
            raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
        # the 1e-9 keeps 0.3 * 10 at 3 steps (floating point gives 3.0000000000000004)
        keep = np.ceil(float(fraction) * S - 1e-9).astype(np.int64)
    else:
        arr = np.asarray(steps)
        if arr.dtype.kind not in "iu" or (arr.ndim == 1 and arr.shape[0] != len(S)) or arr.ndim > 1:
            raise ValueError(f"steps must be a positive integer or one positive integer per trajectory "
                             f"({len(S)}), got {steps!r}")
        if np.any(arr < 1):
            raise ValueError(f"steps must be >= 1 (a prefix has at least one step), got {steps!r}")
        keep = np.broadcast_to(arr.astype(np.int64), S.shape)
    return np.minimum(np.maximum(keep, 1), S)


def prefixes(ts: TraceSet, steps=None, *, fraction: float | None = None) -> TraceSet:
    """The trace set of the prefixes: the first steps of every run, which keeps its id, metadata and label.

    ``prefixes(ts, 3)`` cuts every trajectory after its third step (a run with fewer steps stays whole: it had
    already finished by then); ``prefixes(ts, fraction=0.5)`` keeps ceil(0.5 * S) steps of a run of S steps
    (at least one); an array gives each trajectory its own number of steps.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    steps : int or array-like of int of shape (n_trajectories,), optional
        The number of steps to keep (>= 1). Give exactly one of ``steps`` and ``fraction``.
    fraction : float in (0, 1], optional
        The share of each run's steps to keep, rounded up.

    Returns
    -------
    TraceSet
        One prefix per trajectory, in the same order.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.traces.prefix import prefixes
    >>> ts, _ = htc.load("sample_runs/_examples/strings_Gemma3-270M-sampled-t0.7.jsonl")
    >>> early = prefixes(ts, 1)
    >>> early
    TraceSet(trajectories=8, steps=8, tokens=171, k=5)
    >>> bool((early.ids == ts.ids).all()), bool((early.labels == ts.labels).all())
    (True, True)
    >>> prefixes(ts, fraction=0.5).steps_per_trajectory[:3].tolist()
    [2, 1, 1]
    """
    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    keep = prefix_lengths(ts, steps, fraction=fraction)
    runs = np.arange(ts.n_trajectories)
    return _gather(ts, runs, keep, ts.meta_taken(runs))


def prefix_pairs(ts: TraceSet, runs, lengths) -> TraceSet:
    """The prefix of ``lengths[j]`` steps of trajectory ``runs[j]`` for each j, in that order.

    A run may come several times, with several lengths. Gathered straight from ``ts``: the cost is the size of
    the prefixes written, not of the runs they come from (``ts.take`` first would copy a long run once per
    prefix).

    Parameters
    ----------
    ts : TraceSet
        The runs.
    runs : array-like of int
        Trajectory positions.
    lengths : array-like of int
        Steps to keep (>= 1; capped at the run's length), one per entry of ``runs``.

    Returns
    -------
    TraceSet
        One prefix per pair, with the metadata and label of its run.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.traces.prefix import prefix_pairs
    >>> ts, _ = htc.load("sample_runs/_examples/strings_Gemma3-270M-sampled-t0.7.jsonl")
    >>> growing = prefix_pairs(ts, runs=[0, 0, 0, 0], lengths=[1, 2, 3, 4])
    >>> growing.steps_per_trajectory.tolist(), len(set(growing.ids))
    ([1, 2, 3, 4], 1)
    """
    runs = np.asarray(runs, dtype=np.int64).reshape(-1)
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if runs.shape != lengths.shape:
        raise ValueError(f"runs and lengths differ in length ({runs.size} vs {lengths.size})")
    if runs.size and (runs.min() < 0 or runs.max() >= ts.n_trajectories):
        raise IndexError(f"trajectory index out of range for a set of {ts.n_trajectories}")
    if np.any(lengths < 1):
        raise ValueError("lengths must be >= 1 (a prefix has at least one step)")
    keep = np.minimum(lengths, ts.steps_per_trajectory[runs])
    return _gather(ts, runs, keep, ts.meta_taken(runs))


def _gather(ts: TraceSet, runs: np.ndarray, keep: np.ndarray, meta) -> TraceSet:
    s_start = ts.traj_offsets[runs]
    step_idx = concat_ranges(s_start, s_start + keep)
    t_start = ts.step_offsets[step_idx]
    t_stop = ts.step_offsets[step_idx + 1]
    tok_idx = concat_ranges(t_start, t_stop)
    return TraceSet(
        logprob=ts.logprob[tok_idx],
        top_logprobs=ts.top_logprobs[tok_idx],
        step_offsets=np.concatenate([[0], np.cumsum(t_stop - t_start)]),
        traj_offsets=np.concatenate([[0], np.cumsum(keep)]),
        meta=meta,
        step_name=ts.step_name[step_idx],
        step_text=ts.step_text[step_idx],
        tokens=None if ts.tokens is None else ts.tokens[tok_idx],
        top_tokens=None if ts.top_tokens is None else ts.top_tokens[tok_idx],
        step_fields={k: v[step_idx] for k, v in ts.step_fields.items()},
    )
