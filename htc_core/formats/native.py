"""htc-trace JSONL v1: one trajectory per line (DESIGN.md section 2).

Reading streams the file line by line: memory is bounded by the output
arrays, never by the file size. Every bad line is reported (file, line,
field, value, reason) and every good line is kept.
"""

from __future__ import annotations

import json
import os
from itertools import chain
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

import numpy as np

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder, TrajectoryRecord
from .answers import explicit_answer
from .common import VLLM_NEG_INF, FieldError, optional_text, success_label, token_strings, verbalized
from .inputs import JSONL_SUFFIXES, expand_inputs
from .jsonio import READ_ERRORS, iter_lines, loads
from .logprobs import alternatives, chosen_logprobs
from .records import add_record, guarded
from .stepdetail import native_detail
from .typedjson import decode_steps, release_slab
from .walk import iter_values

NAME = "native"
FORMAT_VERSION = 1

__all__ = ["read", "read_bytes", "read_file", "write", "FORMAT_VERSION"]


def parse_trajectory(obj: Any, *, file: str, line: int | None, report: LoadReport,
                     defaults: dict | None = None, no_bools: bool = False) -> TrajectoryRecord | None:
    """Validate one decoded htc-trace object; report and return None when it is unusable.

    A trajectory whose arrays are all clean (the common case) is validated whole-array at a time with numpy
    (``fast_steps``); any other goes through the per-value checks, which name the first bad value exactly.
    ``no_bools``: the caller knows the raw text holds no ``true``/``false`` inside the arrays.
    """
    defaults = defaults or {}
    tid = _trajectory_id(obj, file, line, report)
    if tid is None:
        return None
    steps = obj.get("steps")
    if steps is None:
        report.error(file, line, "missing 'steps'", field="steps", trajectory_id=tid)
        return None
    if not isinstance(steps, list):
        report.error(file, line, f"'steps' must be a list, got {type(steps).__name__}", field="steps",
                     value=steps, trajectory_id=tid)
        return None
    rec = TrajectoryRecord(id=tid, steps_logprob=[], steps_top=[], steps_name=[], steps_text=[], steps_tokens=[])
    try:
        rec.success = success_label(obj.get("success"))
        clipped, dropped = (0, 0) if fast_steps(rec, steps, no_bools) else _add_steps(rec, steps)
    except FieldError as e:
        report.error(file, line, e.reason, field=e.field, value=e.value, trajectory_id=tid, has_value=e.has_value)
        return None
    if not rec.steps_logprob and rec.flat_logprob is None:
        why = "no steps" if not steps else f"all {len(steps)} steps are empty (no tokens)"
        report.error(file, line, f"trajectory has {why}", field="steps", trajectory_id=tid)
        return None
    report.empty_steps_dropped += dropped
    if dropped:
        report.warn(file, line, f"{dropped} empty step(s) dropped", field="steps", trajectory_id=tid)
    report.clipped_values += clipped
    if clipped:
        report.warn(file, line, f"{clipped} tiny positive logprob(s) clipped to 0", trajectory_id=tid)
    _copy_fields(rec, obj, defaults, file=file, line=line, report=report)
    rec.steps_detail = native_detail(steps, report, file, line, tid)
    return rec


def fast_steps(rec: TrajectoryRecord, steps: list, no_bools: bool = False) -> bool:
    """Validate the steps of a clean trajectory whole-array at a time into ``rec``; False (``rec`` untouched)
    when anything is unusual (a non-number, a value > 0, -inf or the -9999 sentinel, NaN, ragged or missing
    alternatives, an empty step, odd tokens), and the per-value path then decides and reports exactly.

    Every check the per-value path makes holds for what this accepts, and the arrays are the same: logprobs
    finite in (-9999, 0], alternatives the same k for every token, sorted descending. A bool among numbers
    becomes a float in numpy, so unless ``no_bools`` the element types are checked too (one C-level pass).
    """
    try:
        lps = [st["logprobs"] for st in steps]
        tops = [st.get("top_logprobs") for st in steps]
    except (TypeError, KeyError, AttributeError):
        return False
    if not steps or not set(map(type, lps)) <= {list}:
        return False
    lens = list(map(len, lps))
    if 0 in lens:
        return False
    lp = _clean(lps[0] if len(lps) == 1 else list(chain.from_iterable(lps)), no_bools)
    if lp is None or lp.ndim != 1:
        return False
    top = None
    if not all(t is None for t in tops):
        if not set(map(type, tops)) <= {list} or list(map(len, tops)) != lens:
            return False
        rows = tops[0] if len(tops) == 1 else list(chain.from_iterable(tops))
        if not set(map(type, rows)) <= {list}:
            return False
        k = len(rows[0])
        if k == 0 or len(set(map(len, rows))) != 1:
            return False
        top = _clean(list(chain.from_iterable(rows)), no_bools)
        if top is None or top.shape != (len(rows) * k,):
            return False
        top = top.reshape(len(rows), k)
    return _take_clean(rec, steps, lp, top, lens)


