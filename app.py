"""HTC dashboard: upload, browse, calibrate and diagnose LLM agent runs.

    streamlit run app.py                      # data in ~/.htc (or $HTC_DATA_DIR)
    streamlit run app.py -- --data-dir DIR    # another data directory

Opens on the shipped sample_runs/ the first time the store is empty.
"""

import logging

import streamlit as st

from htc_core import dashboard as ui

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

st.set_page_config(page_title="HTC · agent run calibration", page_icon="🎯", layout="wide")
ui.configure()

pages = [
    st.Page(ui.PAGES["runs"], title="Runs", icon="📂", default=True),
    st.Page(ui.PAGES["calibration"], title="Calibration", icon="📏"),
    st.Page(ui.PAGES["weights"], title="Feature weights", icon="⚖️"),
    st.Page(ui.PAGES["feature_space"], title="Feature space", icon="🗺️"),
    st.Page(ui.PAGES["examples"], title="Examples", icon="🔎"),
    st.Page(ui.PAGES["compare"], title="Compare LLMs", icon="🆚"),
    st.Page(ui.PAGES["inspector"], title="Trajectory inspector", icon="🧭"),
]
nav = st.navigation(pages)

with ui.page_errors("sidebar"):
    ui.bootstrap()
    ui.sidebar()

nav.run()
