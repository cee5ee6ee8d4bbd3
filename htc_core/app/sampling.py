"""How many runs the dashboard's cross-validated computations use at scale, and the stratified sample they use.

Decision (issue 17): a nested cross-validation of a million runs has no place in a page (hours on two cores,
for metrics whose standard error at 20,000 runs is already below 0.005). Above :data:`EVAL_CAP` labeled runs the
honest evaluation (and the early-warning prefixes) run on a stratified random sample of that many labeled runs,
the same success rate as the selection, seeded so every session and restart gets the same rows; the fitted
calibrators use at most :data:`FIT_CAP` runs the same way and then score every run. The pages say so.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EVAL_CAP", "FIT_CAP", "stratified_sample"]

#: most labeled runs of the cross-validated evaluation shown on the pages
EVAL_CAP = 20_000
#: most labeled runs a calibrator shown on the pages is fitted on (it then scores every run)
FIT_CAP = 100_000


def stratified_sample(positions: np.ndarray, labels: np.ndarray, cap: int, *, seed: int = 0) -> np.ndarray:
    """``positions`` when there are at most ``cap``; else ``cap`` of them with the success rate of all (each
    class sampled in proportion, at least one of each), sorted. ``labels`` are the labels at ``positions``."""
    pos = np.asarray(positions, dtype=np.int64)
    y = np.asarray(labels, dtype=np.float64)
    if y.shape != pos.shape:
        raise ValueError(f"labels must have one value per position ({pos.shape}), got {y.shape}")
    if not isinstance(cap, (int, np.integer)) or cap < 2:
        raise ValueError(f"cap must be an integer of at least 2, got {cap!r}")
    if len(pos) <= cap:
        return pos
    rng = np.random.default_rng(seed)
    pos1, pos0 = pos[y == 1], pos[y != 1]
    n1 = int(round(cap * len(pos1) / len(pos)))
    n1 = min(len(pos1), max(1 if len(pos1) else 0, n1))
    n0 = min(len(pos0), cap - n1)
    chosen = np.concatenate([rng.choice(pos1, n1, replace=False), rng.choice(pos0, n0, replace=False)])
    return np.sort(chosen)