def typed_steps(rec: TrajectoryRecord, steps: list[dict], lp: np.ndarray, top: np.ndarray | None,
                lens: list[int]) -> bool:
    """``fast_steps`` for steps whose numbers ``typedjson.decode_steps`` already holds as arrays (the logprobs of
    all steps, their [tokens, k] alternatives or None, the tokens per step): the same checks on whole arrays."""
    numbers = lp.base if top is not None and lp.base is not None and top.base is lp.base else None
    if numbers is not None and numbers.size == lp.size + top.size:   # one array of the line: one pass
        if not _in_range(numbers):
            return False
    elif not _in_range(lp) or (top is not None and not _in_range(top)):
        return False
    return _take_clean(rec, steps, lp, top, lens)


def _in_range(arr: np.ndarray) -> bool:
    """Every value finite in (-9999, 0] (False for NaN too)."""
    return bool(arr.min() > VLLM_NEG_INF and arr.max() <= 0)


def _take_clean(rec: TrajectoryRecord, steps: list, lp: np.ndarray, top: np.ndarray | None, lens: list[int]
                ) -> bool:
    """The shared tail of ``fast_steps`` / ``typed_steps``: token checks, then the arrays into ``rec``."""
    toks = [st.get("tokens") for st in steps]
    if toks.count(None) != len(toks) or any("top_tokens" in st for st in steps):
        for st, t, n in zip(steps, toks, lens):
            if t is not None and (type(t) is not list or len(t) != n or not set(map(type, t)) <= {str}):
                return False
            tt = st.get("top_tokens")
            if tt is not None and (type(tt) is not list or len(tt) != n):
                return False
    if top is not None and _unsorted(top):  # APIs list them sorted: sort only when they are not
        top = -np.sort(-top, axis=1)
    rec.flat_logprob, rec.flat_top, rec.step_lengths = lp, top, np.array(lens, dtype=np.int64)
    rec.steps_tokens = toks
    names = [st.get("name") for st in steps]
    if not set(map(type, names)) <= {str}:   # the usual case: every name a string, kept as it is ("" stays "")
        names = [optional_text(v) or "" for v in names]
    rec.steps_name = names
    texts = [st.get("text") for st in steps]
    if not set(map(type, texts)) <= _STR_OR_NONE:
        texts = [optional_text(v) for v in texts]
    rec.steps_text = texts
    return True


_STR_OR_NONE = {str, type(None)}


def _unsorted(top: np.ndarray) -> bool:
    """True when a row of the [tokens, k] alternatives is not in descending order (NaN compares as sorted).

    One comparison of the flat array with itself shifted by one, the pairs that straddle two rows masked out:
    half the CPU of ``(top[:, 1:] > top[:, :-1]).any()`` over strided views (issue 29: 0.010 s against 0.019 s
    on the 112 MB bench file, 3,000 calls)."""
    k = top.shape[1]
    flat = top.reshape(-1)
    rising = flat[1:] > flat[:-1]
    rising[k - 1::k] = False  # the last of one row against the first of the next
    return bool(rising.any())


def _clean(values: list, no_bools: bool) -> np.ndarray | None:
    """A float array of a flat list when it holds only numbers in (-9999, 0] (else None).

    Measured against ``np.fromiter`` over the unflattened lists (issue 29): fromiter takes a string such as
    "-1" as a number and None as NaN, so it needs the same type pass and saves nothing; this stays the hot path.
    """
    small = len(values) < 4096  # small: a C-level type pass then a typed conversion is the cheaper way
    if (small or not no_bools) and not set(map(type, values)) <= {float, int}:
        return None
    try:
        arr = np.array(values, dtype=np.float64) if small else np.array(values)
    except (ValueError, TypeError, OverflowError):
        return None
    if arr.dtype.kind not in "fi" or arr.size == 0:  # a string, None or a huge integer gives another kind
        return None
    arr = arr.astype(np.float64, copy=False)
    lo, hi = arr.min(), arr.max()
    if not (lo > VLLM_NEG_INF and hi <= 0):  # False for NaN too
        return None
    return arr


