"""Early warning: how well a run's outcome can be predicted from its first steps.

:func:`early_warning` evaluates every method on prefixes of the runs (the first k steps, k = 1, 2, ...,
and 25/50/75/100% of each run's steps) under the protocol of :func:`~htc_core.calibration.evaluate`:
for each prefix length the methods are fitted on the prefixes of the outer-training runs (HTC-Reduced
chooses its alpha by inner CV on those only; temperatures likewise) and predict the prefixes of the test
runs. The outer folds are folds of trajectories: ``evaluate`` draws them from the run labels with the
seed, the same for every prefix length (checked), so no run is on both sides of any fold at any length.

Two false-alarm views at a fixed rate (default 10% of the successful runs):

- ``curve``: per prefix length, the fraction of failing runs whose confidence on that prefix is below the
  threshold that flags ``false_alarm`` of the successful runs on that same prefix;
- ``alerts`` / ``first_alert``: what a live :class:`~htc_core.monitor.Monitor` with one threshold would do.
  Each run's confidence after step j is its out-of-fold confidence on the j-step prefix; one threshold per
  method (and repeat) is set so that ``false_alarm`` of the successful runs are ever alerted before they
  end; for the failing runs we report the fraction flagged by step k, and the median step of the first
  alert against the median length of the flagged runs.

The thresholds are set on the out-of-fold confidences of these same runs: the figures describe what the
rate is on this data, not a threshold chosen in advance. A run with fewer than k steps enters the
k-step prefix whole (it had finished by then); ``curve.running`` counts the runs still going.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .evaluation import EvaluationError, evaluate, label_problem
from .results import METRICS
from .solvers import DEFAULT_ALPHAS

__all__ = ["early_warning", "EarlyWarningResult", "DEFAULT_METHODS", "DEFAULT_FRACTIONS", "alert_threshold"]

DEFAULT_METHODS = ("HTC-Reduced", "LastStep-TP", "LastStep-TP+Temp", "GlobalTrace-TP", "GlobalTrace-TP+Temp")
DEFAULT_FRACTIONS = (0.25, 0.5, 0.75, 1.0)
MAX_STEPS = 20


@dataclass
class EarlyWarningResult:
    """Metrics against prefix length, and when a fixed-false-alarm monitor first flags the failing runs.

    Made by :func:`early_warning`.

    Parameters
    ----------
    n : int
        Runs evaluated.
    positive_rate : float
        Share of successes.
    seeds : list of int
        The repeats' seeds.
    n_splits : int
        Outer folds (of trajectories).
    false_alarm : float
        The alert threshold's false-alarm rate on successful runs.
    methods : list of str
        The methods evaluated.
    curve : DataFrame
        Per prefix and method: prefix, kind, k, running, method, ece, brier, auroc (each with ``_std``),
        flagged.
    alerts : DataFrame
        Per method and step: the share of failing runs a live monitor has flagged by that step
        (``flagged_by_step``, mean over repeats).
    first_alert : DataFrame
        Per method: threshold, flagged, median_first_alert, median_length, median_ratio.
    oof : dict, default={}
        (prefix label, method) -> out-of-fold confidences of shape (n_repeats, n).
    ids : ndarray, optional
        The run ids.
    labels : ndarray, optional
        The labels.
    steps : ndarray, optional
        Steps per run.
    notes : list of str, default=[]
        What was capped or left out and why.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.prefixes import early_warning
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> result = early_warning(ts, steps=[1], fractions=(0.5,), methods=("GlobalTrace-TP",), seeds=1, n_splits=3)
    >>> result.curve[["prefix", "running", "method"]]
             prefix  running          method
    0        step 1      248  GlobalTrace-TP
    1  50% of steps      248  GlobalTrace-TP
    """

    n: int
    positive_rate: float
    seeds: list
    n_splits: int
    false_alarm: float
    methods: list
    curve: pd.DataFrame        # prefix, kind, k, running, method, ece, brier, auroc (+ _std), flagged
    alerts: pd.DataFrame       # method, step, flagged_by_step (mean over repeats)
    first_alert: pd.DataFrame  # method, threshold, flagged, median_first_alert, median_length, median_ratio
    oof: dict = field(default_factory=dict)   # (prefix label, method) -> [n_repeats, n] OOF confidences
    ids: np.ndarray | None = None
    labels: np.ndarray | None = None
    steps: np.ndarray | None = None           # steps per run
    notes: list = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        """The metrics against prefix length (a copy of ``curve``).

        Returns
        -------
        DataFrame
            One row per prefix and method.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.prefixes import early_warning
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = early_warning(ts, steps=[1], fractions=(0.5,), methods=("GlobalTrace-TP",), seeds=1, n_splits=3)
        >>> result.to_frame().shape
        (2, 12)
        """
        return self.curve.copy()

    def to_dict(self) -> dict:
        """The result as a JSON object (without the out-of-fold confidences).

        Returns
        -------
        dict
            n, positive_rate, seeds, n_splits, false_alarm, methods, curve, alerts and first_alert (records),
            notes.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.prefixes import early_warning
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = early_warning(ts, steps=[1], fractions=(0.5,), methods=("GlobalTrace-TP",), seeds=1, n_splits=3)
        >>> d = result.to_dict()
        >>> d["false_alarm"], d["curve"][0]["prefix"]
        (0.1, 'step 1')
        """
        def rows(df):
            return json.loads(df.to_json(orient="records"))

        return {"n": int(self.n), "positive_rate": float(self.positive_rate), "seeds": list(self.seeds),
                "n_splits": int(self.n_splits), "false_alarm": float(self.false_alarm), "methods": list(self.methods),
                "curve": rows(self.curve), "alerts": rows(self.alerts), "first_alert": rows(self.first_alert),
                "notes": list(self.notes)}

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as JSON text.

        Parameters
        ----------
        **kwargs
            Passed to :func:`json.dumps`.

        Returns
        -------
        str
            The JSON text.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.prefixes import early_warning
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = early_warning(ts, steps=[1], fractions=(0.5,), methods=("GlobalTrace-TP",), seeds=1, n_splits=3)
        >>> result.to_json()[:24]
        '{"n": 250, "positive_rat'
        """
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """Plain-text tables: the metrics per prefix, the live monitor's alerts, the share flagged by step.

        Returns
        -------
        str
            The three tables and the notes.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.prefixes import early_warning
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = early_warning(ts, steps=[1], fractions=(0.5,), methods=("GlobalTrace-TP",), seeds=1, n_splits=3)
        >>> print(result.table())
        n = 250, success rate = 0.480, 3-fold CV by trajectory x 1 repeat(s); ...
        prefix        running  method            ECE  Brier  AUROC  flagged@10%FA
        ------------  -------  --------------  -----  -----  -----  -------------
        step 1            248  GlobalTrace-TP  0.358  0.312  0.951          0.838
        50% of steps      248  GlobalTrace-TP  0.364  0.321  0.953          0.846
        <BLANKLINE>
        live monitor, one threshold per method (10% of successful runs ever alerted):
        method          threshold  failing flagged  median first alert  median length  median ratio
        --------------  ---------  ---------------  ------------------  -------------  ------------
        GlobalTrace-TP      0.890            0.838            step 1.0      1.0 steps          1.00
        <BLANKLINE>
        flagged by step      1
        ---------------  -----
        GlobalTrace-TP   0.838
        note: 248 runs are longer than 1 steps; the live-monitor view covers their first 1 steps
        """
        fa = f"{self.false_alarm:.0%}"
        head = (f"n = {self.n}, success rate = {self.positive_rate:.3f}, {self.n_splits}-fold CV by trajectory x "
                f"{len(self.seeds)} repeat(s); metrics on pooled out-of-fold predictions of each prefix; "
                f"flagged = failing runs below the threshold that flags {fa} of successful runs")
        c = self.curve
        cells = [("prefix", "running", "method", "ECE", "Brier", "AUROC", f"flagged@{fa}FA")]
        for _, r in c.iterrows():
            cells.append((r.prefix, str(int(r.running)), r.method, f"{r.ece:.3f}", f"{r.brier:.3f}",
                          f"{r.auroc:.3f}", f"{r.flagged:.3f}"))
        lines = [head, *_grid(cells, left=(0, 2)), "",
                 f"live monitor, one threshold per method ({fa} of successful runs ever alerted):"]
        cells = [("method", "threshold", "failing flagged", "median first alert", "median length", "median ratio")]
        for _, r in self.first_alert.iterrows():
            cells.append((r.method, f"{r.threshold:.3f}", f"{r.flagged:.3f}", f"step {r.median_first_alert:.1f}",
                          f"{r.median_length:.1f} steps", f"{r.median_ratio:.2f}"))
        lines += _grid(cells)
        piv = self.alerts.pivot(index="method", columns="step", values="flagged_by_step").reindex(self.methods)
        cells = [("flagged by step", *[str(k) for k in piv.columns])]
        cells += [(m, *[f"{v:.3f}" for v in row]) for m, row in piv.iterrows()]
        lines += ["", *_grid(cells)]
        lines += [f"note: {t}" for t in self.notes]
        return "\n".join(lines)


