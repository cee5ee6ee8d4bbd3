"""Live monitoring: the calibrated confidence of an agent run after every step, while it runs.

.. code-block:: python

    import htc_core as htc
    monitor = htc.Monitor(htc.HTCCalibrator.load("model.json"), threshold=0.3,
                          on_alert=lambda alert: print("low confidence:", alert))
    for step in run:                                  # each LLM call of the agent, as it happens
        conf = monitor.add_step(step.logprobs, step.top_logprobs)
    monitor.reset()                                   # next run

(:class:`Monitor` has examples that run.)

After step k, ``add_step`` returns exactly what ``model.predict_proba`` gives on the batch features
(:func:`htc_core.features.extract`) of the run's first k steps (to rounding; tested to 1e-9). The update
keeps running sums and per-step summaries (:mod:`htc_core.features.incremental`), so a step costs
O(tokens of that step), whatever the length of the run (``python -m htc_dev.bench monitor``).

Decisions where the issue is silent:

- Input: ``logprobs`` is the chosen tokens' log-probabilities of one step (a 1-D sequence);
  ``top_logprobs`` is None, an [n, k] array / list of lists of alternative log-probabilities (NaN pads,
  any order), or OpenAI's per-token lists of ``{"token", "logprob"}`` dicts (repeated tokens, as vLLM
  lists them, counted once). Values are checked as the readers check them (finite, <= 0, a positive
  rounding error up to 1e-6 taken as 0; -inf and vLLM's -9999 mean "no alternative"); a bad step raises
  ``ValueError`` naming the token and value and leaves the monitor unchanged.
- An empty step (no tokens) is skipped, as the readers drop empty steps: the confidence so far is
  returned unchanged (NaN before the first step).
- Alerts: with a ``threshold``, an alert is raised each time the confidence falls below it after being
  at or above it (or on the first step): ``on_alert(alert)`` is called with an :class:`Alert` and the
  alert is kept in ``alerts``. An exception raised by ``on_alert`` propagates to the caller of
  ``add_step`` (one way to stop an agent).
- Models: a fitted :class:`~htc_core.calibration.HTCCalibrator` (or the path of its JSON model file) is
  scored with its weights folded into the update; any other fitted classifier with ``predict_proba`` on
  the 48 features works too (slower: one ``predict_proba`` call per step). The token-confidence profile
  and top-k are the model's (``profile_``, ``top_k_``).
- No model of your own (``Monitor()``): the shipped ``gac-prefix``, a General Agent Calibrator fitted on
  every prefix of every labeled run the project has (``htc models gac-prefix`` shows its card and its
  leave-one-dataset-out numbers by prefix). A GAC (a shipped name, its file, or a
  :class:`~htc_core.calibration.general.GeneralCalibrator`) holds two models, for runs with and without
  top-k alternatives: the monitor updates both and reports the one the GAC would pick for the steps so
  far (the with-alternatives model from the first token that lists an alternative on), so its value after
  step k equals the GAC's ``predict_proba`` on the k-step prefix.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import asdict, dataclass
from itertools import chain
from typing import Any, Callable

import numpy as np

from .features import FEATURE_NAMES, FeatureMatrix
from .features import incremental as inc
from .formats.common import VLLM_NEG_INF

__all__ = ["Monitor", "Alert", "fitted_on_prefixes"]

if inc.FEATURE_ORDER != FEATURE_NAMES:  # pragma: no cover - guarded by tests
    raise ImportError("htc_core.features.incremental.FEATURE_ORDER no longer matches FEATURE_NAMES")

_NO_TOP = np.zeros((0, 0))
_ERRORS = {
    inc.ERR_NOT_FINITE: "must be finite (NaN and infinity are not log-probabilities)",
    inc.ERR_SENTINEL: "is the -inf sentinel (-9999); a sampled token cannot have probability 0",
    inc.ERR_POSITIVE: "must be <= 0 (a log-probability)",
    inc.ERR_TOP_POSINF: "must not be +infinity",
    inc.ERR_TOP_POSITIVE: "must be <= 0 (a log-probability)",
}


@dataclass(frozen=True)
class Alert:
    """The confidence fell below the threshold after ``step`` steps (1-based).

    Parameters
    ----------
    step : int
        The number of steps of the run when the confidence fell below the threshold.
    confidence : float
        The confidence after that step.
    threshold : float
        The monitor's threshold.

    Examples
    --------
    >>> import htc_core as htc
    >>> mon = htc.Monitor(threshold=0.35)
    >>> for step in ([-0.1, -0.2, -0.05], [-2.3, -1.9, -3.0, -0.7]):
    ...     conf = mon.add_step(step)
    >>> mon.alerts
    [Alert(step=2, confidence=0.326..., threshold=0.35)]
    """

    step: int
    confidence: float
    threshold: float

    def to_dict(self) -> dict:
        """The alert as a plain dict (for JSON).

        Returns
        -------
        dict
            ``step``, ``confidence`` and ``threshold``.

        Examples
        --------
        >>> from htc_core.monitor import Alert
        >>> Alert(step=3, confidence=0.25, threshold=0.3).to_dict()
        {'step': 3, 'confidence': 0.25, 'threshold': 0.3}
        """
        return asdict(self)


def fitted_on_prefixes(model: Any) -> bool:
    """Whether ``model`` was fitted on prefixes of runs, as a live monitor needs.

    True for the shipped ``gac-prefix``, a GAC whose sub-models all were, or a model whose training summary
    says ``fitted_on: prefixes`` (recorded by ``fit`` when every training id is ``RUN@k``, as ``htc prefixes``
    and ``htc fit --prefixes`` write them). A model fitted on whole runs only has seen no early step: its
    confidence on a running trajectory is off.

    Parameters
    ----------
    model : object
        A fitted calibrator (``HTCCalibrator``, ``GeneralCalibrator`` or any estimator).

    Returns
    -------
    bool

    Examples
    --------
    >>> from htc_core.calibration.models import load_model
    >>> from htc_core.monitor import fitted_on_prefixes
    >>> fitted_on_prefixes(load_model("gac-prefix")), fitted_on_prefixes(load_model("gac"))
    (True, False)
    """
    if isinstance(subs := getattr(model, "models", None), dict):
        parts = [m for m in subs.values() if m is not None]
        return str(getattr(model, "name", "")).startswith("gac-prefix") or all(map(fitted_on_prefixes, parts or [0]))
    return (getattr(model, "training_summary_", None) or {}).get("fitted_on") == "prefixes"


def _as_model(model: Any):
    from .calibration.linear_scoring import GACScoring, LinearScorer

    if isinstance(model, (str, os.PathLike)):
        from .calibration.models import load_scorer

        model = load_scorer(model)          # a shipped name or a model file, read for scoring only (numpy)
    if isinstance(model, GACScoring):
        return model
    if not callable(getattr(model, "predict_proba", None)):
        raise ValueError(f"model must be a fitted HTCCalibrator, a model file path or a classifier with "
                         f"predict_proba, got {type(model).__name__}")
    if type(model) is LinearScorer or _is_htc_calibrator(model):
        if type(model) is not LinearScorer:
            model._check_fitted()
        if model.n_features_in_ != len(FEATURE_NAMES) or list(model.feature_names_in_) != list(FEATURE_NAMES):
            raise ValueError("model must be fitted on the 48 HTC features (FEATURE_NAMES, in order); this one has "
                             f"{model.n_features_in_} features")
    return model


def _is_htc_calibrator(model: Any, exact: bool = False) -> bool:
    """Whether ``model`` is an HTCCalibrator (``exact``: of that very class), without importing scikit-learn: an
    HTCCalibrator exists only once its module is loaded."""
    calibrators = sys.modules.get("htc_core.calibration.calibrators")
    if calibrators is None:
        return False
    cls = calibrators.HTCCalibrator
    return type(model) is cls if exact else isinstance(model, cls)


class Monitor:
    """The calibrated confidence of a running trajectory, updated one step at a time.

    The properties ``n_steps``, ``alerted`` and ``features`` give the number of steps so far, whether an alert
    was raised and the 48 features so far.

    Parameters
    ----------
    model : HTCCalibrator, GeneralCalibrator, str, path or classifier, default="gac-prefix"
        A fitted ``HTCCalibrator``, the path of its JSON model file, a shipped model's name, a
        ``GeneralCalibrator``, or a fitted classifier with ``predict_proba`` over the 48 features
        (``profile_``/``top_k_`` attributes, else "paper"/5). The default, the shipped ``"gac-prefix"``,
        needs no labels of your own. A name or a file is read for scoring only (``model`` is then a
        :class:`~htc_core.calibration.linear_scoring.GACScorer`, ``LinearScorer`` or ``GAMScorer``: numpy, no
        scikit-learn); the numbers are the estimator's to the bit.
    threshold : float, optional
        Alert when the confidence falls below this value (None: no alerts).
    on_alert : callable, optional
        Called with an :class:`Alert` each time the confidence falls below ``threshold``.

    Attributes
    ----------
    confidence : float
        The latest confidence (NaN before the first step).
    history : list of float
        The confidence after each step.
    alerts : list of Alert
        The alerts raised so far.

    Examples
    --------
    >>> import htc_core as htc
    >>> mon = htc.Monitor(threshold=0.35)                # gac-prefix stays near its base rate (0.39): docs/monitor.md
    >>> conf = mon.add_step([-0.1, -0.2, -0.05])       # the chosen tokens' logprobs of one LLM call
    >>> 0 < conf < 1, mon.n_steps
    (True, 1)
    >>> round(mon.add_step([-2.3, -1.9, -3.0, -0.7]), 3), mon.alerted   # an unsure second call
    (0.326, True)
    >>> mon
    Monitor(steps=2, confidence=0.3264, threshold=0.35, alerts=1)
    """

    def __init__(self, model: Any = "gac-prefix", threshold: float | None = None,
                 on_alert: Callable[[Alert], Any] | None = None):
        self.model = _as_model(model)
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
                    or not 0.0 <= float(threshold) <= 1.0:
                raise ValueError(f"threshold must be a number in [0, 1] or None, got {threshold!r}")
            threshold = float(threshold)
        if on_alert is not None and not callable(on_alert):
            raise ValueError(f"on_alert must be callable or None, got {type(on_alert).__name__}")
        self.threshold = threshold
        self.on_alert = on_alert
        self._parts = _gac_parts(self.model)
        if self._parts is not None:       # a GAC: one monitor per sub-model, see the module docstring
            self.profile, self.top_k = self._parts[-1].profile, self._parts[-1].top_k
            self._transfer = getattr(self.model, "transfer", None)
            if self._transfer is not None:   # the GAC's combination with a training-free signal, kept running
                from .calibration.transfer_methods import RunningSignals
                self._signals = RunningSignals((self._transfer["signal"],))
            self.reset()
            return
        self.profile = str(getattr(self.model, "profile_", "paper"))
        self.top_k = int(getattr(self.model, "top_k_", 5))
        from .confidence import get_profile

        get_profile(self.profile)
        self._deepconf = self.profile == "deepconf"
        self._ignore_alternatives = self.profile == "chosen"   # 'chosen': Top1/TopkConf = r, alternatives unused
        w, b = self._folded_weights()
        self._w, self._b, self._fast = w, b, w is not None
        self._cap = getattr(self.model, "logit_bound_", None) if self._fast else None   # the model's soft logit bound
        if w is None:
            self._w, self._b = np.zeros(len(FEATURE_NAMES)), 0.0
        self._summary = np.zeros(9)
        self._feats = np.zeros(len(FEATURE_NAMES))
        self._buf = np.zeros(8)
        self.reset()

    def _folded_weights(self):
        from .calibration.linear_scoring import LinearScorer

        # a file's scorer or an HTCCalibrator (not a subclass: it may score differently)
        if type(self.model) is not LinearScorer and not _is_htc_calibrator(self.model, exact=True):
            return None, 0.0
        m = self.model
        w = np.ascontiguousarray(m.coef_[0] / m.scale_, dtype=np.float64)
        return w, float(m.intercept_[0] - float(m.mean_ @ w))

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the run: the next step is the first of a new trajectory.

        Returns
        -------
        None

        Examples
        --------
        >>> import htc_core as htc
        >>> mon = htc.Monitor()
        >>> conf = mon.add_step([-0.1, -0.2])
        >>> mon.reset()
        >>> mon.n_steps, mon.confidence
        (0, nan)
        """
        if self._parts is not None:
            for part in self._parts:
                part.reset()
            self._alternatives_seen = False
            if self._transfer is not None:
                self._signals.reset()
        else:
            self._state = inc.new_state()
        self.confidence = math.nan
        self.history: list[float] = []
        self.alerts: list[Alert] = []
        self._below = False

    @property
    def n_steps(self) -> int:
        """The number of steps added since the start (or the last ``reset``).

        Returns
        -------
        int

        Examples
        --------
        >>> import htc_core as htc
        >>> mon = htc.Monitor()
        >>> conf = mon.add_step([-0.1, -0.2])
        >>> conf = mon.add_step([])                 # an empty step is skipped
        >>> mon.n_steps
        1
        """
        return len(self.history)

    @property
    def alerted(self) -> bool:
        """Whether an alert was raised during this run.

        Returns
        -------
        bool

        Examples
        --------
        >>> import htc_core as htc
        >>> mon = htc.Monitor(threshold=0.3)
        >>> conf = mon.add_step([-0.1, -0.2, -0.05])
        >>> mon.alerted
        False
        """
        return bool(self.alerts)

    @property
    def features(self) -> FeatureMatrix:
        """The 48 features of the steps so far (one row), as ``extract`` gives them for this prefix.

        Returns
        -------
        FeatureMatrix
            One row (id ``monitor``); ``ValueError`` before the first step.

        Examples
        --------
        >>> import htc_core as htc
        >>> mon = htc.Monitor()
        >>> conf = mon.add_step([-0.1, -0.2, -0.05])
        >>> conf = mon.add_step([-2.3, -1.9, -3.0, -0.7])
        >>> fm = mon.features
        >>> fm.values.shape
        (1, 48)
        >>> round(float(fm.column("top1_gradient_mean")[0]), 3)
        -0.693
        """
        if not self.history:
            raise ValueError("no step yet: the features of an empty trajectory are undefined")
        if self._parts is not None:
            return self._current_part().features
        values = np.zeros((1, len(FEATURE_NAMES)))
        inc.features(self._state, values[0])
        return FeatureMatrix(values, np.array(["monitor"], dtype=object), self.profile, self.top_k)

    # ------------------------------------------------------------------ update
    def add_step(self, logprobs, top_logprobs=None) -> float:
        """Add one step of the running trajectory and return its calibrated confidence so far.

        Parameters
        ----------
        logprobs : array-like of float
            The chosen tokens' log-probabilities of one LLM call.
        top_logprobs : array-like of shape (n_tokens, k), optional
            Their alternatives' log-probabilities, sorted descending.

        Returns
        -------
        float
            The calibrated confidence after this step.

        Examples
        --------
        >>> import htc_core as htc
        >>> mon = htc.Monitor()
        >>> first = mon.add_step([-0.1, -0.2, -0.05])
        >>> second = mon.add_step([-0.3, -0.01])
        >>> mon.n_steps, len(mon.history)
        (2, 2)

        With the alternatives (the ``top_logprobs`` of each token, as an API returns them):

        >>> conf = mon.add_step([-0.2, -0.1], [[-0.2, -1.8, -2.5], [-0.1, -2.4, -3.9]])
        >>> mon.n_steps
        3
        """
        if self._parts is not None:
            return self._add_routed(logprobs, top_logprobs)
        lp = logprobs if _is_plain(logprobs, 1) else _chosen(logprobs)
        n = lp.shape[0]
        if n == 0:
            return self.confidence
        top = top_logprobs
        if top is None or self._ignore_alternatives:
            top = _NO_TOP
        elif not _is_plain(top, 2):
            top = _alternatives(top, n)
        if top.shape[0] != n and top.shape[1] != 0:
            raise ValueError(f"top_logprobs has {top.shape[0]} rows but logprobs has {n} tokens")
        if top.shape[1] > self._buf.shape[0]:
            self._buf = np.zeros(top.shape[1])
        code, i, j, z = inc.add_step_and_score(self._state, lp, top, self.top_k, self._deepconf, self._summary,
                                               self._buf, self._feats, self._w, self._b)
        if code:
            where = f"logprobs[{i}]" if j < 0 else f"top_logprobs[{i}][{j}]"
            value = float(lp[i] if j < 0 else top[i, j])
            raise ValueError(f"{where} = {value!r} {_ERRORS[code]}; the step was not added")
        if self._fast:
            if self._cap is not None:
                z = self._cap * math.tanh(z / self._cap)
            p = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
        else:
            p = float(self.model.predict_proba(self._feats[None, :].copy())[0, 1])
            z = math.log(p) - math.log1p(-p) if 0.0 < p < 1.0 else math.copysign(math.inf, p - 0.5)
        self._z = z
        self.confidence = p
        self.history.append(p)
        if self.threshold is not None:
            self._check_alert(p)
        return p

    def _current_part(self) -> "Monitor":
        """The sub-monitor of the model a GAC picks for the steps so far (see the module docstring)."""
        return self._parts[0] if self._alternatives_seen and len(self._parts) == 2 else self._parts[-1]

    def _add_routed(self, logprobs, top_logprobs) -> float:
        lp = logprobs if _is_plain(logprobs, 1) else _chosen(logprobs)
        if lp.shape[0] == 0:
            return self.confidence
        top = top_logprobs
        if top is None:
            top = _NO_TOP
        elif not _is_plain(top, 2):
            top = _alternatives(top, lp.shape[0])
        for part in self._parts:   # the first part checks the alternatives too: a bad step changes nothing
            part.add_step(lp, top)
        if top.size and not self._alternatives_seen:
            self._alternatives_seen = bool(np.any(np.isfinite(top) & (top != VLLM_NEG_INF)))
        p = self._current_part().confidence
        if self._transfer is not None:
            p = self._transferred(lp, top)
        self.confidence = p
        self.history.append(p)
        if self.threshold is not None:
            self._check_alert(p)
        return p

    def _transferred(self, lp, top) -> float:
        """The GAC's confidence with its ``transfer`` combination: the routed part's logit and the run's
        training-free signal so far (as ``GeneralCalibrator.predict_proba_traces`` on this prefix)."""
        from .calibration.transfer_methods import apply_transfer_one

        self._signals.add(lp, top)
        part = self._current_part()
        kind = "with_alternatives" if part is self._parts[0] and len(self._parts) == 2 else "without_alternatives"
        return apply_transfer_one(self._transfer, part._z, self._signals.value(self._transfer["signal"]), kind)

    def add_response(self, response: Any) -> float:
        """Add the step of one raw LLM response and return the confidence so far.

        Parameters
        ----------
        response : dict, list or SDK object
            An OpenAI chat completion, a streamed chunk list, a Responses API or a completions response, as a
            dict or an SDK object (pydantic ``model_dump`` is used). A response without logprobs raises
            ``ValueError``.

        Returns
        -------
        float
            The calibrated confidence after this step.

        Examples
        --------
        >>> import htc_core as htc
        >>> mon = htc.Monitor()
        >>> token = {"token": "Paris", "logprob": -0.02,
        ...          "top_logprobs": [{"token": "Paris", "logprob": -0.02}, {"token": "Lyon", "logprob": -4.1}]}
        >>> response = {"choices": [{"message": {"role": "assistant", "content": "Paris"},
        ...                          "logprobs": {"content": [token]}}]}
        >>> 0 < mon.add_response(response) < 1, mon.n_steps
        (True, 1)
        """
        from .formats.common import FieldError, MissingLogprobs
        from .formats.shapes import find_response, parse_response

        resp = find_response(_plain(response))
        if resp is None:
            raise ValueError("response is not an LLM response with logprobs (no choices[] or output[])")
        try:
            part = parse_response(resp)
        except (FieldError, MissingLogprobs) as e:
            raise ValueError(f"response: {getattr(e, 'field', '')}: {e.reason}") from None
        return self.add_step(part.lp, part.top)

    def fresh(self) -> "Monitor":
        """A new monitor with this one's model, threshold and on_alert, and no steps (one per concurrent run).

        Returns
        -------
        Monitor

        Examples
        --------
        >>> import htc_core as htc
        >>> mon = htc.Monitor(threshold=0.3)
        >>> conf = mon.add_step([-0.1, -0.2])
        >>> mon.fresh()
        Monitor(steps=0, confidence=nan, threshold=0.3, alerts=0)
        """
        return Monitor(self.model, self.threshold, self.on_alert)

    def _check_alert(self, p: float) -> None:
        below = p < self.threshold
        if below and not self._below:
            alert = Alert(self.n_steps, p, self.threshold)
            self.alerts.append(alert)
            self._below = True
            if self.on_alert is not None:
                self.on_alert(alert)
        elif not below:
            self._below = False

    def __repr__(self) -> str:
        return (f"Monitor(steps={self.n_steps}, confidence={self.confidence:.4f}, threshold={self.threshold}, "
                f"alerts={len(self.alerts)})")


