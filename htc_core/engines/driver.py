"""The driver side of every engine: the result batches of each piece, in input order, back into one table.

``Collector`` applies the id rules of ``formats.load`` across pieces (a repeated id inside one file is an error
and the first is kept; an id used by an earlier file is kept as ``id@file-stem``), turns piece-relative line
numbers into file line numbers, writes the rows with ``TableWriter`` as they come and merges the load reports
and the per-piece metric states (``MetricState``) (exact: sufficient statistics add up).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import orjson

from ..calibration.streaming import MetricState
from ..report import LoadReport, Problem
from .common import META, Piece, Task


def _report_from(d: dict) -> LoadReport:
    d = dict(d)
    problems = [Problem(**p) for p in d.pop("problems")]
    return LoadReport(**d, problems=problems)


def _state_from(d: dict | None) -> MetricState | None:
    if d is None:
        return None
    return MetricState(**{k: (np.asarray(v, dtype=float) if isinstance(v, list) else v) for k, v in d.items()})


@dataclass
class EngineResult:
    """What a run over pieces produced: rows written, the merged load report and the merged metrics.

    Parameters
    ----------
    engine : str
        The engine that ran (``local``, ``dask``, ``spark``).
    out : str
        The table written.
    rows : int
        Rows written.
    pieces : int
        Pieces computed.
    workers : int
        Workers used.
    report : LoadReport
        The merged load report of all pieces.
    metrics : MetricState, optional
        Scoring labeled runs: the merged streaming metrics (ECE, Brier, AUROC); None otherwise.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.engines import Task, run
    >>> out = os.path.join(tempfile.mkdtemp(), "features.parquet")
    >>> result = run(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], Task("features"), out)
    >>> result.engine, result.rows, result.report.trajectories_read, result.metrics
    ('local', 8, 8, None)
    """

    engine: str
    out: str
    rows: int
    pieces: int
    workers: int
    report: LoadReport
    metrics: MetricState | None = None

    def to_dict(self) -> dict:
        """The result as plain values: counts, and ``metric_*`` entries when labeled runs were scored.

        Returns
        -------
        dict

        Examples
        --------
        >>> import os, tempfile
        >>> from htc_core.engines import Task, run
        >>> out = os.path.join(tempfile.mkdtemp(), "scores.csv")
        >>> result = run(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], Task.for_model("gac"), out, engine="local")
        >>> d = result.to_dict()
        >>> d["rows"], d["metric_n"], round(d["metric_auroc"], 3)
        (8, 8, 0.812)
        """
        d = {"engine": self.engine, "out": self.out, "rows": self.rows, "pieces": self.pieces,
             "workers": self.workers, "trajectories_read": self.report.trajectories_read,
             "rejected": self.report.rejected}
        if self.metrics is not None and self.metrics.n:
            d.update({f"metric_{k}": v for k, v in self.metrics.to_dict().items()})
        return d

    def to_frame(self):
        """The result as a one-row DataFrame (the columns of :meth:`to_dict`).

        Returns
        -------
        DataFrame

        Examples
        --------
        >>> import os, tempfile
        >>> from htc_core.engines import Task, run
        >>> out = os.path.join(tempfile.mkdtemp(), "scores.csv")
        >>> result = run(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], Task.for_model("gac"), out, engine="local")
        >>> list(result.to_frame().columns[:4])
        ['engine', 'out', 'rows', 'pieces']
        """
        import pandas as pd

        return pd.DataFrame([self.to_dict()])


@dataclass
class Collector:
    """The driver side: feed each piece's batches in input order (``add``); the writer gets the rows.

    Applies the id rules of ``htc_core.load`` across pieces (a repeated id inside one file is an error and the
    first is kept; an id used by an earlier file is kept as ``id@file-stem``), turns piece-relative line
    numbers into file line numbers, and merges the load reports and metric states.

    Parameters
    ----------
    writer : TableWriter
        Receives the rows (an open ``with`` block).
    kind : {"features", "score"}, default "features"
        The task's kind.
    report : LoadReport, optional
        Receives the pieces' merged reports (a new one by default).
    metrics : MetricState, optional
        The metrics so far (merged with the pieces').
    _ids, _file_ids, _offsets : set, dict, dict, optional
        The collector's own state (ids seen, ids seen per file, lines read per file); leave them out.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.engines import Task, map_batches, split_inputs
    >>> from htc_core.engines.common import pieces_batch
    >>> from htc_core.engines.driver import Collector
    >>> from htc_core.tablewriter import TableWriter
    >>> pieces = split_inputs(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], piece_bytes=20_000)
    >>> with TableWriter(os.path.join(tempfile.mkdtemp(), "features.csv")) as writer:
    ...     collector = Collector(writer)
    ...     for piece in pieces:
    ...         collector.add(piece, list(map_batches([pieces_batch([piece])], Task())))
    >>> writer.rows, collector.report.trajectories_read
    (8, 8)
    """

    writer: object
    kind: str = "features"
    report: LoadReport = field(default_factory=LoadReport)
    metrics: MetricState | None = None
    _ids: set = field(default_factory=set)
    _file_ids: dict = field(default_factory=dict)
    _offsets: dict = field(default_factory=dict)

    def add(self, piece: Piece, batches: list) -> None:
        """Write one piece's rows and merge its report and metrics (pieces in input order).

        Parameters
        ----------
        piece : Piece
            The piece.
        batches : list of pyarrow.RecordBatch
            Its result batches from :func:`htc_core.engines.map_batches` (its rows, then its meta row).

        Returns
        -------
        None

        Examples
        --------
        >>> import os, tempfile
        >>> from htc_core.engines import Task, map_batches, split_inputs
        >>> from htc_core.engines.common import pieces_batch
        >>> from htc_core.engines.driver import Collector
        >>> from htc_core.tablewriter import TableWriter
        >>> piece = split_inputs(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"])[0]
        >>> with TableWriter(os.path.join(tempfile.mkdtemp(), "features.csv")) as writer:
        ...     Collector(writer).add(piece, list(map_batches([pieces_batch([piece])], Task())))
        >>> writer.rows
        8
        """
        import pandas as pd
        import pyarrow as pa
        import pyarrow.compute as pc

        table = pa.Table.from_batches(batches)
        meta_mask = table.column("_meta").is_valid()
        meta = orjson.loads(table.filter(meta_mask).column("_meta")[0].as_py())
        rows = table.filter(pc.invert(meta_mask))
        offset = self._offsets.get(piece.path, 0)
        self._offsets[piece.path] = offset + meta["n_lines"]
        report = _report_from(meta["report"])
        for p in report.problems:
            if p.line is not None:
                p.line += offset
        self.report.merge(report)
        state = _state_from(meta["metrics"])
        if rows.num_rows:
            df = rows.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)
            keep = self._id_rules(df, piece, offset)
            if not keep.all():
                df = df[keep].reset_index(drop=True)
                state = self._state_of(df)
            df = df.drop(columns=list(META))
            for c in df.columns:   # text as object columns, as the single-process writer has them (pandas' str
                if isinstance(df[c].dtype, pd.StringDtype):      # dtype made Parquet's text large_string)
                    df[c] = df[c].astype(object)
            self.writer.write(df)
        if state is not None:
            self.metrics = state if self.metrics is None else self.metrics.merge(state)

    def _state_of(self, df) -> MetricState | None:
        """The metrics of the rows kept (after a repeated id was dropped): from the labels in ``_y``."""
        if self.kind != "score":
            return None
        y = df["_y"].to_numpy(dtype=float)
        lab = ~np.isnan(y)
        return MetricState().update(y[lab], df["confidence"].to_numpy()[lab]) if lab.any() else None

    def _id_rules(self, df, piece: Piece, offset: int) -> np.ndarray:
        from ..formats.records import stem

        seen = self._file_ids.setdefault(piece.path, set())
        keep = np.ones(len(df), dtype=bool)
        ids = df["id"].tolist()
        lines = df["_line"].tolist()
        for i, tid in enumerate(ids):
            line = None if lines[i] is None or lines[i] != lines[i] else int(lines[i]) + offset
            if tid in seen:  # in an earlier piece of the same file
                self.report.error(piece.path, line, "duplicate trajectory id in this file (the first one is kept)",
                                  field="id", value=tid, trajectory_id=tid)
                self.report.trajectories_read -= 1
                keep[i] = False
                continue
            seen.add(tid)
            if tid in self._ids:
                new, n = f"{tid}@{stem(piece.path)}", 2
                while new in self._ids:
                    new, n = f"{tid}@{stem(piece.path)}-{n}", n + 1
                self.report.warn(piece.path, line, f"trajectory id also used in an earlier file; kept as {new!r}",
                                 field="id", value=tid, trajectory_id=tid)
                ids[i] = tid = new
            self._ids.add(tid)
        df["id"] = ids
        return keep


def collect(pieces: list[Piece], results: Iterable[list], out, task: Task, *, engine: str, workers: int,
            report: LoadReport) -> EngineResult:
    """Write the result batches of ``pieces`` to ``out`` incrementally and merge reports and metrics.

    What every engine calls once its pieces are scheduled. ``out`` is written atomically; the previous file
    is kept when nothing was read (:class:`NothingRead`).

    Parameters
    ----------
    pieces : list of Piece
        The pieces, in input order.
    results : iterable of list of pyarrow.RecordBatch
        One list of batches per piece, in piece order (consumed as they come).
    out : str or path-like
        The table (``.csv``, ``.parquet`` or ``.jsonl``).
    task : Task
        What was computed.
    engine : str
        The engine's name (recorded in the result).
    workers : int
        Workers used (recorded in the result).
    report : LoadReport
        The report of splitting the inputs; the pieces' reports are merged into it.

    Returns
    -------
    EngineResult

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.engines import Task, map_batches, split_inputs
    >>> from htc_core.engines.common import pieces_batch
    >>> from htc_core.engines.driver import collect
    >>> from htc_core.report import LoadReport
    >>> task = Task("features")
    >>> pieces = split_inputs(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], piece_bytes=20_000)
    >>> results = (list(map_batches([pieces_batch([p])], task)) for p in pieces)
    >>> out = os.path.join(tempfile.mkdtemp(), "features.jsonl")
    >>> result = collect(pieces, results, out, task, engine="my-scheduler", workers=1, report=LoadReport())
    >>> result.engine, result.rows, result.pieces
    ('my-scheduler', 8, 2)
    """
    from ..tablewriter import TableWriter

    with TableWriter(out) as w:
        col = Collector(w, task.kind, report)
        for piece, batches in zip(pieces, results):
            col.add(piece, batches)
        if report.trajectories_read == 0:
            raise NothingRead(report)
    return EngineResult(engine, str(out), w.rows, len(pieces), workers, report, col.metrics)


class NothingRead(ValueError):
    """No valid trajectory in the inputs (``report`` says why); the output file was left as it was.

    Parameters
    ----------
    report : LoadReport
        The load report (kept as ``report``).

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.engines import Task, run
    >>> from htc_core.engines.driver import NothingRead
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "runs.jsonl"), "w") as fh:
    ...     _ = fh.write('{"id": "r1"}\\n')
    >>> try:
    ...     run([folder], Task(), os.path.join(folder, "features.csv"))
    ... except NothingRead as err:
    ...     print(err, "/", err.report.rejected)
    no valid trajectories were read / 1
    """

    def __init__(self, report: LoadReport):
        super().__init__("no valid trajectories were read")
        self.report = report


__all__ = ["Collector", "EngineResult", "NothingRead", "collect"]
