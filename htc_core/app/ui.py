"""Streamlit glue shared by ``app.py`` and the pages: the one facade they import (``from htc_core.app import ui``).

The parts live by job:

- ``session``: configuration (data and sample directories), session-state keys, the page files, the
  cached store and workspaces, the settings and the sidebar's selection, :func:`cache_key`
- ``layout``:  what every page shares on screen: :func:`require_app` / :func:`follow_deep_link`,
  :func:`guard`, :func:`page_errors`, :func:`sidebar`, :func:`open_in_inspector`, :func:`md`
- ``compute``: long computations run once per input with a progress bar and kept for all sessions:
  the evaluation (in parts), fits, projections, per-dataset weights
- ``upload``:  :func:`handle_upload`

Pages call these and the rest of ``htc_core``; the numbers they show come from
``htc_core.app.views``, ``htc_core.explain`` and ``htc_core.calibration``.
"""

from __future__ import annotations

from ..bidi import isolate
from ..kernels import start_background as start_kernel_warmup
from .compute import (EVAL_PARTS, PART_NAMES, Evaluated, cached_evaluation, cached_result, compute_evaluation_parts,
                      computed, evaluation, evaluation_pending, labeled_positions, merge_evaluations, parts_missing,
                      start_evaluation, timed_spinner)
from .fits import dataset_weights, early_warning, fitted_gam, fitted_model
from .layout import (RUNS_ALIAS, RUNS_HOME, apply_ab_url, count_column, follow_deep_link, guard, md, open_in_inspector,
                     page_errors, require_app, restore_from_url, run_set_ids, runs_alias, set_url_id, sidebar,
                     valid_choice, wrapping_row, write_ab_url, write_url)
from .projection_job import LABELS as PROJECTION_LABELS
from .projection_job import projection_or_preview
from .projection_job import status as projection_status
from .session import (DATA_DIR, DATASETS, DEEP_LINK, INSPECT, LAST_UPLOAD, MODELS, PAGES, PROFILE, RUNSETS,
                      SAMPLE_DIR, SAMPLE_DIR_NAME, SEEDS, TOP_K, bootstrap, cache_key, configure, data_dir,
                      full_workspace, get_store, parse_cli, run_set_names, selection, settings, store, workspace,
                      workspace_for_profile)
from .upload import handle_upload

__all__ = [
    # session
    "DATA_DIR", "DATASETS", "DEEP_LINK", "INSPECT", "LAST_UPLOAD", "MODELS", "PAGES", "PROFILE", "RUNSETS", "SAMPLE_DIR",
    "SAMPLE_DIR_NAME", "SEEDS", "TOP_K", "bootstrap", "cache_key", "configure", "data_dir",
    "full_workspace", "get_store", "parse_cli", "run_set_names", "selection", "settings", "store", "workspace",
    "workspace_for_profile",
    # layout
    "RUNS_ALIAS", "RUNS_HOME", "runs_alias", "follow_deep_link", "guard", "isolate", "md", "open_in_inspector", "page_errors", "require_app", "sidebar",
    "restore_from_url", "write_url", "set_url_id", "run_set_ids", "apply_ab_url", "valid_choice", "write_ab_url",
    "wrapping_row", "count_column",
    # compute
    "EVAL_PARTS", "PART_NAMES", "Evaluated", "cached_evaluation", "cached_result", "compute_evaluation_parts",
    "computed", "dataset_weights", "early_warning", "evaluation", "evaluation_pending", "fitted_gam",
    "fitted_model",
    "labeled_positions",
    "merge_evaluations", "parts_missing", "start_evaluation", "timed_spinner",
    # projection_job
    "PROJECTION_LABELS", "projection_or_preview", "projection_status",
    # upload
    "handle_upload",
    # kernels
    "start_kernel_warmup",
]
