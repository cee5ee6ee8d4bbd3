"""The General Agent Calibrator as a model file: two HTC calibrators and the rule that picks one per run.

Runs with top-k alternatives and runs without them give systematically different features (TopkConf and
Top1Conf fall back to r), and a calibrator fitted on one kind transfers badly to the other (measured by
:func:`htc_core.experiments.gac.gac_leave_one_out`, strategy "pooled" vs "by-kind"). So a GAC holds:

- ``with_alternatives``: an HTC calibrator on ``paper``-profile features, fitted on the runs that list
  alternatives; it scores runs that list them;
- ``without_alternatives``: an HTC calibrator on ``chosen``-profile features (alternatives ignored, so
  every run has the same definitions), fitted on all runs; it scores runs without alternatives (and every
  run when the first model is absent).

Optionally (``transfer``, chosen leave-one-family-out by :mod:`htc_core.experiments.transfer_lofo`), the
routed model's logit is combined with a training-free signal of the run
(:mod:`htc_core.calibration.transfer_methods`): ``sigmoid(a z + b logit(signal) + c)``. The signal is read off
the runs' tokens, so a GAC with a ``transfer`` scores TraceSets (:meth:`GeneralCalibrator.predict_proba_traces`).
A ``transfer.set_level`` entry (:mod:`htc_core.calibration.rank_ensemble`) scores a TraceSet of enough runs as a
set: each run by its mean rank within the set of the combined logit and the training-free signals.
:meth:`GeneralCalibrator.assess` gives every zero-shot score its applicability verdict and expected ECE range
(:mod:`htc_core.calibration.expected_error`, from the card's leave-one-family-out points).

The file is JSON (``"format": "htc-gac"``) holding both model files and the model card; never pickle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .calibrators import HTCCalibrator
from .inputs import TraceSetMixin, check_predict_data, check_saveable_labels, unpack_features, validate_fit_data
# the scoring maths (routing, transfer, set level, assessment) and the file's frame live in linear_scoring, which
# scores without scikit-learn (htc score); the names below are re-exported from here as before
from .linear_scoring import (GAC_FORMAT, GAC_FORMAT_VERSION, KIND_PROFILE, KINDS, WITH_ALTERNATIVES,  # noqa: F401
                             WITHOUT_ALTERNATIVES, GACScoring, check_gac_models, check_transfer, has_alternatives,
                             parse_gac_dict)
from .model_file import read_model_file
from .solvers import DEFAULT_ALPHAS

__all__ = ["GeneralCalibrator", "GACScores", "check_transfer", "GAC_FORMAT", "GAC_FORMAT_VERSION", "fit_general", "gac_features",
           "load_any_model"]



@dataclass
class GACScores:
    """Zero-shot confidences of a GAC for each run, and which of its models scored it.

    Made by :meth:`GeneralCalibrator.score_traces`.

    Parameters
    ----------
    name : str
        The GAC's name.
    variant : str
        Its variant, ``"reduced"`` or ``"full"``.
    ids : ndarray of shape (n_runs,)
        The run ids.
    confidence : ndarray of shape (n_runs,)
        The calibrated confidence of each run.
    kind : ndarray of shape (n_runs,)
        ``"with_alternatives"`` or ``"without_alternatives"``: the model that scored each run.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> scores = htc.load_model("gac").score_traces(ts)
    >>> scores.name, len(scores.ids), bool(((scores.confidence > 0) & (scores.confidence < 1)).all())
    ('gac', 250, True)
    """

    name: str
    variant: str
    ids: np.ndarray
    confidence: np.ndarray
    kind: np.ndarray            # "with_alternatives" / "without_alternatives" per run

    def to_frame(self) -> pd.DataFrame:
        """One row per run.

        Returns
        -------
        DataFrame
            Columns ``id``, ``confidence`` and ``gac_model`` (the kind of model that scored the run).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> htc.load_model("gac").score_traces(ts).to_frame().columns.tolist()
        ['id', 'confidence', 'gac_model']
        """
        return pd.DataFrame({"id": self.ids, "confidence": self.confidence, "gac_model": self.kind})

    def to_dict(self) -> dict:
        """The scores as a JSON object.

        Returns
        -------
        dict
            ``model``, ``variant`` and ``runs``: a list of ``{"id", "confidence", "gac_model"}``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> d = htc.load_model("gac").score_traces(ts).to_dict()
        >>> d["model"], len(d["runs"]), sorted(d["runs"][0])
        ('gac', 250, ['confidence', 'gac_model', 'id'])
        """
        return {"model": self.name, "variant": self.variant,
                "runs": [{"id": str(i), "confidence": float(c), "gac_model": str(k)}
                         for i, c, k in zip(self.ids, self.confidence, self.kind)]}

    def counts(self) -> dict:
        """How many runs each of the GAC's two models scored.

        Returns
        -------
        dict
            ``{"with_alternatives": int, "without_alternatives": int}``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> htc.load_model("gac").score_traces(ts).counts()
        {'with_alternatives': 250, 'without_alternatives': 0}
        """
        return {k: int((self.kind == k).sum()) for k in KINDS}


#: the column of :func:`gac_features` that routes each run, and the prefixes of its two feature blocks
ROUTING_COLUMN = "has_alternatives"
BLOCK_PREFIX = {WITH_ALTERNATIVES: "paper:", WITHOUT_ALTERNATIVES: "chosen:"}


def gac_features(ts, *, top_k: int = 5) -> pd.DataFrame:
    """The feature frame a :class:`GeneralCalibrator` is fitted on and scores: one row per run.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    top_k : int, default=5
        The top-k of TopkConf (as :func:`htc_core.extract`).

    Returns
    -------
    DataFrame
        Indexed by run id (index name ``"id"``). Column ``has_alternatives`` (1 where the run lists top-k
        alternatives, else 0) routes the run; then the 48 features of the ``paper`` profile (columns
        ``paper:<feature>``, for the with-alternatives model) and the 48 of the ``chosen`` profile
        (``chosen:<feature>``, for the without-alternatives model).

    Examples
    --------
    >>> from htc_core import load
    >>> from htc_core.calibration.general import gac_features
    >>> ts, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> X = gac_features(ts)
    >>> X.shape[1], X.columns[0], X.columns[1]
    (97, 'has_alternatives', 'paper:top1_gradient_mean')
    """
    from ..features import extract

    parts = [pd.DataFrame({ROUTING_COLUMN: has_alternatives(ts).astype(np.float64)},
                          index=pd.Index(np.asarray(ts.ids, dtype=object), name="id"))]
    for kind in KINDS:
        fm = extract(ts, profile=KIND_PROFILE[kind], top_k=top_k)
        parts.append(fm.to_frame().add_prefix(BLOCK_PREFIX[kind]))
    return pd.concat(parts, axis=1)


def _split_layout(X: np.ndarray, names: list[str] | None) -> tuple[np.ndarray, dict, dict]:
    """(alt flags, {kind: block}, {kind: block names or None}) of a GAC design matrix; a ValueError says how
    X must look otherwise."""
    n = X.shape[1]
    if n < 3 or n % 2 == 0:
        raise ValueError(f"X must hold the GAC layout (build it with gac_features(ts)): a 0/1 has_alternatives "
                         f"column, then two feature blocks of equal width; got {n} columns")
    d = (n - 1) // 2
    flag = X[:, 0]
    bad = ~((flag == 0) | (flag == 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"X's column 0 must be the 0/1 has_alternatives flag (build X with gac_features(ts)), "
                         f"got {float(flag[i])!r} at row {i}")
    blocks = {WITH_ALTERNATIVES: X[:, 1:1 + d], WITHOUT_ALTERNATIVES: X[:, 1 + d:]}
    block_names = {k: None for k in KINDS}
    if names is not None:
        for kind, cols in ((WITH_ALTERNATIVES, names[1:1 + d]), (WITHOUT_ALTERNATIVES, names[1 + d:])):
            pre = BLOCK_PREFIX[kind]
            block_names[kind] = [c[len(pre):] if c.startswith(pre) else c for c in cols]
    return flag.astype(bool), blocks, block_names


class GeneralCalibrator(TraceSetMixin, GACScoring, ClassifierMixin, BaseEstimator):
    """The General Agent Calibrator: two HTC calibrators and the rule that picks one per run.

    A scikit-learn classifier on the frame of :func:`gac_features` (``fit(X, y)``, ``predict_proba(X)``,
    ``get_params``, ``clone``, ``cross_val_score``); :meth:`fit_traces`, :meth:`predict_proba_traces` and
    :meth:`score_traces` take a TraceSet. :meth:`from_models` wraps two calibrators fitted elsewhere, and
    :meth:`load` reads a GAC model file. The scoring methods ``kinds``, ``confidences_traces``,
    ``decision_function_traces``, ``scores_as_set``, ``assess`` and ``rescore_as_set`` are inherited from
    :class:`~htc_core.calibration.linear_scoring.GACScoring` (numpy only: ``htc score`` scores with them too).

    Parameters
    ----------
    variant : {"reduced", "full"}, default="reduced"
        HTC-Reduced (L1) or HTC-Full (L2) for both models.
    alphas : sequence of float, default=DEFAULT_ALPHAS
        The candidate penalties of each model's inner CV.
    inner_folds : int, default=5
        Stratified folds of each model's alpha selection.
    random_state : int or None, default=42
        Seed of the inner folds.
    top_k : int, default=5
        The top-k of the features (recorded in both models).
    name : str, default="gac"
        The model's name (shown by the CLI and the dashboard).
    card : dict or None, default=None
        The model card, a JSON object saved with the model.
    transfer : dict or None, default=None
        A fixed combination of the routed logit with a training-free signal,
        ``{"method", "signal", "coef": [a, b, c], "fallback": {"kinds", "coef"} (optional)}``, as the shipped
        models hold it (chosen by ``python -m htc_dev.train_gac``); :meth:`fit` leaves it as given. It needs
        the runs' tokens, so only the TraceSet methods apply it.

    Attributes
    ----------
    models_ : dict
        ``"with_alternatives"`` -> the HTC calibrator of the runs that list alternatives (``paper``
        profile; None when too few such runs were labeled), ``"without_alternatives"`` -> the one of
        every run (``chosen`` profile). Also readable as ``models``.
    classes_ : ndarray of shape (2,)
        The labels, failure first.
    n_features_in_ : int
        Columns of X (97 for :func:`gac_features`).

    Examples
    --------
    >>> from htc_core import load
    >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
    >>> ts, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> gac = GeneralCalibrator(alphas=(0.1, 1.0)).fit(gac_features(ts), ts.labels)
    >>> sorted(k for k, m in gac.models_.items() if m is not None)
    ['with_alternatives', 'without_alternatives']
    >>> gac.predict_proba(gac_features(ts)).shape == (len(ts), 2)
    True
    """

    def __init__(self, variant: str = "reduced", alphas: Sequence[float] = DEFAULT_ALPHAS, inner_folds: int = 5,
                 random_state: int | None = 42, top_k: int = 5, name: str = "gac", card: dict | None = None,
                 transfer: dict | None = None):
        self.variant = variant
        self.alphas = alphas
        self.inner_folds = inner_folds
        self.random_state = random_state
        self.top_k = top_k
        self.name = name
        self.card = card
        self.transfer = transfer

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "models_")

    @classmethod
    def from_models(cls, models: dict, *, name: str = "gac", card: dict | None = None,
                    transfer: dict | None = None) -> "GeneralCalibrator":
        """A fitted GAC from two :class:`HTCCalibrator` s fitted elsewhere.

        Parameters
        ----------
        models : dict
            ``"with_alternatives"`` (may be None or absent: every run is then scored by the other model) and
            ``"without_alternatives"`` (required) mapped to fitted calibrators, of the ``paper`` and the
            ``chosen`` profile respectively.
        name : str, default="gac"
            The model's name.
        card : dict, optional
            The model card.
        transfer : dict, optional
            A combination with a training-free signal (see the class parameters), checked by
            :func:`check_transfer`.

        Returns
        -------
        GeneralCalibrator
            The fitted GAC.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> chosen = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts, profile="chosen"), ts.labels)
        >>> gac = GeneralCalibrator.from_models({"without_alternatives": chosen}, name="mine")
        >>> gac
        GeneralCalibrator(name='mine', variant='reduced', models=['without_alternatives'])
        >>> gac.predict_proba_traces(ts).shape
        (250, 2)
        """
        check_gac_models(models)
        base = models[WITHOUT_ALTERNATIVES]
        gac = cls(variant=base.variant, alphas=tuple(np.ravel(base.alpha_candidates_).tolist())
                  if hasattr(base, "alpha_candidates_") else DEFAULT_ALPHAS, inner_folds=base.inner_folds,
                  random_state=base.random_state, top_k=int(base.top_k_), name=name, card=dict(card or {}),
                  transfer=check_transfer(transfer))
        gac.models_ = {k: models.get(k) for k in KINDS}
        gac.classes_ = np.array([0, 1])
        gac.n_features_in_ = 1 + 2 * int(base.n_features_in_)
        return gac

    @property
    def models(self) -> dict:
        """The fitted sub-models (``models_``).

        Returns
        -------
        dict
            ``"with_alternatives"`` and ``"without_alternatives"`` mapped to an :class:`HTCCalibrator` (the first
            may be None).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gac = htc.load_model("gac")
        >>> {kind: m.profile_ for kind, m in gac.models.items()}
        {'with_alternatives': 'paper', 'without_alternatives': 'chosen'}
        """
        check_is_fitted(self)
        return self.models_

    def _sub(self, kind: str) -> HTCCalibrator:
        return HTCCalibrator(variant=self.variant, alphas=self.alphas, inner_folds=self.inner_folds,
                             random_state=self.random_state, profile=KIND_PROFILE[kind], top_k=self.top_k)

    def fit(self, X, y, *, meta=None) -> "GeneralCalibrator":
        """Fit the with-alternatives model on the runs flagged in X and the without-alternatives model on all.

        The with-alternatives model is skipped when fewer than 2 runs of each outcome list alternatives.

        Parameters
        ----------
        X : DataFrame or array of shape (n_runs, 1 + 2 * n_features)
            The frame of :func:`gac_features` (or an array of its layout).
        y : array-like of shape (n_runs,)
            Binary labels (success = the larger label).
        meta : DataFrame, optional
            The runs' metadata (fills the training summaries' datasets and models).

        Returns
        -------
        self : GeneralCalibrator

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gac = GeneralCalibrator(alphas=(1.0,)).fit(gac_features(ts), ts.labels, meta=ts.meta)
        >>> gac.models_["without_alternatives"].training_summary_["n"]
        250
        """
        X, y01, classes, names, _ = validate_fit_data(self, X, y)
        alt, blocks, block_names = _split_layout(X, names)
        models = {}
        rows = np.flatnonzero(alt)
        if len(rows) and min(int(y01[rows].sum()), int(len(rows) - y01[rows].sum())) >= 2:
            sub_meta = None if meta is None else meta.iloc[rows]
            models[WITH_ALTERNATIVES] = self._sub(WITH_ALTERNATIVES).fit(
                blocks[WITH_ALTERNATIVES][rows], y01[rows], feature_names=block_names[WITH_ALTERNATIVES],
                meta=sub_meta)
        models[WITHOUT_ALTERNATIVES] = self._sub(WITHOUT_ALTERNATIVES).fit(
            blocks[WITHOUT_ALTERNATIVES], y01, feature_names=block_names[WITHOUT_ALTERNATIVES], meta=meta)
        self.models_ = {k: models.get(k) for k in KINDS}
        self.classes_ = classes
        return self

    def fit_traces(self, ts) -> "GeneralCalibrator":
        """:meth:`fit` on every labeled run of a TraceSet.

        Parameters
        ----------
        ts : TraceSet
            The runs (unlabeled ones are left out).

        Returns
        -------
        self : GeneralCalibrator

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> gac = GeneralCalibrator(alphas=(1.0,)).fit_traces(ts)
        >>> sorted(k for k, m in gac.models_.items() if m is not None)
        ['with_alternatives', 'without_alternatives']
        """
        ts = ts.labeled()
        return self.fit(gac_features(ts, top_k=self.top_k), ts.labels, meta=ts.meta)

    def predict_proba(self, X) -> np.ndarray:
        """The probabilities of failure and success, each run scored by its kind's model.

        Parameters
        ----------
        X : DataFrame or array of the :func:`gac_features` layout
            The runs' features. (A TraceSet is accepted too and scored as :meth:`predict_proba_traces` does,
            for callers of the earlier API.)

        Returns
        -------
        ndarray of shape (n_runs, 2)

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> X = gac_features(ts)
        >>> GeneralCalibrator(alphas=(1.0,)).fit(X, ts.labels).predict_proba(X).shape
        (250, 2)
        """
        from ..traces import TraceSet

        if isinstance(X, TraceSet):
            return self.predict_proba_traces(X)
        check_is_fitted(self)
        if self.transfer is not None:
            raise ValueError(f"GAC {self.name!r} combines its logit with a training-free signal of the runs' tokens "
                             f"({self.transfer.get('signal')}), which a feature frame does not hold: score a "
                             "TraceSet with predict_proba_traces(ts)")
        values, names, _ = unpack_features(X)
        X = check_predict_data(self, values)
        alt, blocks, block_names = _split_layout(X, names)
        kinds = self._route(alt)
        p = np.empty(len(kinds))
        for kind in KINDS:
            rows = np.flatnonzero(kinds == kind)
            if len(rows):
                m = self.models[kind]
                cols = blocks[kind][rows]
                if block_names[kind] is not None:
                    cols = pd.DataFrame(cols, columns=block_names[kind])
                p[rows] = m.predict_proba(cols)[:, 1]
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The predicted outcome: the success class where the calibrated confidence exceeds 0.5.

        Parameters
        ----------
        X : DataFrame or array of the :func:`gac_features` layout
            The runs' features (or a TraceSet, as for :meth:`predict_proba`).

        Returns
        -------
        ndarray of shape (n_runs,)
            ``classes_[1]`` where the confidence exceeds 0.5, else ``classes_[0]``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> X = gac_features(ts)
        >>> gac = GeneralCalibrator(alphas=(1.0,)).fit(X, ts.labels)
        >>> pred = gac.predict(X)
        >>> pred.shape, sorted(set(pred.tolist())) == [0, 1]
        ((250,), True)
        """
        p = self.predict_proba(X)[:, 1]
        return self.classes_[(p > 0.5).astype(int)]

    def predict_proba_traces(self, ts, *, set_level: bool = False) -> np.ndarray:
        """The probabilities of a TraceSet's runs, each scored by its kind's model on that model's own features.

        With a ``transfer`` entry, the routed logit is combined with the run's training-free signal. Each run is
        scored on its own (its number never depends on the other runs of ``ts``). Only with ``set_level=True``,
        an entry that holds a ``set_level`` map and at least its ``min_runs`` runs, are the runs scored as a
        set: each run's mean rank, within ``ts``, of the combined logit and the three training-free signals goes
        through the map (:func:`~.rank_ensemble.apply_set_level`), so a run's confidence then depends on the
        other runs scored with it. A live Monitor scores one run at a time and never does this.

        Parameters
        ----------
        ts : TraceSet
            The runs (labels not needed).
        set_level : bool, default=False
            True: score ``ts`` as a set where the entry holds a ``set_level`` map (opt-in: ``htc score --as-set``);
            False: every run scored on its own (the per-run confidence the dashboard and a Monitor give).

        Returns
        -------
        ndarray of shape (n_runs, 2)

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> htc.load_model("gac").predict_proba_traces(ts).shape
        (250, 2)
        """
        p = self.confidences_traces(ts, set_level=set_level)[0]
        return np.column_stack([1.0 - p, p])

    def score_traces(self, ts, *, set_level: bool = False) -> GACScores:
        """Every run of a TraceSet scored zero-shot (labels not needed).

        Parameters
        ----------
        ts : TraceSet
            The runs.
        set_level : bool, default=False
            As in :meth:`predict_proba_traces` (False: every run scored on its own).

        Returns
        -------
        GACScores
            Ids, confidences and which model scored each run (``to_frame()``, ``counts()``).

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> htc.load_model("gac").score_traces(ts).counts()
        {'with_alternatives': 250, 'without_alternatives': 0}
        """
        return GACScores(name=self.name, variant=self.variant, ids=np.asarray(ts.ids, dtype=object),
                         confidence=self.predict_proba_traces(ts, set_level=set_level)[:, 1], kind=self.kinds(ts))

    def score(self, X, y=None, sample_weight=None):
        """The accuracy on a feature frame and labels (scikit-learn's ``score``).

        Parameters
        ----------
        X : DataFrame or array of the :func:`gac_features` layout
            The runs' features. A TraceSet (the earlier API) is scored by :meth:`score_traces` instead.
        y : array-like of shape (n_runs,)
            The labels.
        sample_weight : array-like of shape (n_runs,), optional
            Weights of the runs.

        Returns
        -------
        float or GACScores
            The share of runs whose predicted outcome is right (:class:`GACScores` for a TraceSet).

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> X = gac_features(ts)
        >>> gac = GeneralCalibrator(alphas=(1.0,)).fit(X, ts.labels)
        >>> bool(0.5 < gac.score(X, ts.labels) <= 1)
        True
        """
        from ..traces import TraceSet

        if isinstance(X, TraceSet):
            return self.score_traces(X)
        return super().score(X, y, sample_weight=sample_weight)

    def to_dict(self) -> dict:
        """The GAC model file's JSON object (both model files and the card).

        Returns
        -------
        dict
            ``format`` (``"htc-gac"``), ``format_version``, ``name``, ``variant``, ``routing``, ``models``,
            ``transfer`` and ``card``: what :meth:`save` writes and :meth:`from_dict` reads.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> X = gac_features(ts)
        >>> gac = GeneralCalibrator(alphas=(1.0,)).fit(X, ts.labels)
        >>> d = gac.to_dict()
        >>> d["format"], sorted(d["models"])
        ('htc-gac', ['with_alternatives', 'without_alternatives'])
        """
        check_is_fitted(self)
        check_saveable_labels(self)
        return {"format": GAC_FORMAT, "format_version": GAC_FORMAT_VERSION, "name": self.name,
                "variant": self.variant,
                "routing": "runs that list top-k alternatives -> models.with_alternatives ('paper' profile); "
                           "runs without -> models.without_alternatives ('chosen' profile)",
                "models": {k: (None if m is None else m.to_dict()) for k, m in self.models.items()},
                "transfer": check_transfer(self.transfer), "card": dict(self.card or {})}

    def save(self, path: str | Path) -> Path:
        """Write the GAC as JSON (atomic: a failed save leaves the previous file intact).

        Parameters
        ----------
        path : str or path
            The model file (its folder is made if missing).

        Returns
        -------
        Path
            The file written.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> X = gac_features(ts)
        >>> gac = GeneralCalibrator(alphas=(1.0,)).fit(X, ts.labels)
        >>> import os, tempfile
        >>> path = gac.save(os.path.join(tempfile.mkdtemp(), "gac.json"))
        >>> GeneralCalibrator.load(path)
        GeneralCalibrator(name='gac', variant='reduced', models=['with_alternatives', 'without_alternatives'])
        """
        from ..atomic import write_text

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "GeneralCalibrator":
        """A fitted GAC from a GAC model file's JSON object.

        Parameters
        ----------
        obj : dict
            The object of a GAC model file (:meth:`to_dict`).
        source : str, default="model"
            What ``obj`` came from, named in the error messages.

        Returns
        -------
        GeneralCalibrator
            The fitted GAC; anything invalid raises a ValueError saying why.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.general import GeneralCalibrator, gac_features
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> X = gac_features(ts)
        >>> gac = GeneralCalibrator(alphas=(1.0,)).fit(X, ts.labels)
        >>> import numpy as np
        >>> again = GeneralCalibrator.from_dict(gac.to_dict())
        >>> bool(np.array_equal(again.predict_proba(X), gac.predict_proba(X)))
        True
        >>> GeneralCalibrator.from_dict({"format": "htc-calibrator"}, source="upload.json")
        Traceback (most recent call last):
        ...
        ValueError: upload.json is not a GAC model file (expected "format": "htc-gac")
        """
        parsed, kw = parse_gac_dict(obj, source, HTCCalibrator.from_dict)
        try:
            return cls.from_models(parsed, **kw)
        except ValueError as e:
            raise ValueError(f"{source} is not a valid GAC model file: {e}") from None

    @classmethod
    def load(cls, path: str | Path) -> "GeneralCalibrator":
        """Read a GAC model file written by :meth:`save`.

        Parameters
        ----------
        path : str or path
            The model file; anything but a valid GAC model file raises a ValueError saying why.

        Returns
        -------
        GeneralCalibrator
            The fitted GAC.

        Examples
        --------
        >>> from htc_core.calibration.general import GeneralCalibrator
        >>> GeneralCalibrator.load("nothing-here.json")
        Traceback (most recent call last):
        ...
        ValueError: model file nothing-here.json does not exist
        """
        return cls.from_dict(read_model_file(path), source=str(Path(path)))

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        have = [k for k, m in self.models_.items() if m is not None] if hasattr(self, "models_") else None
        fitted = f", models={have}" if have is not None else ""
        return f"GeneralCalibrator(name={self.name!r}, variant={self.variant!r}{fitted})"


