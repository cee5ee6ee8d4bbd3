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
============== ===========================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from . import _shared, atif, common, completions, native, openai_calllog, openai_chat, responses, smolagents

READERS = {
    "native": native,
    "openai-chat": openai_chat,
    "openai-calllog": openai_calllog,
    "responses": responses,
    "completions": completions,
    "smolagents": smolagents,
    "atif": atif,
}

#: file names searched for inside directories
SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json", ".json.gz")


@dataclass
class Sample:
    """The first values of a file, for format detection."""

    kind: str  # 'jsonl', 'json-array' or 'json-object'
    objs: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    why_empty: str | None = None


def take_sample(path: Path, *, max_values: int = 200, max_bytes: int = 8 << 20) -> Sample:
    kind = _shared.container_kind(path)
    s = Sample(kind)
    if kind == "json-array":
        it = _shared.iter_json_array(path)
        try:
            for line, el in it:
                s.objs.append(el)
                s.lines.append(line)
                break
        except _shared.ParseError as e:
            s.why_empty = f"line {e.line}: {e.reason}"
        finally:
            it.close()
    elif kind == "json-object":
        try:
            s.objs.append(_shared.read_document(path))
            s.lines.append(1)
        except _shared.ParseError as e:
            s.why_empty = f"line {e.line}: {e.reason}" if e.line else e.reason
    else:
        seen = 0
        first_err = None
        try:
            for no, raw in common.iter_lines(path):
                seen += len(raw)
                if raw.strip():
                    try:
                        s.objs.append(_shared.loads(raw))
                        s.lines.append(no)
                    except _shared.ParseError as e:
                        first_err = first_err or f"line {no}: {e.reason}"
                if len(s.objs) >= max_values or seen >= max_bytes:
                    break
        except _shared.READ_ERRORS as e:
            if not s.objs:
                raise
            # a cut-short or corrupt .gz: detect from what was read; the reader reports the error
            first_err = first_err or _shared.read_error_reason(e)
        if not s.objs:
            s.why_empty = first_err or "the file is empty"
    return s


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
    """(format name, '') or (None, why no single format fits, listing each format tried)."""
    path = Path(path)
    try:
        sample = take_sample(path)
    except _shared.READ_ERRORS as e:
        return None, _shared.read_error_reason(e)
    if not sample.objs:
        return None, f"unknown format: no JSON value could be read ({sample.why_empty})"
    matches: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for name in READERS:
        sniff = _sniffer(name)
        # a format matches when any of the first values fits it (the first lines may be events or broken)
        for obj, line in zip(sample.objs, sample.lines):
            why = sniff(Sample(sample.kind, [obj], [line]))
            if why is None:
                matches[name] = line
                break
            reasons.setdefault(name, why)
    if len(matches) == 1:
        return next(iter(matches)), ""
    if not matches:
        tried = "; ".join(f"{n}: {reasons.get(n, '?')}" for n in READERS)
        if len(sample.objs) > 1:
            tried += f" (reasons given for the first value; {len(sample.objs)} values checked)"
        return None, f"unknown format (tried {tried}); pass --format to choose one"
    which = ", ".join(f"{n} (line {ln})" for n, ln in matches.items())
    return None, f"ambiguous format: the file looks like {which}; pass --format to choose one"


def load(inputs: str | os.PathLike | Iterable[str | os.PathLike], *, format: str = "auto",
         defaults: dict | None = None, labels: str | os.PathLike | None = None, group_by: str | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read files or directories in ``format`` ('auto' detects it per file).

    ``labels``: a CSV/JSONL file joined by trajectory id (see ``labels``).
    ``group_by``: the trajectory-id key of openai-calllog lines.
    """
    if format not in ("auto", *READERS):
        raise ValueError(f"unknown format {format!r}; valid formats: auto, {', '.join(READERS)}")
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    report = report if report is not None else LoadReport()
    files, errors = common.expand_inputs(inputs, SUFFIXES)
    for e in errors:
        where, _, why = e.partition(": ")
        report.error(where, None, why)
    if labels is not None:
        lab = Path(labels).resolve()
        files = [f for f in files if f.resolve() != lab]
    builder = TraceSetBuilder()
    for f in files:
        file = str(f)
        report.files.append(file)
        fmt = format
        if fmt == "auto":
            fmt, why = detect(f)
            if fmt is None:
                report.error(file, None, why)
                continue
        try:
            if fmt == "native":
                before = report.lines_read
                native.read_stream(common.iter_lines(f), file=file, builder=builder, report=report,
                                   defaults=defaults)
                if report.lines_read == before:
                    report.error(file, None, "file is empty")
            else:
                READERS[fmt].read_file(f, builder=builder, report=report, defaults=defaults, group_by=group_by)
        except _shared.READ_ERRORS as e:
            report.error(file, None, _shared.read_error_reason(e))
    ts = builder.build()
    if labels is not None:
        from . import labels as labels_mod

        ts, _ = labels_mod.join(ts, labels, report=report)
    return ts, report


def load_bytes(data: bytes, *, name: str = "upload.jsonl", format: str = "auto", defaults: dict | None = None,
               labels: str | os.PathLike | None = None, group_by: str | None = None,
               report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """``load`` for a file held in memory (an upload). ``name`` gives the suffix used for detection
    (``.jsonl``, ``.json``, ``.gz``) and the file name shown in the report and in ``source``."""
    import re
    import tempfile

    suffix = next((s for s in sorted(SUFFIXES, key=len, reverse=True) if name.lower().endswith(s)), ".jsonl")
    with tempfile.TemporaryDirectory(prefix="htc-upload-") as tmp:
        base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name).name) or "upload"
        path = Path(tmp) / (base if base.lower().endswith(suffix) else base + suffix)  # ids may use the stem
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
    if report is not None:
        report.merge(sub)
        return ts, report
    return ts, sub


__all__ = ["load", "load_bytes", "detect", "READERS", "SUFFIXES", "native", "openai_chat", "openai_calllog", "responses",
           "completions", "smolagents", "atif"]
