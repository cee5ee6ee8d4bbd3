"""Input formats: one reader per format, each returning (TraceSet, LoadReport).

``load`` is the single entry point used by the CLI, the store and the pages.
With ``format="auto"`` (the default) the format is detected per file from its
name and its first values; a file no reader accepts, or more than one does,
is reported with the formats tried and why each failed, and the other files
are still read.

Formats (``READERS``):

============== ===========================================================
native         htc-trace JSONL v1 (DESIGN.md section 2)
openai-chat    Chat Completions responses, a trajectory per .json array or JSONL line
openai-calllog JSONL, one logged LLM call per line, grouped by a trajectory id
responses      OpenAI Responses API objects (output[].content[].logprobs)
completions    legacy /v1/completions (OpenAI, llama.cpp, vLLM)
smolagents     ``agent.memory.get_full_steps()`` JSON
atif           Harbor ATIF trajectories (steps[].metrics.logprobs)
otel           OpenTelemetry spans: OTLP JSON (Collector file exporter) or a Phoenix
               / OpenInference spans export (Parquet or JSONL); a trajectory per trace
============== ===========================================================
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from ..report import LoadReport
from ..scratch import scratch_dir
from ..traces import TraceSet, TraceSetBuilder
from . import atif, completions, native, openai_calllog, openai_chat, otel, responses, smolagents
from . import labels as _labels
from .inputs import SUFFIXES, Sample, read_files, take_sample
from .jsonio import READ_ERRORS, container_kind, read_error_reason

READERS = {
    "native": native,
    "openai-chat": openai_chat,
    "openai-calllog": openai_calllog,
    "responses": responses,
    "completions": completions,
    "smolagents": smolagents,
    "atif": atif,
    "otel": otel,
}


def _native_sniff(sample: Sample) -> str | None:
    if sample.kind != "jsonl":
        return f"not JSONL (a {sample.kind} document)"
    if not sample.objs:
        return sample.why_empty or "no valid line"
    obj = sample.objs[0]
    if not isinstance(obj, dict):
        return "lines are not JSON objects"
    steps = obj.get("steps")
    if not (isinstance(steps, list) and "id" in obj):
        return "no 'id' and 'steps' keys"
    if not steps or (isinstance(steps[0], dict) and isinstance(steps[0].get("logprobs"), list)):
        return None
    return "steps carry no 'logprobs' list"


def _sniffer(name: str):
    return _native_sniff if name == "native" else READERS[name].sniff


def detect(path: str | os.PathLike) -> tuple[str | None, str]:
    """Which format a file holds.

    Parameters
    ----------
    path : str or path
        The file.

    Returns
    -------
    format : str or None
        The format's name, or None when no single format fits.
    why : str
        ``""``, or why no single format fits (each format tried and why it failed).

    Examples
    --------
    >>> import htc_core as htc
    >>> htc.detect("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    ('native', '')
    """
    path = Path(path)
    if path.name.lower().endswith(otel.PARQUET_SUFFIXES):
        why = otel.sniff_parquet(path)
        return ("otel", "") if why is None else (None, f"unknown format (otel: {why}); pass --format to choose one")
    matches: dict[str, int] = {}
    reasons: dict[str, str] = {}
    kind = []

    def visit(obj: Any, line: int) -> None:  # each sampled value once, then dropped
        one = Sample(kind[0], [obj], [line])
        for name in READERS:
            # a format matches when any of the first values fits it (the first lines may be events or broken)
            if name not in matches:
                why = _sniffer(name)(one)
                if why is None:
                    matches[name] = line
                else:
                    reasons.setdefault(name, why)

    try:
        kind.append(container_kind(path))
        sample = take_sample(path, visit=visit)
    except READ_ERRORS as e:
        return None, read_error_reason(e)
    if not sample.count:
        return None, f"unknown format: no JSON value could be read ({sample.why_empty})"
    if len(matches) == 1:
        return next(iter(matches)), ""
    if not matches:
        tried = "; ".join(f"{n}: {reasons.get(n, '?')}" for n in READERS)
        if sample.count > 1:
            tried += f" (reasons given for the first value; {sample.count} values checked)"
        return None, f"unknown format (tried {tried}); pass --format to choose one"
    which = ", ".join(f"{n} (line {ln})" for n, ln in matches.items())
    return None, f"ambiguous format: the file looks like {which}; pass --format to choose one"


def load(inputs: str | os.PathLike | Iterable[str | os.PathLike], *, format: str = "auto",
         defaults: dict | None = None, labels: str | os.PathLike | None = None, group_by: str | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read trace files or folders of any supported format into one columnar trace set.

    A file no reader accepts, or a bad record inside a file, is reported (file, line, field, value) in the
    :class:`LoadReport` and the other files and records are still read.

    Parameters
    ----------
    inputs : str, path or iterable of them
        Files and folders (folders are read recursively, ``.gz`` files decompressed).
    format : str, default="auto"
        ``"auto"`` detects the format per file; else one of ``READERS`` (``native``, ``openai-chat``,
        ``openai-calllog``, ``responses``, ``completions``, ``smolagents``, ``atif``, ``otel``).
    defaults : dict, optional
        Metadata filled in where a record has none (e.g. ``{"dataset": "mine"}``).
    labels : str or path, optional
        A CSV/JSONL file of success labels joined by trajectory id.
    group_by : str, optional
        The trajectory-id key of ``openai-calllog`` lines; for ``otel``, ``"session"`` groups the traces of
        one ``session.id`` into one trajectory (default: one per trace).
    report : LoadReport, optional
        A report to add to (a new one by default).

    Returns
    -------
    ts : TraceSet
        Every trajectory read.
    report : LoadReport
        Counts and problems of the load.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, report = htc.load("sample_runs/units/")
    >>> len(ts), report.rejected
    (500, 0)
    """
    if format not in ("auto", *READERS):
        raise ValueError(f"unknown format {format!r}; valid formats: auto, {', '.join(READERS)}")

    def read_one(path: Path, builder: TraceSetBuilder, report: LoadReport) -> None:
        fmt = format
        if fmt == "auto":
            fmt, why = detect(path)
            if fmt is None:
                report.error(str(path), None, why)
                return
        report.formats[str(path)] = fmt
        READERS[fmt].read_file(path, builder=builder, report=report, defaults=defaults, group_by=group_by)

    ts, report = read_files(inputs, read_one, report=report, skip=labels)
    if labels is not None:
        ts, _ = _labels.join(ts, labels, report=report)
    return ts, report


def load_bytes(data: bytes, *, name: str = "upload.jsonl", format: str = "auto", defaults: dict | None = None,
               labels: str | os.PathLike | None = None, group_by: str | None = None,
               report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """:func:`load` for a file held in memory (an upload).

    Parameters
    ----------
    data : bytes
        The file's content (gzip-compressed or not).
    name : str, default="upload.jsonl"
        The file name: its suffix (``.jsonl``, ``.json``, ``.gz``) drives the detection; it is shown in the
        report and recorded as each trajectory's ``source``.
    format, defaults, labels, group_by, report
        As :func:`load`.

    Returns
    -------
    ts : TraceSet
        The runs read from the bytes, as :func:`load` returns them.
    report : LoadReport
        What was read, skipped and why, under the file name ``name``.

    Examples
    --------
    >>> import htc_core as htc
    >>> line = b'{"id": "r1", "success": true, "steps": [{"logprobs": [-0.1, -0.5]}]}'
    >>> ts, report = htc.load_bytes(line, name="mine.jsonl")
    >>> ts.ids.tolist(), ts.labels.tolist()
    (['r1'], [1.0])
    """
    suffix = next((s for s in sorted(SUFFIXES, key=len, reverse=True) if name.lower().endswith(s)), ".jsonl")
    with scratch_dir() as tmp:  # removed on every path; left-overs of a killed process go at the next start
        base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name).name) or "upload"
        path = tmp / (base if base.lower().endswith(suffix) else base + suffix)  # ids may use the stem
        path.write_bytes(data)
        sub = LoadReport()
        d = dict(defaults or {})
        d.setdefault("source", name)
        ts, sub = load(path, format=format, defaults=d, labels=labels, group_by=group_by, report=sub)
    tmp_name = str(path)
    for p in sub.problems:
        if p.file == tmp_name:
            p.file = name
    sub.files = [name if f == tmp_name else f for f in sub.files]
    sub.formats = {name if f == tmp_name else f: fmt for f, fmt in sub.formats.items()}
    if report is not None:
        report.merge(sub)
        return ts, report
    return ts, sub


