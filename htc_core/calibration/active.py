"""Which runs to label next, when the goal is calibrated confidence (not only a better ranking).

The loop (the dashboard's Label page, ``htc label next``, a notebook): the runs' features ``X``, the labels so far
(NaN = unlabeled) and a prior (the GAC). :func:`queue_step` adapts the prior to the labels (``HTCCalibrator(prior=...)``,
as ``htc fit --prior gac``), scores every run with the adapted model, and proposes the next ``n`` runs.

Strategies (:data:`STRATEGIES`), all seeded, never proposing a labeled run:

- ``stratified`` (the default): the runs' current confidences are cut into ``n_bins`` equal-mass bins; each next
  run comes from the bin with the fewest labels so far, relative to its share of the runs (ties: the bin whose
  labeled accuracy is least certain, ``sqrt(p(1-p)/(n+1))``), a random unlabeled run inside it. The labels cover the
  whole confidence range in proportion, so the refitted slope and intercept rest on every part of it and the labeled
  runs stay representative (the bootstrap estimate of the ECE needs no weights). Measured with the leave-one-out refit
  on fresh seeds 300-319 (docs/labeling.md): at 30 labels 0.104 vs 0.116 for random order on the sample runs,
  0.101 vs 0.104 on the foreign HotpotQA runs (on seeds 300-304: 0.098 vs 0.116 and 0.102 vs 0.076);
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
- ``refit``: labels that shrink the adapted model's own uncertainty where the runs are: the same density-weighted
  I-optimal design, in the refit's full parameter space (every weight, with the pull toward the prior the refit
  chose as the prior precision; :func:`refit_variance`). Needs the current model and the runs' features
  (``select(..., model=, X=)``; :func:`queue_step` passes them). Measured: worse than random order at 10-40 labels
  (it chases the runs with the most leverage on the 48 weights; fresh seeds 300-319, 30 labels: 0.125 vs 0.116 on
  the sample runs, 0.170 vs 0.104 on HotpotQA), about level from 50-60 labels;
- ``mixed``: half of each batch by ``calibration``'s Neyman allocation, the other half uniformly at random (every
  run keeps a chance of being picked). Measured on dev seeds 100-119 at 30 labels: 0.112 vs random 0.110 on the
  sample runs, 0.109 vs 0.106 on HotpotQA (docs/labeling.md);
- ``random``: uniform over the unlabeled runs (the baseline of the benchmark);
- ``uncertainty``: the unlabeled runs closest to confidence 0.5 (classic uncertainty sampling, for comparison).

:func:`out_of_fold` scores each labeled run with the prior adapted to the other labeled runs; what those scores say
about the adapted model (ECE and AUROC with a bootstrap interval, the ECE corrected for the noise of the labels, and
when to stop labeling) is :mod:`htc_core.calibration.label_estimate`.
``python -m htc_dev.bench label_queue`` compares the strategies, running
:func:`queue_step`, the same loop as the page and ``htc label next``.

**Weights.** A sample drawn unevenly over the confidence bins (Neyman allocation, a mix) is not a miniature of the
run set. :func:`label_weights` gives each labeled run the inverse of its chance of being picked, stratified over
the prior's confidence bins (``N_h / n_h``: classic stratified estimation), and :func:`queue_step` can weigh the
refit's loss by them (``weighted=True``; ``adapt.fit_with_prior(..., sample_weight=)``). Measured (docs/labeling.md,
dev seeds 100-119): weighting the refit never helped at 30 labels (stratified 0.105 -> 0.104 on the sample runs,
Neyman 0.109 -> 0.119, random 0.110 -> 0.122): the picks depend on the runs' features only, so the refit, a model
of the outcome given the features, is not biased by them, and the weights only add variance. No strategy is
weighted by default (:data:`WEIGHTED`). :func:`~htc_core.calibration.label_estimate.estimate` takes the same
weights: the ECE of every run rather than of the labeled ones.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from .calibrators import HTCCalibrator

__all__ = ["STRATEGIES", "DEFAULT_STRATEGY", "WEIGHTED", "label_weights", "step_weights", "VARIANCE_SHARPNESS",
           "variance_reduction", "refit_variance", "REFIT_SHARPNESS", "select", "queue_step", "QueueStep",
           "adapt_to_labels", "linear_prior", "out_of_fold", "confidence_bins"]

STRATEGIES = ("stratified", "calibration", "mixed", "variance", "refit", "random", "uncertainty")
# the strategy the page and ``htc label next`` use (docs/labeling.md: the better of the two bin strategies measured)
DEFAULT_STRATEGY = "stratified"
# the strategies whose labels are weighted in the refit by default (the inverse of their chance of being picked,
# :func:`label_weights`; ``queue_step(..., weighted=)`` overrides it); measured in docs/labeling.md
WEIGHTED = ()
# labels of each outcome needed before the prior is adapted (fewer: the prior's own scores drive the queue)
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
           n_bins: int = 10, model=None, X=None, sharpness: float | None = None) -> np.ndarray:
    """Positions of the next (at most) ``n`` runs to label, in the order to label them.

    Never a labeled run; seeded. The strategies are described in the module docstring. Every order draws from one
    random key per run (the same keys for the same seed): ``random`` takes the smallest keys, the bin strategies the
    smallest key inside the bin they choose, so two orders compared on one seed share most of their draws.

    Parameters
    ----------
    scores : array-like of shape (n_runs,)
        The current confidence of every run.
    labeled : array-like of bool, shape (n_runs,)
        True where a run already has a label.
    n : int, default=10
        How many runs to propose (fewer when fewer are unlabeled).
    strategy : {"stratified", "calibration", "variance", "refit", "random", "uncertainty"}, default="stratified"
        How to choose them.
    seed : int, default=42
        Seed of the random choices.
    n_bins : int, default=10
        Equal-mass confidence bins of the bin strategies.
    model : HTCCalibrator, optional
        The current model (needed by ``refit`` only, with ``X``; see :func:`refit_variance`).
    X : FeatureMatrix, DataFrame or array, optional
        Every run's features (``refit`` only).
    sharpness : float, optional
        The exponent of ``variance`` and ``refit`` (None: :data:`VARIANCE_SHARPNESS` / :data:`REFIT_SHARPNESS`).

    Returns
    -------
    ndarray of int64
        Positions into ``scores``.

    Raises
    ------
    ValueError
        Bad arguments, or ``refit`` without ``model`` and ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.active import select
    >>> scores = np.linspace(0.05, 0.95, 10)
    >>> labeled = np.arange(10) < 2                       # runs 0 and 1 are labeled
    >>> select(scores, labeled, 3)
    array([4, 5, 3])
    >>> select(scores, labeled, 3, strategy="uncertainty")  # closest to 0.5 first
    array([5, 4, 6])
    """
    s, lab = _check(scores, labeled, n, strategy, n_bins)
    rng = np.random.default_rng(seed)
    keys = rng.random(len(s))              # one random key per run, drawn first: common to every strategy
    free = np.flatnonzero(~lab)
    n = min(int(n), len(free))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if strategy == "random":
        return free[np.argsort(keys[free], kind="stable")[:n]].astype(np.int64)
    if strategy == "uncertainty":
        order = np.lexsort((rng.random(len(free)), np.abs(s[free] - 0.5)))
        return free[order[:n]].astype(np.int64)
    if strategy == "variance":
        return variance_reduction(s, lab, n, rng, sharpness=sharpness)
    if strategy == "refit":
        if model is None or X is None:
            raise ValueError("strategy 'refit' needs the current model and the runs' features (model=..., X=...)")
        return refit_variance(model, X, lab, n, rng, sharpness=sharpness)
    if strategy == "mixed":
        return _mixed(s, lab, n, n_bins, keys)
    return _stratified(s, lab, n, keys, n_bins, weighted=strategy == "calibration")


def _mixed(s, lab, n, n_bins, keys) -> np.ndarray:
    """Half of the ``n`` runs by Neyman allocation over the bins (``calibration``), the other half uniformly from
    the remaining unlabeled runs, interleaved (Neyman first)."""
    half = (n + 1) // 2
    first = _stratified(s, lab, half, keys, n_bins, weighted=True)
    taken = lab.copy()
    taken[first] = True
    left = np.flatnonzero(~taken)
    rest = left[np.argsort(keys[left], kind="stable")][: n - len(first)]
    out = np.empty(len(first) + len(rest), dtype=np.int64)
    k = min(len(first), len(rest))
    out[0:2 * k:2], out[1:2 * k:2] = first[:k], rest[:k]
    out[2 * k:] = np.concatenate([first[k:], rest[k:]])
    return out


def confidence_bins(scores: np.ndarray, n_bins: int) -> np.ndarray:
    """The equal-mass bin of every score (ties broken by position, so bins are as equal as can be).

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Confidences.
    n_bins : int
        Number of bins.

    Returns
    -------
    ndarray of int64, shape (n,)
        The bin of each score, 0 (lowest scores) to ``n_bins - 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.active import confidence_bins
    >>> confidence_bins(np.array([0.9, 0.1, 0.5, 0.3]), 2)
    array([1, 0, 1, 0])
    """
    order = np.argsort(scores, kind="stable")
    b = np.empty(len(scores), dtype=np.int64)
    b[order] = (np.arange(len(scores)) * n_bins) // max(len(scores), 1)
    return b


def label_weights(scores, labeled, n_bins: int = 10) -> np.ndarray:
    """Inverse-probability weights of the labeled runs, stratified over the confidence bins (classic stratified
    estimation): a labeled run of stratum ``h`` weighs ``N_h / n_h``, the stratum's runs over its labeled runs, so
    a labeled set drawn unevenly over the bins (Neyman allocation, a mix, or chance) stands for every run; the
    weights of a proportional draw are all about ``N / n``. The strata are the ``n_bins`` equal-mass bins of
    ``scores`` (:func:`confidence_bins`); a bin without a label is merged into the next bin up that has one (the
    top ones into the highest with a label), so the weights always sum to the number of runs.

    Parameters
    ----------
    scores : array-like of shape (n_runs,)
        The confidence that defines the strata (the page and ``htc label next`` use the prior's, fixed over the
        loop).
    labeled : array-like of bool, shape (n_runs,)
        True where a run has a label (success or failure).
    n_bins : int, default=10
        Equal-mass bins (1: every labeled run weighs ``N / n``).

    Returns
    -------
    ndarray of shape (n_runs,)
        The weight of each labeled run, 0 where unlabeled (all 0 without a label).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.active import label_weights
    >>> scores = np.linspace(0.05, 0.95, 8)
    >>> label_weights(scores, [True, False, False, False, True, True, True, False], n_bins=2)
    array([4.        , 0.        , 0.        , 0.        , 1.33333333,
           1.33333333, 1.33333333, 0.        ])
    """
    s, lab = _check(scores, labeled, 1, "random", n_bins)
    out = np.zeros(len(s))
    if not lab.any():
        return out
    k = int(min(n_bins, len(s)))
    b = confidence_bins(s, k)
    have = np.flatnonzero(np.bincount(b[lab], minlength=k) > 0)
    stratum = have[np.minimum(np.searchsorted(have, np.arange(k)), len(have) - 1)][b]
    size, got = np.bincount(stratum, minlength=k), np.bincount(stratum[lab], minlength=k)
    out[lab] = size[stratum[lab]] / got[stratum[lab]]
    return out


def _stratified(s, lab, n, keys, n_bins, *, weighted: bool) -> np.ndarray:
    """Each next run from the bin furthest below its share; inside a bin, the unlabeled run with the smallest
    ``keys`` (the random keys ``random`` order takes globally, so both orders share their draws)."""
    k = int(min(n_bins, len(s)))
    b = confidence_bins(s, k)
    mass = np.bincount(b, minlength=k) / len(s)
    p = np.clip(np.bincount(b, weights=s, minlength=k) / np.maximum(np.bincount(b, minlength=k), 1), 1e-3, 1 - 1e-3)
    share = mass * np.sqrt(p * (1 - p)) if weighted else mass
    share = share / share.sum()
    have = np.bincount(b[lab], minlength=k).astype(np.float64)
    pools = []
    for j in range(k):
        q = np.flatnonzero((b == j) & ~lab)
        pools.append(list(q[np.argsort(-keys[q], kind="stable")]))      # pop() takes the smallest key
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


# how sharply :func:`variance_reduction` prefers the runs whose label reduces the variance most: each next run is
# drawn with probability proportional to ``gain ** VARIANCE_SHARPNESS`` (0: random order; large: the greedy
# I-optimal design, which piles its labels on two logits and trusts the linear recalibration completely). Chosen on
# development seeds 100-119 (0.5, 1, 2, 3 tried), never on the reported ones (docs/labeling.md)
VARIANCE_SHARPNESS = 1.0


def variance_reduction(scores, labeled, n: int, rng, *, sharpness: float | None = None) -> np.ndarray:
    """Labels that shrink the variance of the calibrated probability where the runs are: for the recalibration
    ``p = sigmoid(c + a * t)`` on the runs' current logits ``t`` (what the refit from the prior mostly adjusts), a
    run's gain is the expected reduction of ``mean over all runs of (p (1 - p))^2 u' M^-1 u`` (``u = (1, t)``; ``M``
    the Fisher information of the labels so far, ``sum p (1 - p) u u'``, plus the refit's own pull toward the
    prior, :data:`~htc_core.calibration.adapt.RECAL_PENALTY` times the identity) once its label is in (Sherman-
    Morrison). The mean over the runs is what makes it aim at the ECE, itself an average over the runs, where a
    D-optimal design chases the extremes. Each next run is drawn with probability ``gain ** sharpness`` (see
    ``VARIANCE_SHARPNESS``), then ``M`` is updated.

    Parameters
    ----------
    scores : array-like of shape (n_runs,)
        The current confidence of every run.
    labeled : array-like of bool, shape (n_runs,)
        True where a run already has a label.
    n : int
        How many runs to propose (fewer when fewer are unlabeled).
    rng : numpy.random.Generator
        The random draws.
    sharpness : float, optional
        The exponent of the gain (default ``VARIANCE_SHARPNESS``, 1; 0 is random order).

    Returns
    -------
    ndarray of int64
        Positions into ``scores``, in the order to label them.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.active import variance_reduction
    >>> scores = np.linspace(0.05, 0.95, 10)
    >>> variance_reduction(scores, np.arange(10) < 2, 3, np.random.default_rng(0))
    array([7, 4, 2])
    """
    from .adapt import RECAL_PENALTY

    k = VARIANCE_SHARPNESS if sharpness is None else float(sharpness)
    s = np.clip(np.asarray(scores, dtype=np.float64), 1e-4, 1 - 1e-4)
    t = np.log(s / (1 - s))
    u = np.column_stack([np.ones_like(t), t])
    return _i_optimal_draws(u, s * (1 - s), np.asarray(labeled, dtype=bool), RECAL_PENALTY * np.ones(2), n, rng, k)


def _i_optimal_draws(u, w, lab, pen, n, rng, k) -> np.ndarray:
    """Draw ``n`` unlabeled rows, each with probability ``gain ** k``: the expected reduction of the mean over all
    rows of ``w^2 u' M^-1 u`` (the delta-method variance of the probability) once the row's label is in, with ``M``
    the posterior precision ``diag(pen) + sum over labeled rows of w u u'`` (updated after each draw)."""
    A = (u * (w ** 2)[:, None]).T @ u / len(w)
    M = np.diag(pen) + (u[lab] * w[lab, None]).T @ u[lab]
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


