"""Building a trace set: readers of every format append validated ``TrajectoryRecord``s to a
``TraceSetBuilder``, which concatenates once at the end."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .traceset import TraceSet, _meta_frame


@dataclass
class TrajectoryRecord:
    """One validated trajectory on its way into a trace set (used by readers)."""

    id: str
    steps_logprob: list[np.ndarray]
    steps_top: list[np.ndarray | None]
    steps_name: list[str]
    steps_text: list[str | None]
    steps_tokens: list[list[str] | None]
    dataset: str | None = None
    model: str | None = None
    framework: str | None = None
    question: str | None = None
    answer: str | None = None
    gold: str | None = None
    success: bool | None = None
    verbalized_confidence: float | None = None
    source: str | None = None
    metadata: dict = field(default_factory=dict)


class TraceSetBuilder:
    """Accumulates validated trajectories and builds one columnar TraceSet.

    Readers of every format append ``TrajectoryRecord``s; the builder keeps
    per-step arrays and concatenates once at the end.
    """

    def __init__(self) -> None:
        self._lp: list[np.ndarray] = []
        self._top: list[np.ndarray | None] = []
        self._tok: list[list[str] | None] = []
        self._names: list[str] = []
        self._texts: list[str | None] = []
        self._steps_per_traj: list[int] = []
        self._meta_rows: list[dict] = []
        self._ids: set[str] = set()

    def __len__(self) -> int:
        return len(self._meta_rows)

    def has_id(self, tid: str) -> bool:
        return tid in self._ids

    def add(self, rec: TrajectoryRecord) -> None:
        """Add one trajectory; a record that cannot be added (its metadata cannot be encoded) raises before
        anything is added, so the builder never holds half a trajectory."""
        row = {
            "id": rec.id,
            "dataset": rec.dataset,
            "model": rec.model,
            "framework": rec.framework,
            "question": rec.question,
            "answer": rec.answer,
            "gold": rec.gold,
            "success": pd.NA if rec.success is None else bool(rec.success),
            "verbalized_confidence": np.nan if rec.verbalized_confidence is None else float(rec.verbalized_confidence),
            "source": rec.source,
            "metadata": json.dumps(rec.metadata, ensure_ascii=False, default=str),
        }
        self._ids.add(rec.id)
        self._lp.extend(rec.steps_logprob)
        self._top.extend(rec.steps_top)
        self._tok.extend(rec.steps_tokens)
        self._names.extend(rec.steps_name)
        self._texts.extend(rec.steps_text)
        self._steps_per_traj.append(len(rec.steps_logprob))
        self._meta_rows.append(row)

    def build(self) -> TraceSet:
        if not self._meta_rows:
            return TraceSet.empty()
        lens = np.array([len(a) for a in self._lp], dtype=np.int64)
        logprob = np.concatenate(self._lp) if self._lp else np.zeros(0)
        k = max((t.shape[1] for t in self._top if t is not None), default=0)
        tops = []
        for a, t in zip(self._lp, self._top):
            if t is None:
                tops.append(np.full((len(a), k), np.nan))
            elif t.shape[1] < k:
                tops.append(np.hstack([t, np.full((t.shape[0], k - t.shape[1]), np.nan)]))
            else:
                tops.append(t)
        top = np.vstack(tops) if tops else np.zeros((0, k))
        tokens = None
        if any(t is not None for t in self._tok):
            flat: list = []
            for a, t in zip(self._lp, self._tok):
                flat.extend(t if t is not None else [None] * len(a))
            tokens = np.array(flat, dtype=object)
        meta = _meta_frame(self._meta_rows)
        return TraceSet(
            logprob=logprob,
            top_logprobs=top,
            step_offsets=np.concatenate([[0], np.cumsum(lens)]),
            traj_offsets=np.concatenate([[0], np.cumsum(self._steps_per_traj)]),
            meta=meta,
            step_name=np.array(self._names, dtype=object),
            step_text=np.array(self._texts + [None], dtype=object)[:-1],
            tokens=tokens,
        )
