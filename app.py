"""HTC dashboard: upload, browse, calibrate and diagnose LLM agent runs.

    streamlit run app.py                      # data in ~/.htc (or $HTC_DATA_DIR)
    streamlit run app.py -- --data-dir DIR    # another data directory

Opens on the shipped sample_runs/ the first time the store is empty.
"""

import os

# BLAS on one thread per call, set before numpy loads (Streamlit's server has not loaded it when this runs):
# the dashboard parallelizes its own work (the evaluation fits outer folds in threads), and OpenBLAS's own
# thread pool, started with more threads, made those fold threads slower than one thread in the background
# job (measured: 2 fold threads 2.3 s vs 1.2 s for the same HTC-Reduced evaluation). A user's setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import logging  # noqa: E402
from pathlib import Path  # noqa: E402

import streamlit as st  # noqa: E402

st.set_page_config(page_title="HTC · agent run calibration", page_icon="🎯", layout="wide")
from htc_core.app import opening as first_notice  # noqa: E402  (nothing but Streamlit: costs nothing)

# a new tab: say so at once, before the first start's imports (seconds); the spinner below shows after 0.5 s only
notice = first_notice.say()
opening = notice or st.empty()
first_notice.opened()

from htc_core.app import label_glue, ui  # noqa: E402

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

ui.configure(app_dir=Path(__file__).resolve().parent)

pages = [
    st.Page(ui.PAGES["runs"], title="Runs", icon=":material/folder_open:", default=True, url_path=ui.RUNS_HOME),
    st.Page(ui.PAGES["calibration"], title="Calibration", icon=":material/straighten:"),
    st.Page(ui.PAGES["weights"], title="Feature weights", icon=":material/balance:"),
    st.Page(ui.PAGES["feature_space"], title="Feature space", icon=":material/scatter_plot:"),
    st.Page(ui.PAGES["examples"], title="Examples", icon=":material/compare_arrows:"),
    st.Page(ui.PAGES["compare"], title="Compare LLMs", icon=":material/leaderboard:"),
    st.Page(ui.PAGES["compare_runsets"], title="Compare run sets", icon=":material/difference:"),
    st.Page(ui.PAGES["inspector"], title="Trajectory inspector", icon=":material/troubleshoot:"),
    st.Page(ui.PAGES["label"], title="Label", icon=":material/label:"),
    st.Page(ui.PAGES["side_by_side"], title="Side by side", icon=":material/view_column_2:"),
]
pages.append(ui.runs_alias(pages[0]))      # /runs: forwards to Runs at "/" (no "Page not found" dialog)
nav = st.navigation(pages)
if nav.url_path == ui.RUNS_ALIAS:
    nav.run()                                # forwards (st.switch_page), before anything is read
ui.follow_deep_link()
if notice is None:      # the page's title at once, while the sidebar is read (the page draws its own after it)
    opening.title(nav.title)

# what every page waits for first (the store, its features, the selection): said in the main area, so it is never
# blank (a spinner shows after half a second only, so a quick run draws nothing extra)
with ui.page_errors("sidebar"), st.spinner("Reading the stored runs and the sidebar's selection (a first start "
                                           "computes every run's features: up to a minute)…"):
    ui.bootstrap()
    ui.restore_from_url()      # a reload or a shared link: filters and trajectory from the query parameters
    ui.sidebar()
    ui.write_url()
opening.empty()

nav.run()

# once the page is drawn (started before, it slowed the Runs page's first table by about a second on 2 cores):
# the selection's evaluation in the background, so Calibration joins it (small selections, idle store only)
with ui.page_errors("sidebar"):
    # the numba kernels the fits need, compiled (first start on a machine: seconds) or loaded, in a background
    # thread once per server, the sidebar saying so while it runs (htc_core.kernels)
    ui.start_kernel_warmup()
    ws = ui.workspace()
    if len(ws) and not st.session_state.pop(label_glue.NO_BG_EVAL, False):   # the Label page asks not to
        ui.start_evaluation(ws)