def iter_chunks(inputs: str | os.PathLike | Iterable[str | os.PathLike], *, max_trajectories: int = 50_000,
                format: str = "auto", defaults: dict | None = None, labels: str | os.PathLike | None = None,
                group_by: str | None = None, report: LoadReport | None = None):
    """The trajectories of ``inputs`` as trace-set chunks of bounded size.

    The chunks, in order, hold exactly what ``load(inputs, ...)`` returns (same trajectories, ids, labels
    and problems); htc-trace JSONL is streamed line by line, other formats one file at a time.

    Parameters
    ----------
    inputs : str, path or iterable of them
        As :func:`load`.
    max_trajectories : int, default=50_000
        The most trajectories in one chunk.
    format, defaults, labels, group_by, report
        As :func:`load`.

    Returns
    -------
    Iterable of TraceSet
        Iterate over it, then read its ``report`` (a :class:`LoadReport`).

    Examples
    --------
    >>> import htc_core as htc
    >>> chunks = htc.iter_chunks("sample_runs/units/", max_trajectories=200)
    >>> [len(c) for c in chunks]
    [200, 200, 100]
    >>> chunks.report.trajectories_read
    500
    """
    from .chunks import ChunkReader

    return ChunkReader(inputs, readers=READERS, detect=detect, format=format, defaults=defaults, labels=labels,
                       group_by=group_by, max_trajectories=max_trajectories, report=report)


__all__ = ["load", "iter_chunks", "load_bytes", "detect", "READERS", "SUFFIXES", "native", "openai_chat", "openai_calllog", "responses",
           "completions", "smolagents", "atif", "otel"]
