"""The rows of a labels file: CSV/TSV (any of ``,`` ``;`` ``\\t`` ``|`` as the separator, UTF-8 or UTF-16 with a
byte-order mark, gzip), JSONL, or a JSON array / ``{"labels": [...]}`` / ``{id: success}`` document.

The separator of a delimited file is the one of ``, ; \\t |`` that splits its header line into the most columns
(so a semicolon or tab file exported by a spreadsheet is read as such, whatever its suffix); a file whose first
non-blank byte is not ``{`` or ``[`` is read as delimited text even without a ``.csv`` suffix. A UTF-16 file
(spreadsheet "Unicode text") is recognised by its byte-order mark and decoded; any other undecodable byte is
reported at its line. Each row comes with its 1-based line (None inside a JSON document).
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path
from typing import Any, Iterator

from ..report import LoadReport
from .jsonio import ParseError, container_kind, iter_json_array, iter_lines, loads, read_document

__all__ = ["label_rows", "DELIMITERS"]

# the separators a delimited labels file may use, in order of preference on a tie
DELIMITERS = (",", ";", "\t", "|")
_BOMS = ((b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"), (b"\xef\xbb\xbf", "utf-8-sig"))


def label_rows(path: Path, report: LoadReport) -> Iterator[tuple[int | None, Any]]:
    """Yield (line, row) from a labels file; problems go to ``report`` (a bad row never stops the others).

    The file's kind is told from its suffix and first bytes (see the module's description); a delimited file's
    separator from its header line. Rows are not interpreted here (:func:`htc_core.formats.labels.read_labels`
    does that).

    Parameters
    ----------
    path : str or path
        The labels file (CSV/TSV/TXT, JSONL or JSON; gzip-compressed or not).
    report : LoadReport
        Where the problems go (an unreadable file, a malformed row, undecodable bytes).

    Yields
    ------
    line : int or None
        The row's 1-based line (None inside a JSON document).
    row : object
        The row: a dict of the columns for delimited files, the decoded JSON value otherwise.

    Examples
    --------
    >>> import os, tempfile
    >>> from htc_core.formats.label_rows import label_rows
    >>> from htc_core.report import LoadReport
    >>> path = os.path.join(tempfile.mkdtemp(), "labels.txt")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write("id;success\\nr1;yes\\nr2;no\\n")
    >>> list(label_rows(path, LoadReport()))
    [(2, {'id': 'r1', 'success': 'yes'}), (3, {'id': 'r2', 'success': 'no'})]
    """
    head = _head(path)
    if head is None:
        report.error(str(path), None, "cannot read labels file", rejects=False)
        return
    encoding = next((enc for bom, enc in _BOMS if head.startswith(bom)), "utf-8-sig")
    name = str(path).lower()
    text_start = head.decode(encoding, errors="replace").lstrip("\ufeff").lstrip()[:1]
    if name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")) or encoding == "utf-16" \
            or text_start not in ("{", "["):
        yield from _csv_rows(path, encoding, report)
        return
    kind = container_kind(path)
    if kind in ("json-array", "json-object"):
        yield from _json_rows(path, kind, report)
        return
    yield from _jsonl_rows(path, report)


def _head(path: Path) -> bytes | None:
    """The first 4096 bytes of a file (decompressed), or None when it cannot be read."""
    try:
        opener = gzip.open if str(path).lower().endswith(".gz") else open
        with opener(path, "rb") as fh:
            return fh.read(4096)
    except (OSError, EOFError):
        return None


def sniff_delimiter(header: str) -> str:
    """The separator of ``DELIMITERS`` that splits ``header`` into the most fields (``,`` when none does)."""
    counts = [(len(next(csv.reader([header], delimiter=d), [])), -i, d) for i, d in enumerate(DELIMITERS)]
    return max(counts)[2]


def _csv_rows(path: Path, encoding: str, report: LoadReport) -> Iterator[tuple[int, dict]]:
    """The rows of a delimited file, its separator sniffed from the header line."""
    file = str(path)
    opener = gzip.open if file.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as raw:
            fh = io.TextIOWrapper(raw, encoding=encoding, newline="")
            try:
                header = fh.readline()
            except UnicodeDecodeError as e:
                report.error(file, 1, f"the header line is not valid {encoding} text (byte {e.start}); "
                                      "save the file as UTF-8 CSV", rejects=False)
                return
            delimiter = sniff_delimiter(header)
            reader = csv.DictReader(_chain(header, fh), delimiter=delimiter)
            yield from _csv_reader_rows(reader, file, encoding, report)
    except (OSError, EOFError) as e:
        report.error(file, None, f"cannot read labels file: {e}", rejects=False)


def _chain(first: str, rest) -> Iterator[str]:
    """``first`` then the lines of ``rest``."""
    yield first
    yield from rest


def _csv_reader_rows(reader: csv.DictReader, file: str, encoding: str,
                     report: LoadReport) -> Iterator[tuple[int, dict]]:
    """The rows of a CSV reader; a malformed row (a field over the csv module's size limit, a stray quote)
    is reported at its own line and the rows after it are still read."""
    while True:
        before = reader.line_num
        try:
            row = next(reader)
        except StopIteration:
            return
        except UnicodeDecodeError as e:
            report.error(file, before + 1, f"invalid {encoding} at byte {e.start}; the rest of the labels file "
                                           "is ignored", rejects=False)
            return
        except csv.Error as e:
            # each next() consumes at least one line, so this ends at the end of the file
            report.error(file, before + 1, f"malformed CSV row: {e}; row ignored", rejects=False)
            continue
        yield reader.line_num, row


def _json_rows(path: Path, kind: str, report: LoadReport) -> Iterator[tuple[int | None, Any]]:
    """A JSON array of rows, ``{"labels": [...]}`` or ``{id: success, ...}``."""
    file = str(path)
    try:
        if kind == "json-array":
            yield from iter_json_array(path, on_bad=lambda e: report.error(
                file, e.line, f"{e.reason}; row ignored", field=e.field, value=e.value, rejects=False))
            return
        doc = read_document(path)
        items = doc.get("labels") if isinstance(doc, dict) else None
        if isinstance(items, list):
            for r in items:
                yield None, r
        elif isinstance(doc, dict) and all(not isinstance(v, (dict, list)) for v in doc.values()):
            for k, v in doc.items():  # {"id": success, ...}
                yield None, {"id": k, "success": v}
        else:
            report.error(file, 1, "a JSON labels file must be an array of rows, {'labels': [...]} or {id: success}",
                         rejects=False)
    except ParseError as e:
        report.error(file, e.line, e.reason, field=e.field, value=e.value, rejects=False)


def _jsonl_rows(path: Path, report: LoadReport) -> Iterator[tuple[int, Any]]:
    """The rows of a JSONL file (blank lines skipped, a malformed line reported)."""
    file = str(path)
    try:
        for no, raw in iter_lines(path):
            if not raw.strip():
                continue
            try:
                yield no, loads(raw)
            except ParseError as e:
                report.error(file, no, f"{e.reason}; row ignored", field=e.field, value=e.value, rejects=False)
    except OSError as e:
        report.error(file, None, f"cannot read labels file: {e}", rejects=False)
