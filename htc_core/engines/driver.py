"""The driver side of every engine: the result batches of each piece, in input order, back into one table.

``Collector`` applies the id rules of ``formats.load`` across pieces (a repeated id inside one file is an error
and the first is kept; an id used by an earlier file is kept as ``id@file-stem``), turns piece-relative line
numbers into file line numbers, writes the rows with ``TableWriter`` as they come and merges the load reports
and the per-piece ``MetricState``s (exact: sufficient statistics add up).
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
    """What a run over pieces produced: rows written, the merged load report and (scoring labeled runs)
    the merged metrics."""

    engine: str
    out: str
    rows: int
    pieces: int
    workers: int
    report: LoadReport
    metrics: MetricState | None = None

    def to_dict(self) -> dict:
        d = {"engine": self.engine, "out": self.out, "rows": self.rows, "pieces": self.pieces,
             "workers": self.workers, "trajectories_read": self.report.trajectories_read,
             "rejected": self.report.rejected}
        if self.metrics is not None and self.metrics.n:
            d.update({f"metric_{k}": v for k, v in self.metrics.to_dict().items()})
        return d

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([self.to_dict()])


@dataclass
class Collector:
    """The driver side: feed each piece's batches in input order (``add``), then ``finish``."""

    writer: object
    kind: str = "features"
    report: LoadReport = field(default_factory=LoadReport)
    metrics: MetricState | None = None
    _ids: set = field(default_factory=set)
    _file_ids: dict = field(default_factory=dict)
    _offsets: dict = field(default_factory=dict)

    def add(self, piece: Piece, batches: list) -> None:
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
            self.writer.write(df.drop(columns=list(META)))
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
    """Write the result batches of ``pieces`` (``results``: one list of batches per piece, in piece order) to
    ``out`` incrementally and merge reports and metrics. The previous ``out`` is kept when nothing was read."""
    from ..tablewriter import TableWriter

    with TableWriter(out) as w:
        col = Collector(w, task.kind, report)
        for piece, batches in zip(pieces, results):
            col.add(piece, batches)
        if report.trajectories_read == 0:
            raise NothingRead(report)
    return EngineResult(engine, str(out), w.rows, len(pieces), workers, report, col.metrics)


class NothingRead(ValueError):
    """No valid trajectory in the inputs (``report`` says why); the output file was left as it was."""

    def __init__(self, report: LoadReport):
        super().__init__("no valid trajectories were read")
        self.report = report


__all__ = ["Collector", "EngineResult", "NothingRead", "collect"]
