"""Record agent runs with logprobs, so they can be calibrated later.

- ``Recorder(path, top_logprobs=5).wrap(client)``: wraps any OpenAI-compatible
  client (the ``openai`` package's ``OpenAI``, or any object with
  ``.chat.completions.create``; ``.completions.create`` and
  ``.responses.create`` are wrapped too when present). Every call is made with
  ``logprobs=True, top_logprobs=k`` (unless the caller set them) and written as
  one line of an ``openai-calllog`` JSONL file with the trajectory id and the
  step number; streamed calls are recorded as their list of chunks.
- ``Recorder.trajectory(id, question=...)``: a context manager that sets the
  current trajectory (a context variable, so threads and asyncio tasks each
  keep their own); ``Recorder.outcome(success=..., answer=..., gold=...)``
  writes the labels of the current trajectory.
- ``save_smolagents_run(agent, path, ...)``: appends a smolagents run
  (``agent.memory.get_full_steps()``, raw responses included) as one JSONL
  line the ``smolagents`` reader reads.
- ``HTTPClient(base_url)``: a dependency-free client for any OpenAI-compatible
  server (``.chat.completions.create`` / ``.completions.create``), returning
  plain dicts.

- ``Recorder(path, monitor=Monitor(model, threshold=...))`` and ``smolagents_step_callback(monitor)``:
  the calibrated confidence while the agent runs (``htc_core.collect.live``).

See ``htc_core/collect/README.md`` for recipes (smolagents, llama.cpp, vLLM).
"""

from .recorder import HTTPClient, Recorder, save_smolagents_run, to_jsonable


def __getattr__(name: str):
    if name in ("LowConfidence", "smolagents_step_callback", "LiveMonitors"):   # loads numba: on first use only
        from . import live

        return getattr(live, name)
    raise AttributeError(f"module 'htc_core.collect' has no attribute {name!r}")


__all__ = ["Recorder", "HTTPClient", "save_smolagents_run", "to_jsonable", "smolagents_step_callback",
           "LowConfidence"]
