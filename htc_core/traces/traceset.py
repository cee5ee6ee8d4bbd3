"""The one in-memory form of agent runs: a columnar trace set.

Token level (all trajectories concatenated), step level (offsets into the
tokens) and trajectory level (offsets into the steps plus a metadata table).
Everything downstream (features, calibrators, store, pages) reads this form.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from . import stepfields as _sf
from .metatable import META_COLUMNS, NUMBER_COLUMNS, MetaTable

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["TraceSet", "concat", "META_COLUMNS"]


def empty_meta(n: int = 0) -> "pd.DataFrame":
    """The metadata frame of ``n`` runs that carry no metadata (every column present, typed, empty)."""
    return MetaTable.empty(n).to_frame()


def meta_frame(rows: list[dict]) -> "pd.DataFrame":
    """Metadata table with fixed dtypes: text columns hold str or None (never NaN)."""
    return MetaTable.from_rows(rows).to_frame()


def _text(v: Any) -> str | None:
    pd = sys.modules.get("pandas")
    if v is None or (pd is not None and v is pd.NA) or (isinstance(v, float) and math.isnan(v)):
        return None
    return str(v)


@dataclass(eq=False)
class TraceSet:
    """Columnar trace set: every token, step and trajectory of many runs in flat arrays.

    Built by the readers (:func:`htc_core.load`); features and calibrators read it with segment reductions
    over the offsets, never with a Python loop per token.

    Parameters
    ----------
    logprob : ndarray of shape (n_tokens,)
        Log-probability of the chosen token (float64).
    top_logprobs : ndarray of shape (n_tokens, k)
        Alternatives' log-probabilities, sorted descending, NaN-padded; k = 0 when no source provided
        alternatives.
    step_offsets : ndarray of shape (n_steps + 1,)
        Token offsets of each step (int64).
    traj_offsets : ndarray of shape (n_trajectories + 1,)
        Step offsets of each trajectory (int64).
    meta : DataFrame or MetaTable
        One row per trajectory, columns ``META_COLUMNS`` (id, dataset, model, framework, question, answer,
        gold, success, verbalized_confidence, source, metadata as a JSON string). The readers give a
        :class:`~htc_core.traces.metatable.MetaTable` (plain columns); reading ``ts.meta`` always returns a
        DataFrame, built on first access (until then pandas is not imported), and from then on that
        DataFrame is the metadata (changes made to it are seen by ``labels``, ``ids``, ``take``, ...).
        ``meta_column`` reads one column without building the DataFrame.
    step_name, step_text : ndarray of shape (n_steps,), optional
        Step names and texts.
    tokens : ndarray of shape (n_tokens,), optional
        Token strings when known.
    top_tokens : ndarray of shape (n_tokens, k), optional
        The alternatives' strings.
    step_fields : dict of ndarray of shape (n_steps,), optional
        The optional diagnosis fields of the steps (``input``, ``tool``, ``observation``, ``error``,
        ``latency_s``), only those some step carries.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/")
    >>> ts.n_trajectories, ts.top_logprobs.shape[1]
    (500, 5)
    >>> labeled = ts.labeled()
    >>> float(labeled.labels.mean())
    0.422
    """

    logprob: np.ndarray
    top_logprobs: np.ndarray
    step_offsets: np.ndarray
    traj_offsets: np.ndarray
    meta: "pd.DataFrame | MetaTable"
    step_name: np.ndarray | None = None
    step_text: np.ndarray | None = None
    tokens: np.ndarray | None = None
    top_tokens: np.ndarray | None = None
    step_fields: dict | None = None

    def __post_init__(self) -> None:
        self.logprob = np.asarray(self.logprob, dtype=np.float64)
        tl = np.asarray(self.top_logprobs, dtype=np.float64)
        if tl.ndim != 2:
            tl = tl.reshape(len(self.logprob), -1)
        self.top_logprobs = tl
        self.step_offsets = np.asarray(self.step_offsets, dtype=np.int64)
        self.traj_offsets = np.asarray(self.traj_offsets, dtype=np.int64)
        n_steps = len(self.step_offsets) - 1
        if self.step_name is None:
            self.step_name = np.full(n_steps, "", dtype=object)
        if self.step_text is None:
            self.step_text = np.full(n_steps, None, dtype=object)
        self.step_fields = _sf.normalize(self.step_fields, n_steps)
        self._check()

    # ------------------------------------------------------------------ checks
    def _check(self) -> None:
        n_tok = len(self.logprob)
        if self.top_logprobs.shape[0] != n_tok:
            raise ValueError(
                f"top_logprobs must have {n_tok} rows (one per token), got {self.top_logprobs.shape[0]}"
            )
        if len(self.step_offsets) < 1 or self.step_offsets[0] != 0 or self.step_offsets[-1] != n_tok:
            raise ValueError("step_offsets must start at 0 and end at the number of tokens")
        if np.any(np.diff(self.step_offsets) < 0):
            raise ValueError("step_offsets must be non-decreasing")
        n_steps = len(self.step_offsets) - 1
        if len(self.traj_offsets) < 1 or self.traj_offsets[0] != 0 or self.traj_offsets[-1] != n_steps:
            raise ValueError("traj_offsets must start at 0 and end at the number of steps")
        if np.any(np.diff(self.traj_offsets) < 0):
            raise ValueError("traj_offsets must be non-decreasing")
        n_meta = len(self._meta_table if self._meta_frame is None else self._meta_frame)
        if n_meta != len(self.traj_offsets) - 1:
            raise ValueError(
                f"meta must have one row per trajectory ({len(self.traj_offsets) - 1}), got {n_meta}"
            )
        for name in ("step_name", "step_text"):
            arr = getattr(self, name)
            if len(arr) != n_steps:
                raise ValueError(f"{name} must have {n_steps} entries, got {len(arr)}")
        if self.tokens is not None and len(self.tokens) != n_tok:
            raise ValueError(f"tokens must have {n_tok} entries, got {len(self.tokens)}")

    # -------------------------------------------------------------- metadata
    def _get_meta(self) -> "pd.DataFrame":
        """The metadata table of the trajectories.

        Returns
        -------
        DataFrame
            One row per trajectory, columns ``META_COLUMNS``; built from the plain columns on first access, and
            from then on the metadata (see the class docstring). Assigning a DataFrame or a ``MetaTable``
            replaces it.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.meta.loc[0, "model"]
        'Gemma3-270M-greedy'
        """
        if self._meta_frame is None:
            self._meta_frame, self._meta_table = self._meta_table.to_frame(), None
        return self._meta_frame

    def _set_meta(self, value: "pd.DataFrame | MetaTable") -> None:
        if isinstance(value, MetaTable):
            self._meta_table, self._meta_frame = value, None
            return
        pd = sys.modules.get("pandas")
        if pd is None or not isinstance(value, pd.DataFrame):
            raise ValueError(f"meta must be a pandas DataFrame or a MetaTable, got {type(value).__name__}")
        self._meta_table, self._meta_frame = None, value.reset_index(drop=True)

    def meta_column(self, name: str) -> np.ndarray:
        """One metadata column as an array, without building the ``meta`` DataFrame.

        Parameters
        ----------
        name : str
            One of ``META_COLUMNS``.

        Returns
        -------
        ndarray of shape (n_trajectories,)
            float64 for ``success`` (1.0 / 0.0, NaN when unlabeled) and ``verbalized_confidence`` (NaN when
            absent), else an object array of str or None. Do not change it in place.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> ts.meta_column("id")[:1].tolist() == ts.ids[:1].tolist()
        True
        """
        if name not in META_COLUMNS:
            raise ValueError(f"name must be one of {', '.join(META_COLUMNS)}, got {name!r}")
        if self._meta_frame is None:
            return self._meta_table.column(name)
        col = self._meta_frame[name]
        if name == "success":
            return col.astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
        if name in NUMBER_COLUMNS:
            return col.to_numpy(dtype=np.float64)
        return col.to_numpy(dtype=object)

    @property
    def has_meta_frame(self) -> bool:
        """Whether the metadata is held as a DataFrame rather than as the plain columns of a ``MetaTable``.

        Returns
        -------
        bool
            True once ``meta`` was read, or when the set was given a DataFrame.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> before = ts.has_meta_frame
        >>> _ = ts.meta
        >>> before, ts.has_meta_frame
        (False, True)
        """
        return self._meta_frame is not None

    def meta_taken(self, idx: np.ndarray) -> "pd.DataFrame | MetaTable":
        """The metadata of some trajectories, in the form this set holds it.

        Parameters
        ----------
        idx : ndarray of int
            Trajectory positions, in the order wanted.

        Returns
        -------
        DataFrame or MetaTable
            A DataFrame (with any extra column a user added) when the set holds one, else a ``MetaTable``: what
            a new ``TraceSet`` of those trajectories takes as ``meta``.

        Examples
        --------
        >>> import numpy as np
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.meta_taken(np.array([1, 0])).column("id").tolist()
        ['units-0001-Gemma3-270M-greedy', 'units-0000-Gemma3-270M-greedy']
        """
        if self._meta_frame is None:
            return self._meta_table.take(idx)
        return self._meta_frame.iloc[idx].reset_index(drop=True)

    # ------------------------------------------------------------ properties
    @property
    def n_trajectories(self) -> int:
        """The number of trajectories (runs); ``len(ts)`` is the same.

        Returns
        -------
        int

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.n_trajectories, len(ts)
        (8, 8)
        """
        return len(self.traj_offsets) - 1

    def __len__(self) -> int:
        return self.n_trajectories

    @property
    def n_steps(self) -> int:
        """The number of steps of all trajectories together.

        Returns
        -------
        int

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.n_steps
        16
        """
        return len(self.step_offsets) - 1

    @property
    def n_tokens(self) -> int:
        """The number of generated tokens of all steps together.

        Returns
        -------
        int

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.n_tokens
        281
        """
        return len(self.logprob)

    @property
    def k(self) -> int:
        """The number of alternatives kept per token (columns of ``top_logprobs``; 0 when none).

        Returns
        -------
        int

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.k
        5
        """
        return self.top_logprobs.shape[1]

    @property
    def ids(self) -> np.ndarray:
        """The trajectory ids, in order.

        Returns
        -------
        ndarray of object of shape (n_trajectories,)

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.ids[:2].tolist()
        ['units-0000-Gemma3-270M-greedy', 'units-0001-Gemma3-270M-greedy']
        """
        return self.meta_column("id").copy()

    @property
    def steps_per_trajectory(self) -> np.ndarray:
        """The number of steps of each trajectory.

        Returns
        -------
        ndarray of int64 of shape (n_trajectories,)

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.steps_per_trajectory.tolist()
        [2, 2, 2, 2, 2, 2, 2, 2]
        """
        return np.diff(self.traj_offsets)

    @property
    def tokens_per_step(self) -> np.ndarray:
        """The number of tokens of each step.

        Returns
        -------
        ndarray of int64 of shape (n_steps,)

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.tokens_per_step[:4].tolist()
        [26, 11, 26, 12]
        """
        return np.diff(self.step_offsets)

    @property
    def tokens_per_trajectory(self) -> np.ndarray:
        """The number of tokens of each trajectory (all its steps together).

        Returns
        -------
        ndarray of int64 of shape (n_trajectories,)

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> int(ts.tokens_per_trajectory.sum()) == ts.n_tokens
        True
        """
        return np.diff(self.step_offsets[self.traj_offsets])

    @property
    def labels(self) -> np.ndarray:
        """Success labels as float (1.0 / 0.0, NaN when unlabeled).

        Returns
        -------
        ndarray of float64 of shape (n_trajectories,)

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.labels.tolist()
        [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
        """
        return self.meta_column("success").copy()

    @property
    def has_labels(self) -> bool:
        """Whether every trajectory carries a success label (False for an empty set).

        Returns
        -------
        bool

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.has_labels, htc.TraceSet.empty().has_labels
        (True, False)
        """
        return bool(self.n_trajectories) and not np.isnan(self.meta_column("success")).any()

    def step_trajectory_index(self) -> np.ndarray:
        """Trajectory index of every step.

        Returns
        -------
        ndarray of int64 of shape (n_steps,)
            The position of the trajectory each step belongs to.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.step_trajectory_index()[:6].tolist()
        [0, 0, 1, 1, 2, 2]
        """
        return np.repeat(np.arange(self.n_trajectories), self.steps_per_trajectory)

    def token_step_index(self) -> np.ndarray:
        """Step index of every token.

        Returns
        -------
        ndarray of int64 of shape (n_tokens,)
            The position of the step each token belongs to.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> idx = ts.token_step_index()
        >>> len(idx) == ts.n_tokens, int(idx[25]), int(idx[26])
        (True, 0, 1)
        """
        return np.repeat(np.arange(self.n_steps), self.tokens_per_step)

    def metadata_of(self, i: int) -> dict:
        """The free-form metadata of one trajectory, decoded from its JSON string.

        Parameters
        ----------
        i : int
            Trajectory position.

        Returns
        -------
        dict
            The metadata; empty when the trajectory has none or its JSON does not decode.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.metadata_of(0)["stop_reason"]
        'final_answer'
        """
        raw = self.meta_column("metadata")[i] if self._meta_frame is None else self._meta_frame["metadata"].iat[i]
        try:
            return json.loads(raw) if raw else {}
        except (TypeError, ValueError):
            return {}

    def memory_bytes(self) -> int:
        """The bytes held by the numeric token and offset arrays (the bulk of a large set).

        Returns
        -------
        int
            Bytes of ``logprob``, ``top_logprobs``, ``step_offsets`` and ``traj_offsets``; texts and the metadata
            table are not counted.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.memory_bytes() == 8 * (ts.n_tokens * (1 + ts.k) + ts.n_steps + 1 + ts.n_trajectories + 1)
        True
        """
        n = self.logprob.nbytes + self.top_logprobs.nbytes + self.step_offsets.nbytes + self.traj_offsets.nbytes
        return int(n)

    # ------------------------------------------------------------- slicing
    def take(self, indices: Sequence[int] | np.ndarray) -> "TraceSet":
        """A new trace set holding the trajectories at some positions, in that order.

        Parameters
        ----------
        indices : sequence of int or ndarray
            Trajectory positions (negative ones count from the end).

        Returns
        -------
        TraceSet

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> ts.take([2, 0]).ids.tolist() == [ts.ids[2], ts.ids[0]]
        True
        """
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < -self.n_trajectories or idx.max() >= self.n_trajectories):
            raise IndexError(f"trajectory index out of range for a set of {self.n_trajectories}")
        idx = np.where(idx < 0, idx + self.n_trajectories, idx)
        s_start = self.traj_offsets[idx]
        s_stop = self.traj_offsets[idx + 1]
        step_idx = concat_ranges(s_start, s_stop)
        t_start = self.step_offsets[step_idx]
        t_stop = self.step_offsets[step_idx + 1]
        tok_idx = concat_ranges(t_start, t_stop)
        traj_off = np.concatenate([[0], np.cumsum(s_stop - s_start)])
        step_off = np.concatenate([[0], np.cumsum(t_stop - t_start)])
        return TraceSet(
            logprob=self.logprob[tok_idx],
            top_logprobs=self.top_logprobs[tok_idx],
            step_offsets=step_off,
            traj_offsets=traj_off,
            meta=self.meta_taken(idx),
            step_name=self.step_name[step_idx],
            step_text=self.step_text[step_idx],
            tokens=None if self.tokens is None else self.tokens[tok_idx],
            top_tokens=None if self.top_tokens is None else self.top_tokens[tok_idx],
            step_fields=_sf.take(self.step_fields, step_idx),
        )

    def step_field(self, name: str) -> np.ndarray:
        """One diagnosis field of every step (None / NaN where absent).

        Parameters
        ----------
        name : str
            One of ``STEP_FIELDS``: ``input``, ``tool``, ``observation``, ``error`` (text, the tool call as a
            JSON string) or ``latency_s`` (float seconds).

        Returns
        -------
        ndarray of shape (n_steps,)
            Objects (str or None) for the text fields, float64 (NaN where absent) for ``latency_s``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> ts.step_field("tool")[:2].tolist()
        ['{"name":"convert","arguments":"16.5 ft to m"}', None]
        >>> ts.step_field("error")[:2].tolist()
        [None, None]
        """
        if name not in _sf.STEP_FIELDS:
            raise ValueError(f"name must be one of {', '.join(_sf.STEP_FIELDS)}, got {name!r}")
        arr = self.step_fields.get(name)
        if arr is not None:
            return arr
        if name == "latency_s":
            return np.full(self.n_steps, np.nan)
        return np.full(self.n_steps, None, dtype=object)

    def select(self, ids: Iterable[str]) -> "TraceSet":
        """A new trace set holding the trajectories with the given ids, in that order.

        Parameters
        ----------
        ids : iterable of str
            Trajectory ids (an unknown id raises KeyError).

        Returns
        -------
        TraceSet

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> len(ts.select([ts.ids[5], ts.ids[7]]))
        2
        """
        pos = {v: i for i, v in enumerate(self.ids)}
        wanted = list(ids)
        missing = [v for v in wanted if v not in pos]
        if missing:
            raise KeyError(f"unknown trajectory ids: {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        return self.take([pos[v] for v in wanted])

    def filter(self, mask: np.ndarray) -> "TraceSet":
        """A new trace set holding the trajectories where a mask is True.

        Parameters
        ----------
        mask : ndarray of bool of shape (n_trajectories,)
            True for the trajectories to keep.

        Returns
        -------
        TraceSet

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> len(ts.filter(ts.labels == 1))
        211
        """
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_trajectories,):
            raise ValueError(f"mask must have shape ({self.n_trajectories},), got {mask.shape}")
        return self.take(np.flatnonzero(mask))

    def labeled(self) -> "TraceSet":
        """The trajectories that carry a success label.

        Returns
        -------
        TraceSet

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> len(ts.labeled())
        500
        """
        return self.filter(~np.isnan(self.meta_column("success")))

    # ------------------------------------------------------------ iteration
    def trajectory(self, i: int) -> dict:
        """One trajectory as a plain dict (htc-trace JSONL v1 shape).

        Parameters
        ----------
        i : int
            Trajectory position.

        Returns
        -------
        dict
            ``id``, ``dataset``, ``model``, ``framework``, ``question``, ``answer``, ``gold``, ``success``,
            ``verbalized_confidence``, ``metadata`` (a dict) and ``steps``: one dict per step with ``name``,
            ``logprobs`` and, where known, ``text``, the diagnosis fields, ``tokens``, ``top_logprobs`` and
            ``top_tokens``.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
        >>> run = ts.trajectory(0)
        >>> run["question"], run["answer"], run["success"]
        ('How many meters are in 16.5 feet?', '5.03', True)
        >>> step = run["steps"][1]
        >>> step["text"], len(step["logprobs"]), len(step["top_logprobs"][0])
        ('Final Answer: 5.03', 11, 5)
        """
        row = self._meta_row(i)
        steps = []
        for s in range(self.traj_offsets[i], self.traj_offsets[i + 1]):
            a, b = self.step_offsets[s], self.step_offsets[s + 1]
            step: dict[str, Any] = {"name": self.step_name[s] or "", "logprobs": self.logprob[a:b].tolist()}
            if self.step_text[s] is not None:
                step["text"] = self.step_text[s]
            if self.step_fields:
                step.update(_sf.step_dict(self.step_fields, s))
            if self.tokens is not None:
                step["tokens"] = list(self.tokens[a:b])
            if self.k:
                top = self.top_logprobs[a:b]
                step["top_logprobs"] = [[float(v) for v in r if not np.isnan(v)] for r in top]
                if self.top_tokens is not None:
                    step["top_tokens"] = [
                        [t for t, v in zip(tt, r) if not np.isnan(v)] for tt, r in zip(self.top_tokens[a:b], top)
                    ]
            steps.append(step)
        return {
            "id": _text(row["id"]),
            "dataset": _text(row["dataset"]),
            "model": _text(row["model"]),
            "framework": _text(row["framework"]),
            "question": _text(row["question"]),
            "answer": _text(row["answer"]),
            "gold": _text(row["gold"]),
            "success": row["success"],
            "verbalized_confidence": row["verbalized_confidence"],
            "metadata": self.metadata_of(i),
            "steps": steps,
        }

    def _meta_row(self, i: int) -> dict:
        """Trajectory ``i``'s metadata: text as str or None, success as bool or None, the confidence as float
        or None."""
        if self._meta_frame is None:
            row = {c: v[i] for c, v in self._meta_table.columns.items()}
            s, vc = row["success"], row["verbalized_confidence"]
            row["success"] = None if np.isnan(s) else bool(s)
        else:
            row = self._meta_frame.iloc[i]
            s, vc = row["success"], row["verbalized_confidence"]
            row = {c: row[c] for c in META_COLUMNS}
            row["success"] = None if _text(s) is None else bool(s)
        row["verbalized_confidence"] = None if _text(vc) is None else float(vc)
        return {c: row[c] if c in NUMBER_COLUMNS else _text(row[c]) for c in META_COLUMNS}

    def __repr__(self) -> str:
        return (
            f"TraceSet(trajectories={self.n_trajectories}, steps={self.n_steps}, "
            f"tokens={self.n_tokens}, k={self.k})"
        )

    # -------------------------------------------------------------- builders
    @classmethod
    def empty(cls, k: int = 0) -> "TraceSet":
        """A trace set with no trajectory.

        Parameters
        ----------
        k : int, default 0
            Number of alternatives per token its (empty) ``top_logprobs`` has.

        Returns
        -------
        TraceSet

        Examples
        --------
        >>> from htc_core.traces import TraceSet
        >>> TraceSet.empty(k=5)
        TraceSet(trajectories=0, steps=0, tokens=0, k=5)
        """
        return cls(
            logprob=np.zeros(0),
            top_logprobs=np.zeros((0, k)),
            step_offsets=np.zeros(1, dtype=np.int64),
            traj_offsets=np.zeros(1, dtype=np.int64),
            meta=MetaTable.empty(0),
        )


TraceSet.meta = property(TraceSet._get_meta, TraceSet._set_meta)  # the dataclass field, read lazily



def _concat_meta(sets: Sequence[TraceSet]) -> "pd.DataFrame | MetaTable":
    tables = [s._meta_table for s in sets]
    if all(t is not None for t in tables):
        return MetaTable.concat(tables)
    import pandas as pd

    return pd.concat([s.meta for s in sets], ignore_index=True)


def concat_ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(start, stop)`` for each pair, vectorized."""
    lens = (stops - starts).astype(np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    keep = lens > 0
    starts, lens = starts[keep], lens[keep]
    out = np.ones(total, dtype=np.int64)
    ends = np.cumsum(lens)
    out[0] = starts[0]
    if len(starts) > 1:
        out[ends[:-1]] = starts[1:] - (starts[:-1] + lens[:-1] - 1)
    return np.cumsum(out)


def _pad_top(arrs: list[np.ndarray], k: int) -> np.ndarray:
    if not arrs:
        return np.zeros((0, k))
    out = []
    for a in arrs:
        if a.shape[1] < k:
            a = np.hstack([a, np.full((a.shape[0], k - a.shape[1]), np.nan)])
        out.append(a)
    return np.vstack(out)


def concat(sets: Sequence[TraceSet]) -> TraceSet:
    """Concatenate trace sets.

    Parameters
    ----------
    sets : sequence of TraceSet
        The sets, in order (at least one).

    Returns
    -------
    TraceSet
        Their trajectories one after the other; k becomes the widest, narrower alternatives are NaN-padded.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/")
    >>> len(htc.concat([ts.take([0, 1]), ts.take([2])]))
    3
    """
    sets = [s for s in sets]
    if not sets:
        return TraceSet.empty()
    if len(sets) == 1:
        return sets[0]
    k = max(s.k for s in sets)
    step_off = [np.zeros(1, dtype=np.int64)]
    traj_off = [np.zeros(1, dtype=np.int64)]
    tok_base = 0
    step_base = 0
    for s in sets:
        step_off.append(s.step_offsets[1:] + tok_base)
        traj_off.append(s.traj_offsets[1:] + step_base)
        tok_base += s.n_tokens
        step_base += s.n_steps
    have_tokens = all(s.tokens is not None for s in sets)
    have_top_tokens = all(s.top_tokens is not None for s in sets)
    top_tokens = None
    if have_top_tokens:
        parts = []
        for s in sets:
            t = s.top_tokens
            if t.shape[1] < k:
                t = np.hstack([t, np.full((t.shape[0], k - t.shape[1]), None, dtype=object)])
            parts.append(t)
        top_tokens = np.vstack(parts) if parts else None
    return TraceSet(
        logprob=np.concatenate([s.logprob for s in sets]),
        top_logprobs=_pad_top([s.top_logprobs for s in sets], k),
        step_offsets=np.concatenate(step_off),
        traj_offsets=np.concatenate(traj_off),
        meta=_concat_meta(sets),
        step_name=np.concatenate([s.step_name for s in sets]),
        step_text=np.concatenate([s.step_text for s in sets]),
        tokens=np.concatenate([s.tokens for s in sets]) if have_tokens else None,
        top_tokens=top_tokens,
        step_fields=_sf.concat([(s.step_fields, s.n_steps) for s in sets]),
    )