def bools_outside_arrays(raw: bytes, obj: Any) -> bool:
    """True when the raw text cannot hold a ``true``/``false`` literal other than the ``success`` label: then
    no array of the record holds a bool (strings that contain those words only make this False)."""
    n = raw.count(b"true") + raw.count(b"false")
    return n == 0 or (n == 1 and isinstance(obj, dict) and isinstance(obj.get("success"), bool))


def _trajectory_id(obj: Any, file: str, line: int | None, report: LoadReport) -> str | None:
    """The id of a trajectory object, or None (reported) when it is not an object with a usable id."""
    if not isinstance(obj, dict):
        report.error(file, line, f"a trajectory must be a JSON object, got {type(obj).__name__}", value=obj)
        return None
    tid = obj.get("id")
    if tid is None or (isinstance(tid, str) and not tid.strip()):
        report.error(file, line, "missing trajectory id", field="id", value=tid, has_value="id" in obj)
        return None
    if not isinstance(tid, (str, int)) or isinstance(tid, bool):
        report.error(file, line, f"id must be a string, got {type(tid).__name__}", field="id", value=tid)
        return None
    return str(tid)


def _add_steps(rec: TrajectoryRecord, steps: list) -> tuple[int, int]:
    """Validate the steps into ``rec``; returns (values clipped to 0, empty steps dropped)."""
    clipped = 0
    dropped = 0
    for si, step in enumerate(steps):
        f = f"steps[{si}]"
        if not isinstance(step, dict):
            raise FieldError(f, step, f"a step must be an object, got {type(step).__name__}")
        if "logprobs" not in step or step["logprobs"] is None:
            raise FieldError(f"{f}.logprobs", None, "missing (every step needs the chosen-token logprobs)",
                             has_value=False)
        lp, c1 = chosen_logprobs(step["logprobs"], f"{f}.logprobs")
        n = len(lp)
        top, c2 = alternatives(step.get("top_logprobs"), n, f"{f}.top_logprobs")
        toks = token_strings(step.get("tokens"), n, f"{f}.tokens")
        tt = step.get("top_tokens")
        if tt is not None and (not isinstance(tt, list) or len(tt) != n):
            raise FieldError(f"{f}.top_tokens", f"{len(tt) if isinstance(tt, list) else type(tt).__name__}",
                             f"must be a list with one entry per token ({n})")
        if n == 0:
            dropped += 1
            continue
        clipped += c1 + c2
        rec.steps_logprob.append(lp)
        rec.steps_top.append(top)
        rec.steps_tokens.append(toks)
        rec.steps_name.append(optional_text(step.get("name")) or "")
        rec.steps_text.append(optional_text(step.get("text")))
    return clipped, dropped


def _copy_fields(rec: TrajectoryRecord, obj: dict, defaults: dict, *, file: str, line: int | None,
                 report: LoadReport) -> None:
    """Trajectory-level fields: verbalized confidence, text fields (else the defaults), metadata, source."""
    vc, warn = verbalized(obj.get("verbalized_confidence"))
    if warn:
        report.warn(file, line, f"verbalized_confidence {warn}", field="verbalized_confidence",
                    value=obj.get("verbalized_confidence"), trajectory_id=rec.id)
    rec.verbalized_confidence = vc
    for key in ("dataset", "model", "framework", "question", "answer", "gold"):
        val = optional_text(explicit_answer(obj) if key == "answer" else obj.get(key))
        setattr(rec, key, val if val is not None else defaults.get(key))
    md = obj.get("metadata")
    rec.metadata = md if isinstance(md, dict) else ({} if md is None else {"value": md})
    rec.source = defaults.get("source", file)


def typed_record(raw: bytes, *, file: str, line: int | None, report: LoadReport,
                 defaults: dict | None = None) -> TrajectoryRecord | None:
    """The record of a plain line decoded straight to arrays (``typedjson``), or None, having reported nothing,
    when the line needs the general path (``parse_trajectory``), which then decides and reports exactly."""
    dec = decode_steps(raw)
    if dec is None:
        return None
    obj, lp, top, lens = dec
    tid = obj.get("id")
    if isinstance(tid, bool) or not (isinstance(tid, int) or (isinstance(tid, str) and tid.strip())):
        return None
    tid = str(tid)
    rec = TrajectoryRecord(id=tid, steps_logprob=[], steps_top=[], steps_name=[], steps_text=[], steps_tokens=[])
    try:
        rec.success = success_label(obj.get("success"))
    except FieldError:
        return None
    steps = obj["steps"]
    if not typed_steps(rec, steps, lp, top, lens):
        return None
    _copy_fields(rec, obj, defaults or {}, file=file, line=line, report=report)
    rec.steps_detail = native_detail(steps, report, file, line, tid)
    return rec


