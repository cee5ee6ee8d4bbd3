"""Feature space: t-SNE / UMAP projections of the 48 features; select a point to inspect it."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Feature space")   # the title before this page's imports (or, on a new server's first request, a notice)

from htc_core.app import drill, experiments, scale, ui, url_state, views
from htc_core.viz import plots
from htc_core.calibration.evaluation import label_problem

ui.require_app("feature_space")

with ui.page_errors("feature_space"):
    ws = ui.guard()
    if len(ws) < 3:
        st.info("A projection needs at least 3 trajectories; choose more data in the sidebar.")
        st.stop()
    color_labels = {"dataset": "dataset", "model": "model", "success": "success",
                    "htc_confidence": "calibrated confidence (HTC-Full)", "baseline_confidence": "GlobalTrace-TP"}
    link = url_state.feature_space_params(color_labels)
    url_state.restore("feature_space", link)      # a pasted link's projection and colouring
    c1, c2 = st.columns(2)
    method = c1.radio("Projection", ["umap", "tsne"], format_func={"umap": "UMAP", "tsne": "t-SNE"}.get,
                      horizontal=True, key="fs_method")
    color = c2.selectbox("Colour by", list(color_labels), format_func=color_labels.get, key="fs_color")
    shown = ui.projection_or_preview(ws, method)     # the chosen projection, else a PCA while it computes
    proj = shown.projection
    cannot_fit = label_problem(ws.labels, for_evaluation=False)
    if cannot_fit:   # no labels to fit on: colour by the shipped GAC's zero-shot confidence
        htc_conf = experiments.gac_scores(ws).confidence
        if color == "htc_confidence":
            st.info(f"No calibrator can be fitted on this selection ({ui.md(cannot_fit)}): the calibrated "
                    f"confidence is from {experiments.GAC_NOTE}.")
    else:
        htc_conf = views.calibrated_confidence(ui.fitted_model(ws, "full"), ws.features)
    frame = views.projection_frame(ws, proj, htc_conf, cap=scale.SCATTER_CAP)
    fitted_on = proj.params.get("fitted_on")
    how = (f"fitted on a random sample of {fitted_on:,} runs, the other {proj.params['placed']:,} placed at the "
           "weighted mean of their 5 nearest fitted runs" if fitted_on else f"fitted on all {len(ws):,} runs")
    drawn = (f"showing a random sample of {len(frame):,} of the {len(ws):,} runs (WebGL above 3,000 points, at most "
             f"{scale.SCATTER_CAP:,})" if len(frame) < len(ws) else f"showing all {len(ws):,} runs")
    if shown.preview:
        share = proj.params["explained"]
        what = (f"PCA of the standardized 48 features (first two principal components: {share[0]:.0%} and "
                f"{share[1]:.0%} of the variance), shown while {ui.PROJECTION_LABELS[method]} is computed")
    else:
        what = f"{ui.PROJECTION_LABELS[method]} of the standardized 48 features: {how}"
    st.caption(f"{what}; {drawn} ({proj.seconds:.1f} s, cached). Click a point (or draw a box or lasso from the "
               "chart's toolbar) to list the runs selected, then open one in the inspector.")
    fs_context = (method, ui.cache_key("feature_space"))      # the rows a click names
    drill.replay_link("fs_chart", fs_context, st.session_state.pop(url_state.DRILL_LINK["pts"], None), points=True)
    event = st.plotly_chart(plots.projection_scatter(frame, color=color), key="fs_chart",
                            on_select=drill.keep_clicks("fs_chart", fs_context),
                            selection_mode=("points", "box", "lasso"))
    ui.projection_status(shown, method)             # what is still computing (none once the projection is ready)
    event = drill.clicked("fs_chart", event, fs_context)      # a click lost by a redraw of the chart
    selected = drill.selected_points(event, len(ws))
    url_state.write(link, {"pts": selected.link if selected is not None else None})
    drill.show_runs(ws, selected, key="fs_drill", confidence=htc_conf,
                    confidence_name="calibrated confidence", hint="No point selected yet.")
    with st.expander("Open a trajectory by id"):
        choice = st.selectbox("Trajectory", frame["key"].head(5000).tolist(), key="fs_pick",
                              format_func=lambda k: k.split(":", 1)[1])
        if st.button("Open in the inspector", key="fs_open"):
            ui.open_in_inspector(choice)
