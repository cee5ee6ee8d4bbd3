"""Legacy completions: OpenAI ``/v1/completions``, llama.cpp and vLLM.

One response is one step; its logprobs live under ``choices[0].logprobs``::

    {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}, ...], "text_offset": [...]}

Containers (how responses form trajectories) are the same as for
``openai-chat`` (see ``containers``): a ``.json`` array of responses is one
trajectory; JSONL holds one trajectory per line (a list of responses, or an
object with ``id`` and ``responses``). vLLM quirks: -9999 means -inf (a
missing alternative); the k+1 alternatives it may list are de-duplicated by
construction (a dict keyed by token) and sorted. Parsing a response lives in
``shapes`` (``parse_completion``).
"""

from __future__ import annotations

import os
from typing import Any

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from .containers import ContainerReader
from .inputs import Inputs
from .shapes import is_completion

__all__ = ["read", "read_file"]

NAME = "completions"

_READER = ContainerReader(NAME, is_completion, "legacy completions responses (choices[].logprobs.token_logprobs)")
sniff = _READER.sniff


def read(paths: Inputs, *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read files (or folders) of legacy completions responses; returns (trace set, load report).

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
    >>> from htc_core.formats import completions
    >>> ts, report = completions.read("tests/fixtures/formats/completions.jsonl")
    >>> ts.ids.tolist(), ts.steps_per_trajectory.tolist(), ts.n_tokens, ts.k
    (['c-1', 'c-2'], [2, 2], 32, 5)
    """
    return _READER.read(paths, defaults=defaults, report=report)


def read_file(path: str | os.PathLike, *, builder: TraceSetBuilder, report: LoadReport,
              defaults: dict | None = None, **_: Any) -> None:
    """Read one file of legacy completions responses into ``builder``.

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
    >>> from htc_core.formats import completions
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> completions.read_file("tests/fixtures/formats/completions.jsonl", builder=builder, report=report)
    >>> ts = builder.build()
    >>> len(ts), ts.meta.loc[0, "model"], report.rejected
    (2, 'SmolLM2-135M-Instruct', 0)
    """
    _READER.read_file(path, builder=builder, report=report, defaults=defaults)
