"""Label-efficient adaptation: fit a calibrator on a few labeled runs of a new task, starting from a prior.

``HTCCalibrator(prior=...)`` (a fitted HTC model, a General Agent Calibrator, a shipped name such as
``"gac"`` or a model file) fits in the prior's feature space, token-confidence profile and standardization
``z = (x - mean_prior) / scale_prior``. With ``s = w_prior . z + b_prior`` the prior's logit, the candidates are:

- ``prior``: the prior unchanged (zero-shot);
- ``recalibrated prior``: ``a * s + c``, a logistic fit of slope and intercept on the prior's logit (both
  shrunk toward the identity, ``RECAL_PENALTY / 2 * ((a - 1)^2 + c^2)``, so 10 labels cannot swing them wildly);
- ``shrunk toward prior (lambda)``: ``a * s + c + delta . z``, the recalibrated prior plus a correction of every
  weight, fitted jointly with the penalty ``lambda / 2 * |delta|^2`` (and the same pull on ``a`` and ``c``): the
  weights ``a * w_prior + delta`` are pulled toward the *recalibrated* prior's, because between domains both the
  base rate and the feature scales move (a free intercept alone does not fix a slope that is off); large lambda
  -> the recalibrated prior, small lambda -> a free logistic fit;
- ``no prior``: plain HTC (the estimator's own variant and alpha selection) on the prior's features (a candidate
  of the ``"cv"`` criterion only).

The choice uses the training runs only, by one of :data:`CRITERIA` (:data:`DEFAULT_CRITERION` unless
``fit_with_prior(..., criterion=...)``):

- ``"loo"`` (the default): each candidate's leave-one-out log loss, approximated by one Newton step from the fit
  on all labels (:func:`loo_logits`; no folds are drawn, so the choice does not change with the seed); the most
  prior-like candidate (in the order above) whose loss is within :data:`LOO_TOLERANCE` standard errors of the
  lowest (paired over the runs) is chosen. At 10-50 labels the differences between neighbouring lambdas are
  mostly noise, and this rule then stays with the prior, or the recalibrated prior, unless the labels clearly
  say otherwise; with hundreds of labels the standard error shrinks and the lowest loss wins;
- ``"evidence"``: the Laplace-approximated marginal likelihood of the labels under each candidate's Gaussian
  prior (:func:`log_evidence`), the largest wins (empirical Bayes);
- ``"cv"``: inner cross-validation, stratified folds (as many as the smaller class allows, at most
  ``inner_folds``), repeated 3 times below 100 runs, scored by the log loss of the pooled out-of-fold
  predictions. At 30 labels it picked anything from lambda 0.3 to 300 from draw to draw (docs/labeling.md).

The winner is refitted on all runs. Fallbacks, each written to ``adaptation_["notes"]``: labels of one outcome
only -> the prior unchanged; with ``"cv"``, a single run of one outcome -> the recalibrated prior without a CV,
and "no prior" left out where an inner training fold has fewer than 2 runs of an outcome.
"""

from __future__ import annotations

import numpy as np

from .inputs import unpack_features_and_names, validate_fit_input_with_prior
from .metrics import fast_auroc, fast_brier, fast_ece
from .model_file import read_model_file
from .shift import feature_stats
from .solvers import sigmoid

__all__ = ["fit_with_prior", "resolve_prior", "log_evidence", "loo_logits", "DEFAULT_STRENGTHS", "RECAL_PENALTY", "CRITERIA",
           "DEFAULT_CRITERION", "CRITERION"]

DEFAULT_STRENGTHS = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
RECAL_PENALTY = 1.0
# how the pull toward the prior can be chosen (module docstring); the default is :data:`DEFAULT_CRITERION`
CRITERIA = ("evidence", "loo", "cv")
DEFAULT_CRITERION = "loo"
CRITERION_TEXT = {"evidence": "log evidence: Laplace-approximated marginal likelihood of the labels (higher is better)",
                  "loo": "approximate leave-one-out log loss, the most prior-like within one standard error of the "
                         "lowest",
                  "cv": "log loss of the pooled out-of-fold predictions (lower is better)"}
