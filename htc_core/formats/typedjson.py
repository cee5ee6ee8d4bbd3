"""Decoding an htc-trace line straight to typed arrays: the numbers of the steps never become Python floats.

``decode_steps(raw)`` parses one JSON line with simdjson (``pysimdjson``) and copies each step's ``logprobs``
and ``top_logprobs`` into float64 arrays in C (``Array.as_buffer``); only the other fields (ids, names, texts,
tokens, metadata) become Python objects. It answers None, and the caller decodes the line the general way
(``jsonio.loads`` and the per-value checks, which report file, line, field and value), whenever the line is
anything but the plain shape it can prove:

- not valid JSON for simdjson (which refuses lone surrogates, numbers out of range, NaN, bad UTF-8), nested
  deeper than ``jsonvalues.MAX_DEPTH`` anywhere, or starting with a byte order mark (simdjson skips one, the
  general path reports it; the reader drops the BOM of the file's first line before);
- an object with a repeated key (simdjson's lookup would take the first where ``orjson`` keeps the last);
- a step that is not an object, without a non-empty ``logprobs`` array of plain numbers (no bool, no string, no
  null, no nested array), or with ``top_logprobs`` that is not ``n`` rows of the same ``k`` plain numbers.

The shapes are proven without touching the numbers: the buffer copy refuses anything but numbers (a bool, a
string, null, an object), ``logprobs`` has ``n`` elements and ``n`` numbers, every row of ``top_logprobs`` is an
array of length ``k`` and the buffer holds ``n * k`` numbers, and the raw text of each value holds exactly one
(``logprobs``) or ``n + 1`` (``top_logprobs``) opening brackets, counted from its key to the next quote or
closing brace (the value holds nothing but numbers and brackets); a nested array adds brackets and falls back.
The range and order checks are the caller's (``native.typed_steps``), on the whole arrays.

Measured (issue 29, the 112 MB top-5 bench file, docs/benchmarks-ingest.md): the parse plus the typed copies
take 0.13-0.17 s CPU and all of ``decode_steps`` 0.30 s, where ``orjson.loads`` alone takes 0.22 s and the
Python lists it builds cost another 0.5 s to check and convert.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import simdjson

from ..jsonvalues import MAX_DEPTH

# internal: the htc-trace reader's fast path (``native.read`` is the public surface)
__all__: list[str] = []

# longer lines take the general path: a simdjson parser keeps the buffers of the longest line it parsed for as
# long as its thread lives
MAX_LINE = 16 << 20
# the step fields decoded to arrays; every other field becomes Python objects
NUMERIC_KEYS = ("logprobs", "top_logprobs")
_SUFFIX = b'logprobs"'  # ends both keys: '"logprobs"' and '"top_logprobs"'
_WS = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"
_LOCAL = threading.local()  # a simdjson parser may not be shared between threads, nor reused while its values live
_PLAIN = (str, int, float, bool, type(None))
_SCALARS = frozenset(_PLAIN)


def _parser() -> simdjson.Parser:
    """This thread's simdjson parser (made at first use)."""
    p = getattr(_LOCAL, "parser", None)
    if p is None:
        p = _LOCAL.parser = simdjson.Parser()
    return p


def decode_steps(raw: bytes) -> tuple[dict, np.ndarray, np.ndarray | None, list[int]] | None:
    """(record with Python values, the logprobs of all steps in one array, their [tokens, k] alternatives or None,
    the tokens per step), or None when the line is not provably plain (see the module docstring). The record's
    steps keep every field but ``top_logprobs``; their ``logprobs`` is a ``range`` of its length. The logprobs
    and the alternatives are views of one array (``lp.base``) holding all the numbers of the line."""
    if len(raw) > MAX_LINE or raw.startswith(_BOM):  # simdjson skips a BOM that the general path reports
        return None
    try:
        doc = _parser().parse(raw)
    except RuntimeError:  # a parser still in use (a value of an earlier line alive): take a fresh one
        _LOCAL.parser = None
        try:
            doc = _parser().parse(raw)
        except (ValueError, RuntimeError, TypeError):
            return None
    except (ValueError, TypeError):  # UnicodeDecodeError is a ValueError
        return None
    try:
        return _split(doc, raw)
    except (TypeError, ValueError, KeyError, RuntimeError):
        return None
    finally:
        del doc


def _split(doc: Any, raw: bytes) -> tuple[dict, np.ndarray, np.ndarray | None, list[int]] | None:
    """``decode_steps`` on a parsed document: the fields as Python objects, the step numbers as arrays."""
    if not isinstance(doc, simdjson.Object):
        return None
    keys = list(doc.keys())
    if len(set(keys)) != len(keys) or "steps" not in keys:
        return None
    steps = doc["steps"]
    if not isinstance(steps, simdjson.Array) or len(steps) == 0:
        return None
    obj: dict = {}
    for key in keys:
        if key != "steps":
            obj[key] = _python(doc[key], MAX_DEPTH - 1)
    got = _Numbers()
    out_steps = [_step(st, got) for st in steps]
    if None in out_steps or len(got.widths) > 1 or (got.top and len(got.top) != len(got.lens)):
        return None  # alternatives on some steps only, or of another k: the general path decides
    if not _flat_values(raw, [1] * len(got.lens), got.keyed):
        return None
    # one copy of the line's numbers, writable: the logprobs, then the alternatives (the range check is one pass)
    numbers = np.frombuffer(bytearray().join(got.lp + got.top), dtype=np.float64)
    n = sum(got.lens)
    lp = numbers[:n]
    top = None
    if got.top:
        top = numbers[n:].reshape(-1, got.widths.pop())
    if n > numbers.size or (top is not None and top.shape[0] != n) or (top is None and numbers.size != n):
        return None
    obj["steps"] = out_steps
    return obj, lp, top, got.lens