# how sharply :func:`refit_variance` prefers the runs whose label shrinks the refit's uncertainty most (as
# :data:`VARIANCE_SHARPNESS`); chosen on development seeds 100-119 (docs/labeling.md)
REFIT_SHARPNESS = 1.0


def refit_variance(model, X, labeled, n: int, rng, *, sharpness: float | None = None) -> np.ndarray:
    """Positions of the next ``n`` runs to label, aimed at the adapted model's own uncertainty.

    The refit (:mod:`~htc_core.calibration.adapt`) is a logistic model on the prior's standardized features with a
    Gaussian prior: precision ``lambda`` on the weights (the pull toward the prior the refit chose; the largest of
    :data:`~htc_core.calibration.adapt.DEFAULT_STRENGTHS` while it keeps the prior or only recalibrates it) and
    :data:`~htc_core.calibration.adapt.RECAL_PENALTY` on the intercept. Its Laplace posterior gives every run's
    predicted probability a variance; a run's gain is how much its label is expected to reduce that variance
    averaged over all runs (a density-weighted, I-optimal design in the refit's full parameter space, the
    generalization of :func:`variance_reduction` from the two recalibration parameters to every weight). Each next
    run is drawn with probability ``gain ** sharpness`` and the posterior updated before the next draw.

    Parameters
    ----------
    model : HTCCalibrator
        The current model: the prior itself or the prior adapted to the labels so far (its ``mean_``/``scale_``
        standardize ``X``; ``adaptation_["lambda"]`` is the chosen pull).
    X : array-like or FeatureMatrix
        Every run's features, in the columns the model reads.
    labeled : array-like of bool
        True where a run already has a label.
    n : int
        How many runs to propose.
    rng : numpy.random.Generator
        The source of the draws.
    sharpness : float, optional
        Exponent of the gain (None: :data:`REFIT_SHARPNESS`); 0 is random order.

    Returns
    -------
    ndarray of int
        Positions into ``X``, never a labeled one, in the order to label them.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.calibration.active import refit_variance
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    >>> model = HTCCalibrator(alphas=(1.0,)).fit(X, y)
    >>> lab = np.zeros(200, dtype=bool); lab[:20] = True
    >>> pos = refit_variance(model, X, lab, 5, np.random.default_rng(1))
    >>> len(pos), bool(lab[pos].any())
    (5, False)
    """
    from .adapt import DEFAULT_STRENGTHS, RECAL_PENALTY

    k = REFIT_SHARPNESS if sharpness is None else float(sharpness)
    lab = np.asarray(labeled, dtype=bool).reshape(-1)
    p = np.clip(_scores(model, X), 1e-4, 1 - 1e-4)
    if len(p) != len(lab):
        raise ValueError(f"labeled must have one value per run of X ({len(p)}), got {len(lab)}")
    lam = (getattr(model, "adaptation_", None) or {}).get("lambda") or max(DEFAULT_STRENGTHS)
    unit = copy.copy(model)
    unit.coef_ = np.ones_like(model.coef_)
    Z = np.asarray(unit.contributions(X), dtype=np.float64)     # the standardized features, the model's columns
    u = np.column_stack([Z, np.ones(len(p))])
    pen = np.append(np.full(Z.shape[1], float(lam)), float(RECAL_PENALTY))
    return _i_optimal_draws(u, p * (1 - p), lab, pen, n, rng, k)


