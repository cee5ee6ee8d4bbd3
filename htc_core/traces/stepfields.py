"""The optional per-step diagnosis fields of a trace set (DESIGN.md section 2).

``input`` (the text that came into the call beyond what the previous call saw), ``tool`` (the action the
step took: ``{"name": ..., "arguments": ...}``), ``observation`` (the tool result that followed the step),
``error`` (a tool or runtime error text) and ``latency_s``. A trace set keeps them as columns next to the
step offsets, in a dict ``{field: array[n_steps]}`` holding only the fields some step carries: text fields
are object arrays of str / None, ``tool`` is kept as its compact JSON text (so it round-trips through the
store's string columns unchanged), ``latency_s`` is float64 with NaN where unknown. No feature reads them.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

import numpy as np
import orjson

# normalize, take, concat, step_dict and Columns are the trace set's and the builder's helpers (not public)
__all__ = ["STEP_FIELDS", "TEXT_FIELDS", "tool_json", "tool_of"]

STEP_FIELDS = ("input", "tool", "observation", "error", "latency_s")
TEXT_FIELDS = ("input", "tool", "observation", "error")


class Columns:
    """Collects step fields step by step (readers / the builder), then makes the arrays once."""

    def __init__(self) -> None:
        self.n = 0
        self._cols: dict[str, dict[int, Any]] = {}

    def extend(self, n_steps: int, detail: Mapping[str, list] | None) -> None:
        """Add ``n_steps`` steps; ``detail`` maps a field to its values for these steps (None = absent)."""
        if detail:
            for name, values in detail.items():
                col = self._cols.setdefault(name, {})
                for j, v in enumerate(values):
                    if v is not None:
                        col[self.n + j] = v
        self.n += n_steps

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns of the fields some step carries (text fields object arrays, ``latency_s`` float64)."""
        out: dict[str, np.ndarray] = {}
        for name in STEP_FIELDS:
            col = self._cols.get(name)
            if not col:
                continue
            if name == "latency_s":
                arr = np.full(self.n, np.nan)
            else:
                arr = np.full(self.n, None, dtype=object)
            idx = np.fromiter(col.keys(), dtype=np.int64, count=len(col))
            vals = list(col.values())
            if name == "latency_s":
                arr[idx] = np.asarray(vals, dtype=np.float64)
            else:
                tmp = np.empty(len(vals), dtype=object)
                tmp[:] = vals
                arr[idx] = tmp
            out[name] = arr
        return out


def normalize(fields: Mapping[str, Any] | None, n_steps: int) -> dict[str, np.ndarray]:
    """Validated columns: known names only, one entry per step, the right dtypes; all-empty columns dropped."""
    if fields is None:
        return {}
    if not isinstance(fields, Mapping):
        raise ValueError(f"step_fields must be a dict of arrays, got {type(fields).__name__}")
    out: dict[str, np.ndarray] = {}
    for name, values in fields.items():
        if name not in STEP_FIELDS:
            raise ValueError(f"step_fields: unknown field {name!r}; valid: {', '.join(STEP_FIELDS)}")
        if values is None:
            continue
        if name == "latency_s":
            arr = np.asarray(values, dtype=np.float64).reshape(-1)
        else:
            arr = values if isinstance(values, np.ndarray) and values.dtype == object else _objects(values)
        if len(arr) != n_steps:
            raise ValueError(f"step_fields[{name!r}] must have {n_steps} entries (one per step), got {len(arr)}")
        if name == "latency_s":
            if np.isnan(arr).all():
                continue
        elif not any(v is not None for v in arr):
            continue
        out[name] = arr
    return out


def _objects(values: Iterable[Any]) -> np.ndarray:
    vals = list(values)
    arr = np.empty(len(vals), dtype=object)
    arr[:] = vals
    return arr


def take(fields: dict[str, np.ndarray], step_idx: np.ndarray) -> dict[str, np.ndarray]:
    """The columns of the steps at ``step_idx``, in that order."""
    return {k: v[step_idx] for k, v in fields.items()}


def concat(parts: list[tuple[dict[str, np.ndarray], int]]) -> dict[str, np.ndarray]:
    """Columns of several trace sets, given as (fields, n_steps); a field one set lacks is empty there."""
    names = [f for f in STEP_FIELDS if any(f in p for p, _ in parts)]
    out: dict[str, np.ndarray] = {}
    for name in names:
        pieces = []
        for p, n in parts:
            if name in p:
                pieces.append(p[name])
            elif name == "latency_s":
                pieces.append(np.full(n, np.nan))
            else:
                pieces.append(np.full(n, None, dtype=object))
        out[name] = np.concatenate(pieces) if pieces else np.zeros(0)
    return out


def step_dict(fields: dict[str, np.ndarray], s: int) -> dict[str, Any]:
    """The fields step ``s`` carries, as they appear in htc-trace JSONL (``tool`` as an object)."""
    out: dict[str, Any] = {}
    for name, arr in fields.items():
        v = arr[s]
        if name == "latency_s":
            if not np.isnan(v):
                out[name] = float(v)
        elif v is not None:
            out[name] = tool_of(v) if name == "tool" else v
    return out


def tool_json(name: Any, arguments: Any = None) -> str | None:
    """The stored form of a tool call: compact JSON ``{"name": ..., "arguments": ...}``.

    Parameters
    ----------
    name : object
        The tool's name (converted to str); None or a blank text means no tool call.
    arguments : object, optional
        The call's arguments (any JSON value; others are stored as their text); left out when None.

    Returns
    -------
    str or None
        The JSON text, or None without a name.

    Examples
    --------
    >>> from htc_core.traces import tool_json
    >>> tool_json("search", {"query": "capital of France"})
    '{"name":"search","arguments":{"query":"capital of France"}}'
    >>> tool_json("  ") is None
    True
    """
    if name is None or (isinstance(name, str) and not name.strip()):
        return None
    obj: dict[str, Any] = {"name": str(name)}
    if arguments is not None:
        obj["arguments"] = arguments
    try:
        return orjson.dumps(obj, default=str).decode()
    except TypeError:  # e.g. an integer beyond 64 bits: the standard encoder takes it
        return json.dumps(obj, ensure_ascii=False, default=str, separators=(",", ":"))


def tool_of(stored: str | None) -> dict | None:
    """The tool call object back from its stored JSON text.

    Parameters
    ----------
    stored : str or None
        The stored form (:func:`tool_json`); a text that is not a JSON object becomes the name.

    Returns
    -------
    dict or None
        ``{"name": ..., "arguments": ...}`` (``arguments`` only when stored), or None for None.

    Examples
    --------
    >>> from htc_core.traces import tool_json, tool_of
    >>> tool_of(tool_json("convert", "3 km to m"))
    {'name': 'convert', 'arguments': '3 km to m'}
    >>> tool_of("ls -la")
    {'name': 'ls -la'}
    """
    if stored is None:
        return None
    try:
        obj = json.loads(stored)
    except (TypeError, ValueError):
        return {"name": str(stored)}
    return obj if isinstance(obj, dict) else {"name": str(stored)}