def iter_records(lines: Iterable[tuple[int, bytes]], *, file: str, report: LoadReport,
                 defaults: dict | None = None) -> Iterator[tuple[int, TrajectoryRecord]]:
    """Parse (line number, raw bytes) pairs; yield (line, record) for each usable line, report the others.

    A plain line is decoded straight to arrays (``typed_record``); any other goes through ``loads`` and
    ``parse_trajectory``, which report file, line, field and value."""
    def decode(no: int, raw: bytes) -> TrajectoryRecord | None:
        rec = typed_record(raw, file=file, line=no, report=report, defaults=defaults)
        if rec is None:
            obj = loads(raw)
            rec = parse_trajectory(obj, file=file, line=no, report=report, defaults=defaults,
                                   no_bools=bools_outside_arrays(raw, obj))
        return rec

    try:
        for no, rec in iter_values(lines, report, file, decode):
            if rec is not None:
                yield no, rec
    finally:
        release_slab()


def read_stream(lines: Iterable[tuple[int, bytes]], *, file: str, builder: TraceSetBuilder,
                report: LoadReport, defaults: dict | None = None) -> None:
    """Parse (line number, raw bytes) pairs into ``builder``.

    A repeated id inside one file is an error (the first is kept); an id that
    an earlier file already used is kept under ``id@file-stem`` with a warning,
    so that two runs over the same questions can be loaded together.
    """
    seen: set[str] = set()
    for no, rec in iter_records(lines, file=file, report=report, defaults=defaults):
        with guarded(report, file, no, what="line"):
            add_record(builder, rec, report, file, no, seen)


def read_file(path: str | os.PathLike, *, builder: TraceSetBuilder, report: LoadReport,
              defaults: dict | None = None, **_: Any) -> None:
    """Read one htc-trace JSONL file into ``builder`` (an empty file is reported).

    The reader protocol of every format (``htc_core.formats.READERS``): the trajectories go to ``builder``,
    every problem to ``report``. The file is streamed line by line; a bad line is reported (file, line, field,
    value) and the other lines are kept.

    Parameters
    ----------
    path : str or path
        The file (``.jsonl``, or ``.jsonl.gz`` decompressed on the fly).
    builder : TraceSetBuilder
        Where the trajectories go.
    report : LoadReport
        Where the problems go.
    defaults : dict, optional
        Metadata filled in where a line has none.
    **_
        Other readers' options (ignored).

    Returns
    -------
    None
        The trajectories are in ``builder``.

    Examples
    --------
    >>> from htc_core.formats import native
    >>> from htc_core.report import LoadReport
    >>> from htc_core.traces import TraceSetBuilder
    >>> builder, report = TraceSetBuilder(), LoadReport()
    >>> native.read_file("sample_runs/units/units_SmolLM2-135M-greedy.jsonl", builder=builder, report=report)
    >>> len(builder), report.lines_read
    (250, 250)
    """
    file = str(path)
    before = report.lines_read
    read_stream(iter_lines(Path(path)), file=file, builder=builder, report=report, defaults=defaults)
    if report.lines_read == before:
        report.error(file, None, "file is empty")


