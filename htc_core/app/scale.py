"""Streamlit glue for large selections: the Runs page's DuckDB table, built once per selection and kept for all
sessions (keyed by the selection's content, like every computation of :mod:`~htc_core.app.compute`), and the
sample caps the pages state on screen."""

from __future__ import annotations

from . import compute
from .projection import PROJECTION_FIT_CAP, SCATTER_CAP
from .session import cache_key
from .sql_views import RunsTable
from .workspace import Workspace

__all__ = ["runs_table", "SCATTER_CAP", "PROJECTION_FIT_CAP"]



def runs_table(ws: Workspace) -> RunsTable:
    """The selection's per-run columns as a DuckDB table (the Runs browser pages through it with SQL)."""
    return compute.computed(cache_key("runs_table"), "Indexing the runs for browsing",
                            lambda progress: RunsTable(ws), units=len(ws))
