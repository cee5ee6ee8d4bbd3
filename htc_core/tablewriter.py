"""Writing a table chunk by chunk: ``.csv``, ``.parquet`` or ``.jsonl``, atomically (``htc_core.atomic``).

``with TableWriter(path) as w: w.write(df_chunk) ...`` appends each chunk to a temporary file next to ``path``
(CSV rows, a Parquet row group, JSON lines) and renames it onto ``path`` only when the block succeeds, so memory
holds one chunk and a failure half-way leaves the previous file intact. The columns are those of the first chunk;
a later chunk with other columns is refused (``ValueError``). Parquet column types are fixed by the first chunk,
where a text column that is empty in it is typed as text rather than null, so later chunks fit.

``write_columns`` takes plain numpy columns and writes CSV without pandas (its import is 0.2-0.4 s of CPU, more
than the rest of ``htc features`` on a small file): the same bytes as ``write`` of the equivalent DataFrame,
since both hand Arrow's C++ writer the same Arrow columns.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

SUFFIXES = (".csv", ".parquet", ".jsonl")


class TableWriter:
    """Append DataFrames to one output file (``.csv``, ``.parquet`` or ``.jsonl``), atomically.

    Use it in a ``with`` block: each ``write`` appends a chunk to a temporary file next to ``path``, renamed
    onto ``path`` only when the block succeeds, so memory holds one chunk and a failure half-way leaves the
    previous file intact. The columns are those of the first chunk; a later chunk with other columns is
    refused (``ValueError``).

    Parameters
    ----------
    path : str, path-like or None
        The output file; its suffix picks the format.
    stream : binary file object, optional
        With ``path=None``: receives CSV as it is written (``sys.stdout.buffer``; no atomic rename, a pipe has
        no previous content to keep).

    Attributes
    ----------
    rows : int
        Rows written so far.
    columns : list of str or None
        The columns (those of the first chunk).

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from htc_core.tablewriter import TableWriter
    >>> out = os.path.join(tempfile.mkdtemp(), "scores.parquet")
    >>> with TableWriter(out) as writer:
    ...     writer.write(pd.DataFrame({"id": ["a", "b"], "confidence": [0.9, 0.2]}))
    ...     writer.write(pd.DataFrame({"id": ["c"], "confidence": [0.6]}))
    >>> writer.rows, pd.read_parquet(out)["id"].tolist()
    (3, ['a', 'b', 'c'])
    """

    def __init__(self, path: str | os.PathLike | None, *, stream: Any = None):
        self.stream = stream
        if path is None:
            if stream is None:
                raise ValueError("give a path, or stream= for CSV to a binary stream")
            self.path, self.kind = None, "csv"
        else:
            self.path = Path(path)
            if not self.path.name.endswith(SUFFIXES):
                raise ValueError(f"path must end in {', '.join(SUFFIXES)}, got {self.path}")
            self.kind = self.path.suffix.lstrip(".")
        self.rows = 0
        self.columns: list[str] | None = None
        self._stack = ExitStack()
        self._tmp: Path | None = None
        self._parquet: Any = None
        self._schema: Any = None

    def __enter__(self) -> "TableWriter":
        from .atomic import atomic_path

        if self.path is None:
            self._tmp = Path(os.devnull)      # marks the block as entered; the rows go to the stream
            return self
        self._tmp = self._stack.enter_context(atomic_path(self.path))
        self._tmp.write_bytes(b"")
        return self

    def __exit__(self, *exc) -> bool:
        """Finish the file, then rename it onto the target only if the block and the finish both succeeded.

        A failing finish (``ParquetWriter.close`` on a full disk writes the footer) is passed to the atomic
        rename as the block's exception: the temporary file is removed, the previous output kept, and the
        error raised (a ``return`` inside ``finally`` would swallow it and rename an unreadable file)."""
        try:
            if self._parquet is not None:
                writer, self._parquet = self._parquet, None
                writer.close()
            elif self.kind == "parquet" and exc[0] is None:  # no chunk: an empty table with no columns
                import pandas as pd

                pd.DataFrame().to_parquet(self._tmp, index=False)
        except BaseException as e:
            if exc[0] is not None:  # the block's own error is the one to report
                return self._stack.__exit__(*exc)
            if not self._stack.__exit__(type(e), e, e.__traceback__):
                raise
            return False
        return self._stack.__exit__(*exc)

    def write(self, df: "pd.DataFrame") -> None:
        """Append one chunk (inside the ``with`` block).

        Parameters
        ----------
        df : DataFrame
            The rows; the same columns as the first chunk (``ValueError`` otherwise). Floats are written
            exactly (the shortest text that reads back to the same float64).

        Returns
        -------
        None

        Examples
        --------
        >>> import io
        >>> import pandas as pd
        >>> from htc_core.tablewriter import TableWriter
        >>> buffer = io.BytesIO()
        >>> with TableWriter(None, stream=buffer) as writer:
        ...     writer.write(pd.DataFrame({"id": ["a"], "p": [1 / 3]}))
        >>> buffer.getvalue().decode().splitlines()
        ['id,p', '"a",0.3333333333333333']
        """
        self._check_columns([str(c) for c in df.columns])
        if self.kind == "csv":
            self._write_csv(df)
        elif self.kind == "jsonl":
            import orjson

            rows = df.astype(object).where(df.notna(), None).to_dict(orient="records")
            with open(self._tmp, "ab") as fh:  # orjson writes the shortest text of each float: exact round trip
                fh.write(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY)
                                  for r in rows))
        else:
            self._write_parquet(df)
        self.rows += len(df)

    def _check_columns(self, cols: list[str]) -> None:
        if self._tmp is None:
            raise RuntimeError("use TableWriter in a with block")
        if self.columns is None:
            self.columns = cols
        elif cols != self.columns:
            raise ValueError(f"df has columns {cols[:6]}..., the first chunk had {self.columns[:6]}...")

    def write_columns(self, columns: dict[str, np.ndarray], *, booleans: Iterable[str] = ()) -> None:
        """Append one chunk given as numpy columns (inside the ``with`` block), without pandas for CSV.

        Parameters
        ----------
        columns : dict of str to ndarray
            The columns in order, of equal length: float64 arrays (NaN: missing), integer arrays, bool arrays,
            object arrays of str or None, and the columns named in ``booleans``.
        booleans : iterable of str, default=()
            Columns holding float64 1.0 / 0.0 / NaN, written as a nullable boolean (True, False, missing).

        Returns
        -------
        None

        Notes
        -----
        CSV goes to Arrow's writer as Arrow arrays made from the buffers: the bytes ``write`` writes for the
        equivalent DataFrame. A text column holding anything but str or None (or a string UTF-8 cannot
        encode), and Parquet or JSONL, go through that DataFrame and ``write``.

        Examples
        --------
        >>> import io
        >>> import numpy as np
        >>> from htc_core.tablewriter import TableWriter
        >>> buffer = io.BytesIO()
        >>> with TableWriter(None, stream=buffer) as writer:
        ...     writer.write_columns({"id": np.array(["a", None], dtype=object), "ok": np.array([1.0, np.nan]),
        ...                           "p": np.array([1 / 3, 0.5])}, booleans=["ok"])
        >>> buffer.getvalue().decode().splitlines()
        ['id,ok,p', '"a","True",0.3333333333333333', ',,0.5']
        """
        booleans = set(booleans)
        arrays = None
        if self.kind == "csv":
            arrays = _arrow_columns(columns, booleans)
        if arrays is None:
            self.write(_frame(columns, booleans))
            return
        self._check_columns([str(c) for c in columns])
        self._write_csv(arrays)
        self.rows += len(next(iter(columns.values()))) if columns else 0

    def _write_csv(self, df) -> None:
        """CSV that reads back as pandas' own (text quoted, True/False, empty for missing), with numbers
        formatted by Arrow's C++ writer: the shortest text that reads back to the same float64 (pandas formats
        each value in Python, ten times slower)."""
        if self.stream is not None:
            self._csv_rows(df, self.stream)
            self.stream.flush()
            return
        with open(self._tmp, "ab") as raw:
            self._csv_rows(df, raw)

    def _csv_rows(self, df, raw) -> None:
        """``df``: a DataFrame, or the Arrow arrays of ``write_columns`` (a list)."""
        import csv
        import io

        import pyarrow as pa
        import pyarrow.csv as pacsv

        if self.rows == 0:
            head = io.StringIO()
            csv.writer(head, lineterminator="\n").writerow(self.columns)
            raw.write(head.getvalue().encode("utf-8"))
        if isinstance(df, list):
            if len(df) and len(df[0]):
                table = pa.Table.from_arrays(df, names=[f"c{i}" for i in range(len(df))])
                pacsv.write_csv(table, raw, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
            return
        import pandas as pd

        if not len(df):
            return
        df = df.copy(deep=False)
        for c in df.columns:
            if pd.api.types.is_bool_dtype(df[c].dtype):
                df[c] = df[c].map({True: "True", False: "False"}).astype(object)
        table = pa.Table.from_pandas(df, preserve_index=False)
        table = table.cast(pa.schema([pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f
                                      for f in table.schema]))
        pacsv.write_csv(table, raw, pacsv.WriteOptions(include_header=False, quoting_style="needed"))

    def _write_parquet(self, df: "pd.DataFrame") -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._schema is None:
            schema = pa.Schema.from_pandas(df, preserve_index=False)
            for i, f in enumerate(schema):
                if pa.types.is_null(f.type):  # all None in the first chunk: text (ids, names) in later ones
                    schema = schema.set(i, pa.field(f.name, pa.string()))
            self._schema = schema
            self._parquet = pq.ParquetWriter(self._tmp, schema)
        self._parquet.write_table(pa.Table.from_pandas(df, schema=self._schema, preserve_index=False))


def _frame(columns: dict[str, np.ndarray], booleans: set[str]) -> "pd.DataFrame":
    """The DataFrame of ``write_columns``' columns (booleans as pandas' nullable boolean)."""
    import pandas as pd

    out = {}
    for name, v in columns.items():
        if name in booleans:
            v = np.asarray(v, dtype=np.float64)
            out[name] = pd.arrays.BooleanArray(v == 1.0, np.isnan(v))
        else:   # object stays object (pandas 3 would infer its own string type from str values)
            out[name] = pd.Series(v, dtype=v.dtype, copy=False)
    return pd.DataFrame(out)


def _arrow_columns(columns: dict[str, np.ndarray], booleans: set[str]) -> list | None:
    """Arrow arrays of the columns, made from buffers (``pa.array`` on a numpy array or a list imports pandas),
    or None when a text column holds something else than str or None (the DataFrame path judges it)."""
    out = []
    for name, v in columns.items():
        if name in booleans:
            v = np.asarray(v, dtype=np.float64)
            words = np.where(v == 1.0, "True", "False").astype(object)
            words[np.isnan(v)] = None
            v = words
        elif v.dtype == bool:      # written as the DataFrame path writes a bool column
            v = np.where(v, "True", "False").astype(object)
        if v.dtype == object:
            arr = text_array(v)
            if arr is None:
                return None
        elif v.dtype.kind in "iu":
            arr = int_array(v)
        else:
            arr = float_array(v)
        out.append(arr)
    return out


def validity_bitmap(valid: np.ndarray):
    """Arrow's validity bitmap of a boolean mask (None when every value is valid)."""
    import pyarrow as pa

    if valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def float_array(v: np.ndarray):
    """A float64 Arrow array of ``v`` with NaN as null (what ``from_pandas`` makes of a float column)."""
    import pyarrow as pa

    v = np.ascontiguousarray(v, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(v), [validity_bitmap(~np.isnan(v)), pa.py_buffer(v)])


