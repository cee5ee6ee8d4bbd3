"""One walk over the JSON values of a file for every reader: the lines of a JSONL file, or the elements of a
top-level JSON array, streamed, each counted and each problem reported where it is.

``walk_values(path, report, file, each, array=...)`` calls ``each(index, line, value)`` for every value that
decodes, inside ``records.guarded`` (an exception while handling one value is an error of that value, and the
walk goes on). What cannot be decoded is reported with its file, line, field and value:

- a JSONL line that is not valid JSON: that line, and the walk goes on with the next;
- an array element that is valid JSON but holds an unusable value (a number out of range, a lone surrogate,
  nesting too deep): that element, and the walk goes on with the next element;
- an array that breaks off (truncated, malformed between elements, content after the closing bracket): where
  it breaks, after every complete element before it was handed on; nothing after it can be located safely.

``iter_values(lines, report, file, decode)`` is its line half as a generator over (line number, raw bytes)
pairs (a file, a byte range of one, an upload), which the htc-trace reader (``native.iter_records``) streams
its records from. The readers of htc-trace JSONL, ATIF, the container formats (Chat Completions, Responses,
completions logs) and smolagents used to carry their own copy of this walk; their differences are the two hooks:
``on_error(error, broken)`` (default: ``report.error``), which a reader that accumulates one trajectory over
the elements uses to mark it failed; and ``acc()``, the trajectory under construction that a guarded error
rejects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..report import LoadReport
from .jsonio import ParseError, iter_json_array, iter_reported_lines, loads
from .records import guarded

__all__ = ["walk_values", "iter_values"]


def walk_values(path: Path, report: LoadReport, file: str, each: Callable[[int, int, Any], None], *,
                array: bool, on_error: Callable[[ParseError, bool], None] | None = None,
                acc: Callable[[], Any] = lambda: None) -> int:
    """Hand every decodable value of ``path`` to ``each(index, line, value)``; returns how many were handed on.

    Parameters
    ----------
    path : Path
        A JSONL file (``array=False``: one value per non-blank line) or a file holding one JSON array.
    report : LoadReport
        Counts every line (JSONL) or element (array) in ``lines_read``, and gets the problems.
    file : str
        The file's name in the report.
    each : callable
        ``each(index, line, value)``; ``index`` counts the values handed on (0, 1, ...). Runs inside
        ``records.guarded``: an exception becomes an error of this value and the walk goes on.
    array : bool
        Walk the elements of a top-level JSON array instead of the lines.
    on_error : callable, optional
        ``on_error(error, broken)`` for a value that cannot be decoded (``broken`` False: the walk goes on) or
        an array that breaks off (``broken`` True: the walk ends). Default: ``report.error`` with the error's
        line, reason, field and value.
    acc : callable, optional
        The trajectory under construction (or None), rejected by an error inside ``each``.

    Returns
    -------
    int
        The number of values handed to ``each``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from htc_core.formats.walk import walk_values
    >>> from htc_core.report import LoadReport
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = p.write_text('[{"a": 1},\\n {"a": 1e999},\\n {"a": 3}')
    >>> rep, got = LoadReport(), []
    >>> walk_values(p, rep, "a.json", lambda i, line, v: got.append((i, line, v)), array=True)
    2
    >>> got
    [(0, 1, {'a': 1}), (1, 3, {'a': 3})]
    >>> [(pr.line, pr.reason) for pr in rep.problems]  # doctest: +NORMALIZE_WHITESPACE
    [(2, 'bad value: number with 5 characters does not fit a float64'),
     (3, 'truncated JSON: the array is not closed')]
    """
    if on_error is None:
        def on_error(e: ParseError, broken: bool) -> None:
            report.error(file, e.line, e.reason, field=e.field, value=e.value)
    if array:
        return _walk_array(path, report, file, each, on_error, acc)
    n = 0
    for no, value in iter_values(iter_reported_lines(path, report, file), report, file, counted=True,
                                 on_error=on_error):
        with guarded(report, file, no, what="line"):
            each(n, no, value)
        n += 1
    return n


_NOTHING = object()


def iter_values(lines: Iterable[tuple[int, bytes]], report: LoadReport, file: str,
                decode: Callable[[int, bytes], Any] | None = None, *, counted: bool = False,
                on_error: Callable[[ParseError, bool], None] | None = None) -> Iterator[tuple[int, Any]]:
    """(line, value) for each non-blank line of ``lines`` (pairs of line number and raw bytes) that decodes.

    The JSONL half of :func:`walk_values`, and the line loop of the htc-trace reader (``native.iter_records``,
    whose ``decode`` takes the typed way first).

    Parameters
    ----------
    lines : iterable of (int, bytes)
        Line numbers and raw lines (a file, a byte range of one, an upload).
    report : LoadReport
        Counts every line in ``lines_read`` (unless ``counted``) and gets the problems.
    file : str
        The file's name in the report.
    decode : callable, optional
        ``decode(line, raw) -> value`` (default: ``jsonio.loads(raw)``); runs inside ``records.guarded``, so an
        exception becomes an error of that line and the walk goes on.
    counted : bool, default=False
        The lines are counted already (they come from ``jsonio.iter_reported_lines``).
    on_error : callable, optional
        ``on_error(error, False)`` for a line whose decoding raises ``ParseError`` (default: ``report.error``
        with the line, reason, field and value).

    Yields
    ------
    line : int
        The line number.
    value : object
        What ``decode`` returned for it.

    Examples
    --------
    >>> from htc_core.formats.walk import iter_values
    >>> from htc_core.report import LoadReport
    >>> report = LoadReport()
    >>> lines = [(1, b'{"a": 1}\\n'), (2, b'\\n'), (3, b'{broken\\n'), (4, b'[2, 3]\\n')]
    >>> list(iter_values(lines, report, "x.jsonl")), report.lines_read
    ([(1, {'a': 1}), (4, [2, 3])], 4)
    >>> [(p.line, p.reason[:15]) for p in report.problems]
    [(3, 'malformed JSON:')]
    """
    for no, raw in lines:
        if not counted:
            report.lines_read += 1
        if not raw or raw.isspace():  # strip() would copy the line (37 KB a line in the ingest bench)
            continue
        value = _NOTHING
        with guarded(report, file, no, what="line"):
            try:
                value = loads(raw) if decode is None else decode(no, raw)
            except ParseError as e:
                e.line = no
                if on_error is None:
                    report.error(file, no, e.reason, field=e.field, value=e.value)
                else:
                    on_error(e, False)
        if value is not _NOTHING:
            yield no, value


def _walk_array(path: Path, report: LoadReport, file: str, each: Callable[[int, int, Any], None],
                on_error: Callable[[ParseError, bool], None], acc: Callable[[], Any]) -> int:
    """The array half of :func:`walk_values`."""
    def on_bad(e: ParseError) -> None:
        report.lines_read += 1
        on_error(e, False)

    n = 0
    try:
        for line, el in iter_json_array(path, on_bad=on_bad):
            report.lines_read += 1
            with guarded(report, file, line, acc(), what="array element"):
                each(n, line, el)
            n += 1
    except ParseError as e:
        on_error(e, True)
    return n