def fit_general(ts, *, variant: str = "reduced", name: str = "gac", card: dict | None = None, seed: int = 42,
                top_k: int = 5, **fit_kw) -> GeneralCalibrator:
    """Fit a GAC on every labeled run of a TraceSet.

    The with-alternatives model is fitted on the runs that list alternatives (skipped when fewer than 2 of each
    outcome do), the without-alternatives model on all runs.

    Parameters
    ----------
    ts : TraceSet
        The runs (unlabeled ones are left out).
    variant : {"reduced", "full"}, default="reduced"
        HTC-Reduced (L1) or HTC-Full (L2).
    name : str, default="gac"
        The model's name.
    card : dict, optional
        The model card saved with the model.
    seed : int, default=42
        Seed of the inner folds (``random_state``).
    top_k : int, default=5
        The features' top-k.
    **fit_kw
        ``alphas`` and ``inner_folds`` of :class:`GeneralCalibrator`.

    Returns
    -------
    GeneralCalibrator
        The fitted GAC.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.general import fit_general
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> fit_general(ts, name="units-gac", alphas=(1.0,))
    GeneralCalibrator(name='units-gac', variant='reduced', models=['with_alternatives', 'without_alternatives'])
    """
    return GeneralCalibrator(variant=variant, random_state=seed, top_k=top_k, name=name, card=dict(card or {}),
                             **fit_kw).fit_traces(ts)


def load_any_model(path: str | Path):
    """Read any HTC model file: the calibrator, GAM or GAC it holds.

    Parameters
    ----------
    path : str or path
        A model file written by the ``save`` of any of the three models.

    Returns
    -------
    HTCCalibrator, HTCGAM or GeneralCalibrator
        Whichever the file holds (by its ``"format"``); an invalid file raises a ValueError saying why.

    Examples
    --------
    >>> import os, tempfile
    >>> import htc_core as htc
    >>> from htc_core.calibration.general import load_any_model
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> path = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels).save(
    ...     os.path.join(tempfile.mkdtemp(), "model.json"))
    >>> load_any_model(path)
    HTCCalibrator(variant='reduced', alpha_=1, selected=12)
    """
    obj = read_model_file(path)
    if isinstance(obj, dict) and obj.get("format") == GAC_FORMAT:
        return GeneralCalibrator.from_dict(obj, source=str(Path(path)))
    if isinstance(obj, dict) and obj.get("format") == "htc-gam":
        from .gam import HTCGAM

        return HTCGAM.from_dict(obj, source=str(Path(path)))
    return HTCCalibrator.from_dict(obj, source=str(Path(path)))