def read(paths: str | os.PathLike | Iterable[str | os.PathLike], *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read htc-trace JSONL files or directories of them; returns (trace set, load report).

    The native format (DESIGN.md section 2): one trajectory per line, ``id`` and ``steps[].logprobs``
    required. Files are streamed (memory is bounded by the output arrays); every bad line is reported (file,
    line, field, value, reason) and every good line is kept.

    Parameters
    ----------
    paths : str, path or iterable of them
        Files and folders (a folder is searched recursively for ``.jsonl``, ``.jsonl.gz`` and ``.ndjson`` files).
    defaults : dict, optional
        Metadata filled in where a line has none (e.g. ``{"dataset": "mine"}``).
    report : LoadReport, optional
        A report to add to (a new one by default).

    Returns
    -------
    ts : TraceSet
        The trajectories.
    report : LoadReport
        Counts and problems.

    Examples
    --------
    >>> from htc_core.formats import native
    >>> ts, report = native.read("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> len(ts), ts.n_steps, ts.n_tokens, ts.k, report.rejected
    (250, 547, 11808, 5, 0)
    >>> ts.meta.loc[0, ["question", "answer", "gold"]].tolist()
    ['How many meters are in 16.5 feet?', '5.03', '5.03']
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    report = report or LoadReport()
    files, errors = expand_inputs(paths, JSONL_SUFFIXES)
    for e in errors:
        report.error(e.split(":")[0], None, e.split(": ", 1)[-1])
    builder = TraceSetBuilder()
    for f in files:
        report.files.append(str(f))
        before = report.lines_read
        try:
            read_stream(iter_lines(f), file=str(f), builder=builder, report=report, defaults=defaults)
        except READ_ERRORS as e:  # EOFError / zlib.error: a cut-short or corrupt .gz
            report.error(str(f), None, f"cannot read file: {type(e).__name__}: {e}")
            continue
        if report.lines_read == before:
            report.error(str(f), None, "file is empty")
    return builder.build(), report


def read_bytes(data: bytes, *, name: str = "<upload>", defaults: dict | None = None,
               report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read htc-trace JSONL held in memory (an upload).

    Parameters
    ----------
    data : bytes
        The lines (not compressed).
    name : str, default="<upload>"
        The name shown in the report and recorded as each trajectory's ``source``.
    defaults : dict, optional
        Metadata filled in where a line has none.
    report : LoadReport, optional
        A report to add to (a new one by default).

    Returns
    -------
    ts : TraceSet
        The trajectories.
    report : LoadReport
        Counts and problems.

    Examples
    --------
    >>> from htc_core.formats import native
    >>> data = (b'{"id": "r1", "success": true, "steps": [{"name": "cot", "logprobs": [-0.1, -0.5]}]}\\n'
    ...         b'{"id": "r2", "steps": []}\\n')
    >>> ts, report = native.read_bytes(data, name="mine.jsonl")
    >>> ts.ids.tolist(), ts.labels.tolist()
    (['r1'], [1.0])
    >>> [(p.line, p.reason) for p in report.errors]
    [(2, 'trajectory has no steps')]
    """
    report = report or LoadReport()
    report.files.append(name)
    builder = TraceSetBuilder()
    lines = ((i, ln) for i, ln in enumerate(data.splitlines(keepends=True), start=1))
    read_stream(lines, file=name, builder=builder, report=report, defaults=defaults)
    if report.lines_read == 0:
        report.error(name, None, "file is empty")
    return builder.build(), report


def write(ts: TraceSet, path_or_file: str | os.PathLike | IO[str]) -> int:
    """Write a trace set as htc-trace JSONL v1; returns the number of trajectories written.

    A path is written atomically (``htc_core.atomic``): a failure half-way leaves the previous file intact.
    Reading the file back with :func:`read` gives the same trajectories.

    Parameters
    ----------
    ts : TraceSet
        The trajectories.
    path_or_file : str, path or text file
        Where to write: a path (replaced atomically) or an open text file (written to, not closed).

    Returns
    -------
    int
        The number of trajectories written.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.formats import native
    >>> ts, _ = native.read_bytes(b'{"id": "r1", "success": false, "steps": [{"logprobs": [-0.1, -0.5]}]}')
    >>> path = os.path.join(tempfile.mkdtemp(), "runs.jsonl")
    >>> native.write(ts, path)
    1
    >>> back, _ = native.read(path)
    >>> back.trajectory(0)["steps"], back.labels.tolist()
    ([{'name': '', 'logprobs': [-0.1, -0.5]}], [0.0])
    """
    if hasattr(path_or_file, "write"):
        _write_lines(ts, path_or_file)
    else:
        from ..atomic import atomic_open

        with atomic_open(path_or_file, "w", encoding="utf-8") as fh:
            _write_lines(ts, fh)
    return ts.n_trajectories


def _write_lines(ts: TraceSet, fh: IO[str]) -> None:
    """One JSON line per trajectory."""
    for i in range(ts.n_trajectories):
        fh.write(json.dumps(ts.trajectory(i), ensure_ascii=False, default=_json_default))
        fh.write("\n")


def _json_default(o: Any) -> Any:
    """numpy scalars as Python numbers (``json.dumps``'s ``default``)."""
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def sniff(head: bytes) -> str | None:
    """None when the head of a file looks like htc-trace JSONL, else why not."""
    first = next((ln for ln in head.splitlines() if ln.strip()), b"")
    try:
        obj = json.loads(first)
    except ValueError:
        return "first line is not a complete JSON object"
    if not isinstance(obj, dict):
        return "first line is not a JSON object"
    steps = obj.get("steps")
    if not (isinstance(steps, list) and "id" in obj):
        return "no 'id' and 'steps' keys"
    if steps and isinstance(steps[0], dict) and "logprobs" in steps[0] and not isinstance(steps[0]["logprobs"], dict):
        return None
    if not steps:
        return None
    return "steps carry no 'logprobs' list"