def int_array(v: np.ndarray):
    """An int64 (uint64 for unsigned) Arrow array of an integer array (no nulls), made from its buffer."""
    import pyarrow as pa

    unsigned = v.dtype.kind == "u"
    v = np.ascontiguousarray(v, dtype=np.uint64 if unsigned else np.int64)
    return pa.Array.from_buffers(pa.uint64() if unsigned else pa.int64(), len(v), [None, pa.py_buffer(v)])


def text_array(v: np.ndarray, *, large: bool = True):
    """An Arrow large_string (``large``) or string array of an object array of str / None; None for any other
    value, a lone surrogate, or (string) text past 32-bit offsets."""
    import pyarrow as pa

    values = v.tolist()
    if any(type(s) is not str and s is not None for s in values):
        return None
    try:
        data = [b"" if s is None else s.encode("utf-8") for s in values]
    except UnicodeEncodeError:    # a lone surrogate: Arrow refuses it, as the DataFrame path reports
        return None
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, data), dtype=np.int64, count=len(data)), out=offsets[1:])
    if not large:
        if offsets[-1] >= 2**31:
            return None
        offsets = offsets.astype(np.int32)
    valid = np.fromiter((s is not None for s in values), dtype=bool, count=len(values))
    return pa.Array.from_buffers(pa.large_string() if large else pa.string(), len(v),
                                 [validity_bitmap(valid), pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


__all__ = ["TableWriter", "SUFFIXES"]
