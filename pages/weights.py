"""Feature weights: the calibrators' weights by family, selection frequency, weights per dataset."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Feature weights")   # the title before this page's imports (or, on a new server's first request, a notice)

from htc_core.app import experiments, explain_views, ui, url_state, views
from htc_core.viz import experiment_plots, gam_plots, plots
from htc_core.experiments.ablation import selection_frequency
from htc_core.calibration.evaluation import EvaluationError, label_problem


def selection_frequencies(ws, cannot_evaluate, link):
    """The evaluation's selection frequencies (waits for the evaluation); returns the page's URL parameters with
    the frequencies' model among them."""
    if cannot_evaluate:
        st.info(f"No cross-validated evaluation on this selection: {ui.md(cannot_evaluate)}.")
    else:
        try:
            freq = views.selection_view(ui.evaluation(ws).result)
            link = link[:2] + url_state.weights_params(freq.methods)[2:]
            url_state.restore("weights", link[2:])
            method = st.radio("Model", freq.methods, horizontal=True, key="w_sel_method")
            st.caption(f"Fraction of the {freq.fits} outer-fold fits (folds × seeds) of the honest evaluation in "
                       "which the feature kept a non-zero weight.")
            st.plotly_chart(plots.selection_bar(freq.of(method)), key="w_sel")
            levels = selection_frequency(ui.evaluation(ws).result, method)
            st.markdown(f"**By family and level** ({method}): share of the Top-1 / Top-3 / Top-5 slots (by "
                        "|standardized weight|) and of all selections, over the same fits (the paper's table)")
            st.plotly_chart(experiment_plots.selection_levels_bar(levels.by_family), key="w_sel_levels")
            with st.expander("Most frequent features at each level"):
                for level, title in (("top1", "Top-1"), ("top3", "Top-3"), ("top5", "Top-5")):
                    st.markdown(f"**{title}**")
                    st.dataframe(levels.top(level, 10), hide_index=True, width="stretch")
        except EvaluationError as e:
            st.warning(f"No evaluation on this selection: {ui.md(str(e))}")
    return link


ui.require_app("weights")

