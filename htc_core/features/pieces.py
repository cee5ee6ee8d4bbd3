"""The features of chunks computed piece by piece: what ``extract`` gives on each chunk, one piece held at a time.

``htc features`` reads its input in chunks (``--chunk-size`` trajectories, 50,000 by default) and writes each
chunk's rows at once. On the 112 MB top-5 bench file (3,000 trajectories, 1.5 M tokens: one chunk) the reader's
line arrays, the trace set's concatenation and the features' [tokens, 5] temporaries touched about 300 MB of
fresh memory, whose page faults were most of the command's system time (issue 29). Read in pieces of
``PIECE_TOKENS`` tokens (``ChunkReader.pieces``), each piece's buffers are freed before the next one is read,
and the allocator hands the same memory out again.

The values are those of ``extract`` on the whole chunk, bit for bit. A trajectory's features depend on the
others of its chunk only through the token confidences' alternatives (``htc_core.confidence``): the width of
the chunk's alternatives matrix (``k``; narrower runs are NaN-padded to it) decides how many columns TopkConf
averages, and OpenBLAS sums the last ``n % 4`` rows of a matrix-vector product in another order than the rest
(the pieces are cut at multiples of 4 tokens, so every row keeps its position modulo 4). So a piece is computed
as soon as it is read when the chunk's width cannot change its values (``settled``): no alternatives, the
``chosen`` profile, or at least ``top_k`` alternatives on every token that has any. Any other piece (fewer
alternatives than ``top_k``, or rows of unequal width) is kept and computed at the chunk's end, its matrix
padded to the chunk's width, as ``extract`` would see it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Iterable, Iterator

import numpy as np

from ..traces import TraceSet
from . import BLAS_LIMIT_TOKENS, FeatureMatrix, extract

__all__ = ["PIECE_TOKENS", "chunk_features", "settled"]

#: tokens per piece (issue 29, docs/benchmarks-ingest.md): 2^15 to 2^19 measured within the noise of each other on
#: the bench file; 2^17 is 1 MB per token array and 5 MB for [tokens, 5] alternatives (under the allocator's
#: 32 MB threshold of ``htc_core.heap``), for a fixed cost of about 0.4 ms per piece (``extract`` on 3 runs)
PIECE_TOKENS = 1 << 17


def settled(ts: TraceSet, profile: str, top_k: int) -> bool:
    """Whether the features of a piece are those it gets inside any chunk (see the module docstring).

    Parameters
    ----------
    ts : TraceSet
        The piece.
    profile : str
        The token-confidence profile.
    top_k : int
        The alternatives averaged into TopkConf.

    Returns
    -------
    bool
        True without alternatives, with the ``chosen`` profile, or when every token's first ``top_k``
        alternatives are all present or all absent (``ts.k >= top_k``).

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features.pieces import settled
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> ts.k, settled(ts, "paper", 5), settled(ts, "paper", 8), settled(ts, "chosen", 8)
    (5, True, False, True)
    """
    if profile == "chosen" or ts.k == 0 or top_k == 0:
        return True
    if ts.k < top_k:
        return False
    block = ts.top_logprobs[:, :top_k]
    if not np.isnan(block.sum()):  # no NaN at all (the values are finite log-probabilities: no overflow)
        return True
    absent = np.isnan(block).sum(axis=1)
    return bool(np.all((absent == 0) | (absent == top_k)))


def chunk_features(pieces: Iterable[tuple[TraceSet, bool]], columns: Callable[[TraceSet, FeatureMatrix], dict],
                   *, profile: str = "paper", top_k: int = 5) -> Iterator[dict]:
    """Per chunk, ``columns(ts, extract(ts))`` of the whole chunk, computed piece by piece.

    Parameters
    ----------
    pieces : iterable of (TraceSet, bool)
        ``(piece, starts_chunk)`` pairs (``ChunkReader.pieces``); each piece's token count but the last of a
        chunk's must be a multiple of 4.
    columns : callable
        ``columns(ts, fm) -> dict`` of name -> array with one value per trajectory of ``ts``.
    profile, top_k
        As :func:`htc_core.features.extract`.

    Yields
    ------
    dict
        For each chunk, the columns of its trajectories in order: the arrays ``columns`` returns on the whole
        chunk, joined from its pieces (a chunk of one piece: the arrays themselves).

    Raises
    ------
    ValueError
        As :func:`htc_core.features.extract`.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.features import extract
    >>> from htc_core.features.pieces import chunk_features
    >>> reader = htc.iter_chunks("sample_runs/units/units_SmolLM2-135M-greedy.jsonl", max_trajectories=100)
    >>> values = lambda ts, fm: {"f": fm.values}
    >>> [len(c["f"]) for c in chunk_features(reader.pieces(2_000), values)]
    [100, 100, 50]
    """
    parts: list = []  # per piece of the chunk: its columns, or the piece itself (computed at the chunk's end)
    width, limited = 0, False
    with contextlib.ExitStack() as limit:
        for ts, first in pieces:
            if first and parts:
                yield _join(parts, width, columns, profile, top_k)
                parts, width = [], 0
            if ts.n_tokens >= BLAS_LIMIT_TOKENS and not limited:  # once for all pieces: setting it costs ~3 ms
                limit.enter_context(_one_blas_thread())
                limited = True
            width = max(width, ts.k)
            parts.append(columns(ts, extract(ts, profile=profile, top_k=top_k)) if settled(ts, profile, top_k)
                         else ts)
        if parts:
            yield _join(parts, width, columns, profile, top_k)


def _one_blas_thread():
    from ..calibration.blas_threads import one_blas_thread

    return one_blas_thread()


def _join(parts: list, width: int, columns: Callable, profile: str, top_k: int) -> dict:
    """The columns of a chunk from its pieces' (a kept piece is computed here, padded to the chunk's width)."""
    done = []
    for p in parts:
        if isinstance(p, TraceSet):
            ts = p if p.k == width else dataclasses.replace(p, top_logprobs=_padded(p.top_logprobs, width))
            p = columns(p, extract(ts, profile=profile, top_k=top_k))
        done.append(p)
    if len(done) == 1:
        return done[0]
    return {name: np.concatenate([d[name] for d in done]) for name in done[0]}


def _padded(top: np.ndarray, width: int) -> np.ndarray:
    out = np.full((top.shape[0], width), np.nan)
    out[:, : top.shape[1]] = top
    return out
