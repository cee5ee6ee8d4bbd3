"""Upload handling: the browser's files written to a private temp folder, read, stored as one run set
(:func:`htc_core.app.ingest.ingest`) with a progress bar, and summarised for the Runs page."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from ..report import LoadReport
from ..scratch import scratch_dir
from .ingest import ingest
from . import timing
from .session import data_dir, settings, store
from .store import AddResult

__all__ = ["handle_upload"]


def _write(tmp: Path, files: list, labels_file) -> tuple[list[Path], Path | None, dict[str, str]]:
    """The uploads as files under ``tmp`` (one folder each, so equal names do not collide); the map from
    written path to the name the user gave."""
    display: dict[str, str] = {}
    paths = []
    for i, f in enumerate(files):
        safe = Path(f.name).name or f"upload-{i}.jsonl"
        d = tmp / str(i)
        d.mkdir()
        p = d / safe
        p.write_bytes(f.getvalue())
        paths.append(p)
        display[str(p)] = safe
    lab = None
    if labels_file is not None:
        lab = tmp / "labels" / (Path(labels_file.name).name or "labels.csv")
        lab.parent.mkdir()
        lab.write_bytes(labels_file.getvalue())
        display[str(lab)] = Path(labels_file.name).name
    return paths, lab, display


def _summary(name: str, res: AddResult | None, report: LoadReport, display: dict[str, str]) -> dict:
    problems = [{"severity": p.severity, "file": display.get(p.file, Path(p.file).name), "line": p.line,
                 "trajectory": p.trajectory_id, "field": p.field, "value": p.value, "reason": p.reason}
                for p in report.problems]
    return {
        "name": name, "files": [display.get(f, Path(f).name) for f in report.files],
        "kept": 0 if res is None else res.kept, "rejected": report.rejected,
        "duplicates": [] if res is None else res.duplicates, "empty_steps_dropped": report.empty_steps_dropped,
        "clipped_values": report.clipped_values, "skipped_lines": report.skipped_lines,
        "tool_lines": report.tool_lines,
        "problems": problems, "problems_truncated": report.problems_truncated,
        "run_set": None if res is None else res.run_set_id,
        "formats": {display.get(f, Path(f).name): fmt for f, fmt in report.formats.items()},
        "labels": None if report.labels is None else
        dict(report.labels, file=display.get(report.labels["file"], Path(report.labels["file"]).name)),
    }


def handle_upload(files: list, labels_file, *, name: str, fields: dict) -> dict:
    """Write the uploaded files to a private temp folder, read them (any format), store the valid part as
    one run set; returns a summary kept in session state (the page shows it)."""
    with scratch_dir() as tmp:  # removed on every path; left-overs of a killed server go at the next start
        paths, lab, display = _write(tmp, files, labels_file)
        bar = st.progress(0.0, text="Reading the upload")
        total_mb = sum(p.stat().st_size for p in paths) / 1e6

        def progress(frac: float, msg: str) -> None:
            bar.progress(frac, text=f"Upload ({total_mb:.1f} MB): {msg}")

        s = settings()
        target = store()   # read here: the worker thread has no session (it would find another session's folder)
        # about how long: the seconds per MB of the last upload here, else 12 MB/s after 2 s of start (measured)
        expected = timing.estimate(data_dir(), "upload", total_mb) or 2.0 + total_mb / 12.0
        t0 = time.perf_counter()
        try:
            res, report = _with_ticker(lambda: ingest(target, paths, name=name, labels=lab, fields=fields,
                                                      profile=s["profile"], top_k=s["top_k"], progress=None),
                                       progress, expected=expected)
        finally:
            bar.empty()  # never a frozen progress bar, whatever happened
        timing.record(data_dir(), "upload", total_mb, time.perf_counter() - t0)
    return _summary(name, res, report, display)


def _with_ticker(fn: Callable[[], Any], progress: Callable[[float, str], None], *, expected: float) -> Any:
    """Run ``fn`` in a worker thread while the script thread moves the progress bar (elapsed / expected)."""
    box: dict = {}

    def work():
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised here
            box["error"] = e

    t0 = time.perf_counter()
    th = threading.Thread(target=work, name="htc-upload", daemon=True)
    th.start()
    while th.is_alive():
        th.join(0.25)
        el = time.perf_counter() - t0
        took = f"{el:.0f} s of {timing.about(expected)}" if el <= expected else \
            f"{el:.0f} s, longer than the {timing.about(expected)} expected"
        progress(min(0.95, el / max(expected, 0.5)), f"reading, checking and storing ({took})")
    if "error" in box:
        raise box["error"]
    progress(1.0, "done")
    return box["value"]