# ------------------------------------------------------------------ the loop
def linear_prior(prior, X):
    """The linear HTC model to adapt from and to score ``X`` with.

    That is ``prior`` itself, or a GAC's sub-model for the features of ``X`` (a FeatureMatrix: its profile and
    top-k; see :func:`~htc_core.calibration.adapt.resolve_prior`).

    Parameters
    ----------
    prior : HTCCalibrator, GeneralCalibrator, str or path
        A fitted HTC model, a GAC, a shipped model name or a model file.
    X : FeatureMatrix, DataFrame or array
        The runs' features.

    Returns
    -------
    HTCCalibrator
        The fitted linear model.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.active import linear_prior
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> linear_prior("gac", htc.extract(ts)).profile_
    'paper'
    >>> linear_prior("gac", htc.extract(ts, profile="chosen")).profile_
    'chosen'
    """
    from .adapt import resolve_prior

    if isinstance(prior, HTCCalibrator) and hasattr(prior, "coef_"):
        return prior
    of = (str(X.profile), int(X.top_k)) if hasattr(X, "profile") and hasattr(X, "top_k") else None
    return resolve_prior(prior, HTCCalibrator, of)[0]


def adapt_to_labels(X, y, prior, *, random_state: int = 42, weights=None):
    """The prior adapted to the labeled runs; the prior itself while the labels lack an outcome.

    Parameters
    ----------
    X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
        Every run's features.
    y : array-like of shape (n_runs,)
        Labels, NaN where unlabeled.
    prior : HTCCalibrator, GeneralCalibrator, str or path
        The prior (see :func:`linear_prior`).
    random_state : int, default=42
        Seed of the adaptation's inner CV.
    weights : array-like of shape (n_runs,), optional
        Each labeled run's weight in the refit (:func:`label_weights`; unlabeled entries are ignored); None: every
        label counts once.

    Returns
    -------
    model : HTCCalibrator
        The adapted model (or the prior).
    adapted : bool
        False while the labels hold fewer than ``MIN_PER_CLASS`` (1) runs of an outcome.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> X = htc.extract(ts)
    >>> y = np.full(len(ts), np.nan)          # NaN: not labeled yet
    >>> y[:20] = ts.labels[:20]               # the first 20 runs are labeled
    >>> from htc_core.calibration.active import adapt_to_labels
    >>> model, adapted = adapt_to_labels(X, y, "gac")
    >>> adapted, model.profile_, "choice" in model.adaptation_
    (True, 'paper', True)
    >>> adapt_to_labels(X, np.full(len(ts), np.nan), "gac")[1]
    False
    """
    y = np.asarray(y, dtype=np.float64)
    prior = linear_prior(prior, X)
    have = np.isfinite(y)
    pos = int(np.sum(y[have] == 1))
    if min(pos, int(have.sum()) - pos) < MIN_PER_CLASS:
        return prior, False
    rows = np.flatnonzero(have)
    est = HTCCalibrator(prior=prior, random_state=random_state)
    if weights is None:
        return est.fit(_take(X, rows), y[rows]), True
    from .adapt import fit_with_prior
    from .blas_threads import one_blas_thread

    with one_blas_thread():
        w = np.asarray(weights, dtype=np.float64)[rows]
        return fit_with_prior(est, _take(X, rows), y[rows], sample_weight=w), True