with ui.page_errors("weights"):
    ws = ui.guard()
    cannot_fit = label_problem(ws.labels, for_evaluation=False)
    if cannot_fit:
        st.info(f"No calibrator can be fitted on this selection: {ui.md(cannot_fit)}. Choose more data in the "
                "sidebar.")
        st.stop()
    n_lab = len(ui.labeled_positions(ws))
    st.caption("Weights act on standardized features, so their sizes compare directly; a positive weight raises the "
               "confidence. Hover a bar for the feature's formula. Both models are fitted on every labeled "
               f"trajectory of the selection ({n_lab:,}).")
    link = url_state.weights_params()
    url_state.restore("weights", link[:2])      # a pasted link's choices (the model of the frequencies: below)
    only_kept = st.toggle("Show only features with a non-zero weight", value=False, key="w_only_kept")
    for variant in ("reduced", "full"):
        model = ui.fitted_model(ws, variant)
        frame = views.weights_frame({f"HTC-{variant.capitalize()}": model})
        st.markdown(f"**HTC-{variant.capitalize()}** ({'L1, sparse' if variant == 'reduced' else 'L2'}; alpha "
                    f"{model.alpha_:g}; {model.n_selected_} of {len(frame)} features kept)")
        st.plotly_chart(plots.weights_bar(frame, only_selected=only_kept, height=460), key=f"w_bar_{variant}")

    st.subheader("HTC-GAM: one shape function per feature")
    gam = ui.fitted_gam(ws, run=False)
    if gam is None:
        st.caption("HTC-GAM gives each (de-duplicated) feature a smooth shape function instead of one weight and "
                   "keeps it only where it beats HTC-Reduced by inner CV. Fitting it takes a little longer than "
                   "HTC-Reduced (about half a minute on 500 runs).")
        if st.button(f"Fit HTC-GAM on the {n_lab:,} labeled trajectories", key="w_gam_go"):
            gam = ui.fitted_gam(ws)
    if gam is not None:
        st.caption(f"On this selection {ui.md(explain_views.gam_choice(gam))}.")
        shown = gam if gam.kind_ == "gam" else ui.fitted_gam(ws, select="gam")
        if gam.kind_ != "gam":
            st.caption("Below, the shape functions of the GAM candidate (fitted anyway, for a look).")
        order = st.radio("Order by", ["mean_abs", "range"], horizontal=True, key="w_gam_order",
                         format_func={"mean_abs": "mean |contribution| over the runs",
                                      "range": "range of the curve"}.get)
        shapes = explain_views.gam_shapes(ws, shown, order)
        top = (st.slider("Features shown", 1, len(shapes), min(12, len(shapes)), key="w_gam_top")
               if len(shapes) > 1 else len(shapes))
        st.markdown(f"**Shape functions** ({len(shapes)} features with a non-zero shape, most important first): "
                    "contribution to the logit (line) against the feature's value, over the labeled runs' values "
                    "(grey bars). A flat stretch adds nothing; the curve is flat beyond the training range.")
        if len(shapes):
            st.plotly_chart(gam_plots.shape_curves_figure(shapes, top=top), key="w_gam_shapes")
        with st.expander("Importance of every shape function"):
            st.dataframe(shapes.to_frame(), hide_index=True, width="stretch")

    st.subheader("How often each feature is selected")
    frequency_box = st.container()    # filled last: the sections below need no evaluation, so they draw first
    cannot_evaluate = label_problem(ws.labels, for_evaluation=True)

    st.subheader("Weights per dataset")
    variant = st.radio("Variant", ["reduced", "full"], format_func=lambda v: f"HTC-{v.capitalize()}", horizontal=True,
                       key="w_heat_variant")     # HTC-Reduced first, as every other choice of this page
    dw = ui.dataset_weights(ws, variant)
    if len(dw.weights):
        st.plotly_chart(plots.weights_heatmap(dw.weights), key="w_heat")
        for note in views.faint_rows(dw):
            st.caption(ui.md(note))
    for grp, why in dw.skipped.items():
        st.caption(f"{ui.md(grp)}: not fitted, {ui.md(why)}")
    if len(dw.weights) < 2:
        st.caption("Only one dataset has enough labeled runs; upload runs of other datasets to compare weights.")

    st.subheader("Feature-family ablation")
    st.caption("HTC-Full and HTC-Reduced on each of the 15 combinations of the four families, with the honest "
               "protocol of the Calibration page (same folds; the all-families row equals its HTC rows). "
               "Thirty cross-validated models: this takes a while on large selections.")
    abl = experiments.cached_ablation()
    if abl is None and cannot_evaluate is None and st.button("Run the ablation", key="w_ablation_go"):
        try:
            abl = experiments.ablation_result(ws)
        except EvaluationError as e:
            st.warning(f"No ablation on this selection: {ui.md(str(e))}")
    if abl is not None:
        a_variant = st.radio("Ablation of", ["reduced", "full"], format_func=lambda v: f"HTC-{v.capitalize()}",
                             horizontal=True, key="w_ablation_variant")
        st.plotly_chart(experiment_plots.ablation_bars(abl.rows, a_variant), key="w_ablation")
        st.dataframe(abl.rows[abl.rows.variant == a_variant].drop(columns=["method"]), hide_index=True,
                     width="stretch")

    st.subheader("Learning curves: HTC vs learning baselines")
    st.caption("For each training size, a stratified draw from the training part of each of 5 outer folds (the "
               "same draws for every method) fits HTC and the paper's learning baselines (MLP, XGBoost, Gaussian "
               "process on the 48 features; LSTM, Transformer on the per-token top-k log-probabilities), scored "
               "on the fold's test runs. Lines: mean over the 5 fits; bands: ± std. The neural baselines take "
               "minutes. Same as `htc learning-curve`.")
    runnable, missing = experiments.available_curve_methods()
    if missing:
        st.caption(f"Not available here: {', '.join(missing)} (install the extra: `pip install -e \".[learning]\"`).")
    lc_sizes = experiments.curve_sizes(n_lab)
    lc_methods = tuple(st.multiselect("Methods", runnable, default=runnable, key="w_lc_methods", wrap=True))
    lc = experiments.cached_learning_curve(lc_sizes, lc_methods) if lc_methods else None
    if lc is None and lc_methods and cannot_evaluate is None and st.button("Compute learning curves",
                                                                          key="w_lc_go"):
        try:
            lc = experiments.learning_curve_result(ws, lc_sizes, lc_methods)
        except EvaluationError as e:
            st.warning(f"No learning curves on this selection: {ui.md(str(e))}")
    if lc is not None:
        st.plotly_chart(experiment_plots.learning_curve_lines(lc.curves()), key="w_lc")
        st.dataframe(lc.curves(), hide_index=True, width="stretch")
        for note in lc.notes:
            st.caption(ui.md(note))

    with frequency_box:
        link = selection_frequencies(ws, cannot_evaluate, link)
    url_state.write(link)
