"""Logprob checks: chosen-token logprobs and top-k alternatives turned into validated numpy arrays.

- the native form (lists of numbers: ``logprobs``, ``top_logprobs``);
- OpenAI-shaped token lists (``[{token, logprob, top_logprobs: [...]}]``) with as little per-token
  Python work as possible, including vLLM's quirks (-9999 means -inf; k+1 alternatives repeat the
  sampled token);
- ``StepPart``, the validated arrays of one LLM call, and joining parts into one step.

Values must be finite and <= 0; a positive rounding error up to ``POSITIVE_TOLERANCE`` is clipped to 0
and counted. Problems are raised as ``FieldError`` naming the field and the value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from .common import POSITIVE_TOLERANCE, VLLM_NEG_INF, FieldError, is_number, type_name

# StepPart is what a reader hands to ``records.TrajAcc.add``; the rest is the readers' shared logprob checks
__all__ = ["StepPart"]


# ------------------------------------------------------------ native form
def chosen_logprobs(values: Any, field: str) -> tuple[np.ndarray, int]:
    """Validate the chosen-token logprobs of one step; return them and the number clipped to 0."""
    if not isinstance(values, list):
        raise FieldError(field, values, f"must be a list of numbers, got {type(values).__name__}")
    arr = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        if not is_number(v):
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
            if not is_number(v):
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


# ------------------------------------------------------------ OpenAI-shaped token lists
@dataclass
class StepPart:
    """The validated arrays of one LLM call (or one streamed chunk of it).

    Parameters
    ----------
    lp : numpy.ndarray
        The chosen tokens' logprobs, float64 ``[n_tokens]``, finite and <= 0.
    top : numpy.ndarray or None
        The top-k alternatives' logprobs ``[n_tokens, k]``, sorted descending, NaN-padded; None without any.
    tokens : list of str or None
        The token strings, when the source has them.
    text : str, optional
        The call's output text.
    clipped : int, default=0
        Tiny positive values clipped to 0 (counted in the load report).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.formats.logprobs import StepPart
    >>> part = StepPart(np.array([-0.1, -0.7]), np.array([[-0.1, -2.5], [-0.7, -0.9]]), ["Hel", "lo"], "Hello")
    >>> part.lp.size, part.top.shape
    (2, (2, 2))
    """

    lp: np.ndarray
    top: np.ndarray | None
    tokens: list[str] | None
    text: str | None = None
    clipped: int = 0


def empty_part(text: str | None = None) -> StepPart:
    """A part with no tokens (a call whose logprobs are all in other parts, or none)."""
    return StepPart(np.zeros(0), None, [], text, 0)


def numbers(values: list, fmt: str) -> np.ndarray:
    """A float array from a list that must hold only numbers (bool is not a number)."""
    types = set(map(type, values))
    if types <= {float, int}:
        return np.array(values, dtype=np.float64)
    for i, v in enumerate(values):
        if type(v) not in (float, int):
            raise FieldError(fmt.format(i=i), v, f"must be a number, got {type_name(v)}")
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
    """The values of one row of alternatives, each token string once (vLLM's k+1 lists repeat one)."""
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
    lens = _row_lengths(tops, rowfmt)
    k = max(lens, default=0)
    if k == 0:
        return None, 0
    for i, row in enumerate(tops):
        if row is not None and not isinstance(row, list):
            raise FieldError(rowfmt.format(i=i), row, f"must be a list of alternatives, got {type_name(row)}")
    if min(lens) == k:
        out = _uniform_matrix(tops, n, k, fmt, value_key)
        sorted_out = _sorted_if_plain(out, k)
        if sorted_out is not None:
            return sorted_out, 0
    else:
        out = _ragged_matrix(tops, n, k, fmt, value_key)
    if np.isnan(out).any():
        _reject_written_nan(tops, fmt, value_key)
    if k > 1:
        _dedup_tied_rows(out, tops, lens, value_key, token_key)
    return finish_top(out, fmt.replace("{vk}", value_key))


def _row_lengths(tops: list, rowfmt: str) -> list[int]:
    """The number of alternatives of each token (0 for a null row)."""
    try:
        return list(map(len, tops))
    except TypeError:
        lens = []
        for i, row in enumerate(tops):
            if row is None:
                lens.append(0)
            elif isinstance(row, list):
                lens.append(len(row))
            else:
                raise FieldError(rowfmt.format(i=i), row,
                                 f"must be a list of alternatives, got {type_name(row)}") from None
        return lens


def _uniform_matrix(tops: list, n: int, k: int, fmt: str, value_key: str) -> np.ndarray:
    """Every token lists k alternatives: one flat pass over the values."""
    try:
        flat = [a[value_key] for row in tops for a in row]
    except (TypeError, KeyError, IndexError):
        _explain_alternatives(tops, fmt, value_key)
        raise  # pragma: no cover
    if not set(map(type, flat)) <= {float, int}:
        _explain_alternatives(tops, fmt, value_key)
    return np.array(flat, dtype=np.float64).reshape(n, k)


def _sorted_if_plain(out: np.ndarray, k: int) -> np.ndarray | None:
    """The fast path (the common case): every value a plain logprob, no sentinel, no repeated value;
    the rows sorted descending, else None."""
    lo, hi = out.min(), out.max()
    if lo > VLLM_NEG_INF and hi <= 0:  # False when any value is NaN or infinite
        s = -np.sort(-out, axis=1)
        if k == 1 or not (s[:, 1:] == s[:, :-1]).any():
            return s
    return None


def _ragged_matrix(tops: list, n: int, k: int, fmt: str, value_key: str) -> np.ndarray:
    """Tokens list different numbers of alternatives: NaN-padded rows."""
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
    return out


def _reject_written_nan(tops: list, fmt: str, value_key: str) -> None:
    """A NaN that was written in the file (json fallback) is an error; padding NaN is not."""
    for i, row in enumerate(tops):
        if row:
            for j, a in enumerate(row):
                v = a[value_key]
                if v != v:
                    raise FieldError(fmt.format(i=i, j=j, vk=value_key), v, "must not be NaN")


def _dedup_tied_rows(out: np.ndarray, tops: list, lens: list[int], value_key: str, token_key: str) -> None:
    """Rows with tied values may repeat a token (vLLM's k+1 lists): keep each token once, in place."""
    s = -np.sort(-out, axis=1)
    ties = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
    for i in ties:
        vals = _dedup_row(tops[i], value_key, token_key)
        if len(vals) != lens[i]:
            out[i, :] = np.nan
            out[i, : len(vals)] = vals


def _explain_alternatives(tops: list, fmt: str, value_key: str) -> None:
    """Raise the :class:`FieldError` naming the first malformed alternative of ``tops``."""
    for i, row in enumerate(tops):
        if not row:
            continue
        for j, a in enumerate(row):
            f = fmt.format(i=i, j=j, vk=value_key)
            if not isinstance(a, dict):
                raise FieldError(f.rsplit(".", 1)[0], a, f"an alternative must be an object, got {type_name(a)}")
            if value_key not in a:
                raise FieldError(f, None, "missing", has_value=False)
            v = a[value_key]
            if type(v) not in (float, int):
                raise FieldError(f, v, f"must be a number, got {type_name(v)}")
    raise FieldError(fmt.split("[{i}]")[0], None, "malformed alternatives", has_value=False)


def token_list(content: Any, prefix: str) -> StepPart:
    """An OpenAI token list ``[{token, logprob, bytes, top_logprobs: [{token, logprob}]}]``."""
    if not isinstance(content, list):
        raise FieldError(prefix, content, f"must be a list of token objects, got {type_name(content)}")
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
                raise FieldError(f"{prefix}[{i}]", d, f"a token entry must be an object, got {type_name(d)}") from None
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
