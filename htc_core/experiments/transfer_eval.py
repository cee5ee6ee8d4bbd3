"""Choosing the GAC's transfer method: leave-one-family-out over model x task (an experiment, not a model).

A *family* is a task (``dataset``) run by one model family (``model`` without its decoding suffix:
``SmolLM2-135M-greedy`` and ``SmolLM2-135M-sampled-t0.7`` are one family, ``SmolLM2-135M``). For every family,
the by-kind GAC (:mod:`htc_core.calibration.general`) is fitted on the runs of all the other families and the
held-out family is scored zero-shot by each candidate of :mod:`htc_core.calibration.transfer_methods`:

- ``gac``: the model as fitted;
- ``tts``: test-time standardization with the held-out runs' own statistics;
- ``em``: the EM base-rate correction of the ``gac`` confidences;
- ``iw``: a weighted Platt step on the training runs, weights from a domain classifier (training vs held out);
- ``stack``: a logistic stack of the ``gac`` logit with the training-free signal that ranked best on the
  training runs; ``stack+em``: then the EM correction;
- ``signal``: that signal alone, Platt-scaled on the training runs (no trajectory model at all);
  ``signal+em``: then the EM correction; ``signal-oof``: that signal through a Platt map calibrated on
  *out-of-family* scores (:func:`out_of_family_platt`: each training family scored by the signal's map fitted
  without it, then a Platt step on those scores), so the map is as steep as it transfers between families;
- ``stack-oof``: the stack fitted on *out-of-family* GAC logits of the training runs (3 folds by family
  inside the training families), so the stack weighs the GAC as it transfers, not as it fits;
  ``stack-all-oof``: the same with all three training-free signals at once (each weight non-negative);
- the set-level methods (:data:`SET_LEVEL`, :mod:`htc_core.calibration.rank_ensemble`), which rank the held-out
  runs *as a set* from their own unlabeled scores (the ``stack-oof`` logit and the three signals): ``summa-select``
  (the ranker SUMMA estimates best, Platt-scaled on the training runs), ``summa`` (the SUMMA-weighted mean rank),
  ``rank-mean`` (the plain mean rank), ``consensus`` (the ranker agreeing most with the others) -- these three
  re-order the ``stack-oof`` confidences -- and ``rank-mean-platt`` (the mean rank through a Platt map fitted on
  the training families, each ranked within itself), ``nearest-family`` (the signal that ranks best the training
  family whose signals look most like the held-out set's, through its out-of-family map:
  :mod:`htc_core.calibration.signal_choice`); below ``set_min_runs`` held-out runs they keep the per-run
  confidences. ``TransferChoice.estimates`` holds, per family and ranker, SUMMA's label-free AUROC estimate
  next to the true one.

Next to them, each training-free signal's AUROC on the held-out family, and the shift measurements the
expected-error range is built from (:mod:`htc_core.calibration.expected_error`). No held-out label reaches a fit:
the candidates see the held-out *features* only (as a user's unlabeled runs), labels only score them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..calibration.transfer_methods import (SIGNALS, STACKABLE, domain_weights, em_prior, logit, signal_matrix,
                                            signal_scores, sigmoid, stack_logits, stack_scores,
                                            target_standardized_logit, training_free_signals, weighted_platt)
from .gac import KIND_PROFILE, WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES
from .grouping import has_alternatives, score_metrics

__all__ = ["METHODS", "SHIPPABLE", "SET_LEVEL", "SET_MIN_RUNS", "model_family", "family_groups", "TransferChoice",
           "leave_one_family_out", "prepare", "fit_transfer", "expected_error_points", "range_self_check",
           "out_of_family_platt", "fit_nearest_family"]

METHODS = ("gac", "tts", "em", "iw", "stack", "stack+em", "signal", "signal+em", "signal-oof", "stack-oof",
           "stack-all-oof", "summa-select", "summa", "rank-mean", "consensus", "rank-mean-platt", "nearest-family")
# set-level methods (:mod:`htc_core.calibration.rank_ensemble`): they rank the runs of one scored set with the
# rankers (the ``stack-oof`` logit and the three training-free signals) chosen or combined from that set's own
# unlabeled scores; below :data:`SET_MIN_RUNS` runs, or with fewer than 3 distinct usable rankers for the SUMMA
# ones, they keep the ``stack-oof`` confidences
SET_LEVEL = ("summa-select", "summa", "rank-mean", "consensus", "rank-mean-platt", "nearest-family")
# a set-level method needs this many scored runs (the ranks of fewer are too coarse; every family here holds 16 or
# 500 runs, so leave-one-family-out cannot tell any threshold in 17-500 apart)
SET_MIN_RUNS = 50
# methods that score each run on its own (a GAC file holds them); tts, em and iw need the whole scored set;
# stack-all-oof is measured (does combining every signal transfer better?) but a GAC file holds one signal
SHIPPABLE = ("gac", "stack", "signal", "signal-oof", "stack-oof")
# a method whose base-rate measures (rate_gap, em_gap) are those of another method's confidences: signal-oof flattens
# the signal's Platt map toward the training base rate, so a shifted base rate hardly moves its mean; its measures
# are read before the flattening (the shipped entry's rate_map does the same at scoring time)
RATE_SOURCE = {"signal-oof": "signal"}
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
    >>> from htc_core.experiments.transfer_eval import model_family
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
    >>> from htc_core.experiments.transfer_eval import family_groups
    >>> meta = pd.DataFrame({"dataset": ["units", "units", "facts"],
    ...                      "model": ["SmolLM2-135M-greedy", "SmolLM2-135M-sampled-t0.7", "Gemma3-270M-greedy"]})
    >>> list(family_groups(meta))
    ['units | SmolLM2-135M', 'units | SmolLM2-135M', 'facts | Gemma3-270M']
    """
    ds = meta["dataset"].astype(str) if "dataset" in meta else pd.Series(["?"] * len(meta))
    mo = meta["model"].astype(str) if "model" in meta else pd.Series(["?"] * len(meta))
    return np.array([f"{d} | {model_family(m)}" for d, m in zip(ds, mo)], dtype=object)


