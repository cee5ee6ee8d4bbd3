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
        self._in_chunk = 0  # trajectories of the current chunk in the pieces yielded so far
        self._started = False

    def __iter__(self) -> Iterator[TraceSet]:
        for ts, _ in self._pieces(None):
            yield ts

    def pieces(self, max_tokens: int) -> Iterator[tuple[TraceSet, bool]]:
        """The chunks cut into pieces of about ``max_tokens`` tokens: ``(piece, starts_chunk)`` pairs.

        The pieces of one chunk, in order, hold exactly the trajectories of that chunk (what iterating the
        reader yields), with the same labels and problems; ``starts_chunk`` is True for the first piece of each
        chunk. An htc-trace JSONL chunk is cut after the trajectory that brings a piece to ``max_tokens``
        tokens or more, at a token count that is a multiple of 4 (so every token keeps its position modulo 4
        within the chunk: OpenBLAS sums a matrix-vector product's last ``n % 4`` rows in another order,
        issue 29); the chunks of other formats are one piece each. A consumer that computes per piece and
        joins the results per chunk holds a piece at a time instead of a chunk (``htc features``: the pieces'
        buffers and temporaries are reused, where a 3,000-trajectory chunk touched 300 MB of fresh memory).

        Parameters
        ----------
        max_tokens : int
            The tokens of a piece (a positive integer; a piece holds more when its trajectories do).

        Returns
        -------
        iterator of (TraceSet, bool)

        Examples
        --------
        >>> from htc_core import formats
        >>> from htc_core.formats.chunks import ChunkReader
        >>> reader = ChunkReader("sample_runs/units/units_SmolLM2-135M-greedy.jsonl", readers=formats.READERS,
        ...                      detect=formats.detect, max_trajectories=100)
        >>> [(len(ts), first) for ts, first in reader.pieces(2_000)][:4]
        [(48, True), (50, False), (2, False), (53, True)]
        """
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        return self._pieces(int(max_tokens))

    def _pieces(self, max_tokens: int | None) -> Iterator[tuple[TraceSet, bool]]:
        if self._started:
            raise RuntimeError("a ChunkReader is read once; make a new one to read the inputs again")
        self._started = True
        labels_report = LoadReport()  # the labels file's problems follow the traces' ones, as in load()
        join = self._labels_join(labels_report)
        for ts, first in self._chunks(max_tokens):
            if join is not None:
                ts = _labels.apply_labels(ts, *join)
            self.n_trajectories += ts.n_trajectories
            yield ts, first
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

    def _flush(self, ends_chunk: bool = True) -> tuple[TraceSet, bool]:
        """The builder's trajectories as a piece, and whether it starts a chunk; ``ends_chunk``: the chunk ends
        with it (the next piece starts one)."""
        ts = self._builder.build()
        self._builder = TraceSetBuilder(self._ids)
        first = self._in_chunk == 0
        self._in_chunk = 0 if ends_chunk else self._in_chunk + len(ts)
        return ts, first

    def _chunks(self, max_tokens: int | None = None) -> Iterator[tuple[TraceSet, bool]]:
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
                    yield from self._native(f, max_tokens)
                else:
                    yield from self._whole_file(f, self._readers[fmt])
            except READ_ERRORS as e:
                self.report.error(file, None, read_error_reason(e))
        if len(self._builder):
            yield self._flush()

    def _native(self, path: Path, max_tokens: int | None) -> Iterator[tuple[TraceSet, bool]]:
        from .native import iter_records

        file, report = str(path), self.report
        before = report.lines_read
        seen: set[str] = set()
        for no, rec in iter_records(iter_lines(path), file=file, report=report, defaults=self.defaults):
            with guarded(report, file, no, what="line"):
                add_record(self._builder, rec, report, file, no, seen)
            b = self._builder
            if self._in_chunk + len(b) >= self.max_trajectories:
                yield self._flush()
            elif max_tokens is not None and b.n_tokens >= max_tokens and b.n_tokens % 4 == 0:
                yield self._flush(ends_chunk=False)
        if report.lines_read == before:
            report.error(file, None, "file is empty")

    def _whole_file(self, path: Path, reader) -> Iterator[TraceSet]:
        builder = TraceSetBuilder(self._ids)
        reader.read_file(path, builder=builder, report=self.report, defaults=self.defaults, group_by=self.group_by)
        ts = builder.build()
        if len(self._builder):  # what is pending from earlier files goes first, in file order
            yield self._flush()
        self._in_chunk = 0  # pieces of the chunk before were cut without their last one: it ends here
        for start in range(0, ts.n_trajectories, self.max_trajectories):
            yield ts.take(np.arange(start, min(start + self.max_trajectories, ts.n_trajectories))), True


__all__ = ["ChunkReader", "DEFAULT_CHUNK"]
