"""Helpers shared by the non-native readers.

- fast JSON decoding of one line (orjson, with a ``json`` fallback that
  accepts ``NaN``/``Infinity`` and explains errors precisely);
- streaming iteration over the elements of a top-level JSON array, so that a
  large ``.json`` file is never held in memory as one decoded document;
- the container kind of a file (JSONL, JSON array, JSON object);
- OpenAI-shaped token lists (``[{token, logprob, top_logprobs: [...]}]``) to
  numpy arrays with as little per-token Python work as possible, including
  vLLM's quirks (-9999 means -inf; k+1 alternatives repeat the sampled token);
- assembling validated steps into ``TrajectoryRecord``s.

Everything here reports problems by raising ``FieldError`` / ``ParseError``;
the readers turn those into load-report entries with file and line.
"""

from __future__ import annotations

import codecs
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import orjson

from ..report import LoadReport, Problem, _short
from ..traces import TraceSetBuilder, TrajectoryRecord
from . import common
from .common import POSITIVE_TOLERANCE, VLLM_NEG_INF, FieldError

#: keys under which a trajectory id is looked for (in this order)
ID_KEYS = ("trajectory_id", "trace_id", "run_id", "session_id", "conversation_id")
#: trajectory-level fields a reader copies when a record carries them
META_KEYS = ("dataset", "model", "framework", "question", "answer", "gold")


#: what reading a file can raise besides decoding errors: I/O errors, and a cut-short (EOFError) or
#: corrupted (zlib.error) .gz stream
READ_ERRORS = (OSError, EOFError, zlib.error)


def read_error_reason(e: BaseException) -> str:
    if isinstance(e, EOFError):
        return f"compressed file is cut short ({e}); what was read before is kept, the last trajectory may be incomplete"
    if isinstance(e, zlib.error):
        return f"compressed file is corrupt ({e}); what was read before is kept"
    return f"cannot read file: {e}"


