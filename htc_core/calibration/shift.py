"""Applicability check: how far scored runs lie from the data a model was trained on.

Every fitted model stores, in its training summary, the mean and standard deviation of each feature on its
training runs (``training.feature_stats``; :func:`feature_stats`). :func:`shift_check` compares the scored
runs with them: the standardized mean shift of feature j is

    d_j = (mean of the scored runs - training mean) / training std

A feature *moved* when ``|d_j| >= SHIFT_THRESHOLD`` (2.0) and the shift is beyond the sampling noise of the
scored mean (``|d_j| >= 3 / sqrt(n)``, which only matters below ~3 runs). The verdict counts only the features
the model uses (non-zero weight; all features for a model without weights), because only they move the score.

Why 2 training standard deviations: a group that makes up a fraction f of the training data can lie at most
``sqrt((1 - f) / f)`` training standard deviations from the training mean (the between-group variance is part
of the total), so any group of at least 20% of the training runs stays under 2, and the repository's own task
families (each 19% of the shipped GAC's runs) are not flagged; the UALA HotpotQA runs scored by a GAC trained on
``sample_runs/`` alone move by far more (see tests/test_shift.py and docs/gac.md). It is a screening rule, not a
test: a shifted mean does not prove the calibration is off, and an unshifted one does not prove it is right.

A General Agent Calibrator is checked per sub-model, on the runs each one scores. A leaf module (no import of
the calibrators): models are used through their attributes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SHIFT_THRESHOLD", "ShiftReport", "ShiftAccumulator", "feature_stats", "shift_check",
           "shift_check_matrix"]

SHIFT_THRESHOLD = 2.0
#: how many labeled runs the warning suggests (the issue's aim: adapting with 50 labels)
SUGGESTED_LABELS = 50
#: ``limit``: the threshold a row's shift is held to (the threshold, raised to 3 / sqrt(n) for n scored runs)
COLUMNS = ("part", "feature", "used", "train_mean", "train_std", "scored_mean", "shift", "limit", "moved")


def feature_stats(X: np.ndarray) -> dict:
    """Per-feature mean and standard deviation (ddof 0) of the training matrix, for the model file.

    Parameters
    ----------
    X : array-like of shape (n_runs, n_features)
        The training features.

    Returns
    -------
    dict
        ``{"mean": [...], "std": [...]}``, plain floats (the model file's ``training.feature_stats``).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.shift import feature_stats
    >>> feature_stats(np.array([[1.0, 2.0], [3.0, 2.0]]))
    {'mean': [2.0, 2.0], 'std': [1.0, 0.0]}
    """
    X = np.asarray(X, dtype=np.float64)
    return {"mean": [float(v) for v in X.mean(axis=0)], "std": [float(v) for v in X.std(axis=0)]}


def _parts(model) -> dict:
    """part name -> sub-model: one part for an HTC model, one per sub-model of a GAC."""
    subs = getattr(model, "models", None)
    if isinstance(subs, dict):
        return {k: m for k, m in subs.items() if m is not None}
    return {"model": model}


def _train_stats(m) -> tuple[np.ndarray, np.ndarray, str] | None:
    """(mean, std, where from) of a sub-model's training features, or None when the file has none."""
    d = len(m.feature_names_in_)
    fs = (getattr(m, "training_summary_", None) or {}).get("feature_stats")
    if isinstance(fs, dict):
        try:
            mean, std = np.asarray(fs["mean"], dtype=np.float64), np.asarray(fs["std"], dtype=np.float64)
        except (KeyError, TypeError, ValueError):
            mean = std = np.empty(0)
        if mean.shape == (d,) and std.shape == (d,) and np.isfinite(mean).all() and np.isfinite(std).all():
            return mean, std, "training.feature_stats"
    if getattr(m, "adaptation_", None) is None and hasattr(m, "mean_") and hasattr(m, "scale_"):
        # files written before feature_stats: a plain HTC model's scaler is its training mean and std
        return np.asarray(m.mean_, float), np.where(np.asarray(m.scale_) == 1.0, 0.0, m.scale_), "scaler"
    return None


def _used(m) -> np.ndarray:
    coef = getattr(m, "coef_", None)
    d = len(m.feature_names_in_)
    if coef is not None and np.asarray(coef).reshape(-1).shape == (d,):
        return np.asarray(coef).reshape(-1) != 0
    return np.ones(d, dtype=bool)


def _columns(m, fm) -> np.ndarray:
    """The feature matrix's columns in the model's order (found by name)."""
    names = [str(n) for n in m.feature_names_in_]
    if hasattr(fm, "names"):
        index = {n: j for j, n in enumerate(fm.names)}
        missing = [n for n in names if n not in index]
        if missing:
            raise ValueError(f"the features lack {len(missing)} the model uses: {missing[:5]}")
        return np.asarray(fm.values, dtype=np.float64)[:, [index[n] for n in names]]
    return np.asarray(fm, dtype=np.float64)


@dataclass
class ShiftReport:
    """Standardized mean shift of each feature, scored runs vs training data (see the module docstring).

    Made by :func:`shift_check` or :meth:`ShiftAccumulator.report`.

    Parameters
    ----------
    model : str
        The model's name in the messages.
    n_runs : int
        Scored runs.
    threshold : float
        The shift (in training standard deviations) from which a used feature counts as moved.
    rows : list of tuple
        One tuple per (part, feature), in the order of ``COLUMNS``: part, feature, used, train_mean,
        train_std, scored_mean, shift, limit, moved (the same as a table: :attr:`frame`).
    n_by_part : dict, default={}
        Part (sub-model) -> runs it scored.
    notes : list of str, default=[]
        Missing statistics and other caveats.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
    >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
    >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
    >>> report.verdict, report.moved_features()
    ('outside the training data', ['first_attention_entropy'])
    """

    model: str
    n_runs: int
    threshold: float
    rows: list                                # one tuple per (part, feature); COLUMNS (plain values: no pandas)
    n_by_part: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def frame(self) -> "pd.DataFrame":
        """The rows as a table (a new DataFrame at each access).

        Returns
        -------
        DataFrame
            One row per (part, feature), columns ``COLUMNS``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> htc.shift_check(model, htc.extract(ts)).frame.columns[:3].tolist()
        ['part', 'feature', 'used']
        """
        import pandas as pd

        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def _worst_rows(self, k: int) -> list[int]:
        """Positions in ``rows`` of the ``k`` used features that moved most (the order of :meth:`worst`)."""
        used = [i for i, r in enumerate(self.rows) if r[2]]

        def key(i):          # moved first, then the largest |shift|, a NaN shift last; ties keep their order
            s = abs(self.rows[i][6])
            return (not self.rows[i][8], math.isnan(s), 0.0 if math.isnan(s) else -s)

        return sorted(used, key=key)[:max(int(k), 0)]

    @property
    def known(self) -> bool:
        """False when the model file holds no training statistics (nothing to compare with).

        Returns
        -------
        bool
            Whether the check could be made.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> report.known
        True
        """
        return len(self.rows) > 0

    @property
    def shifted(self) -> bool:
        """Whether any used feature moved (False when not :attr:`known`).

        Returns
        -------
        bool
            True: the runs lie outside the training data.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> report.shifted
        True
        """
        return any(bool(r[8]) for r in self.rows) if self.known else False

    @property
    def verdict(self) -> str:
        """The verdict in words.

        Returns
        -------
        str
            "within the training data", "outside the training data" or "unknown".

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> report.verdict
        'outside the training data'
        """
        if not self.known:
            return "unknown"
        return "outside the training data" if self.shifted else "within the training data"

    @property
    def max_shift(self) -> float:
        """The largest absolute standardized mean shift of a used feature.

        Returns
        -------
        float
            In training standard deviations (NaN when no feature is used or known).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> round(report.max_shift, 2)
        2.77
        """
        shifts = [abs(r[6]) for r in self.rows if r[2] and not math.isnan(r[6])]     # NaN skipped, as pandas' max
        return float(max(shifts)) if shifts else float("nan")

    def worst(self, k: int = 3) -> pd.DataFrame:
        """The used features that moved most: moved ones first, then by the size of the shift.

        Parameters
        ----------
        k : int, default=3
            How many.

        Returns
        -------
        DataFrame
            Rows of ``frame``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> report.worst(2)[["feature", "shift", "moved"]].round(2)
                             feature  shift  moved
        19   first_attention_entropy   2.77   True
        14  step_progression_entropy   1.31  False
        """
        return self.frame.iloc[self._worst_rows(k)]

    def moved_features(self) -> list[str]:
        """The used features that moved, largest shift first.

        Returns
        -------
        list of str
            Feature names (each once, also for a GAC's two parts).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> report.moved_features()
        ['first_attention_entropy']
        """
        return list(dict.fromkeys(self.rows[i][1] for i in self._worst_rows(len(self.rows)) if self.rows[i][8]))

    def message(self, prior: str = "gac", n_labels: int = SUGGESTED_LABELS) -> str:
        """One line for a user: the verdict and, when shifted, what moved and what to do.

        Parameters
        ----------
        prior : str, default="gac"
            The prior the advice adapts (``htc fit --prior``).
        n_labels : int, default=50
            How many runs the advice says to label.

        Returns
        -------
        str
            The message.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> print(report.message(n_labels=30))
        these 8 runs are outside the data units-model was trained on (first_attention_entropy +2.8 sd: ...
        Label 30 runs and run `htc fit RUNS --prior gac --out model.json` to adapt it
        """
        if not self.known:
            return f"{self.model}: no training statistics in the model file; the applicability check is skipped"
        if not self.shifted:
            limits = [r[7] for r in self.rows if r[2]]
            limit = float(min(limits)) if limits else self.threshold
            why = "" if limit == self.threshold else (f"; the threshold {self.threshold:g} is raised to "
                                                      "3/sqrt(runs) for so few runs")
            return (f"{self.n_runs} runs within the data {self.model} was trained on (largest standardized mean "
                    f"shift of a used feature {self.max_shift:.2f} < {limit:.3g}{why})")
        w = [self.rows[i] for i in self._worst_rows(3)]
        moved = ", ".join(f"{r[1]} {r[6]:+.1f} sd" for r in w if r[8])
        return (f"these {self.n_runs} runs are outside the data {self.model} was trained on ({moved}: mean shift "
                f"in training standard deviations, threshold {self.threshold:g}); its confidences may be off. "
                f"Label {n_labels} runs and run `htc fit RUNS --prior {prior} --out model.json` to adapt it")

    def to_frame(self) -> pd.DataFrame:
        """Every feature's shift (a copy of ``frame``).

        Returns
        -------
        DataFrame
            One row per (part, feature).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> report.to_frame().shape
        (48, 9)
        """
        return self.frame

    def to_dict(self) -> dict:
        """The report as a JSON object (infinite shifts as None).

        Returns
        -------
        dict
            model, n_runs, threshold, verdict, shifted, max_shift, moved_features, n_by_part, features (one
            dict per row of ``frame``) and notes.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
        >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
        >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
        >>> d = report.to_dict()
        >>> d["verdict"], d["n_by_part"], len(d["features"])
        ('outside the training data', {'model': 8}, 48)
        """
        return {"model": self.model, "n_runs": int(self.n_runs), "threshold": self.threshold,
                "verdict": self.verdict, "shifted": self.shifted,
                "max_shift": self.max_shift if math.isfinite(self.max_shift) else None,
                "moved_features": self.moved_features(), "n_by_part": dict(self.n_by_part),
                "features": [{k: _json_value(v) for k, v in zip(COLUMNS, r)} for r in self.rows],
                "notes": list(self.notes)}


def _json_value(v):
    """A frame cell for JSON: numpy scalars as Python ones, an infinite shift (training std 0) as None."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and not math.isfinite(v) else v


class ShiftAccumulator:
    """Running feature sums of scored runs (chunk by chunk, as ``htc score`` reads), per sub-model.

    Parameters
    ----------
    model : HTCCalibrator, HTCGAM or GeneralCalibrator
        A fitted model (its training summary holds the feature statistics).
    name : str, optional
        The model's name in the messages (default its ``name`` or class name).
    threshold : float, default=2.0
        The shift (in training standard deviations) from which a feature counts as moved.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.shift import ShiftAccumulator
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> fm = htc.extract(ts)
    >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(fm, ts.labels)
    >>> acc = ShiftAccumulator(model).update(fm.take(range(100))).update(fm.take(range(100, 250)))
    >>> report = acc.report()
    >>> report.n_runs, report.verdict, bool(report.max_shift < 1e-9)   # the training runs themselves
    (250, 'within the training data', True)
    """

    def __init__(self, model, *, name: str | None = None, threshold: float = SHIFT_THRESHOLD):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold > 0:
            raise ValueError(f"threshold must be a positive number, got {threshold!r}")
        self.model, self.threshold = model, float(threshold)
        self.name = name or str(getattr(model, "name", type(model).__name__))
        self.parts = _parts(model)
        self._n = {p: 0 for p in self.parts}
        self._sum = {p: np.zeros(len(m.feature_names_in_)) for p, m in self.parts.items()}

    def update(self, data) -> "ShiftAccumulator":
        """Add scored runs.

        Parameters
        ----------
        data : TraceSet, FeatureMatrix or array
            A TraceSet (any model; a GAC routes its runs by kind), or a FeatureMatrix / array of an HTC
            model's own features (columns found by name for a FeatureMatrix).

        Returns
        -------
        ShiftAccumulator
            ``self``, for chaining.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.shift import ShiftAccumulator
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> acc = ShiftAccumulator(htc.load_model("gac")).update(ts)
        >>> acc.report().n_by_part
        {'with_alternatives': 250}
        """
        from ..features import extract
        from ..traces import TraceSet

        if not isinstance(data, TraceSet):
            if len(self.parts) != 1:
                raise ValueError("data must be a TraceSet for a General Agent Calibrator (it routes runs by kind)")
            (p, m), = self.parts.items()
            self._add(p, _columns(m, data))
            return self
        kinds = self.model.kinds(data) if hasattr(self.model, "models") else None
        for p, m in self.parts.items():
            rows = np.arange(len(data)) if kinds is None else np.flatnonzero(kinds == p)
            if len(rows):
                sub = data if len(rows) == len(data) else data.take(rows)
                self._add(p, _columns(m, extract(sub, profile=m.profile_, top_k=m.top_k_)))
        return self

    def _add(self, part: str, X: np.ndarray) -> None:
        self._n[part] += X.shape[0]
        self._sum[part] += X.sum(axis=0)

    def report(self) -> ShiftReport:
        """The shift report of every run added so far.

        Returns
        -------
        ShiftReport
            One row per (part, feature) of the parts that scored runs.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.shift import ShiftAccumulator
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> ShiftAccumulator(htc.load_model("gac"), name="gac").update(ts).report().verdict
        'within the training data'
        """
        rows, notes = [], []
        for p, m in self.parts.items():
            n = self._n[p]
            stats = _train_stats(m)
            if n == 0:
                continue
            if stats is None:
                notes.append(f"{p}: the model file holds no training statistics")
                continue
            mean, std, source = stats
            if source == "scaler":
                notes.append(f"{p}: training statistics taken from the scaler (file written before feature_stats)")
            scored = self._sum[p] / n
            rows += _part_rows(p, m, mean, std, scored, n, self.threshold, notes)
        return ShiftReport(model=self.name, n_runs=int(sum(self._n.values())), threshold=self.threshold,
                           rows=rows,
                           n_by_part={p: int(n) for p, n in self._n.items() if n}, notes=notes)


def shift_check_matrix(model, X) -> float:
    """The largest absolute standardized mean shift of a used feature of one HTC model on a feature matrix.

    Parameters
    ----------
    model : HTCCalibrator
        A fitted HTC model.
    X : FeatureMatrix or array of shape (n_runs, n_features)
        The runs' features (an array: the model's columns, in its order).

    Returns
    -------
    float
        The shift in training standard deviations; 0 when the model holds no training statistics.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit(htc.extract(ts), ts.labels)
    >>> lists, _ = htc.load("sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl")              # 8 runs of another model on another task
    >>> report = htc.shift_check(model, htc.extract(lists), name="units-model")
    >>> from htc_core.calibration.shift import shift_check_matrix
    >>> round(shift_check_matrix(model, htc.extract(lists)), 2)
    2.77
    """
    rep = ShiftAccumulator(model).update(X).report()
    return 0.0 if not rep.known or np.isnan(rep.max_shift) else float(rep.max_shift)


def _part_rows(part: str, m, mean, std, scored, n: int, threshold: float, notes: list) -> list[tuple]:
    """One row per feature of sub-model ``m`` (COLUMNS). The limit is the threshold raised to the sampling noise
    of ``n`` scored runs (3 / sqrt(n)). A used feature whose training std is 0 (constant in training, or a
    tampered file) is compared exactly: any other scored mean is an infinite shift, and a note says so."""
    used = _used(m)
    ok = std > 1e-12 * np.maximum(1.0, np.abs(mean))
    limit = max(threshold, 3.0 / math.sqrt(n))
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(ok, (scored - mean) / np.where(ok, std, 1.0), 0.0)
    differs = ~ok & ~np.isclose(scored, mean, rtol=1e-9, atol=1e-12)
    d = np.where(differs, np.copysign(np.inf, scored - mean), d)
    constant = [str(f) for f, u, c in zip(m.feature_names_in_, used, ~ok) if u and c]
    if constant:
        notes.append(f"{part}: training std 0 for {len(constant)} used feature(s) ({', '.join(constant[:5])}): "
                     "compared exactly, any other value is a shift")
    moved = used & (np.abs(d) >= limit)
    return [(part, str(f), bool(used[j]), float(mean[j]), float(std[j]), float(scored[j]), float(d[j]), limit,
             bool(moved[j])) for j, f in enumerate(m.feature_names_in_)]


def shift_check(model, data, *, name: str | None = None, threshold: float = SHIFT_THRESHOLD) -> ShiftReport:
    """How far runs lie from a model's training data (standardized mean shift of each feature).

    Parameters
    ----------
    model : HTCCalibrator, HTCGAM or GeneralCalibrator
        A fitted model (its training summary holds the feature statistics).
    data : TraceSet or FeatureMatrix
        The runs (a FeatureMatrix for an HTC model).
    name : str, optional
        The model's name in the messages.
    threshold : float, default=2.0
        The shift (in training standard deviations) above which a feature counts as moved.

    Returns
    -------
    ShiftReport
        ``shifted``, ``verdict``, ``moved_features()``, ``message()``, ``to_frame()``.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> report = htc.shift_check(htc.load_model("gac"), ts)
    >>> report.shifted, report.verdict
    (False, 'within the training data')
    """
    return ShiftAccumulator(model, name=name, threshold=threshold).update(data).report()