class _Numbers:
    """The buffers of a line's step arrays as ``_step`` finds them."""

    __slots__ = ("lp", "top", "lens", "widths", "keyed")

    def __init__(self) -> None:
        self.lp: list = []
        self.top: list = []
        self.lens: list[int] = []
        self.widths: set[int] = set()
        self.keyed: list[int | None] = []  # per step with a top_logprobs key: n + 1 brackets, None for null


def _step(st: Any, got: _Numbers) -> dict | None:
    """The step's other fields as Python values (``logprobs`` as a ``range`` of its length: the numbers are in
    the buffers), its buffers added to ``got``."""
    if not isinstance(st, simdjson.Object):
        return None
    keys = list(st.keys())
    if len(set(keys)) != len(keys) or "logprobs" not in keys:
        return None
    lp = st["logprobs"]
    if not isinstance(lp, simdjson.Array):
        return None
    n = len(lp)
    if n == 0:
        return None
    got.lp.append(lp.as_buffer(of_type="d"))  # TypeError on a bool, string or null
    got.lens.append(n)
    if "top_logprobs" in keys:
        top = st["top_logprobs"]
        if top is not None:
            if not isinstance(top, simdjson.Array) or len(top) != n:
                return None
            widths = set(map(len, top))  # a number as a row raises TypeError; an object row fails the buffer
            k = widths.pop()
            if widths or k == 0:
                return None
            got.widths.add(k)
            got.top.append(top.as_buffer(of_type="d"))
        got.keyed.append(None if top is None else n + 1)  # its opening brackets: the array and n rows
    out = {}
    for key in keys:
        if key not in NUMERIC_KEYS:
            v = st[key]
            out[key] = v if type(v) in _SCALARS else _python(v, MAX_DEPTH - 3)
    out["logprobs"] = range(n)
    return out


def _flat_values(raw: bytes, lp_wants: list[int], top_wants: list[int | None]) -> bool:
    """True when the text of the i-th ``logprobs`` / ``top_logprobs`` value holds exactly ``lp_wants[i]`` /
    ``top_wants[i]`` opening brackets (None: the value is null), so that no element hides a nested array whose
    numbers the flattening buffer counted.

    One scan over the line for both keys; either key anywhere else (in metadata, or as a text) and that line
    takes the general path. Each value holds numbers and brackets only (its buffer proved it); the brackets are
    counted up to the next quote (or the end of the line): between the end of the value and that quote come
    only ``,`` ``}`` ``]`` ``{`` and blanks, since what follows a step is another step (an object, whose first
    key is a quote; any other element fails ``_step``) or the end of the steps array and then a key or the end
    of the record."""
    wants = {34: lp_wants, 95: top_wants}  # the byte before 'logprobs"': a quote, or the '_' of '"top_'
    seen = {34: 0, 95: 0}
    find, count, n = raw.find, raw.count, len(raw)
    pos = find(_SUFFIX)
    while pos >= 0:
        before = raw[pos - 1]
        if before == 34 or (before == 95 and raw[pos - 5:pos] == b'"top_'):
            i = seen[before]
            if i >= len(wants[before]):
                return False
            seen[before] = i + 1
            pos = _value_start(raw, pos + 9)  # 9: len(_SUFFIX)
            want = wants[before][i]
            if pos < 0 or (want is None) != (raw[pos] != 91):  # '[' unless the value is null
                return False
            if want is not None:
                end = find(b'"', pos)
                end = n if end < 0 else end
                if count(b"[", pos, end) != want:
                    return False
                pos = end
        else:
            pos += 9
        pos = find(_SUFFIX, pos)
    return seen[34] == len(lp_wants) and seen[95] == len(top_wants)


def _value_start(raw: bytes, pos: int) -> int:
    """The position of the value after a key that ends at ``pos`` (-1 when no ':' follows)."""
    if raw[pos:pos + 1] == b":":  # compact (orjson) or ': ' (json.dumps): the usual two cases first
        return pos + 2 if raw[pos + 1:pos + 2] == b" " else pos + 1
    n = len(raw)
    while pos < n and raw[pos] in _WS:
        pos += 1
    if pos >= n or raw[pos] != 58:  # ':'
        return -1
    pos += 1
    while pos < n and raw[pos] in _WS:
        pos += 1
    return pos if pos < n else -1


def _python(v: Any, depth_left: int) -> Any:
    """A simdjson value as Python objects; ValueError when it nests deeper than the budget."""
    if isinstance(v, simdjson.Array):
        items = v.as_list()
        if not set(map(type, items)) <= set(_PLAIN):
            _check_depth(items, depth_left)
        return items
    if isinstance(v, simdjson.Object):
        d = v.as_dict()
        _check_depth(d, depth_left)
        return d
    return v


def _check_depth(value: Any, depth_left: int) -> None:
    """ValueError when ``value`` (lists and dicts) nests deeper than ``depth_left`` levels (no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > depth_left:
            raise ValueError("nested too deeply")
        children = v.values() if isinstance(v, dict) else v
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