@dataclass
class TransferChoice:
    """Per held-out family: the metrics of every transfer method, the signals' AUROC and the shift measurements.

    Made by :func:`leave_one_family_out`.

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per (family, method): family, method, n, ece, brier, auroc, rate_gap, em_gap.
    shifts : pandas.DataFrame
        One row per family: family, n, rate, max_shift, missing_topk, train_rate.
    signal_auroc : pandas.DataFrame
        Family x training-free signal: the signal's AUROC on the held-out family.
    chosen_signal : dict of str to str, default {}
        Family -> the signal the stack used.
    predictions : dict of str to numpy.ndarray, default {}
        Method -> each row's held-out confidence (every row is held out once).
    groups : numpy.ndarray or None, default None
        Each row's family (the rows of ``predictions``).
    estimates : pandas.DataFrame, default empty
        Family, ranker, true AUROC, its label-free (SUMMA) estimate and the rank-one fit's residual.
    set_min_runs : int, default 50
        The fewest held-out runs a set-level method acts on.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.experiments.transfer_eval import TransferChoice
    >>> families = ["facts | m", "lists | m", "units | m"]
    >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
    ...                      "method": ["gac", "signal"] * 3, "n": 40,
    ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
    ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
    ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
    ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
    ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
    >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
    ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
    ...                        "train_rate": [0.55, 0.5, 0.45]})
    >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
    ...                             index=families)
    >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
    >>> choice.summary()[["ece_mean", "ece_worst", "auroc_mean"]].round(3)
            ece_mean  ece_worst  auroc_mean
    method
    gac        0.150       0.20       0.717
    signal     0.097       0.12       0.683
    """

    rows: pd.DataFrame                 # family, method, n, ece, brier, auroc
    shifts: pd.DataFrame               # family, n, max_shift, rate_gap, em_gap, missing_topk, train_rate, rate
    signal_auroc: pd.DataFrame         # family x signal
    chosen_signal: dict = field(default_factory=dict)   # family -> the signal the stack used
    # method -> each row's held-out confidence (every row is held out once; filled by leave_one_family_out)
    predictions: dict = field(default_factory=dict)
    groups: np.ndarray | None = None                    # each row's family (the rows of ``predictions``)
    # family, ranker, auroc (true), estimated (SUMMA, label-free, unclipped), residual of the rank-one fit
    estimates: pd.DataFrame = field(default_factory=pd.DataFrame)
    set_min_runs: int = 50                                # the fewest held-out runs a set-level method acts on

    def summary(self) -> pd.DataFrame:
        """Each method's mean and worst ECE, Brier and AUROC over the held-out families.

        Returns
        -------
        pandas.DataFrame
            Indexed by method (in ``METHODS`` order): ece_mean, ece_worst, brier_mean, brier_worst, auroc_mean,
            auroc_worst.

        Examples
        --------
        >>> import pandas as pd
        >>> from htc_core.experiments.transfer_eval import TransferChoice
        >>> families = ["facts | m", "lists | m", "units | m"]
        >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
        ...                      "method": ["gac", "signal"] * 3, "n": 40,
        ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
        ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
        ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
        ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
        ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
        >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
        ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
        ...                        "train_rate": [0.55, 0.5, 0.45]})
        >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
        ...                             index=families)
        >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
        >>> choice.summary().loc["gac"].round(3).to_dict()
        {'ece_mean': 0.15, 'ece_worst': 0.2, 'brier_mean': 0.223, 'brier_worst': 0.25, 'auroc_mean': 0.717,
         'auroc_worst': 0.6}
        """
        g = self.rows.groupby("method", sort=False)
        out = pd.DataFrame({"ece_mean": g.ece.mean(), "ece_worst": g.ece.max(), "brier_mean": g.brier.mean(),
                            "brier_worst": g.brier.max(), "auroc_mean": g.auroc.mean(), "auroc_worst": g.auroc.min()})
        return out.reindex([m for m in METHODS if m in out.index])

    def best(self) -> str:
        """The method a GAC file can hold (``SHIPPABLE``: scores one run at a time) with the lowest mean ECE.

        Ties go to the lower worst ECE.

        Returns
        -------
        str
            The method's name.

        Examples
        --------
        >>> import pandas as pd
        >>> from htc_core.experiments.transfer_eval import TransferChoice
        >>> families = ["facts | m", "lists | m", "units | m"]
        >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
        ...                      "method": ["gac", "signal"] * 3, "n": 40,
        ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
        ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
        ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
        ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
        ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
        >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
        ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
        ...                        "train_rate": [0.55, 0.5, 0.45]})
        >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
        ...                             index=families)
        >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
        >>> choice.best()
        'signal'
        """
        s = self.summary()
        s = s[s.index.isin(SHIPPABLE)]
        return str(s.sort_values(["ece_mean", "ece_worst"]).index[0])

    def best_set_level(self, per_run: str | None = None) -> str | None:
        """The set-level method that wins over a per-run method: a mean ECE no higher and a higher mean AUROC.

        Parameters
        ----------
        per_run : str or None, default None
            The per-run method to beat (None: :meth:`best`).

        Returns
        -------
        str or None
            The ``SET_LEVEL`` method with the highest such mean AUROC; None when none wins.

        Examples
        --------
        >>> import pandas as pd
        >>> from htc_core.experiments.transfer_eval import TransferChoice
        >>> rows = pd.DataFrame({"family": ["a | m", "a | m"], "method": ["stack-oof", "rank-mean-platt"], "n": 500,
        ...                      "ece": [0.20, 0.15], "brier": [0.25, 0.22], "auroc": [0.70, 0.72]})
        >>> TransferChoice(rows, pd.DataFrame(), pd.DataFrame()).best_set_level("stack-oof")
        'rank-mean-platt'
        """
        base_name = per_run or self.best()
        r = self.rows
        base = r[r.method == base_name].set_index("family")
        best, best_auroc = None, float(base.auroc.mean())
        for m in SET_LEVEL:
            x = r[r.method == m].set_index("family")
            # below set_min_runs a set-level method keeps the per-run confidences (the shipped model's)
            x = x.where(x.n >= self.set_min_runs, base.reindex(x.index))
            if x.ece.mean() <= base.ece.mean() + 1e-12 and x.auroc.mean() > best_auroc:
                best, best_auroc = m, float(x.auroc.mean())
        return best

    def estimate_table(self) -> str:
        """How well the label-free (SUMMA) AUROC estimates match the true AUROCs, as text.

        Returns
        -------
        str
            Per held-out family the true and estimated AUROC of each ranker and the ranker picked vs the best;
            then the mean absolute error and how often the ranker estimated best is the truly best one.

        Examples
        --------
        >>> import pandas as pd
        >>> from htc_core.experiments.transfer_eval import TransferChoice
        >>> TransferChoice(pd.DataFrame(), pd.DataFrame(), pd.DataFrame()).estimate_table()
        'no label-free estimates'
        """
        e = self.estimates
        if e.empty:
            return "no label-free estimates"
        lines = ["label-free (SUMMA) AUROC estimate vs true, per held-out family",
                 f"{'family':30s} " + "  ".join(f"{r:>17}" for r in e.ranker.unique()) + "  residual  picked/best"]
        hits = 0
        for fam, r in e.groupby("family", sort=False):
            cells = [f"{x.auroc:.3f} est {x.estimated:.3f}" if x.estimated == x.estimated
                     else f"{x.auroc:.3f} est   -  " for x in r.itertuples()]
            ok = r[np.isfinite(r.estimated)]
            picked = ok.ranker.iloc[int(np.argmax(ok.estimated))] if len(ok) else "-"
            best = r.ranker.iloc[int(np.nanargmax(r.auroc))]
            hits += picked == best
            lines.append(f"{fam:30s} " + "  ".join(f"{c:>17}" for c in cells)
                         + f"  {r.residual.iloc[0]:8.3f}  {picked}/{best}")
        err = (e.estimated - e.auroc).abs()
        lines.append(f"mean |estimate - true| {float(err.mean()):.3f}; the ranker estimated best is the truly best on "
                     f"{hits} of {e.family.nunique()} families")
        return "\n".join(lines)

    def wins_vs_signal(self, method: str) -> pd.DataFrame:
        """A method's AUROC on each held-out family next to the best training-free signal's there.

        Parameters
        ----------
        method : str
            A method of ``rows``.

        Returns
        -------
        pandas.DataFrame
            Indexed by family: auroc, best_signal_auroc.

        Examples
        --------
        >>> import pandas as pd
        >>> from htc_core.experiments.transfer_eval import TransferChoice
        >>> families = ["facts | m", "lists | m", "units | m"]
        >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
        ...                      "method": ["gac", "signal"] * 3, "n": 40,
        ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
        ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
        ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
        ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
        ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
        >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
        ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
        ...                        "train_rate": [0.55, 0.5, 0.45]})
        >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
        ...                             index=families)
        >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
        >>> choice.wins_vs_signal("gac")
                   auroc  best_signal_auroc
        family
        facts | m   0.80               0.72
        lists | m   0.60               0.68
        units | m   0.75               0.71
        """
        r = self.rows[self.rows.method == method].set_index("family")
        best = self.signal_auroc.max(axis=1)
        return pd.DataFrame({"auroc": r.auroc, "best_signal_auroc": best.reindex(r.index)})

    def table(self) -> str:
        """Plain text: ECE/AUROC of every method per held-out family ("-" where not measured), the best
        signal's AUROC, and the mean and worst lines.

        Returns
        -------
        str
            The table (one column per method of ``METHODS``).

        Examples
        --------
        >>> import pandas as pd
        >>> from htc_core.experiments.transfer_eval import TransferChoice
        >>> families = ["facts | m", "lists | m", "units | m"]
        >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
        ...                      "method": ["gac", "signal"] * 3, "n": 40,
        ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
        ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
        ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
        ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
        ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
        >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
        ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
        ...                        "train_rate": [0.55, 0.5, 0.45]})
        >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
        ...                             index=families)
        >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
        >>> lines = choice.table().splitlines()
        >>> lines[0]
        'ECE/AUROC per held-out family (leave-one-family-out)'
        >>> lines[-2].split()
        ['mean', 'ECE/AUROC', '0.150/0.717', '0.097/0.683']
        """
        lines = ["held-out family                 runs  " + "  ".join(f"{m:>16}" for m in METHODS) + "  best signal"]
        for fam, r in self.rows.groupby("family", sort=False):
            cells = {x.method: f"{x.ece:.3f}/{x.auroc:.3f}" for x in r.itertuples()}
            best = self.signal_auroc.loc[fam].max()
            lines.append(f"{fam:30s} {int(r.n.iloc[0]):5d}  " + "  ".join(f"{cells.get(m, '-'):>16}" for m in METHODS)
                         + f"  {best:.3f}")
        s = self.summary()
        lines.append("mean ECE/AUROC                       " + "  ".join(
            f"{s.ece_mean[m]:.3f}/{s.auroc_mean[m]:.3f}".rjust(16) for m in s.index))
        lines.append("worst ECE/AUROC                      " + "  ".join(
            f"{s.ece_worst[m]:.3f}/{s.auroc_worst[m]:.3f}".rjust(16) for m in s.index))
        return "\n".join(["ECE/AUROC per held-out family (leave-one-family-out)"] + lines)

    def to_dict(self) -> dict:
        """The result as JSON-ready values, numbers rounded to 4 decimals, with the chosen method.

        Returns
        -------
        dict
            Keys experiment, methods, chosen (:meth:`best`), summary, rows, shifts, signal_auroc and
            stack_signal.

        Examples
        --------
        >>> import pandas as pd
        >>> from htc_core.experiments.transfer_eval import TransferChoice
        >>> families = ["facts | m", "lists | m", "units | m"]
        >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
        ...                      "method": ["gac", "signal"] * 3, "n": 40,
        ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
        ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
        ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
        ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
        ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
        >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
        ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
        ...                        "train_rate": [0.55, 0.5, 0.45]})
        >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
        ...                             index=families)
        >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
        >>> d = choice.to_dict()
        >>> d["chosen"], d["summary"]["signal"]["ece_mean"], d["signal_auroc"]["lists | m"]
        ('signal', 0.0967, {'seq_prob': 0.68, 'min_prob': 0.62})
        """
        s = self.summary()
        return {"experiment": "leave-one-family-out transfer methods", "methods": list(METHODS),
                "chosen": self.best(),
                "summary": {m: {k: round(float(v), 4) for k, v in s.loc[m].items()} for m in s.index},
                "rows": [{k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else
                              (int(v) if isinstance(v, (np.integer,)) else v)) for k, v in r.items()}
                         for r in self.rows.to_dict("records")],
                "shifts": [{k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else
                                (int(v) if isinstance(v, (np.integer,)) else v)) for k, v in r.items()}
                           for r in self.shifts.to_dict("records")],
                "signal_auroc": {f: {s_: round(float(v), 4) for s_, v in r.items() if np.isfinite(v)}
                                 for f, r in self.signal_auroc.iterrows()},
                "stack_signal": dict(self.chosen_signal), "set_level": self.best_set_level(),
                "set_min_runs": self.set_min_runs,
                "estimates": [{k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else v)
                               for k, v in r.items()} for r in self.estimates.to_dict("records")]}


