"""OpenAI Chat Completions responses: ``choices[].logprobs.content[].{token, logprob, bytes, top_logprobs[]}``.

A trajectory is a ``.json`` array of responses (one trajectory per file), a
``.json`` object ``{"id": ..., "responses": [...], "success": ...}`` or a
single response, or JSONL with one trajectory per line (see ``containers``
for every container and wrapper accepted). A streamed call (a list of
``chat.completion.chunk`` objects) is reassembled into one step.

Parsing a response lives in ``shapes`` (``parse_chat``, ``parse_chunks``),
shared with the other OpenAI-shaped readers.
"""

from __future__ import annotations

import os
from typing import Any

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from .containers import ContainerReader
from .inputs import Inputs
from .shapes import is_chat

__all__ = ["read", "read_file"]

NAME = "openai-chat"

_READER = ContainerReader(NAME, is_chat, "Chat Completions responses (choices[].logprobs.content)")
sniff = _READER.sniff


def read(paths: Inputs, *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read files (or folders) of Chat Completions responses; returns (trace set, load report).

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
    >>> from htc_core.formats import openai_chat
    >>> ts, report = openai_chat.read("tests/fixtures/formats/chat_trajectories.jsonl")
    >>> len(ts), ts.ids.tolist(), ts.steps_per_trajectory.tolist(), ts.k
    (4, ['q-paris', 'q-tokyo', 'q-mars', 'q-gold'], [2, 2, 2, 2], 5)
    >>> ts.meta.loc[0, "question"]
    'What is the capital of France?'
    """
    return _READER.read(paths, defaults=defaults, report=report)


def read_file(path: str | os.PathLike, *, builder: TraceSetBuilder, report: LoadReport,
              defaults: dict | None = None, **_: Any) -> None:
    """Read one file of Chat Completions responses into ``builder``.

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
    >>> from htc_core.formats import openai_chat
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> openai_chat.read_file("tests/fixtures/formats/chat_run.json", builder=builder, report=report)
    >>> ts = builder.build()
    >>> ts.ids.tolist(), ts.steps_per_trajectory.tolist(), ts.n_tokens
    (['chat_run'], [2], 19)
    """
    _READER.read_file(path, builder=builder, report=report, defaults=defaults)