class ParseError(Exception):
    """A line or document that is not valid JSON."""

    def __init__(self, reason: str, value: Any = None, line: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.value = value
        self.line = line


class MissingLogprobs(FieldError):
    """An LLM call recorded without logprobs: the step is dropped with a warning."""


# --------------------------------------------------------------------- JSON
#: orjson 3.8 recurses without a limit and overflows the C stack (a segfault, not an error) somewhere
#: above 100k nesting levels; text that may nest deeper than this goes to ``json``, which raises
#: RecursionError instead
MAX_FAST_DEPTH = 10_000  # lines under 100 KB skip the check (they cannot nest more than 50k deep)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _maybe_too_deep(raw: bytes) -> bool:
    """True when ``raw`` may nest deeper than MAX_FAST_DEPTH (brackets inside strings count too:
    an over-estimate only routes the text to the slower, safe parser)."""
    if len(raw) < 10 * MAX_FAST_DEPTH:  # 100 KB cannot nest more than 50k deep: safe for orjson
        return False
    if raw.count(b"[") + raw.count(b"{") <= MAX_FAST_DEPTH:
        return False
    a = np.frombuffer(raw.translate(None, _NOT_BRACKETS), dtype=np.uint8)
    steps = np.where((a == 91) | (a == 123), 1, -1)
    return int(np.cumsum(steps).max()) > MAX_FAST_DEPTH


def loads(raw: bytes | str) -> Any:
    """Decode one JSON text; raise ParseError with a readable reason."""
    b = raw.encode("utf-8", errors="replace") if isinstance(raw, str) and len(raw) >= 10 * MAX_FAST_DEPTH else raw
    if isinstance(b, str) or not _maybe_too_deep(b):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            msg = str(e)
    else:
        msg = "deep"
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ParseError(f"invalid UTF-8 at byte {e.start}", raw[max(0, e.start - 10): e.start + 10]) from None
    else:
        text = raw
    if "recursion" in msg.lower():
        raise ParseError("JSON nested too deeply (more than 1024 levels)")
    text = text.rstrip()
    try:
        return json.loads(text)  # accepts NaN / Infinity, which orjson refuses
    except json.JSONDecodeError as e:
        if e.msg.startswith("Unterminated string"):
            reason = f"truncated JSON: the text ends inside a string (opened at column {e.colno})"
        elif e.pos >= len(text) - 1:
            reason = f"truncated JSON: {e.msg} at the end (column {e.colno})"
        else:
            reason = f"malformed JSON: {e.msg} at column {e.colno}"
        raise ParseError(reason, text[max(0, e.pos - 30): e.pos + 30]) from None
    except RecursionError:
        raise ParseError("JSON nested too deeply") from None


JSONL_ONLY = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
JSON_DOC = (".json", ".json.gz")


def _first_char(head: bytes) -> str:
    s = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return chr(s[0]) if s else ""


def container_kind(path: Path) -> str:
    """'jsonl', 'json-array' or 'json-object' (from the name and the first bytes)."""
    name = str(path).lower()
    if name.endswith(JSONL_ONLY):
        return "jsonl"
    head = common.head_bytes(path, 1 << 16)
    c = _first_char(head)
    if name.endswith(JSON_DOC):
        if c == "[":
            return "json-array"
        if c == "{":
            # a .json file that is really JSONL: first line is a complete object and another follows
            lines = [ln for ln in head.splitlines() if ln.strip()]
            if len(lines) >= 2 and lines[1].lstrip().startswith(b"{"):
                try:
                    orjson.loads(lines[0])
                    return "jsonl"
                except orjson.JSONDecodeError:
                    pass
        return "json-object"
    first = next((ln for ln in head.splitlines() if ln.strip()), b"")
    try:
        orjson.loads(first)
        return "jsonl"
    except orjson.JSONDecodeError:
        pass
    if c == "[":
        return "json-array"
    if c == "{" and len(first) < len(head.strip()):
        return "json-object"
    return "jsonl"


NO_DOCUMENT = object()


def read_document_reported(path: Path, report: LoadReport, file: str) -> Any:
    """``read_document`` for the readers: a parse error is reported and gives ``NO_DOCUMENT``;
    a decoded document counts as one line read."""
    try:
        doc = read_document(path)
    except ParseError as e:
        report.error(file, e.line, e.reason, value=e.value)
        return NO_DOCUMENT
    report.lines_read += 1
    return doc


def read_document(path: Path) -> Any:
    """Decode a whole JSON document (one trajectory per file formats)."""
    with common.open_binary(path) as fh:
        data = fh.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return loads(data)
    except ParseError as e:
        # give the line of the error when json can tell it
        try:
            json.loads(data.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as je:
            e.line = je.lineno
        except RecursionError:
            pass
        raise


_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class _Buf:
    """A decoded read-ahead window over a file, with line counting."""

    def __init__(self, fh, chunk: int):
        self.fh = fh
        self.chunk = chunk
        self.dec = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf = ""
        self.pos = 0
        self.base_line = 1  # line number of buf[0]
        self.eof = False
        self.bytes_read = 0
        self.pending: ParseError | None = None

    def more(self, n: int | None = None) -> None:
        if self.pending is not None:
            raise self.pending
        data = self.fh.read(n or self.chunk)
        try:
            text = self.dec.decode(data, final=not data)
        except UnicodeDecodeError as e:
            # keep the valid text before the bad byte; the error is raised when the reader gets there
            self.dec.reset()
            text = data[: e.start].decode("utf-8", errors="ignore")
            line = self.base_line + self.buf.count("\n") + data.count(b"\n", 0, e.start)
            self.pending = ParseError(f"invalid UTF-8 at byte {self.bytes_read + e.start}",
                                      data[max(0, e.start - 10): e.start + 10], line=line)
            data = data[: e.start] or b" "
        self.bytes_read += len(data)
        if not data:
            self.eof = True
        self.base_line += self.buf.count("\n", 0, self.pos)
        self.buf = self.buf[self.pos:] + text
        self.pos = 0

    def line(self, pos: int | None = None) -> int:
        return self.base_line + self.buf.count("\n", 0, self.pos if pos is None else pos)

    def peek(self) -> str:
        """Next non-blank character ('' at the end of the file)."""
        while True:
            buf, pos = self.buf, self.pos
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            self.pos = pos
            if pos < len(buf):
                return buf[pos]
            if self.eof:
                return ""
            self.more()

    def value(self) -> Any:
        want = self.chunk
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
                self.pos = end
                return obj
            except json.JSONDecodeError as e:
                near_end = e.pos >= len(self.buf) - 64 or e.msg.startswith("Unterminated string")
                if near_end and not self.eof:
                    self.more(want)
                    want = min(want * 2, 1 << 28)
                    continue
                at_end = e.msg.startswith("Unterminated string") or e.pos >= len(self.buf.rstrip()) - 1
                if self.eof and at_end:
                    raise ParseError("truncated JSON (the file ends inside this value)",
                                     self.buf[self.pos: self.pos + 40], line=self.line()) from None
                raise ParseError(f"malformed JSON: {e.msg}", self.buf[max(self.pos, e.pos - 30): e.pos + 30],
                                 line=self.line(e.pos)) from None
            except RecursionError:
                raise ParseError("JSON nested too deeply", line=self.line()) from None


def iter_json_array(path: Path, chunk: int = 1 << 20) -> Iterator[tuple[int, Any]]:
    """Yield (line, element) for each element of a top-level JSON array, streaming.

    Memory holds one element (plus a read-ahead chunk) at a time. A problem
    raises ParseError with the line where it was found, after every complete
    element before it has been yielded.
    """
    with common.open_binary(path) as fh:
        b = _Buf(fh, chunk)
        b.more()
        if b.buf.startswith("\ufeff"):
            b.pos = 1
        c = b.peek()
        if c == "":
            raise ParseError("file is empty", line=1)
        if c != "[":
            raise ParseError(f"expected a JSON array, found {c!r}", line=b.line())
        b.pos += 1
        if b.peek() == "]":
            return
        while True:
            if b.peek() == "":
                raise ParseError("truncated JSON: the array is not closed", line=b.line())
            line = b.line()
            obj = b.value()
            yield line, obj
            c = b.peek()
            if c == ",":
                b.pos += 1
            elif c == "]":
                return
            elif c == "":
                raise ParseError("truncated JSON: the array is not closed", line=b.line())
            else:
                raise ParseError(f"malformed JSON: expected ',' or ']' after an array element, found {c!r}",
                                 b.buf[b.pos: b.pos + 40], line=b.line())


# ------------------------------------------------------------ token arrays
@dataclass
class StepPart:
    """The validated arrays of one LLM call (or one streamed chunk of it)."""

    lp: np.ndarray
    top: np.ndarray | None
    tokens: list[str] | None
    text: str | None = None
    clipped: int = 0


def empty_part(text: str | None = None) -> StepPart:
    return StepPart(np.zeros(0), None, [], text, 0)


def _type_name(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def numbers(values: list, fmt: str) -> np.ndarray:
    """A float array from a list that must hold only numbers (bool is not a number)."""
    types = set(map(type, values))
    if types <= {float, int}:
        return np.array(values, dtype=np.float64)
    for i, v in enumerate(values):
        if type(v) not in (float, int):
            raise FieldError(fmt.format(i=i), v, f"must be a number, got {_type_name(v)}")
    raise AssertionError("unreachable")  # pragma: no cover


def check_chosen(arr: np.ndarray, values: list, fmt: str) -> tuple[np.ndarray, int]:
    """Chosen-token logprobs: finite, not the -9999 sentinel, <= 0 (tiny positives clipped)."""
    if not arr.size:
        return arr, 0
    lo = arr.min()
    hi = arr.max()
    if math.isfinite(lo) and math.isfinite(hi) and lo > VLLM_NEG_INF and hi <= 0:
        return arr, 0
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise FieldError(fmt.format(i=i), values[i], "must be finite (NaN and infinity are not log-probabilities)")
    sentinel = arr <= VLLM_NEG_INF
    if sentinel.any():
        i = int(np.flatnonzero(sentinel)[0])
        raise FieldError(fmt.format(i=i), values[i],
                         "chosen-token logprob is the -inf sentinel (-9999); a sampled token cannot have probability 0")
    too_big = arr > POSITIVE_TOLERANCE
    if too_big.any():
        i = int(np.flatnonzero(too_big)[0])
        raise FieldError(fmt.format(i=i), values[i], "must be <= 0 (a log-probability)")
    pos = arr > 0
    arr = arr.copy()
    arr[pos] = 0.0
    return arr, int(pos.sum())


def finish_top(out: np.ndarray, fmt: str) -> tuple[np.ndarray | None, int]:
    """Validate an [n, k] matrix of alternatives: sentinel/-inf -> NaN, tiny positives clipped,
    sorted descending NaN-last, all-NaN trailing columns removed."""
    if out.size == 0:
        return None, 0
    with np.errstate(invalid="ignore"):
        if np.isposinf(out).any():
            i, j = map(int, np.argwhere(np.isposinf(out))[0])
            raise FieldError(fmt.format(i=i, j=j), out[i, j], "must not be +infinity")
        missing = out <= VLLM_NEG_INF
        if missing.any():
            out[missing] = np.nan
        too_big = out > POSITIVE_TOLERANCE
        if too_big.any():
            i, j = map(int, np.argwhere(too_big)[0])
            raise FieldError(fmt.format(i=i, j=j), float(out[i, j]), "must be <= 0 (a log-probability)")
        pos = out > 0
        n_clip = int(pos.sum())
        if n_clip:
            out[pos] = 0.0
    out = -np.sort(-out, axis=1)
    valid_cols = ~np.isnan(out).all(axis=0)
    if not valid_cols.any():
        return None, n_clip
    last = int(np.flatnonzero(valid_cols)[-1]) + 1
    if last < out.shape[1]:
        out = out[:, :last]
    return np.ascontiguousarray(out), n_clip


def _dedup_row(row: list, value_key: str, token_key: str) -> list[float]:
    seen: set = set()
    vals: list[float] = []
    for j, a in enumerate(row):
        t = a.get(token_key) if isinstance(a, dict) else None
        if t is not None:
            t = t if isinstance(t, str) else orjson.dumps(t).decode()
            if t in seen:
                continue
            seen.add(t)
        vals.append(a[value_key])
    return vals


def top_from_dict_rows(tops: list, n: int, fmt: str, *, value_key: str = "logprob",
                       token_key: str = "token") -> tuple[np.ndarray | None, int]:
    """[n] lists of {token, logprob} alternatives -> [n, k] matrix (None when there are none).

    Alternatives that repeat a token string (vLLM's k+1 lists) are removed;
    the repeat always carries the same value, so only rows with tied values
    are inspected token by token.
    """
    if len(tops) != n:
        raise FieldError(fmt.split("[{i}]")[0], f"{len(tops)} entries", f"has {len(tops)} entries but there are {n} tokens")
    rowfmt = fmt.replace("[{j}]", "").replace(".{vk}", "")
    try:
        lens = list(map(len, tops))
    except TypeError:
        lens = []
        for i, row in enumerate(tops):
            if row is None:
                lens.append(0)
            elif isinstance(row, list):
                lens.append(len(row))
            else:
                raise FieldError(rowfmt.format(i=i), row,
                                 f"must be a list of alternatives, got {_type_name(row)}") from None
    k = max(lens, default=0)
    if k == 0:
        return None, 0
    for i, row in enumerate(tops):
        if row is not None and not isinstance(row, list):
            raise FieldError(rowfmt.format(i=i), row, f"must be a list of alternatives, got {_type_name(row)}")
    try:
        if min(lens) == k:
            flat = [a[value_key] for row in tops for a in row]
            uniform = True
        else:
            flat = None
            uniform = False
    except (TypeError, KeyError, IndexError):
        _explain_alternatives(tops, fmt, value_key)
        raise  # pragma: no cover
    if uniform:
        types = set(map(type, flat))
        if not types <= {float, int}:
            _explain_alternatives(tops, fmt, value_key)
        out = np.array(flat, dtype=np.float64).reshape(n, k)
        # fast path (the common case): every value a plain logprob, no sentinel, no repeated token
        lo, hi = out.min(), out.max()
        if lo > VLLM_NEG_INF and hi <= 0:  # False when any value is NaN or infinite
            s = -np.sort(-out, axis=1)
            if k == 1 or not (s[:, 1:] == s[:, :-1]).any():
                return s, 0
    else:
        out = np.full((n, k), np.nan)
        for i, row in enumerate(tops):
            if row:
                try:
                    vals = [a[value_key] for a in row]
                except (TypeError, KeyError):
                    _explain_alternatives(tops, fmt, value_key)
                if not set(map(type, vals)) <= {float, int}:
                    _explain_alternatives(tops, fmt, value_key)
                out[i, : len(vals)] = vals
    nan_vals = np.isnan(out)
    if nan_vals.any():
        # a NaN that was written in the file (json fallback) is an error; padding NaN is not
        for i, row in enumerate(tops):
            if row:
                for j, a in enumerate(row):
                    v = a[value_key]
                    if v != v:
                        raise FieldError(fmt.format(i=i, j=j, vk=value_key), v, "must not be NaN")
    if k > 1:
        s = -np.sort(-out, axis=1)
        ties = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        for i in ties:
            vals = _dedup_row(tops[i], value_key, token_key)
            if len(vals) != lens[i]:
                out[i, :] = np.nan
                out[i, : len(vals)] = vals
    return finish_top(out, fmt)


def _explain_alternatives(tops: list, fmt: str, value_key: str) -> None:
    for i, row in enumerate(tops):
        if not row:
            continue
        for j, a in enumerate(row):
            f = fmt.format(i=i, j=j, vk=value_key)
            if not isinstance(a, dict):
                raise FieldError(f.rsplit(".", 1)[0], a, f"an alternative must be an object, got {_type_name(a)}")
            if value_key not in a:
                raise FieldError(f, None, "missing", has_value=False)
            v = a[value_key]
            if type(v) not in (float, int):
                raise FieldError(f, v, f"must be a number, got {_type_name(v)}")
    raise FieldError(fmt.split("[{i}]")[0], None, "malformed alternatives", has_value=False)


def token_list(content: Any, prefix: str) -> StepPart:
    """An OpenAI token list ``[{token, logprob, bytes, top_logprobs: [{token, logprob}]}]``."""
    if not isinstance(content, list):
        raise FieldError(prefix, content, f"must be a list of token objects, got {_type_name(content)}")
    n = len(content)
    if n == 0:
        return empty_part()
    try:
        lps = [d["logprob"] for d in content]
        toks = [d["token"] for d in content]
        tops = [d.get("top_logprobs") for d in content]
    except (TypeError, KeyError, AttributeError):
        for i, d in enumerate(content):
            if not isinstance(d, dict):
                raise FieldError(f"{prefix}[{i}]", d, f"a token entry must be an object, got {_type_name(d)}") from None
            for key in ("logprob", "token"):
                if key not in d:
                    raise FieldError(f"{prefix}[{i}].{key}", None, "missing", has_value=False) from None
        raise
    lp = numbers(lps, prefix + "[{i}].logprob")
    lp, c1 = check_chosen(lp, lps, prefix + "[{i}].logprob")
    if not set(map(type, toks)) <= {str}:
        toks = [t if isinstance(t, str) else ("" if t is None else orjson.dumps(t).decode()) for t in toks]
    top, c2 = top_from_dict_rows(tops, n, prefix + "[{i}].top_logprobs[{j}].{vk}")
    return StepPart(lp, top, toks, None, c1 + c2)


def concat_parts(parts: list[StepPart]) -> StepPart:
    """One step from several parts (streamed chunks, several output_text items)."""
    if len(parts) == 1:
        return parts[0]
    lp = np.concatenate([p.lp for p in parts]) if parts else np.zeros(0)
    k = max((p.top.shape[1] for p in parts if p.top is not None), default=0)
    top = None
    if k:
        rows = []
        for p in parts:
            t = p.top if p.top is not None else np.full((len(p.lp), 0), np.nan)
            if t.shape[1] < k:
                t = np.hstack([t, np.full((t.shape[0], k - t.shape[1]), np.nan)])
            rows.append(t)
        top = np.vstack(rows)
    toks: list[str] | None = []
    for p in parts:
        if p.tokens is None:
            toks = None
            break
        toks.extend(p.tokens)
    texts = [p.text for p in parts if p.text]
    return StepPart(lp, top, toks, "".join(texts) if texts else None, sum(p.clipped for p in parts))


# ------------------------------------------------------------ trajectories
@dataclass
class TrajAcc:
    """A trajectory under construction: validated steps plus metadata."""

    id: str
    file: str
    line: int | None
    steps: list[tuple[str, StepPart]] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    failed: bool = False
    missing: int = 0

    def add(self, name: str, part: StepPart) -> None:
        self.steps.append((name, part))


def text_of(value: Any) -> str | None:
    """Message content that may be a string or a list of content parts."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for p in value:
            if isinstance(p, dict):
                t = p.get("text")
                if isinstance(t, str):
                    out.append(t)
            elif isinstance(p, str):
                out.append(p)
        return "".join(out) if out else None
    return str(value)


def take_meta(acc: TrajAcc, obj: dict, report: LoadReport, file: str, line: int | None) -> None:
    """Copy trajectory-level fields (success, question, ...) from a record into ``acc``."""
    for key in META_KEYS:
        v = obj.get(key)
        if v is not None and key not in acc.meta:
            acc.meta[key] = common.optional_text(v)
    if "success" in obj and obj["success"] is not None:
        try:
            acc.meta["success"] = common.success_label(obj["success"])
        except FieldError as e:
            report.warn(file, line, f"success {e.reason}; ignored", field="success", value=obj["success"],
                        trajectory_id=acc.id)
    if obj.get("verbalized_confidence") is not None:
        vc, warn = common.verbalized(obj["verbalized_confidence"])
        if warn:
            report.warn(file, line, f"verbalized_confidence {warn}", field="verbalized_confidence",
                        value=obj["verbalized_confidence"], trajectory_id=acc.id)
        if vc is not None:
            acc.meta["verbalized_confidence"] = vc
    md = obj.get("metadata")
    if isinstance(md, dict):
        for k, v in md.items():
            acc.metadata.setdefault(k, v)


def fail(acc: TrajAcc | None, report: LoadReport, file: str, line: int | None, reason: str, *,
         field: str | None = None, value: Any = None, has_value: bool = False, tid: str | None = None) -> None:
    """Report an error. The first error of a trajectory counts it as rejected; later ones are listed only."""
    if acc is not None and acc.failed:
        report._add(Problem(file, line, field, _short(value) if (value is not None or has_value) else None,
                            reason, acc.id, "error"))
        return
    if acc is not None:
        acc.failed = True
    report.error(file, line, reason, field=field, value=value, has_value=has_value,
                 trajectory_id=acc.id if acc is not None else tid)


def build_record(acc: TrajAcc, report: LoadReport, defaults: dict | None, framework: str | None = None
                 ) -> TrajectoryRecord | None:
    """Turn an accumulated trajectory into a record (or report why it is rejected)."""
    if acc.failed:
        return None
    defaults = defaults or {}
    rec = TrajectoryRecord(id=acc.id, steps_logprob=[], steps_top=[], steps_name=[], steps_text=[],
                           steps_tokens=[])
    dropped = 0
    clipped = 0
    for name, part in acc.steps:
        if len(part.lp) == 0:
            dropped += 1
            continue
        clipped += part.clipped
        rec.steps_logprob.append(part.lp)
        rec.steps_top.append(part.top)
        rec.steps_tokens.append(part.tokens)
        rec.steps_name.append(name)
        rec.steps_text.append(part.text)
    if not rec.steps_logprob:
        if not acc.steps and acc.missing:
            why = f"none of its {acc.missing} LLM call(s) has logprobs"
        elif not acc.steps:
            why = "no LLM calls with logprobs"
        else:
            why = f"all {len(acc.steps)} steps are empty (no tokens)"
            if acc.missing:
                why += f", and {acc.missing} call(s) have no logprobs"
        report.error(acc.file, acc.line, f"trajectory rejected: {why}", field="steps", trajectory_id=acc.id)
        return None
    if dropped:
        report.empty_steps_dropped += dropped
        report.warn(acc.file, acc.line, f"{dropped} empty step(s) dropped", field="steps", trajectory_id=acc.id)
    if clipped:
        report.clipped_values += clipped
        report.warn(acc.file, acc.line, f"{clipped} tiny positive logprob(s) clipped to 0", trajectory_id=acc.id)
    m = acc.meta
    for key in META_KEYS:
        val = m.get(key)
        setattr(rec, key, val if val is not None else defaults.get(key))
    if rec.framework is None and framework:
        rec.framework = framework
    rec.success = m.get("success")
    rec.verbalized_confidence = m.get("verbalized_confidence")
    rec.metadata = acc.metadata
    rec.source = defaults.get("source", acc.file)
    return rec


def add_record(builder: TraceSetBuilder, rec: TrajectoryRecord, report: LoadReport, file: str,
               line: int | None, seen: set[str]) -> None:
    """Add a record: a repeated id in one file is an error, one from an earlier file is renamed."""
    from .native import unique_id

    if rec.id in seen:
        report.error(file, line, "duplicate trajectory id in this file (the first one is kept)", field="id",
                     value=rec.id, trajectory_id=rec.id)
        return
    seen.add(rec.id)
    if builder.has_id(rec.id):
        new_id = unique_id(builder, rec.id, file)
        report.warn(file, line, f"trajectory id also used in an earlier file; kept as {new_id!r}", field="id",
                    value=rec.id, trajectory_id=rec.id)
        rec.id = new_id
    builder.add(rec)
    report.trajectories_read += 1


def find_id(obj: dict, keys: tuple[str, ...] = ("id",) + ID_KEYS) -> str | None:
    for k in keys:
        v = obj.get(k)
        if v is not None and not isinstance(v, (dict, list, bool)) and str(v).strip():
            return str(v)
    return None


def stem(file: str) -> str:
    return Path(file).name.split(".")[0]