def _grid(cells: list[tuple], left: tuple = (0,)) -> list[str]:
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(cells[0]))]
    out = ["  ".join(str(v).ljust(w) if i in left else str(v).rjust(w) for i, (v, w) in
                     enumerate(zip(r, widths))) for r in cells]
    out.insert(1, "  ".join("-" * w for w in widths))
    return out


def alert_threshold(success_conf: np.ndarray, false_alarm: float) -> float:
    """The alert threshold that flags a given share of the successful runs.

    The threshold t is such that ``conf < t`` holds for ``floor(false_alarm * n)`` of the successful runs'
    confidences (ties may flag fewer): the next-smallest value.

    Parameters
    ----------
    success_conf : array-like of shape (n,)
        The successful runs' confidences.
    false_alarm : float
        The share of them to flag, in (0, 1).

    Returns
    -------
    float
        The threshold (``inf`` when every run would be flagged).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.prefixes import alert_threshold
    >>> conf = np.array([0.9, 0.2, 0.8, 0.7, 0.6, 0.95, 0.85, 0.75, 0.65, 0.99])
    >>> alert_threshold(conf, 0.1)            # flags 1 of 10: only 0.2 is below it
    0.6
    """
    v = np.sort(np.asarray(success_conf, dtype=np.float64))
    m = int(np.floor(false_alarm * len(v) + 1e-9))
    return float(v[m]) if m < len(v) else float("inf")


