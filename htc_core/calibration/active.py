"""Which runs to label next, when the goal is calibrated confidence (not only a better ranking).

The loop (the dashboard's Label page, ``htc label next``, a notebook): the runs' features ``X``, the labels so far
(NaN = unlabeled) and a prior (the GAC). :func:`queue_step` adapts the prior to the labels (``HTCCalibrator(prior=...)``,
as ``htc fit --prior gac``), scores every run with the adapted model, and proposes the next ``n`` runs.

Strategies (:data:`STRATEGIES`), all seeded, never proposing a labeled run:

- ``stratified`` (the default): the runs' current confidences are cut into ``n_bins`` equal-mass bins; each next
  run comes from the bin with the fewest labels so far, relative to its share of the runs (ties: the bin whose
  labeled accuracy is least certain, ``sqrt(p(1-p)/(n+1))``), a random unlabeled run inside it. The labels cover the
  whole confidence range in proportion, so the refitted slope and intercept rest on every part of it and the labeled
  runs stay representative (the bootstrap estimate below needs no weights). Measured on fresh seeds 200-219
  (docs/labeling.md): at 10 labels clearly lower adapted ECE than random order (0.137 vs 0.174 on the sample
  runs), at 30 labels within the noise (sample runs 0.109 vs 0.112, foreign HotpotQA 0.127 vs 0.110);
- ``calibration``: like ``stratified``, but each bin's share is weighted by its expected reduction of calibration
  error: the standard error of its accuracy estimate ``sqrt(p(1-p))`` times its mass (Neyman allocation for the
  ECE, whose error is the mass-weighted error of the bins' accuracies). Measured: at 30 labels 0.033 lower than
  random on HotpotQA, +0.005 on the sample runs; worse than random at 10 labels and, on fresh seeds, from 70 on
  (the middle bins keep getting labels once every bin is known); a floor
  of one label per bin first, and a sequential D-optimal design for the refit's slope and intercept, were both
  worse at 30 labels and are not offered;
- ``variance``: labels that shrink the variance of the recalibrated probability where the runs are (a density-
  weighted, I-optimal design for the slope and intercept of the logit, drawn in proportion to each run's gain:
  :func:`variance_reduction`). Its one setting, :data:`VARIANCE_SHARPNESS`, was chosen on development seeds
  100-119; on them it was not better than random order at 30 labels (docs/labeling.md);
- ``random``: uniform over the unlabeled runs (the baseline of the benchmark);
- ``uncertainty``: the unlabeled runs closest to confidence 0.5 (classic uncertainty sampling, for comparison).

:func:`estimate` gives ECE and AUROC of the adapted model with a bootstrap interval over the labels so far, from
out-of-fold predictions (each labeled run scored by a model fitted without it); :func:`stop_suggestion` says when
the ECE interval is narrow enough. ``python -m htc_dev.bench label_queue`` compares the strategies.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .calibrators import HTCCalibrator
from .metrics import auroc, expected_calibration_error

__all__ = ["STRATEGIES", "DEFAULT_STRATEGY", "VARIANCE_SHARPNESS", "variance_reduction", "select", "queue_step", "QueueStep", "estimate", "Estimate",
           "stop_suggestion", "adapt_to_labels", "linear_prior", "out_of_fold", "confidence_bins"]

STRATEGIES = ("stratified", "calibration", "variance", "random", "uncertainty")
#: the strategy the page and ``htc label next`` use (docs/labeling.md: the better of the two bin strategies measured)
DEFAULT_STRATEGY = "stratified"
#: labels of each outcome needed before the prior is adapted (fewer: the prior's own scores drive the queue)
MIN_PER_CLASS = 1


def _check(scores, labeled, n, strategy, n_bins) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    lab = np.asarray(labeled, dtype=bool).reshape(-1)
    if s.shape != lab.shape:
        raise ValueError(f"scores and labeled must have the same length, got {len(s)} and {len(lab)}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    return s, lab


def select(scores, labeled, n: int = 10, *, strategy: str = DEFAULT_STRATEGY, seed: int = 42,
           n_bins: int = 10) -> np.ndarray:
    """Positions of the next (at most) ``n`` runs to label, in the order to label them (module docstring).
    ``scores``: the current confidence of every run; ``labeled``: True where a run already has a label."""
    s, lab = _check(scores, labeled, n, strategy, n_bins)
    rng = np.random.default_rng(seed)
    free = np.flatnonzero(~lab)
    n = min(int(n), len(free))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if strategy == "random":
        return rng.permutation(free)[:n].astype(np.int64)
    if strategy == "uncertainty":
        order = np.lexsort((rng.random(len(free)), np.abs(s[free] - 0.5)))
        return free[order[:n]].astype(np.int64)
    if strategy == "variance":
        return variance_reduction(s, lab, n, rng)
    return _stratified(s, lab, n, rng, n_bins, weighted=strategy == "calibration")


def confidence_bins(scores: np.ndarray, n_bins: int) -> np.ndarray:
    """The equal-mass bin (0..n_bins-1) of every score (ties broken by position, so bins are as equal as can be)."""
    order = np.argsort(scores, kind="stable")
    b = np.empty(len(scores), dtype=np.int64)
    b[order] = (np.arange(len(scores)) * n_bins) // max(len(scores), 1)
    return b


def _stratified(s, lab, n, rng, n_bins, *, weighted: bool) -> np.ndarray:
    k = int(min(n_bins, len(s)))
    b = confidence_bins(s, k)
    mass = np.bincount(b, minlength=k) / len(s)
    p = np.clip(np.bincount(b, weights=s, minlength=k) / np.maximum(np.bincount(b, minlength=k), 1), 1e-3, 1 - 1e-3)
    share = mass * np.sqrt(p * (1 - p)) if weighted else mass
    share = share / share.sum()
    have = np.bincount(b[lab], minlength=k).astype(np.float64)
    pools = [list(rng.permutation(np.flatnonzero((b == j) & ~lab))) for j in range(k)]
    out = []
    for _ in range(n):
        total = have.sum() + 1
        deficit = share * total - have                       # labels a bin lacks against its share
        spread = np.sqrt(p * (1 - p) / (have + 1))
        open_ = np.array([len(q) > 0 for q in pools])
        key = np.where(open_, deficit + 1e-6 * spread, -np.inf)
        j = int(np.argmax(key))
        out.append(pools[j].pop())
        have[j] += 1
    return np.asarray(out, dtype=np.int64)


#: how sharply :func:`variance_reduction` prefers the runs whose label reduces the variance most: each next run is
#: drawn with probability proportional to ``gain ** VARIANCE_SHARPNESS`` (0: random order; large: the greedy
#: I-optimal design, which piles its labels on two logits and trusts the linear recalibration completely). Chosen on
#: development seeds 100-119 (0.5, 1, 2, 3 tried), never on the reported ones (docs/labeling.md)
VARIANCE_SHARPNESS = 1.0


def variance_reduction(scores, labeled, n: int, rng, *, sharpness: float | None = None) -> np.ndarray:
    """Labels that shrink the variance of the calibrated probability where the runs are: for the recalibration
    ``p = sigmoid(c + a * t)`` on the runs' current logits ``t`` (what the refit from the prior mostly adjusts), a
    run's gain is the expected reduction of ``mean over all runs of (p (1 - p))^2 u' M^-1 u`` (``u = (1, t)``; ``M``
    the Fisher information of the labels so far, ``sum p (1 - p) u u'``, plus the refit's own pull toward the
    prior, :data:`~htc_core.calibration.adapt.RECAL_PENALTY` times the identity) once its label is in (Sherman-
    Morrison). The mean over the runs is what makes it aim at the ECE, itself an average over the runs, where a
    D-optimal design chases the extremes. Each next run is drawn with probability ``gain ** sharpness`` (see
    :data:`VARIANCE_SHARPNESS`), then ``M`` is updated."""
    from .adapt import RECAL_PENALTY

    k = VARIANCE_SHARPNESS if sharpness is None else float(sharpness)
    s = np.clip(np.asarray(scores, dtype=np.float64), 1e-4, 1 - 1e-4)
    t = np.log(s / (1 - s))
    u = np.column_stack([np.ones_like(t), t])
    w = s * (1 - s)
    lab = np.asarray(labeled, dtype=bool)
    A = (u * (w ** 2)[:, None]).T @ u / len(t)
    M = RECAL_PENALTY * np.eye(2) + (u[lab] * w[lab, None]).T @ u[lab]
    free = np.flatnonzero(~lab)
    out = []
    for _ in range(min(n, len(free))):
        Mi = np.linalg.inv(M)
        uf = u[free]
        num = np.einsum("ij,jk,ik->i", uf, Mi @ A @ Mi, uf)
        gain = w[free] * num / (1 + w[free] * np.einsum("ij,jk,ik->i", uf, Mi, uf))
        g = np.maximum(gain / max(gain.max(), 1e-300), 1e-12) ** k
        j = int(rng.choice(len(free), p=g / g.sum()))
        i = int(free[j])
        out.append(i)
        M = M + w[i] * np.outer(u[i], u[i])
        free = np.delete(free, j)
    return np.asarray(out, dtype=np.int64)


# ------------------------------------------------------------------ the loop
def linear_prior(prior, X):
    """The linear HTC model to adapt from and to score ``X`` with: ``prior`` itself, or a GAC's sub-model for the
    features of ``X`` (a FeatureMatrix: its profile and top-k; see :func:`~htc_core.calibration.adapt.resolve_prior`)."""
    from .adapt import resolve_prior

    if isinstance(prior, HTCCalibrator) and hasattr(prior, "coef_"):
        return prior
    of = (str(X.profile), int(X.top_k)) if hasattr(X, "profile") and hasattr(X, "top_k") else None
    return resolve_prior(prior, HTCCalibrator, of)[0]


def adapt_to_labels(X, y, prior, *, random_state: int = 42):
    """The prior adapted to the labeled runs (NaN in ``y`` = unlabeled); the prior itself while the labels hold
    fewer than :data:`MIN_PER_CLASS` runs of an outcome. Returns (model, whether it was adapted)."""
    y = np.asarray(y, dtype=np.float64)
    prior = linear_prior(prior, X)
    have = np.isfinite(y)
    pos = int(np.sum(y[have] == 1))
    if min(pos, int(have.sum()) - pos) < MIN_PER_CLASS:
        return prior, False
    rows = np.flatnonzero(have)
    return HTCCalibrator(prior=prior, random_state=random_state).fit(_take(X, rows), y[rows]), True


def _take(X, rows):
    return X.take(rows) if hasattr(X, "take") and not isinstance(X, np.ndarray) else np.asarray(X)[rows]


def _scores(model, X) -> np.ndarray:
    return np.asarray(model.predict_proba(X)[:, 1], dtype=np.float64)


@dataclass
class QueueStep:
    """One step of the loop: the proposed positions, every run's current confidence, the model that gave it."""

    positions: np.ndarray
    scores: np.ndarray
    model: object
    adapted: bool
    n_labeled: int
    strategy: str
    notes: list = field(default_factory=list)


