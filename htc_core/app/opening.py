"""The first thing a new tab shows: "Opening the dashboard…" before the first start's imports (numpy, pandas,
DuckDB, Plotly: seconds on a loaded machine), so the main area is never blank while they load.

Imports nothing but Streamlit, so it costs nothing. ``app.py`` calls :func:`say` first; so does every page file,
with its title, before its own imports: a deep link such as ``/calibration?binning=quantile`` that is a new
server's very first request runs the page file on its own, before ``app.py`` (``layout.require_app`` then hands
over to it), and a page's first visit in a process imports its modules (seconds under load) before it could
draw anything else."""

from __future__ import annotations

import streamlit as st

__all__ = ["OPENED", "NOTICE", "say", "opened"]

#: session key: this tab has run ``app.py`` once (its first start is over)
OPENED = "htc_opened"
NOTICE = "Opening the dashboard: reading the stored runs…"


def say(title: str | None = None):
    """In a tab that has not opened the dashboard yet: the notice, in a slot the caller empties once the page can
    draw (returned). In an opened tab: the page's ``title`` (a page file calls this before its own imports, which
    take seconds the first time a process draws that page; nothing else would show meanwhile); returns None."""
    if OPENED in st.session_state:
        if title:
            st.title(title)
        return None
    slot = st.empty()
    slot.info(NOTICE)
    return slot


def opened() -> None:
    """``app.py``, once its first imports are done: later runs of this tab draw no notice."""
    st.session_state[OPENED] = True
