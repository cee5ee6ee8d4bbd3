"""The recorder: wrap an OpenAI-compatible client and log every call with logprobs."""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

import orjson

__all__ = ["Recorder", "HTTPClient", "save_smolagents_run", "to_jsonable"]

# request keys copied into the log (the messages/prompt and the sampling settings)
_REQUEST_KEYS = ("model", "messages", "prompt", "input", "instructions", "temperature", "top_p", "max_tokens",
                 "max_completion_tokens", "max_output_tokens", "stop", "seed", "n", "logprobs", "top_logprobs",
                 "tools", "tool_choice", "response_format", "include", "stream")


def to_jsonable(obj: Any) -> Any:
    """A plain JSON value from an SDK response (pydantic model, dict, dataclass, numpy values).

    Parameters
    ----------
    obj : object
        The value: pydantic models are dumped, numpy scalars and arrays converted, bytes replaced by their
        length, other objects by their public attributes or their text.

    Returns
    -------
    object
        None, str, bool, int, float, list or dict.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.collect import to_jsonable
    >>> to_jsonable({"p": np.float32(0.5), "ids": (1, 2), "raw": b"xyz"})
    {'p': 0.5, 'ids': [1, 2], 'raw': '<3 bytes>'}
    """
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return to_jsonable(dump(mode="json", exclude_unset=False))
        except TypeError:
            return to_jsonable(dump())
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars (llama-cpp-python returns np.float32)
        try:
            return obj.item()
        except (TypeError, ValueError):
            pass
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    if hasattr(obj, "__dict__"):
        return {k: to_jsonable(v) for k, v in vars(obj).items() if not k.startswith("_")}
    return str(obj)