def queue_step(X, y, prior, *, n: int = 10, strategy: str = DEFAULT_STRATEGY, seed: int = 42,
               n_bins: int = 10) -> QueueStep:
    """Adapt ``prior`` to the labels so far (``y``, NaN = unlabeled) and propose the next ``n`` runs of ``X``."""
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    prior = linear_prior(prior, X)
    model, adapted = adapt_to_labels(X, y, prior, random_state=seed)
    s = _scores(model, X)
    if len(s) != len(y):
        raise ValueError(f"y must have one value per run of X ({len(s)}), got {len(y)}")
    pos = select(s, np.isfinite(y), n, strategy=strategy, seed=seed + int(np.isfinite(y).sum()), n_bins=n_bins)
    notes = [] if adapted else ["the labels hold one outcome only (or none): the prior's scores pick the runs"]
    return QueueStep(pos, s, model, adapted, int(np.isfinite(y).sum()), strategy, notes)


# ------------------------------------------------------------ the estimate
@dataclass
class Estimate:
    """ECE and AUROC of the adapted model on the labels so far (out-of-fold), with bootstrap intervals."""

    n: int
    ece: float
    ece_low: float
    ece_high: float
    auroc: float
    auroc_low: float
    auroc_high: float
    oof: np.ndarray

    @property
    def ece_width(self) -> float:
        return float(self.ece_high - self.ece_low)

    def to_dict(self) -> dict:
        return {k: (None if not np.isfinite(v) else float(v)) if isinstance(v, float) else v
                for k, v in self.__dict__.items() if k != "oof"}


