"""Configuration and data access of the dashboard: where the data lives, the session's settings and
selection, and the cached store and workspaces.

Caching rule: ``st.cache_resource`` functions depend only on their arguments
(the data directory, the store revision and the settings), never on session
state; the functions without a leading underscore read session state and pass
it on as arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import streamlit as st

from .ingest import ensure_samples
from .store import Store, default_data_dir
from .workspace import Workspace, build_workspace

# The shipped sample runs sit next to app.py (which passes its own folder to :func:`configure`); the package
# itself may be installed anywhere, so this is never derived from this file's location.
SAMPLE_DIR_NAME = "sample_runs"

# session-state keys
DATA_DIR = "htc_data_dir"
SAMPLE_DIR = "htc_sample_dir"
DATASETS = "htc_datasets"
MODELS = "htc_models"
RUNSETS = "htc_runsets"
PROFILE = "htc_profile"
TOP_K = "htc_top_k"
SEEDS = "htc_seeds"
INSPECT = "htc_inspect_key"
LAST_UPLOAD = "htc_last_upload"
DEEP_LINK = "htc_deep_link"

PAGES = {
    "runs": "pages/runs.py",
    "calibration": "pages/calibration.py",
    "weights": "pages/weights.py",
    "feature_space": "pages/feature_space.py",
    "examples": "pages/examples.py",
    "compare": "pages/compare.py",
    "compare_runsets": "pages/compare_runsets.py",
    "inspector": "pages/inspector.py",
    "label": "pages/label.py",
    "side_by_side": "pages/side_by_side.py",
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
    from ..scratch import clean_stale

    clean_stale()  # upload copies left by a killed server: private traces and disk space
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
def _selected(data_dir: str, revision: str, profile: str, top_k: int, datasets: tuple, models: tuple,
              run_sets: tuple = ()) -> Workspace:
    return _workspace(data_dir, revision, profile, top_k).select(datasets=list(datasets), models=list(models),
                                                                 run_sets=list(run_sets))


@st.cache_resource(show_spinner=False, max_entries=4)
def _run_set_names(data_dir: str, revision: str) -> dict:
    listing = get_store(data_dir).list_run_sets()
    return dict(zip(listing["id"].astype(str), listing["name"].astype(str)))


def run_set_names() -> dict:
    """Run set id -> name, in storage order. A run set is what one upload (or one import) stored together;
    the shipped sample runs are one run set per file (``sample: facts_SmolLM2-135M-greedy.jsonl``)."""
    return _run_set_names(data_dir(), store().revision())


def settings() -> dict:
    return {"profile": st.session_state.get(PROFILE, "paper"), "top_k": int(st.session_state.get(TOP_K, 5)),
            "seeds": int(st.session_state.get(SEEDS, 3))}


def selection() -> tuple[tuple, tuple, tuple]:
    """The sidebar's choice: (datasets, models, run sets); empty means all."""
    return (tuple(st.session_state.get(DATASETS) or ()), tuple(st.session_state.get(MODELS) or ()),
            tuple(st.session_state.get(RUNSETS) or ()))


def full_workspace() -> Workspace:
    s = settings()
    return _workspace(data_dir(), store().revision(), s["profile"], s["top_k"])


def workspace() -> Workspace:
    """The stored runs restricted to the sidebar's run set/dataset/model choice."""
    s = settings()
    ds, ms, rs = selection()
    return _selected(data_dir(), store().revision(), s["profile"], s["top_k"], ds, ms, rs)


def workspace_for_profile(profile: str, top_k: int) -> Workspace:
    """The selection's workspace under another confidence profile (an uploaded model's)."""
    ds, ms, rs = selection()
    return _selected(data_dir(), store().revision(), profile, int(top_k), ds, ms, rs)


def cache_key(*extra) -> tuple:
    """The key of a long computation on the selection: the selection's content (run keys, labels, tokens,
    features: :meth:`Workspace.content_digest`), the settings and ``extra``. Not the store's revision: saving
    a model or uploading runs outside the selection leaves the key, and every result under it, unchanged."""
    s = settings()
    return ("content", workspace().content_digest(), s["profile"], s["top_k"], *extra)
