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

The shapes are proven without touching the numbers (``step_shapes``): deleting every character a JSON number
can hold and the blanks (``bytes.translate``, one C pass) leaves each array of n numbers as ``[`` n-1 commas
``]``, so a bool, a string, null, an object or a nested array inside ``logprobs`` or a row shows in that
skeleton; n rows of k numbers must be exactly ``[[,,],[,,]]`` and so on, which proves the row widths too. An
empty array has the skeleton of a one-number array: the count of the numbers copied (``n * (k + 1)``) catches
it. Every occurrence of either key in the line is counted, and the line is taken only when there is exactly one
per step (a key in metadata or in a text sends it the general way). The buffer copy refuses anything but
numbers too. The range and order checks are the caller's (``native.typed_steps``), on the whole arrays.

Measured (issue 29, the 112 MB top-5 bench file, docs/benchmarks-ingest.md): all of ``decode_steps`` takes
0.21 s CPU (simdjson's parse 0.074 s, the skeleton 0.041 s and its scan 0.028 s, the step fields and buffer
copies 0.045 s, the line's array 0.017 s), where ``orjson.loads`` alone takes 0.21 s and the Python lists it
builds cost another 0.5 s to check and convert; the proof it replaced (row widths through one simdjson proxy per
row, a bracket count per value) took 0.13 s.
"""

from __future__ import annotations

import re
import sys
import threading
from itertools import repeat
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
_BOM = b"\xef\xbb\xbf"
#: every character the text of a JSON number can hold, and the blanks: deleted from a line (``bytes.translate``),
#: they leave an array of numbers as its skeleton of brackets and commas (``step_shapes``)
NUMBER_TEXT = b"0123456789+-.eE \t\r\n"
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
    except (TypeError, ValueError, KeyError, IndexError, RuntimeError):
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
    shapes = step_shapes(raw.translate(None, NUMBER_TEXT))
    if shapes is None:
        return None
    lens, tops = shapes
    arrays = [t for t in tops if t is not None]  # the others are null
    if len(lens) != len(steps) or (arrays and (len(arrays) != len(lens) or [t[0] for t in arrays] != lens
                                               or len({t[1] for t in arrays}) > 1)):
        return None  # a key outside the steps, alternatives on some steps only, rows != tokens, or another k
    obj: dict = {}
    for key in keys:
        if key != "steps":
            obj[key] = _python(doc[key], MAX_DEPTH - 1)
    got = _Buffers()
    out_steps = [_step(st, n, got) for st, n in zip(steps, lens)]
    if None in out_steps or got.keyed != len(tops) or len(got.top) != len(arrays):
        return None
    # one copy of the line's numbers, writable: the logprobs, then the alternatives (the range check is one pass)
    numbers = line_array(got.lp + got.top)
    n = sum(lens)
    k = arrays[0][1] if arrays else 0
    if numbers.size != n * (k + 1):  # an empty array has the skeleton of one number: fewer numbers than proven
        return None
    lp = numbers[:n]
    top = numbers[n:].reshape(n, k) if arrays else None
    obj["steps"] = out_steps
    return obj, lp, top, lens


#: the line arrays are carved from slabs of this many bytes (numpy asks the kernel for huge pages from 4 MB on;
#: measured on the bench file: 4 MB slabs 10,000 page faults in the decode, 16 MB 3,400, 32 MB 2,400)
SLAB_BYTES = 16 << 20


def line_array(buffers: list) -> np.ndarray:
    """The float64 numbers of ``buffers`` one after the other, in one writable array.

    A line's array is a slice of a slab (up to 16 MB) that the next lines' arrays share, not memory of its own:
    the reader keeps every line's array until its trace set is built, and 3,000 arrays of 72 kB of fresh heap
    cost about 18,000 page faults on the 112 MB bench file (issue 29) where the slabs, which numpy allocates with
    huge pages, cost 3,400. A slab is reused once no array carved from it is alive (the builder copies them into
    the trace set's arrays; ``htc features`` builds a piece of 2^17 tokens at a time, so a file's lines cycle
    through two or three slabs instead of touching 72 MB of fresh memory); the thread keeps its slabs until
    ``release_slab``. The slabs of a file start at 256 kB and double up to 16 MB; a line of more than a quarter
    of that gets its own memory."""
    data = b"".join(buffers)
    size = len(data)
    if size > SLAB_BYTES // 4:
        return np.frombuffer(bytearray(data), dtype=np.float64)
    slab, used = getattr(_LOCAL, "slab", None), getattr(_LOCAL, "used", 0)
    if slab is None or used + size > slab.nbytes:
        slab, used = _next_slab(slab, size), 0
        _LOCAL.slab = slab
    slab.view[used:used + size] = data
    _LOCAL.used = used + size
    return slab.array[used >> 3:(used + size) >> 3]


class Slab:
    """A float64 buffer that line arrays are sliced from (``line_array``), and a byte view to copy into it.

    Attributes
    ----------
    array : ndarray of float64
        The buffer; every line array is a view of it (its ``base``).
    view : memoryview
        The buffer's bytes.
    nbytes : int
        Its size in bytes.
    """

    __slots__ = ("array", "view", "nbytes", "_refs")

    def __init__(self, nbytes: int) -> None:
        self.array = np.empty(nbytes // 8)
        self.view = memoryview(self.array).cast("B")
        self.nbytes = nbytes
        self._refs = _refcount(self.array)  # this object's and the byte view's: no line array yet

    def in_use(self) -> bool:
        """Whether a line array (or any view of one) is still alive: each holds a reference to ``array``.
        Always True where the interpreter counts no references (the slab is then never reused)."""
        return self._refs < 0 or _refcount(self.array) != self._refs


def _refcount(obj) -> int:
    get = getattr(sys, "getrefcount", None)
    return -1 if get is None else get(obj)


def _next_slab(full: Slab | None, size: int) -> Slab:
    """A slab for a line of ``size`` bytes once ``full`` (the current one, or None) has no room: the largest
    slab of the thread's that no array uses any longer, else a new one twice as large as ``full``
    (``SLAB_BYTES`` at most; the thread keeps its 6 largest)."""
    pool = getattr(_LOCAL, "slabs", None)
    if pool is None:
        pool = _LOCAL.slabs = []
    for slab in pool:  # largest first
        if slab.nbytes >= size and not slab.in_use():
            return slab
    slab = Slab(min(SLAB_BYTES, max(2 * (full.nbytes if full is not None else 0), 1 << 18, 4 * size)))
    pool.append(slab)
    pool.sort(key=lambda s: -s.nbytes)
    del pool[6:]
    return slab


def release_slab() -> None:
    """Let this thread's slabs go once the arrays carved from them are gone (the end of a file)."""
    _LOCAL.slab = None
    _LOCAL.slabs = None


class _Buffers:
    """The buffers of a line's step arrays as ``_step`` finds them, how many steps have a top_logprobs key, and
    the keys of the last step read (the next step usually has the same ones)."""

    __slots__ = ("lp", "top", "keyed", "keys", "others", "has_top")

    def __init__(self) -> None:
        self.lp: list = []
        self.top: list = []
        self.keyed = 0
        self.keys: list[str] = []
        self.others: list[str] = []  # the keys but the numeric ones
        self.has_top = False  # a top_logprobs key among them


def _step(st: Any, n: int, got: _Buffers) -> dict | None:
    """The step's other fields as Python values (``logprobs`` as a ``range`` of its ``n`` tokens: the numbers are
    in the buffers added to ``got``; ``step_shapes`` proved their shapes)."""
    if not isinstance(st, simdjson.Object):
        return None
    if len(st) == len(got.keys):
        # the last step's keys (the next step usually has the same ones): reading each of them proves it present,
        # and a step with as many entries as those distinct keys holds no other key and none twice; a missing one
        # raises KeyError before anything is kept (the order of a step's keys matters to no one)
        try:
            return _fields(st, n, got)
        except KeyError:
            pass
    keys = list(st.keys())
    if len(set(keys)) != len(keys) or "logprobs" not in keys:
        return None
    got.keys, got.others = keys, [k for k in keys if k not in NUMERIC_KEYS]
    got.has_top = "top_logprobs" in keys
    return _fields(st, n, got)


def _fields(st: Any, n: int, got: _Buffers) -> dict:
    """``_step`` for a step whose keys are ``got.keys`` (KeyError, with nothing kept, for a key it lacks)."""
    lp = st["logprobs"]
    out = {}
    for key in got.others:
        v = st[key]
        out[key] = v if type(v) in _SCALARS else _python(v, MAX_DEPTH - 3)
    top = st["top_logprobs"] if got.has_top else None
    got.lp.append(lp.as_buffer(of_type="d"))
    if got.has_top:
        got.keyed += 1
        if top is not None:
            got.top.append(top.as_buffer(of_type="d"))
    out["logprobs"] = range(n)
    return out


def step_shapes(skeleton: bytes) -> tuple[list[int], list[tuple[int, int] | None]] | None:
    """(the length of each ``logprobs`` array, (rows, width) of each ``top_logprobs`` array or None where it is
    null) of a line whose number and blank characters were deleted (``NUMBER_TEXT``), in the order of the text;
    None when either key holds anything else: a ``logprobs`` that is not an array of n >= 1 numbers, a
    ``top_logprobs`` that is not null or n >= 1 rows of the same k >= 1 numbers.

    The skeleton of an array of n numbers is ``[`` n-1 commas ``]``: every character a number can hold was
    deleted, and what stood between two commas of valid JSON made of those characters alone is a number. So a
    bool, a string, null, an object, an empty or a nested array inside the value shows in its skeleton and fails
    the comparison. Every occurrence of either key in the text is counted (in metadata, in a text, or a
    look-alike that the deletion made); the caller requires exactly one per step, so each is a step's own key.

    One regular-expression pass finds every occurrence with the brackets and commas that follow it
    (``KEY_VALUES``); each distinct piece is judged once (``value_shape``) and remembered, since the steps of a
    file have a few shapes: no Python work per step (issue 29: 0.045 -> 0.029 s on the 112 MB bench file)."""
    found = KEY_VALUES.findall(skeleton)
    got = list(map(SHAPE_MEMO.get, found, repeat(_UNSEEN)))
    if _UNSEEN in got:
        got = list(map(value_shape, found))
    if BAD_SHAPE in got:
        return None
    return [g for g in got if type(g) is int], [g for g in got if type(g) is not int]


#: every occurrence of either key in a skeleton, with the brackets and commas of its value (and the comma after
#: it): in valid JSON a key's value ends there, since the next key starts with a quote
KEY_VALUES = re.compile(rb'"(?:top_)?logprobs"(?::(?:null|\[[\[\],]*))?')
_UNSEEN = object()
#: what ``value_shape`` answers for a piece that is not a plain value of its key
BAD_SHAPE = object()
#: ``value_shape``'s memory: a piece of ``KEY_VALUES`` -> its shape (pieces up to 4 kB, at most 4,096 of them)
SHAPE_MEMO: dict[bytes, Any] = {}


def value_shape(piece: bytes) -> Any:
    """What a ``KEY_VALUES`` piece holds: n (``logprobs``: n >= 1 numbers), (n, k) (``top_logprobs``: n rows of
    k numbers), None (``top_logprobs``: null), or ``BAD_SHAPE`` (anything else, or no value)."""
    shape = SHAPE_MEMO.get(piece, _UNSEEN)
    if shape is _UNSEEN:
        shape = _judge(piece)
        if len(piece) <= 4096:
            if len(SHAPE_MEMO) >= 4096:
                SHAPE_MEMO.clear()
            SHAPE_MEMO[piece] = shape
    return shape


def _judge(piece: bytes) -> Any:
    """``value_shape`` without the memory."""
    top = piece.startswith(b'"top_')
    head = 15 if top else 11  # '"top_logprobs":' or '"logprobs":'
    if len(piece) <= head or piece[head - 1] != 58:  # no ':' and value
        return BAD_SHAPE
    v = piece[head:-1] if piece.endswith(b",") else piece[head:]
    if top and v == b"null":
        return None
    if not top:
        n = len(v) - 1  # '[' n-1 commas ']'
        return n if n >= 1 and v == _skeleton_of(n, 0) else BAD_SHAPE
    k = v.find(b"]") - 1  # '[[' k-1 commas ']'
    if k < 1 or (len(v) - 1) % (k + 2):
        return BAD_SHAPE
    n = (len(v) - 1) // (k + 2)  # n rows of k numbers: n * (k + 2) + 1 characters
    return (n, k) if v == _skeleton_of(n, k) else BAD_SHAPE


_SKELETONS: dict[tuple[int, int], bytes] = {}


def _skeleton_of(n: int, k: int) -> bytes:
    """The skeleton of an array of n numbers (k = 0) or of n rows of k numbers; the small ones are kept (a few
    hundred of at most 16 kB: every step of a file usually has one of a few shapes)."""
    text = _SKELETONS.get((n, k))
    if text is None:
        row = b"[" + b"," * (k - 1) + b"]"
        text = b"[" + b"," * (n - 1) + b"]" if k == 0 else b"[" + (row + b",") * (n - 1) + row + b"]"
        if len(text) <= 16384:
            if len(_SKELETONS) >= 512:
                _SKELETONS.clear()
            _SKELETONS[(n, k)] = text
    return text


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
