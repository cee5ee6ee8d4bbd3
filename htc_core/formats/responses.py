"""OpenAI Responses API: ``output[].content[type=output_text].logprobs[]``.

One response is one step: the logprobs of all its ``output_text`` parts, in
order (request them with ``include=["message.output_text.logprobs"]`` and
``top_logprobs=k``). Each logprob entry has the Chat Completions shape
``{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}``.
Containers are those of ``openai-chat`` (see ``containers``: a ``.json``
array of responses is one trajectory; JSONL holds one trajectory per line).
Parsing a response lives in ``shapes`` (``parse_responses_api``).
"""

from __future__ import annotations

import os
from typing import Any

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from .containers import ContainerReader
from .inputs import Inputs
from .shapes import is_responses_api

__all__ = ["read", "read_file"]

NAME = "responses"

_READER = ContainerReader(NAME, is_responses_api, "Responses API objects (output[].content[].logprobs)")
sniff = _READER.sniff


def read(paths: Inputs, *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read files (or folders) of Responses API objects; returns (trace set, load report).

    Every container of :mod:`htc_core.formats.containers` is accepted; a response without logprobs is dropped
    with a warning, a malformed one rejects its trajectory with file, line, field, value and reason, and the
    other trajectories are still read.

    Parameters
    ----------
    paths : str, path or iterable of them
        Files and folders (a folder is searched recursively for files named like ``formats.SUFFIXES``).
    defaults : dict, optional
        Metadata filled in where a trajectory has none (e.g. ``{"dataset": "mine"}``).
    report : LoadReport, optional
        A report to add to (a new one by default).

    Returns
    -------
    ts : TraceSet
        The trajectories (one step per response).
    report : LoadReport
        Counts and problems.

    Examples
    --------
    >>> from htc_core.formats import responses
    >>> ts, report = responses.read("tests/fixtures/formats/responses.json")
    >>> ts.ids.tolist(), ts.steps_per_trajectory.tolist(), ts.n_tokens, ts.k
    (['responses'], [2], 19, 5)
    """
    return _READER.read(paths, defaults=defaults, report=report)


def read_file(path: str | os.PathLike, *, builder: TraceSetBuilder, report: LoadReport,
              defaults: dict | None = None, **_: Any) -> None:
    """Read one file of Responses API objects into ``builder``.

    The reader protocol of every format (``htc_core.formats.READERS``): the trajectories go to ``builder``,
    every problem to ``report``.

    Parameters
    ----------
    path : str or path
        The file (``.json``, ``.jsonl``, or either gzip-compressed).
    builder : TraceSetBuilder
        Where the trajectories go.
    report : LoadReport
        Where the problems go.
    defaults : dict, optional
        Metadata filled in where a trajectory has none.
    **_
        Other readers' options (ignored).

    Returns
    -------
    None
        The trajectories are in ``builder``.

    Examples
    --------
    >>> from htc_core.formats import responses
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> responses.read_file("tests/fixtures/formats/responses.json", builder=builder, report=report)
    >>> ts = builder.build()
    >>> ts.meta.loc[0, "model"], report.rejected
    ('SmolLM2-135M-Instruct', 0)
    """
    _READER.read_file(path, builder=builder, report=report, defaults=defaults)
