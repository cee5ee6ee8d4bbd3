"""Reading files and decoding JSON, with problems explained (file, line, reason).

- opening plain or gzip-compressed files and iterating their lines without reading them whole;
- fast JSON decoding of one line or document (orjson, with a ``json`` fallback that accepts
  ``NaN``/``Infinity`` and explains errors precisely), BOM handling;
- streaming iteration over the elements of a top-level JSON array, so that a large ``.json`` file is
  never held in memory as one decoded document;
- the container kind of a file (JSONL, JSON array, JSON object).

Problems are raised as ``ParseError`` (with the line when known) or reported into a ``LoadReport``.
"""

from __future__ import annotations

import codecs
import gzip
import json
import zlib
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

import orjson

from ..report import LoadReport
from ..jsonvalues import DECODE_HOOKS, first_bad_value, max_bracket_depth, may_nest_too_deep, suspect


# internal: the readers' shared file and JSON reading (every reader's read function is the public surface)
__all__: list[str] = []


# -------------------------------------------------------------------- files
def open_binary(path: Path) -> IO[bytes]:
    """A file opened for reading bytes (gzip-decompressed when its name ends in ``.gz``)."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb", buffering=1 << 20)


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line) without reading the file into memory.

    A UTF-8 BOM at the start is dropped; LF, CRLF and CR-only line endings are all accepted (a CR-only
    file is read by the line iterator as one piece, then split: it is held in memory whole).
    """
    with open_binary(path) as fh:
        yield from iter_lines_of(fh)


def iter_lines_of(fh: Iterable[bytes], *, at_start: bool = True) -> Iterator[tuple[int, bytes]]:
    """``iter_lines`` over an open binary file (or any iterable of LF-terminated byte lines, such as a byte
    range of a file: ``at_start=False`` when it does not begin at the start of the file, where a BOM can be)."""
    no = 0
    for raw in fh:
        if no == 0 and at_start and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if b"\r" in raw and raw.find(b"\r") < len(raw.rstrip(b"\r\n")) or raw.endswith(b"\r"):
            for piece in raw.splitlines(keepends=True):
                no += 1
                yield no, piece
            continue
        no += 1
        yield no, raw


def decode_line(raw: bytes) -> str:
    """A raw line as text (UTF-8; an error raises ``UnicodeDecodeError``)."""
    return raw.decode("utf-8")


def head_bytes(path: Path, n: int = 65536) -> bytes:
    """The first ``n`` bytes of a file (decompressed)."""
    with open_binary(path) as fh:
        return fh.read(n)


#: what reading a file can raise besides decoding errors: I/O errors, and a cut-short (EOFError) or
#: corrupted (zlib.error) .gz stream
READ_ERRORS = (OSError, EOFError, zlib.error)


def read_error_reason(e: BaseException) -> str:
    """The report's reason for an error of ``READ_ERRORS`` (a cut-short or corrupt file, an OS error)."""
    if isinstance(e, EOFError):
        return f"compressed file is cut short ({e}); what was read before is kept, the last trajectory may be incomplete"
    if isinstance(e, zlib.error):
        return f"compressed file is corrupt ({e}); what was read before is kept"
    return f"cannot read file: {e}"


