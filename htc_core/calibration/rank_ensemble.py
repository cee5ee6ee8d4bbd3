"""Label-free evaluation and aggregation of rankers on one run set (SUMMA-style spectral estimates).

Several scores rank the same runs (the GAC's logit, the training-free signals of
:mod:`htc_core.calibration.transfer_methods`); which ranks best varies from run set to run set, and a user with
unlabeled runs cannot measure it. Under the assumption that the rankers are *conditionally independent given
the label*, their rank covariance tells it without labels (Ahsen, Vogel & Stolovitzky, "Unsupervised evaluation
and weighted aggregation of ranked classification predictions", JMLR 2019; Parisi et al., "Ranking and
combining multiple predictors without labeled data", PNAS 2014, for the spectral meta-learner):

- each score is turned into ranks scaled to (0, 1), ``r = rank / n``;
- for a score with AUROC ``A``, ``E[r | success] - E[r | failure] = A - 1/2`` (exactly, for the population's
  ranks), so for two conditionally independent rankers ``cov(r_i, r_j) = rho (1 - rho) (A_i - 1/2)(A_j - 1/2)``
  with ``rho`` the success rate: the off-diagonal of the rank covariance matrix is rank one;
- its leading vector, fitted to the off-diagonal entries only (:func:`rank_one_fit`), is
  ``u = sqrt(rho (1 - rho)) (A - 1/2)``; ``rho`` is not identified by second moments, so it is taken from an
  estimate of the base rate (the GAC's mean calibrated confidence) and every ``A_i`` follows
  (:func:`estimate_auroc`). The ranking of the rankers does not depend on ``rho``;
- the optimal linear combination of conditionally independent rank scores (Fisher's discriminant with a
  diagonal within-class covariance) weighs each by ``(A_i - 1/2) / var(r_i | class)``, where
  ``var(r_i | class) = 1/12 - rho (1 - rho) (A_i - 1/2)^2`` (:func:`ensemble_weights`).

Real rankers built from the same tokens are *not* conditionally independent: their shared dependence inflates
their covariance and with it their estimated AUROC. :func:`estimate_auroc` reports the fit's residual, and
:mod:`htc_core.experiments.transfer_lofo` measures how well the estimates match the true AUROCs leave-one-family-out
before any of this is trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["scaled_ranks", "rank_one_fit", "RankerEstimate", "estimate_auroc", "ensemble_weights", "combine_ranks",
           "consensus_agreement", "RANKERS", "usable_columns", "rank_mean", "reorder",
           "fit_rank_mean_platt", "check_set_level", "apply_set_level", "bimodality_coefficient",
           "choose_by_bimodality"]


def scaled_ranks(S) -> np.ndarray:
    """Each column of ``S`` as its ranks scaled into (0, 1].

    Ties share their mean rank; NaN gets 0.5 after the finite values are ranked. Every column then has mean
    about 1/2 and variance about 1/12.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_rankers) or (n_runs,)
        The scores, larger = more confident.

    Returns
    -------
    ndarray of shape (n_runs, n_rankers)

    Examples
    --------
    >>> from htc_core.calibration.rank_ensemble import scaled_ranks
    >>> scaled_ranks([[3.0, 1.0], [1.0, float("nan")], [2.0, 2.0]]).tolist()
    [[1.0, 0.5], [0.3333333333333333, 0.5], [0.6666666666666666, 1.0]]
    """
    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    R = np.full(S.shape, 0.5)
    for j in range(S.shape[1]):
        ok = np.isfinite(S[:, j])
        if ok.sum():
            R[ok, j] = average_ranks(S[ok, j]) / ok.sum()
    return R


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of the finite values ``x``, ties sharing their mean rank (scipy's ``rankdata`` "average",
    the same numbers: a tie group at sorted positions s..e-1 gets (s + 1 + e) / 2), with numpy alone so that
    scoring a run set imports no scipy."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], len(xs)]
    out = np.empty(len(xs))
    out[order] = np.repeat(0.5 * (starts + ends + 1), ends - starts)
    return out


def rank_one_fit(C: np.ndarray, *, n_iter: int = 200, tol: float = 1e-12) -> tuple[np.ndarray, float]:
    """The vector whose outer product ``u u^T`` best fits the off-diagonal entries of a symmetric matrix.

    Least squares on the off-diagonal entries only: started from the leading eigenvector of ``C`` with its
    diagonal replaced, then each ``u_i`` refitted in turn given the others until none moves; ``u`` is signed so
    that ``sum(u) >= 0``.

    Parameters
    ----------
    C : ndarray of shape (k, k)
        A symmetric matrix, k >= 3 (the rankers' rank covariance).
    n_iter : int, default=200
        The most sweeps over the entries.
    tol : float, default=1e-12
        Stop when no entry of ``|u|`` moves by more.

    Returns
    -------
    u : ndarray of shape (k,)
    residual : float
        The root mean square of the off-diagonal misfit relative to that of the off-diagonal (0: exactly rank one).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.rank_ensemble import rank_one_fit
    >>> u, residual = rank_one_fit(np.outer([3, 2, 1], [3, 2, 1]) + np.eye(3))
    >>> np.round(u, 6).tolist(), residual < 1e-9
    ([3.0, 2.0, 1.0], True)
    """
    C = np.asarray(C, dtype=np.float64)
    k = C.shape[0]
    if k < 3:
        raise ValueError(f"a rank-one fit of the off-diagonal needs at least 3 rankers, got {k}")
    off = ~np.eye(k, dtype=bool)
    M = C.copy()
    np.fill_diagonal(M, np.abs(C[off]).reshape(k, k - 1).max(axis=1))
    w, V = np.linalg.eigh(M)
    u = V[:, -1] * np.sqrt(max(w[-1], 0.0))
    for _ in range(n_iter):
        # each u_i in turn: the exact least-squares fit of row i's off-diagonal given the others
        old = u.copy()
        for i in range(k):
            o = np.arange(k) != i
            den = float(u[o] @ u[o])
            u[i] = float(C[i, o] @ u[o]) / den if den > 0 else 0.0
        if np.max(np.abs(u - old)) < tol:
            break
    if u.sum() < 0:
        u = -u
    scale = np.sqrt(np.mean(C[off] ** 2))
    resid = float(np.sqrt(np.mean((C - np.outer(u, u))[off] ** 2)) / scale) if scale > 0 else float("nan")
    return u, resid


@dataclass
class RankerEstimate:
    """Label-free estimates for the rankers (columns) of one run set (what :func:`estimate_auroc` returns).

    Parameters
    ----------
    auroc : ndarray
        The estimated AUROC of each ranker, clipped into [0, 1].
    u : ndarray
        The rank-one vector, ``sqrt(rho (1 - rho)) (AUROC - 1/2)``.
    residual : float
        The relative misfit of the off-diagonal (0 = exactly rank one).
    rate : float
        The base rate used to scale ``u`` into AUROCs.
    n : int
        The runs.
    names : list, default=[]
        The rankers' names.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.rank_ensemble import RankerEstimate
    >>> RankerEstimate(np.array([0.7]), np.array([0.1]), 0.0, 0.5, 10, ["a"]).to_dict()["auroc"]
    {'a': 0.7}
    """

    auroc: np.ndarray                  # estimated AUROC of each ranker, clipped into [0, 1]
    u: np.ndarray                      # the rank-one vector, sqrt(rho (1 - rho)) (AUROC - 1/2)
    residual: float                    # relative misfit of the off-diagonal (0 = exactly rank one)
    rate: float                        # the base rate used to scale u into AUROCs
    n: int
    names: list = field(default_factory=list)

    @property
    def raw(self) -> np.ndarray:
        """The estimates before clipping (above 1 where shared dependence inflates a ranker's covariance).

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.rank_ensemble import RankerEstimate
        >>> RankerEstimate(np.array([1.0]), np.array([0.4]), 0.0, 0.5, 10).raw.tolist()
        [1.3]
        """
        return 0.5 + self.u / np.sqrt(self.rate * (1 - self.rate))

    def to_dict(self) -> dict:
        """The estimates as a JSON object.

        Returns
        -------
        dict
            ``auroc`` (name -> estimate), ``residual``, ``rate``, ``n``.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.rank_ensemble import RankerEstimate
        >>> sorted(RankerEstimate(np.array([0.7]), np.array([0.1]), 0.0, 0.5, 10, ["a"]).to_dict())
        ['auroc', 'n', 'rate', 'residual']
        """
        return {"auroc": {str(k): round(float(v), 4) for k, v in zip(self.names, self.auroc)},
                "residual": round(self.residual, 4), "rate": round(self.rate, 4), "n": self.n}


def estimate_auroc(S, rate: float, *, names=None) -> RankerEstimate:
    """Each column's AUROC on this run set, estimated without labels from the rank covariance.

    Sound where the rankers are conditionally independent given the label (module docstring).

    Parameters
    ----------
    S : array-like of shape (n_runs, n_rankers)
        The scores, n_rankers >= 3 and n_runs >= 3.
    rate : float
        An estimate of the success rate (clipped to [0.05, 0.95]); it scales the estimates, not their order.
    names : sequence of str, optional
        The rankers' names.

    Returns
    -------
    RankerEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.rank_ensemble import estimate_auroc
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(6000) < 0.4
    >>> S = rng.standard_normal((6000, 4)) + y[:, None] * np.array([0.36, 0.74, 1.19, 1.81])
    >>> np.round(estimate_auroc(S, rate=0.4).auroc, 2).tolist()    # true: 0.60, 0.70, 0.80, 0.90
    [0.62, 0.7, 0.8, 0.91]
    """
    R = scaled_ranks(S)
    if R.shape[0] < 3:
        raise ValueError(f"estimating AUROCs needs at least 3 runs, got {R.shape[0]}")
    rho = float(np.clip(rate, 0.05, 0.95))
    u, resid = rank_one_fit(np.cov(R, rowvar=False))
    a = np.clip(0.5 + u / np.sqrt(rho * (1 - rho)), 0.0, 1.0)
    return RankerEstimate(a, u, resid, rho, int(R.shape[0]), list(names) if names is not None
                          else [str(i) for i in range(R.shape[1])])


def ensemble_weights(est: RankerEstimate) -> np.ndarray:
    """Non-negative weights of the rank scores: ``(A_i - 1/2) / var(r_i | class)``, normalized to sum 1.

    Fisher's discriminant for conditionally independent rankers; a ranker estimated at or below chance gets 0,
    and when all are, every ranker gets the same weight.

    Parameters
    ----------
    est : RankerEstimate
        From :func:`estimate_auroc`.

    Returns
    -------
    ndarray of shape (n_rankers,)

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.rank_ensemble import RankerEstimate, ensemble_weights
    >>> est = RankerEstimate(np.array([0.5, 0.7, 0.9]), np.zeros(3), 0.0, 0.5, 100)
    >>> np.round(ensemble_weights(est), 3).tolist()
    [0.0, 0.228, 0.772]
    """
    d = np.maximum(est.auroc - 0.5, 0.0)
    var = np.maximum(1.0 / 12.0 - est.rate * (1 - est.rate) * d ** 2, 1e-3)
    w = d / var
    return w / w.sum() if w.sum() > 0 else np.full(len(w), 1.0 / len(w))


def combine_ranks(S, weights) -> np.ndarray:
    """The weighted mean of the columns' scaled ranks (:func:`scaled_ranks`): the ensemble's score per run.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_rankers)
        The scores.
    weights : array-like of shape (n_rankers,)
        E.g. :func:`ensemble_weights`.

    Returns
    -------
    ndarray of shape (n_runs,)

    Examples
    --------
    >>> from htc_core.calibration.rank_ensemble import combine_ranks
    >>> combine_ranks([[1.0, 3.0], [2.0, 1.0], [3.0, 2.0]], [0.5, 0.5]).round(3).tolist()
    [0.667, 0.5, 0.833]
    """
    return scaled_ranks(S) @ np.asarray(weights, dtype=np.float64)


def consensus_agreement(S) -> np.ndarray:
    """Each column's Spearman correlation with the mean rank of the other columns.

    Under conditional independence, the ranker that agrees most with the consensus is the better one.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_rankers)
        The scores.

    Returns
    -------
    ndarray of shape (n_rankers,)

    Examples
    --------
    >>> from htc_core.calibration.rank_ensemble import consensus_agreement
    >>> consensus_agreement([[1, 1, 3], [2, 2, 1], [3, 3, 2]]).round(2).tolist()
    [0.5, 0.5, -0.5]
    """
    R = scaled_ranks(S)
    k = R.shape[1]
    out = np.empty(k)
    for j in range(k):
        rest = np.delete(R, j, axis=1).mean(axis=1)
        out[j] = np.corrcoef(R[:, j], rest)[0, 1] if R[:, j].std() > 0 and rest.std() > 0 else 0.0
    return out


def bimodality_coefficient(S) -> np.ndarray:
    """Sarle's bimodality coefficient of each column's finite values: ``(g**2 + 1) / (k + 3 (n-1)**2 / ((n-2)(n-3)))``.

    ``g`` is the sample skewness and ``k`` the excess kurtosis, both bias-corrected (SAS's estimators). A normal
    sample gives about 1/3, a uniform one 5/9, two equal point masses 1: above 5/9 suggests two modes. A score
    that splits a run set into its successes and failures is a mixture of two components, and the further apart
    they are, the higher the coefficient; that is the idea of :func:`choose_by_bimodality`, whose worth on real
    runs is measured, not assumed (``python -m htc_dev.bench gac_rank``).

    Parameters
    ----------
    S : array-like of shape (n_runs, n_columns) or (n_runs,)
        The scores (NaN: left out of that column).

    Returns
    -------
    ndarray of shape (n_columns,)
        NaN for a column with fewer than 4 finite values or no spread.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.rank_ensemble import bimodality_coefficient
    >>> x = np.r_[np.zeros(50), np.ones(50)]
    >>> bimodality_coefficient(np.column_stack([x, np.arange(100.0)])).round(3).tolist()
    [0.951, 0.528]
    """
    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    out = np.full(S.shape[1], np.nan)
    for j in range(S.shape[1]):
        v = S[np.isfinite(S[:, j]), j]
        n = v.size
        if n < 4 or float(v.max() - v.min()) <= 0:
            continue
        d = v - v.mean()
        m2, m3, m4 = (d ** 2).mean(), (d ** 3).mean(), (d ** 4).mean()
        g = np.sqrt(n * (n - 1)) / (n - 2) * m3 / m2 ** 1.5
        k = (n - 1) / ((n - 2) * (n - 3)) * ((n + 1) * (m4 / m2 ** 2 - 3) + 6)
        out[j] = (g ** 2 + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
    return out


def choose_by_bimodality(S, *, default: int | None = None, margin: float = 0.0) -> int:
    """The column of ``S`` whose scores are the most bimodal on this run set (:func:`bimodality_coefficient`):
    a label-free choice of the ranker to trust.

    Only :func:`usable_columns` compete. With ``default``, that column is kept unless another's coefficient
    exceeds its own by more than ``margin``.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_columns)
        The scores of one run set, larger = more confident, each on the scale its calibration map reads (the
        logit of a probability, minus an entropy as it is).
    default : int, optional
        The column to keep unless another is clearly more bimodal (also the answer when no column is usable).
    margin : float, default=0.0
        How much higher another column's coefficient must be.

    Returns
    -------
    int
        The chosen column.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.rank_ensemble import choose_by_bimodality
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(400) < 0.4
    >>> S = np.column_stack([rng.normal(size=400), rng.normal(size=400) + 4 * y])   # column 1 splits the runs
    >>> choose_by_bimodality(S), choose_by_bimodality(S, default=0, margin=1.0)
    (1, 0)
    """
    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    bc = np.where(usable_columns(S), bimodality_coefficient(S), np.nan)
    if not np.isfinite(bc).any():
        return 0 if default is None else int(default)
    best = int(np.nanargmax(bc))
    if default is None or not np.isfinite(bc[default]):
        return best
    return best if bc[best] > bc[default] + margin else int(default)


# the rankers of a run set: the GAC's (transferred) logit, then the training-free signals' scores
RANKERS = ("gac", "seq_prob", "min_prob", "neg_entropy")


def usable_columns(S, *, min_share: float = 0.9) -> np.ndarray:
    """Which columns can rank this run set: finite on at least ``min_share`` of the runs and not constant there.

    A ranker undefined or flat on the set (e.g. the entropy of runs without top-k alternatives) is left out.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_rankers)
        The scores (NaN: undefined).
    min_share : float, default=0.9
        The share of runs a column must be finite on.

    Returns
    -------
    ndarray of bool, shape (n_rankers,)

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.rank_ensemble import usable_columns
    >>> usable_columns([[1.0, np.nan, 5.0], [2.0, np.nan, 5.0]]).tolist()
    [True, False, False]
    """
    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    ok = np.isfinite(S)
    out = ok.mean(axis=0) >= min_share if len(S) else np.zeros(S.shape[1], dtype=bool)
    for j in np.flatnonzero(out):
        v = S[ok[:, j], j]
        out[j] = v.size > 1 and float(v.max() - v.min()) > 0
    return out


def rank_mean(S) -> np.ndarray:
    """The equal-weight mean of the usable columns' scaled ranks (:func:`usable_columns`, :func:`scaled_ranks`).

    Clipped into [1/(2n), 1 - 1/(2n)] so that its logit is finite; 1/2 for every run when no column is usable.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_rankers)
        The scores.

    Returns
    -------
    ndarray of shape (n_runs,)

    Examples
    --------
    >>> from htc_core.calibration.rank_ensemble import rank_mean
    >>> rank_mean([[1.0, 2.0], [2.0, 1.0], [3.0, 3.0]]).round(3).tolist()
    [0.5, 0.5, 0.833]
    """
    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    n = len(S)
    use = usable_columns(S)
    if not use.any():
        return np.full(n, 0.5)
    r = scaled_ranks(S[:, use]).mean(axis=1)
    return np.clip(r, 0.5 / n, 1 - 0.5 / n)


def reorder(p, score) -> np.ndarray:
    """The values of ``p`` handed out in the order of ``score``: the k-th smallest score gets the k-th smallest p.

    The set keeps its confidences; the ranking becomes ``score``'s.

    Parameters
    ----------
    p : array-like of shape (n_runs,)
        Confidences.
    score : array-like of shape (n_runs,)
        The new ranking.

    Returns
    -------
    ndarray of shape (n_runs,)

    Examples
    --------
    >>> from htc_core.calibration.rank_ensemble import reorder
    >>> reorder([0.9, 0.1, 0.5], [1.0, 3.0, 2.0]).tolist()
    [0.1, 0.9, 0.5]
    """
    p = np.sort(np.asarray(p, dtype=np.float64))
    order = np.argsort(np.asarray(score, dtype=np.float64), kind="stable")
    out = np.empty_like(p)
    out[order] = p
    return out


def fit_rank_mean_platt(S, y, sets) -> tuple[float, float]:
    """The Platt map ``sigmoid(a logit(rank_mean) + b)`` of the within-set mean rank, by log loss.

    Each run's :func:`rank_mean` is computed within its own set, as it will be on a scored set.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_rankers)
        The scores of every training run.
    y : array-like of shape (n_runs,)
        0/1 labels.
    sets : array-like of shape (n_runs,)
        The set of each run (e.g. its training family).

    Returns
    -------
    a, b : float

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.rank_ensemble import fit_rank_mean_platt
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(2000) < 0.5).astype(float)
    >>> S = rng.standard_normal((2000, 3)) + y[:, None]
    >>> a, b = fit_rank_mean_platt(S, y, np.repeat(np.arange(20), 100))
    >>> bool(a > 1)
    True
    """
    from .transfer_methods import logit, weighted_platt

    S = np.asarray(S, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    sets = np.asarray(sets, dtype=object)
    r, yy = [], []
    for s_ in sorted(set(sets.tolist()), key=str):
        m = sets == s_
        r.append(rank_mean(S[m]))
        yy.append(y[m])
    return weighted_platt(logit(np.concatenate(r)), np.concatenate(yy))


def check_set_level(e, check_ranker=None) -> dict | None:
    """A GAC transfer's ``set_level`` entry, checked.

    Parameters
    ----------
    e : dict or None
        ``{"method": "rank-mean-platt", "coef": [a, b], "min_runs": int >= 3, "ranker": a per-run transfer entry}``
        (a ``nearest-family`` entry is checked by :func:`htc_core.calibration.signal_choice.check_entry`).
    check_ranker : callable, optional
        Validates the ranker entry (the GAC's ``check_transfer``).

    Returns
    -------
    dict or None
        The entry with float coefficients; None for None.

    Raises
    ------
    ValueError
        Saying what is wrong, for anything else.

    Examples
    --------
    >>> from htc_core.calibration.rank_ensemble import check_set_level
    >>> ranker = {"method": "stack-oof", "signal": "min_prob", "coef": [1, 1, 0]}
    >>> check_set_level({"method": "rank-mean-platt", "coef": [1, 0], "min_runs": 50, "ranker": ranker})["coef"]
    [1.0, 0.0]
    """
    import math

    if e is None:
        return None
    ok = (isinstance(e, dict) and e.get("method") == "rank-mean-platt" and isinstance(e.get("coef"), list)
          and len(e["coef"]) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                          for v in e["coef"])
          and isinstance(e.get("min_runs"), int) and not isinstance(e.get("min_runs"), bool) and e["min_runs"] >= 3
          and isinstance(e.get("ranker"), dict) and "set_level" not in e["ranker"])
    if not ok:
        raise ValueError("'transfer.set_level' must be {'method': 'rank-mean-platt', 'coef': [a, b], 'min_runs': "
                         "int >= 3, 'ranker': a transfer entry without set_level} or a 'nearest-family' entry, "
                         f"got {e!r}")
    ranker = check_ranker(e["ranker"]) if check_ranker is not None else e["ranker"]
    return {**e, "coef": [float(v) for v in e["coef"]], "ranker": ranker}


def apply_set_level(entry: dict, z, sig, kinds) -> np.ndarray | None:
    """The confidences of one scored run set by a ``set_level`` entry (:func:`check_set_level`).

    The mean rank, within this set, of the entry's ranker and the training-free signals, through the entry's
    Platt map.

    Parameters
    ----------
    entry : dict
        The checked ``set_level`` entry.
    z : array-like of shape (n_runs,)
        The routed model's logit of each run (the ranker's transfer is applied to it).
    sig : DataFrame or dict of ndarray
        The runs' training-free signals (:func:`~.transfer_methods.training_free_signals`).
    kinds : array-like of shape (n_runs,)
        Each run's sub-model (``"with_alternatives"`` / ``"without_alternatives"``).

    Returns
    -------
    ndarray of shape (n_runs,) or None
        None when the set holds fewer than ``min_runs`` runs (the caller keeps its per-run confidences).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from htc_core.calibration.rank_ensemble import apply_set_level
    >>> entry = {"method": "rank-mean-platt", "coef": [1.0, 0.0], "min_runs": 3,
    ...          "ranker": {"method": "stack-oof", "signal": "min_prob", "coef": [1.0, 1.0, 0.0]}}
    >>> sig = pd.DataFrame({"seq_prob": [0.5, 0.6, 0.9], "min_prob": [0.1, 0.2, 0.8], "neg_entropy": [-2, -1, -0.5]})
    >>> apply_set_level(entry, np.zeros(3), sig, ["with_alternatives"] * 3).round(3).tolist()
    [0.333, 0.667, 0.833]
    """
    from .transfer_methods import apply_transfer, logit, sigmoid, signal_matrix

    z = np.asarray(z, dtype=np.float64)
    if len(z) < entry["min_runs"]:
        return None
    r = entry["ranker"]
    # the ranker's score is its per-run confidence (through the sigmoid and back), so that ranking a set from
    # stored per-run confidences gives the same ties (GeneralCalibrator.rescore_as_set)
    zs = logit(sigmoid(apply_transfer(r, z, np.asarray(sig[r["signal"]]), kinds)))
    a, b = entry["coef"]
    return sigmoid(a * logit(rank_mean(np.column_stack([zs, signal_matrix(sig)]))) + b)