def _take(X, rows):
    return X.take(rows) if hasattr(X, "take") and not isinstance(X, np.ndarray) else np.asarray(X)[rows]


def _n_rows(X) -> int:
    return int(X.shape[0]) if hasattr(X, "shape") else len(X)


def _scores(model, X) -> np.ndarray:
    return np.asarray(model.predict_proba(X)[:, 1], dtype=np.float64)


@dataclass
class QueueStep:
    """One step of the loop: the proposed positions, every run's current confidence, the model that gave it.

    Made by :func:`queue_step`.

    Parameters
    ----------
    positions : ndarray of int64
        The runs to label next, in order.
    scores : ndarray of shape (n_runs,)
        Every run's current confidence.
    model : HTCCalibrator
        The model that gave them (the adapted prior, or the prior).
    adapted : bool
        Whether the prior was adapted to the labels.
    n_labeled : int
        Labels so far.
    strategy : str
        The strategy used.
    notes : list of str, default=[]
        What the step could not do and why.
    weights : ndarray of shape (n_runs,) or None, default=None
        The labels' weights in the refit (:func:`step_weights`), None when unweighted.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> X = htc.extract(ts)
    >>> y = np.full(len(ts), np.nan)          # NaN: not labeled yet
    >>> y[:20] = ts.labels[:20]               # the first 20 runs are labeled
    >>> from htc_core.calibration.active import queue_step
    >>> step = queue_step(X, y, "gac", n=5)
    >>> step.n_labeled, step.adapted, step.strategy, len(step.positions)
    (20, True, 'stratified', 5)
    """

    positions: np.ndarray
    scores: np.ndarray
    model: object
    adapted: bool
    n_labeled: int
    strategy: str
    notes: list = field(default_factory=list)
    weights: np.ndarray | None = None