CRITERION = CRITERION_TEXT[DEFAULT_CRITERION]
# the ``"loo"`` criterion keeps the most prior-like candidate whose leave-one-out log loss is within this many
# standard errors (of the per-run differences) of the lowest
LOO_TOLERANCE = 1.0
KINDS = ("with_alternatives", "without_alternatives")


# ------------------------------------------------------------------ prior
def _load_named(prior, cls):
    from .models.files import model_path

    path = model_path(prior)
    obj = read_model_file(path)
    fmt = obj.get("format") if isinstance(obj, dict) else None
    if fmt == "htc-gac":
        subs = obj.get("models") if isinstance(obj.get("models"), dict) else {}
        return {k: cls.from_dict(v, source=f"{path} (models.{k})") for k, v in subs.items()
                if k in KINDS and v is not None}, str(prior)
    if fmt == "htc-gam":
        raise ValueError(f"prior {str(prior)!r} is an HTC-GAM; a prior must be a linear HTC model or a GAC")
    return cls.from_dict(obj, source=str(path)), str(prior)


def resolve_prior(prior, cls, of_matrix: tuple[str, int] | None) -> tuple[object, str, list]:
    """The linear HTC model to adapt from, given as a model, a GAC, a shipped name or a model file.

    A GAC gives the sub-model for the runs' kind: ``of_matrix`` (the FeatureMatrix's profile and top-k) picks
    the one fitted on that profile; without it, the ``without_alternatives`` model.

    Parameters
    ----------
    prior : HTCCalibrator, GeneralCalibrator, str or path
        A fitted HTC model, a GAC, a shipped model name (``"gac"``) or a model file. An HTC-GAM or anything
        else raises ``ValueError``.
    cls : type
        The HTC model class (:class:`~htc_core.calibration.calibrators.HTCCalibrator`).
    of_matrix : tuple of (str, int) or None
        The profile and top-k of the features to adapt on (None: an array or DataFrame).

    Returns
    -------
    prior : HTCCalibrator
        The fitted linear model.
    name : str
        Its name (``"gac/with_alternatives"`` for a GAC's sub-model).
    notes : list of str
        What was picked, for ``adaptation_["notes"]``.

    Examples
    --------
    >>> from htc_core import HTCCalibrator
    >>> from htc_core.calibration.adapt import resolve_prior
    >>> prior, name, notes = resolve_prior("gac", HTCCalibrator, ("paper", 5))
    >>> name, prior.profile_
    ('gac/with_alternatives', 'paper')
    >>> resolve_prior("gac", HTCCalibrator, None)[1]
    'gac/without_alternatives'
    """
    notes: list = []
    name = prior_name(prior)
    if isinstance(prior, (str, bytes)) or hasattr(prior, "__fspath__"):
        prior, name = _load_named(prior if not isinstance(prior, bytes) else prior.decode(), cls)
    subs = getattr(prior, "models", prior) if not isinstance(prior, cls) else None
    if isinstance(subs, dict):
        prior, kind = _pick_submodel(subs, of_matrix, name)
        notes.append(f"prior {name}: its {kind} model ({prior.profile_!r} profile, top-k {prior.top_k_})")
        name = f"{name}/{kind}"
    if not isinstance(prior, cls) or not hasattr(prior, "coef_"):
        raise ValueError(f"prior must be a fitted HTCCalibrator, a General Agent Calibrator, a shipped model name "
                         f"or a model file, got {type(prior).__name__}")
    if getattr(prior, "name_", None) != name and name != prior_name(prior):
        prior = named_prior(prior, name)     # a sub-model or a file's model keeps its name through later resolves
    return prior, str(name), notes


def named_prior(model, name: str):
    """A shallow copy of a fitted linear HTC model that carries the name it is shown by (``name_``).

    A GAC's sub-model or a model file's model, once picked out, would otherwise be shown by its class name;
    :func:`prior_name` (and so ``adaptation_["prior"]``) reads ``name_``. The copy shares the model's arrays.

    Parameters
    ----------
    model : HTCCalibrator
        The fitted model (left unchanged).
    name : str
        Its name, e.g. ``"gac/with_alternatives"``.

    Returns
    -------
    HTCCalibrator
        The named copy.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.adapt import named_prior, prior_name
    >>> sub = htc.load_model("gac").models["with_alternatives"]
    >>> prior_name(named_prior(sub, "gac/with_alternatives"))
    'gac/with_alternatives'
    """
    import copy

    named = copy.copy(model)
    named.name_ = str(name)
    return named


