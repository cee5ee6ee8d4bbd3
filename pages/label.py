"""Label: the queue proposes the run whose label helps calibration most; label it, the GAC adapts in the background."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Label")   # the title before this page's imports (or, on a new server's first request, a notice)

from htc_core.app import label_glue, label_panels, ui, views

ui.require_app("label")
st.caption("Label the proposed runs: the queue spreads them over the whole confidence range, so the calibration "
           "is learned everywhere; after each label the GAC is adapted to your labels in the background "
           "(as `htc fit --prior gac`). Keys: **s** success, **f** failure, **x** skip.")

with ui.page_errors("label"):
    ws = ui.guard()
    st.session_state[label_glue.NO_BG_EVAL] = True
    from_files = label_glue.labeled_from_files(ws)
    if from_files:          # nothing to queue: no refit over labels the evaluation already covers, no estimate
        st.info(from_files)
        st.page_link("pages/calibration.py", label="Open the Calibration page", icon=":material/insights:")
        label_panels.conflicts_panel(ws)
        label_panels.download_panel(ws)
        st.stop()
    view, job = label_glue.queue(ws)
    if label_glue.conflict_prompt("queue"):
        st.rerun()
    left, right = st.columns([3, 2], gap="large")
    with left:
        i = label_glue.shown_position(ws, view)
        if i is None:
            st.success("Every run of the selection is labeled (or skipped in this session).")
        else:
            row = ws.frame().iloc[i]
            conf = label_glue.current_confidence(ws, view, i)

            def heading() -> None:      # drawn by the label bar once the run's keys are live in the browser
                st.caption(f"dataset {ui.md(views.shown_text(row['dataset']))} · "
                           f"model {ui.md(views.shown_text(row['model']))} · {row['steps']} steps · "
                           f"current confidence {conf:.2f}")

            label_glue.label_bar(ws, i, key="queue", heading=heading,   # a label is stored by the button's callback
                                 title=f"Run {row['id']}")
    with right:
        label_panels.estimate_panel(ws, view, job)
        label_panels.scorer_card(ws, key="label_card", actions=True)
    label_panels.conflicts_panel(ws)
    label_panels.rules_panel(ws)
    label_panels.download_panel(ws)
