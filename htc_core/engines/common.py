"""The one function every engine runs, and the driver side that puts the pieces back together.

A *piece* is a unit of work: a byte range of an htc-trace JSONL file cut at line boundaries (``split_inputs``),
or a whole file of another format (a call log groups lines by id anywhere in the file, a JSON document is one
value). ``map_batches(batches, task)`` takes Arrow record batches of pieces (``PIECE_SCHEMA``: one row per
piece) and yields Arrow record batches of results (``output_schema(task)``): one row per trajectory (the 48
features, or the scores of a JSON model) followed by one *meta* row per piece holding that piece's load report,
line count and metric state as JSON. The same function runs in-process (``engines.local``), on Dask workers
(``engines.dask_engine``) and inside Spark's ``mapInArrow`` (``engines.spark_engine``).

``engines.driver.Collector`` is the driver: it takes each piece's batches in input order, applies the id rules of
``formats.load`` across pieces (a repeated id inside one file is an error and the first is kept; an id used
by an earlier file is kept as ``id@file-stem``), turns piece-relative line numbers into file line numbers,
writes the rows with ``TableWriter`` (incrementally) and merges the load reports and the metric states (``MetricState``).
"""

from __future__ import annotations

import dataclasses
import io
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import orjson

from ..calibration.streaming import MetricState
from ..report import LoadReport
from ..tablewriter import float_array, text_array, validity_bitmap

# bytes of htc-trace JSONL per piece at most (a piece is held in memory by the worker that reads it)
DEFAULT_PIECE_BYTES = 32 << 20
# the smallest piece the automatic size picks (below it, the per-task overhead of a cluster dominates)
MIN_PIECE_BYTES = 1 << 20


