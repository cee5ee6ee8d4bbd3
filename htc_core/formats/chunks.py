"""Reading in chunks: the trajectories of any number of inputs as a sequence of trace sets of bounded size.

``formats.iter_chunks(inputs, max_trajectories=50_000)`` applies the same rules as ``formats.load`` (format detection per
file, every problem in one ``LoadReport``, a repeated id inside a file is an error, an id an earlier file used is
kept as ``id@file-stem``, ``labels`` joined by id) but never holds more than one chunk of trajectories:

- htc-trace JSONL (``native``) is streamed line by line: memory is bounded by the chunk whatever the file size;
- the other formats are read one file at a time and that file is cut into chunks, so memory is bounded by the
  largest such file (a call log groups lines by trajectory id anywhere in the file, a JSON document is one
  value). Convert big inputs once with ``htc import`` to get the streaming behaviour.

The ids already read are kept (a set of strings: about 100 bytes per trajectory) to apply the id rules across
chunks. The report is complete once the iteration has finished; the labels warnings (rows matching no
trajectory, ...) are added at the end.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from . import labels as _labels
from .inputs import SUFFIXES, Inputs, expand_inputs
from .jsonio import READ_ERRORS, iter_lines, read_error_reason
from .records import add_record, guarded

# default trajectories per chunk: a few hundred MB at most for agent runs of a few thousand tokens
DEFAULT_CHUNK = 50_000


class ChunkReader:
    """Iterate over ``TraceSet`` chunks of at most ``max_trajectories``; ``report`` holds every problem.

    What :func:`htc_core.formats.iter_chunks` returns: the chunks, in order, hold exactly what
    :func:`htc_core.formats.load` returns for the same arguments. A reader is iterated once.

    Parameters
    ----------
    inputs : str, path or iterable of them
        Files and folders (folders are read recursively).
    readers : dict
        Format name -> reader module (``htc_core.formats.READERS``).
    detect : callable
        ``detect(path) -> (format or None, why)`` (``htc_core.formats.detect``), used when ``format="auto"``.
    format : str, default="auto"
        ``"auto"`` or one of ``readers``.
    defaults : dict, optional
        Metadata filled in where a record has none.
    labels : str or path, optional
        A CSV/JSONL labels file joined by trajectory id to every chunk (see :mod:`htc_core.formats.labels`).
    group_by : str, optional
        As :func:`htc_core.formats.load`.
    max_trajectories : int, default=DEFAULT_CHUNK
        The most trajectories in one chunk (a positive integer).
    report : LoadReport, optional
        A report to add to (a new one by default).

    Attributes
    ----------
    report : LoadReport
        Every problem met so far; complete once the iteration has finished.
    n_trajectories : int
        The trajectories yielded so far.

    Raises
    ------
    ValueError
        An unknown ``format`` or a ``max_trajectories`` that is not a positive integer.

    Examples
    --------
    >>> from htc_core import formats
    >>> from htc_core.formats.chunks import ChunkReader
    >>> reader = ChunkReader("sample_runs/units/units_SmolLM2-135M-greedy.jsonl", readers=formats.READERS,
    ...                      detect=formats.detect, max_trajectories=100)
    >>> [len(ts) for ts in reader]
    [100, 100, 50]
    >>> reader.n_trajectories, reader.report.rejected
    (250, 0)
    """

    def __init__(self, inputs: Inputs, *, readers: dict, detect: Callable, format: str = "auto",
                 defaults: dict | None = None, labels: str | os.PathLike | None = None, group_by: str | None = None,
                 max_trajectories: int = DEFAULT_CHUNK, report: LoadReport | None = None):
        """Check the arguments (nothing is read before the iteration)."""
        self._readers, self._detect = readers, detect
        if format not in ("auto", *readers):
            raise ValueError(f"unknown format {format!r}; valid formats: auto, {', '.join(readers)}")
        if isinstance(max_trajectories, bool) or not isinstance(max_trajectories, (int, np.integer)) \
                or max_trajectories < 1:
            raise ValueError(f"max_trajectories must be a positive integer, got {max_trajectories!r}")
        self.inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
        self.format = format
        self.defaults = defaults
        self.labels = labels
        self.group_by = group_by
        self.max_trajectories = int(max_trajectories)
        self.report = report if report is not None else LoadReport()
        self.n_trajectories = 0
        self._ids: set[str] = set()
        self._builder = TraceSetBuilder(self._ids)
        self._started = False

    def __iter__(self) -> Iterator[TraceSet]:
        if self._started:
            raise RuntimeError("a ChunkReader is read once; make a new one to read the inputs again")
        self._started = True
        labels_report = LoadReport()  # the labels file's problems follow the traces' ones, as in load()
        join = self._labels_join(labels_report)
        for ts in self._chunks():
            if join is not None:
                ts = _labels.apply_labels(ts, *join)
            self.n_trajectories += ts.n_trajectories
            yield ts
        self.report.merge(labels_report)
        if join is not None:
            _labels.finish_join(join[1], join[0], join[2], self.report)

    def _labels_join(self, report: LoadReport):
        if self.labels is None:
            return None
        rows = _labels.read_labels(self.labels, report)
        info = _labels.LabelJoin(file=str(self.labels), rows=len(rows))
        if not rows:
            if Path(self.labels).is_file():
                report.warn(str(self.labels), None, "the labels file holds no usable rows; nothing joined")
            return None
        return rows, info, set()

    def _files(self) -> list[Path]:
        files, errors = expand_inputs(self.inputs, SUFFIXES)
        for e in errors:
            where, _, why = e.partition(": ")
            self.report.error(where, None, why)
        if self.labels is not None:
            lab = Path(self.labels).resolve()
            files = [f for f in files if f.resolve() != lab]
        return files

    def _flush(self) -> TraceSet:
        ts = self._builder.build()
        self._builder = TraceSetBuilder(self._ids)
        return ts

    def _chunks(self) -> Iterator[TraceSet]:
        for f in self._files():
            file = str(f)
            self.report.files.append(file)
            fmt = self.format
            if fmt == "auto":
                fmt, why = self._detect(f)
                if fmt is None:
                    self.report.error(file, None, why)
                    continue
            try:
                if fmt == "native":
                    yield from self._native(f)
                else:
                    yield from self._whole_file(f, self._readers[fmt])
            except READ_ERRORS as e:
                self.report.error(file, None, read_error_reason(e))
        if len(self._builder):
            yield self._flush()

    def _native(self, path: Path) -> Iterator[TraceSet]:
        from .native import iter_records

        file, report = str(path), self.report
        before = report.lines_read
        seen: set[str] = set()
        for no, rec in iter_records(iter_lines(path), file=file, report=report, defaults=self.defaults):
            with guarded(report, file, no, what="line"):
                add_record(self._builder, rec, report, file, no, seen)
            if len(self._builder) >= self.max_trajectories:
                yield self._flush()
        if report.lines_read == before:
            report.error(file, None, "file is empty")

    def _whole_file(self, path: Path, reader) -> Iterator[TraceSet]:
        builder = TraceSetBuilder(self._ids)
        reader.read_file(path, builder=builder, report=self.report, defaults=self.defaults, group_by=self.group_by)
        ts = builder.build()
        if len(self._builder):  # what is pending from earlier files goes first, in file order
            yield self._flush()
        for start in range(0, ts.n_trajectories, self.max_trajectories):
            yield ts.take(np.arange(start, min(start + self.max_trajectories, ts.n_trajectories)))


__all__ = ["ChunkReader", "DEFAULT_CHUNK"]