def _dumps(record: dict) -> bytes:
    return orjson.dumps(record, default=_default, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


def _default(o: Any) -> Any:
    if isinstance(o, bytes):
        return f"<{len(o)} bytes>"
    if hasattr(o, "item"):
        return o.item()
    j = to_jsonable(o)
    if j is o:
        return str(o)
    return j


class Recorder:
    """Append every LLM call of an agent run to an openai-calllog JSONL file.

    ``rec.wrap(client)`` returns the client with its completion calls recorded (logprobs requested);
    ``with rec.trajectory(id):`` groups the calls of one run; ``rec.outcome(success=...)`` labels it.

    Parameters
    ----------
    path : str or path
        The JSONL file (appended to; parent folders are created).
    top_logprobs : int, default=5
        Alternatives requested per token; 0 asks for chosen-token logprobs only.
    trajectory_id : str, optional
        The id used outside ``trajectory()`` blocks (default: a new uuid).
    metadata : dict, optional
        Written on every line under ``metadata`` (e.g. dataset, agent version).
    force : bool, default=False
        Override ``logprobs``/``top_logprobs`` the caller passed.
    monitor : Monitor or True, optional
        A :class:`Monitor` used as a template: each trajectory gets its own copy, updated by every recorded
        call; ``monitor`` / ``confidence`` give the current trajectory's, and each call's line gets a
        ``monitor`` entry (see :mod:`htc_core.collect.live`). ``True``: a ``Monitor()`` of the shipped
        ``gac-prefix`` model (no labels of your own needed).

    Examples
    --------
    >>> import json, os, tempfile
    >>> import htc_core as htc
    >>> path = os.path.join(tempfile.mkdtemp(), "runs.jsonl")
    >>> rec = htc.Recorder(path)
    >>> with rec.trajectory("run-1", dataset="demo"):
    ...     rec.outcome(success=True)
    >>> rec.close()
    >>> [json.loads(line)["trajectory_id"] for line in open(path)]
    ['run-1', 'run-1']

    With a model server, every call of the wrapped client is recorded (the call needs the server running,
    hence skipped here):

    >>> from htc_core.collect import HTTPClient
    >>> with htc.Recorder(path) as rec:
    ...     client = rec.wrap(HTTPClient("http://127.0.0.1:8080/v1"))
    ...     with rec.trajectory("run-2"):
    ...         reply = client.chat.completions.create(
    ...             model="m", messages=[{"role": "user", "content": "Hi"}])  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike, *, top_logprobs: int = 5, trajectory_id: str | None = None,
                 metadata: dict | None = None, force: bool = False, monitor: Any = None):
        if not isinstance(top_logprobs, int) or isinstance(top_logprobs, bool) or not 0 <= top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be an integer in 0..20, got {top_logprobs!r}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.top_logprobs = top_logprobs
        self.metadata = dict(metadata or {})
        self.force = force
        self.default_trajectory_id = trajectory_id or uuid.uuid4().hex
        self._current: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            f"htc_trajectory_{id(self)}", default=None)
        self._steps: dict[str, int] = {}
        self._lock = threading.Lock()
        self._live = None
        if monitor is True:
            from ..monitor import Monitor

            monitor = Monitor()            # the shipped prefix-aware GAC
        if monitor is not None and monitor is not False:
            from .live import LiveMonitors

            self._live = LiveMonitors(monitor)
        self._fh = open(self.path, "ab")
        self.calls = 0

    # ----------------------------------------------------------- trajectories
    @property
    def trajectory_id(self) -> str:
        """The current trajectory's id: the innermost ``trajectory()`` block's, else the default one.

        Returns
        -------
        str

        Examples
        --------
        >>> import os, tempfile
        >>> import htc_core as htc
        >>> rec = htc.Recorder(os.path.join(tempfile.mkdtemp(), "calls.jsonl"))
        >>> with rec.trajectory("run-7"):
        ...     print(rec.trajectory_id)
        run-7
        >>> rec.trajectory_id == rec.default_trajectory_id
        True
        """
        return self._current.get() or self.default_trajectory_id

    @contextlib.contextmanager
    def trajectory(self, trajectory_id: str | None = None, **labels: Any) -> Iterator[str]:
        """A context manager: the calls made inside belong to one trajectory.

        The current trajectory is a context variable, so threads and asyncio tasks each keep their own.

        Parameters
        ----------
        trajectory_id : str, optional
            The trajectory's id (a new uuid when None).
        **labels
            Labels (question, dataset, gold, ...) written at once as a non-LLM line the reader joins to the
            trajectory.

        Yields
        ------
        str
            The trajectory's id.

        Examples
        --------
        >>> import os, tempfile
        >>> import htc_core as htc
        >>> rec = htc.Recorder(os.path.join(tempfile.mkdtemp(), "calls.jsonl"))
        >>> with rec.trajectory("run-1", question="How many meters are in 3 km?") as tid:
        ...     tid
        'run-1'
        """
        tid = str(trajectory_id) if trajectory_id is not None else uuid.uuid4().hex
        token = self._current.set(tid)
        try:
            if labels:
                self.outcome(**labels)
            yield tid
        finally:
            self._current.reset(token)

    @property
    def monitor(self):
        """The current trajectory's Monitor (None without ``monitor=``).

        Returns
        -------
        Monitor or None

        Examples
        --------
        >>> import os, tempfile
        >>> import htc_core as htc
        >>> rec = htc.Recorder(os.path.join(tempfile.mkdtemp(), "calls.jsonl"), monitor=htc.Monitor(threshold=0.3))
        >>> with rec.trajectory("run-1"):
        ...     rec.monitor
        Monitor(steps=0, confidence=nan, threshold=0.3, alerts=0)
        """
        return None if self._live is None else self._live.get(self.trajectory_id)

    @property
    def confidence(self) -> float | None:
        """The current trajectory's calibrated confidence so far.

        Returns
        -------
        float or None
            NaN before the trajectory's first call; None without ``monitor=``.

        Examples
        --------
        >>> import os, random, time, tempfile
        >>> import htc_core as htc
        >>> from htc_core.synthetic import make_call
        >>> rec = htc.Recorder(os.path.join(tempfile.mkdtemp(), "calls.jsonl"), monitor=True)
        >>> response = make_call(random.Random(0), "run-1", 0, n_tokens=4, k=2)["response"]
        >>> with rec.trajectory("run-1"):
        ...     before = rec.confidence
        ...     rec.record(kind="chat", request={}, response=response, started=time.time())
        ...     after = rec.confidence
        >>> before, round(after, 3)
        (nan, 0.353)
        """
        mon = self.monitor
        return None if mon is None else mon.confidence

    def outcome(self, *, trajectory_id: str | None = None, **labels: Any) -> None:
        """Write labels (success, answer, gold, question, verbalized_confidence, ...) of a trajectory.

        Parameters
        ----------
        trajectory_id : str, optional
            The trajectory (default: the current one).
        **labels
            The labels, written as one ``{"type": "labels"}`` line the reader joins to the trajectory.

        Returns
        -------
        None

        Examples
        --------
        >>> import json, os, tempfile
        >>> import htc_core as htc
        >>> path = os.path.join(tempfile.mkdtemp(), "calls.jsonl")
        >>> with htc.Recorder(path) as rec:
        ...     rec.outcome(trajectory_id="run-3", success=False, answer="5", gold="4")
        >>> json.loads(open(path).read())
        {'trajectory_id': 'run-3', 'type': 'labels', 'success': False, 'answer': '5', 'gold': '4'}
        """
        rec = {"trajectory_id": trajectory_id or self.trajectory_id, "type": "labels", **labels}
        self._write(rec)

    def next_step(self, tid: str) -> int:
        """The next step number of a trajectory (0, 1, 2, ...; thread-safe).

        Parameters
        ----------
        tid : str
            The trajectory's id.

        Returns
        -------
        int

        Examples
        --------
        >>> import os, tempfile
        >>> import htc_core as htc
        >>> rec = htc.Recorder(os.path.join(tempfile.mkdtemp(), "calls.jsonl"))
        >>> rec.next_step("run-1"), rec.next_step("run-1"), rec.next_step("run-2")
        (0, 1, 0)
        """
        with self._lock:
            n = self._steps.get(tid, 0)
            self._steps[tid] = n + 1
        return n

    # ---------------------------------------------------------------- writing
    def _write(self, rec: dict) -> None:
        line = _dumps(rec) + b"\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()

    def record(self, *, kind: str, request: dict, response: Any, started: float, trajectory_id: str | None = None,
               step: int | None = None, error: str | None = None) -> None:
        """Write one call's line (what the wrapped client does; call it for a response obtained otherwise).

        Parameters
        ----------
        kind : {"chat", "completions", "responses"}
            The endpoint.
        request : dict
            The request's arguments (only the messages / prompt and the sampling settings are kept: never
            an API key).
        response : object
            The response (SDK object, dict, or a stream's list of chunks); None for a failed call.
        started : float
            When the call started (``time.time()``); the latency is measured from it.
        trajectory_id : str, optional
            The trajectory (default: the current one).
        step : int, optional
            The step number (default: the trajectory's next).
        error : str, optional
            The error of a failed call.

        Returns
        -------
        None
            With a monitor whose ``on_alert`` raised, that exception is raised after the line is written.

        Examples
        --------
        >>> import json, os, random, time, tempfile
        >>> import htc_core as htc
        >>> from htc_core.synthetic import make_call
        >>> path = os.path.join(tempfile.mkdtemp(), "calls.jsonl")
        >>> response = make_call(random.Random(0), "run-1", 0, n_tokens=4, k=2)["response"]
        >>> with htc.Recorder(path) as rec, rec.trajectory("run-1"):
        ...     rec.record(kind="chat", request={"model": "SmolLM2", "api_key": "sk-..."}, response=response,
        ...                started=time.time())
        ...     rec.outcome(success=True)
        >>> line = json.loads(open(path).readline())
        >>> line["step"], line["endpoint"], line["request"]
        (0, 'chat', {'model': 'SmolLM2'})
        >>> ts, report = htc.load(path)
        >>> ts, ts.labels.tolist()
        (TraceSet(trajectories=1, steps=1, tokens=4, k=2), [1.0])
        """
        tid = trajectory_id or self.trajectory_id
        rec: dict[str, Any] = {
            "trajectory_id": tid,
            "step": self.next_step(tid) if step is None else step,
            "created": started,
            "latency_s": round(time.time() - started, 4),
            "endpoint": kind,
            "request": {k: to_jsonable(v) for k, v in request.items() if k in _REQUEST_KEYS},
            "response": to_jsonable(response),
        }
        if error:
            rec["error"] = error
        if self.metadata:
            rec["metadata"] = self.metadata
        pending = None
        if self._live is not None and error is None and response is not None:
            rec["monitor"], pending = self._live.update(tid, rec["response"])
        self._write(rec)
        self.calls += 1
        if pending is not None:
            raise pending  # on_alert stopped the run; the call is logged

    def close(self) -> None:
        """Close the file (also done when a ``with Recorder(...)`` block ends).

        Returns
        -------
        None

        Examples
        --------
        >>> import os, tempfile
        >>> import htc_core as htc
        >>> rec = htc.Recorder(os.path.join(tempfile.mkdtemp(), "calls.jsonl"))
        >>> rec.close()
        >>> rec.close()                     # closing twice is harmless
        """
        with self._lock:
            if not self._fh.closed:
                self._fh.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --------------------------------------------------------------- wrapping
    def _with_logprobs(self, kind: str, kwargs: dict) -> dict:
        kw = dict(kwargs)
        k = self.top_logprobs
        if kind == "chat":
            if self.force or "logprobs" not in kw:
                kw["logprobs"] = True
            if k and (self.force or "top_logprobs" not in kw):
                kw["top_logprobs"] = k
        elif kind == "completions":
            if self.force or "logprobs" not in kw or kw["logprobs"] is None:
                kw["logprobs"] = max(k, 1) if k else 0
        elif kind == "responses":
            inc = list(kw.get("include") or [])
            if "message.output_text.logprobs" not in inc:
                inc.append("message.output_text.logprobs")
            kw["include"] = inc
            if k and (self.force or "top_logprobs" not in kw):
                kw["top_logprobs"] = k
        return kw

    def _call(self, kind: str, fn: Any, args: tuple, kwargs: dict) -> Any:
        kw = self._with_logprobs(kind, kwargs)
        tid = self.trajectory_id
        started = time.time()
        try:
            result = fn(*args, **kw)
        except Exception as e:
            self.record(kind=kind, request=kw, response=None, started=started, trajectory_id=tid,
                        error=f"{type(e).__name__}: {e}")
            raise
        if kw.get("stream"):
            return self._stream(kind, kw, result, started, tid)
        self.record(kind=kind, request=kw, response=result, started=started, trajectory_id=tid)
        return result

    def _stream(self, kind: str, kw: dict, stream: Any, started: float, tid: str) -> Iterator[Any]:
        """Yield the chunks unchanged; record the call (its list of chunks) when the stream ends."""
        chunks: list = []
        try:
            for ch in stream:
                chunks.append(to_jsonable(ch))
                yield ch
        finally:
            self.record(kind=kind, request=kw, response=chunks, started=started, trajectory_id=tid)

    def wrap(self, client: Any) -> Any:
        """A client whose completion calls are recorded, with logprobs requested.

        ``chat.completions.create`` (and ``completions.create`` / ``responses.create`` when present) add
        ``logprobs=True, top_logprobs=k`` (unless the caller set them, or always with ``force``) and record
        each call; every other attribute is the wrapped client's.

        Parameters
        ----------
        client : object
            An OpenAI-compatible client: ``openai.OpenAI``, :class:`HTTPClient`, or any object with
            ``.chat.completions.create`` (``TypeError`` otherwise).

        Returns
        -------
        object
            The wrapped client (its ``recorder`` attribute is this recorder).

        Examples
        --------
        >>> import os, tempfile
        >>> import htc_core as htc
        >>> rec = htc.Recorder(os.path.join(tempfile.mkdtemp(), "calls.jsonl"))
        >>> from htc_core.collect import HTTPClient
        >>> client = rec.wrap(HTTPClient("http://127.0.0.1:8080/v1"))
        >>> client.recorder is rec, client.base_url
        (True, 'http://127.0.0.1:8080/v1')

        A call needs the model server running (skipped here):

        >>> reply = client.chat.completions.create(
        ...     model="m", messages=[{"role": "user", "content": "Hi"}])  # doctest: +SKIP
        """
        if not hasattr(client, "chat") or not hasattr(getattr(client, "chat"), "completions"):
            raise TypeError(f"expected an OpenAI-compatible client with .chat.completions.create, got "
                            f"{type(client).__name__}")
        return _Wrapped(client, self)


class _Endpoint:
    def __init__(self, inner: Any, recorder: Recorder, kind: str):
        self._inner = inner
        self._recorder = recorder
        self._kind = kind

    def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._recorder._call(self._kind, self._inner.create, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Chat:
    def __init__(self, inner: Any, recorder: Recorder):
        self._inner = inner
        self.completions = _Endpoint(inner.completions, recorder, "chat")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Wrapped:
    def __init__(self, client: Any, recorder: Recorder):
        self._client = client
        self.recorder = recorder
        self.chat = _Chat(client.chat, recorder)
        comp = getattr(client, "completions", None)
        if comp is not None and hasattr(comp, "create"):
            self.completions = _Endpoint(comp, recorder, "completions")
        resp = getattr(client, "responses", None)
        if resp is not None and hasattr(resp, "create"):
            self.responses = _Endpoint(resp, recorder, "responses")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


# ------------------------------------------------------------- HTTP client
class HTTPClient:
    """A minimal OpenAI-compatible client (no dependencies) returning plain dicts.

    ``HTTPClient("http://127.0.0.1:8000/v1").chat.completions.create(model=..., messages=[...])`` posts to
    ``/chat/completions``; ``.completions.create`` to ``/completions``. No streaming.

    Parameters
    ----------
    base_url : str
        The server's API root (``http://host:port/v1``).
    api_key : str, optional
        Sent as a bearer token; default ``$OPENAI_API_KEY``, else ``none`` (local servers ignore it).
    timeout : float, default 600.0
        Seconds per request.

    Examples
    --------
    >>> from htc_core.collect import HTTPClient
    >>> client = HTTPClient("http://127.0.0.1:8080/v1/", api_key="local", timeout=30)
    >>> client.base_url, client.timeout
    ('http://127.0.0.1:8080/v1', 30)

    A call needs the server running (skipped here):

    >>> client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}],
    ...                                logprobs=True, top_logprobs=5)  # doctest: +SKIP
    """

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 600.0):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "none"
        self.timeout = timeout
        self.chat = _HTTPChat(self)
        self.completions = _HTTPEndpoint(self, "/completions")

    def post(self, route: str, body: dict) -> dict:
        """POST a JSON body to a route of the server and return the decoded JSON reply.

        Parameters
        ----------
        route : str
            The route under ``base_url`` (``/chat/completions``).
        body : dict
            The request (``stream=True`` raises ``NotImplementedError``).

        Returns
        -------
        dict
            The reply; an HTTP error raises ``RuntimeError`` with the status and the start of the body.

        Examples
        --------
        >>> from htc_core.collect import HTTPClient
        >>> client = HTTPClient("http://127.0.0.1:8080/v1")
        >>> client.post("/chat/completions", {"model": "m", "stream": True})
        Traceback (most recent call last):
        ...
        NotImplementedError: HTTPClient does not stream; use the openai package for stream=True

        A real request needs the server running (skipped here):

        >>> client.post("/completions", {"model": "m", "prompt": "2+2=", "logprobs": 5})  # doctest: +SKIP
        """
        if body.get("stream"):
            raise NotImplementedError("HTTPClient does not stream; use the openai package for stream=True")
        data = json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + route, data=data, method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {self.api_key}"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            detail = e.read()[:500].decode("utf-8", errors="replace")
            raise RuntimeError(f"{route}: HTTP {e.code}: {detail}") from None


class _HTTPEndpoint:
    def __init__(self, client: HTTPClient, route: str):
        self._client = client
        self._route = route

    def create(self, **kwargs: Any) -> dict:
        return self._client.post(self._route, kwargs)


class _HTTPChat:
    def __init__(self, client: HTTPClient):
        self.completions = _HTTPEndpoint(client, "/chat/completions")


# -------------------------------------------------------------- smolagents
def save_smolagents_run(agent_or_steps: Any, path: str | os.PathLike, *, run_id: str | None = None,
                        success: bool | None = None, question: str | None = None, answer: Any = None,
                        gold: str | None = None, dataset: str | None = None, model: str | None = None,
                        metadata: dict | None = None) -> str:
    """Append one smolagents run to a JSONL file (the ``smolagents`` format); returns its id.

    Parameters
    ----------
    agent_or_steps : object or list of dict
        A smolagents agent (its ``memory.get_full_steps()`` is saved, with each model call's raw response)
        or that list of steps.
    path : str or path-like
        The JSONL file (appended to; parent folders are created).
    run_id : str, optional
        The run's id (default: a new uuid).
    success : bool, optional
        The outcome label.
    question, gold, dataset, model : str, optional
        The run's metadata columns.
    answer : object, optional
        The final answer (a non-text answer is stored as JSON text).
    metadata : dict, optional
        Free-form metadata.

    Returns
    -------
    str
        The run's id.

    Examples
    --------
    >>> import os, random, tempfile
    >>> import htc_core as htc
    >>> from htc_core.collect import save_smolagents_run
    >>> from htc_core.synthetic import make_call
    >>> raw = make_call(random.Random(0), "r", 0, n_tokens=5, k=3)["response"]
    >>> steps = [{"step_number": 1, "model_output_message": {"role": "assistant", "content": "4", "raw": raw}}]
    >>> path = os.path.join(tempfile.mkdtemp(), "smolagents.jsonl")
    >>> save_smolagents_run(steps, path, run_id="run-1", success=True, question="2+2?", answer=4)
    'run-1'
    >>> ts, report = htc.load(path)
    >>> report.formats[path], ts, ts.meta.loc[0, "answer"]
    ('smolagents', TraceSet(trajectories=1, steps=1, tokens=5, k=3), '4')
    """
    if hasattr(agent_or_steps, "memory"):
        steps = agent_or_steps.memory.get_full_steps()
    else:
        steps = list(agent_or_steps)
    if not steps:
        raise ValueError("the run has no steps (did the agent run?)")
    rid = run_id or uuid.uuid4().hex
    rec: dict[str, Any] = {"id": rid, "framework": "smolagents"}
    for k, v in (("success", success), ("question", question), ("gold", gold), ("dataset", dataset),
                 ("model", model)):
        if v is not None:
            rec[k] = v
    if answer is not None:
        rec["answer"] = answer if isinstance(answer, str) else json.dumps(to_jsonable(answer), default=str)
    if metadata:
        rec["metadata"] = metadata
    rec["steps"] = steps
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "ab") as fh:
        fh.write(_dumps(rec) + b"\n")
    return rid
