"""Live monitoring of recorded agents: a Monitor per trajectory in the Recorder, and a smolagents step callback.

``Recorder(path, monitor=Monitor(model, threshold=0.3, on_alert=...))``: the monitor given is a template;
each trajectory gets its own copy (``Monitor.fresh()``), so agents running in parallel threads or asyncio
tasks do not mix their steps. Every recorded call that carries logprobs updates the trajectory's monitor;
``rec.monitor`` / ``rec.confidence`` give the current trajectory's monitor and confidence to the agent code,
and the call's line in the call log gets ``"monitor": {"step": k, "confidence": p, "alert": bool}`` (or
``{"skipped": reason}`` for a call without usable logprobs, which the reader drops too). An exception raised
by ``on_alert`` (the way to stop the agent) propagates to the agent's ``create(...)`` call after the line
is written.

``smolagents_step_callback(monitor, stop=True)``: a smolagents step callback (``step_callbacks=[cb]``) that
feeds each memory step's raw model response (``model_output_message.raw``, requested with
``logprobs=True``) to the monitor; when the confidence falls below the monitor's threshold it calls
``agent.interrupt()`` (smolagents then ends the run with "Agent interrupted") or, without an agent, raises
:class:`LowConfidence`. Steps without a raw response (smolagents' planning steps keep none) are skipped,
as the ``smolagents`` reader skips them.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ..monitor import Alert, Monitor

__all__ = ["LiveMonitors", "LowConfidence", "smolagents_step_callback"]


class LowConfidence(RuntimeError):
    """Raised to stop a run whose calibrated confidence fell below the threshold.

    Parameters
    ----------
    alert : Alert
        The monitor's alert (kept as ``alert``).

    Examples
    --------
    >>> from htc_core.collect.live import LowConfidence
    >>> from htc_core.monitor import Alert
    >>> err = LowConfidence(Alert(step=2, confidence=0.21, threshold=0.3))
    >>> str(err), err.alert.step
    ('calibrated confidence 0.210 fell below 0.300 after step 2', 2)
    """

    def __init__(self, alert: Alert):
        super().__init__(f"calibrated confidence {alert.confidence:.3f} fell below {alert.threshold:.3f} "
                         f"after step {alert.step}")
        self.alert = alert


class LiveMonitors:
    """One :class:`Monitor` per trajectory id, copied from a template (what ``Recorder(monitor=...)`` keeps).

    Parameters
    ----------
    template : Monitor
        Each trajectory gets its own ``template.fresh()``, so agents running in parallel do not mix steps.

    Examples
    --------
    >>> import random
    >>> import htc_core as htc
    >>> from htc_core.synthetic import make_call
    >>> response = make_call(random.Random(0), "run-1", 0, n_tokens=4, k=2)["response"]   # a chat completion
    >>> from htc_core.collect.live import LiveMonitors
    >>> live = LiveMonitors(htc.Monitor(threshold=0.5))
    >>> entry, raised = live.update("run-1", response)
    >>> entry["step"], round(entry["confidence"], 3), entry["alert"], raised
    (1, 0.353, True, None)
    >>> live.get("run-2")                       # another trajectory: its own monitor
    Monitor(steps=0, confidence=nan, threshold=0.5, alerts=0)
    """

    def __init__(self, template: Monitor):
        if not isinstance(template, Monitor):
            raise ValueError(f"monitor must be a htc_core.Monitor, got {type(template).__name__}")
        self.template = template
        self._by_id: dict[str, Monitor] = {}
        self._lock = threading.Lock()

    def get(self, trajectory_id: str) -> Monitor:
        """The monitor of a trajectory (a fresh copy of the template on first use; thread-safe).

        Parameters
        ----------
        trajectory_id : str
            The trajectory's id.

        Returns
        -------
        Monitor

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.collect.live import LiveMonitors
        >>> live = LiveMonitors(htc.Monitor())
        >>> live.get("a") is live.get("a"), live.get("a") is live.get("b")
        (True, False)
        """
        with self._lock:
            mon = self._by_id.get(trajectory_id)
            if mon is None:
                mon = self._by_id[trajectory_id] = self.template.fresh()
            return mon

    def update(self, trajectory_id: str, response: Any) -> tuple[dict, BaseException | None]:
        """Feed one call's response to its trajectory's monitor.

        Parameters
        ----------
        trajectory_id : str
            The trajectory's id.
        response : object
            The call's response (as :meth:`htc_core.monitor.Monitor.add_response` takes it).

        Returns
        -------
        entry : dict
            The call log's ``monitor`` entry: ``{"step", "confidence", "alert"}``, or ``{"skipped": reason}``
            for a response without usable logprobs.
        raised : BaseException or None
            The exception raised by the monitor's ``on_alert`` (None when there was none), which the caller
            re-raises after writing the line.

        Examples
        --------
        >>> import random
        >>> import htc_core as htc
        >>> from htc_core.synthetic import make_call
        >>> response = make_call(random.Random(0), "run-1", 0, n_tokens=4, k=2)["response"]   # a chat completion
        >>> from htc_core.collect.live import LiveMonitors
        >>> live = LiveMonitors(htc.Monitor())
        >>> live.update("run-1", {"choices": []})
        ({'skipped': 'response is not an LLM response with logprobs (no choices[] or output[])'}, None)
        >>> live.update("run-1", response)[0]["step"]
        1
        """
        mon = self.get(trajectory_id)
        before = mon.n_steps
        try:
            mon.add_response(response)
        except Exception as e:  # noqa: BLE001 - a bad response must not stop the agent, an alert may
            if mon.n_steps == before:
                return {"skipped": str(e)}, None
            return self._entry(mon), e
        if mon.n_steps == before:
            return {"skipped": "no tokens"}, None
        return self._entry(mon), None

    @staticmethod
    def _entry(mon: Monitor) -> dict:
        alert = bool(mon.alerts) and mon.alerts[-1].step == mon.n_steps
        return {"step": mon.n_steps, "confidence": mon.confidence, "alert": alert}


def _raw_of(memory_step: Any) -> Any:
    mom = memory_step.get("model_output_message") if isinstance(memory_step, dict) else \
        getattr(memory_step, "model_output_message", None)
    if mom is None:
        return None
    raw = mom.get("raw") if isinstance(mom, dict) else getattr(mom, "raw", None)
    if isinstance(raw, str) and raw.startswith("{"):
        import json

        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return raw


def smolagents_step_callback(monitor: Monitor, *, stop: bool = True,
                             on_step: Callable[[Any, float], Any] | None = None) -> Callable:
    """A smolagents step callback updating ``monitor`` with each step's raw model response.

    The raw response is the memory step's ``model_output_message.raw`` (ask the model for ``logprobs=True``);
    steps without one (smolagents' planning steps) are skipped, as the ``smolagents`` reader skips them.
    Works with smolagents' ``callback(step, agent=agent)`` calls and with the older ``callback(step)``.

    Parameters
    ----------
    monitor : Monitor
        The monitor of this run (its ``threshold`` decides when to stop).
    stop : bool, default True
        When the confidence falls below ``monitor.threshold``, interrupt the agent (``agent.interrupt()``;
        without an agent, raise :class:`LowConfidence`).
    on_step : callable, optional
        ``on_step(memory_step, confidence)``, called after each monitored step (e.g. to log or flag it).

    Returns
    -------
    callable
        The callback, for ``CodeAgent(..., step_callbacks=[callback])``.

    Examples
    --------
    >>> import random
    >>> import htc_core as htc
    >>> from htc_core.synthetic import make_call
    >>> response = make_call(random.Random(0), "run-1", 0, n_tokens=4, k=2)["response"]   # a chat completion
    >>> from htc_core.collect.live import LowConfidence, smolagents_step_callback
    >>> seen = []
    >>> callback = smolagents_step_callback(htc.Monitor(threshold=0.5),
    ...                                     on_step=lambda step, conf: seen.append(round(conf, 3)))
    >>> callback({"step_number": 1})               # a step without a raw response: skipped
    >>> try:
    ...     callback({"step_number": 2, "model_output_message": {"raw": response}})
    ... except LowConfidence as stopped:
    ...     print(stopped)
    calibrated confidence 0.353 fell below 0.500 after step 1
    >>> seen
    [0.353]
    """
    if not isinstance(monitor, Monitor):
        raise ValueError(f"monitor must be a htc_core.Monitor, got {type(monitor).__name__}")

    def callback(memory_step: Any, agent: Any = None, **_: Any) -> None:
        raw = _raw_of(memory_step)
        if raw is None:
            return
        n_alerts, before = len(monitor.alerts), monitor.n_steps
        try:
            conf = monitor.add_response(raw)
        except Exception:
            if monitor.n_steps == before:
                return  # no usable logprobs in this step: the reader drops it too
            raise       # raised by the monitor's own on_alert
        if monitor.n_steps == before:
            return
        if on_step is not None:
            on_step(memory_step, conf)
        if stop and len(monitor.alerts) > n_alerts:
            interrupt = getattr(agent, "interrupt", None)
            if callable(interrupt):
                interrupt()
            else:
                raise LowConfidence(monitor.alerts[-1])

    return callback
