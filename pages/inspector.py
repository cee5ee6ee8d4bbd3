"""Trajectory inspector: why this confidence (steps, tokens, contributions, position, reasons)."""

import streamlit as st

from htc_core import explain
from htc_core.app import (experiments, explain_views, inspector_plots, label_glue, plots, prefix_plots,
                          trajectory_panel, trajectory_view, ui, views)
from htc_core.calibration.evaluation import label_problem

ui.require_app("inspector")
st.title("Trajectory inspector")

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
    variant = c2.radio("Explained by", ["reduced", "full", "gam"], horizontal=True, key="insp_variant",
                       format_func=lambda v: "HTC-GAM" if v == "gam" else f"HTC-{v.capitalize()}")
    method = "HTC-GAM" if variant == "gam" else f"HTC-{variant.capitalize()}"

    row = frame.iloc[i]
    st.caption(f"{ui.md(views.clipped(row['id']))} · dataset {ui.md(views.clipped(views.shown_text(row['dataset'])))} · "
               f"model {ui.md(views.clipped(views.shown_text(row['model'])))} · framework "
               f"{ui.md(views.clipped(views.shown_text(row['framework'])))} · {row['steps']} steps · {row['tokens']} tokens · "
               f"{views.outcome_word(row['success'])}")
    raised = ws.flags.of(i)
    if raised:
        st.warning("**Structural flags:** " + "; ".join(raised) + ".")
    else:
        checked = ", ".join(explain.FLAGS[f] for f in ws.flags.available) or "nothing the data can decide"
        st.caption(f"No structural flag raised (checked: {checked}).")
    s = ui.settings()
    one, j = ws.trajectory(i)     # this run's tokens only (the workspace keeps them in the store)
    trajectory_panel.render_answer(trajectory_view.trajectory_view(one, j, profile=s["profile"], top_k=s["top_k"]))
    label_glue.inspector_label_bar(ws, i, ui.INSPECT)     # Success / Failure / Skip, previous / next (keys s f x p n)

    cannot_fit = label_problem(ws.labels, for_evaluation=False)
    X = ws.features
    if cannot_fit is None:
        model = ui.fitted_model(ws, variant)
    else:   # no labels to fit on: the shipped GAC's sub-model for this kind of run explains its confidence
        model, X, gac_kind = experiments.gac_model_for(ws, i)
        method = "GAC (zero-shot)"
    expl = explain.explain_trajectory(model, X, i, labels=ws.labels, groups=ws.ts.meta["dataset"], ids=ws.ts.ids)
    m = st.columns(4)
    if expl is not None:
        m[0].metric(f"{method} confidence", explain.format_confidence(expl.confidence))
    honest = views.oof_confidence(ui.cached_evaluation(), i, method)
    if honest is not None:
        m[1].metric("out-of-fold (honest)", explain.format_confidence(honest))
    m[2].metric("GlobalTrace-TP", f"{row['GlobalTrace-TP']:.2f}")
    m[3].metric("LastStep-TP", f"{row['LastStep-TP']:.2f}")

    if expl is not None:
        st.subheader("Why this confidence")
        with st.container(border=True):
            st.markdown(f"**Calibrated confidence {explain.format_confidence(expl.confidence)}** (logit "
                        f"{expl.logit:+.2f}). Strongest reasons, compared with " + ui.md(expl.reference) + ":")
            for r in expl.reasons or ["No feature moves this trajectory far from the model's intercept."]:
                st.markdown("- " + ui.md(r))
            st.caption("Features that carry the same information (exact copies, or correlated beyond |r| 0.95 on "
                       "these runs) are one signal here, with their contributions summed.")
            if variant == "gam" and cannot_fit is None:   # HTC-GAM: contributions are shape-function values
                st.caption(f"HTC-GAM: each contribution is the feature's shape function at this run's value "
                           f"(Feature weights shows the curves); {ui.md(explain_views.gam_choice(model))}.")
    if cannot_fit is not None:
        st.info(f"No calibrator can be fitted on this selection ({ui.md(cannot_fit)}), so this confidence is from "
                f"{experiments.GAC_NOTE}; this run is scored by its model for runs "
                f"{'with' if gac_kind == 'with_alternatives' else 'without'} alternatives. For a calibrator fitted on "
                f"your runs, {experiments.LABELS_HOWTO}.")

    after = None
    if model is not None and cannot_fit is None:
        st.subheader("Confidence after each step")
        after = explain.confidence_after_steps(model, one, j)
        st.plotly_chart(prefix_plots.step_confidence_figure(after), key="insp_step_confidence")
        st.caption(f"What a live `htc_core.Monitor` with this {method} model showed as the run went on (the last "
                   "point is the run's own confidence). The model is fitted on whole runs; `htc early-warning` and "
                   "the Calibration page show how far earlier prefixes can be trusted.")
    elif model is not None:   # no labels: the live Monitor's default, the shipped prefix-aware GAC
        st.subheader("Confidence after each step")
        after = explain.confidence_after_steps("gac-prefix", one, j)
        st.plotly_chart(prefix_plots.step_confidence_figure(after), key="insp_step_confidence")
        st.caption("What a live `htc_core.Monitor()` showed as the run went on, with its default model: the shipped "
                   "`gac-prefix`, trained on every prefix of the project's labeled runs (zero-shot here; "
                   "`htc models gac-prefix` shows its leave-one-dataset-out numbers by prefix).")

    st.subheader("The whole trajectory, step by step")
    trajectory_panel.render_steps(trajectory_view.trajectory_view(one, j, after=after, profile=s["profile"],
                                                                  top_k=s["top_k"]), key="insp_traj")

    st.subheader("Step timeline")
    timeline = explain.step_timeline(one, j, profile=s["profile"], top_k=s["top_k"])
    st.plotly_chart(plots.step_timeline_figure(timeline), key="insp_timeline")
    with st.expander("Step statistics"):
        st.dataframe(timeline, hide_index=True, width="stretch")

    if expl is not None:
        left, right = st.columns([3, 2])
        with left:
            st.markdown("**Contributions to the logit** (" + ("shape function at this run's value" if variant == "gam"
                        else "weight × standardized value") + ", largest first)")
            st.plotly_chart(inspector_plots.waterfall(expl), key="insp_waterfall")
        with right:
            place = explain.group_position(model, X, i, ws.ts.meta["dataset"], labels=ws.labels)
            named = views.shown_text(row["dataset"], "")
            st.markdown(f"**Against its dataset** ({ui.md(named)}, {method} confidence)" if named else
                        f"**Against the runs without a dataset name** ({method} confidence)")
            st.plotly_chart(plots.position_figure(place.confidence, place.labels, place.value), key="insp_position")
            st.caption(f"Higher than {place.percentile:.0f}% of the {place.n:,} trajectories "
                       + ("of this dataset." if named else "without a dataset name."))
        with st.expander("Distinct signals and all feature contributions"):
            st.dataframe(views.signal_frame(expl), hide_index=True, width="stretch")
            st.dataframe(expl.table, hide_index=True, width="stretch")