def prior_name(prior) -> str:
    """The name a prior is shown by in ``adaptation_["prior"]``, the notes and the error messages.

    Its ``name`` (a GAC's, e.g. ``"gac"``) or ``name_`` (:func:`named_prior`), a shipped name or a file path as
    given; a fitted HTC model without a name is described by its variant, profile and training size (never by its
    class name).

    Parameters
    ----------
    prior : HTCCalibrator, GeneralCalibrator, str or path
        The prior as given.

    Returns
    -------
    str
        Its name.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.adapt import prior_name
    >>> gac = htc.load_model("gac")
    >>> prior_name(gac), prior_name("gac")
    ('gac', 'gac')
    >>> prior_name(gac.models["with_alternatives"])
    'HTC-Reduced model (paper profile, top-k 5, fitted on 2,096 runs)'
    """
    for attr in ("name", "name_"):
        value = getattr(prior, attr, None)
        if isinstance(value, str) and value:
            return value
    if isinstance(prior, (str, bytes)) or hasattr(prior, "__fspath__"):
        return prior.decode() if isinstance(prior, bytes) else str(prior)
    if hasattr(prior, "coef_") and hasattr(prior, "profile_"):
        n = (getattr(prior, "training_summary_", None) or {}).get("n")
        fitted = f", fitted on {n:,} runs" if isinstance(n, int) else ""
        return f"HTC-{str(prior.variant).capitalize()} model ({prior.profile_} profile, top-k {prior.top_k_}{fitted})"
    return type(prior).__name__


def _pick_submodel(subs: dict, of_matrix, name: str):
    have = {k: m for k, m in subs.items() if m is not None}
    if of_matrix is None:
        if "without_alternatives" not in have:
            raise ValueError(f"prior {name} has no without_alternatives model")
        return have["without_alternatives"], "without_alternatives"
    for kind in KINDS:
        m = have.get(kind)
        if m is not None and (m.profile_, m.top_k_) == tuple(of_matrix):
            return m, kind
    offered = ", ".join(f"{k}: profile {m.profile_!r}, top_k {m.top_k_}" for k, m in have.items())
    raise ValueError(f"X is a FeatureMatrix of profile {of_matrix[0]!r} and top_k {of_matrix[1]}, but no model of "
                     f"the prior {name} uses those features ({offered}); extract the features with one of these")


# ------------------------------------------------------------ the fits
def _newton(A: np.ndarray, y: np.ndarray, theta0: np.ndarray, pen: np.ndarray, start: np.ndarray,
            max_iter: int = 100, tol: float = 1e-8, weight: np.ndarray | None = None) -> np.ndarray:
    """argmin sum weight * logloss(A theta) + 1/2 sum pen * (theta - theta0)^2 (damped Newton; strictly convex
    when every penalty is positive or both outcomes are present; ``weight`` None: every run 1)."""
    theta = start.astype(np.float64).copy()
    wt = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)

    def objective(t):
        z = A @ t
        return float(np.sum(wt * (np.logaddexp(0.0, z) - y * z)) + 0.5 * np.sum(pen * (t - theta0) ** 2))

    f = objective(theta)
    for _ in range(max_iter):
        p = sigmoid(A @ theta)
        g = A.T @ (wt * (p - y)) + pen * (theta - theta0)
        if np.max(np.abs(g)) < tol * max(1.0, len(y)):
            break
        H = (A * (wt * p * (1 - p))[:, None]).T @ A + np.diag(pen) + 1e-10 * np.eye(len(theta))
        step = np.linalg.solve(H, g)
        t = 1.0
        while t > 1e-8:
            cand = theta - t * step
            fc = objective(cand)
            if fc <= f - 1e-4 * t * float(g @ step):
                break
            t *= 0.5
        if t <= 1e-8:
            break
        theta, f = cand, fc
    return theta


