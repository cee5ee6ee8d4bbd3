"""Learning-curve entries of the GAC: ``fit_predict(train_ts, y_train, test_ts, seed) -> probabilities``.

``gac_zero_shot`` and ``gac_adapted`` use the shipped GAC when none of the runs' datasets is in its training
data; otherwise a GAC refitted on the shipped GAC's training sources (``sample_runs/`` and
``../shared/data/uala-hotpotqa/``, read where they are) without those datasets, so no run of the evaluated
datasets reaches the prior (cached per set of excluded datasets). An application of the library (it reads
files, so it sits above ``calibration``, like ``train_gac``). From-scratch HTC with the same signature is
:func:`htc_core.experiments.adapt_curve.htc_from_scratch`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from ..calibration.general import GeneralCalibrator, fit_general
from .adapt_curve import adapt_traces, htc_from_scratch

__all__ = ["gac_zero_shot", "gac_adapted", "htc_from_scratch"]

REPO = Path(__file__).resolve().parents[2]


def _datasets(*sets) -> frozenset:
    """The datasets the trace sets' runs belong to."""
    out = set()
    for ts in sets:
        if "dataset" in ts.meta.columns:
            out.update(ts.meta["dataset"].dropna().astype(str))
    return frozenset(out)


@lru_cache(maxsize=8)
def _gac_without(excluded: frozenset) -> GeneralCalibrator:
    """The shipped GAC, or one refitted on its training sources without the ``excluded`` datasets."""
    from ..calibration.models import load_model
    from ..formats import load

    gac = load_model("gac")
    trained = {r["dataset"] for r in gac.card.get("training_data", {}).get("by_dataset_and_model", [])}
    if not excluded & trained:
        return gac
    sources = [REPO / s for s in gac.card["training_data"]["sources"]]
    missing = [str(s) for s in sources if not s.exists()]
    if missing:
        raise ValueError(f"the shipped GAC was trained on {sorted(excluded & trained)}; refitting it without them "
                         f"needs its training sources, missing here: {missing}")
    ts, _ = load([str(s) for s in sources])
    ts = ts.labeled()
    keep = np.flatnonzero(~ts.meta["dataset"].astype(str).isin(excluded).to_numpy())
    return fit_general(ts.take(keep), variant="reduced",
                       name=f"gac without {', '.join(sorted(excluded & trained))}")


def gac_zero_shot(train_ts, y_train, test_ts, seed) -> np.ndarray:
    """Learning-curve entry: the GAC, never trained on these runs' datasets, zero-shot on ``test_ts``.

    The shipped GAC when none of the runs' datasets is in its training data; else a GAC refitted on its
    training sources without them (cached per set of excluded datasets).

    Parameters
    ----------
    train_ts : TraceSet
        The training runs (only their datasets are read).
    y_train : array-like of shape (n_train,)
        Their 0/1 labels (not used).
    test_ts : TraceSet
        The runs scored (their labels are not read).
    seed : int
        The repeat's seed (not used).

    Returns
    -------
    numpy.ndarray of shape (n_test,)
        The success probability of each test run.

    Raises
    ------
    ValueError
        If a refit is needed and the shipped GAC's training sources are missing.

    Examples
    --------
    >>> from htc_core.synthetic import synthetic_trace_set
    >>> from htc_core.experiments.gac_entries import gac_zero_shot
    >>> ts = synthetic_trace_set(n_traj=40, n_steps=3, n_tokens=10, seed=0)      # random labels
    >>> ts.meta["dataset"] = "synthetic"                # not one the shipped GAC was trained on
    >>> train, test = ts.take(range(20)), ts.take(range(20, 40))
    >>> gac_zero_shot(train, train.labels, test, 0)[:3].round(3)
    array([0.421, 0.421, 0.458])
    """
    return _gac_without(_datasets(train_ts, test_ts)).predict_proba_traces(test_ts)[:, 1]


def gac_adapted(train_ts, y_train, test_ts, seed) -> np.ndarray:
    """Learning-curve entry: the GAC of :func:`gac_zero_shot` adapted to the training runs, scoring ``test_ts``.

    Parameters
    ----------
    train_ts : TraceSet
        The training runs.
    y_train : array-like of shape (n_train,)
        Their 0/1 labels.
    test_ts : TraceSet
        The runs scored (their labels are not read).
    seed : int
        The repeat's seed: the inner CV's random state.

    Returns
    -------
    numpy.ndarray of shape (n_test,)
        The success probability of each test run.

    Raises
    ------
    ValueError
        If a refit of the prior is needed and the shipped GAC's training sources are missing.

    Examples
    --------
    >>> from htc_core.synthetic import synthetic_trace_set
    >>> from htc_core.experiments.gac_entries import gac_adapted
    >>> ts = synthetic_trace_set(n_traj=40, n_steps=3, n_tokens=10, seed=0)      # random labels
    >>> ts.meta["dataset"] = "synthetic"                # not one the shipped GAC was trained on
    >>> train, test = ts.take(range(20)), ts.take(range(20, 40))
    >>> gac_adapted(train, train.labels, test, 0)[:3].round(3)
    array([0.359, 0.406, 0.396])
    """
    from ..features import extract

    model = adapt_traces(train_ts, _gac_without(_datasets(train_ts, test_ts)), y=np.asarray(y_train, float),
                         random_state=int(seed))
    return model.predict_proba(extract(test_ts, profile=model.profile_, top_k=model.top_k_))[:, 1]