def _gac_parts(model) -> list | None:
    """For a GAC: [with-alternatives monitor (if any), without-alternatives monitor]; else None."""
    from .calibration.linear_scoring import GACScoring

    if not isinstance(model, GACScoring):   # a GeneralCalibrator or a file's GACScorer
        return None
    return [Monitor(m) for m in model.models.values() if m is not None]


def _plain(obj: Any) -> Any:
    """Plain JSON-like values from an SDK response (pydantic models have ``model_dump``)."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json")
        except TypeError:
            return dump()
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def _is_plain(values, ndim: int) -> bool:
    """A C-contiguous float64 numpy array of ``ndim`` dimensions: used as it is (no conversion, no copy)."""
    return type(values) is np.ndarray and values.dtype == np.float64 and values.ndim == ndim \
        and values.flags.c_contiguous


def _real_array(values) -> np.ndarray:
    """``values`` as float64; a complex value (its imaginary part would be dropped silently) raises TypeError,
    an int beyond float range ValueError (numpy would raise OverflowError)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        try:
            return np.asarray(values, dtype=np.float64)
        except np.exceptions.ComplexWarning:
            raise TypeError("complex values are not logprobs") from None
        except OverflowError:
            raise ValueError("a number beyond float range") from None


def _chosen(values) -> np.ndarray:
    try:
        arr = _real_array(values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"logprobs must be a 1-D sequence of real numbers, got {type(values).__name__}"
                         f" ({e})") from None
    if arr.ndim != 1:
        raise ValueError(f"logprobs must be 1-D (one value per token), got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _equal_rows(values, n: int) -> np.ndarray | None:
    """[n, k] array when every token lists the same number of alternatives (the usual case), else None. Streamed
    into one array: measured 25% less than ``np.array`` of the nested lists, which discovers the shape value by
    value. A complex value or an int beyond float range gives None: the row-by-row path names it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            widths = set(map(len, values))
            if len(widths) == 1 and (k := widths.pop()):
                return np.fromiter(chain.from_iterable(values), np.float64, count=n * k).reshape(n, k)
            arr = np.array(values, dtype=np.float64)
            return arr if arr.ndim == 2 else None
    except (TypeError, ValueError, OverflowError, np.exceptions.ComplexWarning):
        return None


def _alternatives_array(values: np.ndarray) -> np.ndarray:
    try:
        arr = _real_array(values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"top_logprobs must be real numbers ({e})") from None
    if arr.ndim != 2:
        raise ValueError(f"top_logprobs must be 2-D [tokens, alternatives], got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _alternatives(values, n: int) -> np.ndarray:
    """[n, w] float array (NaN-padded) from an array, a list of lists of numbers or OpenAI dict rows."""
    if isinstance(values, np.ndarray):
        return _alternatives_array(values)
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"top_logprobs must be None, a 2-D array or a list of per-token lists, "
                         f"got {type(values).__name__}")
    if len(values) != n:
        raise ValueError(f"top_logprobs has {len(values)} rows but logprobs has {n} tokens")
    first = next((row for row in values if row), None)
    if first is not None and isinstance(first[0], dict):
        from .formats.common import FieldError
        from .formats.logprobs import top_from_dict_rows

        try:
            top, _ = top_from_dict_rows([list(r) if r else [] for r in values], n, "top_logprobs[{i}][{j}].{vk}")
        except FieldError as e:
            raise ValueError(f"{e.field} = {e.value!r}: {e.reason}") from None
        return _NO_TOP if top is None else top
    arr = _equal_rows(values, n)
    if arr is not None:
        return arr
    width = max((len(r) for r in values if r is not None), default=0)
    out = np.full((n, width), np.nan)
    for i, row in enumerate(values):
        if row:
            try:
                out[i, :len(row)] = _real_array(row)
            except (TypeError, ValueError) as e:
                raise ValueError(f"top_logprobs[{i}] must be a list of real numbers ({e})") from None
    return out
