"""The workspace the pages read: stored run sets, their features and baseline confidences, aligned.

:func:`build_workspace` loads run sets from the :class:`~htc_core.app.store.Store`
with their 48 features (from the store's feature cache; computed and cached
when missing) and the raw single-signal baseline confidences.
:class:`Workspace` selects and frames them; :func:`browse` filters such a frame
the way the Runs page does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..explain.flags import FLAGS, StructuralFlags, structural_flags
from ..features import FEATURE_NAMES, FeatureMatrix
from ..traces import TraceSet, concat
from .features_store import write_columns
from .features_store import StoredColumns, has_columns, in_pos_order, read_columns
from .store import Store
from .stored_traces import StoredTraces, text_array

__all__ = ["Workspace", "build_workspace", "browse"]


@dataclass
class Workspace:
    """Everything the pages read about the stored runs, in one aligned bundle (row i = trajectory i).

    ``ts`` the concatenated run sets, ``run_set`` the run set id of every
    trajectory, ``features`` the 48 features (cached in the store per run set,
    profile and top_k), ``baselines`` the raw single-signal confidences.
    """

    ts: TraceSet
    run_set: np.ndarray
    features: FeatureMatrix
    baselines: pd.DataFrame
    profile: str
    top_k: int
    #: the per-run columns read from the store (flags, GAC scores, counts); None for a workspace built in memory
    stored: StoredColumns | None = None

    def __len__(self) -> int:
        return self.ts.n_trajectories

    @property
    def flags(self) -> StructuralFlags:
        """The structural flags of every trajectory (computed once per workspace)."""
        cached = self.__dict__.get("_flags")
        if cached is None:
            cached = self.__dict__["_flags"] = self.stored.flags if self.stored is not None \
                else structural_flags(self.ts)
        return cached

    def trajectory(self, position: int) -> tuple[TraceSet, int]:
        """(trace set, row) holding trajectory ``position``: only that run read from the store when the
        workspace's tokens were not loaded, else the whole trace set."""
        if isinstance(self.ts, StoredTraces) and not self.ts.loaded:
            return self.ts.one(position), 0
        return self.ts, int(position)

    @property
    def labels(self) -> np.ndarray:
        return self.ts.labels

    @property
    def keys(self) -> np.ndarray:
        """A key unique across run sets: ``<run set>:<trajectory id>``."""
        cached = self.__dict__.get("_keys")
        if cached is None:
            cached = self.__dict__["_keys"] = np.asarray(self.keys_arrow().to_numpy(zero_copy_only=False), dtype=object)
        return cached

    def keys_arrow(self) -> pa.Array:
        """:attr:`keys` as an Arrow string array (built in Arrow: no Python string per run)."""
        cached = self.__dict__.get("_keys_arrow")
        if cached is None:
            ids = pc.fill_null(self.text_column("id"), "None")
            rs = text_array(np.asarray(self.run_set, dtype=object))
            cached = self.__dict__["_keys_arrow"] = pc.binary_join_element_wise(rs, ids, ":")
        return cached

    def text_column(self, name: str) -> pa.Array:
        """A metadata text column (id, dataset, model, question, ...) as an Arrow string array (None is null)."""
        if isinstance(self.ts, StoredTraces):
            return self.ts.text_column(name)
        return text_array(self.ts.meta[name].to_numpy(dtype=object))

    def content_digest(self) -> str:
        """A hash of what every computation on this workspace reads: run keys, labels, tokens and their
        offsets, the 48 features, the grouping columns, the verbalized confidence and the profile. Results are
        cached under it (not under the store's revision), so saving a model or uploading runs outside this
        selection never invalidates them. Computed once per workspace."""
        cached = self.__dict__.get("_digest")
        if cached is not None:
            return cached
        import hashlib

        h = hashlib.blake2b(digest_size=20)
        for part in (self.profile, str(self.top_k)):
            h.update(part.encode("utf-8", "surrogatepass") + b"\x1e")
        for arr in (self.keys_arrow(), *(self.text_column(c) for c in ("dataset", "model", "framework"))):
            _hash_strings(h, arr)   # the Arrow buffers themselves: no Python string per run
        features = (self.features.values,)
        if isinstance(self.ts, StoredTraces):
            # the tokens as stored: each run set's digest (written with its columns: of its tokens, and of its
            # features when it starts with 'tf:') and the rows taken
            digests = self.stored.digests if self.stored is not None else {}
            used = [str(r) for r in pd.unique(self.run_set)]
            h.update("\x1f".join(f"{r}={digests.get(r, r)}" for r in used).encode())
            tokens = (self.ts._rows,)
            if used and all(str(digests.get(r, "")).startswith("tf:") for r in used):
                features = ()    # covered by the digests: 400 MB not hashed again at a million runs
            verbalized = self.ts.verbalized_column()
        else:
            tokens = (self.ts.logprob, self.ts.top_logprobs, self.ts.step_offsets, self.ts.traj_offsets)
            verbalized = self.ts.meta["verbalized_confidence"].to_numpy(dtype=np.float64)
        for arr in (self.labels, verbalized, *features, *tokens):
            a = np.ascontiguousarray(arr)
            h.update(str((a.dtype.str, a.shape)).encode())
            h.update(memoryview(a).cast("B") if a.size else b"")
        self.__dict__["_digest"] = digest = h.hexdigest()
        return digest

    def position_of(self, key: str | None) -> int | None:
        """The row of ``key`` (``<run set>:<trajectory id>``), or of the first trajectory whose plain id is
        ``key`` (a shared ``?id=`` link), or None."""
        if key is None:
            return None
        hits = np.flatnonzero(self.keys == key)
        if not hits.size:
            hits = np.flatnonzero(self.ts.ids.astype(str) == str(key))
        return int(hits[0]) if hits.size else None

    def url_id(self, position: int) -> str:
        """How a link names row ``position``: its trajectory id when unique here, else its key."""
        tid = str(self.ts.ids[position])
        return tid if int(np.count_nonzero(self.ts.ids.astype(str) == tid)) == 1 else str(self.keys[position])

    def take(self, indices) -> "Workspace":
        idx = np.asarray(indices, dtype=np.int64)
        ts = self.ts.subset(idx) if isinstance(self.ts, StoredTraces) else self.ts.take(idx)
        return Workspace(ts=ts, run_set=self.run_set[idx], features=self.features.take(idx),
                         baselines=self.baselines.iloc[idx].reset_index(drop=True), profile=self.profile,
                         top_k=self.top_k, stored=None if self.stored is None else _take_stored(self.stored, idx))

    def values(self, column: str) -> list[str]:
        """Sorted distinct values of a metadata column (missing shown as '(none)')."""
        return sorted({"(none)" if v is None else str(v) for v in pc.unique(self.text_column(column)).to_pylist()})

    def mask(self, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None,
             frameworks: Sequence[str] | None = None, run_sets: Sequence[str] | None = None) -> np.ndarray:
        m = np.ones(len(self), dtype=bool)
        for col, chosen in (("dataset", datasets), ("model", models), ("framework", frameworks)):
            if chosen:
                vals = pc.fill_null(self.text_column(col), "(none)")
                m &= pc.is_in(vals, value_set=pa.array([str(v) for v in chosen], type=pa.string())).to_numpy(
                    zero_copy_only=False)
        if run_sets:
            m &= np.isin(self.run_set, list(run_sets))
        return m

    def select(self, **filters) -> "Workspace":
        m = self.mask(**filters)
        return self if m.all() else self.take(np.flatnonzero(m))

    def frame(self) -> pd.DataFrame:
        """One row per trajectory: position, key, run_set, id, dataset, model, framework, question,
        answer, gold, success (1/0/NaN), steps, tokens, the raw baseline confidences, the structural flags in
        words (``flags``) and one boolean column per flag (``flag_<name>``, unknown counted as not raised)."""
        meta = self.ts.meta
        df = pd.DataFrame({"position": np.arange(len(self)), "key": self.keys, "run_set": self.run_set})
        for c in ("id", "dataset", "model", "framework", "question", "answer", "gold"):
            # object dtype on purpose: missing text stays None (pandas 3 would infer 'str' with NaN)
            df[c] = pd.Series(meta[c].to_numpy(dtype=object), dtype=object)
        df["success"] = self.labels
        df["steps"] = self.ts.steps_per_trajectory
        df["tokens"] = self.ts.tokens_per_trajectory
        for c in self.baselines.columns:
            df[c] = self.baselines[c].to_numpy()
        fl = self.flags
        words = np.full(len(self), "", dtype=object)
        for f in FLAGS:
            raised = fl.frame[f].fillna(False).to_numpy(dtype=bool)
            df[f"flag_{f}"] = raised
            words[raised] = np.where(words[raised] == "", FLAGS[f], words[raised] + ", " + FLAGS[f])
        df["flags"] = words
        return df


