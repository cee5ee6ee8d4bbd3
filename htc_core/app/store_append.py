"""Appending runs to a stored run set (:func:`append_run_set`): the run set keeps its id and the work is the new
runs' only. ``htc serve`` adds each flush's runs to the day's run set so (a dashboard selection of it stays
valid, and a flush costs what its own runs cost, not the day's).

Crash safety as for :func:`~htc_core.app.store_write.write_run_set`: one transaction, so a failure or a killed
process leaves the run set exactly as it was (``tests/test_store_append.py`` kills a process before the commit).
"""

from __future__ import annotations

import json
from typing import Callable

from ..report import LoadReport
from ..traces import TraceSet
from .store_write import RunSetWriter

__all__ = ["append_run_set", "merge_report_dicts"]


def append_run_set(store, run_set_id: str, ts: TraceSet, *, report: LoadReport | None = None,
                   on_chunk: Callable | None = None, on_finish: Callable | None = None) -> tuple[int, list[str]]:
    """Append ``ts`` to the stored run set ``run_set_id``: its id stays, the new runs follow the stored ones.
    Returns ``(kept, duplicates)``: ids already in the run set (or repeated in ``ts``) are reported and dropped.

    One transaction (a failure or a crash half way leaves the run set as it was), whose work is the new runs'
    only: the stored rows are not read (their ids are looked up in the store for duplicates, the vocabulary read
    to code the new token strings). Meant for increments (``htc serve``'s flushes); a large file is stored with
    :func:`write_run_set`, chunk by chunk. Narrower alternatives are NaN-padded, wider ones widen the stored
    run set; the load ``report`` is added to the stored one; the run set's cached feature matrices are dropped.
    ``on_chunk(con, run_set_id, written, start)`` and ``on_finish(con)`` as in :func:`write_run_set`."""
    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    w = RunSetWriter(None, run_set_id, "", report, store._hook)
    with store._transaction() as con:
        w.con = con
        w.resume(con)
        start = w.n
        written = w.add(ts, 0)
        if written is None:
            return 0, sorted(w.duplicates)
        if on_chunk is not None:
            on_chunk(con, run_set_id, written, start)
        w.flush(con)
        old = con.execute("SELECT report FROM run_sets WHERE id = ?", [run_set_id]).fetchall()[0][0]
        merged = merge_report_dicts(json.loads(old or "{}"), report.to_dict() if report is not None else {})
        con.execute("UPDATE run_sets SET n_trajectories = ?, n_steps = ?, n_tokens = ?, report = ? WHERE id = ?",
                    [w.n, w.n_steps, w.n_tokens, json.dumps(merged, ensure_ascii=False, default=str), run_set_id])
        con.execute("DELETE FROM features WHERE run_set = ?", [run_set_id])
        if on_finish is not None:
            on_finish(con)
        store._hook("before_commit")
    return w.n - start, sorted(w.duplicates)


def merge_report_dicts(old: dict, new: dict, *, max_problems: int = 1000) -> dict:
    """Two stored load reports (``LoadReport.to_dict``) as one: counts added, files and problems listed
    (problems past ``max_problems`` counted in ``problems_truncated``), the newer value otherwise."""
    out = dict(old)
    for key, v in new.items():
        was = out.get(key)
        if isinstance(v, bool) or was is None:
            out[key] = v
        elif isinstance(v, (int, float)) and isinstance(was, (int, float)):
            out[key] = was + v
        elif isinstance(v, list) and isinstance(was, list):
            out[key] = was + v
        elif isinstance(v, dict) and isinstance(was, dict):
            out[key] = {**was, **v}
        else:
            out[key] = v
    probs = out.get("problems")
    if isinstance(probs, list) and len(probs) > max_problems:
        out["problems_truncated"] = int(out.get("problems_truncated") or 0) + len(probs) - max_problems
        out["problems"] = probs[:max_problems]
    return out