def sized_piece_bytes(inputs, workers: int) -> int:
    """Piece size for ``workers`` sized to the data: about 4 pieces per worker (so that uneven pieces balance).

    Between MIN_PIECE_BYTES and DEFAULT_PIECE_BYTES. A 20 MB input on 2 workers: 2.5 MB pieces (8 tasks)
    where a fixed 32 MB made one task and left a worker idle.

    Parameters
    ----------
    inputs : str, path-like or list of them
        Files or folders (as :func:`split_inputs` takes them).
    workers : int
        The number of workers.

    Returns
    -------
    int
        Bytes per piece.

    Examples
    --------
    >>> from htc_core.engines.common import MIN_PIECE_BYTES, sized_piece_bytes
    >>> sized_piece_bytes(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], workers=2) == MIN_PIECE_BYTES    # a small input
    True
    """
    from ..formats.inputs import SUFFIXES, expand_inputs

    files, _ = expand_inputs([inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs), SUFFIXES)
    total = 0
    for f in files:
        try:
            total += os.path.getsize(f)
        except OSError:
            pass                      # reported by split_inputs
    return int(min(DEFAULT_PIECE_BYTES, max(MIN_PIECE_BYTES, total // (4 * max(1, workers)))))
KINDS = ("features", "score")
META = ("_piece", "_line", "_y", "_meta")


@dataclass(frozen=True)
class Task:
    """What to compute per trajectory: the 48 features, or the scores of a JSON model.

    Parameters
    ----------
    kind : {"features", "score"}, default "features"
        ``features``: the table ``htc features`` writes; ``score``: the table ``htc score`` writes.
    profile : str, default "paper"
        The token-confidence profile of the features.
    top_k : int, default 5
        The alternatives averaged into TopkConf.
    model_text : str, optional
        For ``score``: the JSON text of the model file (shipped to the workers as text; never pickled).
    model_source : str, default "model"
        Where the model came from (for messages).
    defaults : tuple of (str, str) pairs, default ()
        Dataset / model names set on trajectories that have none.

    Examples
    --------
    >>> from htc_core.engines import Task
    >>> Task("features", top_k=3)
    Task(kind='features', profile='paper', top_k=3, model_text=None, model_source='model', defaults=())
    >>> Task("score")
    Traceback (most recent call last):
    ...
    ValueError: kind='score' needs model_text (the JSON text of a model file)
    """

    kind: str = "features"
    profile: str = "paper"
    top_k: int = 5
    model_text: str | None = None
    model_source: str = "model"
    defaults: tuple = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "score" and not self.model_text:
            raise ValueError("kind='score' needs model_text (the JSON text of a model file)")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, (int, np.integer)) or self.top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {self.top_k!r}")

    @classmethod
    def for_model(cls, model: str | os.PathLike, defaults: dict | None = None) -> "Task":
        """A scoring task for a model file written by ``htc fit`` or a shipped model name (``gac``).

        Parameters
        ----------
        model : str or path-like
            The model file or a shipped model's name.
        defaults : dict, optional
            Dataset / model names set on trajectories that have none.

        Returns
        -------
        Task

        Examples
        --------
        >>> from htc_core.engines import Task
        >>> task = Task.for_model("gac", defaults={"dataset": "units"})
        >>> task.kind, task.model_source.endswith("gac.json"), task.defaults
        ('score', True, (('dataset', 'units'),))
        """
        from ..calibration.models import model_path

        path = model_path(model)
        return cls(kind="score", model_text=path.read_text(encoding="utf-8"), model_source=str(path),
                   defaults=tuple(sorted((defaults or {}).items())))


@dataclass(frozen=True)
class Piece:
    """A unit of work: bytes ``start``..``end`` of a file (htc-trace JSONL cut at line boundaries), or a whole file.

    Parameters
    ----------
    index : int
        Its position among the pieces (input order).
    path : str
        The file.
    start : int
        First byte.
    end : int
        Byte after the last; -1 for the whole file.
    format : str
        The reader's format (``native``, ``openai-calllog``, ...).

    Examples
    --------
    >>> from htc_core.engines import split_inputs
    >>> split_inputs(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], piece_bytes=20_000)[1]
    Piece(index=1, path='sample_runs/_examples/units_Gemma3-270M-greedy.jsonl', start=25822, end=50826, format='native')
    """

    index: int
    path: str
    start: int
    end: int
    format: str


PIECE_FIELDS = ("index", "path", "start", "end", "format")


def piece_schema():
    """The Arrow schema of the pieces' record batches (``PIECE_FIELDS``), the input of :func:`map_batches`.

    Returns
    -------
    pyarrow.Schema

    Examples
    --------
    >>> from htc_core.engines.common import piece_schema
    >>> piece_schema().names
    ['index', 'path', 'start', 'end', 'format']
    """
    import pyarrow as pa

    return pa.schema([("index", pa.int64()), ("path", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                      ("format", pa.string())])


def pieces_batch(pieces: list[Piece]):
    """The pieces as one Arrow record batch (``piece_schema``), the input of ``map_batches``.

    Parameters
    ----------
    pieces : list of Piece
        The pieces (:func:`split_inputs`).

    Returns
    -------
    pyarrow.RecordBatch
        One row per piece.

    Examples
    --------
    >>> from htc_core.engines.common import pieces_batch, split_inputs
    >>> batch = pieces_batch(split_inputs(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], piece_bytes=20_000))
    >>> batch.num_rows, batch.column("end").to_pylist()
    (2, [25822, 50826])
    """
    import pyarrow as pa

    cols = {f: [getattr(p, f) for p in pieces] for f in PIECE_FIELDS}
    return pa.RecordBatch.from_pydict(cols, schema=piece_schema())


def split_inputs(inputs, *, format: str = "auto", piece_bytes: int = DEFAULT_PIECE_BYTES,
                 report: LoadReport | None = None) -> list[Piece]:
    """The pieces of ``inputs`` (files or folders) in input order.

    Plain htc-trace JSONL is cut every ``piece_bytes`` at the next line end (the file is scanned only around
    each cut); gzip files and other formats are one piece each.

    Parameters
    ----------
    inputs : str, path-like or list of them
        Files or folders.
    format : str, default "auto"
        A reader's format, or ``auto`` to detect each file's.
    piece_bytes : int, default DEFAULT_PIECE_BYTES
        Bytes per piece of htc-trace JSONL at most (32 MiB).
    report : LoadReport, optional
        Receives the unreadable or undetectable inputs as errors.

    Returns
    -------
    list of Piece

    Examples
    --------
    >>> from htc_core.engines import split_inputs
    >>> from htc_core.report import LoadReport
    >>> [(p.start, p.end) for p in split_inputs(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], piece_bytes=20_000)]
    [(0, 25822), (25822, 50826)]
    >>> split_inputs(["sample_runs/_calllog/"])[0].format            # a call log: one piece
    'openai-calllog'
    >>> report = LoadReport()
    >>> split_inputs(["missing.jsonl"], report=report), str(report.errors[0])
    ([], 'missing.jsonl: no such file or directory')
    """
    from ..formats import READERS, detect
    from ..formats.inputs import SUFFIXES, expand_inputs

    if format not in ("auto", *READERS):
        raise ValueError(f"unknown format {format!r}; valid formats: auto, {', '.join(READERS)}")
    if isinstance(piece_bytes, bool) or not isinstance(piece_bytes, (int, np.integer)) or piece_bytes < 1:
        raise ValueError(f"piece_bytes must be a positive integer, got {piece_bytes!r}")
    report = report if report is not None else LoadReport()
    files, errors = expand_inputs([inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs), SUFFIXES)
    for e in errors:
        where, _, why = e.partition(": ")
        report.error(where, None, why)
    pieces: list[Piece] = []
    for f in files:
        fmt = format
        if fmt == "auto":
            fmt, why = detect(f)
            if fmt is None:
                report.error(str(f), None, why)
                continue
        if fmt != "native" or str(f).endswith(".gz"):
            pieces.append(Piece(len(pieces), str(f), 0, -1, fmt))
            continue
        for start, end in _cuts(f, piece_bytes):
            pieces.append(Piece(len(pieces), str(f), start, end, fmt))
    return pieces


def _cuts(path: Path, piece_bytes: int) -> list[tuple[int, int]]:
    size = path.stat().st_size
    cuts, start = [], 0
    with open(path, "rb") as fh:
        while start < size:
            end = start + piece_bytes
            if end < size:
                fh.seek(end - 1)
                fh.readline()  # to the end of the line that holds byte end-1
                end = fh.tell()
            cuts.append((start, min(end, size)))
            start = min(end, size)
    return cuts or [(0, 0)]


@lru_cache(maxsize=4)
def _model(text: str, source: str):
    """The model of a task, parsed once per worker process: read for scoring only (calibration.linear_scoring,
    numpy alone: a worker imports neither scikit-learn nor scipy), an HTC-GAM too (calibration.gam_scoring)."""
    from ..calibration.linear_scoring import GAC_FORMAT, GACScorer, LinearScorer
    from ..calibration.model_file import parse_model_text

    obj = parse_model_text(text, source=source)
    if isinstance(obj, dict) and obj.get("format") == GAC_FORMAT:
        return GACScorer.from_dict(obj, source=source)
    if isinstance(obj, dict) and obj.get("format") == "htc-gam":
        from ..calibration.gam_scoring import GAMScorer

        return GAMScorer.from_dict(obj, source=source)
    return LinearScorer.from_dict(obj, source=source)


def _frame(ts, task: Task):
    if task.kind == "features":
        from ..features import extract

        return extract(ts, profile=task.profile, top_k=task.top_k).to_frame(ts.meta)
    from ..scoring import score_frame

    # a piece is a byte range, not a run set: a GAC scores each run on its own here (as htc score does without --as-set)
    return score_frame(_model(task.model_text, task.model_source), ts, verbalized_column=True, set_level=False)


@lru_cache(maxsize=8)
def output_schema(task: Task):
    """The Arrow schema of ``map_batches``'s output.

    The table of ``task`` and the meta columns ``_piece``, ``_line`` (in the piece), ``_y`` (the label, for the
    driver's metrics) and ``_meta``. For ``features``: ``id``, ``dataset``, ``model`` (text), ``success``
    (boolean) and the 48 features (float64), written down without pandas (a worker computing features never
    imports it); for ``score``: found by running the task on one synthetic trajectory.

    Parameters
    ----------
    task : Task
        What is computed.

    Returns
    -------
    pyarrow.Schema

    Examples
    --------
    >>> from htc_core.engines import Task, output_schema
    >>> schema = output_schema(Task("features"))
    >>> len(schema), schema.names[:5], schema.names[-4:]
    (56, ['id', 'dataset', 'model', 'success', 'top1_gradient_mean'], ['_piece', '_line', '_y', '_meta'])
    >>> output_schema(Task.for_model("gac")).names[:3]
    ['id', 'confidence', 'gac_model']
    """
    import pyarrow as pa

    if task.kind == "features":
        from ..features import FEATURE_NAMES

        fields = [pa.field(c, pa.string()) for c in ("id", "dataset", "model")] + [pa.field("success", pa.bool_())]
        fields += [pa.field(name, pa.float64()) for name in FEATURE_NAMES]
    else:
        from ..synthetic import synthetic_trace_set

        df = _frame(synthetic_trace_set(1, 2, 3, 5), task)
        schema = pa.Schema.from_pandas(df, preserve_index=False)
        fields = [pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f for f in schema]
    fields += [pa.field("_piece", pa.int64()), pa.field("_line", pa.int64()), pa.field("_y", pa.float64()),
               pa.field("_meta", pa.string())]
    return pa.schema(fields)


def read_piece(piece: Piece, defaults: dict | None = None):
    """(trace set, line of each trajectory or None, load report, lines read) of one piece."""
    from ..formats import READERS
    from ..formats.jsonio import READ_ERRORS, iter_lines_of, read_error_reason
    from ..formats.native import iter_records
    from ..formats.records import add_record, guarded
    from ..traces import TraceSetBuilder

    report, builder, lines = LoadReport(), TraceSetBuilder(set()), []
    file = piece.path
    if piece.start == 0:
        report.files.append(file)
    if piece.end < 0:
        try:     # a cut-short or corrupt .gz names its file and keeps what was read, as the local reader does
            READERS[piece.format].read_file(Path(file), builder=builder, report=report, defaults=defaults)
        except READ_ERRORS as e:
            report.error(file, None, read_error_reason(e))
        return builder.build(), None, report, report.lines_read
    with open(file, "rb") as fh:
        fh.seek(piece.start)
        data = fh.read(piece.end - piece.start)
    seen: set[str] = set()
    for no, rec in iter_records(iter_lines_of(io.BytesIO(data), at_start=piece.start == 0), file=file,
                                report=report, defaults=defaults):
        with guarded(report, file, no, what="line"):
            n = len(builder)
            add_record(builder, rec, report, file, no, seen)
            if len(builder) > n:
                lines.append(no)
    if piece.start == 0 and report.lines_read == 0:
        report.error(file, None, "file is empty")
    return builder.build(), np.asarray(lines, dtype=np.int64), report, report.lines_read


def run_piece(piece: Piece, task: Task) -> list:
    """The result batches of one piece: its trajectories' rows, then its meta row (what a task of every engine
    computes; ``map_batches`` runs it per row of a pieces batch)."""
    schema = output_schema(task)
    ts, lines, report, n_lines = read_piece(piece, dict(task.defaults))
    out = []
    state = None
    if ts.n_trajectories:
        y = ts.labels
        batch = _feature_batch(ts, task, schema, piece.index, lines) if task.kind == "features" else None
        if batch is None:
            df = _frame(ts, task)
            if task.kind == "score":
                lab = ~np.isnan(y)
                state = MetricState().update(y[lab], df["confidence"].to_numpy()[lab]) if lab.any() else None
            batch = _pandas_batch(df, schema, piece.index, lines, y)
        out.append(batch)
    meta = {"report": _report_dict(report), "n_lines": n_lines, "metrics": _state_dict(state)}
    out.append(_meta_batch(schema, piece.index, orjson.dumps(meta)))
    return out


def _pandas_batch(df, schema, index: int, lines, y):
    import pyarrow as pa

    df["_piece"] = index
    df["_line"] = lines if lines is not None else None
    df["_y"] = y
    df["_meta"] = None
    return pa.RecordBatch.from_pandas(df, schema=schema, preserve_index=False)


def _feature_batch(ts, task: Task, schema, index: int, lines):
    """The rows of a features piece as an Arrow batch made from the numpy buffers (``pa.array`` and
    ``from_pandas`` import pandas: 0.2-0.4 s CPU in every worker process); None when a text column holds
    something else than str or None (the pandas path judges it)."""
    import pyarrow as pa

    from ..features import extract

    cols = [text_array(ts.meta_column(c), large=False) for c in ("id", "dataset", "model")]
    if any(c is None for c in cols):
        return None
    n = ts.n_trajectories
    success = ts.meta_column("success")
    data = pa.py_buffer(np.packbits(success == 1.0, bitorder="little"))
    cols.append(pa.Array.from_buffers(pa.bool_(), n, [validity_bitmap(~np.isnan(success)), data]))
    values = np.ascontiguousarray(extract(ts, profile=task.profile, top_k=task.top_k).values.T)
    cols += [float_array(v) for v in values]
    piece_col = np.full(n, index, dtype=np.int64)
    cols.append(pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(piece_col)]))
    cols.append(pa.nulls(n, pa.int64()) if lines is None else
                pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.ascontiguousarray(lines, np.int64))]))
    cols += [float_array(np.asarray(ts.labels, dtype=np.float64)), pa.nulls(n, pa.string())]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _meta_batch(schema, index: int, meta: bytes):
    """The one meta row of a piece: ``_piece`` and ``_meta`` set, every other column null."""
    import pyarrow as pa

    cols = [pa.nulls(1, f.type) for f in schema]
    cols[schema.get_field_index("_piece")] = pa.Array.from_buffers(
        pa.int64(), 1, [None, pa.py_buffer(np.array([index], dtype=np.int64))])
    cols[schema.get_field_index("_meta")] = pa.Array.from_buffers(
        pa.string(), 1, [None, pa.py_buffer(np.array([0, len(meta)], dtype=np.int32)), pa.py_buffer(meta)])
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def map_batches(batches: Iterable, task: Task) -> Iterator:
    """Arrow record batches of pieces in (``piece_schema``), Arrow record batches of results out.

    Per piece: the batch of its trajectories' rows, then one meta row (its load report, line count and metric
    state as JSON in ``_meta``); the schema is ``output_schema(task)``. Spark's ``mapInArrow`` calls it as is;
    another scheduler can too.

    Parameters
    ----------
    batches : iterable of pyarrow.RecordBatch
        Batches of pieces (:func:`pieces_batch`).
    task : Task
        What to compute.

    Yields
    ------
    pyarrow.RecordBatch

    Examples
    --------
    >>> import json
    >>> from htc_core.engines import Task, map_batches, split_inputs
    >>> from htc_core.engines.common import pieces_batch
    >>> pieces = split_inputs(["sample_runs/_examples/units_Gemma3-270M-greedy.jsonl"], piece_bytes=20_000)
    >>> out = list(map_batches([pieces_batch(pieces[:1])], Task("features")))
    >>> [batch.num_rows for batch in out]                  # 4 trajectories, then the meta row
    [4, 1]
    >>> json.loads(out[-1].column("_meta")[0].as_py())["report"]["trajectories_read"]
    4
    """
    for batch in batches:
        for row in batch.to_pylist():
            yield from run_piece(Piece(**{k: row[k] for k in PIECE_FIELDS}), task)


def _report_dict(report: LoadReport) -> dict:
    d = dataclasses.asdict(report)
    return d


def _state_dict(state: MetricState | None) -> dict | None:
    if state is None:
        return None
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in dataclasses.asdict(state).items()}


# run_piece, read_piece and META are map_batches' and the driver's helpers (not public)
__all__ = ["Task", "Piece", "split_inputs", "pieces_batch", "piece_schema", "map_batches", "output_schema",
           "DEFAULT_PIECE_BYTES", "MIN_PIECE_BYTES", "sized_piece_bytes", "PIECE_FIELDS"]