def _check_args(ts, false_alarm, steps, fractions):
    from ..traces import TraceSet

    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    if isinstance(false_alarm, bool) or not isinstance(false_alarm, (int, float)) or not 0 < false_alarm < 1:
        raise ValueError(f"false_alarm must be a number in (0, 1), got {false_alarm!r}")
    S = ts.steps_per_trajectory
    longest = int(S.max()) if len(S) else 1
    if steps is None:
        steps = range(1, min(longest, MAX_STEPS) + 1)
    if isinstance(steps, range):   # checked without listing it: range(1, 10**9 + 1) costs nothing
        if not len(steps) or steps.start != 1 or steps.step != 1:
            raise ValueError(f"steps must be 1, 2, ..., K (consecutive, from 1), got {steps!r}")
        n_steps = len(steps)
    else:
        steps = [int(k) for k in steps]
        if not steps or min(steps) < 1 or steps != list(range(1, len(steps) + 1)):
            raise ValueError(f"steps must be 1, 2, ..., K (consecutive, from 1), got {steps!r}")
        n_steps = len(steps)
    # a length beyond the longest run would evaluate the whole runs again: capped by the data
    steps = list(range(1, min(n_steps, longest) + 1))
    fractions = [float(f) for f in fractions]
    if any(not 0 < f <= 1 for f in fractions):
        raise ValueError(f"fractions must be in (0, 1], got {fractions!r}")
    capped = [] if n_steps <= longest else [f"prefix lengths capped at {longest} steps, the longest run "
                                            f"({n_steps:,} asked)"]
    return steps, fractions, capped


