"""Feature weights: the calibrators' weights by family, selection frequency, weights per dataset."""

import streamlit as st

from htc_core.app import ui
from htc_core import explain
from htc_core.app import plots
from htc_core.calibration.evaluation import EvaluationError

ui.require_app("weights")
st.title("Feature weights")

with ui.page_errors("weights"):
    ws = ui.guard()
    n_lab = len(ui.labeled_positions(ws))
    if n_lab < 10:
        st.info("At least 10 labeled trajectories are needed to fit the calibrators; choose more data in the sidebar.")
        st.stop()
    st.caption("Weights act on standardized features, so their sizes compare directly; a positive weight raises the "
               "confidence. Hover a bar for the feature's formula. Both models are fitted on every labeled "
               f"trajectory of the selection ({n_lab:,}).")
    only_kept = st.toggle("Show only features with a non-zero weight", value=False, key="w_only_kept")
    for variant in ("reduced", "full"):
        model = ui.fitted_model(ws, variant)
        frame = explain.weights_frame({f"HTC-{variant.capitalize()}": model})
        st.markdown(f"**HTC-{variant.capitalize()}** ({'L1, sparse' if variant == 'reduced' else 'L2'}; alpha "
                    f"{model.alpha_:g}; {model.n_selected_} of {len(frame)} features kept)")
        st.plotly_chart(plots.weights_bar(frame, only_selected=only_kept, height=460), key=f"w_bar_{variant}")

    st.subheader("How often each feature is selected")
    try:
        ev = ui.evaluation(ws)
        freq = explain.selection_frequency(ev.result)
        method = st.radio("Model", [m for m in ("HTC-Reduced", "HTC-Full") if m in set(freq["method"])],
                          horizontal=True, key="w_sel_method")
        st.caption(f"Fraction of the {int(freq['fits'].iloc[0])} outer-fold fits (folds × seeds) of the honest "
                   "evaluation in which the feature kept a non-zero weight.")
        st.plotly_chart(plots.selection_bar(freq[freq["method"] == method]), key="w_sel")
    except EvaluationError as e:
        st.warning(f"No evaluation on this selection: {ui.md(str(e))}")

    st.subheader("Weights per dataset")
    variant = st.radio("Variant", ["full", "reduced"], format_func=lambda v: f"HTC-{v.capitalize()}", horizontal=True,
                       key="w_heat_variant")
    dw = ui.dataset_weights(ws, variant)
    if len(dw.weights):
        st.plotly_chart(plots.weights_heatmap(dw.weights), key="w_heat")
    for grp, why in dw.skipped.items():
        st.caption(f"{ui.md(grp)}: not fitted, {ui.md(why)}")
    if len(dw.weights) < 2:
        st.caption("Only one dataset has enough labeled runs; upload runs of other datasets to compare weights.")
