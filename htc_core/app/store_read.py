"""Reading some trajectories of a stored run set without reading the run set (``Store.load_rows``).

The Calibration page evaluates a sample of 20,000 runs: at a million stored runs, reading the whole run set to
take them from it held every token array in memory (4.65 GB for the process). Here only the sampled rows come
back: their trajectory rows, their steps and their tokens, each picked in DuckDB by a join against the wanted
positions (the positions of a trajectory's steps and tokens follow from the per-trajectory step and token
counts: the workspace has them in memory, else they are read from the store). DuckDB still scans the
tables (a uniform sample touches every row group) and keeps only the matching rows; the blocks it read stay
in its buffer pool up to its memory limit (80% of RAM by default: 350 MB more at 300k runs), so the read runs
under a limit of 128 MB plus 32 bytes per wanted token (:func:`_limit`; blocks are evicted, same speed).
The result is the TraceSet ``load_run_set(id).take(positions)`` gives (``tests/test_store_read.py``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..traces import TraceSet
from .columnar import from_arrow

__all__ = ["read_rows", "counts_from_store"]


def _ranges(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The positions ``start[i] .. start[i] + length[i] - 1`` of every i, concatenated."""
    total = int(length.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(start - np.concatenate([[0], np.cumsum(length)[:-1]]), length)
    return np.arange(total, dtype=np.int64) + offsets


def counts_from_store(con, run_set_id: str) -> tuple[np.ndarray, np.ndarray]:
    """The steps and tokens of every trajectory of a run set, in ``pos`` order, from the store."""
    steps = con.execute("SELECT n_steps FROM trajectories WHERE run_set = ? ORDER BY pos",
                        [run_set_id]).fetchnumpy()["n_steps"].astype(np.int64)
    per_step = con.execute(f"SELECT n_tokens FROM steps_{run_set_id} ORDER BY pos").fetchnumpy()["n_tokens"]
    starts = np.concatenate([[0], np.cumsum(steps)[:-1]])
    tokens = np.zeros(len(steps), dtype=np.int64)
    some = steps > 0
    if some.any():
        tokens[some] = np.add.reduceat(np.asarray(per_step, dtype=np.int64), starts[some])
    return steps, tokens


def _pick(con, sql: str, old: np.ndarray, params: list | None = None) -> pa.Table:
    """Rows of ``sql`` (an alias ``t`` with a ``pos`` column) whose ``pos`` is in ``old``, renumbered 0..: the
    i-th position of ``old`` (ascending) becomes ``pos`` i."""
    con.register("_htc_want", pa.table({"old": pa.array(old, type=pa.int64()),
                                        "new": pa.array(np.arange(len(old), dtype=np.int64))}))
    try:
        return con.sql(sql.replace("{want}", "_htc_want"), params=params or []).to_arrow_table()
    finally:
        con.unregister("_htc_want")


def _limit(n_tokens: int) -> str:
    return f"{128 + (32 * int(n_tokens) >> 20)}MB"


def read_rows(con, run_set_id: str, positions: np.ndarray, steps: np.ndarray, tokens: np.ndarray,
              k: int, has_tokens: bool, has_top_tokens: bool) -> TraceSet:
    """Trajectories ``positions`` (distinct, ascending) of a stored run set as a TraceSet. ``steps`` and
    ``tokens`` are the step and token counts of every trajectory of the run set (``pos`` order)."""
    positions = np.asarray(positions, dtype=np.int64)
    step_start = np.concatenate([[0], np.cumsum(steps)])
    token_start = np.concatenate([[0], np.cumsum(tokens)])
    want_steps = _ranges(step_start[positions], steps[positions])
    want_tokens = _ranges(token_start[positions], tokens[positions])
    con.execute(f"SET memory_limit = '{_limit(len(want_tokens))}'")
    try:
        tables = _read(con, run_set_id, positions, want_steps, want_tokens)
    finally:
        con.execute("RESET memory_limit")
    traj, step_rows, tok, vocab = tables
    if (traj.num_rows, step_rows.num_rows, tok.num_rows) != (len(positions), len(want_steps), len(want_tokens)):
        raise ValueError(f"run set {run_set_id}: the stored rows do not match the step and token counts given")
    return from_arrow(traj, step_rows, tok, vocab, k, has_tokens, has_top_tokens)


def _read(con, run_set_id: str, positions, want_steps, want_tokens) -> tuple:
    traj = _pick(con, "SELECT w.new AS pos, t.* EXCLUDE (pos, run_set) FROM trajectories t JOIN {want} w "
                      "ON t.pos = w.old WHERE t.run_set = ?", positions, [run_set_id])
    step_rows = _pick(con, f"SELECT w.new AS pos, t.* EXCLUDE (pos) FROM steps_{run_set_id} t JOIN {{want}} w "
                           "ON t.pos = w.old", want_steps)
    tok = _pick(con, f"SELECT w.new AS pos, t.* EXCLUDE (pos) FROM tokens_{run_set_id} t JOIN {{want}} w "
                     "ON t.pos = w.old", want_tokens)
    return traj, step_rows, tok, con.sql(f"SELECT * FROM vocab_{run_set_id}").to_arrow_table()