def _fit(X, y, profile, seed, fit_kw):
    """An HTC calibrator (HTC-Reduced unless ``fit_kw`` says otherwise) fitted on one profile's features."""
    from ..calibration.calibrators import HTCCalibrator

    kw = {"variant": "reduced", **fit_kw}
    return HTCCalibrator(random_state=seed, profile=profile, **kw).fit(X, y)


def _auroc(y, s) -> float:
    """AUROC of the finite scores ``s`` (NaN with fewer than 2 or with one outcome)."""
    ok = np.isfinite(s)
    if ok.sum() < 2 or len(set(y[ok])) < 2:
        return float("nan")
    return score_metrics(y[ok], s[ok])["auroc"]


def _best_signal(y, sig: pd.DataFrame) -> str:
    """The stackable training-free signal of the best AUROC on the rows of ``sig``."""
    # only the probability signals: the stack and the transfer entry take logit(signal), and minus an entropy is
    # no probability (its logit would be a constant)
    aur = {c: _auroc(y, sig[c].to_numpy()) for c in sig.columns if c in STACKABLE and np.isfinite(sig[c]).all()}
    return max(aur, key=lambda c: aur[c]) if aur else "seq_prob"


def _kind_logits(models, feats, alt, rows, *, tts: bool) -> np.ndarray:
    """The by-kind GAC logit of ``rows`` (``tts``: standardized with those rows' own statistics)."""
    z = np.empty(len(rows))
    for kind, mask in ((WITH_ALTERNATIVES, alt[rows]), (WITHOUT_ALTERNATIVES, ~alt[rows])):
        if not mask.any():
            continue
        m = models.get(kind) or models[WITHOUT_ALTERNATIVES]
        X = feats[m.profile_][rows[mask]]
        z[mask] = target_standardized_logit(m, X) if tts else m.decision_function(X)
    return z