def _fit_candidate(cand: tuple, est, prior, Z, X, y, weight=None):
    """(weights, intercept, mean, scale, details) of one candidate fitted on (Z or X, y), each run's log loss
    counted ``weight`` times (None: once; "no prior" takes no weights)."""
    kind, lam = cand
    w0, b0 = prior.coef_[0], float(prior.intercept_[0])
    if kind == "prior":
        return w0, b0, prior.mean_, prior.scale_, {}
    if kind == "none":
        m = type(est)(variant=est.variant, alphas=est.alphas, inner_folds=est.inner_folds,
                      random_state=est.random_state, max_iter=est.max_iter, tol=est.tol, solver=est.solver,
                      profile=prior.profile_, top_k=prior.top_k_).fit(X, y)
        return m.coef_[0], float(m.intercept_[0]), m.mean_, m.scale_, {"alpha": m.alpha_}
    A, theta0, pen = _joint_design(Z @ w0 + b0, Z, lam if kind == "shrink" else None)
    theta = _newton(A, y, theta0, pen, theta0, weight=weight)
    a, c = float(theta[0]), float(theta[1])
    w = a * w0 + (theta[2:] if kind == "shrink" else 0.0)
    return w, a * b0 + c, prior.mean_, prior.scale_, {"slope": a, "intercept_shift": c}


def _joint_design(s: np.ndarray, Z: np.ndarray, lam: float | None):
    """The adapted logit ``a * s + c + Z . delta`` as a penalized logistic model in ``theta = (a, c, delta)``:
    design, prior mean ``(1, 0, 0...)`` and penalties ``(RECAL_PENALTY, RECAL_PENALTY, lam...)``; ``lam`` None:
    the recalibrated prior (no ``delta``)."""
    cols = [s, np.ones_like(s)] + ([] if lam is None else [Z])
    A = np.column_stack(cols)
    theta0 = np.zeros(A.shape[1])
    theta0[0] = 1.0
    pen = np.full(A.shape[1], float(RECAL_PENALTY))
    pen[2:] = lam if lam is not None else 0.0
    return A, theta0, pen


