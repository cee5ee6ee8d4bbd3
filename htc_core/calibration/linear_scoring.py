"""Scoring with a fitted model file, numpy only: the maths every HTC model and General Agent Calibrator scores with.

An HTC model (``htc fit``) scores a run by the linear score of its standardized features (:func:`linear_score`),
softly bounded by ``max_logit``, through the sigmoid. A General Agent Calibrator routes each run to the
sub-model of its kind (runs that list top-k alternatives or not: :func:`has_alternatives`), combines the routed
logit with a training-free signal of the run (its ``transfer``, :func:`check_transfer`), may score a chunk as a
set, and gives the run set its applicability verdict and expected ECE range (:meth:`GACScoring.assess`).

This module is the one place of that maths. The estimators use it: ``HTCCalibrator.linear_score`` calls
:func:`linear_score`, and :class:`~htc_core.calibration.general.GeneralCalibrator` inherits :class:`GACScoring`.
:class:`LinearScorer` and :class:`GACScorer` read the same model files and score exactly as the estimators do,
to the last bit, without importing scikit-learn, scipy or pandas (about 1 s of CPU at the start of a process):
they are what ``htc score`` loads (:func:`htc_core.calibration.models.load_scorer`), and they cannot be fitted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .file_scorer import FileScorer
from .inputs import align_columns, check_finite, unpack_features_and_names
from .model_file import parse_model_dict
from .solvers import sigmoid, soft_cap

__all__ = ["linear_score", "has_alternatives", "check_transfer", "LinearScorer", "GACScoring", "GACScorer",
           "WITH_ALTERNATIVES", "WITHOUT_ALTERNATIVES", "KINDS", "KIND_PROFILE", "GAC_FORMAT", "GAC_FORMAT_VERSION"]

GAC_FORMAT = "htc-gac"
GAC_FORMAT_VERSION = 1
# the two kinds of run a GAC tells apart (a sub-model each), and the confidence profile of each sub-model
WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES = "with_alternatives", "without_alternatives"
KINDS = (WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES)
KIND_PROFILE = {WITH_ALTERNATIVES: "paper", WITHOUT_ALTERNATIVES: "chosen"}


def linear_score(X: np.ndarray, coef: np.ndarray, intercept: float, mean: np.ndarray,
                 scale: np.ndarray) -> np.ndarray:
    """The linear score ``coef . (x - mean) / scale + intercept`` of each row: an HTC model's logit before its bound.

    The scaler is folded into the weights (one matrix-vector product, no standardized copy of X).

    Parameters
    ----------
    X : ndarray of shape (n_runs, n_features)
        The features, float64, in the model's column order.
    coef : ndarray of shape (n_features,)
        The weights of the standardized features.
    intercept : float
        The intercept.
    mean, scale : ndarray of shape (n_features,)
        The scaler: training mean and standard deviation of each feature.

    Returns
    -------
    ndarray of shape (n_runs,)
        The linear score of each row; a row whose score is not a number (features far outside what the model
        can score) raises ``ValueError`` (never a silent NaN score).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.linear_scoring import linear_score
    >>> X = np.array([[1.0, 2.0], [3.0, 2.0]])
    >>> linear_score(X, np.array([1.0, -1.0]), 0.5, np.array([2.0, 2.0]), np.array([1.0, 2.0])).tolist()
    [-0.5, 1.5]
    """
    w = coef / scale
    with np.errstate(over="ignore", invalid="ignore"):
        z = X @ w + (intercept - float(mean @ w))
    if np.isnan(z).any():
        rows = np.flatnonzero(np.isnan(z))
        raise ValueError(f"the model's score is not a number for {rows.size} of {z.size} rows (first: row "
                         f"{int(rows[0])}): their features are far outside the range the model can score")
    return z


def check_feature_profile(of_matrix: tuple[str, int] | None, profile: str, top_k: int) -> None:
    """A ValueError unless a FeatureMatrix's (profile, top_k) (None: not a FeatureMatrix) is the model's."""
    if of_matrix is not None and of_matrix != (profile, top_k):
        raise ValueError(f"X is a FeatureMatrix computed with profile {of_matrix[0]!r} and top_k {of_matrix[1]}, "
                         f"but this model was fitted on features of profile {profile!r} and top_k "
                         f"{top_k}; extract the features with extract(ts, profile={profile!r}, "
                         f"top_k={top_k})")


def has_alternatives(ts) -> np.ndarray:
    """Whether each run lists top-k alternatives for at least one token (what routes a run in a GAC).

    Parameters
    ----------
    ts : TraceSet
        The runs.

    Returns
    -------
    ndarray of bool, shape (n_runs,)
        True where the run has at least one token with top-k alternatives.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.linear_scoring import has_alternatives
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> bool(has_alternatives(ts).all())
    True
    """
    n = ts.n_trajectories
    if ts.top_logprobs.shape[1] == 0 or ts.n_tokens == 0:
        return np.zeros(n, dtype=bool)
    tok_traj = np.repeat(ts.step_trajectory_index(), np.diff(ts.step_offsets))
    has = ~np.isnan(ts.top_logprobs[:, 0])
    return np.bincount(tok_traj, weights=has, minlength=n) > 0


def check_transfer(t) -> dict | None:
    """Check a GAC's ``transfer`` combination: None, or a dict with a known signal and three finite numbers.

    Parameters
    ----------
    t : dict or None
        ``{"method", "signal", "coef": [a, b, c]}`` and optionally ``"fallback": {"kinds": [...], "coef":
        [a, b, c]}`` and ``"rate_map": [slope, intercept]`` (the base-rate measures of ``assess`` read
        ``sigmoid(slope * logit(confidence) + intercept)``); ``signal`` must be a probability-valued training-free
        signal (:data:`htc_core.calibration.transfer_methods.STACKABLE`).

    Returns
    -------
    dict or None
        ``t`` with ``coef`` as floats (None for None); anything else raises a ValueError saying what is wrong.

    Examples
    --------
    >>> from htc_core.calibration.linear_scoring import check_transfer
    >>> check_transfer({"method": "stack", "signal": "min_prob", "coef": [1, 0.5, 0]})["coef"]
    [1.0, 0.5, 0.0]
    >>> check_transfer({"method": "stack", "signal": "min_prob", "coef": [1, 2]})
    Traceback (most recent call last):
    ...
    ValueError: 'transfer.coef' must be a list of three finite numbers, got [1, 2]
    """
    from .transfer_methods import STACKABLE

    if t is None:
        return None
    if not isinstance(t, dict) or t.get("signal") not in STACKABLE:
        raise ValueError(f"'transfer' must be an object whose 'signal' is one of {sorted(STACKABLE)} (a probability: "
                         f"its logit is combined), got {t!r}")
    coef = t.get("coef")
    if (not isinstance(coef, list) or len(coef) != 3 or
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in coef)):
        raise ValueError(f"'transfer.coef' must be a list of three finite numbers, got {coef!r}")
    fb = t.get("fallback")
    if fb is not None and (not isinstance(fb, dict) or not isinstance(fb.get("kinds"), list)
                           or not set(fb["kinds"]) <= set(KINDS) or not isinstance(fb.get("coef"), list)
                           or len(fb["coef"]) != 3 or not all(isinstance(v, (int, float)) and math.isfinite(v)
                                                              for v in fb["coef"])):
        raise ValueError(f"'transfer.fallback' must be {{'kinds': [...], 'coef': [a, b, c]}}, got {fb!r}")
    rm = t.get("rate_map")
    if rm is not None and (not isinstance(rm, list) or len(rm) != 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in rm)):
        raise ValueError(f"'transfer.rate_map' must be a list of two finite numbers [slope, intercept], got {rm!r}")
    from .rank_ensemble import check_set_level

    out = {**t, "coef": [float(v) for v in coef]}
    sl = t.get("set_level")
    if isinstance(sl, dict) and sl.get("method") == "nearest-family":
        from .signal_choice import check_entry

        out["set_level"] = check_entry(sl)
    elif sl is not None:
        out["set_level"] = check_set_level(sl, check_transfer)
    return out



class LinearScorer(FileScorer):
    """A fitted HTC model read from its file (``htc fit``, ``HTCCalibrator.save``), for scoring only.

    Scores exactly as :class:`~htc_core.calibration.calibrators.HTCCalibrator` (the same :func:`linear_score`,
    bound and sigmoid), with the same learned attributes (``coef_``, ``mean_``, ``scale_``,
    ``feature_names_in_``, ``profile_``, ``top_k_``, ``training_summary_``, ...), without scikit-learn.
    Load an ``HTCCalibrator`` instead to refit, explain or adapt the model.

    Parameters
    ----------
    params : dict
        The constructor parameters recorded in the file (``variant``, ``alphas``, ...), set as attributes.
    state : dict
        The learned attributes (``coef_``, ``intercept_``, ...), set as attributes.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.linear_scoring import LinearScorer
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit_traces(ts)
    >>> scorer = LinearScorer.from_dict(model.to_dict())
    >>> fm = htc.extract(ts)
    >>> bool((scorer.predict_proba(fm) == model.predict_proba(fm)).all())
    True
    """

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "LinearScorer":
        """The scorer of a model file's JSON object, checked as ``HTCCalibrator.from_dict`` checks it.

        Parameters
        ----------
        obj : dict
            The object of an HTC model file.
        source : str, default="model"
            What ``obj`` came from, named in the error messages.

        Returns
        -------
        LinearScorer
            The scorer; anything invalid raises a ValueError saying why.

        Examples
        --------
        >>> from htc_core.calibration.linear_scoring import LinearScorer
        >>> LinearScorer.from_dict({"format": "htc-gac"}, source="upload.json")
        Traceback (most recent call last):
        ...
        ValueError: upload.json is not a valid HTC model file: expected a JSON object with "format": ...
        """
        return cls(*parse_model_dict(obj, source=source))

    def checked(self, X) -> np.ndarray:
        """The model's columns of X (found by name when X has names), as a finite float64 array.

        Parameters
        ----------
        X : FeatureMatrix or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs, d)
            C-ordered float64, d = ``n_features_in_``; a ValueError says what is wrong otherwise.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.calibration.linear_scoring import LinearScorer
        >>> scorer = LinearScorer({}, {"n_features_in_": 2, "feature_names_in_": np.array(["a", "b"]),
        ...                            "profile_": "paper", "top_k_": 5})
        >>> scorer.checked([[1, 2]]).dtype
        dtype('float64')
        """
        values, names, of_matrix = unpack_features_and_names(X)
        check_feature_profile(of_matrix, self.profile_, self.top_k_)
        values = align_columns(values, names, [str(n) for n in self.feature_names_in_])
        try:
            X = np.asarray(values, dtype=np.float64, order="C")
        except (TypeError, ValueError):
            raise ValueError(f"X must be a 2-D array of numbers, got {type(values).__name__}") from None
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D [n_runs, n_features], got an array of shape {X.shape}")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but this model is expecting {self.n_features_in_} "
                             "features as input.")
        check_finite(X)
        return X

    def linear_score(self, X) -> np.ndarray:
        """The linear score of each run (:func:`linear_score`): the logit before the soft bound.

        Parameters
        ----------
        X : FeatureMatrix or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.linear_scoring import LinearScorer
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit_traces(ts)
        >>> LinearScorer.from_dict(model.to_dict()).linear_score(htc.extract(ts)).shape
        (250,)
        """
        return linear_score(self.checked(X), self.coef_[0], self.intercept_[0], self.mean_, self.scale_)

    def decision_function(self, X) -> np.ndarray:
        """The logit of the calibrated confidence: the linear score, softly bounded by the file's ``max_logit``.

        Parameters
        ----------
        X : FeatureMatrix or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.linear_scoring import LinearScorer
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit_traces(ts)
        >>> z = LinearScorer.from_dict(model.to_dict()).decision_function(htc.extract(ts))
        >>> bool((z == model.decision_function(htc.extract(ts))).all())
        True
        """
        return soft_cap(self.linear_score(X), getattr(self, "logit_bound_", None))

    def __repr__(self) -> str:
        return f"LinearScorer(variant={self.variant!r}, selected={int(np.count_nonzero(self.coef_[0]))})"


class GACScoring:
    """How a General Agent Calibrator scores runs: routing by kind, the transfer step, the set-level step and
    the applicability assessment (inherited by ``GeneralCalibrator`` and :class:`GACScorer`).

    A subclass provides ``models`` (``"with_alternatives"`` -> a scorer of ``paper``-profile features or None,
    ``"without_alternatives"`` -> one of ``chosen``-profile features), ``transfer`` (dict or None) and ``card``.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.linear_scoring import GACScoring
    >>> from htc_core.calibration.models import load_scorer
    >>> isinstance(htc.load_model("gac"), GACScoring), isinstance(load_scorer("gac"), GACScoring)
    (True, True)
    """

    def kinds(self, ts) -> np.ndarray:
        """Which model scores each run of a TraceSet.

        Runs that list top-k alternatives for at least one token go to the ``with_alternatives`` model (when
        the GAC has one), all others to the ``without_alternatives`` model.

        Parameters
        ----------
        ts : TraceSet
            The runs.

        Returns
        -------
        ndarray of shape (n_runs,)
            ``"with_alternatives"`` or ``"without_alternatives"`` per run (object dtype).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gac = htc.load_model("gac")
        >>> gac.kinds(ts)[:2]
        array(['with_alternatives', 'with_alternatives'], dtype=object)
        """
        return self._route(has_alternatives(ts))

    def _route(self, alt: np.ndarray) -> np.ndarray:
        alt = np.asarray(alt, dtype=bool).copy()
        if self.models[WITH_ALTERNATIVES] is None:
            alt[:] = False
        return np.where(alt, WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES).astype(object)

    def confidences_traces(self, ts, *, set_level: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The success confidences of a TraceSet's runs, and the same with every run scored on its own, in one pass.

        Parameters
        ----------
        ts : TraceSet
            The runs (labels not needed).
        set_level : bool, default=False
            False: the first array is the per-run one too.

        Returns
        -------
        confidence : ndarray of shape (n_runs,)
            As :meth:`predict_proba_traces` gives them (scored as a set where :meth:`scores_as_set`).
        per_run : ndarray of shape (n_runs,)
            Every run scored on its own (as a Monitor scores it); equal to ``confidence`` unless scored as a set.

        Examples
        --------
        >>> import numpy as np, htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> gac = htc.load_model("gac")
        >>> p, per_run = gac.confidences_traces(ts.take(np.arange(10)))      # 10 runs: scored one by one
        >>> bool(np.array_equal(p, per_run))
        True
        """
        from .transfer_methods import apply_transfer, sigmoid, training_free_signal_arrays

        z = self.decision_function_traces(ts)
        t = check_transfer(self.transfer)
        p = None
        if t is not None:
            sig, kinds = training_free_signal_arrays(ts), self.kinds(ts)
            sl = t.get("set_level") if set_level else None
            if sl and sl["method"] == "nearest-family":
                from .signal_choice import nearest_family_confidences
                from .transfer_methods import signal_matrix

                p = nearest_family_confidences(sl, signal_matrix(sig))[0]
            elif sl:
                from .rank_ensemble import apply_set_level

                p = apply_set_level(sl, z, sig, kinds)
            z = apply_transfer(t, z, sig[t["signal"]], kinds)
        per_run = sigmoid(z)
        return (per_run if p is None else p), per_run

    def scores_as_set(self, n_runs: int) -> bool:
        """Whether :meth:`predict_proba_traces` scores ``n_runs`` runs as a set rather than one by one.

        Parameters
        ----------
        n_runs : int
            The runs scored together.

        Returns
        -------
        bool
            True where the ``transfer`` holds a ``set_level`` step and ``n_runs`` is at least its ``min_runs``.

        Examples
        --------
        The shipped files hold no set-level step (none won leave-one-family-out); one added by hand:

        >>> import htc_core as htc
        >>> gac = htc.load_model("gac")
        >>> gac.scores_as_set(50)
        False
        >>> ranker = {"method": "stack-oof", "signal": "min_prob", "coef": [1.0, 0.5, 0.0], "fill": 0.3}
        >>> gac.transfer = {**ranker, "set_level": {"method": "rank-mean-platt", "coef": [0.85, -0.45],
        ...                                         "min_runs": 50, "ranker": ranker}}
        >>> gac.scores_as_set(49), gac.scores_as_set(50)
        (False, True)
        """
        sl = (self.transfer or {}).get("set_level")
        return bool(sl) and n_runs >= int(sl["min_runs"])

    def decision_function_traces(self, ts) -> np.ndarray:
        """The routed model's logit for each run of a TraceSet (before any ``transfer`` combination).

        Each run is scored by the model :meth:`kinds` names, on features of that model's profile and top-k.

        Parameters
        ----------
        ts : TraceSet
            The runs.

        Returns
        -------
        ndarray of shape (n_runs,)
            The logit of each run.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gac = htc.load_model("gac")
        >>> z = gac.decision_function_traces(ts)
        >>> z.shape, bool(abs(z).max() < 10)
        ((250,), True)
        """
        from ..features import extract

        models = self.models            # an unfitted estimator raises NotFittedError here
        kinds = self.kinds(ts)
        z = np.empty(len(kinds))
        for kind in KINDS:
            rows = np.flatnonzero(kinds == kind)
            if len(rows):
                m = models[kind]
                sub = ts if len(rows) == len(kinds) else ts.take(rows)
                z[rows] = m.decision_function(extract(sub, profile=m.profile_, top_k=m.top_k_))
        return z

    def assess(self, shift_report, alternatives: np.ndarray, confidence: np.ndarray,
               per_run_confidence: np.ndarray | None = None):
        """The applicability verdict and expected ECE range of a run set scored zero-shot.

        The run set's shift (feature shift, base-rate gap, share of runs without alternatives) is compared with
        the leave-one-family-out points of the model card (:func:`~.expected_error.expected_ece`). Where the set
        was scored as a set (a ``set_level`` transfer), pass ``per_run_confidence`` too: the base-rate measures
        are taken from it, since a set-level confidence's mean hardly moves with the set's base rate, and the
        range comes from the card's points of the set-level method (``points``) instead of those of the per-run
        one (``points_per_run``). A transfer with a ``rate_map`` (``signal-oof``) takes the base-rate measures on
        its confidences before their out-of-family flattening (``sigmoid(slope * logit(p) + intercept)``).

        Parameters
        ----------
        shift_report : ShiftReport
            The run set's :func:`~htc_core.calibration.shift.shift_check` against this GAC.
        alternatives : array-like of bool, shape (n_runs,)
            Whether each run lists top-k alternatives.
        confidence : array-like of shape (n_runs,)
            The GAC's confidences of the runs.
        per_run_confidence : array-like of shape (n_runs,), optional
            The same runs scored one by one (``predict_proba_traces(ts, set_level=False)``).

        Returns
        -------
        ExpectedError
            The verdict, the expected ECE range and the measures behind it.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gac = htc.load_model("gac")
        >>> p, per_run = gac.confidences_traces(ts)
        >>> expected = gac.assess(htc.shift_check(gac, ts), gac.kinds(ts) == "with_alternatives", p, per_run)
        >>> expected.verdict, bool(0 <= expected.low <= expected.high <= 1)
        ('within the training data', True)
        """
        from .expected_error import expected_ece
        from .transfer_methods import em_prior

        info = (self.card or {}).get("expected_error") or {}
        rate = float(info.get("training_rate", self.models[WITHOUT_ALTERNATIVES].training_summary_.get(
            "positive_rate", 0.5)))
        raw_set = np.asarray(confidence, dtype=np.float64)
        raw = raw_set if per_run_confidence is None else np.asarray(per_run_confidence, dtype=np.float64)
        rm = (self.transfer or {}).get("rate_map")
        if rm and raw.size:
            # a transfer that flattens its confidences toward the training base rate (signal-oof) measures the base
            # rate on them before the flattening, where a shifted base rate still moves their mean
            from .transfer_methods import logit

            raw = sigmoid(rm[0] * logit(raw) + rm[1])
        measures = {"max_shift": 0.0 if not shift_report.known or np.isnan(shift_report.max_shift)
                    else float(shift_report.max_shift),
                    "rate_gap": abs(float(raw.mean()) - rate) if raw.size else 0.0,
                    "em_gap": abs(em_prior(raw, rate).prior - rate) if raw.size else 0.0,
                    "missing_topk": float((~np.asarray(alternatives, bool)).mean())
                    - float(info.get("training_share_without_alternatives", 0.0)) if raw.size else 0.0}
        # scored as a set: the points of the set-level method; run by run: those of the per-run method
        as_set = per_run_confidence is not None and not np.array_equal(np.asarray(per_run_confidence), raw_set)
        points = info.get("points") if as_set else info.get("points_per_run", info.get("points"))
        return expected_ece(list(points or []), measures, confidence)

    def rescore_as_set(self, ts, per_run: np.ndarray) -> np.ndarray | None:
        """The set-level confidences of ``ts`` from its runs' per-run confidences (stored earlier), without
        extracting features again: the runs' ranks by ``logit(per_run)`` and the three training-free signals
        (``rank-mean-platt``), or the signal a ``nearest-family`` step chooses for ``ts``.

        Exact where the set-level entry's ranker is the per-run transfer itself (``nearest-family`` has none).

        Parameters
        ----------
        ts : TraceSet
            The runs (their tokens give the training-free signals).
        per_run : ndarray of shape (n_runs,)
            Their confidences scored one by one (``predict_proba_traces(ts, set_level=False)``).

        Returns
        -------
        ndarray of shape (n_runs,) or None
            None where :meth:`predict_proba_traces` would not score ``ts`` as a set, or where the ranker differs
            from the per-run transfer (then score ``ts`` itself).

        Examples
        --------
        >>> import numpy as np, htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> gac = htc.load_model("gac")
        >>> ranker = {"method": "stack-oof", "signal": "min_prob", "coef": [1.0, 0.5, 0.0], "fill": 0.3}
        >>> gac.transfer = {**ranker, "set_level": {"method": "rank-mean-platt", "coef": [0.85, -0.45],
        ...                                         "min_runs": 50, "ranker": ranker}}   # none is shipped
        >>> p, per_run = gac.confidences_traces(ts, set_level=True)
        >>> bool(np.allclose(gac.rescore_as_set(ts, per_run), p))
        True
        """
        from .rank_ensemble import rank_mean
        from .transfer_methods import logit, sigmoid, signal_matrix, training_free_signal_arrays

        t = check_transfer(self.transfer)
        sl = (t or {}).get("set_level")
        if not sl or not self.scores_as_set(len(per_run)):
            return None
        if sl["method"] == "nearest-family":          # the set's own signals choose; no ranker to re-read
            from .signal_choice import nearest_family_confidences

            return nearest_family_confidences(sl, signal_matrix(training_free_signal_arrays(ts)))[0]
        if {k: v for k, v in t.items() if k != "set_level"} != sl["ranker"]:
            return None
        S = np.column_stack([logit(per_run), signal_matrix(training_free_signal_arrays(ts))])
        a, b = sl["coef"]
        return sigmoid(a * logit(rank_mean(S)) + b)