def browse(frame: pd.DataFrame, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None,
           label: str = "any", confidence: str | None = None, confidence_range: tuple[float, float] = (0.0, 1.0),
           text: str = "", flags: Sequence[str] = ()) -> pd.DataFrame:
    """Filter a ``Workspace.frame()`` (plus optional confidence columns) like the Runs page does.

    ``label``: 'any', 'success', 'failure' or 'unlabeled'; ``confidence``: the
    column the range applies to; ``text``: case-insensitive substring of the
    question (or id), taken literally; ``flags``: names of structural flags
    (``htc_core.explain.FLAGS``) that must all be raised.
    """
    if label not in ("any", "success", "failure", "unlabeled"):
        raise ValueError(f"label must be 'any', 'success', 'failure' or 'unlabeled', got {label!r}")
    m = np.ones(len(frame), dtype=bool)
    for col, chosen in (("dataset", datasets), ("model", models)):
        if chosen:
            m &= frame[col].map(lambda v: "(none)" if v is None else str(v)).isin(list(chosen)).to_numpy()
    y = frame["success"].to_numpy(dtype=np.float64)
    if label == "success":
        m &= y == 1
    elif label == "failure":
        m &= y == 0
    elif label == "unlabeled":
        m &= np.isnan(y)
    if confidence is not None:
        if confidence not in frame.columns:
            raise ValueError(f"confidence must be a column of the frame, got {confidence!r}")
        lo, hi = confidence_range
        c = frame[confidence].to_numpy(dtype=np.float64)
        m &= (c >= lo) & (c <= hi)
    for f in flags:
        if f not in FLAGS:
            raise ValueError(f"unknown flag {f!r}; valid flags: {', '.join(FLAGS)}")
        m &= frame[f"flag_{f}"].to_numpy(dtype=bool)
    if text:
        needle = text.strip().lower()
        q = frame["question"].map(lambda v: "" if v is None else str(v).lower())
        ids = frame["id"].map(lambda v: "" if v is None else str(v).lower())
        m &= (q.str.contains(needle, regex=False) | ids.str.contains(needle, regex=False)).to_numpy()
    return frame[m]