def _held_out(d: dict, g: str, seed: int, fit_kw: dict) -> tuple[dict, dict, dict, str]:
    """Every method's confidences on family ``g`` fitted on the others, its shift row, models and signal."""
    y, groups, feats, alt, sig = d["y"], d["groups"], d["features"], d["alt"], d["signals"]
    te, tr = np.flatnonzero(groups == g), np.flatnonzero(groups != g)
    models = {WITHOUT_ALTERNATIVES: _fit(feats["chosen"][tr], y[tr], "chosen", seed, fit_kw)}
    tr_alt = tr[alt[tr]]
    if len(tr_alt) and len(set(y[tr_alt])) == 2:
        models[WITH_ALTERNATIVES] = _fit(feats["paper"][tr_alt], y[tr_alt], "paper", seed, fit_kw)
    z_tr, z_te = _kind_logits(models, feats, alt, tr, tts=False), _kind_logits(models, feats, alt, te, tts=False)
    train_rate = float(y[tr].mean())
    p = {"gac": sigmoid(z_te), "tts": sigmoid(_kind_logits(models, feats, alt, te, tts=True))}
    em = em_prior(p["gac"], train_rate)
    p["em"] = em.adjusted
    w = domain_weights(feats["chosen"][tr], feats["chosen"][te])
    a, b = weighted_platt(z_tr, y[tr], w)
    p["iw"] = sigmoid(a * z_te + b)
    name = _best_signal(y[tr], sig.iloc[tr])
    s_tr, s_te = sig[name].to_numpy()[tr], sig[name].to_numpy()[te]
    s_te = np.where(np.isfinite(s_te), s_te, np.nanmedian(s_tr))
    c = stack_logits(z_tr, s_tr, y[tr])
    z_st = c[0] * z_te + c[1] * logit(s_te) + c[2]
    p["stack"] = sigmoid(z_st)
    st_tr = sigmoid(c[0] * z_tr + c[1] * logit(s_tr) + c[2])
    p["stack+em"] = em_prior(p["stack"], float(st_tr.mean())).adjusted
    a_s, b_s = weighted_platt(logit(s_tr), y[tr])
    p["signal"] = sigmoid(a_s * logit(s_te) + b_s)
    p["signal+em"] = em_prior(p["signal"], float(sigmoid(a_s * logit(s_tr) + b_s).mean())).adjusted
    a_o, b_o = out_of_family_platt(logit(s_tr), y[tr], groups[tr])
    p["signal-oof"] = sigmoid(a_o * logit(s_te) + b_o)
    z_oof = _oof_logits(d, tr, seed, fit_kw, models)
    c_oof = stack_logits(z_oof, s_tr, y[tr])
    p["stack-oof"] = sigmoid(c_oof[0] * z_te + c_oof[1] * logit(s_te) + c_oof[2])
    a_tr, fill = signal_scores(sig.iloc[tr])
    c_all = stack_scores(z_oof, a_tr, y[tr])
    p["stack-all-oof"] = sigmoid(c_all[0] * z_te + signal_scores(sig.iloc[te], fill)[0] @ c_all[1:-1] + c_all[-1])
    zs_tr = logit(sigmoid(c_oof[0] * z_oof + c_oof[1] * logit(s_tr) + c_oof[2]))   # as the shipped ranker
    set_p, est = set_level_methods(d, tr, te, p["stack-oof"], zs_tr, min_runs=d.get("set_min_runs", SET_MIN_RUNS))
    p.update(set_p)
    shift = _shift_row(models, feats, alt, tr, te, train_rate)
    return p, {**shift, "estimates": est}, models, name


def set_level_methods(d: dict, tr: np.ndarray, te: np.ndarray, p_te: np.ndarray, zs_tr: np.ndarray, *,
                      min_runs: int = SET_MIN_RUNS) -> tuple[dict, list]:
    """The :data:`SET_LEVEL` confidences of the held-out rows ``te`` (each from the held-out set's unlabeled
    scores and maps fitted on the training rows ``tr``), and one row per ranker: its true and its label-free
    (SUMMA) AUROC estimate. ``p_te``: the ``stack-oof`` confidences of ``te``; ``zs_tr``: its out-of-family logit
    on ``tr``."""
    from ..calibration import rank_ensemble as rk
    from ..calibration.signal_choice import nearest_family_confidences

    y, groups = d["y"], d["groups"]
    A = signal_matrix(d["signals"])
    S_te = np.column_stack([logit(p_te), A[te]])
    calibrated = [p_te] + [_platt_signal(A[tr, j], y[tr], A[te, j]) for j in range(A.shape[1])]
    out = {m: p_te for m in SET_LEVEL}
    use = _distinct(S_te, rk.usable_columns(S_te))
    est = rk.estimate_auroc(S_te[:, use], float(p_te.mean()), names=np.array(rk.RANKERS)[use]) if use.sum() >= 3 \
        else None
    rows = _estimate_rows(y[te], S_te, use, est)
    if len(te) < min_runs:
        return out, rows
    a, b = rk.fit_rank_mean_platt(np.column_stack([zs_tr, A[tr]]), y[tr], groups[tr])
    out["rank-mean-platt"] = sigmoid(a * logit(rk.rank_mean(S_te)) + b)
    # its families lend their best signal from SET_MIN_RUNS runs on; the set is scored whatever min_runs says here
    nf = fit_nearest_family(A[tr], y[tr], groups[tr])
    out["nearest-family"] = nearest_family_confidences({**nf, "min_runs": 0}, A[te])[0]
    out["rank-mean"] = rk.reorder(p_te, rk.rank_mean(S_te))
    if est is not None:
        cols = np.flatnonzero(use)
        out["summa-select"] = calibrated[cols[int(np.argmax(est.u))]]
        out["summa"] = rk.reorder(p_te, rk.combine_ranks(S_te[:, use], rk.ensemble_weights(est)))
        out["consensus"] = calibrated[cols[int(np.argmax(rk.consensus_agreement(S_te[:, use])))]]
    return out, rows