def early_warning(ts, *, steps: Sequence[int] | None = None, fractions: Sequence[float] = DEFAULT_FRACTIONS,
                  methods: Sequence[str] = DEFAULT_METHODS, seeds: int | Sequence[int] = 3, n_splits: int = 5,
                  false_alarm: float = 0.1, profile: str | None = None, top_k: int | None = None,
                  alphas: Sequence[float] = DEFAULT_ALPHAS,
                  progress: Callable[[int, int, str], None] | None = None) -> EarlyWarningResult:
    """The evaluation protocol on the first k steps (and the first fractions) of every run.

    Parameters
    ----------
    ts : TraceSet
        Labeled runs.
    steps : sequence of int, optional
        Prefix lengths (default 1..min(longest run, 20)).
    fractions : sequence of float, default=(0.25, 0.5, 0.75, 1.0)
        Prefixes as fractions of each run.
    methods : sequence of str
        Methods of :func:`htc_core.evaluate`.
    seeds, n_splits, profile, top_k, alphas
        As :func:`htc_core.evaluate` (trajectory folds).
    false_alarm : float, default=0.1
        The alert threshold's false-alarm rate on successful runs.
    progress : callable, optional
        ``progress(done, total, message)``.

    Returns
    -------
    EarlyWarningResult
        ``curve``, ``alerts``, ``first_alert``, ``table()``.

    Raises
    ------
    EvaluationError
        When the labels cannot be evaluated.

    Examples
    --------
    >>> from htc_core.calibration import early_warning
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> result = early_warning(ts, steps=[1], fractions=(1.0,), methods=("HTC-Reduced",), seeds=1, n_splits=3,
    ...                        alphas=(1.0,))
    >>> result.methods
    ['HTC-Reduced']
    """
    from ..traces.prefix import prefixes

    steps, fractions, capped = _check_args(ts, false_alarm, steps, fractions)
    y = ts.labels
    why = label_problem(y) if not np.isnan(y).any() else "every run needs a success label (use ts.labeled())"
    if why:
        raise EvaluationError(f"cannot evaluate early warning: {why}")
    specs = [(f"step {k}", "steps", float(k), dict(steps=k)) for k in steps]
    specs += [(f"{f:.0%} of steps", "fraction", f, dict(fraction=f)) for f in fractions]
    S = ts.steps_per_trajectory
    rows, oof, folds, notes = [], {}, None, list(capped)
    for done, (label, kind, k, cut) in enumerate(specs):
        res = evaluate(prefixes(ts, **cut), seeds=seeds, n_splits=n_splits, profile=profile, top_k=top_k,
                       alphas=alphas, methods=list(methods))
        if folds is None:
            folds = res.folds
        elif not np.array_equal(folds, res.folds):  # pragma: no cover - evaluate draws folds from labels only
            raise AssertionError("outer folds differ between prefix lengths")
        notes += [n for n in res.notes if n not in notes]
        running = int((S > k).sum()) if kind == "steps" else int((np.ceil(k * S - 1e-9) < S).sum())
        for m in res.methods:
            oof[(label, m)] = res.oof_all[m]
            s = res.summary[m]
            row = {"prefix": label, "kind": kind, "k": k, "running": running, "method": m}
            for metric in METRICS:
                row[metric] = s[metric]["mean"]
                row[f"{metric}_std"] = s[metric]["std"]
            row["flagged"] = float(np.mean([_flagged(res.labels, o, false_alarm) for o in res.oof_all[m]]))
            rows.append(row)
        if progress is not None:
            progress(done + 1, len(specs), label)
    curve = pd.DataFrame(rows)
    run_methods = list(dict.fromkeys(curve.method))
    alerts, first = _monitor_view(oof, run_methods, steps, y, S, false_alarm)
    if S.max() > steps[-1]:
        notes.append(f"{int((S > steps[-1]).sum())} runs are longer than {steps[-1]} steps; the live-monitor view "
                     f"covers their first {steps[-1]} steps")
    return EarlyWarningResult(n=len(ts), positive_rate=float(np.mean(y)), seeds=list(res.seeds),
                              n_splits=res.n_splits, false_alarm=float(false_alarm), methods=run_methods,
                              curve=curve, alerts=alerts, first_alert=first, oof=oof, ids=ts.ids, labels=y,
                              steps=S, notes=notes)


def _flagged(y: np.ndarray, conf: np.ndarray, false_alarm: float) -> float:
    t = alert_threshold(conf[y == 1], false_alarm)
    return float(np.mean(conf[y == 0] < t))


def _monitor_view(oof: dict, methods: list, steps: list, y: np.ndarray, S: np.ndarray, false_alarm: float):
    """One threshold per method and repeat over the per-step confidences of each run (see the module doc)."""
    K = len(steps)
    live = np.arange(1, K + 1)[None, :] <= S[:, None]          # [n, K]: step j exists in run i
    alert_rows, first_rows = [], []
    for m in methods:
        C = np.stack([oof[(f"step {k}", m)] for k in steps], axis=-1)   # [repeats, n, K]
        per_rep = []
        for c in C:
            c = np.where(live, c, np.inf)
            t = alert_threshold(c[y == 1].min(axis=1), false_alarm)
            below = c < t
            any_alert = below.any(axis=1)
            first = np.where(any_alert, below.argmax(axis=1) + 1, 0)
            fail = (y == 0)
            hit = fail & any_alert
            by_step = [float(np.mean(hit[fail] & (first[fail] <= k))) for k in steps]
            length = np.minimum(S, K)
            per_rep.append((t, float(np.mean(any_alert[fail])), by_step,
                            float(np.median(first[hit])) if hit.any() else np.nan,
                            float(np.median(length[hit])) if hit.any() else np.nan,
                            float(np.median(first[hit] / length[hit])) if hit.any() else np.nan))
        by_step = np.mean([r[2] for r in per_rep], axis=0)
        alert_rows += [{"method": m, "step": k, "flagged_by_step": float(v)} for k, v in zip(steps, by_step)]
        first_rows.append({"method": m, "threshold": float(np.mean([r[0] for r in per_rep])),
                           "flagged": float(np.mean([r[1] for r in per_rep])),
                           "median_first_alert": float(np.nanmean([r[3] for r in per_rep])),
                           "median_length": float(np.nanmean([r[4] for r in per_rep])),
                           "median_ratio": float(np.nanmean([r[5] for r in per_rep]))})
    return pd.DataFrame(alert_rows), pd.DataFrame(first_rows)
