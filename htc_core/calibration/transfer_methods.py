"""Ways to carry a calibrator to a run set without its labels (the GAC's transfer candidates).

Each is a small, separately testable step on arrays; :mod:`htc_core.experiments.transfer_lofo` compares
them leave-one-family-out and the shipped GAC holds the one that won there (its card says which).

- :func:`target_standardized_logit` (test-time standardization): the model's weights applied to features
  standardized with the *scored* runs' own mean and standard deviation instead of the training ones, so a
  shift of a feature's location or scale between run sets does not move the logit.
- :func:`em_prior` / :func:`prior_adjust` (label shift, Saerens, Latinne & Decaestecker 2002): the
  confidences p(y=1|x) of a model trained at base rate pi_s are re-weighted for an unknown target base
  rate pi_t, estimated by EM on the unlabeled scored runs:
  ``p_t(x) = (pi_t/pi_s) p / ((pi_t/pi_s) p + ((1-pi_t)/(1-pi_s)) (1-p))`` and ``pi_t = mean p_t(x)``.
- :func:`domain_weights` (covariate shift): a logistic domain classifier tells training runs from scored
  runs; each training run gets the weight ``P(target|x) / P(source|x) * n_s / n_t`` (clipped, mean 1), and
  the model's logit is re-fitted by a weighted Platt step on the training runs (:func:`weighted_platt`).
- :func:`training_free_signals` and :func:`stack_logits`: the raw signals uncertainty toolkits ship
  (length-normalized sequence probability, minimum token probability, minus the mean entropy of the top-k
  alternatives), and a logistic stack of the model's logit with one such signal's logit, so the combined
  score ranks at least as the signal does wherever the signal carries the ranking (:func:`stack_scores`: with
  all three signals at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

# apply_transfer, signal_scores and signal_matrix serve the GAC's file and its training; logit and sigmoid are the shared
# clipped helpers: plain names for those modules, not entry points
__all__ = ["SIGNALS", "STACKABLE", "training_free_signals", "RunningSignals", "target_standardized_logit", "EMPrior",
           "em_prior", "prior_adjust", "domain_weights", "weighted_platt", "stack_logits", "stack_scores"]

# the training-free signals: column -> what it is
SIGNALS = {"seq_prob": "length-normalized sequence probability (geometric mean of the chosen tokens' probabilities)",
           "min_prob": "minimum chosen-token probability over all steps",
           "neg_entropy": "minus the mean entropy of the renormalized top-k alternatives over all steps"}
# the signals that are probabilities, so that a stack may take their logit (minus an entropy is not one)
STACKABLE = ("seq_prob", "min_prob")
EPS = 1e-6


def logit(p) -> np.ndarray:
    """``log(p / (1 - p))`` with ``p`` clipped to ``[1e-6, 1 - 1e-6]`` (finite for 0 and 1)."""
    p = np.clip(np.asarray(p, dtype=np.float64), EPS, 1 - EPS)
    return np.log(p) - np.log1p(-p)


def sigmoid(z) -> np.ndarray:
    """``1 / (1 + exp(-z))``, computed without overflow for large ``|z|``."""
    z = np.asarray(z, dtype=np.float64)
    return np.where(z >= 0, 1.0 / (1.0 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))))


def training_free_signals(ts) -> pd.DataFrame:
    """Per run: ``seq_prob``, ``min_prob`` and ``neg_entropy`` (NaN where a run has no tokens, or no top-k
    alternatives for the entropy), from the chosen tokens' logprobs over all steps.

    Parameters
    ----------
    ts : TraceSet
        The runs.

    Returns
    -------
    DataFrame
        One row per run, one column per signal of ``SIGNALS``: the geometric mean of the chosen tokens'
        probabilities, the lowest of them, and minus the mean entropy of the renormalized top-k alternatives.

    Examples
    --------
    Run ``a`` has token probabilities 0.9 and 0.5 with alternatives; run ``b`` one token of 0.2 and none:

    >>> import htc_core as htc
    >>> from htc_core.calibration.transfer_methods import training_free_signals
    >>> runs = (b'{"id": "a", "steps": [{"logprobs": [-0.105, -0.693],'
    ...         b' "top_logprobs": [[-0.105, -2.4], [-0.693, -0.693]]}]}\\n'
    ...         b'{"id": "b", "steps": [{"logprobs": [-1.609]}]}')
    >>> ts, _ = htc.load_bytes(runs, name="two.jsonl")
    >>> training_free_signals(ts).round(2)
       seq_prob  min_prob  neg_entropy
    0      0.67       0.5         -0.5
    1      0.20       0.2          NaN
    """
    import pandas as pd

    return pd.DataFrame(training_free_signal_arrays(ts))


def training_free_signal_arrays(ts) -> dict:
    """The columns of :func:`training_free_signals` as a dict of float64 arrays (no pandas: a GAC scores with it)."""
    from ..features.segments import seg_mean, seg_min, seg_sum

    off = ts.step_offsets[ts.traj_offsets]
    lens = np.diff(off)
    lp = np.asarray(ts.logprob, dtype=np.float64)
    seq = np.where(lens > 0, np.exp(seg_mean(np.nan_to_num(lp, nan=0.0), off)), np.nan)
    mn = np.where(lens > 0, np.exp(seg_min(np.nan_to_num(lp, nan=0.0), off)), np.nan)
    tl = np.asarray(ts.top_logprobs, dtype=np.float64)
    if tl.ndim == 2 and tl.shape[1] > 0 and len(tl):
        q = np.exp(np.where(np.isnan(tl), -np.inf, tl))
        z = q.sum(axis=1)
        has = z > 0
        qn = q / np.where(has, z, 1.0)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -np.where(qn > 0, qn * np.log(qn), 0.0).sum(axis=1)
        # per-run sums over the runs' own tokens (0 for a run without tokens: np.add.reduceat on every start
        # read the next run's first token there, and raised IndexError for a last run without tokens)
        n_has = seg_sum(has.astype(np.float64), off)
        s_h = seg_sum(np.where(has, h, 0.0), off)
        ent = np.where(n_has > 0, -s_h / np.maximum(n_has, 1), np.nan)
    else:
        ent = np.full(len(lens), np.nan)
    return {"seq_prob": seq, "min_prob": mn, "neg_entropy": ent}


def apply_transfer(transfer: dict, z, signal, kinds) -> np.ndarray:
    """The combined logit of a GAC ``transfer`` entry: ``a z + b logit(signal) + c`` per run, where ``z`` is the
    routed model's logit and ``signal`` the run's training-free signal (NaN -> the entry's ``fill``); runs whose
    kind (``kinds``) is in the entry's ``fallback`` get the signal alone (``transfer``: ``coef`` [a, b, c],
    optional ``fill`` and ``fallback`` {``kinds``, ``coef``})."""
    sig = np.asarray(signal, dtype=np.float64)
    zs = logit(np.where(np.isfinite(sig), sig, transfer.get("fill", 0.5)))
    a, b, c = transfer["coef"]
    out = a * np.asarray(z, dtype=np.float64) + b * zs + c
    fb = transfer.get("fallback")
    if fb:
        out = np.where(np.isin(np.asarray(kinds, dtype=object), fb["kinds"]), fb["coef"][1] * zs + fb["coef"][2], out)
    return out


def apply_transfer_one(transfer: dict, z: float, signal: float, kind: str) -> float:
    """:func:`apply_transfer` for one run, and its :func:`sigmoid`: the confidence as a float, with the same
    numpy operations on the same numbers (the same bits), without the array set-up that cost the live
    Monitor ~25 us per step (issue 29, item 6)."""
    sig = signal if math.isfinite(signal) else transfer.get("fill", 0.5)
    p = np.float64(min(max(sig, EPS), 1 - EPS))                # np.clip of one value
    zs = np.log(p) - np.log1p(-p)
    fb = transfer.get("fallback")
    if fb and kind in fb["kinds"]:
        out = fb["coef"][1] * zs + fb["coef"][2]
    else:
        a, b, c = transfer["coef"]
        out = a * np.float64(z) + b * zs + c
    e = np.exp(-np.abs(out))
    return float(1.0 / (1.0 + e) if out >= 0 else e / (1.0 + e))


class RunningSignals:
    """The training-free signals of one run so far, step by step: after the steps added, :meth:`value` equals
    :func:`training_free_signals` of the run made of those steps (the live Monitor's use).

    Parameters
    ----------
    signals : sequence of str, default=all of ``SIGNALS``
        The signals to keep (the live Monitor keeps its GAC's one: the alternatives' entropy is most of the
        work of a step).

    Examples
    --------
    The first run of :func:`training_free_signals`' example, fed as it is produced:

    >>> from htc_core.calibration.transfer_methods import RunningSignals
    >>> running = RunningSignals()
    >>> running.add([-0.105, -0.693], [[-0.105, -2.4], [-0.693, -0.693]])
    >>> round(running.value("seq_prob"), 2), round(running.value("min_prob"), 2)
    (0.67, 0.5)
    """

    def __init__(self, signals=tuple(SIGNALS)):
        unknown = set(signals) - set(SIGNALS)
        if unknown:
            raise ValueError(f"signals must be among {sorted(SIGNALS)}, got {sorted(unknown)}")
        self.signals = tuple(signals)
        self._entropy = "neg_entropy" in self.signals
        self.reset()

    def reset(self) -> None:
        """Forget every step (start a new run).

        Examples
        --------
        >>> from htc_core.calibration.transfer_methods import RunningSignals
        >>> running = RunningSignals()
        >>> running.add([-0.1, -0.7], [])
        >>> running.reset()
        >>> running.n, running.value("seq_prob")
        (0, nan)
        """
        self.n, self.sum_lp, self.min_lp, self.n_h, self.sum_h = 0, 0.0, math.inf, 0, 0.0

    def add(self, logprobs, top_logprobs) -> None:
        """One step: its chosen tokens' logprobs and its [n, k] alternatives (k may be 0).

        Parameters
        ----------
        logprobs : array-like of shape (n,)
            The chosen tokens' logprobs (NaN counts as 0).
        top_logprobs : array-like of shape (n, k)
            The alternatives' logprobs, NaN-padded; an empty array when the step has none.

        Examples
        --------
        >>> from htc_core.calibration.transfer_methods import RunningSignals
        >>> running = RunningSignals()
        >>> running.add([-0.105, -0.693], [])                     # a step without alternatives
        >>> running.add([-1.609], [])
        >>> running.n, round(running.value("min_prob"), 2), running.value("neg_entropy")
        (3, 0.2, nan)
        """
        lp = np.asarray(logprobs, dtype=np.float64)
        if lp.size:
            total, low = float(lp.sum()), float(lp.min())
            if not (math.isfinite(total) and math.isfinite(low)):     # NaN or inf: as training_free_signals
                lp = np.nan_to_num(lp, nan=0.0)
                total, low = float(lp.sum()), float(lp.min())
            self.n += lp.size
            self.sum_lp += total
            self.min_lp = min(self.min_lp, low)
        if not self._entropy:
            return
        tl = np.asarray(top_logprobs, dtype=np.float64)
        if tl.ndim == 2 and tl.shape[1] > 0 and len(tl):
            q = np.exp(np.where(np.isnan(tl), -np.inf, tl))
            z = q.sum(axis=1)
            has = z > 0
            qn = q / np.where(has, z, 1.0)[:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                h = -np.where(qn > 0, qn * np.log(qn), 0.0).sum(axis=1)
            self.n_h += int(has.sum())
            self.sum_h += float(np.where(has, h, 0.0).sum())

    def value(self, name: str) -> float:
        """``seq_prob``, ``min_prob`` or ``neg_entropy`` of the steps so far (NaN when undefined).

        Parameters
        ----------
        name : {"seq_prob", "min_prob", "neg_entropy"}
            The signal.

        Returns
        -------
        float
            Its value over the steps added; NaN before any token (or, for the entropy, any alternatives).

        Raises
        ------
        ValueError
            If ``name`` is not one of the signals kept (``signals``).

        Examples
        --------
        >>> from htc_core.calibration.transfer_methods import RunningSignals
        >>> running = RunningSignals()
        >>> running.add([-0.105, -0.693], [[-0.105, -2.4], [-0.693, -0.693]])
        >>> round(running.value("neg_entropy"), 2)
        -0.5
        """
        if name not in self.signals:
            raise ValueError(f"signal must be one of {sorted(self.signals)}, got {name!r}")
        if self.n == 0:
            return math.nan
        if name == "seq_prob":
            return math.exp(self.sum_lp / self.n)
        if name == "min_prob":
            return math.exp(self.min_lp)
        return -self.sum_h / self.n_h if self.n_h else math.nan


def target_standardized_logit(model, X: np.ndarray, *, min_runs: int = 20) -> np.ndarray:
    """The logit of a fitted linear model on ``X`` standardized with ``X``'s own column statistics.

    Test-time standardization: the features are standardized with the scored rows' column means and standard
    deviations instead of the training ones. A column whose target std is 0 keeps the training scale. Fewer
    than ``min_runs`` rows: the training standardization is kept (the target statistics would be mostly
    noise).

    Parameters
    ----------
    model : HTCCalibrator
        A fitted linear model (``coef_``, ``intercept_``, ``scale_``, ``decision_function``).
    X : ndarray of shape (n, n_features)
        The scored runs' features, in the model's columns.
    min_runs : int, default=20
        The fewest rows whose own statistics are used.

    Returns
    -------
    ndarray of shape (n,)
        The logit of every row.

    Examples
    --------
    A one-feature model trained where the feature is centred on 0, scoring runs where it sits near 11:

    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.calibration.transfer_methods import target_standardized_logit
    >>> model = htc.HTCCalibrator.from_dict({
    ...     "format": "htc-calibrator", "format_version": 1, "variant": "reduced", "alpha": 1.0,
    ...     "feature_names": ["top1_gradient_mean"], "coef": [2.0], "intercept": 0.0,
    ...     "scaler": {"mean": [0.0], "scale": [1.0]}})
    >>> X = np.linspace(10, 12, 21)[:, None]
    >>> model.decision_function(X)[[0, 10, 20]].round(2).tolist()       # all saturated
    [20.0, 22.0, 24.0]
    >>> target_standardized_logit(model, X)[[0, 10, 20]].round(2).tolist()
    [-3.3, 0.0, 3.3]
    """
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] < min_runs:
        return np.asarray(model.decision_function(X), dtype=np.float64)
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd = np.where(sd > 1e-12, sd, np.asarray(model.scale_, dtype=np.float64))
    return (X - mu) / sd @ np.asarray(model.coef_[0], dtype=np.float64) + float(model.intercept_[0])


@dataclass
class EMPrior:
    """What :func:`em_prior` returns: the estimated base rate and the confidences re-weighted for it.

    Parameters
    ----------
    prior : float
        The estimated base rate of the scored runs.
    adjusted : ndarray of shape (n,)
        The confidences re-weighted for it (:func:`prior_adjust`).
    n_iter : int
        EM iterations run.
    converged : bool
        Whether the estimate moved less than the tolerance before ``max_iter``.

    Examples
    --------
    >>> from htc_core.calibration.transfer_methods import em_prior
    >>> est = em_prior([0.9, 0.2, 0.3, 0.1, 0.2], train_prior=0.5)
    >>> round(est.prior, 3), est.converged
    (0.169, True)
    """

    prior: float           # the estimated base rate of the scored runs
    adjusted: np.ndarray   # the confidences re-weighted for it
    n_iter: int
    converged: bool


def prior_adjust(p, train_prior: float, target_prior: float) -> np.ndarray:
    """Bayes' rule for a changed base rate: p(y=1|x) at ``train_prior`` -> at ``target_prior``.

    Parameters
    ----------
    p : array-like
        Confidences of a model trained at base rate ``train_prior`` (clipped to ``[1e-6, 1 - 1e-6]``).
    train_prior : float
        The training base rate, in (0, 1).
    target_prior : float
        The base rate of the scored runs, in (0, 1).

    Returns
    -------
    ndarray
        ``(t/s) p / ((t/s) p + ((1-t)/(1-s)) (1-p))`` with ``s = train_prior`` and ``t = target_prior``.

    Examples
    --------
    >>> from htc_core.calibration.transfer_methods import prior_adjust
    >>> prior_adjust([0.5, 0.8], train_prior=0.5, target_prior=0.25).round(3).tolist()
    [0.25, 0.571]
    """
    p = np.clip(np.asarray(p, dtype=np.float64), EPS, 1 - EPS)
    a = target_prior / train_prior
    b = (1 - target_prior) / (1 - train_prior)
    return a * p / (a * p + b * (1 - p))


def em_prior(p, train_prior: float, *, tol: float = 1e-7, max_iter: int = 2000) -> EMPrior:
    """Saerens-Latinne-Decaestecker EM: the target base rate that makes the mean adjusted confidence equal to
    itself, and the adjusted confidences. ``train_prior`` is the training base rate of the model.

    Parameters
    ----------
    p : array-like of shape (n,)
        The model's confidences on the unlabeled scored runs (finite, at least one).
    train_prior : float
        The model's training base rate, in (0, 1).
    tol : float, default=1e-7
        Stop when the estimate moves less than this.
    max_iter : int, default=2000
        Cap on the EM iterations.

    Returns
    -------
    EMPrior
        The estimated base rate (kept in ``[1e-4, 1 - 1e-4]``), the adjusted confidences, the iterations
        and whether they converged.

    Raises
    ------
    ValueError
        If ``train_prior`` is not in (0, 1) or ``p`` is empty or not finite.

    Examples
    --------
    A model trained at a base rate of 0.5 that is mostly unsure on the new runs: EM finds a lower rate.

    >>> from htc_core.calibration.transfer_methods import em_prior
    >>> est = em_prior([0.9, 0.2, 0.3, 0.1, 0.2], train_prior=0.5)
    >>> round(est.prior, 3), est.adjusted.round(3).tolist()
    (0.169, [0.647, 0.048, 0.08, 0.022, 0.048])
    """
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    if not 0 < train_prior < 1:
        raise ValueError(f"train_prior must lie in (0, 1), got {train_prior!r}")
    if p.size == 0 or not np.isfinite(p).all():
        raise ValueError("p must be a non-empty array of finite confidences")
    pi = train_prior
    for it in range(1, max_iter + 1):
        adj = prior_adjust(p, train_prior, pi)
        new = float(np.clip(adj.mean(), 1e-4, 1 - 1e-4))
        if abs(new - pi) < tol:
            return EMPrior(new, prior_adjust(p, train_prior, new), it, True)
        pi = new
    return EMPrior(pi, prior_adjust(p, train_prior, pi), max_iter, False)


def domain_weights(Xs: np.ndarray, Xt: np.ndarray, *, C: float = 0.1, clip: float = 20.0) -> np.ndarray:
    """Importance weight of each source row for the target distribution, by a logistic domain classifier on
    features standardized with the pooled statistics; mean 1 over the source rows, clipped at ``clip``.

    Parameters
    ----------
    Xs : ndarray of shape (n_s, d)
        The source (training) rows.
    Xt : ndarray of shape (n_t, d)
        The target (scored) rows.
    C : float, default=0.1
        Inverse regularization strength of the domain classifier (scikit-learn's ``LogisticRegression``).
    clip : float, default=20.0
        The largest weight relative to the mean, before the final rescaling to mean 1.

    Returns
    -------
    ndarray of shape (n_s,)
        ``P(target|x) / P(source|x) * n_s / n_t`` per source row, normalized to mean 1.

    Examples
    --------
    The target rows sit one standard deviation to the right: source rows there weigh more.

    >>> import numpy as np
    >>> from htc_core.calibration.transfer_methods import domain_weights
    >>> rng = np.random.default_rng(0)
    >>> Xs, Xt = rng.normal(0, 1, (200, 1)), rng.normal(1, 1, (100, 1))
    >>> w = domain_weights(Xs, Xt)
    >>> right, left = Xs[:, 0] > 1, Xs[:, 0] < -1
    >>> round(float(w.mean()), 3), round(float(w[right].mean()), 2), round(float(w[left].mean()), 2)
    (1.0, 2.13, 0.31)
    """
    from sklearn.linear_model import LogisticRegression

    Xs, Xt = np.asarray(Xs, dtype=np.float64), np.asarray(Xt, dtype=np.float64)
    X = np.vstack([Xs, Xt])
    mu, sd = X.mean(axis=0), X.std(axis=0)
    Z = (X - mu) / np.where(sd > 1e-12, sd, 1.0)
    d = np.r_[np.zeros(len(Xs)), np.ones(len(Xt))]
    clf = LogisticRegression(C=C, max_iter=2000).fit(Z, d)
    ps = clf.predict_proba(Z[: len(Xs)])[:, 1]
    w = ps / np.clip(1 - ps, 1e-9, None) * len(Xs) / len(Xt)
    w = np.minimum(w / w.mean(), clip)
    return w / w.mean()


def weighted_platt(z: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, *, ridge: float = 1e-4,
                   max_iter: int = 100) -> tuple[float, float]:
    """(slope, intercept) of ``sigmoid(a z + b)`` minimizing the weighted log loss (Newton steps).

    Parameters
    ----------
    z : ndarray of shape (n,)
        The model's logits on the training runs.
    y : ndarray of shape (n,)
        Their 0/1 outcomes.
    w : ndarray of shape (n,), optional
        Row weights (e.g. :func:`domain_weights`); all 1 when omitted.
    ridge : float, default=1e-4
        Penalty ``ridge * sum(w) * (a**2 + b**2) / 2`` (keeps separable data finite).
    max_iter : int, default=100
        Cap on the Newton steps.

    Returns
    -------
    slope : float
        ``a``.
    intercept : float
        ``b``.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.transfer_methods import weighted_platt
    >>> z, y = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0]), np.array([0, 0, 1, 0, 1, 1])
    >>> [round(v, 3) for v in weighted_platt(z, y)]
    [1.213, -0.606]
    >>> [round(v, 3) for v in weighted_platt(z, y, w=np.array([1, 1, 1, 3, 1, 1.0]))]
    [1.105, -1.509]
    """
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(z) if w is None else np.asarray(w, dtype=np.float64)
    A = np.column_stack([z, np.ones_like(z)])
    coef = np.zeros(2)
    lam = ridge * w.sum()
    for _ in range(max_iter):
        p = sigmoid(A @ coef)
        g = A.T @ (w * (p - y)) + lam * coef
        H = (A * (w * p * (1 - p))[:, None]).T @ A + lam * np.eye(2)
        step = np.linalg.solve(H, g)
        coef -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return float(coef[0]), float(coef[1])


def stack_logits(z_model: np.ndarray, signal: np.ndarray, y: np.ndarray, *, ridge: float = 1e-3,
                 max_iter: int = 100) -> np.ndarray:
    """[a, b, c] of ``sigmoid(a z_model + b logit(signal) + c)`` by (ridged) log loss, with the signal's weight
    kept non-negative (a training-free confidence is never turned upside down).

    Parameters
    ----------
    z_model : ndarray of shape (n,)
        The model's logits on the training runs.
    signal : ndarray of shape (n,)
        A training-free signal that is a probability (one of ``STACKABLE``).
    y : ndarray of shape (n,)
        The 0/1 outcomes.
    ridge : float, default=1e-3
        Penalty ``ridge * n * |coef|**2 / 2``.
    max_iter : int, default=100
        Cap on the Newton steps.

    Returns
    -------
    ndarray of shape (3,)
        ``[a, b, c]``, ``b >= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.transfer_methods import stack_logits
    >>> z = np.array([-1.0, 0.0, 1.0, 2.0, -0.5, 0.5])
    >>> signal = np.array([0.2, 0.7, 0.6, 0.9, 0.3, 0.4])
    >>> stack_logits(z, signal, np.array([0, 1, 1, 1, 0, 0])).round(3).tolist()
    [1.636, 6.816, -1.04]
    """
    return stack_scores(z_model, logit(signal)[:, None], y, ridge=ridge, max_iter=max_iter)


def stack_scores(z_model: np.ndarray, scores: np.ndarray, y: np.ndarray, *, ridge: float = 1e-3,
                 max_iter: int = 100) -> np.ndarray:
    """[a, b_1 .. b_k, c] of ``sigmoid(a z_model + sum_j b_j scores[:, j] + c)`` by (ridged) log loss, every
    ``b_j`` kept non-negative (each column a training-free score where larger means more confident).

    Parameters
    ----------
    z_model : ndarray of shape (n,)
        The model's logits on the training runs.
    scores : ndarray of shape (n, k)
        Training-free scores, larger = more confident (no NaN).
    y : ndarray of shape (n,)
        The 0/1 outcomes.
    ridge : float, default=1e-3
        Penalty ``ridge * n * |coef|**2 / 2``.
    max_iter : int, default=100
        Cap on the projected Newton steps.

    Returns
    -------
    ndarray of shape (k + 2,)
        ``[a, b_1, ..., b_k, c]``, every ``b_j >= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.transfer_methods import stack_scores
    >>> z = np.array([-1.0, 0.0, 1.0, 2.0, -0.5, 0.5])
    >>> seq = np.log(np.array([0.2, 0.7, 0.6, 0.9, 0.3, 0.4]) / np.array([0.8, 0.3, 0.4, 0.1, 0.7, 0.6]))
    >>> neg_entropy = -np.array([0.9, 0.2, 0.4, 0.1, 0.8, 0.7])
    >>> stack_scores(z, np.column_stack([seq, neg_entropy]), np.array([0, 1, 1, 1, 0, 0])).round(3).tolist()
    [1.901, 6.124, 2.326, -0.018]
    """
    S = np.asarray(scores, dtype=np.float64).reshape(len(y), -1)
    A = np.column_stack([np.asarray(z_model, dtype=np.float64), S, np.ones(len(y))])
    y = np.asarray(y, dtype=np.float64)
    coef = np.zeros(A.shape[1])
    lam = ridge * len(y)
    for _ in range(max_iter):
        p = sigmoid(A @ coef)
        g = A.T @ (p - y) + lam * coef
        H = (A * (p * (1 - p))[:, None]).T @ A + lam * np.eye(A.shape[1])
        step = np.linalg.solve(H, g)
        coef -= step
        coef[1:-1] = np.maximum(coef[1:-1], 0.0)
        if np.max(np.abs(step)) < 1e-10:
            break
    return coef


def signal_scores(sig: "pd.DataFrame | dict", fill: dict | None = None) -> tuple[np.ndarray, dict]:
    """(the [n, 3] scores of every training-free signal: the logit of the two probabilities and minus the
    entropy as it is; the fill of each column's NaN, in score units, its median unless ``fill`` gives it)."""
    # sig: a DataFrame or a dict of arrays (training_free_signal_arrays)
    cols = [logit(np.asarray(sig[c])) if c in STACKABLE else np.asarray(sig[c], dtype=np.float64) for c in SIGNALS]
    fill = dict(fill or {})
    out = []
    for c, v in zip(SIGNALS, cols):
        if c not in fill:
            fill[c] = float(np.nanmedian(v)) if np.isfinite(v).any() else 0.0
        out.append(np.where(np.isfinite(v), v, fill[c]))
    return np.column_stack(out), fill


def signal_matrix(sig: "pd.DataFrame | dict") -> np.ndarray:
    """[n, 3] scores of the training-free signals (the logit of the two probabilities, minus the entropy as it
    is), NaN kept where a signal is undefined (no tokens; no top-k alternatives for the entropy)."""
    return signal_scores(sig, {c: np.nan for c in SIGNALS})[0]