def out_of_fold(X, y, prior, *, folds: int = 5, seed: int = 42) -> np.ndarray:
    """Each labeled run's confidence from the prior adapted to the *other* labeled runs (NaN where unlabeled)."""
    y = np.asarray(y, dtype=np.float64)
    prior = linear_prior(prior, X)
    rows = np.flatnonzero(np.isfinite(y))
    out = np.full(len(y), np.nan)
    k = int(min(folds, len(rows)))
    if k < 2:
        return out
    fold = np.random.default_rng(seed).permutation(len(rows)) % k
    for f in range(k):
        tr, te = rows[fold != f], rows[fold == f]
        yy = np.full(len(y), np.nan)
        yy[tr] = y[tr]
        model, _ = adapt_to_labels(X, yy, prior, random_state=seed)
        out[te] = _scores(model, _take(X, te))
    return out


def estimate(y, oof, *, n_boot: int = 200, random_state=42, level: float = 0.9, seed=None) -> Estimate:
    """ECE and AUROC of out-of-fold confidences ``oof`` on labels ``y`` (both NaN where unlabeled), with a
    percentile bootstrap interval (``level``) over the labeled runs: both metrics from the same resamples
    (HTC's one bootstrap engine, :func:`~htc_core.calibration.bootstrap.percentile_intervals`; resamples with
    one outcome are left out of the AUROC's). ``seed`` is the deprecated old name of ``random_state``."""
    from .bootstrap import check_resampling, percentile_intervals, renamed_seed

    n_boot, level = check_resampling(n_boot, level)
    random_state = renamed_seed(seed, random_state)
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(oof, dtype=np.float64)
    m = np.isfinite(y) & np.isfinite(p)
    yy, pp = y[m], p[m]
    nan = float("nan")
    if len(yy) < 2:
        return Estimate(len(yy), nan, nan, nan, nan, nan, nan, p)

    def stat(idx):
        return np.array([[expected_calibration_error(yy[d], pp[d]) for d in idx], [auroc(yy[d], pp[d]) for d in idx]])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = percentile_intervals(stat, (len(yy),), n_boot=n_boot, level=level, random_state=random_state)
    return Estimate(len(yy), *iv.triple(0), *iv.triple(1), p)


def stop_suggestion(est: Estimate, *, width: float = 0.05, min_labels: int = 20) -> str:
    """A sentence: keep labeling, or enough labels for the ECE to be known within ``width``."""
    if est.n < min_labels or not np.isfinite(est.ece_width):
        return f"keep labeling: {est.n} labels so far; the estimate needs at least {min_labels}"
    if est.ece_width <= width:
        return (f"enough labels: the ECE interval is {est.ece_width:.3f} wide (narrower than {width:g}) after "
                f"{est.n} labels")
    return f"keep labeling: the ECE interval is {est.ece_width:.3f} wide after {est.n} labels (target {width:g})"
