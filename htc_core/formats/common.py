"""Validation shared by every reader: logprob arrays, alternatives, labels, input files."""

from __future__ import annotations

import gzip
import io
import math
import os
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

import numpy as np

#: a positive logprob up to this size is a rounding error and is clipped to 0
POSITIVE_TOLERANCE = 1e-6
#: vLLM writes this for -inf
VLLM_NEG_INF = -9999.0

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson")
JSON_SUFFIXES = (".json", ".json.gz")


class FieldError(ValueError):
    """A value in an input that makes the trajectory unusable."""

    def __init__(self, field: str, value: Any, reason: str, *, has_value: bool = True):
        super().__init__(reason)
        self.field = field
        self.value = value
        self.reason = reason
        self.has_value = has_value


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def chosen_logprobs(values: Any, field: str) -> tuple[np.ndarray, int]:
    """Validate the chosen-token logprobs of one step; return them and the number clipped to 0."""
    if not isinstance(values, list):
        raise FieldError(field, values, f"must be a list of numbers, got {type(values).__name__}")
    arr = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        if not _is_number(v):
            raise FieldError(f"{field}[{i}]", v, f"must be a number, got {type(v).__name__}")
        arr[i] = v
    if arr.size:
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise FieldError(f"{field}[{i}]", values[i], "must be finite (NaN and infinity are not log-probabilities)")
        sentinel = arr <= VLLM_NEG_INF
        if sentinel.any():
            i = int(np.flatnonzero(sentinel)[0])
            raise FieldError(f"{field}[{i}]", values[i],
                             "chosen-token logprob is the -inf sentinel (-9999); a sampled token cannot have probability 0")
        pos = arr > 0
        if pos.any():
            too_big = arr > POSITIVE_TOLERANCE
            if too_big.any():
                i = int(np.flatnonzero(too_big)[0])
                raise FieldError(f"{field}[{i}]", values[i], "must be <= 0 (a log-probability)")
            n_clip = int(pos.sum())
            arr[pos] = 0.0
            return arr, n_clip
    return arr, 0


def alternatives(values: Any, n: int, field: str) -> tuple[np.ndarray | None, int]:
    """Validate top-k alternatives (list of n lists of numbers; None allowed).

    Returns an [n, k] array sorted descending and NaN-padded (None when no
    token has alternatives) and the number of values clipped to 0. The vLLM
    sentinel -9999 and -inf mean "no alternative" and become NaN. Duplicates
    (vLLM's k+1 lists that repeat the sampled token) are dropped by the
    format readers that know the token strings.
    """
    if values is None:
        return None, 0
    if not isinstance(values, list):
        raise FieldError(field, values, f"must be a list (one list of alternatives per token), got {type(values).__name__}")
    if len(values) != n:
        raise FieldError(field, f"{len(values)} entries", f"has {len(values)} entries but logprobs has {n}")
    k = 0
    for i, row in enumerate(values):
        if row is None:
            continue
        if not isinstance(row, list):
            raise FieldError(f"{field}[{i}]", row, f"must be a list of numbers, got {type(row).__name__}")
        k = max(k, len(row))
    if k == 0:
        return None, 0
    out = np.full((n, k), np.nan)
    for i, row in enumerate(values):
        if not row:
            continue
        for j, v in enumerate(row):
            if not _is_number(v):
                raise FieldError(f"{field}[{i}][{j}]", v, f"must be a number, got {type(v).__name__}")
            if v != v:
                raise FieldError(f"{field}[{i}][{j}]", v, "must not be NaN")
            if v == math.inf:
                raise FieldError(f"{field}[{i}][{j}]", v, "must not be +infinity")
            out[i, j] = v
    with np.errstate(invalid="ignore"):
        missing = out <= VLLM_NEG_INF  # the vLLM sentinel and -inf mean "no alternative"
        out[missing] = np.nan
        too_big = out > POSITIVE_TOLERANCE
        if too_big.any():
            i, j = map(int, np.argwhere(too_big)[0])
            raise FieldError(f"{field}[{i}][{j}]", values[i][j], "must be <= 0 (a log-probability)")
        pos = out > 0
        n_clip = int(pos.sum())
        out[pos] = 0.0
    out = -np.sort(-out, axis=1)  # descending, NaN last
    return out, n_clip


def token_strings(values: Any, n: int, field: str) -> list[str] | None:
    if values is None:
        return None
    if not isinstance(values, list):
        raise FieldError(field, values, f"must be a list of strings, got {type(values).__name__}")
    if len(values) != n:
        raise FieldError(field, f"{len(values)} entries", f"has {len(values)} entries but logprobs has {n}")
    return ["" if t is None else str(t) for t in values]


def success_label(value: Any, field: str = "success") -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    raise FieldError(field, value, f"must be true, false or null, got {type(value).__name__}")


def verbalized(value: Any, field: str = "verbalized_confidence") -> tuple[float | None, str | None]:
    """Parse a verbalized confidence; returns (value in [0, 1] or None, warning or None)."""
    if value is None:
        return None, None
    if isinstance(value, str):
        s = value.strip().rstrip("%").strip()
        try:
            v = float(s)
        except ValueError:
            return None, f"not a number ({value!r}); ignored"
        if value.strip().endswith("%"):
            v /= 100.0
    elif _is_number(value):
        v = float(value)
    else:
        return None, f"must be a number, got {type(value).__name__}; ignored"
    if not math.isfinite(v):
        return None, "not finite; ignored"
    if 1.0 < v <= 100.0:
        return v / 100.0, "read as a percentage"
    if not 0.0 <= v <= 1.0:
        return None, "outside [0, 1] (or 0-100 %); ignored"
    return v, None


def optional_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


# ------------------------------------------------------------------ input files
def expand_inputs(inputs: Iterable[str | os.PathLike], suffixes: tuple[str, ...] = JSONL_SUFFIXES + JSON_SUFFIXES) -> tuple[list[Path], list[str]]:
    """Files named directly, plus matching files inside directories (sorted). Returns (files, errors).

    Inside a directory, entries whose name starts with '_' or '.' are skipped
    (raw recordings and caches live there); name such a file directly to read it.
    """
    files: list[Path] = []
    errors: list[str] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(suffixes)
                           and not any(part.startswith(("_", ".")) for part in f.relative_to(p).parts))
            if not found:
                errors.append(f"{p}: directory holds no {'/'.join(suffixes)} files")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            errors.append(f"{p}: no such file or directory")
    return files, errors


def open_binary(path: Path) -> IO[bytes]:
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb", buffering=1 << 20)


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line) without reading the file into memory."""
    with open_binary(path) as fh:
        for no, raw in enumerate(fh, start=1):
            yield no, raw


def decode_line(raw: bytes) -> str:
    return raw.decode("utf-8")


def head_bytes(path: Path, n: int = 65536) -> bytes:
    with open_binary(path) as fh:
        return fh.read(n)


__all__ = [
    "FieldError", "chosen_logprobs", "alternatives", "token_strings", "success_label", "verbalized",
    "optional_text", "expand_inputs", "iter_lines", "open_binary", "head_bytes", "io",
]
