"""The families of the leave-one-family-out experiment, and the labeled runs prepared once for it.

A *family* is a task (``dataset``) run by one model family (``model`` without its decoding suffix:
``SmolLM2-135M-greedy`` and ``SmolLM2-135M-sampled-t0.7`` are one family, ``SmolLM2-135M``).
:func:`prepare` computes once what :func:`~htc_core.experiments.transfer_lofo.leave_one_family_out` and
:func:`~htc_core.experiments.transfer_entry.fit_transfer` need of the runs.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..calibration.transfer_methods import training_free_signals
from .grouping import has_alternatives

__all__ = ["model_family", "family_groups", "prepare"]

_SUFFIX = re.compile(r"-(greedy|sampled.*)$")


def model_family(model: str) -> str:
    """A model's family: its name without the decoding suffix (the decoding configuration is not a family).

    Parameters
    ----------
    model : str
        A model name as the runs' metadata holds it.

    Returns
    -------
    str
        The name without a trailing ``-greedy`` or ``-sampled...``.

    Examples
    --------
    >>> from htc_core.experiments.transfer_families import model_family
    >>> model_family("SmolLM2-135M-sampled-t0.7"), model_family("SmolLM2-135M-greedy"), model_family("gpt-4o")
    ('SmolLM2-135M', 'SmolLM2-135M', 'gpt-4o')
    """
    return _SUFFIX.sub("", str(model))


def family_groups(meta: pd.DataFrame) -> np.ndarray:
    """Each run's family: its dataset and model family, e.g. ``units | SmolLM2-135M``.

    Parameters
    ----------
    meta : pandas.DataFrame
        The runs' metadata (columns dataset and model; "?" where one is missing).

    Returns
    -------
    numpy.ndarray of str
        One family per run.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.experiments.transfer_families import family_groups
    >>> meta = pd.DataFrame({"dataset": ["units", "units", "facts"],
    ...                      "model": ["SmolLM2-135M-greedy", "SmolLM2-135M-sampled-t0.7", "Gemma3-270M-greedy"]})
    >>> list(family_groups(meta))
    ['units | SmolLM2-135M', 'units | SmolLM2-135M', 'facts | Gemma3-270M']
    """
    ds = meta["dataset"].astype(str) if "dataset" in meta else pd.Series(["?"] * len(meta))
    mo = meta["model"].astype(str) if "model" in meta else pd.Series(["?"] * len(meta))
    return np.array([f"{d} | {model_family(m)}" for d, m in zip(ds, mo)], dtype=object)


def prepare(ts) -> dict:
    """What the leave-one-family-out experiment and the transfer entry need of the labeled runs, computed once.

    The input of :func:`~htc_core.experiments.transfer_lofo.leave_one_family_out` and
    :func:`~htc_core.experiments.transfer_entry.fit_transfer`.

    Parameters
    ----------
    ts : TraceSet
        The runs (unlabeled ones are left out).

    Returns
    -------
    dict
        Keys y (labels), groups (families), alt (runs with top-k alternatives), features (profile "paper" and
        "chosen" -> ``[n, 48]``), signals (the training-free signals, a DataFrame) and ids.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.transfer_families import prepare
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 families, 16 runs each
    >>> d = prepare(ts)
    >>> sorted(d), d["features"]["chosen"].shape, sorted(set(d["groups"]))
    (['alt', 'features', 'groups', 'ids', 'signals', 'y'], (32, 48), ['facts | Gemma3-270M', 'lists | Gemma3-270M'])
    """
    from ..features import extract

    ts = ts.labeled()
    return {"y": ts.labels, "groups": family_groups(ts.meta), "alt": has_alternatives(ts),
            "features": {p: extract(ts, profile=p, top_k=5).values for p in ("paper", "chosen")},
            "signals": training_free_signals(ts), "ids": ts.ids}
