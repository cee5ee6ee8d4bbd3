"""One training procedure on two corpora, compared fairly: nested leave-one-family-out on the same held-out runs.

The question is whether a grown training corpus gives a better General Agent Calibrator than the corpus a shipped
file was trained on. Two leave-one-family-out tables, one per corpus, do not answer it where the held-out families
themselves grew (16 runs of a family before, 250 after): they score different runs. Here, for each held-out family
F, the whole procedure is run twice, once on each corpus minus F:

1. the by-kind GAC is fitted and every transfer candidate is measured leave-one-family-out on the remaining
   families (:func:`~htc_core.experiments.transfer_lofo.leave_one_family_out`); the procedure's rule picks the
   method (:meth:`~htc_core.experiments.transfer_choice.TransferChoice.best`) and its expected-error points;
2. the GAC fitted on the corpus minus F scores F with that method zero-shot, on **all of F's runs in the larger
   corpus** for both corpora, so both procedures are scored on identical runs;
3. the range the procedure would print for F (:func:`~htc_core.calibration.expected_error.expected_ece`, from its
   own points, none of them F's) is checked against F's measured ECE (the self check).

No label of F reaches a fit of either procedure; F's unlabeled features reach the candidates that use the scored
set's own statistics, as a user's runs would. :func:`paired_bootstrap` puts an interval on the differences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from .grouping import score_metrics
from .transfer_lofo import leave_one_family_out
from .transfer_range import expected_error_points

__all__ = ["CorpusComparison", "compare_corpora", "paired_bootstrap"]

CORPORA = ("old", "new")
STATS = ("ece_mean", "ece_worst", "brier_mean", "auroc_mean")


def take_rows(d: dict, rows: np.ndarray) -> dict:
    """The rows ``rows`` (positions) of a prepared data dict (:func:`~htc_core.experiments.transfer_families.prepare`):
    every array, DataFrame and dict of arrays indexed by run is cut, anything else is kept."""
    n = len(d["y"])

    def cut(v):
        if isinstance(v, pd.DataFrame) and len(v) == n:
            return v.iloc[rows].reset_index(drop=True)
        if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == n:
            return v[rows]
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        return v

    return {k: cut(v) for k, v in d.items()}


@dataclass
class CorpusComparison:
    """Both procedures on every held-out family: metrics, confidences, the self check and the runs scored.

    Made by :func:`compare_corpora`.

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per (family, corpus, role): family, corpus ("old" or "new"), role ("chosen": the method the
        procedure's rule picks without the family; "reference": a fixed method), method, n, ece, brier, auroc,
        and for "chosen" the printed range low, high and inside (whether it holds the ECE).
    predictions : dict of (str, str) to numpy.ndarray
        (corpus, role) -> each row's held-out confidence (NaN for rows of no held-out family).
    y : numpy.ndarray
        The rows' outcomes.
    groups : numpy.ndarray
        The rows' families.
    clusters : numpy.ndarray
        The rows' resampling units (a run; its prefixes share one).
    heldout_ids : dict of (str, str) to numpy.ndarray, default {}
        (corpus, family) -> the ids of the rows that procedure scored for that family.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from htc_core.experiments.corpus_compare import CorpusComparison
    >>> rows = pd.DataFrame({"family": ["a", "a", "b", "b"], "corpus": ["old", "new"] * 2, "role": "chosen",
    ...                      "method": "signal-oof", "n": 4, "ece": [0.10, 0.08, 0.20, 0.16],
    ...                      "brier": 0.2, "auroc": [0.7, 0.72, 0.6, 0.6], "low": 0.0, "high": 0.3, "inside": True})
    >>> c = CorpusComparison(rows, {}, np.zeros(8), np.repeat(["a", "b"], 4), np.arange(8))
    >>> c.summary().loc[("chosen", "new"), ["ece_mean", "ece_worst", "inside"]].tolist()
    [0.12, 0.16, 2.0]
    """

    rows: pd.DataFrame
    predictions: dict
    y: np.ndarray
    groups: np.ndarray
    clusters: np.ndarray
    heldout_ids: dict = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """Mean and worst ECE, Brier and AUROC over the held-out families, per role and corpus.

        Returns
        -------
        pandas.DataFrame
            Indexed by (role, corpus): ece_mean, ece_worst, brier_mean, brier_worst, auroc_mean, auroc_worst,
            inside (families whose range held the ECE) and families.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from htc_core.experiments.corpus_compare import CorpusComparison
        >>> rows = pd.DataFrame({"family": ["a", "a"], "corpus": ["old", "new"], "role": "chosen", "method": "m",
        ...                      "n": 4, "ece": [0.1, 0.2], "brier": 0.2, "auroc": 0.7, "low": 0.0, "high": 0.15,
        ...                      "inside": [True, False]})
        >>> CorpusComparison(rows, {}, np.zeros(4), np.repeat("a", 4), np.arange(4)).summary()["inside"].tolist()
        [0, 1]
        """
        g = self.rows.groupby(["role", "corpus"], sort=True)
        return pd.DataFrame({"ece_mean": g.ece.mean(), "ece_worst": g.ece.max(), "brier_mean": g.brier.mean(),
                             "brier_worst": g.brier.max(), "auroc_mean": g.auroc.mean(), "auroc_worst": g.auroc.min(),
                             "inside": g.inside.apply(lambda s: int(s.fillna(False).astype(bool).sum())),
                             "families": g.family.nunique()})

    def bootstrap(self, role: str = "chosen", *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
        """The paired bootstrap of new against old for one role (:func:`paired_bootstrap`): runs resampled
        within each held-out family, a run's rows together.

        Parameters
        ----------
        role : {"chosen", "reference"}, default "chosen"
            Which confidences to compare.
        n_boot : int, default 2000
            Resamples.
        seed : int, default 0
            The resampling's random state.

        Returns
        -------
        pandas.DataFrame
            Indexed by statistic (ece_mean, ece_worst, brier_mean, auroc_mean): old, new, diff (new - old) and
            the 95% interval of diff, low and high.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from htc_core.experiments.corpus_compare import CorpusComparison
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 2, 200).astype(float)
        >>> p = {("old", "chosen"): np.clip(0.3 + 0.4 * y + rng.normal(0, 0.2, 200), 0, 1),
        ...      ("new", "chosen"): np.clip(0.3 + 0.4 * y + rng.normal(0, 0.2, 200), 0, 1)}
        >>> c = CorpusComparison(pd.DataFrame(), p, y, np.repeat(["a", "b"], 100), np.arange(200))
        >>> b = c.bootstrap(n_boot=200)
        >>> bool(b.loc["ece_mean", "low"] < b.loc["ece_mean", "diff"] < b.loc["ece_mean", "high"])
        True
        """
        old, new = self.predictions[("old", role)], self.predictions[("new", role)]
        keep = np.isfinite(old) & np.isfinite(new)
        return paired_bootstrap(self.y[keep], old[keep], new[keep], self.groups[keep],
                                clusters=self.clusters[keep], n_boot=n_boot, seed=seed, names=CORPORA)

    def table(self) -> str:
        """Plain text: per held-out family each procedure's chosen method with ECE / Brier / AUROC and its
        printed range, then the reference method under both; the mean and worst lines.

        Returns
        -------
        str
            The table.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from htc_core.experiments.corpus_compare import CorpusComparison
        >>> rows = pd.DataFrame({"family": ["a"] * 4, "corpus": ["old", "new"] * 2,
        ...                      "role": ["chosen"] * 2 + ["reference"] * 2, "method": "signal-oof", "n": 4,
        ...                      "ece": 0.1, "brier": 0.2, "auroc": 0.7, "low": [0.0, 0.0, None, None],
        ...                      "high": [0.3, 0.3, None, None], "inside": [True, True, None, None]})
        >>> CorpusComparison(rows, {}, np.zeros(4), np.repeat("a", 4), np.arange(4)).table().splitlines()[2].split()
        ['a', '4', 'signal-oof', '0.100/0.200/0.700', '0.00-0.30', 'yes', 'signal-oof', '0.100/0.200/0.700', '0.00-0.30', 'yes', '0.100/0.200/0.700', '0.100/0.200/0.700']
        """
        r = self.rows.set_index(["family", "corpus", "role"])
        ref = self.rows[self.rows.role == "reference"].method
        ref_name = str(ref.iloc[0]) if len(ref) else "reference"
        head = (f"{'held-out family':30s} {'runs':>5}  " + "  ".join(
            f"{c + ': chosen':>12} {'ECE/Brier/AUROC':>17} {'range':>9} {'in':>3}" for c in CORPORA)
            + "  " + "  ".join(f"{ref_name + ' ' + c:>17}" for c in CORPORA))
        lines = ["both procedures fitted without the held-out family, scored on the same runs (all of the family's)",
                 head]
        for fam in dict.fromkeys(self.rows.family):
            cells = []
            for c in CORPORA:
                x = r.loc[(fam, c, "chosen")]
                cells.append(f"{x.method:>12} {_emb(x):>17} {x.low:.2f}-{x.high:.2f} {'yes' if x.inside else 'no':>3}")
            refs = [f"{_emb(r.loc[(fam, c, 'reference')]):>17}" for c in CORPORA]
            lines.append(f"{fam:30s} {int(r.loc[(fam, 'new', 'chosen')].n):5d}  " + "  ".join(cells) + "  "
                         + "  ".join(refs))
        s = self.summary()
        for what, agg in (("mean", "mean"), ("worst", "worst")):
            cells = [f"{'':>12} {_agg(s.loc[('chosen', c)], agg):>17} {'':>9} {'':>3}" for c in CORPORA]
            refs = [f"{_agg(s.loc[('reference', c)], agg):>17}" for c in CORPORA]
            lines.append(f"{what:30s} {'':5s}  " + "  ".join(cells) + "  " + "  ".join(refs))
        lines.append("expected-error self check (range holds the ECE): " + ", ".join(
            f"{c} {int(s.loc[('chosen', c)].inside)} of {int(s.loc[('chosen', c)].families)}" for c in CORPORA))
        return "\n".join(lines)


def _emb(x) -> str:
    return f"{x.ece:.3f}/{x.brier:.3f}/{x.auroc:.3f}"


def _agg(s: pd.Series, how: str) -> str:
    return f"{s[f'ece_{how}']:.3f}/{s[f'brier_{how}']:.3f}/{s[f'auroc_{how}']:.3f}"


def compare_corpora(d: dict, old: np.ndarray, *, seed: int = 42, reference: str = "signal-oof",
                    families: list | None = None, clusters: np.ndarray | None = None,
                    points: Callable[[object, str, dict], list] | None = None,
                    progress: Callable[[int, int, str], None] | None = None, **lofo_kw) -> CorpusComparison:
    """One procedure on the old and the grown corpus, each fitted without a held-out family, scored on its runs.

    For each held-out family F, per corpus (old: the rows ``old``; new: every row of ``d``): the method the
    procedure's rule picks leave-one-family-out on the corpus minus F, with its expected-error points; the GAC
    fitted on the corpus minus F, scoring all of F's rows of ``d`` with that method and with ``reference``; the
    range the procedure prints for F (built from its own points, none of them F's) against F's measured ECE.

    Parameters
    ----------
    d : dict
        What :func:`~htc_core.experiments.transfer_families.prepare` made of the grown corpus (old is a subset).
    old : numpy.ndarray of bool
        The rows of ``d`` in the old corpus.
    seed : int, default 42
        The fits' random state (both procedures).
    reference : str, default "signal-oof"
        A fixed method reported next to each procedure's choice (the shipped one).
    families : list of str or None, default None
        The held-out families (default: every family of ``d`` with both outcomes).
    clusters : numpy.ndarray or None, default None
        Each row's resampling unit for :meth:`CorpusComparison.bootstrap` (default: the row itself; for prefixes,
        their run).
    points : callable or None, default None
        ``points(choice, method, data)`` -> the expected-error points of a procedure's leave-one-family-out
        ``choice`` on ``data`` (default :func:`~htc_core.experiments.transfer_range.expected_error_points`).
    progress : callable or None, default None
        ``progress(done, total, family)`` after each held-out family.
    **lofo_kw
        Passed to :func:`~htc_core.experiments.transfer_lofo.leave_one_family_out` (inner_folds, alphas).

    Returns
    -------
    CorpusComparison
        Both procedures' metrics per held-out family, their confidences and the ids they scored.

    Examples
    --------
    Three Gemma families of 16 runs; the "old" corpus holds the first 4 runs of each run set. Both procedures
    score the same 16 runs of each held-out family:

    >>> import numpy as np
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.transfer_families import prepare
    >>> from htc_core.experiments.corpus_compare import compare_corpora
    >>> ts, _ = load([f"sample_runs/_examples/{t}_Gemma3-270M-{m}.jsonl" for t in ("facts", "lists", "units")
    ...               for m in ("greedy", "sampled-t0.7")])
    >>> d = prepare(ts)
    >>> old = np.tile(np.arange(8) < 4, 6)
    >>> c = compare_corpora(d, old, families=["lists | Gemma3-270M"], alphas=(1.0,), inner_folds=2)
    >>> [len(c.heldout_ids[(k, "lists | Gemma3-270M")]) for k in ("old", "new")]
    [16, 16]
    >>> c.rows[c.rows.role == "chosen"][["corpus", "method", "ece", "auroc"]].round(3).to_string(index=False)
    'corpus method   ece  auroc\\n   old    gac 0.454  0.436\\n   new    gac 0.556  0.709'
    """
    from ..calibration.expected_error import expected_ece, holds

    groups, y = d["groups"], d["y"]
    fams = families or [g for g in sorted(set(groups)) if len(set(y[groups == g])) == 2]
    corpora = {"old": np.asarray(old, dtype=bool), "new": np.ones(len(y), dtype=bool)}
    preds = {(c, r): np.full(len(y), np.nan) for c in CORPORA for r in ("chosen", "reference")}
    rows, ids = [], {}
    for i, fam in enumerate(fams):
        held = groups == fam
        for name, corpus in corpora.items():
            out = nested_fold(d, corpus & ~held, fam, seed=seed, reference=reference, points=points, **lofo_kw)
            te = out["rows"]
            ids[(name, fam)] = np.asarray(d["ids"])[te]
            for role in ("chosen", "reference"):
                p = out[role]
                preds[(name, role)][te] = p
                row = {"family": fam, "corpus": name, "role": role, "method": out[f"{role}_method"], "n": len(te),
                       **score_metrics(y[te], p)}
                if role == "chosen":
                    e = expected_ece(out["points"], out["point"], p)
                    row.update(low=e.low, high=e.high, inside=holds(e, row["ece"]))
                rows.append(row)
        if progress is not None:
            progress(i + 1, len(fams), fam)
    cl = np.arange(len(y)) if clusters is None else np.asarray(clusters)
    return CorpusComparison(pd.DataFrame(rows), preds, y, groups, cl, ids)


def nested_fold(d: dict, train: np.ndarray, family: str, *, seed: int = 42, reference: str = "signal-oof",
                points: Callable | None = None, **lofo_kw) -> dict:
    """One procedure fitted on the rows ``train`` of ``d`` (none of ``family``'s), scoring all of ``family``'s rows.

    Returns a dict: rows (the positions in ``d`` scored), chosen_method (the rule's pick leave-one-family-out on
    ``train``), chosen and reference (their confidences on ``rows``), reference_method, points (the procedure's
    expected-error points, from ``train`` only) and point (``family``'s shift measures)."""
    held = d["groups"] == family
    if np.any(train & held):
        raise ValueError(f"the training rows hold runs of the held-out family {family!r}")
    inner_rows = np.flatnonzero(train)
    inner_data = take_rows(d, inner_rows)
    inner = leave_one_family_out(inner_data, seed=seed, **lofo_kw)
    chosen = inner.best()
    pts = points(inner, chosen, inner_data) if points is not None else expected_error_points(inner, chosen)
    outer_rows = np.flatnonzero(train | held)
    outer = leave_one_family_out(take_rows(d, outer_rows), seed=seed, families=[family], **lofo_kw)
    te = np.flatnonzero(outer.groups == family)
    return {"rows": outer_rows[te], "chosen_method": chosen, "chosen": outer.predictions[chosen][te],
            "reference_method": reference, "reference": outer.predictions[reference][te], "points": pts,
            "point": expected_error_points(outer, chosen)[0]}


def paired_bootstrap(y: np.ndarray, p_a: np.ndarray, p_b: np.ndarray, cells: np.ndarray, *,
                     blocks: np.ndarray | None = None, clusters: np.ndarray | None = None, n_boot: int = 2000,
                     seed: int = 0, names: tuple = ("a", "b")) -> pd.DataFrame:
    """Mean and worst ECE, mean Brier and mean AUROC over cells of two confidence vectors on the same rows, with
    a paired bootstrap interval of their difference.

    Each resample draws the clusters (runs) with replacement within each block and takes every row of a drawn
    cluster, the same rows for both vectors; the statistics are computed per cell (a held-out family, or a prefix
    cut) and aggregated over cells.

    Parameters
    ----------
    y : numpy.ndarray
        The 0/1 outcomes.
    p_a, p_b : numpy.ndarray
        The two confidence vectors (same rows).
    cells : numpy.ndarray
        Each row's cell.
    blocks : numpy.ndarray or None, default None
        Each row's resampling block (default: its cell).
    clusters : numpy.ndarray or None, default None
        Each row's resampling unit (default: the row).
    n_boot : int, default 2000
        Resamples.
    seed : int, default 0
        The random state.
    names : tuple of str, default ("a", "b")
        The column names of the two vectors' values.

    Returns
    -------
    pandas.DataFrame
        Indexed by statistic (ece_mean, ece_worst, brier_mean, auroc_mean): the two values, diff (b - a),
        low, high (the 2.5% and 97.5% quantiles of the resampled diff: the percentile interval) and basic_low,
        basic_high (the basic interval, 2 diff - those quantiles: it corrects the shift of a biased statistic's
        resampled diff; ECE is one, most where it is near 0).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.experiments.corpus_compare import paired_bootstrap
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.1, 0.8, 400)
    >>> y = (rng.random(400) < p).astype(float)                  # p is calibrated; p + 0.15 is not
    >>> b = paired_bootstrap(y, p, p + 0.15, np.repeat(["a", "b"], 200), n_boot=300)
    >>> b.round(2).loc["ece_mean"].tolist()
    [0.05, 0.18, 0.13, 0.06, 0.14, 0.12, 0.2]
    """
    y = np.asarray(y, dtype=np.float64)
    P = np.vstack([np.asarray(p_a, dtype=np.float64), np.asarray(p_b, dtype=np.float64)])
    cells = np.asarray(cells, dtype=object)
    blocks = cells if blocks is None else np.asarray(blocks, dtype=object)
    clusters = np.arange(len(y)) if clusters is None else np.asarray(clusters)
    units = _units(blocks, clusters)
    rng = np.random.default_rng(seed)
    point = _cell_stats(y, P, cells, np.arange(len(y)))
    draws = np.array([_cell_stats(y, P, cells, np.concatenate([_draw(u, rng) for u in units]))
                      for _ in range(n_boot)])
    diff = draws[:, 1] - draws[:, 0]
    lo, hi = np.quantile(diff, [0.025, 0.975], axis=0)
    d = point[1] - point[0]
    return pd.DataFrame({names[0]: point[0], names[1]: point[1], "diff": d, "low": lo, "high": hi,
                         "basic_low": 2 * d - hi, "basic_high": 2 * d - lo}, index=pd.Index(STATS, name="statistic"))


def _units(blocks: np.ndarray, clusters: np.ndarray) -> list:
    """Per block: (its row positions ordered by cluster, each cluster's start in that order, its length)."""
    out = []
    for b in dict.fromkeys(blocks):
        rows = np.flatnonzero(blocks == b)
        _, inverse, counts = np.unique(clusters[rows].astype(str), return_inverse=True, return_counts=True)
        order = rows[np.argsort(inverse, kind="stable")]
        out.append((order, np.concatenate([[0], np.cumsum(counts)[:-1]]), counts))
    return out


def _draw(unit: tuple, rng: np.random.Generator) -> np.ndarray:
    """The row positions of one resample of a block's clusters (drawn with replacement, as many as it holds)."""
    order, starts, lengths = unit
    k = rng.integers(0, len(lengths), len(lengths))
    L, S = lengths[k], starts[k]
    offsets = np.repeat(S - (np.cumsum(L) - L), L) + np.arange(int(L.sum()))
    return order[offsets]


def _cell_stats(y: np.ndarray, P: np.ndarray, cells: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """[2, 4]: ece_mean, ece_worst, brier_mean, auroc_mean of both rows of ``P`` on the rows ``idx``."""
    from ..calibration.metrics import fast_auroc, fast_brier, fast_ece

    c = cells[idx]
    per = []
    for cell in dict.fromkeys(cells):
        r = idx[c == cell]
        if not len(r):
            continue
        yy, pp = y[r], P[:, r]
        per.append(np.stack([fast_ece(yy, pp), fast_brier(yy, pp), fast_auroc(yy, pp)]))
    per = np.array(per)                      # [cells, 3, 2]
    return np.stack([per[:, 0].mean(0), per[:, 0].max(0), per[:, 1].mean(0), np.nanmean(per[:, 2], 0)], axis=1)