def step_weights(X, y, prior, strategy: str, weighted: bool | None = None, n_bins: int = 10):
    """The refit's weights of a loop step: :func:`label_weights` over the prior's confidence bins when
    ``weighted`` (None: ``strategy in WEIGHTED``), else None (every label counts once).

    Parameters
    ----------
    X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
        Every run's features.
    y : array-like of shape (n_runs,)
        Labels so far, NaN where unlabeled.
    prior : HTCCalibrator
        The linear prior (:func:`linear_prior`).
    strategy : str
        The strategy that picked the labels.
    weighted : bool, optional
        Weight the labels (None: the strategy's default, :data:`WEIGHTED`).
    n_bins : int, default=10
        The strata.

    Returns
    -------
    ndarray of shape (n_runs,) or None

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.calibration.active import linear_prior, step_weights
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> X = htc.extract(ts)
    >>> y = np.full(len(ts), np.nan)
    >>> y[:20] = ts.labels[:20]
    >>> w = step_weights(X, y, linear_prior("gac", X), "calibration", weighted=True)
    >>> round(float(w.sum()), 6), step_weights(X, y, linear_prior("gac", X), "random") is None
    (250.0, True)
    """
    if not (strategy in WEIGHTED if weighted is None else weighted):
        return None
    return label_weights(_scores(prior, X), np.isfinite(np.asarray(y, dtype=np.float64)), n_bins)


