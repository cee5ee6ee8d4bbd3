"""A trace set as the columnar tables the run store keeps, and back (exact round trip, no pickle).

``to_arrow`` gives four Arrow tables: one row per trajectory (the metadata
columns), per step (tokens per step, name, text, and the diagnosis fields
``input``/``tool``/``observation``/``error``/``latency_s`` that some step carries), per token (chosen logprob,
alternatives ``t0..t{k-1}``, token strings as codes into the vocabulary) and
the vocabulary itself. ``from_arrow`` rebuilds the identical ``TraceSet``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..traces import META_COLUMNS, TraceSet
from ..traces.stepfields import STEP_FIELDS

__all__ = ["to_arrow", "from_arrow"]


def objects_to_arrow(values: np.ndarray) -> pa.Array:
    """object array of str / None -> arrow string array (None stays null)."""
    return pa.array(values, type=pa.string(), from_pandas=False)


def _arrow_to_obj(col) -> np.ndarray:
    arr = col.to_numpy(zero_copy_only=False) if hasattr(col, "to_numpy") else np.asarray(col)
    out = np.empty(len(arr), dtype=object)
    out[:] = arr
    return out


def _encode_strings(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary-encode an object array of str/None: codes int32 (-1 = None) and the vocabulary."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    vocab = np.empty(len(uniques), dtype=object)
    vocab[:] = list(uniques)
    return codes.astype(np.int32), vocab


def _decode_strings(codes: np.ndarray, vocab: np.ndarray) -> np.ndarray:
    ext = np.empty(len(vocab) + 1, dtype=object)
    ext[: len(vocab)] = vocab
    ext[len(vocab)] = None
    idx = np.where(codes < 0, len(vocab), codes)
    return ext[idx]



def to_arrow(ts: TraceSet) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
    """The four tables a run set is stored as: trajectories, steps, tokens, vocabulary."""
    m = ts.meta
    traj: dict[str, pa.Array] = {
        "pos": pa.array(np.arange(ts.n_trajectories, dtype=np.int64)),
        "n_steps": pa.array(ts.steps_per_trajectory.astype(np.int64)),
    }
    for c in META_COLUMNS:
        if c == "success":
            s = m[c]
            traj[c] = pa.array(s.astype(object).where(s.notna(), None).tolist(), type=pa.bool_())
        elif c == "verbalized_confidence":
            traj[c] = pa.array(m[c].to_numpy(dtype=np.float64), type=pa.float64(), from_pandas=True)
        else:
            traj[c] = objects_to_arrow(m[c].to_numpy(dtype=object))
    step_cols = {
        "pos": pa.array(np.arange(ts.n_steps, dtype=np.int64)),
        "n_tokens": pa.array(ts.tokens_per_step.astype(np.int64)),
        "name": objects_to_arrow(np.asarray(ts.step_name, dtype=object)),
        "text": objects_to_arrow(np.asarray(ts.step_text, dtype=object)),
    }
    for f, arr in ts.step_fields.items():  # the diagnosis fields some step carries: extra columns, named as in JSONL
        step_cols[f] = pa.array(arr, type=pa.float64(), from_pandas=True) if f == "latency_s" else objects_to_arrow(arr)
    steps = pa.table(step_cols)
    tok: dict[str, pa.Array] = {"pos": pa.array(np.arange(ts.n_tokens, dtype=np.int64)),
                                "logprob": pa.array(ts.logprob, type=pa.float64())}
    for j in range(ts.k):
        tok[f"t{j}"] = pa.array(np.ascontiguousarray(ts.top_logprobs[:, j]), type=pa.float64())
    strings = []
    if ts.tokens is not None:
        strings.append(("token", np.asarray(ts.tokens, dtype=object)))
    if ts.top_tokens is not None:
        tt = np.asarray(ts.top_tokens, dtype=object)
        for j in range(tt.shape[1]):
            strings.append((f"tt{j}", tt[:, j]))
    vocab = np.zeros(0, dtype=object)
    if strings:
        codes, vocab = _encode_strings(np.concatenate([s for _, s in strings]))
        start = 0
        for name, s in strings:
            tok[name] = pa.array(codes[start:start + len(s)], type=pa.int32())
            start += len(s)
    vocab_tbl = pa.table({"code": pa.array(np.arange(len(vocab), dtype=np.int32)), "token": objects_to_arrow(vocab)})
    return pa.table(traj), steps, pa.table(tok), vocab_tbl


def _ordered(tbl: pa.Table) -> pa.Table:
    pos = tbl.column("pos").to_numpy()
    if len(pos) and not (pos[0] == 0 and np.all(np.diff(pos) == 1)):
        tbl = tbl.take(pa.array(np.argsort(pos, kind="stable")))
    return tbl


def _f64(tbl: pa.Table, name: str) -> np.ndarray:
    return tbl.column(name).to_numpy().astype(np.float64, copy=False)


def from_arrow(traj: pa.Table, steps: pa.Table, tok: pa.Table, vocab: pa.Table, k: int,
                has_tokens: bool, has_top_tokens: bool) -> TraceSet:
    """The TraceSet back from the tables of :func:`to_arrow` (rows in any order: ``pos`` orders them)."""
    traj, steps, tok, vocab = _ordered(traj), _ordered(steps), _ordered(tok), vocab
    n_tok = tok.num_rows
    logprob = _f64(tok, "logprob")
    top = np.empty((n_tok, k), dtype=np.float64)
    for j in range(k):
        top[:, j] = _f64(tok, f"t{j}")
    voc = _arrow_to_obj(vocab.take(pa.array(np.argsort(vocab.column("code").to_numpy()))).column("token")) \
        if vocab.num_rows else np.zeros(0, dtype=object)
    tokens = _decode_strings(tok.column("token").to_numpy(), voc) if has_tokens else None
    top_tokens = None
    if has_top_tokens:
        width = sum(1 for c in tok.column_names if c.startswith("tt"))
        top_tokens = np.empty((n_tok, width), dtype=object)
        for j in range(width):
            top_tokens[:, j] = _decode_strings(tok.column(f"tt{j}").to_numpy(), voc)
    n_tokens = steps.column("n_tokens").to_numpy().astype(np.int64)
    n_steps = traj.column("n_steps").to_numpy().astype(np.int64)
    meta_cols: dict[str, pd.Series] = {}
    for c in META_COLUMNS:
        col = traj.column(c)
        if c == "success":
            meta_cols[c] = pd.Series(col.to_pylist(), dtype="boolean")
        elif c == "verbalized_confidence":
            meta_cols[c] = pd.Series(col.to_numpy(zero_copy_only=False).astype(np.float64), dtype="float64")
        else:
            meta_cols[c] = pd.Series(_arrow_to_obj(col), dtype=object)
    return TraceSet(
        logprob=logprob,
        top_logprobs=top,
        step_offsets=np.concatenate([[0], np.cumsum(n_tokens)]).astype(np.int64),
        traj_offsets=np.concatenate([[0], np.cumsum(n_steps)]).astype(np.int64),
        meta=pd.DataFrame(meta_cols),
        step_name=_arrow_to_obj(steps.column("name")),
        step_text=_arrow_to_obj(steps.column("text")),
        tokens=tokens,
        top_tokens=top_tokens,
        step_fields={f: (steps.column(f).to_numpy(zero_copy_only=False).astype(np.float64) if f == "latency_s"
                         else _arrow_to_obj(steps.column(f))) for f in STEP_FIELDS if f in steps.column_names},
    )
