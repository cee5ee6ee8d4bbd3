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

from ..calibration.baselines import baseline_confidences
from ..explain.flags import FLAGS, StructuralFlags, structural_flags
from ..features import FEATURE_NAMES, FeatureMatrix, extract
from ..traces import TraceSet, concat
from .store import Store

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

    def __len__(self) -> int:
        return self.ts.n_trajectories

    @property
    def flags(self) -> StructuralFlags:
        """The structural flags of every trajectory (computed once per workspace)."""
        cached = self.__dict__.get("_flags")
        if cached is None:
            cached = self.__dict__["_flags"] = structural_flags(self.ts)
        return cached

    @property
    def labels(self) -> np.ndarray:
        return self.ts.labels

    @property
    def keys(self) -> np.ndarray:
        """A key unique across run sets: ``<run set>:<trajectory id>``."""
        ids = self.ts.ids
        return np.array([f"{r}:{i}" for r, i in zip(self.run_set, ids)], dtype=object)

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
        for part in (self.profile, str(self.top_k), "\x1f".join(self.keys.tolist())):
            h.update(part.encode("utf-8", "surrogatepass") + b"\x1e")
        meta = self.ts.meta
        for col in ("dataset", "model", "framework"):
            h.update("\x1f".join("\x00" if v is None else str(v) for v in meta[col]).encode("utf-8", "surrogatepass"))
        for arr in (self.labels, meta["verbalized_confidence"].to_numpy(dtype=np.float64), self.features.values,
                    self.ts.logprob, self.ts.top_logprobs, self.ts.step_offsets, self.ts.traj_offsets):
            a = np.ascontiguousarray(arr)
            h.update(str((a.dtype.str, a.shape)).encode() + a.tobytes())
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
        return Workspace(ts=self.ts.take(idx), run_set=self.run_set[idx], features=self.features.take(idx),
                         baselines=self.baselines.iloc[idx].reset_index(drop=True), profile=self.profile,
                         top_k=self.top_k)

    def values(self, column: str) -> list[str]:
        """Sorted distinct values of a metadata column (missing shown as '(none)')."""
        return sorted({"(none)" if v is None else str(v) for v in self.ts.meta[column]})

    def mask(self, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None,
             frameworks: Sequence[str] | None = None, run_sets: Sequence[str] | None = None) -> np.ndarray:
        m = np.ones(len(self), dtype=bool)
        for col, chosen in (("dataset", datasets), ("model", models), ("framework", frameworks)):
            if chosen:
                vals = self.ts.meta[col].map(lambda v: "(none)" if v is None else str(v)).to_numpy()
                m &= np.isin(vals, list(chosen))
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
        df["flags"] = [", ".join(fl.of(i)) for i in range(len(self))]
        for f in FLAGS:
            df[f"flag_{f}"] = fl.frame[f].fillna(False).to_numpy(dtype=bool)
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


def _features_for(store: Store, run_set_id: str, ts: TraceSet, profile: str, top_k: int) -> FeatureMatrix:
    """The run set's features from the store's cache (a stale or missing entry is computed and cached)."""
    hit = store.get_features(run_set_id, profile, top_k)
    if hit is not None and hit[0].shape == (ts.n_trajectories, len(FEATURE_NAMES)) and list(hit[1]) == list(FEATURE_NAMES):
        return FeatureMatrix(values=hit[0], ids=ts.ids, profile=profile, top_k=top_k)
    fm = extract(ts, profile=profile, top_k=top_k)
    store.put_features(run_set_id, profile, top_k, fm.values, fm.names)
    return fm


def build_workspace(store: Store, *, profile: str = "paper", top_k: int = 5,
                    run_set_ids: Sequence[str] | None = None) -> Workspace:
    """Load run sets (all by default) with their features (from the store's cache, computed and cached
    when missing) and raw baseline confidences."""
    ids = store.run_set_ids() if run_set_ids is None else list(run_set_ids)
    sets, fms, owners = [], [], []
    for rs in ids:
        ts = store.load_run_set(rs)
        sets.append(ts)
        fms.append(_features_for(store, rs, ts, profile, top_k).values)
        owners.append(np.full(ts.n_trajectories, rs, dtype=object))
    ts = concat(sets)
    values = np.vstack(fms) if fms else np.zeros((0, len(FEATURE_NAMES)))
    fm = FeatureMatrix(values=values, ids=ts.ids, profile=profile, top_k=top_k)
    base = baseline_confidences(ts, profile=profile, top_k=top_k) if len(ts) else pd.DataFrame()
    owner = np.concatenate(owners) if owners else np.zeros(0, dtype=object)
    return Workspace(ts=ts, run_set=owner, features=fm, baselines=base, profile=profile, top_k=top_k)