def check_gac_models(models: dict) -> None:
    """A ValueError unless ``models`` maps known kinds to sub-models, ``without_alternatives`` one of them."""
    if models.get(WITHOUT_ALTERNATIVES) is None:
        raise ValueError("models must hold a 'without_alternatives' calibrator (it scores every run without "
                         "alternatives)")
    unknown = set(models) - set(KINDS)
    if unknown:
        raise ValueError(f"models keys must be among {KINDS}, got {sorted(unknown)}")


def parse_gac_dict(obj: Any, source: str, read_model) -> tuple[dict, dict]:
    """(sub-models by kind, read with ``read_model(obj, source=...)``; ``name``, ``card`` and ``transfer``) of
    a GAC model file's object; a ValueError names ``source`` and what is wrong with the file's frame."""
    if not isinstance(obj, dict) or obj.get("format") != GAC_FORMAT:
        raise ValueError(f"{source} is not a GAC model file (expected \"format\": \"{GAC_FORMAT}\")")
    ver = obj.get("format_version")
    if not isinstance(ver, int) or not 1 <= ver <= GAC_FORMAT_VERSION:
        raise ValueError(f"{source} is not a valid GAC model file: unsupported format_version {ver!r}")
    models = obj.get("models")
    if not isinstance(models, dict):
        raise ValueError(f"{source} is not a valid GAC model file: 'models' must be an object")
    parsed = {k: read_model(v, source=f"{source} (models.{k})") for k, v in models.items()
              if v is not None and k in KINDS}
    return parsed, {"name": str(obj.get("name", "gac")), "card": obj.get("card") or {},
                    "transfer": obj.get("transfer")}