def out_of_family_platt(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of a Platt map on the score ``x`` that is calibrated for a family it has not seen.

    The score's Platt map is fitted on all rows, and again once without each family to score that family
    (out-of-family scores); a second Platt step fitted on the out-of-family scores of all rows says how far the
    map carries to a new family, and the two compose into one map: ``sigmoid(slope * x + intercept)``. Where
    every family follows one map, the second step is the identity and the result is the plain Platt map; where
    the map moves from family to family, the second step flattens it (``slope`` toward 0, confidences toward the
    base rate), as ``stack-oof`` weighs the GAC as it transfers rather than as it fits.

    Parameters
    ----------
    x : ndarray of shape (n,)
        A score, larger = more confident (e.g. the logit of a training-free signal; no NaN).
    y : ndarray of shape (n,)
        The 0/1 outcomes.
    groups : ndarray of shape (n,)
        Each row's family; with fewer than 2 families the plain Platt map is returned.

    Returns
    -------
    slope : float
        The composed map's slope.
    intercept : float
        Its intercept.

    Examples
    --------
    Three families that share one map: the plain Platt map, nearly unchanged. Three where the score tells the
    outcome in one family only: a much flatter map than the pooled one.

    >>> import numpy as np
    >>> from htc_core.calibration.transfer_methods import weighted_platt
    >>> from htc_core.experiments.transfer_eval import out_of_family_platt
    >>> rng = np.random.default_rng(0)
    >>> x, groups = rng.normal(size=3000), np.repeat(["a", "b", "c"], 1000)
    >>> y = (rng.random(3000) < 1 / (1 + np.exp(-(2 * x - 0.5)))).astype(float)
    >>> [round(v, 2) for v in weighted_platt(x, y)], [round(v, 2) for v in out_of_family_platt(x, y, groups)]
    ([1.92, -0.45], [1.92, -0.45])
    >>> y2 = np.where(groups == "a", y, (rng.random(3000) < 0.5).astype(float))
    >>> [round(v, 2) for v in weighted_platt(x, y2)], [round(v, 2) for v in out_of_family_platt(x, y2, groups)]
    ([0.45, -0.13], [0.07, -0.14])
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    groups = np.asarray(groups, dtype=object)
    a1, b1 = weighted_platt(x, y)
    fams = sorted(set(groups))
    if len(fams) < 2:
        return a1, b1
    oof = np.empty(len(y))
    for f in fams:
        m = groups == f
        a, b = weighted_platt(x[~m], y[~m])
        oof[m] = a * x[m] + b
    a2, b2 = weighted_platt(oof, y)
    return a2 * a1, a2 * b1 + b2


def fit_nearest_family(S: np.ndarray, y: np.ndarray, groups: np.ndarray, *, min_runs: int = SET_MIN_RUNS,
                       max_distance: float | None = None) -> dict:
    """The ``nearest-family`` set-level entry fitted on training runs (:mod:`htc_core.calibration.signal_choice`).

    Per training family its signals' profile and the signal that ranks it best; per signal its out-of-family
    Platt map (:func:`out_of_family_platt` on the runs where it is defined, as ``signal-oof`` fits its map), kept
    increasing (:func:`~htc_core.calibration.signal_choice.increasing_map`).

    Parameters
    ----------
    S : ndarray of shape (n, 3)
        The training runs' signal scores (:func:`~htc_core.calibration.transfer_methods.signal_matrix`, NaN kept).
    y : ndarray of shape (n,)
        Their 0/1 outcomes.
    groups : ndarray of shape (n,)
        Each run's family.
    min_runs : int, default 50
        The fewest runs a scored set must hold to be scored as a set.
    max_distance : float or None, default None
        Keep the minimum token probability where no training family lies within this distance of the set.

    Returns
    -------
    dict
        The JSON entry (:func:`~htc_core.calibration.signal_choice.build_entry`).

    Examples
    --------
    Two families: in "a" the first signal ranks, in "b" the third, and "b"'s scores sit 5 sd higher.

    >>> import numpy as np
    >>> from htc_core.calibration.signal_choice import choose_signal
    >>> from htc_core.experiments.transfer_eval import fit_nearest_family
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(800) < 0.5).astype(float)
    >>> S = rng.standard_normal((800, 3))
    >>> S[:400, 0] += 3 * y[:400]; S[400:, 2] += 3 * y[400:]; S[400:] += 5
    >>> entry = fit_nearest_family(S, y, np.repeat(["a", "b"], 400))
    >>> [f["best"] for f in entry["families"]], choose_signal(entry, S[400:500]).signal
    (['seq_prob', 'neg_entropy'], 'neg_entropy')
    """
    from ..calibration.signal_choice import NAMES, build_entry, increasing_map

    S = np.asarray(S, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    groups = np.asarray(groups, dtype=object)
    maps = {}
    for j, name in enumerate(NAMES):
        ok = np.isfinite(S[:, j])
        maps[name] = increasing_map(out_of_family_platt(S[ok, j], y[ok], groups[ok]), S[ok, j], y[ok]) \
            if ok.sum() > 1 and len(set(y[ok].tolist())) == 2 else (1e-3, float(logit(np.mean(y))))
    return build_entry(S, y, groups, maps, min_runs=min_runs, max_distance=max_distance)


def _platt_signal(a_tr: np.ndarray, y_tr: np.ndarray, a_te: np.ndarray) -> np.ndarray:
    """A signal's score on the held-out rows, Platt-scaled on the training rows (NaN -> the training median)."""
    fill = float(np.nanmedian(a_tr)) if np.isfinite(a_tr).any() else 0.0
    a, b = weighted_platt(np.where(np.isfinite(a_tr), a_tr, fill), y_tr)
    return sigmoid(a * np.where(np.isfinite(a_te), a_te, fill) + b)


def _distinct(S: np.ndarray, use: np.ndarray) -> np.ndarray:
    """``use`` without a column that ranks the runs as an earlier used one does (Spearman > 0.999: the GAC's
    logit of runs without alternatives is the minimum token probability's)."""
    from ..calibration.rank_ensemble import scaled_ranks

    use = use.copy()
    R = scaled_ranks(S)
    for j in np.flatnonzero(use):
        for i in np.flatnonzero(use[:j]):
            if R[:, i].std() > 0 and R[:, j].std() > 0 and np.corrcoef(R[:, i], R[:, j])[0, 1] > 0.999:
                use[j] = False
                break
    return use


def _estimate_rows(y: np.ndarray, S: np.ndarray, use: np.ndarray, est) -> list:
    from ..calibration.rank_ensemble import RANKERS

    rows, k = [], 0
    for j, name in enumerate(RANKERS):
        e = float("nan")
        if est is not None and use[j]:
            e, k = float(est.raw[k]), k + 1
        rows.append({"ranker": name, "auroc": _auroc(y, S[:, j]), "estimated": e,
                     "residual": float("nan") if est is None else est.residual})
    return rows


def _rate_gaps(p: np.ndarray, train_rate: float) -> dict:
    """|mean confidence - training rate| and |EM base rate - training rate| of one method's confidences."""
    return {"rate_gap": abs(float(p.mean()) - train_rate), "em_gap": abs(em_prior(p, train_rate).prior - train_rate)}


def _oof_logits(d: dict, tr: np.ndarray, seed: int, fit_kw: dict, models: dict, n_folds: int = 3) -> np.ndarray:
    """GAC logits of the training rows ``tr``, each from a GAC fitted without its family (families dealt
    round-robin into ``n_folds`` folds); with one training family, ``models``' own logits."""
    y, groups, feats, alt = d["y"], d["groups"], d["features"], d["alt"]
    fams = sorted(set(groups[tr]))
    if len(fams) < 2:
        return _kind_logits(models, feats, alt, tr, tts=False)
    fold_of = {f: i % n_folds for i, f in enumerate(fams)}
    fold = np.array([fold_of[g] for g in groups[tr]])
    z = np.zeros(len(tr))
    for k in range(min(n_folds, len(fams))):
        inner_tr, inner_te = tr[fold != k], tr[fold == k]
        inner = {WITHOUT_ALTERNATIVES: _fit(feats["chosen"][inner_tr], y[inner_tr], "chosen", seed, fit_kw)}
        wa = inner_tr[alt[inner_tr]]
        if len(wa) and len(set(y[wa])) == 2:
            inner[WITH_ALTERNATIVES] = _fit(feats["paper"][wa], y[wa], "paper", seed, fit_kw)
        z[fold == k] = _kind_logits(inner, feats, alt, inner_te, tts=False)
    return z


def _shift_row(models, feats, alt, tr, te, train_rate) -> dict:
    """The shift measures of a held-out family: the largest feature shift, missing top-k, the training rate."""
    from ..calibration.shift import shift_check_matrix

    d = 0.0
    for kind, m in models.items():
        rows = te[alt[te]] if kind == WITH_ALTERNATIVES else (te[~alt[te]] if WITH_ALTERNATIVES in models else te)
        if len(rows):
            d = max(d, shift_check_matrix(m, feats[KIND_PROFILE[kind]][rows]))
    return {"max_shift": d, "missing_topk": float((~alt[te]).mean()) - float((~alt[tr]).mean()), "train_rate": train_rate}


def prepare(ts) -> dict:
    """What :func:`leave_one_family_out` and :func:`fit_transfer` need of the labeled runs, computed once.

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
    >>> from htc_core.experiments.transfer_eval import prepare
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


# the alpha grid of the experiment's fits (a coarser grid than the shipped fits' DEFAULT_ALPHAS: 14 held-out
# families x 8 fits each on a shared 2-core machine)
EXPERIMENT_ALPHAS = (0.01, 0.1, 1.0, 5.0, 20.0, 50.0)


def leave_one_family_out(ts, *, seed: int = 42, inner_folds: int = 3, alphas=EXPERIMENT_ALPHAS,
                         progress: Callable[[int, int, str], None] | None = None,
                         set_min_runs: int = SET_MIN_RUNS, families: list | None = None) -> TransferChoice:
    """Every transfer method on every held-out family: the GAC fitted on the other families, scored zero-shot.

    No held-out label reaches a fit: the candidates see the held-out features only; labels only score them.
    Families with one outcome are skipped.

    Parameters
    ----------
    ts : TraceSet or dict
        Labeled runs, or what :func:`prepare` made of them.
    seed : int, default 42
        The inner folds' random state.
    inner_folds : int, default 3
        Folds of the inner alpha selection.
    alphas : sequence of float, default (0.01, 0.1, 1.0, 5.0, 20.0, 50.0)
        The regularization strengths chosen from.
    progress : callable or None, default None
        ``progress(done, total, family)`` after each held-out family.
    set_min_runs : int, default 50
        The fewest held-out runs on which a ``SET_LEVEL`` method acts (below it, it keeps the per-run
        confidences).
    families : list of str or None, default None
        Hold out only these families (each still fitted on all the others); default every family.

    Returns
    -------
    TransferChoice
        The metrics by family and method, the signals' AUROC, the shifts and the held-out confidences.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.transfer_eval import leave_one_family_out
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 families, 16 runs each
    >>> choice = leave_one_family_out(ts, alphas=(1.0,), inner_folds=2)
    >>> choice.summary()[["ece_mean", "auroc_mean"]].round(3).loc[["gac", "signal", "stack-oof"]]
               ece_mean  auroc_mean
    method
    gac           0.443       0.448
    signal        0.333       0.733
    stack-oof     0.549       0.448
    >>> choice.best()
    'signal'
    """
    d = {**(ts if isinstance(ts, dict) else prepare(ts)), "set_min_runs": int(set_min_runs)}
    fams = [g for g in sorted(set(d["groups"])) if len(set(d["y"][d["groups"] == g])) == 2
            and (families is None or g in families)]
    rows, shifts, aur, chosen, estimates = [], [], {}, {}, []
    preds = {m: np.full(len(d["y"]), np.nan) for m in METHODS}
    for i, g in enumerate(fams):
        te = np.flatnonzero(d["groups"] == g)
        y = d["y"][te]
        p, shift, _, name = _held_out(d, g, seed, {"inner_folds": inner_folds, "alphas": alphas})
        estimates += [{"family": g, **r} for r in shift.pop("estimates")]
        chosen[g] = name
        for m in METHODS:
            preds[m][te] = p[m]
            # a set-level method's shift measures are its per-run confidences' (as GeneralCalibrator.assess takes them)
            rows.append({"family": g, "method": m, "n": len(te), **score_metrics(y, p[m]),
                         **_rate_gaps(p[RATE_SOURCE.get(m, "stack-oof" if m in SET_LEVEL else m)],
                                      shift["train_rate"])})
        shifts.append({"family": g, "n": len(te), "rate": float(y.mean()), **shift})
        aur[g] = {s: _auroc(y, d["signals"][s].to_numpy()[te]) for s in SIGNALS}
        if progress is not None:
            progress(i + 1, len(fams), g)
    out = TransferChoice(pd.DataFrame(rows), pd.DataFrame(shifts), pd.DataFrame(aur).T, chosen, preds, d["groups"],
                         pd.DataFrame(estimates), int(set_min_runs))
    return _rebase_small_sets(out)


def _rebase_small_sets(choice: TransferChoice) -> TransferChoice:
    """Below ``set_min_runs`` a set-level method keeps the shipped per-run confidences: those of :meth:`best`
    (measured as ``stack-oof``'s, replaced here by the best's rows and predictions where they differ)."""
    base = choice.best()
    if base == "stack-oof":
        return choice
    r = choice.rows.copy()
    for fam, n in choice.shifts[["family", "n"]].itertuples(index=False):
        src = r[(r.family == fam) & (r.method == base)].iloc[0]
        rows = np.flatnonzero(choice.groups == fam)
        for m in SET_LEVEL:
            i = r.index[(r.family == fam) & (r.method == m)][0]
            cols = src.index.drop(["method"]) if n < choice.set_min_runs else ["rate_gap", "em_gap"]
            r.loc[i, cols] = src[cols]
            if n < choice.set_min_runs:
                choice.predictions[m][rows] = choice.predictions[base][rows]
    choice.rows = r
    return choice


def fit_transfer(d: dict, method: str, *, variant: str = "reduced", seed: int = 42, inner_folds: int = 3,
                 models: dict | None = None, set_level: str | None = None) -> dict | None:
    """The ``transfer`` entry of a GAC file fitted on all of ``d`` for a shippable method.

    None for ``gac``; otherwise the signal chosen on all runs and the stack coefficients (``stack-oof`` from
    out-of-family logits, ``stack`` from the fitted ``models``' own logits, ``signal`` without the GAC,
    ``signal-oof`` without it through :func:`out_of_family_platt`). When no run lacks top-k alternatives, a
    ``fallback`` scores such runs by the Platt-scaled signal alone (a signal method's own map).

    Parameters
    ----------
    d : dict
        What :func:`prepare` made of the training runs.
    method : {"gac", "stack", "signal", "signal-oof", "stack-oof"}
        A method of ``SHIPPABLE``.
    variant : str, default "reduced"
        The HTC variant of the out-of-family fits (``stack-oof``).
    seed : int, default 42
        Their inner folds' random state.
    inner_folds : int, default 3
        Their inner folds.
    models : dict or None, default None
        The GAC's fitted models by kind (``stack``, and ``stack-oof`` with one training family).
    set_level : {None, "rank-mean-platt", "nearest-family"}, default None
        Also fit the entry's opt-in ``set_level`` step (:func:`fit_set_level`).

    Returns
    -------
    dict or None
        Keys method, signal, coef ([GAC logit weight, signal weight, intercept]), fill (the signal's value for a
        run without it), what (the signal in words) and, where needed, fallback and (``signal-oof``) rate_map.

    Raises
    ------
    ValueError
        If ``method`` is not shippable, or ``set_level`` is not None, "rank-mean-platt" or "nearest-family" on a
        method other than ``gac``.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.transfer_eval import fit_transfer, prepare
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 families, 16 runs each
    >>> d = prepare(ts)
    >>> fit_transfer(d, "gac") is None
    True
    >>> entry = fit_transfer(d, "signal")
    >>> entry["signal"], [round(c, 3) for c in entry["coef"]], entry["fallback"]["why"]
    ('min_prob', [0.0, 0.638, -0.31], 'no training run lacked top-k alternatives')
    """
    if method not in SHIPPABLE:
        raise ValueError(f"method must be one of {SHIPPABLE}, got {method!r}")
    if set_level not in (None, "rank-mean-platt", "nearest-family") or (set_level and method == "gac"):
        raise ValueError(f"set_level must be None, 'rank-mean-platt' or 'nearest-family' (on top of a transfer "
                         f"method other than 'gac'), got {set_level!r} with {method!r}")
    if method == "gac":
        return None
    out, _ = _fit_per_run(d, method, variant=variant, seed=seed, inner_folds=inner_folds, models=models)
    if set_level == "nearest-family":
        out["set_level"] = fit_nearest_family(signal_matrix(d["signals"]), d["y"], d["groups"])
    elif set_level:
        out["set_level"] = fit_set_level(d, variant=variant, seed=seed, inner_folds=inner_folds, models=models)
    return out


def fit_set_level(d: dict, *, variant: str = "reduced", seed: int = 42, inner_folds: int = 3,
                  models: dict | None = None) -> dict:
    """The ``rank-mean-platt`` set-level entry, as measured by :func:`set_level_methods`: its ``ranker`` is the
    ``stack-oof`` transfer entry (the GAC's ranker in the mean rank, whatever the per-run method is), its ``coef``
    the Platt map of every family's within-family mean rank of that ranker's out-of-family logit and the three
    training-free signals, applied to a scored set of at least ``min_runs`` runs."""
    from ..calibration.rank_ensemble import fit_rank_mean_platt
    from ..calibration.transfer_methods import apply_transfer

    ranker, z = _fit_per_run(d, "stack-oof", variant=variant, seed=seed, inner_folds=inner_folds, models=models)
    kinds = np.where(d["alt"], WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES).astype(object)
    zs = logit(sigmoid(apply_transfer(ranker, z, d["signals"][ranker["signal"]].to_numpy(), kinds)))
    a, b = fit_rank_mean_platt(np.column_stack([zs, signal_matrix(d["signals"])]), d["y"], d["groups"])
    return {"method": "rank-mean-platt", "coef": [a, b], "min_runs": SET_MIN_RUNS, "ranker": ranker,
            "what": "a run set of at least min_runs runs: sigmoid(a logit(r) + b), r = each run's mean rank within "
                    "the set of the ranker's logit and the three training-free signals (those defined and not "
                    "constant on the set); chosen leave-one-family-out"}


def _fit_per_run(d: dict, method: str, *, variant: str, seed: int, inner_folds: int, models) -> tuple[dict, object]:
    """(the per-run transfer entry of ``method``, the GAC logit of every row it was fitted on, or None)."""
    y, sig = d["y"], d["signals"]
    rows = np.arange(len(y))
    name = _best_signal(y, sig)
    s = sig[name].to_numpy()
    fill = float(np.nanmedian(s))
    s = np.where(np.isfinite(s), s, fill)
    z = None
    rate_map = None
    if method in ("signal", "signal-oof"):
        a, b = a1, b1 = weighted_platt(logit(s), y)
        if method == "signal-oof":
            a, b = out_of_family_platt(logit(s), y, d["groups"])
            # the base-rate measures read the plain Platt map: logit of it = (a1 / a) * (logit p - b) + b1
            rate_map = [a1 / a, b1 - a1 * b / a] if abs(a) > 1e-12 else None
        coef = [0.0, a, b]
    else:
        fit_kw = {"inner_folds": inner_folds, "variant": variant, "alphas": EXPERIMENT_ALPHAS}
        z = (_oof_logits(d, rows, seed, fit_kw, models) if method == "stack-oof"
             else _kind_logits(models, d["features"], d["alt"], rows, tts=False))
        coef = [float(v) for v in stack_logits(z, s, y)]
    out = {"method": method, "signal": name, "coef": [float(v) for v in coef], "fill": fill, "what": SIGNALS[name]}
    if rate_map:
        out["rate_map"] = [float(v) for v in rate_map]
    if not (~d["alt"]).any():
        # no training run lacks top-k alternatives: the without-alternatives model has never seen such a run
        # (its features move by 4+ training sd on UALA HotpotQA), so those runs get the Platt-scaled signal alone
        # (a signal method's own map: the signal alone is what it is anyway)
        a, b = coef[1:] if method in ("signal", "signal-oof") else weighted_platt(logit(s), y)
        out["fallback"] = {"kinds": [WITHOUT_ALTERNATIVES], "coef": [0.0, float(a), float(b)],
                           "why": "no training run lacked top-k alternatives"}
    return out, z


def expected_error_points(choice: TransferChoice, method: str) -> list[dict]:
    """One point per held-out family: its shift measures and the ECE ``method`` reached there.

    The points the expected-error range (:mod:`htc_core.calibration.expected_error`) is built from.

    Parameters
    ----------
    choice : TransferChoice
        A leave-one-family-out result.
    method : str
        A method of ``choice.rows``.

    Returns
    -------
    list of dict
        Per family: family, n, ece, rate_gap, em_gap, max_shift, missing_topk (rounded to 4 decimals).

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.experiments.transfer_eval import TransferChoice, expected_error_points
    >>> families = ["facts | m", "lists | m", "units | m"]
    >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
    ...                      "method": ["gac", "signal"] * 3, "n": 40,
    ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
    ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
    ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
    ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
    ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
    >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
    ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
    ...                        "train_rate": [0.55, 0.5, 0.45]})
    >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
    ...                             index=families)
    >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
    >>> expected_error_points(choice, "signal")[1]
    {'family': 'lists | m', 'n': 40, 'ece': 0.12, 'rate_gap': 0.03, 'em_gap': 0.05, 'max_shift': 3.0,
     'missing_topk': 0.0}
    """
    rows = choice.rows[choice.rows.method == method].set_index("family")
    return [{"family": r["family"], "n": int(r["n"]), "ece": round(float(rows.ece[r["family"]]), 4),
             "rate_gap": round(float(rows.rate_gap[r["family"]]), 4), "em_gap": round(float(rows.em_gap[r["family"]]), 4),
             **{k: round(float(r[k]), 4) for k in ("max_shift", "missing_topk")}}
            for r in choice.shifts.to_dict("records")]


def range_self_check(choice: TransferChoice, points: list[dict], method: str) -> list[dict]:
    """The expected-error range checked on the families it is built from, each left out in turn.

    For each held-out family, the range :func:`~htc_core.calibration.expected_error.expected_ece` gives it from
    the *other* families' points (its own shift measures, its ``method`` confidences for the noise; 0.5 where
    the result holds none), and whether its measured ECE lies inside.

    Parameters
    ----------
    choice : TransferChoice
        A leave-one-family-out result.
    points : list of dict
        :func:`expected_error_points` of ``choice`` and ``method``.
    method : str
        The method whose ECE the range predicts.

    Returns
    -------
    list of dict
        Per family: family, n, ece, low, high (rounded to 4 decimals), inside.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.experiments.transfer_eval import TransferChoice, expected_error_points, range_self_check
    >>> families = ["facts | m", "lists | m", "units | m"]
    >>> rows = pd.DataFrame({"family": [f for f in families for _ in (0, 1)],
    ...                      "method": ["gac", "signal"] * 3, "n": 40,
    ...                      "ece": [0.10, 0.08, 0.20, 0.12, 0.15, 0.09],
    ...                      "brier": [0.20, 0.19, 0.25, 0.21, 0.22, 0.20],
    ...                      "auroc": [0.80, 0.70, 0.60, 0.65, 0.75, 0.70],
    ...                      "rate_gap": [0.05, 0.02, 0.10, 0.03, 0.07, 0.02],
    ...                      "em_gap": [0.04, 0.03, 0.08, 0.05, 0.06, 0.04]})
    >>> shifts = pd.DataFrame({"family": families, "n": 40, "rate": [0.4, 0.5, 0.6],
    ...                        "max_shift": [1.5, 3.0, 2.0], "missing_topk": 0.0,
    ...                        "train_rate": [0.55, 0.5, 0.45]})
    >>> signal_auroc = pd.DataFrame({"seq_prob": [0.72, 0.68, 0.66], "min_prob": [0.70, 0.62, 0.71]},
    ...                             index=families)
    >>> choice = TransferChoice(rows, shifts, signal_auroc)      # a small hand-made result
    >>> checks = range_self_check(choice, expected_error_points(choice, "signal"), "signal")
    >>> [(c["family"], c["ece"], c["low"], c["high"], c["inside"]) for c in checks]
    [('facts | m', 0.08, 0.0, 0.2546, True), ('lists | m', 0.12, 0.0, 0.2246, True),
     ('units | m', 0.09, 0.0, 0.2546, True)]
    """
    from ..calibration.expected_error import expected_ece, holds

    conf = choice.predictions.get(method)
    out = []
    for i, p in enumerate(points):
        rows = np.flatnonzero(choice.groups == p["family"]) if choice.groups is not None else np.array([], int)
        c = conf[rows] if conf is not None and len(rows) else np.full(int(p["n"]), 0.5)
        e = expected_ece(points[:i] + points[i + 1:], p, c)
        out.append({"family": p["family"], "n": int(p["n"]), "ece": p["ece"], "low": round(e.low, 4),
                    "high": round(e.high, 4), "inside": holds(e, p["ece"], tol=5e-5)})   # the points' ECE: 4 decimals
    return out
