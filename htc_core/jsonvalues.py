"""Hostile values in decoded JSON: found once, reported as a bad value of their field.

A JSON text can decode into values that the rest of the pipeline cannot hold or write back:

- a number that does not fit a float64 (``1e400``, a 400-digit integer): ``float()`` overflows;
- an integer literal over Python's int-string limit (4,300 digits): ``int()`` refuses it;
- a lone surrogate (``"\\ud800"``): the text cannot be encoded as UTF-8, so writing it fails half-way;
- nesting deeper than ``MAX_DEPTH``: code that walks the value recursively (``json.dumps``, ``repr``) fails.

``DECODE_HOOKS`` make the ``json`` decoder return a ``BadNumber`` marker instead of an out-of-range number
(and never convert a long digit string), and ``first_bad_value`` walks a decoded value without recursion and
returns the first problem as ``(field path, value, reason)``. The decoders in ``formats.jsonio`` call it only where
such a value can be present: when orjson refused the text (it rejects all of the above but depth), or when
the text may nest deeper than ``MAX_DEPTH``.

Shared by the readers (``formats.jsonio``) and the model files (``calibration.model_file``); it imports nothing
from ``htc_core``.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

import numpy as np

# deepest nesting of arrays/objects accepted in one record (a trace needs fewer than 20 levels)
MAX_DEPTH = 200
# an integer literal longer than this cannot fit a float64 (1.8e308 has 309 digits); it is never converted
MAX_INT_DIGITS = 330
FLOAT_MAX = sys.float_info.max


class BadNumber:
    """A JSON number that does not fit a float64, kept as a marker (its first digits and length).

    What ``json.loads(text, **DECODE_HOOKS)`` returns for ``1e400`` or a 400-digit integer, instead of
    overflowing.

    Parameters
    ----------
    text : str
        The number's text (its first 24 characters are kept as ``text``, its length as ``digits``).

    Examples
    --------
    >>> from htc_core.jsonvalues import BadNumber
    >>> big = BadNumber("9" * 400)
    >>> big.digits, big
    (400, 999999999999999999999999... (400 characters))
    """

    __slots__ = ("text", "digits")

    def __init__(self, text: str):
        self.text = text[:24]
        self.digits = len(text)

    def __repr__(self) -> str:
        more = f"... ({self.digits} characters)" if self.digits > 24 else ""
        return f"{self.text}{more}"


def _parse_int(s: str) -> Any:
    if len(s) > MAX_INT_DIGITS:
        return BadNumber(s)
    v = int(s)
    return v if -FLOAT_MAX <= v <= FLOAT_MAX else BadNumber(s)


def _parse_float(s: str) -> Any:
    v = float(s)
    return BadNumber(s) if math.isinf(v) else v


# keyword arguments for ``json.loads`` / ``json.JSONDecoder``
DECODE_HOOKS = {"parse_int": _parse_int, "parse_float": _parse_float}

# text that may hold a value ``first_bad_value`` reports: a surrogate escape, a long digit run, a big exponent
_SUSPECT = re.compile(r"\\u[dD][89a-fA-F]|\d{300}|[eE][+]?0*\d{3}")
_CHUNK = 1 << 22


def max_bracket_depth(raw: bytes | str) -> int:
    """Deepest bracket nesting of a JSON text, counting brackets inside strings too (an over-estimate).

    Parameters
    ----------
    raw : bytes or str
        The JSON text (scanned with numpy in 4 MiB chunks).

    Returns
    -------
    int

    Examples
    --------
    >>> from htc_core.jsonvalues import max_bracket_depth
    >>> max_bracket_depth('{"a": [[1], {"b": []}]}')
    4
    """
    b = raw.encode("utf-8", errors="replace") if isinstance(raw, str) else raw
    a = np.frombuffer(b, dtype=np.uint8)
    best = level = 0
    for start in range(0, a.size, _CHUNK):  # in chunks: a 200 MB line never gets a 1.6 GB int64 temporary
        c = a[start:start + _CHUNK]
        opening = (c == 91) | (c == 123)
        brackets = c[opening | (c == 93) | (c == 125)]
        if not brackets.size:
            continue
        depth = np.cumsum(np.where((brackets == 91) | (brackets == 123), 1, -1)) + level
        best = max(best, int(depth.max()))
        level = int(depth[-1])
    return best


def may_nest_too_deep(raw: bytes | str) -> bool:
    """True when ``raw`` may nest deeper than MAX_DEPTH (numpy passes over the bytes: no Python per bracket).

    Parameters
    ----------
    raw : bytes or str
        The JSON text.

    Returns
    -------
    bool

    Examples
    --------
    >>> from htc_core.jsonvalues import MAX_DEPTH, may_nest_too_deep
    >>> may_nest_too_deep("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)), may_nest_too_deep("[[1, 2]]")
    (True, False)
    """
    if len(raw) < 2 * MAX_DEPTH:
        return False
    if len(raw) < 1 << 16:  # short text: counting is cheaper than the numpy passes
        n = raw.count("[") + raw.count("{") if isinstance(raw, str) else raw.count(b"[") + raw.count(b"{")
        if n <= MAX_DEPTH:
            return False
    if isinstance(raw, bytes) and len(raw) < 1 << 20 and nests_within(raw, MAX_DEPTH):
        return False
    return max_bracket_depth(raw) > MAX_DEPTH


#: ``bytes.translate`` deletes every byte but the four brackets
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")


def nests_within(raw: bytes, depth: int) -> bool:
    """True when the brackets of ``raw`` (those inside strings too) are properly nested and no deeper than
    ``depth``; False says nothing (``max_bracket_depth`` decides then).

    The brackets alone (one ``bytes.translate``), then the empty pairs ``[]`` and ``{}`` deleted pass after pass:
    a pass removes at most two levels, so brackets that are gone within ``depth // 2`` passes nest at most
    ``depth`` deep, and their running count (``max_bracket_depth``) peaks at that nesting. A line of the ingest
    bench (37 kB, 1,000 brackets, 5 levels): 16 us, against 50 us for the numpy scan that format detection paid
    on each of its 200 sampled lines (issue 29)."""
    s = raw.translate(None, _NOT_BRACKETS)
    for _ in range(depth // 2):
        if not s:
            return True
        s = s.replace(b"[]", b"").replace(b"{}", b"")
    return not s


def suspect(text: str) -> bool:
    """True when a JSON text decoded with ``DECODE_HOOKS`` may hold a value ``first_bad_value`` reports.

    A cheap look at the text (a surrogate escape, a long digit run, a three-digit exponent, deep nesting), so
    that the walk runs only where it can find something.

    Parameters
    ----------
    text : str
        The JSON text.

    Returns
    -------
    bool

    Examples
    --------
    >>> from htc_core.jsonvalues import suspect
    >>> suspect('{"logprob": -1e400}'), suspect('{"logprob": -0.25}')
    (True, False)
    """
    return _SUSPECT.search(text) is not None or may_nest_too_deep(text)


def _bad_string(s: str) -> str | None:
    if s.isascii():
        return None
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"text holds a lone surrogate (\\u{ord(s[e.start]):04x} at character {e.start}), not valid Unicode"
    return None


def _path(parts: tuple) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    out = out or "(the record)"
    return out if len(out) <= 80 else out[:60] + f"... ({len(parts)} levels)"


def _scalar_problem(v: Any) -> str | None:
    if isinstance(v, str):
        return _bad_string(v)
    if isinstance(v, BadNumber):
        return f"number with {v.digits} characters does not fit a float64"
    if isinstance(v, int) and not isinstance(v, bool) and not -FLOAT_MAX <= v <= FLOAT_MAX:
        return "integer does not fit a float64"
    return None


def first_bad_value(obj: Any, max_depth: int = MAX_DEPTH) -> tuple[str, Any, str] | None:
    """The first (field path, value, reason) of a value in ``obj`` that cannot be used, or None.

    A number beyond float64 (a ``BadNumber``), a lone surrogate in a text or a key, or nesting deeper than
    ``max_depth``. Walks with an explicit stack (no recursion), so any nesting is safe to check.

    Parameters
    ----------
    obj : object
        A decoded JSON value (decode with ``DECODE_HOOKS`` so that big numbers arrive as ``BadNumber``).
    max_depth : int, default MAX_DEPTH
        The deepest nesting accepted (200).

    Returns
    -------
    tuple of (str, object, str) or None
        The field's path (``steps[0].logprobs[1]``), the value (None for too deep a nesting; texts cut to 40
        characters) and why it cannot be used; None when every value is fine.

    Examples
    --------
    >>> import json
    >>> from htc_core.jsonvalues import DECODE_HOOKS, first_bad_value
    >>> record = json.loads('{"steps": [{"logprobs": [-0.1, 1e400]}]}', **DECODE_HOOKS)
    >>> first_bad_value(record)
    ('steps[0].logprobs[1]', 1e400, 'number with 5 characters does not fit a float64')
    >>> first_bad_value({"a": [[[1]]]}, max_depth=2)
    ('a', None, 'nested more than 2 levels deep')
    >>> first_bad_value({"id": "run-1", "steps": []}) is None
    True
    """
    stack: list[tuple[Any, tuple, int]] = [(obj, (), 0)]
    while stack:
        v, path, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth >= max_depth:  # named by its last key: where the deep structure hangs
                while path and isinstance(path[-1], int):
                    path = path[:-1]
                return _path(path), None, f"nested more than {max_depth} levels deep"
            if isinstance(v, dict):
                for k, x in v.items():
                    why = _bad_string(k) if isinstance(k, str) else None
                    if why:
                        return _path(path), None, f"a key {why.replace('text holds', 'holds')}"
                    stack.append((x, path + (k,), depth + 1))
            else:
                stack.extend((x, path + (i,), depth + 1) for i, x in enumerate(v))
            continue
        why = _scalar_problem(v)
        if why:
            return _path(path), (v if not isinstance(v, str) else v[:40]), why
    return None


__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "BadNumber", "DECODE_HOOKS", "first_bad_value", "suspect",
           "may_nest_too_deep", "max_bracket_depth"]
