"""Input formats: one reader per format, each returning (TraceSet, LoadReport).

``load`` is the single entry point used by the CLI, the store and the pages.
"""

from __future__ import annotations

import os
from typing import Iterable

from ..report import LoadReport
from ..traces import TraceSet
from . import native

READERS = {"native": native}


def load(inputs: str | os.PathLike | Iterable[str | os.PathLike], *, format: str = "auto",
         defaults: dict | None = None) -> tuple[TraceSet, LoadReport]:
    """Read files or directories in ``format`` ('auto' detects it per file)."""
    if format not in ("auto", *READERS):
        raise ValueError(f"unknown format {format!r}; valid formats: auto, {', '.join(READERS)}")
    reader = READERS["native"] if format == "auto" else READERS[format]
    return reader.read(inputs, defaults=defaults)


__all__ = ["load", "READERS", "native"]
