"""The first thing a new tab shows: "Opening the dashboard…" before the first start's imports (numpy, pandas,
DuckDB, Plotly: seconds on a loaded machine), so the main area is never blank while they load.

Imports nothing but Streamlit, so it costs nothing. ``app.py`` calls :func:`say` first; so does every page file,
because a deep link such as ``/calibration?binning=quantile`` that is a new server's very first request runs the
page file on its own, before ``app.py`` (``layout.require_app`` then hands over to it)."""

from __future__ import annotations

import streamlit as st

__all__ = ["OPENED", "NOTICE", "say", "opened"]

#: session key: this tab has run ``app.py`` once (its first start is over)
OPENED = "htc_opened"
NOTICE = "Opening the dashboard: reading the stored runs…"


def say():
    """In a tab that has not opened the dashboard yet: the notice, in a slot the caller empties once the page can
    draw (returned; None in an opened tab, where nothing is drawn)."""
    if OPENED in st.session_state:
        return None
    slot = st.empty()
    slot.info(NOTICE)
    return slot


def opened() -> None:
    """``app.py``, once its first imports are done: later runs of this tab draw no notice."""
    st.session_state[OPENED] = True
