"""Which training-free signal to trust on a run set, chosen without labels: the ``nearest-family`` set-level step.

The three training-free signals of :mod:`htc_core.calibration.transfer_methods` (sequence probability, minimum
token probability, minus the mean entropy of the alternatives) rank different run sets best: on the project's
SmolLM2 ``arithmetic`` runs the minimum token probability, on the Gemma ``units`` runs the entropy. A user with
unlabeled runs cannot measure which. ``nearest-family`` borrows the answer from the training data:

- each training family (a task run by one model family) is summarized by its *profile*: every signal's mean and
  standard deviation over its runs, in units of the signal's pooled training mean and sd (:func:`profile`);
- and by the signal that ranks its runs best (its AUROC against the training labels);
- a scored run set gets the same profile, over the signals defined on it; the training family nearest to it
  (squared Euclidean distance over those components) lends its best signal, or that family's best signal that is
  *usable* on the set (:func:`~htc_core.calibration.rank_ensemble.usable_columns`: an entropy of runs without top-k
  alternatives is undefined, so it is never chosen there);
- optionally (``max_distance``) no family is near enough, and the default signal (the minimum token probability, the
  per-run GAC's) is kept;
- the chosen signal's score goes through that signal's out-of-family Platt map (fitted on the training runs as
  ``signal-oof`` fits its map: :func:`htc_core.experiments.transfer_maps.fit_nearest_family`).

The step lives in a GAC file's ``transfer.set_level`` entry (JSON; :func:`check_entry` validates it) and acts only
when a set of at least ``min_runs`` runs is scored as a set (``htc score gac RUNS --as-set``); one run is always
scored by the per-run transfer. :func:`choose_signal` returns the choice with its reason, so that the command can
say which signal it used and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .transfer_methods import SIGNALS

__all__ = ["METHOD", "DEFAULT_SIGNAL", "SignalChoice", "profile", "best_signal", "increasing_map",
           "build_entry", "check_entry", "choose_signal", "nearest_family_confidences"]

METHOD = "nearest-family"
# the per-run GAC's signal: kept where nothing better can be told
DEFAULT_SIGNAL = "min_prob"
NAMES = tuple(SIGNALS)          # the columns of signal_matrix: seq_prob, min_prob, neg_entropy


def profile(S, mu, sd) -> np.ndarray:
    """A set's signals in training units: each column's mean and sd on the set, minus ``mu`` and over ``sd``.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_signals)
        The signals' scores (NaN: undefined for that run).
    mu, sd : array-like of shape (n_signals,)
        The pooled training mean and sd of each column.

    Returns
    -------
    ndarray of shape (2 * n_signals,)
        The standardized means, then the sds over the training sds; NaN for a column without finite values.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.signal_choice import profile
    >>> profile([[1.0, np.nan], [3.0, np.nan]], mu=[0.0, 0.0], sd=[2.0, 1.0]).tolist()
    [1.0, nan, 0.5, nan]
    """
    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    mu, sd = np.asarray(mu, dtype=np.float64), np.asarray(sd, dtype=np.float64)
    ok = np.isfinite(S)
    n = ok.sum(axis=0)
    m = np.where(n > 0, np.where(ok, S, 0.0).sum(axis=0) / np.maximum(n, 1), np.nan)
    v = np.where(n > 0, (np.where(ok, S - m, 0.0) ** 2).sum(axis=0) / np.maximum(n, 1), np.nan)
    return np.r_[(m - mu) / sd, np.sqrt(v) / sd]


def best_signal(S, y) -> tuple[int, list]:
    """(the column of ``S`` that ranks the labels ``y`` best, every column's AUROC (NaN where undefined)).

    NaN rows of a column are left out of its AUROC; with no defined AUROC the default signal's column.

    Parameters
    ----------
    S : array-like of shape (n_runs, n_signals)
        One training family's scores.
    y : array-like of shape (n_runs,)
        Its 0/1 labels.

    Returns
    -------
    best : int
    aurocs : list of float

    Examples
    --------
    >>> from htc_core.calibration.signal_choice import best_signal
    >>> best_signal([[0.1, 0.9], [0.2, 0.1], [0.3, 0.8]], [0, 1, 1])
    (0, [1.0, 0.0])
    """
    from .metrics import fast_auroc

    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    y = np.asarray(y, dtype=np.float64)
    aur = []
    for j in range(S.shape[1]):
        ok = np.isfinite(S[:, j])
        two = ok.sum() > 1 and len(set(y[ok].tolist())) == 2
        aur.append(float(fast_auroc(y[ok], S[ok, j])[0]) if two else float("nan"))
    best = int(np.nanargmax(aur)) if np.isfinite(aur).any() else NAMES.index(DEFAULT_SIGNAL)
    return best, aur


def increasing_map(ab, x, y, *, floor: float = 1e-3) -> tuple[float, float]:
    """The Platt map ``ab`` (slope, intercept on the score ``x``) if its slope is positive, else a flat one.

    Every signal is larger = more confident by construction; an out-of-family step whose slope comes out negative
    (the map moves that much between families) would turn the ranking upside down (the entropy's, with SmolLM2
    ``units`` held out: AUROC 0.936 -> 0.05). The flat map has slope ``floor`` and gives the training base rate at
    the mean score, so the ranking stays the signal's.

    Parameters
    ----------
    ab : (float, float)
        Slope and intercept.
    x, y : array-like of shape (n,)
        The training scores (finite) and labels.
    floor : float, default=1e-3
        The flat map's slope.

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> from htc_core.calibration.signal_choice import increasing_map
    >>> increasing_map((0.5, -1.0), [0.0, 1.0], [0, 1]), increasing_map((-0.5, 0.2), [0.0, 2.0], [0, 1])
    ((0.5, -1.0), (0.001, -0.001))
    """
    from .transfer_methods import logit

    if ab[0] > 0:
        return float(ab[0]), float(ab[1])
    return floor, float(logit(np.mean(y))) - floor * float(np.mean(x))


def build_entry(S, y, groups, maps: dict, *, min_runs: int = 50, max_distance: float | None = None,
                default: str = DEFAULT_SIGNAL, min_family_runs: int | None = None) -> dict:
    """The ``nearest-family`` set-level entry of a GAC file, from the training runs and the signals' maps.

    Parameters
    ----------
    S : array-like of shape (n_runs, 3)
        The training runs' signal scores (:func:`~.transfer_methods.signal_matrix`: NaN where undefined).
    y : array-like of shape (n_runs,)
        Their 0/1 labels.
    groups : array-like of shape (n_runs,)
        Each run's family (task x model family).
    maps : dict of str to (float, float)
        Each signal's calibration map (slope, intercept on its score), e.g. its out-of-family Platt map.
    min_runs : int, default=50
        The fewest runs a scored set must hold to be scored as a set.
    max_distance : float or None, default=None
        Keep ``default`` where no training family lies within this distance of the set (None: always choose).
    default : str, default="min_prob"
        The signal kept when nothing else can be chosen.
    min_family_runs : int or None, default=None
        The fewest runs a training family needs to lend its best signal (None: ``min_runs``; a family's best signal
        on 16 runs is mostly noise); where no family has that many, every family.

    Returns
    -------
    dict
        JSON-ready: method, signals, mu, sd, fill, maps, families (name, n, profile, aurocs, best), families_left_out
        (the smaller ones' names), default, min_runs, max_distance, what.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.signal_choice import build_entry
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(200) < 0.5).astype(float)
    >>> S = rng.standard_normal((200, 3)) + np.outer(y, [2.0, 0.0, 0.0])
    >>> e = build_entry(S, y, np.repeat(["a", "b"], 100), {n: (1.0, 0.0) for n in ("seq_prob", "min_prob", "neg_entropy")})
    >>> [f["best"] for f in e["families"]], e["method"]
    (['seq_prob', 'seq_prob'], 'nearest-family')
    """
    S = np.asarray(S, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    groups = np.asarray(groups, dtype=object)
    ok = np.isfinite(S)
    count = ok.sum(axis=0)
    # a signal no training run defines (e.g. the entropy where none lists alternatives): centre 0, scale 1
    mu = np.where(count > 0, np.where(ok, S, 0.0).sum(axis=0) / np.maximum(count, 1), 0.0)
    sd = np.sqrt((np.where(ok, S - mu, 0.0) ** 2).sum(axis=0) / np.maximum(count, 1))
    sd = np.where(sd > 1e-12, sd, 1.0)
    fams, small = [], []
    names = sorted(set(groups.tolist()), key=str)
    least = min_runs if min_family_runs is None else int(min_family_runs)
    if not any(int((groups == f).sum()) >= least for f in names):
        least = 0
    for f in names:
        m = groups == f
        if m.sum() < least:
            small.append(str(f))
            continue
        best, aur = best_signal(S[m], y[m])
        fams.append({"name": str(f), "n": int(m.sum()), "profile": [_num(v) for v in profile(S[m], mu, sd)],
                     "aurocs": [_num(v) for v in aur], "best": NAMES[best]})
    return {"method": METHOD, "signals": list(NAMES), "mu": [float(v) for v in mu], "sd": [float(v) for v in sd],
            "fill": [float(np.median(S[ok[:, j], j])) if count[j] else 0.0 for j in range(S.shape[1])],
            "maps": {n: [float(maps[n][0]), float(maps[n][1])] for n in NAMES}, "families": fams,
            "families_left_out": small,
            "default": default, "min_runs": int(min_runs),
            "max_distance": None if max_distance is None else float(max_distance),
            "what": "a run set of at least min_runs runs: the training-free signal that ranks best the training "
                    "family whose signals' means and sds look most like the set's (among the signals usable on the "
                    "set), through that signal's out-of-family Platt map; chosen leave-one-family-out"}


def _num(v) -> float | None:
    """A float for JSON: None for NaN (JSON has no NaN)."""
    v = float(v)
    return v if math.isfinite(v) else None


def _finite_list(v, n: int, *, nullable: bool = False) -> bool:
    return isinstance(v, list) and len(v) == n and all(
        (x is None and nullable) or (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))
        for x in v)


def check_entry(e) -> dict:
    """A ``nearest-family`` set-level entry, checked (what :func:`build_entry` writes).

    Parameters
    ----------
    e : dict
        The entry read from a GAC file.

    Returns
    -------
    dict
        The entry, its numbers as floats.

    Raises
    ------
    ValueError
        Naming the field that is wrong and the value found.

    Examples
    --------
    >>> from htc_core.calibration.signal_choice import check_entry
    >>> check_entry({"method": "nearest-family", "min_runs": 2})
    Traceback (most recent call last):
    ...
    ValueError: 'transfer.set_level' (nearest-family): 'min_runs' must be an integer >= 3, got 2
    """
    def bad(field, value, want):
        raise ValueError(f"'transfer.set_level' ({METHOD}): {field!r} must be {want}, got {value!r}")

    k = len(NAMES)
    mr = e.get("min_runs")
    if not isinstance(mr, int) or isinstance(mr, bool) or mr < 3:
        bad("min_runs", mr, "an integer >= 3")
    if e.get("signals") != list(NAMES):
        bad("signals", e.get("signals"), f"{list(NAMES)}")
    for f in ("mu", "sd", "fill"):
        if not _finite_list(e.get(f), k):
            bad(f, e.get(f), f"a list of {k} finite numbers")
    if not all(v > 0 for v in e["sd"]):
        bad("sd", e["sd"], "positive")
    maps = e.get("maps")
    if not isinstance(maps, dict) or set(maps) != set(NAMES) or not all(_finite_list(maps[n], 2) for n in NAMES):
        bad("maps", maps, f"an object of [slope, intercept] for each of {list(NAMES)}")
    fams = e.get("families")
    if not isinstance(fams, list) or not fams or not all(
            isinstance(f, dict) and isinstance(f.get("name"), str) and f.get("best") in NAMES
            and _finite_list(f.get("profile"), 2 * k, nullable=True) and _finite_list(f.get("aurocs"), k, nullable=True)
            for f in fams):
        bad("families", fams, "a non-empty list of {'name', 'profile' (2 x signals), 'aurocs', 'best'}")
    left = e.get("families_left_out", [])
    if not isinstance(left, list) or not all(isinstance(v, str) for v in left):
        bad("families_left_out", left, "a list of family names")
    if e.get("default") not in NAMES:
        bad("default", e.get("default"), f"one of {list(NAMES)}")
    md = e.get("max_distance")
    if md is not None and not (isinstance(md, (int, float)) and not isinstance(md, bool) and md > 0):
        bad("max_distance", md, "null or a positive number")
    # copies all the way down: a checked entry never shares a list with the dict it was read from
    return {**e, "mu": [float(v) for v in e["mu"]], "sd": [float(v) for v in e["sd"]],
            "fill": [float(v) for v in e["fill"]], "maps": {n: [float(v) for v in maps[n]] for n in NAMES},
            "families": [{**f, "profile": list(f["profile"]), "aurocs": list(f["aurocs"])} for f in fams]}


@dataclass
class SignalChoice:
    """The signal ``nearest-family`` chose for one run set, and why (:func:`choose_signal`).

    Parameters
    ----------
    signal : str
        The signal whose map scores the set.
    reason : str
        ``"nearest"`` (the nearest family's best signal), ``"nearest, best usable"`` (its best signal is undefined or
        constant on the set: its best of those that are not), ``"too far"`` (no family within ``max_distance``:
        the default), ``"no usable signal"`` (the default).
    family : str or None
        The nearest training family.
    distance : float
        Its distance to the set (NaN when none was measured).
    runner_up : tuple of (str, float) or None
        The next nearest family and its distance.
    family_best : str or None
        The nearest family's best signal, whether or not usable on the set.
    unusable : tuple of str
        The signals undefined or constant on the set.
    n_runs : int
        The runs of the set.

    Examples
    --------
    >>> from htc_core.calibration.signal_choice import SignalChoice
    >>> print(SignalChoice("seq_prob", "nearest, best usable", "docs | m", 0.42, ("facts | m", 1.5), "neg_entropy",
    ...                    ("neg_entropy",), 80).words())
    signal seq_prob: nearest training family docs | m (distance 0.42; next facts | m, 1.50) ranks best by neg_entropy, which these 80 runs do not define (no top-k alternatives or constant); its best usable signal is seq_prob
    """

    signal: str
    reason: str
    family: str | None
    distance: float
    runner_up: tuple | None
    family_best: str | None
    unusable: tuple
    n_runs: int

    def words(self) -> str:
        """The choice in one line, for ``htc score --as-set``.

        Returns
        -------
        str

        Examples
        --------
        >>> from htc_core.calibration.signal_choice import SignalChoice
        >>> SignalChoice("neg_entropy", "nearest", "units | m", 0.2, None, "neg_entropy", (), 60).words()
        'signal neg_entropy: the nearest training family units | m (distance 0.20) ranks best by it'
        """
        if self.family is None:
            return (f"signal {self.signal} (the default): no signal is usable on these {self.n_runs} runs"
                    if self.reason == "no usable signal" else f"signal {self.signal}")
        near = f"nearest training family {self.family} (distance {self.distance:.2f}" + (
            f"; next {self.runner_up[0]}, {self.runner_up[1]:.2f})" if self.runner_up else ")")
        if self.reason == "too far":
            return (f"signal {self.signal} (the default): the {near} is beyond max_distance, so no training family "
                    "tells which signal ranks these runs best")
        if self.reason == "nearest":
            return f"signal {self.signal}: the {near} ranks best by it"
        return (f"signal {self.signal}: {near} ranks best by {self.family_best}, which these {self.n_runs} runs do "
                f"not define (no top-k alternatives or constant); its best usable signal is {self.signal}")


def choose_signal(entry: dict, S) -> SignalChoice:
    """The signal a ``nearest-family`` entry trusts on the run set ``S``, with the reason.

    Parameters
    ----------
    entry : dict
        A checked entry (:func:`check_entry`).
    S : array-like of shape (n_runs, 3)
        The set's signal scores (:func:`~.transfer_methods.signal_matrix`, NaN kept).

    Returns
    -------
    SignalChoice

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.signal_choice import build_entry, choose_signal
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(400) < 0.5).astype(float)
    >>> S = rng.standard_normal((400, 3))
    >>> S[:200, 0] += 3 * y[:200]; S[200:, 2] += 3 * y[200:]; S[200:] += 5     # "b": column 2 ranks, 5 sd higher
    >>> e = build_entry(S, y, np.repeat(["a", "b"], 200), {n: (1.0, 0.0) for n in ("seq_prob", "min_prob", "neg_entropy")})
    >>> choose_signal(e, S[200:]).signal, choose_signal(e, S[:200]).signal
    ('neg_entropy', 'seq_prob')
    >>> T = S[200:].copy(); T[:, 2] = np.nan          # no alternatives: the entropy is undefined
    >>> c = choose_signal(e, T); c.signal, c.reason, c.family_best
    ('min_prob', 'nearest, best usable', 'neg_entropy')
    """
    from .rank_ensemble import usable_columns

    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    use = usable_columns(S)
    unusable = tuple(n for n, u in zip(NAMES, use) if not u)
    if not use.any():
        return SignalChoice(entry["default"], "no usable signal", None, float("nan"), None, None, unusable, len(S))
    prof = profile(S, entry["mu"], entry["sd"])
    dist = []
    for f in entry["families"]:
        p = np.array([np.nan if v is None else v for v in f["profile"]], dtype=np.float64)
        ok = np.isfinite(prof) & np.isfinite(p)
        dist.append(float(np.sum((prof[ok] - p[ok]) ** 2)) if ok.any() else float("inf"))
    order = np.argsort(dist, kind="stable")
    near = entry["families"][int(order[0])]
    d0 = dist[int(order[0])]
    runner = (entry["families"][int(order[1])]["name"], dist[int(order[1])]) if len(order) > 1 else None
    md = entry.get("max_distance")
    if md is not None and d0 > md:
        return SignalChoice(entry["default"], "too far", near["name"], d0, runner, near["best"], unusable, len(S))
    if use[NAMES.index(near["best"])]:
        return SignalChoice(near["best"], "nearest", near["name"], d0, runner, near["best"], unusable, len(S))
    aur = np.array([np.nan if v is None else v for v in near["aurocs"]], dtype=np.float64)
    aur = np.where(use, aur, np.nan)
    j = int(np.nanargmax(aur)) if np.isfinite(aur).any() else (
        NAMES.index(entry["default"]) if use[NAMES.index(entry["default"])] else int(np.flatnonzero(use)[0]))
    return SignalChoice(NAMES[j], "nearest, best usable", near["name"], d0, runner, near["best"], unusable, len(S))


def nearest_family_confidences(entry: dict, S) -> tuple[np.ndarray | None, SignalChoice | None]:
    """The confidences of one run set by a ``nearest-family`` entry, and the choice behind them.

    Parameters
    ----------
    entry : dict
        A checked entry (:func:`check_entry`).
    S : array-like of shape (n_runs, 3)
        The set's signal scores (NaN kept: a run without the chosen signal gets the entry's ``fill``).

    Returns
    -------
    confidences : ndarray of shape (n_runs,) or None
        ``sigmoid(a * score + b)`` of the chosen signal with its map; None below ``min_runs`` runs.
    choice : SignalChoice or None
        None below ``min_runs`` runs.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.signal_choice import build_entry, nearest_family_confidences
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(400) < 0.5).astype(float)
    >>> S = rng.standard_normal((400, 3)) + np.outer(y, [0.0, 0.0, 3.0])
    >>> e = build_entry(S, y, np.repeat(["a", "b"], 200), {n: (1.0, 0.0) for n in ("seq_prob", "min_prob", "neg_entropy")})
    >>> p, choice = nearest_family_confidences(e, S[:60])
    >>> choice.signal, p.shape, nearest_family_confidences(e, S[:10])
    ('neg_entropy', (60,), (None, None))
    """
    from .transfer_methods import sigmoid

    S = np.asarray(S, dtype=np.float64)
    S = S.reshape(len(S), -1)
    if len(S) < entry["min_runs"]:
        return None, None
    choice = choose_signal(entry, S)
    j = NAMES.index(choice.signal)
    a, b = entry["maps"][choice.signal]
    x = np.where(np.isfinite(S[:, j]), S[:, j], entry["fill"][j])
    return sigmoid(a * x + b), choice
