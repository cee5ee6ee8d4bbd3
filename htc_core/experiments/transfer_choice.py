"""The result of the leave-one-family-out experiment and the rule that chooses the GAC's transfer method.

:class:`TransferChoice` holds per held-out family the metrics of every transfer method (:data:`METHODS`), the
training-free signals' AUROC, the shift measurements and the label-free AUROC estimates; :meth:`TransferChoice.best`
is the choice rule among the methods a GAC file can hold (:data:`SHIPPABLE`), :meth:`TransferChoice.best_set_level`
the set-level method (:data:`SET_LEVEL`) that wins over it, and the tables print the result. Made by
:func:`~htc_core.experiments.transfer_lofo.leave_one_family_out`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["METHODS", "SHIPPABLE", "SET_LEVEL", "SET_MIN_RUNS", "TransferChoice"]

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


@dataclass
class TransferChoice:
    """Per held-out family: the metrics of every transfer method, the signals' AUROC and the shift measurements.

    Made by :func:`~htc_core.experiments.transfer_lofo.leave_one_family_out`.

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
    >>> from htc_core.experiments.transfer_choice import TransferChoice
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
        >>> from htc_core.experiments.transfer_choice import TransferChoice
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
        >>> from htc_core.experiments.transfer_choice import TransferChoice
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
        >>> from htc_core.experiments.transfer_choice import TransferChoice
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
        >>> from htc_core.experiments.transfer_choice import TransferChoice
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
        >>> from htc_core.experiments.transfer_choice import TransferChoice
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
        >>> from htc_core.experiments.transfer_choice import TransferChoice
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
        >>> from htc_core.experiments.transfer_choice import TransferChoice
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
