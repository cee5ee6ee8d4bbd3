"""Streamlit glue shared by ``app.py`` and the pages.

Configuration (data directory, sample runs), the cached loaders, the guard
every page starts with, the error boundary around page bodies, and the
long computations (evaluation, fits, projections, uploads) run once per input
with a visible progress bar and kept for all sessions. Pages call these and
the rest of ``htc_core``; nothing here computes a metric itself.

Caching rules: ``st.cache_resource`` functions depend only on their
arguments (the data directory, the store revision and the settings), never
on session state; long computations go through :func:`computed`, whose key
holds the same inputs.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import streamlit as st

from .ingest import ensure_samples, ingest
from .store import Store, default_data_dir
from .workspace import Workspace, build_workspace

log = logging.getLogger("htc.dashboard")

# The shipped sample runs sit next to app.py (which passes its own folder to :func:`configure`); the package
# itself may be installed anywhere, so this is never derived from this file's location.
SAMPLE_DIR_NAME = "sample_runs"

# session-state keys
DATA_DIR = "htc_data_dir"
SAMPLE_DIR = "htc_sample_dir"
DATASETS = "htc_datasets"
MODELS = "htc_models"
PROFILE = "htc_profile"
TOP_K = "htc_top_k"
SEEDS = "htc_seeds"
INSPECT = "htc_inspect_key"
LAST_UPLOAD = "htc_last_upload"
SCORED = "htc_scored_model"

def _alphas_from_env() -> tuple | None:
    raw = os.environ.get("HTC_DASHBOARD_ALPHAS", "").strip()
    if not raw:
        return None
    try:
        vals = tuple(float(v) for v in raw.split(","))
    except ValueError:
        log.warning("HTC_DASHBOARD_ALPHAS=%r is not a comma-separated list of numbers; using the paper's grid", raw)
        return None
    return vals if vals and all(v > 0 for v in vals) else None


#: alpha grid of the dashboard's fits and evaluations (None: the paper's 15 values). A shorter grid
#: (``HTC_DASHBOARD_ALPHAS=0.1,1,10``) gives quick looks at large uploads; the tests use one too.
ALPHAS: tuple | None = _alphas_from_env()

PAGES = {
    "runs": "pages/runs.py",
    "calibration": "pages/calibration.py",
    "weights": "pages/weights.py",
    "feature_space": "pages/feature_space.py",
    "examples": "pages/examples.py",
    "compare": "pages/compare.py",
    "inspector": "pages/inspector.py",
}


# ------------------------------------------------------------ configuration
def parse_cli(argv: list[str] | None = None, *, app_dir: str | os.PathLike | None = None) -> tuple[str, str]:
    """(data dir, sample dir) from ``streamlit run app.py -- --data-dir DIR [--sample-dir DIR]``,
    then ``$HTC_DATA_DIR`` / ``$HTC_SAMPLE_DIR``, then the defaults (``~/.htc``, ``sample_runs/`` next to
    app.py, or in the working directory when app.py's folder is not known)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--sample-dir", default=None)
    args, _ = p.parse_known_args(sys.argv[1:] if argv is None else argv)
    data = args.data_dir or os.environ.get("HTC_DATA_DIR") or str(default_data_dir())
    default_sample = Path(app_dir if app_dir is not None else Path.cwd()) / SAMPLE_DIR_NAME
    sample = args.sample_dir or os.environ.get("HTC_SAMPLE_DIR") or str(default_sample)
    return str(Path(data).expanduser()), str(Path(sample).expanduser())


def configure(app_dir: str | os.PathLike | None = None) -> None:
    """Called by app.py on every run (with its own folder): the data and sample directories, and default
    settings."""
    data, sample = parse_cli(app_dir=app_dir)
    st.session_state[DATA_DIR] = data
    st.session_state[SAMPLE_DIR] = sample
    st.session_state.setdefault(PROFILE, "paper")
    st.session_state.setdefault(TOP_K, 5)
    st.session_state.setdefault(SEEDS, 3)


DEEP_LINK = "htc_deep_link"


def require_app(page: str) -> None:
    """First line of every page. Streamlit runs a page file on its own (its legacy ``pages/`` mode) when
    a deep link such as /calibration is the very first request a new server process gets, before
    app.py ever ran; hand over to app.py (its st.navigation then rules for good) and come back."""
    if DATA_DIR not in st.session_state:
        st.session_state[DEEP_LINK] = PAGES[page]
        st.switch_page("app.py")


def follow_deep_link() -> None:
    """Called by app.py after st.navigation: finish a hand-over started by :func:`require_app`."""
    target = st.session_state.pop(DEEP_LINK, None)
    if target:
        st.switch_page(target)


def data_dir() -> str:
    if DATA_DIR not in st.session_state:
        configure()
    return st.session_state[DATA_DIR]


@st.cache_resource(show_spinner=False)
def get_store(data_dir: str) -> Store:
    return Store(data_dir)


def store() -> Store:
    return get_store(data_dir())


@st.cache_resource(show_spinner=False)
def _bootstrap(data_dir: str, sample_dir: str) -> str:
    status, _ = ensure_samples(get_store(data_dir), sample_dir)
    return status


def bootstrap() -> str:
    """On the first start with an empty store, load the shipped sample runs (once per process)."""
    with st.spinner("Loading the shipped sample runs (first start)…"):
        return _bootstrap(data_dir(), st.session_state.get(SAMPLE_DIR, str(Path.cwd() / SAMPLE_DIR_NAME)))


# ----------------------------------------------------------------- loaders
@st.cache_resource(show_spinner=False, max_entries=4)
def _workspace(data_dir: str, revision: str, profile: str, top_k: int) -> Workspace:
    return build_workspace(get_store(data_dir), profile=profile, top_k=top_k)


@st.cache_resource(show_spinner=False, max_entries=16)
def _selected(data_dir: str, revision: str, profile: str, top_k: int, datasets: tuple, models: tuple) -> Workspace:
    return _workspace(data_dir, revision, profile, top_k).select(datasets=list(datasets), models=list(models))


def settings() -> dict:
    return {"profile": st.session_state.get(PROFILE, "paper"), "top_k": int(st.session_state.get(TOP_K, 5)),
            "seeds": int(st.session_state.get(SEEDS, 3))}


def selection() -> tuple[tuple, tuple]:
    return tuple(st.session_state.get(DATASETS) or ()), tuple(st.session_state.get(MODELS) or ())


def full_workspace() -> Workspace:
    s = settings()
    return _workspace(data_dir(), store().revision(), s["profile"], s["top_k"])


def workspace() -> Workspace:
    """The stored runs restricted to the sidebar's dataset/model choice."""
    s = settings()
    ds, ms = selection()
    return _selected(data_dir(), store().revision(), s["profile"], s["top_k"], ds, ms)


def cache_key(*extra) -> tuple:
    s = settings()
    return (data_dir(), store().revision(), s["profile"], s["top_k"], *selection(), *extra)


def guard() -> Workspace:
    """The guard every page starts with: no data -> a helpful note and stop."""
    ws = workspace()
    if len(ws) == 0:
        if len(full_workspace()) == 0:
            st.info("No runs are stored yet. Open **Runs** and upload agent traces (htc-trace JSONL, OpenAI "
                    "chat/call-log, Responses, completions, smolagents or ATIF), or start the app with the shipped "
                    "`sample_runs/`.")
        else:
            st.info("No trajectory matches the datasets/models chosen in the sidebar.")
        st.stop()
    return ws


@contextlib.contextmanager
def page_errors(page: str):
    """Error boundary of a page body: an unexpected error shows a short message, the traceback goes to
    the server log (never to the browser)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException

    try:
        yield
    except ScriptControlException:
        raise
    except Exception as e:  # noqa: BLE001 - the boundary
        log.exception("page %s failed", page)
        msg = " ".join(str(e).split())
        if len(msg) > 300:
            msg = msg[:297] + "..."
        st.error(f"This page stopped on an unexpected problem ({type(e).__name__}: {msg}). "
                 "The details are in the server log; the other pages still work.")


# -------------------------------------------------------- long computations
@st.cache_resource(show_spinner=False)
def _registry() -> dict:
    return {"lock": threading.Lock(), "items": collections.OrderedDict(), "running": {}}


def cached_result(key: tuple) -> Any | None:
    reg = _registry()
    with reg["lock"]:
        return reg["items"].get(key)


def computed(key: tuple, label: str, fn: Callable[[Callable[[float, str], None]], Any], *,
             max_items: int = 32) -> Any:
    """``fn(progress)`` computed once per ``key`` (shared by all sessions), with a progress bar while it runs."""
    reg = _registry()
    with reg["lock"]:
        if key in reg["items"]:
            reg["items"].move_to_end(key)
            return reg["items"][key]
        ev = reg["running"].get(key)
        owner = ev is None
        if owner:
            ev = reg["running"][key] = threading.Event()
    if not owner:   # another session computes the same thing: wait for it
        with st.spinner(f"{label} (started by another session)…"):
            ev.wait()
        with reg["lock"]:
            if key in reg["items"]:
                return reg["items"][key]
        return computed(key, label, fn, max_items=max_items)
    bar = st.progress(0.0, text=label)
    t0 = time.perf_counter()

    def progress(frac: float, msg: str = "") -> None:
        bar.progress(float(min(1.0, max(0.0, frac))), text=f"{label}: {msg}" if msg else label)

    try:
        value = fn(progress)
    finally:
        with reg["lock"]:
            reg["running"].pop(key, None)
        ev.set()
    bar.empty()
    log.info("%s took %.2f s", label, time.perf_counter() - t0)
    with reg["lock"]:
        reg["items"][key] = value
        while len(reg["items"]) > max_items:
            reg["items"].popitem(last=False)
    return value


@dataclass
class Evaluated:
    """An evaluation of the labeled trajectories of a workspace; ``positions`` maps its rows back.
    ``result`` is None when the part could not run (``error`` says why)."""

    result: Any
    positions: np.ndarray
    error: str | None = None


def labeled_positions(ws: Workspace) -> np.ndarray:
    return np.flatnonzero(np.isfinite(ws.labels))


#: the evaluation runs in parts, cheapest first, so the Calibration page draws early and fills in
EVAL_PARTS = ("baselines", "full", "reduced")
_PART_LABELS = {"baselines": "Cross-validated evaluation of the baselines",
                "full": "Cross-validated evaluation of HTC-Full", "reduced": "Cross-validated evaluation of HTC-Reduced"}


def _part_key(part: str) -> tuple:
    return cache_key("evaluation", part, settings()["seeds"], ALPHAS)


def _evaluation_part(ws: Workspace, part: str) -> Evaluated:
    """One part of the honest evaluation (same seeds, hence the same folds, in every part)."""
    from ..calibration.baselines import RAW_BASELINES
    from ..calibration.evaluation import EvaluationError, evaluate

    s = settings()
    pos = labeled_positions(ws)
    methods = {"baselines": [*[m for b in RAW_BASELINES for m in (b, b + "+Temp")], "Verbalized"],
               "full": ["HTC-Full"], "reduced": ["HTC-Reduced"]}[part]

    def run(progress):
        sub = ws.ts.take(pos)
        extra = {} if ALPHAS is None else {"alphas": ALPHAS}
        try:
            res = evaluate(sub, seeds=s["seeds"], profile=s["profile"], top_k=s["top_k"], methods=methods, **extra,
                           progress=lambda d, t, m: progress(d / max(t, 1), f"{m} ({d}/{t} folds)"))
        except EvaluationError as e:
            return Evaluated(result=None, positions=pos, error=str(e))
        return Evaluated(result=res, positions=pos)

    return computed(_part_key(part), _PART_LABELS[part], run)


def merge_evaluations(parts: list) -> Evaluated:
    """One result holding the methods of every computed part (same folds, same positions)."""
    from ..calibration.evaluation import EvaluationError, merge_results

    done = [p for p in parts if p is not None and p.result is not None]
    if not done:
        errors = [p.error for p in parts if p is not None and p.error]
        raise EvaluationError(errors[0] if errors else "the evaluation has not run yet")
    return Evaluated(result=merge_results([p.result for p in done]), positions=done[0].positions)


def evaluation(ws: Workspace, *, wait: bool = True) -> Evaluated:
    """Honest nested-CV evaluation of the labeled part of the selection (cached, with progress bars).

    With ``wait=False`` only the cheapest missing part is computed and the result holds what is ready
    (the Calibration page draws it, then computes the rest with :func:`evaluation_pending`)."""
    parts = []
    for part in EVAL_PARTS:
        hit = cached_result(_part_key(part))
        if hit is None and (wait or not any(p is not None and p.result is not None for p in parts)):
            hit = _evaluation_part(ws, part)
        parts.append(hit)
    return merge_evaluations(parts)


def evaluation_pending() -> list[str]:
    """The parts of the selection's evaluation not computed yet."""
    return [p for p in EVAL_PARTS if cached_result(_part_key(p)) is None]


def compute_evaluation_part(ws: Workspace, part: str) -> None:
    _evaluation_part(ws, part)


def cached_evaluation() -> Evaluated | None:
    """The selection's evaluation as far as it was already computed (never starts one)."""
    parts = [cached_result(_part_key(p)) for p in EVAL_PARTS]
    if not any(p is not None and p.result is not None for p in parts):
        return None
    return merge_evaluations(parts)


def fitted_model(ws: Workspace, variant: str):
    """HTC-Full or HTC-Reduced fitted on every labeled trajectory of the selection (cached)."""
    from ..calibration.calibrators import HTCCalibrator

    s = settings()
    pos = labeled_positions(ws)

    def run(progress):
        progress(0.1, f"alpha selection over {len(pos):,} labeled trajectories")
        extra = {} if ALPHAS is None else {"alphas": ALPHAS}
        return HTCCalibrator(variant=variant, profile=s["profile"], top_k=s["top_k"], **extra).fit(
            ws.features.take(pos), ws.labels[pos], meta=ws.ts.meta.iloc[pos])

    return computed(cache_key("fit", variant, ALPHAS), f"Fitting HTC-{variant.capitalize()}", run)


def projection(ws: Workspace, method: str):
    from .projection import project

    return computed(cache_key("projection", method), "UMAP" if method == "umap" else "t-SNE",
                    lambda progress: project(ws.features, method=method, progress=progress))


def dataset_weights(ws: Workspace, variant: str):
    from ..explain import dataset_weights as dw

    pos = labeled_positions(ws)

    def run(progress):
        progress(0.1, "one calibrator per dataset")
        return dw(ws.features.values[pos], ws.labels[pos], ws.ts.meta["dataset"].to_numpy(dtype=object)[pos],
                  variant=variant, alphas=ALPHAS)

    return computed(cache_key("dataset_weights", variant, ALPHAS), "Per-dataset weights", run)


def workspace_for_profile(profile: str, top_k: int) -> Workspace:
    """The selection's workspace under another confidence profile (an uploaded model's)."""
    ds, ms = selection()
    return _selected(data_dir(), store().revision(), profile, int(top_k), ds, ms)


# ------------------------------------------------------------------ upload
def handle_upload(files: list, labels_file, *, name: str, fields: dict) -> dict:
    """Write the uploaded files to a private temp folder, read them (any format), store the valid part as
    one run set; returns a summary kept in session state (the page shows it)."""
    tmp = Path(tempfile.mkdtemp(prefix="htc-upload-"))
    display: dict[str, str] = {}
    try:
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
        bar = st.progress(0.0, text="Reading the upload")
        total_mb = sum(p.stat().st_size for p in paths) / 1e6

        def progress(frac: float, msg: str) -> None:
            bar.progress(frac, text=f"Upload ({total_mb:.1f} MB): {msg}")

        s = settings()
        res, report = _with_ticker(lambda: ingest(store(), paths, name=name, labels=lab, fields=fields,
                                                  profile=s["profile"], top_k=s["top_k"], progress=None),
                                   progress, expected=2.0 + total_mb / 12.0)
        bar.empty()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    problems = []
    for p in report.problems:
        problems.append({"severity": p.severity, "file": display.get(p.file, Path(p.file).name),
                         "line": p.line, "trajectory": p.trajectory_id, "field": p.field, "value": p.value,
                         "reason": p.reason})
    summary = {
        "name": name, "files": [display.get(f, Path(f).name) for f in report.files],
        "kept": 0 if res is None else res.kept, "rejected": report.rejected,
        "duplicates": [] if res is None else res.duplicates, "empty_steps_dropped": report.empty_steps_dropped,
        "clipped_values": report.clipped_values, "skipped_lines": report.skipped_lines,
        "problems": problems, "problems_truncated": report.problems_truncated,
        "run_set": None if res is None else res.run_set_id,
    }
    return summary


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
        progress(min(0.95, el / max(expected, 0.5)), f"reading, checking and storing ({el:.0f} s)")
    if "error" in box:
        raise box["error"]
    progress(1.0, "done")
    return box["value"]


def open_in_inspector(key: str) -> None:
    st.session_state[INSPECT] = key
    st.switch_page(PAGES["inspector"])


# ------------------------------------------------------------------ sidebar
def sidebar() -> None:
    """Data selection and settings (drawn by app.py on every run, so they hold across pages)."""
    from ..confidence import PROFILES

    full = full_workspace()
    with st.sidebar:
        st.markdown("**Data**")
        if len(full):
            ds_all, ms_all = full.values("dataset"), full.values("model")
            for key, allowed in ((DATASETS, ds_all), (MODELS, ms_all)):
                if key in st.session_state:
                    st.session_state[key] = [v for v in st.session_state[key] if v in allowed]
            st.multiselect("Datasets", ds_all, key=DATASETS, placeholder="all datasets")
            st.multiselect("Models", ms_all, key=MODELS, placeholder="all models")
            st.caption(f"{len(workspace()):,} of {len(full):,} trajectories selected")
        else:
            st.caption("no runs stored yet")
        with st.expander("Settings"):
            st.selectbox("Confidence profile", list(PROFILES), key=PROFILE,
                         help="How token logprobs become confidences (DESIGN.md section 3); saved in every model.")
            st.number_input("top-k alternatives", min_value=1, max_value=20, step=1, key=TOP_K)
            st.number_input("CV repeats (seeds 42, 43, …)", min_value=1, max_value=5, step=1, key=SEEDS)
        st.caption(f"store: `{data_dir()}`")


def md(text) -> str:
    """Untrusted text made inert for st.markdown: HTML-escaped and markdown punctuation backslash-escaped
    (no links, images or formatting can come from a trace)."""
    import html as _html

    if text is None:
        return ""
    s = _html.escape(str(text), quote=False)
    out = []
    for ch in s:
        if ch in "\\`*_{}[]()#+-.!|<>~$":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)
