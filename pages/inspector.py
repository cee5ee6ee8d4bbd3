"""Trajectory inspector: why this confidence (steps, tokens, contributions, position, reasons)."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Trajectory inspector")   # the title before this page's imports (or, on a new server's first request, a notice)

from htc_core import explain
from htc_core.app import (adapted_scorer, experiments, explain_views, label_glue, label_panels, trajectory_panel,
                          trajectory_view, ui, views)
from htc_core.viz import inspector_plots, plots, prefix_plots
from htc_core.app import shown as shown_conf
from htc_core.calibration.evaluation import label_problem

ui.require_app("inspector")

with ui.page_errors("inspector"):
    ws = ui.guard()
    wanted = st.session_state.get(ui.INSPECT)
    c1, c2 = st.columns([2, 1])
    needle = c1.text_input("Find a trajectory (id or words of the question)", key="insp_search")
    frame = ws.frame()
    position = ws.position_of(wanted)
    lost = wanted is not None and position is None and not needle   # a link to a run that is not here
    cand, default = views.trajectory_choices(frame, needle, position)
    if not cand:
        st.info("No trajectory matches the search.")
        st.stop()
    if lost:    # say so and keep the URL: never show another run under the link's id
        st.warning(ui.md(views.missing_trajectory_note(wanted)))
    i = c1.selectbox("Trajectory", cand, index=None if lost else default, placeholder="Pick a trajectory",
                     format_func=lambda p: views.trajectory_label(frame, p),
                     key=f"insp_pick_{views.short_key(wanted)}_{needle}")
    if i is None:
        st.stop()
    st.session_state[ui.INSPECT] = str(frame["key"].iat[i])
    ui.set_url_id(ws.url_id(i))       # /inspector?id=<trajectory id>: a reload or a shared link opens it
    cannot_fit = label_problem(ws.labels, for_evaluation=False)
    if cannot_fit is None:
        variant = c2.radio("Explained by", ["reduced", "full", "gam"], horizontal=True, key="insp_variant",
                           format_func=lambda v: shown_conf.METHOD_OF[v])
    else:
        variant = "reduced"
        c2.caption("Explained by the selection's adapted GAC (card below)" if adapted_scorer.adapted_scorer(ws) else
                   "Explained by the shipped GAC: no calibrator can be fitted on this selection.")

    row = frame.iloc[i]
    raised = ws.flags.of(i)
    s = ui.settings()
    one, j = ws.trajectory(i)     # this run's tokens only (the workspace keeps them in the store)
    answer = trajectory_view.trajectory_view(one, j, profile=s["profile"], top_k=s["top_k"])

    def heading() -> None:    # the run above its label bar, sent after the bar's buttons (keys live once it shows)
        st.caption(f"{ui.md(views.clipped(row['id']))} · dataset {ui.md(views.clipped(views.shown_text(row['dataset'])))} · "
                   f"model {ui.md(views.clipped(views.shown_text(row['model'])))} · framework "
                   f"{ui.md(views.clipped(views.shown_text(row['framework'])))} · {row['steps']} steps · {row['tokens']} tokens · "
                   f"{views.outcome_word(row['success'])}")
        if raised:
            st.warning("**Structural flags:** " + "; ".join(raised) + ".")
        else:
            checked = ", ".join(explain.FLAGS[f] for f in ws.flags.available) or "nothing the data can decide"
            st.caption(f"No structural flag raised (checked: {checked}).")
        trajectory_panel.render_answer(answer)

    label_glue.inspector_label_bar(ws, i, ui.INSPECT, heading=heading)   # Success / Failure / Skip, previous / next

    evaluated = shown_conf.evaluation_for(ws, i, variant)
    shown = shown_conf.shown_confidence(ws, i, variant, evaluated)
    model, method = shown.model, shown.method
    expl = shown.explain(ws, i)
    m = st.container(horizontal=True, gap="medium", key="insp_metrics")   # each as wide as its label; they wrap
    m.metric(shown.headline, explain.format_confidence(shown.confidence), width="content")   # never cut
    if shown.in_sample is not None:
        m.metric(f"{method} (in-sample)", explain.format_confidence(shown.in_sample), width="content",
                 help=f"{method} fitted on every labeled run of the selection, this run included")
    m.metric("GlobalTrace-TP", f"{row['GlobalTrace-TP']:.2f}", width="content")
    m.metric("LastStep-TP", f"{row['LastStep-TP']:.2f}", width="content")
    st.caption("Explained by " + ui.md(shown.what) + ".")
    if shown.source == "adapted":
        label_panels.scorer_card(ws, key="insp_card")
    if abs(expl.confidence - shown.confidence) > 1e-9:   # the GAC combines its model with a training-free signal
        st.caption(f"The GAC's confidence combines its model ({explain.format_confidence(expl.confidence)} alone) "
                   "with a training-free signal; the reasons below explain its model's part.")
    if shown.differs:
        st.warning(f"The fit on the whole selection gives this run {explain.format_confidence(shown.in_sample)}, "
                   f"{abs(shown.in_sample - shown.confidence):.2f} away from its out-of-fold "
                   f"{explain.format_confidence(shown.confidence)}: that fit has seen this run and its outcome, so "
                   "it flatters itself here. The headline and the reasons below are the out-of-fold model's.")

    st.subheader("Why this confidence")
    with st.container(border=True):
        st.markdown(f"**{ui.md(method)} confidence {explain.format_confidence(expl.confidence)}** (logit "
                    f"{expl.logit:+.2f}). Strongest reasons, each placing its signal's lead feature among the "
                    f"{expl.n_reference} " + ui.md(expl.reference) + " (\"close to the typical run\": between their "
                    "25th and 75th percentiles):")
        for r in expl.reasons or ["No feature moves this trajectory far from the model's intercept."]:
            st.markdown("- " + ui.md(r))
        if expl.bounded:
            st.caption(f"The model's linear score {expl.linear_score:+.1f} is softly bounded to ±10 (logit = "
                       f"10·tanh(score / 10)), so the intercept and every contribution are shown times "
                       f"{expl.cap_factor:.2f}: they add up to the logit {expl.logit:+.2f}.")
        st.caption("Correlated features (average |r| above 0.7 on these runs) are one signal here, named by its lead "
                   "feature as every page names it, with its contributions summed; the raw table below says what "
                   "each lead measures.")
        with st.expander("Raw contributions: every signal and every feature"):
            st.dataframe(views.signal_frame(expl), hide_index=True, width="stretch")
            st.dataframe(expl.table, hide_index=True, width="stretch")
        if variant == "gam" and cannot_fit is None:   # HTC-GAM: contributions are shape-function values
            st.caption(f"HTC-GAM: each contribution is the feature's shape function at this run's value "
                       f"(Feature weights shows the curves); {ui.md(explain_views.gam_choice(model))}.")
    if cannot_fit is not None and shown.source != "adapted":
        st.info(f"No calibrator can be fitted on this selection ({ui.md(cannot_fit)}), so this confidence is from "
                f"{experiments.GAC_NOTE}. For a calibrator fitted on your runs, {experiments.LABELS_HOWTO}.")

    st.subheader("Confidence after each step")
    with ui.timed_spinner("Replaying the run step by step through a live Monitor", int(row["steps"]) or 1,
                          kind="step replay"):
        after = explain.confidence_after_steps(shown.curve_model or model, one, j)
    st.plotly_chart(prefix_plots.step_confidence_figure(after), key="insp_step_confidence")
    st.caption(f"What a live `htc_core.Monitor` with this {ui.md(method)} model showed as the run went on (the last "
               "point is the confidence above). The model is fitted on whole runs; `htc early-warning` and the "
               "Calibration page show how far earlier prefixes can be trusted.")

    st.subheader("The whole trajectory, step by step")
    trajectory_panel.render_steps(trajectory_view.trajectory_view(one, j, after=after, profile=s["profile"],
                                                                  top_k=s["top_k"]), key="insp_traj")

    st.subheader("Step timeline")
    timeline = explain.step_timeline(one, j, profile=s["profile"], top_k=s["top_k"])
    st.plotly_chart(plots.step_timeline_figure(timeline), key="insp_timeline")
    with st.expander("Step statistics"):
        st.dataframe(timeline, hide_index=True, width="stretch")

    left, right = st.columns([3, 2])
    with left:
        st.markdown("**Contributions to the logit** (" + ("shape function at this run's value" if variant == "gam"
                    else "weight × standardized value") + ", largest first)")
        st.plotly_chart(inspector_plots.waterfall(expl), key="insp_waterfall")
    with right:
        place = shown_conf.dataset_position(ws, i, variant, evaluated)
        named = views.shown_text(row["dataset"], "")
        st.markdown(f"**Against its dataset** ({ui.md(named)}, {ui.md(method)} confidence as shown)" if named else
                    f"**Against the runs without a dataset name** ({ui.md(method)} confidence as shown)")
        st.plotly_chart(plots.position_figure(place.confidence, place.labels, place.value), key="insp_position")
        st.caption(explain.compare_with(place.percentile, place.n, "trajectories " + (
            "of this dataset" if named else "without a dataset name")).capitalize() + ".")