def queue_step(X, y, prior, *, n: int = 10, strategy: str = DEFAULT_STRATEGY, seed: int = 42,
               n_bins: int = 10, weighted: bool | None = None, sharpness: float | None = None) -> QueueStep:
    """Adapt a prior to the labels so far and propose the next runs to label.

    Parameters
    ----------
    X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
        Every run's features.
    y : array-like of shape (n_runs,)
        Labels so far, NaN where unlabeled.
    prior : HTCCalibrator, GeneralCalibrator, str or path
        The prior (see :func:`linear_prior`), e.g. ``"gac"``.
    n : int, default=10
        How many runs to propose.
    strategy : str, default="stratified"
        One of ``STRATEGIES`` (see :func:`select`).
    seed : int, default=42
        Seed of the adaptation and the choice.
    n_bins : int, default=10
        Equal-mass confidence bins of the bin strategies (and the strata of the weights).
    weighted : bool, optional
        Weight each label by the inverse of its chance of being picked in the refit (:func:`step_weights`;
        None: the strategy's default, :data:`WEIGHTED`).
    sharpness : float, optional
        The exponent of ``variance`` and ``refit`` (see :func:`select`).

    Returns
    -------
    QueueStep
        The proposed positions, every run's confidence and the model.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> X = htc.extract(ts)
    >>> y = np.full(len(ts), np.nan)          # NaN: not labeled yet
    >>> y[:20] = ts.labels[:20]               # the first 20 runs are labeled
    >>> from htc_core.calibration.active import queue_step
    >>> step = queue_step(X, y, "gac", n=5)
    >>> bool(np.isnan(y[step.positions]).all()), step.scores.shape
    (True, (250,))
    """
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    prior = linear_prior(prior, X)
    if len(y) != _n_rows(X):
        raise ValueError(f"y must have one value per run of X ({_n_rows(X)}), got {len(y)}")
    weights = step_weights(X, y, prior, strategy, weighted, n_bins)
    model, adapted = adapt_to_labels(X, y, prior, random_state=seed, weights=weights)
    s = _scores(model, X)
    if len(s) != len(y):
        raise ValueError(f"y must have one value per run of X ({len(s)}), got {len(y)}")
    pos = select(s, np.isfinite(y), n, strategy=strategy, seed=seed + int(np.isfinite(y).sum()), n_bins=n_bins,
                 model=model, X=X, sharpness=sharpness)
    notes = [] if adapted else ["the labels hold one outcome only (or none): the prior's scores pick the runs"]
    return QueueStep(pos, s, model, adapted, int(np.isfinite(y).sum()), strategy, notes, weights)


