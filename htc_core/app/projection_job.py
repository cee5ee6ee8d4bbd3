"""The Feature space projection without a wait: a PCA of the features at once, UMAP or t-SNE in a background job.

UMAP's first fit in a server process imports umap-learn (pynndescent compiles at import: 14.6 s CPU with an
empty numba cache, 1.8 s later) and compiles its numba functions (not cached on disk: 5.2 s CPU in every new
process, before the fit's own 0.8 s on the 2,096 sample runs); t-SNE takes 9 s CPU. The page waited for either
under a progress bar (62-128 s at load 12-18 on a fresh install). Now the page draws a PCA of the same
standardized features at once (:func:`~htc_core.app.projection.pca`: no iterations, nothing to compile), with a
status line that says the chosen projection is being computed and how long it should take, and swaps it in
when the background job (:mod:`~htc_core.app.jobs`) is done. The job runs beside the evaluation's job, not
after it (as UMAP computed in the page used to: neither waits for the other), and keeps the projection in
memory and in the store under the same key as before, so a later visit, a reload or a new server draws it at
once.

:func:`projection_or_preview` is what the page calls; :func:`status` draws the status line (refreshed every
:data:`REFRESH_S` seconds, and the page drawn again when the job ends).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from . import compute, jobs, timing
from .projection import PROJECTION_FIT_CAP, Projection, expected_seconds, pca, project
from .session import cache_key, data_dir, store
from .workspace import Workspace

__all__ = ["Shown", "projection_or_preview", "status", "LABELS"]

#: seconds between two refreshes of the status line (each a fragment run in the server; measured at load 8-14 on
#: a fresh install, from the click to UMAP drawn: every 1 s, 75.7 s of server CPU and 204 s wall; every 3 s,
#: 28.8 s CPU and 59 s; the job alone, 19.9 s CPU)
REFRESH_S = 3.0
#: how the page names each method
LABELS = {"umap": "UMAP", "tsne": "t-SNE"}


@dataclass
class Shown:
    """The projection to draw: the chosen one when it is ready (``job`` None), else the PCA preview with
    ``job`` computing the chosen one (or failed: ``job.error``)."""

    projection: Projection
    job: "jobs.Job | None" = None

    @property
    def preview(self) -> bool:
        return self.job is not None


def _key(method: str) -> tuple:
    return cache_key("projection", method, PROJECTION_FIT_CAP)


def _persist() -> compute.Persist:
    return compute.Persist(store=store(), kind="projection", dump=Projection.to_bytes, load=Projection.from_bytes)


def _start(ws: Workspace, method: str, persist: compute.Persist) -> "jobs.Job":
    """Start (or join) the job that computes ``method``'s projection of the selection and keeps it (or the job
    that failed, until the page has said so). The features, key, store and folder are read here, in the page
    script (the job never touches session state)."""
    key, features, folder, label = _key(method), ws.features, data_dir(), LABELS[method]
    failed = jobs.running(("projection-job", *key))
    if failed is not None and not failed.is_running and failed.error:
        return failed        # said once by :func:`status`, which forgets it: the next visit starts it again

    def work(job: "jobs.Job") -> None:
        if compute.cached_result_quiet(key) is not None:
            return
        job.progress(0, 100, f"fitting on {len(features):,} runs")
        proj = project(features, method=method, fit_cap=PROJECTION_FIT_CAP,
                       progress=lambda frac, msg: job.progress(round(100 * frac), 100, f"{frac:.0%}"))
        compute.keep_result(key, proj, persist)
        timing.record(folder, label, len(features), proj.seconds)

    return jobs.submit(folder, ("projection-job", *key), label, work, exclusive=False,
                       expected=timing.estimate(folder, label, len(features))
                       or expected_seconds(min(len(features), PROJECTION_FIT_CAP), method))


def projection_or_preview(ws: Workspace, method: str) -> Shown:
    """``method``'s projection of the selection when it is computed (memory or store); else the PCA preview,
    with the background job that computes it started (or joined)."""
    persist = _persist()
    hit = compute.stored_result(_key(method), persist)
    if hit is not None:
        return Shown(hit)
    job = _start(ws, method, persist)
    if not job.is_running and job.error is None:          # it ended between the look-up and the start
        hit = compute.cached_result_quiet(_key(method))
        if hit is not None:
            return Shown(hit)
    preview = compute.computed(cache_key("projection", "pca"), "PCA", lambda progress: pca(ws.features),
                               units=len(ws))
    return Shown(preview, job)


def status_text(job: "jobs.Job", method: str) -> str:
    """The status line of a projection still computing."""
    from .layout import PENDING_ICON

    return (f"{PENDING_ICON} {job.text()}. Shown meanwhile: a PCA of the same standardized features (the first two principal "
            f"components); the chart changes to {LABELS[method]} when it is ready.")


def status(shown: Shown, method: str) -> None:
    """Under the chart of a preview: what is computing, refreshed every :data:`REFRESH_S` seconds; when the job
    ends, the page is drawn again with the projection (or, when it failed, says why and leaves the PCA on
    screen)."""
    from .layout import md

    job = shown.job
    if job is None:
        return
    if not job.is_running:
        if job.error:
            st.warning(f"{LABELS[method]} failed: {md(job.error)}. The chart shows a PCA of the same features; "
                       "visiting the page again tries once more.")
            jobs.forget(job.key)
        return

    @st.fragment(run_every=REFRESH_S)
    def live() -> None:
        if not job.is_running:
            st.rerun()              # the whole page again: the projection is drawn, and this refresh stops
        st.caption(status_text(job, method))

    live()