class ParseError(Exception):
    """A line or document that is not valid JSON."""

    def __init__(self, reason: str, value: Any = None, line: int | None = None, field: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.value = value
        self.line = line
        self.field = field


def check_value(obj: Any) -> Any:
    """``obj``, or ParseError naming the field of its first unusable value (see ``values``)."""
    bad = first_bad_value(obj)
    if bad is not None:
        field, value, reason = bad
        raise ParseError(f"bad value: {reason}", value, field=field)
    return obj


# --------------------------------------------------------------------- JSON
#: orjson 3.8 recurses without a limit and overflows the C stack (a segfault, not an error) somewhere
#: above 100k nesting levels; text that may nest deeper than this goes to ``json``, which raises
#: RecursionError instead
MAX_FAST_DEPTH = 10_000  # lines under 100 KB skip the check (they cannot nest more than 50k deep)


def _maybe_too_deep(raw: bytes) -> bool:
    """True when ``raw`` may nest deeper than MAX_FAST_DEPTH (brackets inside strings count too:
    an over-estimate only routes the text to the slower, safe parser)."""
    if len(raw) < 10 * MAX_FAST_DEPTH:  # 100 KB cannot nest more than 50k deep: safe for orjson
        return False
    if raw.count(b"[") + raw.count(b"{") <= MAX_FAST_DEPTH:
        return False
    return max_bracket_depth(raw) > MAX_FAST_DEPTH


def loads(raw: bytes | str) -> Any:
    """Decode one JSON text; raise ParseError with a readable reason."""
    b = raw.encode("utf-8", errors="replace") if isinstance(raw, str) and len(raw) >= 10 * MAX_FAST_DEPTH else raw
    if isinstance(b, str) or not _maybe_too_deep(b):
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            msg = str(e)
        else:  # orjson refuses surrogates, out-of-range numbers and 1024+ levels; deep nesting is checked
            return check_value(obj) if may_nest_too_deep(raw) else obj
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
        # accepts NaN / Infinity, which orjson refuses; out-of-range numbers become BadNumber markers, found
        # by the value walk, which runs only where the text can hold something it reports
        obj = json.loads(text, **DECODE_HOOKS)
        return check_value(obj) if suspect(text) else obj
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
    """The first character after a BOM and blanks (``""`` for an empty head)."""
    s = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return chr(s[0]) if s else ""


def container_kind(path: Path) -> str:
    """'jsonl', 'json-array' or 'json-object' (from the name and the first bytes)."""
    name = str(path).lower()
    if name.endswith(JSONL_ONLY):
        return "jsonl"
    head = head_bytes(path, 1 << 16)
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
        report.error(file, e.line, e.reason, field=e.field, value=e.value)
        return NO_DOCUMENT
    report.lines_read += 1
    return doc


def read_document(path: Path) -> Any:
    """Decode a whole JSON document (one trajectory per file formats)."""
    with open_binary(path) as fh:
        data = fh.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return loads(data)
    except ParseError as e:
        if e.field is not None:  # a bad value of a named field: valid JSON, no line to find
            raise
        # give the line of the error when json can tell it
        try:
            json.loads(data.decode("utf-8", errors="replace"), **DECODE_HOOKS)
        except json.JSONDecodeError as je:
            e.line = je.lineno
        except (RecursionError, ValueError):
            pass
        raise


_DECODER = json.JSONDecoder(**DECODE_HOOKS)
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
        """Read and decode the next chunk of the file into the window (a decoding error met earlier is raised now)."""
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
        """The 1-based line of a position in the window (default: the current one)."""
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
        """Decode the next complete JSON value of the window (reading more of the file as needed)."""
        want = self.chunk
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
                start, self.pos = self.pos, end
                if suspect(self.buf[start:end]):
                    try:
                        check_value(obj)
                    except ParseError as e:
                        e.line = self.line(start)
                        return e
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


def iter_json_array(path: Path, chunk: int = 1 << 20,
                    on_bad: Callable[[ParseError], None] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line, element) for each element of a top-level JSON array, streaming.

    Memory holds one element (plus a read-ahead chunk) at a time. A problem (including content after the
    closing bracket) raises ParseError with the line where it was found, after every complete
    element before it has been yielded. An element that is valid JSON but holds an unusable value
    (``values``) goes to ``on_bad(error)`` and the elements after it are still read (without ``on_bad``
    it raises like a syntax error).
    """
    with open_binary(path) as fh:
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
            _closed(b)
            return
        while True:
            if b.peek() == "":
                raise ParseError("truncated JSON: the array is not closed", line=b.line())
            line = b.line()
            obj = b.value()
            if not isinstance(obj, ParseError):
                yield line, obj
            elif on_bad is None:
                raise obj
            else:
                on_bad(obj)
            c = b.peek()
            if c == ",":
                b.pos += 1
            elif c == "]":
                _closed(b)
                return
            elif c == "":
                raise ParseError("truncated JSON: the array is not closed", line=b.line())
            else:
                raise ParseError(f"malformed JSON: expected ',' or ']' after an array element, found {c!r}",
                                 b.buf[b.pos: b.pos + 40], line=b.line())


def _closed(b: _Buf) -> None:
    """After the closing bracket of the top-level array: only blanks may follow (ParseError otherwise)."""
    b.pos += 1
    c = b.peek()
    if c:
        raise ParseError(f"malformed JSON: content after the closing ']' of the array, found {c!r}",
                         b.buf[b.pos: b.pos + 40], line=b.line())


def iter_reported_lines(path: Path, report: LoadReport, file: str,
                        on_error: Callable[[BaseException], None] | None = None) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines of a JSONL file, counted in the report; an unreadable (or cut-short .gz) file
    is reported, then ``on_error(exc)`` is called."""
    no = None
    try:
        for no, raw in iter_lines(path):
            report.lines_read += 1
            if raw.strip():
                yield no, raw
    except READ_ERRORS as e:
        report.error(file, None if no is None else no + 1, read_error_reason(e))
        if on_error is not None:
            on_error(e)