def _take_stored(stored: StoredColumns, idx: np.ndarray) -> StoredColumns:
    fl = StructuralFlags(frame=stored.flags.frame.iloc[idx].reset_index(drop=True), available=stored.flags.available)
    return StoredColumns(features=stored.features[idx], baselines=stored.baselines.iloc[idx].reset_index(drop=True),
                         gac=stored.gac[idx], gac_kind=stored.gac_kind[idx], flags=fl, steps=stored.steps[idx],
                         tokens=stored.tokens[idx], digests=stored.digests, gac_model=stored.gac_model)


def _hash_strings(h, arr: pa.Array) -> None:
    """Feed an Arrow string array to a hash: its value bytes, the value lengths and the null positions (the same
    for the same strings however the array is sliced or chunked)."""
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    arr = arr.cast(pa.large_string()) if arr.type != pa.large_string() else arr
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = arr.buffers()[2]
    lo, hi = (int(offsets[0]), int(offsets[-1])) if len(arr) else (0, 0)
    h.update(np.diff(offsets).tobytes() + b"\x1e")
    h.update(memoryview(data)[lo:hi] if data is not None and hi > lo else b"")
    h.update(np.packbits(arr.is_null().to_numpy(zero_copy_only=False)).tobytes() + b"\x1e")


def _read_meta(con, run_set_ids: Sequence[str]) -> pa.Table:
    """The metadata rows of the run sets, in that order (each in storage order), as Arrow: no token is read, no
    Python object per run is made."""
    parts = [in_pos_order(con.sql("SELECT * FROM trajectories WHERE run_set = ?", params=[rs]).to_arrow_table())
             for rs in run_set_ids]
    return pa.concat_tables(parts)


def build_workspace(store: Store, *, profile: str = "paper", top_k: int = 5,
                    run_set_ids: Sequence[str] | None = None) -> Workspace:
    """Load run sets (all by default): their metadata and the per-run columns kept in the store (48 features,
    baseline confidences, GAC scores, flags: :mod:`~htc_core.app.features_store`). Columns missing for a run
    set (stored by an older version) are computed chunk by chunk and kept. The token arrays stay in the store
    until a computation asks for them (:class:`~htc_core.app.stored_traces.StoredTraces`)."""
    ids = store.run_set_ids() if run_set_ids is None else list(run_set_ids)
    if not ids:
        ts = concat([])
        return Workspace(ts=ts, run_set=np.zeros(0, dtype=object),
                         features=FeatureMatrix(values=np.zeros((0, len(FEATURE_NAMES))), ids=ts.ids, profile=profile,
                                                top_k=top_k), baselines=pd.DataFrame(), profile=profile, top_k=top_k)
    for attempt in range(2):   # one connection when every run set has its columns (the usual case)
        with store._connect() as con:
            missing = [rs for rs in ids if not has_columns(store, rs, profile, top_k, con=con)]
            if not missing:
                cols = read_columns(store, ids, profile=profile, top_k=top_k, con=con)
                meta = _read_meta(con, ids)
                n = dict(con.execute("SELECT id, n_trajectories FROM run_sets").fetchall())
                break
        for rs in missing:   # stored before the columns existed (or under another profile): computed once, kept
            write_columns(store, rs, lambda rs=rs: store.load_run_set(rs), profile=profile, top_k=top_k)
    else:
        raise ValueError(f"the per-run columns of run sets {missing} could not be stored")
    sizes = [int(n[i]) for i in ids]
    if sum(sizes) != len(cols) or meta.num_rows != len(cols):
        raise ValueError(f"the stored columns have {len(cols)} rows for {sum(sizes)} stored trajectories")
    owner = np.repeat(np.array(ids, dtype=object), sizes)
    ts = StoredTraces.from_store(store.load_run_set, ids, meta, sizes, cols.steps, cols.tokens,
                                 load_rows=store.load_rows)
    fm = FeatureMatrix(values=cols.features, ids=ts.ids, profile=profile, top_k=top_k)
    return Workspace(ts=ts, run_set=owner, features=fm, baselines=cols.baselines, profile=profile, top_k=top_k,
                     stored=cols)
