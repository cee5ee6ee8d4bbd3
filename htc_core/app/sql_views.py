"""The Runs page's table and the pages' counts and histograms as DuckDB queries, so a million runs never become
a million-row DataFrame in the browser.

:class:`RunsTable` registers the workspace's per-run columns (metadata, steps, tokens, raw baselines, the
shipped GAC's confidence, the structural flags) once as an Arrow table in an in-memory DuckDB connection; each
question is then one SQL query over it:

- :meth:`RunsTable.page`: the Runs browser's filters (dataset, model, label, a confidence range, a literal
  case-insensitive text search in the question or id, structural flags) with ``ORDER BY`` and
  ``LIMIT``/``OFFSET``: one page of rows plus the number of matches;
- :meth:`RunsTable.counts`: runs, labeled runs and success rate per dataset and model;
- :meth:`RunsTable.histogram`: a confidence histogram by outcome (equal-width bins);
- :func:`reliability_bins`: the reliability diagram's per-bin counts, mean confidence and success rate.

A confidence that is not a stored column (out-of-fold, fitted on the selection) is passed as an array and
joined by position (``POSITIONAL JOIN``, no copy). Filters mean exactly what
:func:`~htc_core.app.workspace.browse` means (tests compare the two).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from ..explain.flags import FLAGS
from .workspace import Workspace

__all__ = ["RunsTable", "RunsPage", "reliability_bins", "PAGE_SIZES", "SORTABLE"]

#: rows per page the Runs page offers
PAGE_SIZES = (50, 100, 500, 1000)
#: the columns the Runs table can be sorted by (besides the chosen confidence)
SORTABLE = ("position", "id", "dataset", "model", "success", "steps", "tokens")
_TEXT = ("key", "id", "dataset", "model", "framework", "question", "answer", "gold")
_LABELS = ("any", "success", "failure", "unlabeled")


@dataclass
class RunsPage:
    """One page of the Runs table: ``rows`` (at most the page size), ``total`` matches, the page asked for."""

    rows: pd.DataFrame
    total: int
    offset: int
    limit: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.limit))

    def to_frame(self) -> pd.DataFrame:
        return self.rows.copy()

    def to_dict(self) -> dict:
        return {"total": self.total, "offset": self.offset, "limit": self.limit,
                "rows": self.rows.to_dict(orient="records")}


def _strings(values) -> pa.Array:
    return pa.array(np.asarray(values, dtype=object), type=pa.string(), from_pandas=True)


class RunsTable:
    """The per-run columns of a workspace in an in-memory DuckDB table (build once per workspace)."""

    def __init__(self, ws: Workspace):
        if not isinstance(ws, Workspace):
            raise ValueError(f"ws must be a Workspace, got {type(ws).__name__}")
        # text columns straight from the workspace's Arrow buffers (no Python string per run)
        cols: dict[str, pa.Array] = {"position": pa.array(np.arange(len(ws), dtype=np.int64)),
                                     "key": ws.keys_arrow(), "run_set": _strings(ws.run_set)}
        for c in _TEXT[1:]:
            cols[c] = ws.text_column(c)
        y = ws.labels
        cols["success"] = pa.array(y, type=pa.float64(), from_pandas=False)
        cols["steps"] = pa.array(np.asarray(ws.ts.steps_per_trajectory, dtype=np.int64))
        cols["tokens"] = pa.array(np.asarray(ws.ts.tokens_per_trajectory, dtype=np.int64))
        for c in ws.baselines.columns:
            cols[c] = pa.array(ws.baselines[c].to_numpy(dtype=np.float64))
        if ws.stored is not None:
            cols["GAC"] = pa.array(ws.stored.gac)
        fl = ws.flags.frame
        for f in FLAGS:
            cols[f"flag_{f}"] = pa.array(fl[f].fillna(False).to_numpy(dtype=bool))
        self.columns = list(cols)
        self.n = len(ws)
        self._con = duckdb.connect()
        self._con.execute("SET threads TO 2")
        self._con.register("runs", pa.table(cols))
        self._lock = threading.Lock()     # one DuckDB connection: queries of several sessions take turns

    def __len__(self) -> int:
        return self.n

    # ------------------------------------------------------------ helpers
    def _with_confidence(self, confidence: np.ndarray | None) -> str:
        if confidence is None:
            return "runs"
        c = np.asarray(confidence, dtype=np.float64)
        if c.shape != (self.n,):
            raise ValueError(f"confidence must have one value per run ({self.n}), got shape {c.shape}")
        self._con.register("conf", pa.table({"confidence_value": pa.array(c)}))
        return "(SELECT * FROM runs POSITIONAL JOIN conf)"

    def _where(self, *, datasets, models, label, confidence_column, confidence_range, text, flags) -> tuple[str, list]:
        if label not in _LABELS:
            raise ValueError(f"label must be 'any', 'success', 'failure' or 'unlabeled', got {label!r}")
        clauses, params = ["TRUE"], []
        for col, chosen in (("dataset", datasets), ("model", models)):
            if chosen:
                clauses.append(f"coalesce({col}, '(none)') IN ({', '.join('?' * len(chosen))})")
                params.extend(str(v) for v in chosen)
        clauses.append({"any": "TRUE", "success": "success = 1", "failure": "success = 0",
                        "unlabeled": "isnan(success)"}[label])
        if confidence_column is not None:
            lo, hi = (float(v) for v in confidence_range)
            clauses.append(f'"{confidence_column}" >= ? AND "{confidence_column}" <= ?')
            params.extend([lo, hi])
        for f in flags:
            if f not in FLAGS:
                raise ValueError(f"unknown flag {f!r}; valid flags: {', '.join(FLAGS)}")
            clauses.append(f"flag_{f}")
        needle = (text or "").strip().lower()
        if needle:
            clauses.append("(contains(lower(coalesce(question, '')), ?) OR contains(lower(coalesce(id, '')), ?))")
            params.extend([needle, needle])
        return " AND ".join(clauses), params

    # ------------------------------------------------------------ queries
    def page(self, *, datasets: Sequence[str] = (), models: Sequence[str] = (), label: str = "any",
             confidence: str | None = None, values: np.ndarray | None = None,
             confidence_range: tuple[float, float] = (0.0, 1.0), text: str = "", flags: Sequence[str] = (),
             sort: str = "position", descending: bool = False, limit: int = 100, offset: int = 0,
             columns: Sequence[str] | None = None) -> RunsPage:
        """One page of the filtered, sorted runs. ``confidence``: the column the range applies to (a stored
        one, or any name with its ``values``, one per run); ``sort``: a column of :data:`SORTABLE`, a stored
        confidence or ``confidence``."""
        if not isinstance(limit, (int, np.integer)) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        if not isinstance(offset, (int, np.integer)) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
        allowed = set(SORTABLE) | (set(self.columns) - set(_TEXT)) | ({confidence} if confidence else set())
        if sort not in allowed:
            raise ValueError(f"sort must be one of {sorted(allowed)}, got {sort!r}")
        if confidence is not None and values is None and confidence not in self.columns:
            raise ValueError(f"confidence must be a stored column or come with values, got {confidence!r}")
        conf_col = confidence if values is None else "confidence_value"
        sort_col = "confidence_value" if (values is not None and sort == confidence) else sort
        with self._lock:
            source = self._with_confidence(values)
            where, params = self._where(datasets=datasets, models=models, label=label, confidence_column=conf_col,
                                        confidence_range=confidence_range, text=text, flags=flags)
            total = int(self._con.execute(f"SELECT count(*) FROM {source} WHERE {where}", params).fetchone()[0])
            order = f'"{sort_col}" {"DESC" if descending else "ASC"} NULLS LAST, position'
            rows = self._con.execute(f"SELECT * FROM {source} WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
                                     params + [int(limit), int(offset)]).df()
        if values is not None:   # the given values replace a stored column of that name (e.g. GAC)
            rows = rows.drop(columns=[c for c in (confidence,) if c in rows.columns])
            rows = rows.rename(columns={"confidence_value": confidence})
        for c in _TEXT:   # missing text stays None (never NaN), as in Workspace.frame
            if c in rows:
                rows[c] = rows[c].astype(object).where(rows[c].notna(), None)
        rows["success"] = rows["success"].astype(np.float64)
        rows["flags"] = _flag_words(rows)
        if columns is not None:
            rows = rows[[c for c in columns if c in rows.columns]]
        return RunsPage(rows=rows.reset_index(drop=True), total=total, offset=int(offset), limit=int(limit))

    def positions(self, **filters) -> np.ndarray:
        """The positions of every run matching the filters of :meth:`page` (for an export), in position order."""
        values = filters.pop("values", None)
        conf = filters.pop("confidence", None)
        conf_col = conf if values is None else "confidence_value"
        with self._lock:
            source = self._with_confidence(values)
            where, params = self._where(confidence_column=conf_col, **_filter_defaults(filters))
            out = self._con.execute(f"SELECT position FROM {source} WHERE {where} ORDER BY position", params).fetchnumpy()
        return np.asarray(out["position"], dtype=np.int64)

    def counts(self, by: Sequence[str] = ("dataset", "model")) -> pd.DataFrame:
        """Runs, labeled runs and success rate per group (``by``: metadata columns), largest group first."""
        bad = [c for c in by if c not in ("dataset", "model", "framework", "run_set")]
        if bad or not by:
            raise ValueError(f"by must name dataset, model, framework or run_set, got {list(by)!r}")
        keys = ", ".join(f"coalesce({c}, '(none)') AS {c}" for c in by)
        with self._lock:
            return self._con.execute(
                f"SELECT {keys}, count(*) AS runs, count(*) FILTER (WHERE NOT isnan(success)) AS labeled, "
                f"avg(success) FILTER (WHERE NOT isnan(success)) AS success_rate FROM runs GROUP BY ALL "
                f"ORDER BY runs DESC, {', '.join(by)}").df()

    def histogram(self, column: str, *, bins: int = 20, values: np.ndarray | None = None) -> pd.DataFrame:
        """Runs per equal-width bin of a confidence in [0, 1], by outcome (success / failure / unlabeled)."""
        if not isinstance(bins, int) or bins < 1:
            raise ValueError(f"bins must be a positive integer, got {bins!r}")
        if values is None and column not in self.columns:
            raise ValueError(f"column must be a stored confidence or come with values, got {column!r}")
        col = column if values is None else "confidence_value"
        with self._lock:
            source = self._with_confidence(values)
            df = self._con.execute(
                f'SELECT least(floor("{col}" * ?), ? - 1)::INTEGER AS bin, CASE WHEN isnan(success) THEN '
                f"'unlabeled' WHEN success = 1 THEN 'success' ELSE 'failure' END AS outcome, count(*) AS runs "
                f'FROM {source} WHERE isfinite("{col}") GROUP BY ALL ORDER BY bin, outcome', [bins, bins]).df()
        df["left"] = df["bin"] / bins
        df["right"] = (df["bin"] + 1) / bins
        return df


def _filter_defaults(filters: dict) -> dict:
    out = {"datasets": (), "models": (), "label": "any", "confidence_range": (0.0, 1.0), "text": "", "flags": ()}
    unknown = set(filters) - set(out)
    if unknown:
        raise ValueError(f"unknown filter(s) {sorted(unknown)}")
    out.update(filters)
    return out


def _flag_words(rows: pd.DataFrame) -> np.ndarray:
    words = np.full(len(rows), "", dtype=object)
    for f in FLAGS:
        raised = rows[f"flag_{f}"].to_numpy(dtype=bool)
        words[raised] = np.where(words[raised] == "", FLAGS[f], words[raised] + ", " + FLAGS[f])
    return words


def reliability_bins(confidence: np.ndarray, labels: np.ndarray, *, n_bins: int = 10) -> pd.DataFrame:
    """Per equal-width bin of ``confidence`` (the last bin closed): runs, mean confidence, success rate, in
    DuckDB (labeled, finite rows only). The bins of the ECE in ``htc_core.calibration.metrics``."""
    if not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    p = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if p.shape != y.shape or p.ndim != 1:
        raise ValueError(f"confidence and labels must be 1-D of one length, got {p.shape} and {y.shape}")
    con = duckdb.connect()
    try:
        con.register("r", pa.table({"p": pa.array(p), "y": pa.array(y)}))
        return con.execute("SELECT least(floor(p * ?), ? - 1)::INTEGER AS bin, count(*) AS runs, avg(p) AS "
                           "mean_confidence, avg(y) AS success_rate FROM r WHERE isfinite(p) AND NOT isnan(y) "
                           "GROUP BY ALL ORDER BY bin", [n_bins, n_bins]).df()
    finally:
        con.close()