def log_evidence(A: np.ndarray, y: np.ndarray, theta0: np.ndarray, pen: np.ndarray,
                 weight: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Laplace approximation of the log marginal likelihood of labels ``y`` under the logistic model with design
    ``A`` and the Gaussian prior ``theta ~ N(theta0, diag(1 / pen))``.

    ``log p(y) ~ -L(theta*) - 1/2 sum pen (theta* - theta0)^2 - 1/2 log det H + 1/2 sum log pen``, with ``L`` the
    summed log loss, ``theta*`` the penalized fit (its maximum a posteriori) and ``H`` the Hessian of the penalized
    loss there. A model with no free parameter (``A`` with no columns) scores its plain log likelihood. The
    evidence trades fit against the number of parameters the labels had to pin down, so it prefers the prior
    unchanged when the labels agree with it, and a looser pull once they clearly do not.

    Parameters
    ----------
    A : ndarray of shape (n, k)
        Design: one row per labeled run (the last columns may be the intercept and the prior's logit).
    y : ndarray of shape (n,)
        Labels, 0 or 1.
    theta0 : ndarray of shape (k,)
        Prior mean of the parameters.
    pen : ndarray of shape (k,)
        Prior precision of each parameter, all positive.
    weight : ndarray of shape (n,), optional
        How many times each run's log likelihood counts (None: once; a weighted pseudo-likelihood).

    Returns
    -------
    log_evidence : float
        The approximate log marginal likelihood (natural log; higher is better).
    theta : ndarray of shape (k,)
        The penalized fit.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.adapt import log_evidence
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=200)
    >>> y = (rng.random(200) < 1 / (1 + np.exp(-s))).astype(float)   # labels drawn from the logit s itself
    >>> A = np.column_stack([s, np.ones(200)])
    >>> keep = -np.sum(np.logaddexp(0, s) - y * s)                    # the prior unchanged
    >>> ev, theta = log_evidence(A, y, np.array([1.0, 0.0]), np.array([1.0, 1.0]))
    >>> bool(ev < keep)                                               # refitting slope and intercept buys nothing
    True
    """
    c = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    theta = _newton(A, y, theta0, pen, theta0, weight=c)
    z = A @ theta
    p = sigmoid(z)
    loss = float(np.sum(c * (np.logaddexp(0.0, z) - y * z))) + 0.5 * float(np.sum(pen * (theta - theta0) ** 2))
    H = (A * (c * p * (1 - p))[:, None]).T @ A + np.diag(pen)
    _, logdet = np.linalg.slogdet(H)
    return -loss - 0.5 * float(logdet) + 0.5 * float(np.sum(np.log(pen))), theta


def loo_logits(A: np.ndarray, y: np.ndarray, theta0: np.ndarray, pen: np.ndarray,
               weight: np.ndarray | None = None) -> np.ndarray:
    """Approximate leave-one-out logits of the penalized logistic fit (one Newton step from the full fit).

    Leaving run ``i`` out moves its logit from ``z_i`` to about ``z_i + (p_i - y_i) h_i / (1 - w_i h_i)``, with
    ``h_i = a_i' H^-1 a_i`` (``H`` the Hessian of the penalized loss at the fit, ``w_i = p_i (1 - p_i)``): exact for
    a quadratic loss, close for the logistic one. No folds are drawn, so the score is the same on every call.

    Parameters
    ----------
    A : ndarray of shape (n, k)
        Design, one row per labeled run.
    y : ndarray of shape (n,)
        Labels, 0 or 1.
    theta0 : ndarray of shape (k,)
        The point the parameters are pulled toward.
    pen : ndarray of shape (k,)
        The pull on each parameter (0: free; the fit must stay strictly convex).
    weight : ndarray of shape (n,), optional
        How many times each run's log loss counts in the fit (None: once); leaving run ``i`` out removes its
        ``weight[i]`` (the step becomes ``weight_i (p_i - y_i) h_i / (1 - weight_i w_i h_i)``).

    Returns
    -------
    ndarray of shape (n,)
        Each run's logit from the fit without it.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.adapt import log_evidence, loo_logits
    >>> rng = np.random.default_rng(0)
    >>> A = np.column_stack([rng.normal(size=60), np.ones(60)])
    >>> y = (rng.random(60) < 1 / (1 + np.exp(-A[:, 0]))).astype(float)
    >>> z = loo_logits(A, y, np.zeros(2), np.full(2, 1.0))
    >>> exact = [A[i] @ log_evidence(np.delete(A, i, 0), np.delete(y, i), np.zeros(2), np.full(2, 1.0))[1]
    ...          for i in range(60)]                      # the penalized fit without run i
    >>> bool(np.max(np.abs(z - exact)) < 0.01)
    True
    """
    c = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    theta = _newton(A, y, theta0, pen, theta0, weight=c)
    z = A @ theta
    p = sigmoid(z)
    w = c * p * (1 - p)
    H = (A * w[:, None]).T @ A + np.diag(pen) + 1e-10 * np.eye(A.shape[1])
    h = np.einsum("ij,ij->i", A, np.linalg.solve(H, A.T).T)
    return z + c * (p - y) * h / np.maximum(1 - w * h, 1e-6)


def _loo_rows(prior, Z, y, grid, notes, weight=None) -> list[dict]:
    """Each candidate's approximate leave-one-out log loss (:func:`loo_logits`; with ``weight``, the fits and the
    loss weighted, the weights scaled to mean 1); the choice: the most prior-like candidate within one standard
    error (of the paired per-run differences) of the lowest."""
    s = Z @ prior.coef_[0] + float(prior.intercept_[0])
    c = np.ones(len(y)) if weight is None else weight / weight.mean()
    rows, losses = [], []
    for name, (kind, lam) in grid:
        row = {"name": name, "kind": kind, "lambda": lam, "available": kind != "none"}
        if kind == "none":
            rows.append(row)
            continue
        if kind == "prior":
            z = s
        else:
            A, theta0, pen = _joint_design(s, Z, lam if kind == "shrink" else None)
            z = loo_logits(A, y, theta0, pen, weight=c)
        per = c * (np.logaddexp(0.0, z) - y * z)
        p = sigmoid(z)
        row.update(log_loss=float(per.mean()), brier=float(np.mean((p - y) ** 2)), ece=float(fast_ece(y, p[None])[0]),
                   auroc=float(fast_auroc(y, p[None])[0]))
        rows.append(row)
        losses.append((len(rows) - 1, per))
    best = min(losses, key=lambda t: t[1].mean())
    for j, per in losses:                          # grid order: prior, recalibrated, then lambda large to small
        d = per - best[1]
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
        if d.mean() <= LOO_TOLERANCE * se:
            rows[j]["chosen_within_one_se"] = True
            break
    notes.append(f"leave-one-out: each of the {len(y)} labeled runs scored by the candidate fitted without it "
                 "(one Newton step from the full fit); the most prior-like candidate within one standard error of "
                 "the lowest log loss is chosen; 'no prior' is not a candidate (the smallest lambda is the nearest "
                 "free fit)")
    return rows


def _evidence_rows(prior, Z, y, grid, notes, weight=None) -> list[dict]:
    """Each candidate's log evidence of the labels (:func:`log_evidence`, weighted as the fit) and in-sample log
    loss."""
    s = Z @ prior.coef_[0] + float(prior.intercept_[0])
    c = np.ones(len(y)) if weight is None else weight / weight.mean()
    rows = []
    for name, (kind, lam) in grid:
        row = {"name": name, "kind": kind, "lambda": lam, "available": kind != "none"}
        if kind == "prior":
            ev, z = -float(np.sum(c * (np.logaddexp(0.0, s) - y * s))), s
        elif kind in ("recal", "shrink"):
            A, theta0, pen = _joint_design(s, Z, lam if kind == "shrink" else None)
            ev, theta = log_evidence(A, y, theta0, pen, weight=c)
            z = A @ theta
        else:
            rows.append(row)
            continue
        p = sigmoid(z)
        row.update(log_evidence=ev, log_loss=float(np.mean(np.logaddexp(0.0, z) - y * z)),
                   brier=float(np.mean((p - y) ** 2)))
        rows.append(row)
    notes.append(f"evidence: Laplace-approximated marginal likelihood of the {len(y)} labels under each candidate's "
                 "Gaussian prior around the GAC; 'no prior' (plain HTC, its own alpha by CV) has no such score and "
                 "is not a candidate (the smallest lambda is the nearest free fit)")
    return rows


def _grid(strengths) -> list[tuple[str, tuple]]:
    return ([("prior", ("prior", None)), ("recalibrated prior", ("recal", None))]
            + [(f"shrunk toward prior (lambda={lam:g})", ("shrink", float(lam))) for lam in sorted(strengths, reverse=True)]
            + [("no prior", ("none", None))])


def _predict(fit, X) -> np.ndarray:
    w, b, mean, scale, _ = fit
    return sigmoid(((X - mean) / scale) @ w + b)


def _inner_cv(est, prior, X, y, grid, notes) -> list[dict]:
    """Each candidate's pooled out-of-fold scores (mean over repeats); see the module docstring."""
    from sklearn.model_selection import RepeatedStratifiedKFold

    n_pos = int(y.sum())
    k = int(min(est.inner_folds, n_pos, len(y) - n_pos))
    reps = 3 if len(y) < 100 else 1
    cv = RepeatedStratifiedKFold(n_splits=k, n_repeats=reps, random_state=est.random_state)
    oof = np.full((reps, len(grid), len(y)), np.nan)
    for i, (tr, te) in enumerate(cv.split(X, y)):
        Ztr = (X[tr] - prior.mean_) / prior.scale_
        for j, (_, cand) in enumerate(grid):
            try:
                oof[i // k, j, te] = _predict(_fit_candidate(cand, est, prior, Ztr, X[tr], y[tr]), X[te])
            except ValueError:   # plain HTC needs 2 runs of each outcome in the fold
                pass
    rows = []
    for j, (name, (kind, lam)) in enumerate(grid):
        P = oof[:, j, :]
        row = {"name": name, "kind": kind, "lambda": lam, "available": bool(np.isfinite(P).all())}
        if row["available"]:
            Pc = np.clip(P, 1e-6, 1 - 1e-6)
            row["log_loss"] = float(np.mean(-(y * np.log(Pc) + (1 - y) * np.log(1 - Pc))))
            row.update(brier=float(fast_brier(y, P).mean()), ece=float(fast_ece(y, P).mean()),
                       auroc=float(np.nanmean(fast_auroc(y, P))))
        else:
            notes.append(f"'{name}' left out of the choice: some inner training fold has fewer than 2 runs of an "
                         "outcome")
        rows.append(row)
    notes.append(f"inner CV: {k} stratified folds x {reps} repeat(s) on {len(y)} runs")
    return rows


# --------------------------------------------------------------- entry
def fit_with_prior(est, X, y, *, meta=None, strengths=DEFAULT_STRENGTHS, criterion=None, sample_weight=None):
    """Adapt ``est.prior`` to the labels of (X, y): what ``est.fit(X, y)`` does when ``est.prior`` is set.

    The candidates (the prior, the recalibrated prior, the shrunk fits; no prior with ``"cv"`` only) compete by
    ``criterion`` on (X, y) only; the winner is refitted on all of it (module docstring). ``est.adaptation_``
    records the choice, the criterion, every candidate's scores and the notes.

    Parameters
    ----------
    est : HTCCalibrator
        The estimator with ``prior`` set; it is fitted in place.
    X : FeatureMatrix, DataFrame or array of shape (n_runs, n_features)
        The labeled runs' features, in the prior's features (columns found by name).
    y : array-like of shape (n_runs,)
        Binary labels.
    meta : DataFrame, optional
        The runs' metadata (training summary).
    strengths : sequence of float, default=DEFAULT_STRENGTHS
        The candidate lambdas of "shrunk toward prior".
    criterion : {"loo", "evidence", "cv"}, optional
        How the candidate is chosen (None: :data:`DEFAULT_CRITERION`, ``"loo"``).
    sample_weight : array-like of shape (n_runs,), optional
        How much each labeled run counts in the log loss of the fits and of the choice (scaled to mean 1, so the
        pull toward the prior keeps its meaning): the inverse of each run's chance of having been picked for
        labeling, so that a sample drawn unevenly stands for every run
        (:func:`~htc_core.calibration.active.label_weights`). Criteria ``"loo"`` and ``"evidence"`` only.

    Returns
    -------
    HTCCalibrator
        ``est``, fitted.

    Raises
    ------
    ValueError
        ``criterion`` is not one of :data:`CRITERIA`, the prior and the features do not match, or
        ``sample_weight`` is not one positive finite number per run (or is given with ``"cv"``).

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.calibration.adapt import fit_with_prior
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> rows = np.random.default_rng(0).choice(len(ts), 30, replace=False)
    >>> est = fit_with_prior(htc.HTCCalibrator(prior="gac"), htc.extract(ts).take(rows), ts.labels[rows],
    ...                      strengths=(1.0, 10.0))
    >>> est.adaptation_["prior"], est.adaptation_["choice"]
    ('gac/with_alternatives', 'shrunk toward prior (lambda=1)')
    >>> [row["name"] for row in est.adaptation_["grid"]]
    ['prior', 'recalibrated prior', 'shrunk toward prior (lambda=10)', 'shrunk toward prior (lambda=1)', 'no prior']
    >>> [row["name"] for row in est.adaptation_["grid"] if row["available"]][-1]   # plain HTC: a "cv" candidate only
    'shrunk toward prior (lambda=1)'
    """
    criterion = DEFAULT_CRITERION if criterion is None else criterion
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    values, names, of_matrix = unpack_features_and_names(X)
    prior, prior_name, notes = resolve_prior(est.prior, type(est), of_matrix)
    for param, mine, theirs in (("profile", est.profile, prior.profile_), ("top_k", est.top_k, prior.top_k_)):
        if mine is not None and mine != theirs:
            raise ValueError(f"{param}={mine!r} was given, but the prior {prior_name} uses {param} {theirs!r}; "
                             f"an adapted model works in the prior's features (leave {param}=None)")
    y = validate_fit_input_with_prior(est, values, y)
    weight = _check_weight(sample_weight, len(y), criterion)
    Xp = prior._checked(X)              # the prior's columns, by name; a FeatureMatrix of another profile fails
    Z = (Xp - prior.mean_) / prior.scale_
    choice, rows = _choose(est, prior, Xp, Z, y, _grid(strengths), criterion, notes, weight)
    cand = dict(_grid(strengths))[choice]
    fit = _fit_candidate(cand, est, prior, Z, Xp, y, weight)
    _set_state(est, prior, fit, cand, y, Xp, meta)
    est.adaptation_ = {"prior": prior_name, "prior_variant": prior.variant, "choice": choice,
                       "lambda": cand[1], **fit[4], "criterion": CRITERION_TEXT[criterion], "grid": rows,
                       "recalibration_penalty": RECAL_PENALTY, "notes": notes,
                       "weighted": weight is not None}
    return est


def _check_weight(sample_weight, n: int, criterion: str):
    """``sample_weight`` as positive floats of mean 1, or None."""
    if sample_weight is None:
        return None
    if criterion == "cv":
        raise ValueError("sample_weight is supported with criterion 'loo' or 'evidence', not 'cv'")
    w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    if len(w) != n:
        raise ValueError(f"sample_weight must hold one weight per labeled run ({n}), got {len(w)}")
    bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
    if len(bad):
        raise ValueError(f"sample_weight must be positive and finite, got {w[bad[0]]!r} at position {bad[0]}")
    return w / w.mean()


def _choose(est, prior, Xp, Z, y, grid, criterion, notes, weight=None) -> tuple[str, list]:
    """(the chosen candidate's name, the grid rows) by ``criterion``; the fallbacks of the module docstring."""
    n_pos = int(y.sum())
    if min(n_pos, len(y) - n_pos) == 0:
        notes.append(f"the labels hold only {'successes' if n_pos else 'failures'}: the prior is kept unchanged")
        return "prior", []
    if criterion == "evidence":
        rows = _evidence_rows(prior, Z, y, grid, notes, weight)
        ok = [r for r in rows if r["available"]]
        return max(ok, key=lambda r: r["log_evidence"])["name"], rows   # ties: the earlier, more prior-like one
    if criterion == "loo":
        rows = _loo_rows(prior, Z, y, grid, notes, weight)
        return next(r["name"] for r in rows if r.get("chosen_within_one_se")), rows
    if min(n_pos, len(y) - n_pos) == 1:
        notes.append("a single run of one outcome: no inner CV is possible; the recalibrated prior is used "
                     "(slope and intercept shrunk toward the prior's)")
        return "recalibrated prior", []
    rows = _inner_cv(est, prior, Xp, y, grid, notes)
    ok = [r for r in rows if r["available"]]
    return min(ok, key=lambda r: r["log_loss"])["name"], rows   # ties: the earlier (more prior-like) candidate


def _set_state(est, prior, fit, cand, y, Xp, meta) -> None:
    w, b, mean, scale, details = fit
    est.coef_ = np.asarray(w, dtype=np.float64)[None, :].copy()
    est.intercept_ = np.array([float(b)])
    est.mean_, est.scale_ = np.asarray(mean, dtype=np.float64), np.asarray(scale, dtype=np.float64)
    est.feature_names_in_ = np.array([str(n) for n in prior.feature_names_in_], dtype=object)
    est.n_features_in_ = len(est.feature_names_in_)
    est.classes_ = np.array([0, 1])
    est.profile_, est.top_k_ = prior.profile_, prior.top_k_
    est.logit_bound_ = getattr(prior, "logit_bound_", None)     # the adapted model scores as its prior does
    est.alpha_ = float(cand[1] if cand[0] == "shrink" else details.get("alpha", prior.alpha_))
    est.alpha_candidates_ = np.asarray(est.alphas, dtype=np.float64).reshape(-1)
    est.cv_results_ = None
    est.training_summary_ = est._summary(y, meta) | {"feature_stats": feature_stats(Xp)}
