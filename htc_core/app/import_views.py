"""View models of an upload's import report: the format each file was read as, the lines skipped, the labels
join, and every problem (file, line, field, value, reason) with errors first. Pure pandas (no Streamlit)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["import_details", "problems_text", "problem_table"]


def import_details(summary: dict) -> list[str]:
    """What an upload summary says beyond the counts, one plain sentence each: the format each file was read
    as, the lines skipped as not LLM calls/trajectories, and the labels join."""
    out = []
    formats = summary.get("formats") or {}
    if formats:
        by_fmt: dict[str, list[str]] = {}
        for f, fmt in formats.items():
            by_fmt.setdefault(fmt, []).append(f)
        out.append("format: " + "; ".join(f"{fmt} ({', '.join(fs[:3])}{' …' if len(fs) > 3 else ''})"
                                          for fmt, fs in by_fmt.items()))
    tools = summary.get("tool_lines") or 0
    if tools:
        out.append(f"tool calls and observations attached to the steps they follow: {tools:,}")
    skipped = summary.get("skipped_lines") or 0
    out.append(f"lines skipped as not LLM calls or trajectories (events, other requests): {skipped:,}")
    lab = summary.get("labels")
    if lab:
        out.append(f"labels file {lab['file']}: {lab['rows']:,} rows; {lab['matched']:,} trajectories got a label, "
                   f"{lab['unlabeled']:,} did not; {lab['unmatched_rows']:,} rows matched no trajectory"
                   + (f"; {lab['model_conflicts']:,} model name(s) differed from the trace's (the trace's kept)"
                      if lab.get("model_conflicts") else ""))
    return out


def problems_text(summary: dict) -> str:
    """Every problem of an upload summary on its own line, reason in full (errors first)."""
    lines = []
    for p in problem_table(summary).to_dict(orient="records"):
        where = "".join(f" {k} {p[k]}" for k in ("line", "field", "value") if p.get(k) is not None and not
                        (isinstance(p[k], float) and np.isnan(p[k])))
        lines.append(f"[{p['severity']}] {p['file']}{where}: {p['reason']}")
    return "\n".join(lines)


def problem_table(summary: dict) -> pd.DataFrame:
    """The problems of an upload summary (``ui.handle_upload``), errors first, then warnings."""
    problems = summary.get("problems") or []
    rows = [p for p in problems if p["severity"] == "error"] + [p for p in problems if p["severity"] == "warning"]
    return pd.DataFrame(rows)
