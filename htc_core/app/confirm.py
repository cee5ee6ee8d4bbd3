"""Ask before a long evaluation nobody chose: with no run set picked in the sidebar, a page that would
cross-validate more than :data:`CONFIRM_ABOVE` labeled runs says so and waits for a click (issue 27 item 5).
Choosing run sets, or a smaller dataset/model filter, avoids the question."""

from __future__ import annotations

import streamlit as st

from . import timing
from .sampling import EVAL_CAP
from .session import RUNSETS, cache_key, data_dir

__all__ = ["CONFIRM_ABOVE", "SECONDS_PER_RUN", "before_evaluating"]

#: most labeled runs evaluated without asking when no run set is chosen (the background prefetch's cap too)
CONFIRM_ABOVE = 5_000
#: measured on this machine's kind (2 cores): 3,840 sample runs in 61 s; the rate of the last whole evaluation on
#: this machine (``timing``, recorded by ``compute``) replaces it once there is one
SECONDS_PER_RUN = 61 / 3840
#: session key: the selection whose evaluation the user confirmed
CONFIRMED = "htc_eval_confirmed"


def before_evaluating(n_labeled: int) -> None:
    """Return when the evaluation of ``n_labeled`` runs may start; else show the question and stop the page."""
    if n_labeled <= CONFIRM_ABOVE or st.session_state.get(RUNSETS):
        return
    key = cache_key("confirm_evaluation", n_labeled)
    if st.session_state.get(CONFIRMED) == key:
        return
    seconds = timing.estimate(data_dir(), "evaluation", min(n_labeled, EVAL_CAP), fallback_rate=SECONDS_PER_RUN)
    st.warning(f"No run set is chosen in the sidebar, so this page would cross-validate all {n_labeled:,} labeled "
               f"runs{f' (a sample of {EVAL_CAP:,})' if n_labeled > EVAL_CAP else ''}: {timing.about(seconds)} "
               "before it can draw. Choose run sets in the sidebar for a quicker answer, or start it here.")
    if st.button(f"Evaluate all {n_labeled:,} labeled runs", key="htc_confirm_evaluation", type="primary"):
        st.session_state[CONFIRMED] = key
        st.rerun()                  # drawn again without the question
    st.stop()
