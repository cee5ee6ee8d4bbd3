"""The one in-memory form of agent runs: a columnar trace set (``traceset``) and its builder (``builder``)."""

from .builder import TraceSetBuilder, TrajectoryRecord
from .metatable import MetaTable
from .stepfields import STEP_FIELDS, tool_json, tool_of
from .traceset import META_COLUMNS, TraceSet, concat, concat_ranges, empty_meta

__all__ = ["TraceSet", "MetaTable", "TraceSetBuilder", "TrajectoryRecord", "META_COLUMNS", "concat", "STEP_FIELDS",
           "tool_json", "tool_of"]