class GACScorer(GACScoring):
    """A General Agent Calibrator read from its file (``gac``, ``gac-full``, ``gac-prefix`` or one of yours),
    for scoring only.

    Scores exactly as :class:`~htc_core.calibration.general.GeneralCalibrator` (both inherit
    :class:`GACScoring`; the sub-models are :class:`LinearScorer` s), without scikit-learn or pandas.

    Parameters
    ----------
    models : dict
        ``"with_alternatives"`` (may be None or absent) and ``"without_alternatives"`` (required) mapped to
        :class:`LinearScorer` s.
    name : str, default="gac"
        The model's name.
    card : dict, optional
        The model card.
    transfer : dict, optional
        The combination with a training-free signal (:func:`check_transfer`).

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> from htc_core.calibration.models import load_scorer
    >>> scorer, gac = load_scorer("gac"), htc.load_model("gac")
    >>> scorer
    GACScorer(name='gac', variant='reduced', models=['with_alternatives', 'without_alternatives'])
    >>> bool((scorer.confidences_traces(ts)[0] == gac.confidences_traces(ts)[0]).all())
    True
    """

    def __init__(self, models: dict, *, name: str = "gac", card: dict | None = None, transfer: dict | None = None):
        check_gac_models(models)
        base = models[WITHOUT_ALTERNATIVES]
        self.models_ = {k: models.get(k) for k in KINDS}
        self.name, self.card, self.transfer = name, dict(card or {}), check_transfer(transfer)
        self.variant, self.top_k = base.variant, int(base.top_k_)

    @property
    def models(self) -> dict:
        """The sub-models by kind.

        Returns
        -------
        dict
            ``"with_alternatives"`` and ``"without_alternatives"`` mapped to a :class:`LinearScorer` (the first
            may be None).

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.models import load_scorer
        >>> {k: m.profile_ for k, m in load_scorer("gac").models.items()}
        {'with_alternatives': 'paper', 'without_alternatives': 'chosen'}
        """
        return self.models_

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "GACScorer":
        """The scorer of a GAC model file's JSON object, checked as ``GeneralCalibrator.from_dict`` checks it.

        Parameters
        ----------
        obj : dict
            The object of a GAC model file.
        source : str, default="model"
            What ``obj`` came from, named in the error messages.

        Returns
        -------
        GACScorer
            The scorer; anything invalid raises a ValueError saying why.

        Examples
        --------
        >>> from htc_core.calibration.linear_scoring import GACScorer
        >>> GACScorer.from_dict({"format": "htc-gac", "format_version": 1, "models": []}, source="upload.json")
        Traceback (most recent call last):
        ...
        ValueError: upload.json is not a valid GAC model file: 'models' must be an object
        """
        parsed, kw = parse_gac_dict(obj, source, LinearScorer.from_dict)
        try:
            return cls(parsed, **kw)
        except ValueError as e:
            raise ValueError(f"{source} is not a valid GAC model file: {e}") from None

    def __repr__(self) -> str:
        have = [k for k, m in self.models_.items() if m is not None]
        return f"GACScorer(name={self.name!r}, variant={self.variant!r}, models={have})"
