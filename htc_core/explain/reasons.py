"""Why one trajectory got its confidence: contributions to the logit, reasons in words, its place in its group.

- :func:`explain_trajectory`: per-feature contributions to the logit (weight x
  standardized value, summing with the intercept to the model's logit), the same
  contributions summed over distinct signals (exact copies and correlated features
  explained as one, :mod:`.signals`), named for what they measure (:mod:`.measures`),
  and plain-language reasons built on those signals: where the lead feature's value stands
  among the reference runs (the successful runs of its dataset; the direction word and the
  percentile from the same value against the same runs), in the unit the words name, and
  what the model reads from it, in words that always follow the contribution's sign.
- :func:`format_confidence`: a probability with enough digits near 0 and 1.
- :func:`group_position`: the trajectory's confidence among the confidences of
  its group (e.g. its dataset).
- :func:`percentile_of`, :func:`describe_position`: the comparisons in numbers and words.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..bidi import isolate
from ..features import FEATURE_NAMES, REGISTRY
from .inputs import check_matrix, group_names
from .measures import format_apart, format_measure, measure_of, name_of
from .signals import DEFAULT_CORRELATION, Signal, signal_groups

__all__ = ["TrajectoryExplanation", "explain_trajectory", "percentile_of", "describe_position", "compare_with",
           "format_confidence", "GroupPosition", "group_position"]

# a group's successful runs are the reference when it has at least this many (else all successful runs)
MIN_GROUP_REFERENCE = 5


def percentile_of(value: float, reference: np.ndarray) -> float:
    """Percent of ``reference`` below ``value``, ties counting one half.

    Parameters
    ----------
    value : float
        The value placed.
    reference : array-like
        The values it is compared with; non-finite ones are left out.

    Returns
    -------
    float
        In [0, 100]; NaN for an empty reference or a non-finite value.

    Examples
    --------
    >>> from htc_core.explain.reasons import percentile_of
    >>> percentile_of(2.0, [1.0, 2.0, 3.0, 4.0])
    37.5
    >>> percentile_of(2.0, [])
    nan
    """
    ref = np.asarray(reference, dtype=np.float64)
    ref = ref[np.isfinite(ref)]
    if ref.size == 0 or not np.isfinite(value):
        return float("nan")
    below = np.count_nonzero(ref < value)
    equal = np.count_nonzero(ref == value)
    return float(100.0 * (below + 0.5 * equal) / ref.size)


def describe_position(pct: float) -> str:
    """A percentile in words: below 5 'far below', below 25 'below', above 95 'far above', above 75 'above'.

    Parameters
    ----------
    pct : float
        A percentile in [0, 100] (as :func:`percentile_of` gives it).

    Returns
    -------
    str
        'far below', 'below', 'close to', 'above' or 'far above'; 'not comparable with' for NaN.

    Examples
    --------
    >>> from htc_core.explain.reasons import describe_position
    >>> [describe_position(p) for p in (1, 10, 50, 80, 99)]
    ['far below', 'below', 'close to', 'above', 'far above']
    """
    if not np.isfinite(pct):
        return "not comparable with"
    if pct < 5:
        return "far below"
    if pct < 25:
        return "below"
    if pct > 95:
        return "far above"
    if pct > 75:
        return "above"
    return "close to"


def compare_with(pct: float, n_ref: int, ref_name: str) -> str:
    """A percentile against a reference in words, never past 'all'.

    Percentages are rounded down, so the words never claim more runs than there are.

    Parameters
    ----------
    pct : float
        The percentile of the value in the reference (:func:`percentile_of`).
    n_ref : int
        The reference's size.
    ref_name : str
        What the reference is ("successful runs of facts").

    Returns
    -------
    str
        E.g. 'lower than 93% of 140 successful runs', 'higher than all 140 ...', 'at the median of ...'.

    Examples
    --------
    >>> from htc_core.explain.reasons import compare_with
    >>> compare_with(6.5, 140, "successful runs")
    'lower than 93% of 140 successful runs'
    >>> compare_with(100.0, 140, "successful runs")
    'higher than all 140 successful runs'
    >>> compare_with(float("nan"), 0, "successful runs")
    'not comparable with successful runs (none labeled)'
    """
    if not np.isfinite(pct):
        return f"not comparable with {ref_name} (none labeled)"
    if pct <= 0.0:
        return f"lower than all {n_ref} {ref_name}"
    if pct >= 100.0:
        return f"higher than all {n_ref} {ref_name}"
    if pct < 50.0:
        return f"lower than {max(1, int(100.0 - pct))}% of {n_ref} {ref_name}"
    if pct > 50.0:
        return f"higher than {max(1, int(pct))}% of {n_ref} {ref_name}"
    return f"at the median of {n_ref} {ref_name}"


def format_confidence(p: float) -> str:
    """A probability as text: two decimals in the middle, three near the ends, never a bare 0.00 or 1.00.

    Parameters
    ----------
    p : float
        A probability.

    Returns
    -------
    str
        E.g. '0.42', '0.004', '< 0.001', '> 0.999'; 'n/a' for NaN.

    Examples
    --------
    >>> from htc_core.explain.reasons import format_confidence
    >>> [format_confidence(p) for p in (0.4213, 0.0042, 0.0004, 0.9996, float("nan"))]
    ['0.42', '0.004', '< 0.001', '> 0.999', 'n/a']
    """
    if not np.isfinite(p):
        return "n/a"
    if p < 0.001:
        return "< 0.001"
    if p > 0.999:
        return "> 0.999"
    return f"{p:.3f}" if (p < 0.01 or p > 0.99) else f"{p:.2f}"


@dataclass
class TrajectoryExplanation:
    """Contributions of every feature to one trajectory's logit, and the strongest reasons in words.

    Made by :func:`explain_trajectory`.

    ``table`` (all features, the paper's names) columns: feature, code, family, display_name, formula, value,
    z (standardized value), weight, contribution (= weight x z), success_median, success_percentile (percent
    of successful reference runs below this value), position ('far below' ... 'far above'), signal (the
    feature that names its distinct signal). Sorted by ``|contribution|``, largest first.
    ``intercept + table.contribution.sum() == logit``.

    ``signals``: one row per distinct signal (exact copies and correlated features merged): signal (the lead
    feature), name (the lead's name, as every page names it: :func:`~htc_core.explain.measures.name_of`),
    measures (what the lead measures, in plain words: :func:`~htc_core.explain.measures.measure_of`), display_name
    (the lead's), kind ('single' / 'duplicate' / 'correlated'),
    members, n_members, value (the lead's, as stored), shown_value (in the unit the words name: "4 steps"),
    direction ('higher' / 'lower' / 'typical' / 'unknown': the lead's percentile among the reference runs above, below
    or within :data:`TYPICAL_BAND`), success_median, success_percentile (the lead's, among the reference runs),
    comparison (in words), contribution (sum over members), reason (the sentence). Sorted by ``|contribution|``.
    ``intercept + signals.contribution.sum() == logit`` as well; ``reasons`` are the strongest rows' sentences.

    The reference runs (``reference``): the successful runs of the run's group when it has at least 5, else all
    successful runs, else (none labeled successful) all runs; a reason's direction word and percentile both come
    from the lead feature's own value among them.

    Parameters
    ----------
    index : int
        The row explained.
    id : str
        Its run's id (the row number without ids).
    variant : str
        The model's variant ("full", "reduced", "gam", ...).
    intercept : float
        The model's intercept (times ``cap_factor``).
    logit : float
        The run's logit: ``intercept`` plus every contribution.
    confidence : float
        The calibrated confidence, ``1 / (1 + exp(-logit))``.
    table : pandas.DataFrame
        One row per feature (columns above).
    reasons : list of str
        The strongest reasons in words, strongest first.
    n_reference : int
        The number of reference runs compared with.
    reference : str
        What they are ("successful runs of facts", "successful runs", or "runs" when none is labeled successful).
    signals : pandas.DataFrame or None, default None
        One row per distinct signal (columns above).
    cap_factor : float, default 1.0
        The model's soft logit bound (``HTCCalibrator(max_logit=...)``) as a factor: the intercept and every
        contribution here are the linear model's times this, so that they add up to the logit (1: unbounded).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.explain.reasons import explain_trajectory
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
    >>> fm = extract(ts)
    >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    >>> why = explain_trajectory(model, fm, 3, labels=ts.labels, ids=ts.ids, n_reasons=1)
    >>> why.id, round(why.confidence, 3), why.reference, why.n_reference
    ('facts-0003-Gemma3-270M-greedy', 0.877, 'successful runs', 3)
    >>> bool(abs(why.intercept + why.table["contribution"].sum() - why.logit) < 1e-9)
    True
    >>> why.signals[["n_members", "direction"]].head(2)
       n_members direction
    0         23    higher
    1          8    higher
    """

    index: int
    id: str
    variant: str
    intercept: float
    logit: float
    confidence: float
    table: pd.DataFrame
    reasons: list[str]
    n_reference: int
    reference: str
    signals: pd.DataFrame | None = None
    # the model's soft logit bound (``HTCCalibrator(max_logit=...)``) as a factor: the intercept and every
    # contribution here are the linear model's times this, so that they add up to the logit (1: unbounded)
    cap_factor: float = 1.0

    @property
    def linear_score(self) -> float:
        """The model's linear score before its soft logit bound (the logit itself when unbounded).

        Returns
        -------
        float
            ``logit / cap_factor``.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.features import extract
        >>> from htc_core.calibration.calibrators import HTCCalibrator
        >>> from htc_core.explain.reasons import explain_trajectory
        >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
        >>> fm = extract(ts)
        >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
        >>> why = explain_trajectory(model, fm, 3, labels=ts.labels, ids=ts.ids, n_reasons=1)
        >>> round(why.logit, 3), round(why.linear_score, 3)            # the model's default max_logit=10
        (1.967, 1.993)
        """
        return self.logit / self.cap_factor if self.cap_factor else self.logit

    @property
    def bounded(self) -> bool:
        """Whether the soft logit bound visibly changed this run's logit (terms scaled by less than 0.95).

        Returns
        -------
        bool
            ``cap_factor < 0.95``.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.features import extract
        >>> from htc_core.calibration.calibrators import HTCCalibrator
        >>> from htc_core.explain.reasons import explain_trajectory
        >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
        >>> fm = extract(ts)
        >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
        >>> why = explain_trajectory(model, fm, 3, labels=ts.labels, ids=ts.ids, n_reasons=1)
        >>> round(why.cap_factor, 3), why.bounded
        (0.987, False)
        """
        return self.cap_factor < 0.95

    @property
    def summary(self) -> str:
        """The explanation in one paragraph: the confidence, the logit, the variant and the strongest reasons.

        Returns
        -------
        str
            Plain text.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.features import extract
        >>> from htc_core.calibration.calibrators import HTCCalibrator
        >>> from htc_core.explain.reasons import explain_trajectory
        >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
        >>> fm = extract(ts)
        >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
        >>> why = explain_trajectory(model, fm, 3, labels=ts.labels, ids=ts.ids, n_reasons=1)
        >>> print(why.summary)
        Calibrated confidence 0.88 (logit +1.97, HTC-Full). Strongest reasons: Token gradient, max (one
        signal of 23 correlated features) is 0.521, higher than in the typical successful run (higher than 83%
        of 3 successful runs); the model reads higher values as a sign of success, and 0.521 is above the
        average of the runs it was fitted on (0.392), so this raises the confidence (logit +1.64).
        """
        head = (f"Calibrated confidence {format_confidence(self.confidence)} (logit {self.logit:+.2f}, "
                f"HTC-{self.variant.capitalize()}).")
        if not self.reasons:
            return head + " No feature moves this trajectory's logit away from the intercept."
        return head + " Strongest reasons: " + " ".join(self.reasons)


def reference_name(group=None, *, successful: bool = True) -> str:
    """The name of the runs a reason compares with: "successful runs of <group>", "successful runs" or "runs".

    Parameters
    ----------
    group : str or None, default None
        The group (dataset) whose successful runs are the reference; untrusted, so bidi-isolated.
    successful : bool, default True
        False: the reference is every run (no successful run to compare with).

    Returns
    -------
    str
        The reference's name, plural.

    Examples
    --------
    >>> from htc_core.explain.reasons import reference_name
    >>> reference_name(), reference_name(successful=False)
    ('successful runs', 'runs')
    """
    if not successful:
        return "runs"
    return "successful runs" if group is None else f"successful runs of {isolate(group)}"


def reference_mask(y: np.ndarray, groups, index: int) -> tuple[np.ndarray, str]:
    """Rows of the runs row ``index`` is compared with, and their name: the successful runs of its group when it
    has at least :data:`MIN_GROUP_REFERENCE`, else all successful runs, else (none labeled successful) all runs."""
    succ = y == 1
    if groups is not None:
        g = np.asarray(groups, dtype=object)
        same = succ & (g == g[index])
        if same.sum() >= MIN_GROUP_REFERENCE:
            return same, reference_name(g[index])
    if succ.any():
        return succ, reference_name()
    return np.ones(len(y), dtype=bool), reference_name(successful=False)


def _linear_model(model):
    """The linear model behind ``model`` (HTC-GAM that fell back to HTC-Reduced: its ``linear_``), or None for a
    model without weights (HTC-GAM's shape functions)."""
    if getattr(model, "kind_", None) == "linear" and getattr(model, "linear_", None) is not None:
        model = model.linear_
    return model if hasattr(model, "coef_") else None


def _linear_terms(model, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(standardized value, weight) per model feature; NaN for a model without weights (HTC-GAM's shape
    functions: there the contribution is the shape function's value at the run)."""
    lin = _linear_model(model)
    if lin is None:
        nan = np.full(len(model.feature_names_in_), np.nan)
        return nan, nan
    return (row - lin.mean_) / lin.scale_, lin.coef_[0]


def _reference_places(values: np.ndarray, ref: np.ndarray) -> tuple[list[float], np.ndarray]:
    """Per column: :func:`percentile_of` ``values[j]`` in ``ref[:, j]``, and the median of ``ref[:, j]`` (NaN for
    no reference runs), for all columns at once."""
    if not len(ref):
        return [float("nan")] * len(values), np.full(len(values), np.nan)
    finite = np.isfinite(ref)
    below = np.count_nonzero(finite & (ref < values), axis=0).tolist()
    equal = np.count_nonzero(finite & (ref == values), axis=0).tolist()
    size = np.count_nonzero(finite, axis=0).tolist()
    pct = [float(100.0 * (b + 0.5 * e) / m) if m and np.isfinite(v) else float("nan")
           for v, b, e, m in zip(values.tolist(), below, equal, size)]
    return pct, np.median(ref, axis=0)


def _contribution_table(model, Xv: np.ndarray, index: int, contrib: np.ndarray, ref: np.ndarray) -> pd.DataFrame:
    """One row per model feature of row ``index``: value, z, weight, contribution, its place in ``ref``."""
    z, w = _linear_terms(model, Xv[index][_model_columns(model, Xv)])
    names = list(model.feature_names_in_)
    cols = [FEATURE_NAMES.index(nm) if nm in FEATURE_NAMES else j for j, nm in enumerate(names)]
    pcts, medians = _reference_places(Xv[index, cols], ref[:, cols])
    rows = []
    for j, nm in enumerate(names):
        spec = REGISTRY.get(nm)
        rows.append({
            "feature": nm, "code": spec.code if spec else nm, "family": spec.family if spec else "",
            "display_name": spec.display_name if spec else nm, "formula": spec.formula if spec else "",
            "value": float(Xv[index, cols[j]]), "z": float(z[j]), "weight": float(w[j]),
            "contribution": float(contrib[j]), "success_median": float(medians[j]),
            "success_percentile": pcts[j], "position": describe_position(pcts[j]),
        })
    table = pd.DataFrame(rows)
    table = table.reindex(table["contribution"].abs().sort_values(ascending=False, kind="stable").index)
    return table.reset_index(drop=True)


#: "close to the typical run": the lead feature's value lies within this percentile band of the reference runs
#: (their middle half); above it the reason says "higher than in the typical run", below it "lower than in ..."
TYPICAL_BAND = (25.0, 75.0)


def position_of(pct: float) -> str:
    """Where a value stands against the typical run of its reference, from its percentile there.

    Parameters
    ----------
    pct : float
        The value's percentile among the reference runs (:func:`percentile_of`).

    Returns
    -------
    str
        'higher' above :data:`TYPICAL_BAND`, 'lower' below it, 'typical' within it (ends included), 'unknown' for NaN.

    Examples
    --------
    >>> from htc_core.explain.reasons import position_of
    >>> [position_of(p) for p in (10.0, 25.0, 60.0, 75.0, 99.0, float("nan"))]
    ['lower', 'typical', 'typical', 'typical', 'higher', 'unknown']
    """
    if not np.isfinite(pct):
        return "unknown"
    if pct > TYPICAL_BAND[1]:
        return "higher"
    if pct < TYPICAL_BAND[0]:
        return "lower"
    return "typical"


@dataclass(frozen=True)
class ModelReading:
    """How a linear model reads a signal's lead feature at one run: the words of a reason's second half.

    Parameters
    ----------
    weight : float
        The signal's weight along its lead feature: the members' weights (on their standardized values), each
        oriented like the lead (a member that falls as the lead rises counts with its sign flipped), summed.
    offset : float
        The run's lead value minus the mean of the runs the model was fitted on.
    centre : str
        That mean, in the unit the words name, with as many digits as tell it from the value
        (:func:`~htc_core.explain.measures.format_apart`).
    n_members : int, default 1
        The number of features in the signal.
    """

    weight: float
    offset: float
    centre: str
    n_members: int = 1


def _model_words(value: str, reading: ModelReading | None, up: bool) -> str:
    """What the model reads from the signal and why that raises / lowers the confidence. "so" only where it holds:
    the signal's weight along its lead times the lead's offset from the model's centre has the contribution's sign
    (always for a one-feature signal: its contribution is weight x offset / scale); otherwise the run's other
    members pulled the other way, and the words say so."""
    effect = "raises" if up else "lowers"
    if reading is None or not (np.isfinite(reading.weight) and reading.weight != 0):
        return f"this {effect} the confidence"
    reads = "success" if reading.weight > 0 else "failure"
    at = reading.offset == 0 or value == reading.centre          # equal as written: never "below" next to "(1.19)"
    side = "at" if at else ("above" if reading.offset > 0 else "below")
    words = (f"the model reads higher values as a sign of {reads}, and {value} is {side} the average of the runs "
             f"it was fitted on ({reading.centre})")
    if not at and (reading.weight * reading.offset > 0) == up:
        return f"{words}, so this {effect} the confidence"
    others = reading.n_members - 1
    if others == 0:
        return f"{words}: this {effect} the confidence"
    pull = "other correlated feature" if others == 1 else f"{others} other correlated features"
    if at:
        decide = "decides" if others == 1 else "decide"
        return f"{words}: the run's {pull} {decide}, together they {effect[:-1]} the confidence"
    pull = f"{pull} pulls" if others == 1 else f"{pull} pull"
    return f"{words}, but the run's {pull} the other way: together they {effect[:-1]} the confidence"


def one_of(reference: str) -> str:
    """The singular of a reference's name ("successful runs of units" -> "successful run of units")."""
    return reference.replace("runs", "run", 1)


def reason_text(name: str, value: str, pct: float, n_ref: int, reference: str, contribution: float,
                reading: ModelReading | None = None) -> str:
    """One reason in words (shared by :func:`explain_trajectory` and ``explain_runs``).

    The signal's name (what it measures), its lead feature's value in the unit the words name, where that value
    stands among the reference runs (the direction word and the percentile both from the lead's percentile there,
    "close to the typical run" within :data:`TYPICAL_BAND`), and what the model reads from it: "raises" exactly
    when the contribution is positive.

    Parameters
    ----------
    name : str
        The signal's name (:func:`signal_name`).
    value : str
        The lead feature's value, formatted (:func:`~htc_core.explain.measures.format_apart`).
    pct : float
        Its percentile among the reference runs.
    n_ref : int
        The number of reference runs.
    reference : str
        Their name (:func:`reference_name`).
    contribution : float
        The signal's contribution to the logit.
    reading : ModelReading or None, default None
        The linear model's reading of the lead (None: a model without weights; the reason says only the effect).

    Returns
    -------
    str
        One sentence.

    Examples
    --------
    >>> from htc_core.explain.reasons import ModelReading, reason_text
    >>> print(reason_text("Number of steps", "9 steps", 98.0, 220, "successful runs of units", -0.5,
    ...                   ModelReading(weight=-0.4, offset=0.3, centre="6 steps")))
    Number of steps is 9 steps, higher than in the typical successful run of units (higher than 98% of 220
    successful runs of units); the model reads higher values as a sign of failure, and 9 steps is above the
    average of the runs it was fitted on (6 steps), so this lowers the confidence (logit -0.50).
    """
    where = position_of(pct)
    comparison = compare_with(pct, n_ref, reference)
    typical = f"the typical {one_of(reference)}"
    stands = {"higher": f"higher than in {typical}", "lower": f"lower than in {typical}",
              "typical": f"close to {typical}"}.get(where)
    place = f"{stands} ({comparison})" if stands else f"({comparison})"
    return (f"{name} is {value}{', ' if stands else ' '}{place}; {_model_words(value, reading, contribution > 0)} "
            f"(logit {contribution:+.2f}).")


def _signal_table(table: pd.DataFrame, model, signals: list[Signal], ref_name: str, n_ref: int) -> pd.DataFrame:
    """Per-feature rows summed into distinct signals, each named for what its member of largest ``|weight|`` measures
    (:mod:`.measures`), with its reason in words (column ``reason``). Plain arrays indexed by the model's feature
    order (the table's rows are sorted by contribution): one ``.loc`` per member cost most of a run's explanation."""
    names = list(model.feature_names_in_)
    position = {nm: j for j, nm in enumerate(names)}
    at = np.argsort([position[nm] for nm in table["feature"]])          # the table's row of each model feature
    weight, contrib, value = (table[c].to_numpy(dtype=np.float64)[at] for c in ("weight", "contribution", "value"))
    shown, median = table["display_name"].to_numpy(dtype=object)[at], table["success_median"].to_numpy()[at]
    percentile = table["success_percentile"].to_numpy(dtype=np.float64)[at]
    lin = _linear_model(model)
    rows, lead_of = [], {}
    for sig in signals:
        members = list(sig.members)
        size = weight if np.isfinite(weight[members]).all() else contrib
        lj = max(members, key=lambda j: (abs(size[j]), -j))
        lead = names[lj]
        lead_of.update({names[j]: lead for j in members})
        contribution = float(np.nansum(contrib[members]))
        net = sum(sig.sign_of(j) * sig.sign_of(lj) * float(weight[j]) for j in members)
        shown_value, centre = (format_measure(lead, value[lj]), "") if lin is None else \
            format_apart(lead, value[lj], lin.mean_[lj])
        reading = None if lin is None else ModelReading(
            weight=net, offset=float(value[lj] - lin.mean_[lj]), centre=centre, n_members=len(members))
        pct = float(percentile[lj])
        rows.append({
            "signal": lead, "name": signal_name(lead, len(members)), "measures": measure_of(lead),
            "display_name": shown[lj],
            "kind": sig.kind, "members": [shown[j] for j in members if j != lj],
            "n_members": len(members), "value": value[lj], "shown_value": shown_value, "direction": position_of(pct),
            "success_median": median[lj], "success_percentile": pct,
            "comparison": compare_with(pct, n_ref, ref_name), "contribution": contribution,
            "reason": reason_text(signal_name(lead, len(members)), shown_value, pct, n_ref, ref_name, contribution,
                                  reading),
        })
    table["signal"] = [lead_of.get(nm, np.nan) for nm in table["feature"]]
    out = pd.DataFrame(rows)
    out = out.reindex(out["contribution"].abs().sort_values(ascending=False, kind="stable").index)
    return out.reset_index(drop=True)


def signal_name(lead: str, n_members: int) -> str:
    """A signal's name: its lead feature's name (:func:`~htc_core.explain.measures.name_of`, as every page names
    the feature; capitalized), and how many features it merges."""
    what = name_of(lead)
    what = what[:1].upper() + what[1:]
    return what if n_members == 1 else f"{what} (one signal of {n_members} correlated features)"


def _reasons(signals: pd.DataFrame, n_reasons: int, min_abs: float) -> list[str]:
    """The reasons of the strongest signals, at most ``n_reasons``, none below ``min_abs``."""
    reasons = []
    for contribution, reason in zip(signals["contribution"].to_numpy(), signals["reason"].tolist()):
        if len(reasons) >= n_reasons or abs(contribution) < min_abs:
            break
        reasons.append(reason)
    return reasons


def _check_index(index, n: int) -> int:
    """``index`` as an int, checked to be a row of a matrix of ``n`` rows."""
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not (0 <= index < n):
        raise ValueError(f"index must be a row of X (0..{n - 1}), got {index!r}")
    return int(index)


def explain_trajectory(model, X, index: int, *, labels=None, groups=None, ids=None, n_reasons: int = 3,
                       min_abs_contribution: float = 0.05, correlation: float | None = DEFAULT_CORRELATION,
                       signals: list[Signal] | None = None) -> TrajectoryExplanation:
    """The reasons behind one run's calibrated confidence.

    Features are merged into distinct signals on the rows of ``X`` (exact copies, and average-linkage clusters
    of mean ``|r| > correlation``), named for what they measure,
    and each signal's contribution to the logit is compared with a reference of successful runs.

    Parameters
    ----------
    model : HTCCalibrator or HTCGAM
        A fitted model (an HTC-GAM's contributions are its shape functions' values at the run).
    X : FeatureMatrix or array of shape (n_runs, n_features)
        The runs' features.
    index : int
        The row explained.
    labels : array-like, optional
        1 success, 0 failure, NaN unknown: the reference is the successful runs (all runs when none is a success).
    groups : array-like, optional
        E.g. the dataset of every row: the reference is the successful runs of the same group (all successful
        runs when the group has fewer than 5).
    ids : array-like, optional
        The runs' ids.
    n_reasons : int, default=3
        How many reasons.
    min_abs_contribution : float, default=0.05
        Smallest ``|contribution|`` that counts as a reason.
    correlation : float or None, default=0.7
        Merge threshold (None: exact copies only).
    signals : list of Signal, optional
        Precomputed signal groups (:func:`signal_groups`), to reuse them across runs.

    Returns
    -------
    TrajectoryExplanation
        ``confidence``, ``reasons``, ``summary``, ``table``.

    Raises
    ------
    ValueError
        If ``index`` is not a row of ``X`` or ``labels`` has another length.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.explain.reasons import explain_trajectory
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
    >>> fm = extract(ts)
    >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    >>> why = explain_trajectory(model, fm, 3, labels=ts.labels, ids=ts.ids, n_reasons=2)
    >>> bool(abs(why.confidence - model.predict_proba(fm[3])[0, 1]) < 1e-12)
    True
    >>> len(why.table), len(why.reasons)
    (48, 2)
    >>> print(why.reasons[1])
    Token skewness, std (one signal of 8 correlated features) is 1.02, higher than in the typical successful run
    (higher than 83% of 3 successful runs); the model reads higher values as a sign of success, and 1.02 is
    above the average of the runs it was fitted on (0.408), so this raises the confidence (logit +0.65).
    """
    Xv = check_matrix(X)
    n = Xv.shape[0]
    index = _check_index(index, n)
    y = np.full(n, np.nan) if labels is None else np.asarray(labels, dtype=np.float64).reshape(-1)
    if y.shape[0] != n:
        raise ValueError(f"labels must have {n} entries, got {y.shape[0]}")
    ref_mask, ref_name = reference_mask(y, groups, index)
    ref = Xv[ref_mask]
    cap = getattr(model, "cap_factor", None)      # a soft logit bound: every term scaled to add up to the logit
    k = 1.0 if cap is None else float(cap(Xv[index:index + 1])[0])
    contrib = model.contributions(Xv[index:index + 1])[0] * k
    table = _contribution_table(model, Xv, index, contrib, ref)
    cols = _model_columns(model, Xv)
    if signals is None:
        signals = signal_groups(Xv[:, cols], threshold=correlation)
    sig_table = _signal_table(table, model, signals, ref_name, len(ref))
    intercept = float(np.ravel(model.intercept_)[0]) * k
    logit = float(intercept + contrib.sum())
    reasons = _reasons(sig_table, n_reasons, min_abs_contribution)
    tid = str(ids[index]) if ids is not None else str(index)
    return TrajectoryExplanation(index=index, id=tid, variant=str(model.variant), intercept=intercept, logit=logit,
                                 confidence=float(1.0 / (1.0 + np.exp(-logit))), table=table, reasons=reasons,
                                 n_reference=int(len(ref)), reference=ref_name, signals=sig_table, cap_factor=k)


def _model_columns(model, Xv: np.ndarray) -> list[int]:
    """Columns of ``Xv`` in the model's feature order (the paper's order for the 48 named features)."""
    names = list(model.feature_names_in_)
    if Xv.shape[1] == len(FEATURE_NAMES) and all(nm in FEATURE_NAMES for nm in names):
        return [FEATURE_NAMES.index(nm) for nm in names]
    return list(range(len(names)))


@dataclass
class GroupPosition:
    """One trajectory's confidence among the confidences of its group (same model).

    Made by :func:`group_position`.

    Parameters
    ----------
    group : str
        The group's name.
    confidence : numpy.ndarray
        The confidence of every trajectory of the group.
    labels : numpy.ndarray
        Their labels (1, 0, NaN).
    value : float
        This trajectory's confidence.
    percentile : float
        Percent of the group below it (ties count one half).

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.explain.reasons import group_position
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
    >>> fm = extract(ts)
    >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    >>> where = group_position(model, fm, 3, ts.meta["dataset"], labels=ts.labels)
    >>> where.group, round(where.value, 3), where.percentile
    ('facts', 0.877, 93.75)
    """

    group: str
    confidence: np.ndarray
    labels: np.ndarray
    value: float
    percentile: float

    @property
    def n(self) -> int:
        """The number of trajectories in the group.

        Returns
        -------
        int
            ``len(confidence)``.

        Examples
        --------
        >>> from htc_core.formats import load
        >>> from htc_core.features import extract
        >>> from htc_core.calibration.calibrators import HTCCalibrator
        >>> from htc_core.explain.reasons import group_position
        >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
        >>> fm = extract(ts)
        >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
        >>> group_position(model, fm, 3, ts.meta["dataset"]).n
        8
        """
        return int(len(self.confidence))


def group_position(model, X, index: int, groups, *, labels=None) -> GroupPosition:
    """Where row ``index`` of ``X`` stands among the rows of its group under a fitted model.

    Parameters
    ----------
    model : HTCCalibrator
        A fitted calibrator (anything with ``predict_proba``).
    X : FeatureMatrix or array-like of shape (n_runs, n_features)
        The runs' features.
    index : int
        The row placed.
    groups : array-like of shape (n_runs,)
        Each row's group (e.g. its dataset); a missing group is ``"(none)"``.
    labels : array-like of shape (n_runs,) or None, default None
        1 success, 0 failure, NaN unlabeled; kept for the group's rows.

    Returns
    -------
    GroupPosition
        The group's confidences and this row's place among them.

    Raises
    ------
    ValueError
        If ``index`` is not a row of ``X`` or ``groups`` has another length.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.features import extract
    >>> from htc_core.calibration.calibrators import HTCCalibrator
    >>> from htc_core.explain.reasons import group_position
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
    >>> fm = extract(ts)
    >>> model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
    >>> where = group_position(model, fm, 3, ts.meta["dataset"], labels=ts.labels)
    >>> where.n, where.confidence.round(2)
    (8, array([0.11, 0.4 , 0.39, 0.88, 0.09, 0.66, 0.55, 0.32]))
    """
    Xv = check_matrix(X)
    n = Xv.shape[0]
    index = _check_index(index, n)
    g = group_names(groups)
    if len(g) != n:
        raise ValueError(f"groups must have {n} entries, got {len(g)}")
    same = np.flatnonzero(g == g[index])
    conf = model.predict_proba(Xv[same])[:, 1]
    value = float(conf[np.flatnonzero(same == index)[0]])
    y = np.full(n, np.nan) if labels is None else np.asarray(labels, dtype=np.float64).reshape(-1)
    return GroupPosition(group=str(g[index]), confidence=conf, labels=y[same], value=value,
                         percentile=percentile_of(value, conf))
