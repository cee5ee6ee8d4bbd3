"""Side by side: two runs in two inspector columns (a flipped pair from Compare run sets, or any two runs): the
question, answer vs gold, flags, the confidence shown for each with its reasons, and the step curve."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Side by side")   # the title before this page's imports (or, on a new server's first request, a notice)

from htc_core import explain
from htc_core.app import trajectory_panel, trajectory_view, ui, url_state, views
from htc_core.viz import prefix_plots
from htc_core.app import shown as shown_conf
from htc_core.calibration.evaluation import label_problem

ui.require_app("side_by_side")
st.caption("Two runs next to each other, each with the confidence every page shows for it and that number's "
           "reasons. Compare run sets opens a flipped pair here; pick any two runs below.")

with ui.page_errors("side_by_side"):
    ws = ui.guard()
    frame = ws.frame()
    link = url_state.side_by_side_params()
    url_state.restore("side_by_side", link)       # a pasted link's two runs (?ra=&rb=) and calibrator (?by=)
    pair = views.linked_pair(ws, [st.session_state.pop(p.key, None) for p in link[:2]],
                             st.session_state.get(shown_conf.PAIR) or (None, None))
    for wanted in pair.missing:     # say so, never show another run under the link's id
        st.warning(ui.md(views.missing_trajectory_note(wanted)))
    pair = pair.keys
    if pair != st.session_state.get("sbs_shown"):   # asked from outside (a link, a flipped pair): new pickers;
        st.session_state["sbs_asked"] = st.session_state.get("sbs_asked", 0) + 1   # a pick here keeps its own
    variant = "reduced"
    if label_problem(ws.labels, for_evaluation=False) is None:
        variant = st.radio("Explained by", ["reduced", "full"], horizontal=True, key="sbs_variant",
                           format_func=shown_conf.METHOD_OF.get)
    s = ui.settings()
    chosen = []
    for side, col, key in zip("AB", st.columns(2), pair):
        with col:
            cand, default = views.trajectory_choices(frame, "", ws.position_of(key))
            i = st.selectbox(f"Run {side}", cand, index=default, key=f"sbs_pick_{side}_{st.session_state['sbs_asked']}",
                             format_func=lambda p: views.trajectory_label(frame, p))
            chosen.append(str(frame["key"].iat[i]))
            row = frame.iloc[i]
            st.caption(f"{ui.md(row['id'])} · {ui.md(row['dataset'])} · {ui.md(row['model'])} · {row['steps']} steps "
                       f"· {views.outcome_word(row['success'])}")
            raised = ws.flags.of(i)
            if raised:
                st.warning("**Structural flags:** " + "; ".join(raised) + ".")
            one, j = ws.trajectory(i)
            trajectory_panel.render_answer(trajectory_view.trajectory_view(one, j, profile=s["profile"],
                                                                           top_k=s["top_k"]),
                                           widths=(225, 225), key=f"sbs_answer_{side}")   # half a page
            with st.spinner("Explaining this run's confidence"):
                evaluated = shown_conf.evaluation_for(ws, i, variant)
                shown = shown_conf.shown_confidence(ws, i, variant, evaluated)
                expl = shown.explain(ws, i)
            st.metric(shown.label, explain.format_confidence(expl.confidence),     # short: half a 900 px page cut
                      help=f"{shown.method} confidence ({shown.source}): " + ui.md(shown.what))   # the long one
            if shown.differs:
                st.caption(f"In-sample fit: {explain.format_confidence(shown.in_sample)} (more than 0.2 away).")
            for r in expl.reasons or ["No feature moves this run far from the model's intercept."]:
                st.markdown("- " + ui.md(r))
            after = explain.confidence_after_steps(shown.model, one, j)
            st.plotly_chart(prefix_plots.step_confidence_figure(after), key=f"sbs_steps_{side}")
            if st.button(f"Open run {side} in the inspector", key=f"sbs_open_{side}"):
                ui.open_in_inspector(chosen[-1])
    st.session_state[shown_conf.PAIR] = st.session_state["sbs_shown"] = tuple(chosen)
    url_state.write(link, {"ra": ws.url_id(ws.position_of(chosen[0])), "rb": ws.url_id(ws.position_of(chosen[1]))})
