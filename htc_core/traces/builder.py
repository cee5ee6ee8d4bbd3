"""Building a trace set: readers of every format append validated ``TrajectoryRecord`` objects to a
``TraceSetBuilder``, which concatenates once at the end."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from .stepfields import Columns
from .metatable import MetaTable
from .traceset import TraceSet

__all__ = ["TraceSetBuilder", "TrajectoryRecord"]


@dataclass
class TrajectoryRecord:
    """One validated trajectory on its way into a trace set (what a reader appends to a builder).

    Parameters
    ----------
    id : str
        Trajectory id, unique in the set.
    steps_logprob : list of ndarray
        Per step, the chosen tokens' log-probabilities.
    steps_top : list of (ndarray of shape (n_step_tokens, k) or None)
        Per step, the alternatives' log-probabilities (sorted descending, NaN-padded), or None.
    steps_name : list of str
        Per step, its name.
    steps_text : list of (str or None)
        Per step, its text.
    steps_tokens : list of (list of str or None)
        Per step, its token strings, or None.
    dataset, model, framework, question, answer, gold : str or None, optional
        The run's descriptive metadata columns.
    success : bool or None, optional
        The success label; None when unlabeled.
    verbalized_confidence : float or None, optional
        A confidence the agent stated itself.
    source : str or None, optional
        Where the run was read from (file name).
    metadata : dict, optional
        Free-form metadata (stored as a JSON string).
    flat_logprob : ndarray or None, optional
        The fast readers' form: all steps' log-probabilities in one array; when set (with ``step_lengths``),
        ``steps_logprob`` and ``steps_top`` are ignored.
    flat_top : ndarray of shape (n_tokens, k) or None, optional
        The alternatives of all steps in one matrix, with ``flat_logprob``.
    step_lengths : ndarray of int or None, optional
        Tokens per step, with ``flat_logprob``.
    steps_detail : dict of list or None, optional
        The steps' diagnosis fields (:mod:`htc_core.traces.stepfields`): field -> one value per step (None =
        absent; ``tool`` already as its JSON text), or None when no step carries any.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.traces import TrajectoryRecord
    >>> rec = TrajectoryRecord(id="r1", steps_logprob=[np.array([-0.1, -0.5]), np.array([-0.2])],
    ...                        steps_top=[None, None], steps_name=["plan", "answer"],
    ...                        steps_text=["I add.", "4"], steps_tokens=[None, None], success=True)
    >>> lp, top, lens = rec.flat()
    >>> lp.tolist(), top, lens.tolist()
    ([-0.1, -0.5, -0.2], None, [2, 1])
    """

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
    # the fast readers' form: all steps' logprobs in one array, the alternatives in one [tokens, k] matrix (or
    # None), the tokens of each step, and the number of tokens per step; when set, ``steps_logprob`` and
    # ``steps_top`` are ignored (``steps_name``/``steps_text``/``steps_tokens`` are still per step)
    flat_logprob: np.ndarray | None = None
    flat_top: np.ndarray | None = None
    step_lengths: np.ndarray | None = None
    # the optional diagnosis fields of the steps (``traces.stepfields``): field -> one value per step (None =
    # absent; ``tool`` already as its JSON text), or None when no step carries any
    steps_detail: dict[str, list] | None = None

    def flat(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """The record's tokens in the flat form: all steps' arrays one after the other.

        Returns
        -------
        logprob : ndarray of shape (n_tokens,)
            The log-probabilities of all steps.
        top : ndarray of shape (n_tokens, k) or None
            The alternatives, NaN-padded to the widest step; None when no step has any.
        lengths : ndarray of int64 of shape (n_steps,)
            Tokens per step.

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.traces import TrajectoryRecord
        >>> rec = TrajectoryRecord(id="r1", steps_logprob=[np.array([-0.1]), np.array([-0.2, -0.3])],
        ...                        steps_top=[np.array([[-0.1, -2.5]]), None], steps_name=["a", "b"],
        ...                        steps_text=[None, None], steps_tokens=[None, None])
        >>> lp, top, lens = rec.flat()
        >>> top.tolist(), lens.tolist()
        ([[-0.1, -2.5], [nan, nan], [nan, nan]], [1, 2])
        """
        if self.flat_logprob is not None:
            return self.flat_logprob, self.flat_top, self.step_lengths
        lens = np.fromiter(map(len, self.steps_logprob), dtype=np.int64, count=len(self.steps_logprob))
        lp = self.steps_logprob[0] if len(self.steps_logprob) == 1 else np.concatenate(self.steps_logprob)
        k = max((t.shape[1] for t in self.steps_top if t is not None), default=0)
        if k == 0:
            return lp, None, lens
        if all(t is not None and t.shape[1] == k for t in self.steps_top):
            return lp, np.vstack(self.steps_top), lens
        top = np.full((len(lp), k), np.nan)
        start = 0
        for n, t in zip(lens, self.steps_top):
            if t is not None:
                top[start:start + n, : t.shape[1]] = t
            start += n
        return lp, top, lens


class TraceSetBuilder:
    """Accumulates validated trajectories and builds one columnar TraceSet.

    Readers of every format append ``TrajectoryRecord`` objects; the builder keeps
    per-step arrays and concatenates once at the end.

    Parameters
    ----------
    ids : set of str, optional
        The ids already used, shared (and updated) by the builders of successive chunks of one input so that
        a reader can tell a repeated id; a new empty set when omitted.

    Attributes
    ----------
    n_tokens : int
        Tokens added so far.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.traces import TraceSetBuilder, TrajectoryRecord
    >>> builder = TraceSetBuilder()
    >>> for i, ok in enumerate([True, False]):
    ...     builder.add(TrajectoryRecord(id=f"run-{i}", steps_logprob=[np.array([-0.1, -0.7 * i])],
    ...                                  steps_top=[None], steps_name=["answer"], steps_text=["42"],
    ...                                  steps_tokens=[None], success=ok))
    >>> len(builder), builder.n_tokens, builder.has_id("run-1")
    (2, 4, True)
    >>> ts = builder.build()
    >>> ts
    TraceSet(trajectories=2, steps=2, tokens=4, k=0)
    >>> ts.labels.tolist()
    [1.0, 0.0]
    """

    def __init__(self, ids: set[str] | None = None) -> None:
        self._lp: list[np.ndarray] = []          # per trajectory: all its tokens' logprobs
        self._top: list[np.ndarray | None] = []  # per trajectory: [tokens, k] alternatives or None
        self._lens: list[np.ndarray] = []        # per trajectory: tokens per step
        self._tok: list[list | None] = []        # per trajectory: the tokens of every step, or None
        self._names: list[str] = []
        self._texts: list[str | None] = []
        self._meta_rows: list[dict] = []
        self._detail = Columns()
        self._ids: set[str] = set() if ids is None else ids
        self.n_tokens = 0

    def __len__(self) -> int:
        return len(self._meta_rows)

    def has_id(self, tid: str) -> bool:
        """Whether an id is already used (by this builder or one sharing its id set).

        Parameters
        ----------
        tid : str
            Trajectory id.

        Returns
        -------
        bool

        Examples
        --------
        >>> from htc_core.traces import TraceSetBuilder
        >>> TraceSetBuilder(ids={"run-0"}).has_id("run-0")
        True
        """
        return tid in self._ids

    def add(self, rec: TrajectoryRecord) -> None:
        """Add one trajectory.

        A record that cannot be added (its metadata cannot be encoded) raises before anything is added, so
        the builder never holds half a trajectory.

        Parameters
        ----------
        rec : TrajectoryRecord
            The validated trajectory.

        Returns
        -------
        None

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.traces import TraceSetBuilder, TrajectoryRecord
        >>> builder = TraceSetBuilder()
        >>> builder.add(TrajectoryRecord(id="a", steps_logprob=[np.array([-0.2])], steps_top=[None],
        ...                              steps_name=["s"], steps_text=[None], steps_tokens=[["yes"]]))
        >>> builder.build().tokens.tolist()
        ['yes']
        """
        row = {
            "id": rec.id,
            "dataset": rec.dataset,
            "model": rec.model,
            "framework": rec.framework,
            "question": rec.question,
            "answer": rec.answer,
            "gold": rec.gold,
            "success": None if rec.success is None else bool(rec.success),
            "verbalized_confidence": np.nan if rec.verbalized_confidence is None else float(rec.verbalized_confidence),
            "source": rec.source,
            "metadata": json.dumps(rec.metadata, ensure_ascii=False, default=str) if rec.metadata else "{}",
        }
        lp, top, lens = rec.flat()
        toks = None
        if any(t is not None for t in rec.steps_tokens):
            toks = []
            for n, t in zip(lens, rec.steps_tokens):
                toks.extend(t if t is not None else [None] * int(n))
        self._ids.add(rec.id)
        self._lp.append(lp)
        self._top.append(top)
        self._lens.append(lens)
        self._tok.append(toks)
        self._names.extend(rec.steps_name)
        self._texts.extend(rec.steps_text)
        self._detail.extend(len(lens), rec.steps_detail)
        self._meta_rows.append(row)
        self.n_tokens += len(lp)

    def build(self) -> TraceSet:
        """The trace set of every trajectory added, in order (alternatives NaN-padded to the widest).

        Returns
        -------
        TraceSet
            Empty when nothing was added.

        Examples
        --------
        >>> from htc_core.traces import TraceSetBuilder
        >>> TraceSetBuilder().build()
        TraceSet(trajectories=0, steps=0, tokens=0, k=0)
        """
        if not self._meta_rows:
            return TraceSet.empty()
        lens = np.concatenate(self._lens)
        logprob = np.concatenate(self._lp)
        k = max((t.shape[1] for t in self._top if t is not None), default=0)
        if k and all(t is not None and t.shape[1] == k for t in self._top):
            top = np.concatenate(self._top)
        else:
            top = np.full((len(logprob), k), np.nan)
            start = 0
            for a, t in zip(self._lp, self._top):
                if t is not None:
                    top[start:start + len(a), : t.shape[1]] = t
                start += len(a)
        tokens = None
        if any(t is not None for t in self._tok):
            flat: list = []
            for a, t in zip(self._lp, self._tok):
                flat.extend(t if t is not None else [None] * len(a))
            tokens = np.array(flat, dtype=object)
        meta = MetaTable.from_rows(self._meta_rows)
        return TraceSet(
            logprob=logprob,
            top_logprobs=top,
            step_offsets=np.concatenate([[0], np.cumsum(lens)]),
            traj_offsets=np.concatenate([[0], np.cumsum([len(x) for x in self._lens])]),
            meta=meta,
            step_name=np.array(self._names, dtype=object),
            step_text=np.array(self._texts + [None], dtype=object)[:-1],
            tokens=tokens,
            step_fields=self._detail.arrays(),
        )