# ------------------------------------------------------------ out-of-fold confidences of the labeled runs
def out_of_fold(X, y, prior, *, folds: int = 5, seed: int = 42, weights=None) -> np.ndarray:
    """Each labeled run's confidence from the prior adapted to the *other* labeled runs.

    Parameters
    ----------
    X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
        Every run's features.
    y : array-like of shape (n_runs,)
        Labels, NaN where unlabeled.
    prior : HTCCalibrator, GeneralCalibrator, str or path
        The prior (see :func:`linear_prior`).
    folds : int, default=5
        Folds over the labeled runs (at most one per labeled run).
    seed : int, default=42
        Seed of the folds and the adaptations.
    weights : array-like of shape (n_runs,), optional
        The labels' weights in each fold's refit (:func:`step_weights`), None: unweighted.

    Returns
    -------
    ndarray of shape (n_runs,)
        The out-of-fold confidence of each labeled run, NaN where unlabeled (all NaN below 2 labels).

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> X = htc.extract(ts)
    >>> y = np.full(len(ts), np.nan)          # NaN: not labeled yet
    >>> y[:20] = ts.labels[:20]               # the first 20 runs are labeled
    >>> from htc_core.calibration.active import out_of_fold
    >>> oof = out_of_fold(X, y, "gac", folds=3)
    >>> int(np.isfinite(oof).sum()), bool(np.isnan(oof[20:]).all())
    (20, True)
    """
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
        model, _ = adapt_to_labels(X, yy, prior, random_state=seed, weights=weights)
        out[te] = _scores(model, _take(X, te))
    return out
