"""Compare LLMs: reliability, metrics and feature distributions side by side per model, framework or dataset."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Compare LLMs")   # the title before this page's imports (or, on a new server's first request, a notice)

from htc_core import explain
from htc_core.app import experiments, ui, url_state, views
from htc_core.viz import experiment_plots, plots
from htc_core.calibration.evaluation import EvaluationError, label_problem
from htc_core.features import FEATURE_NAMES, REGISTRY, feature_label


#: the tooltips of the per-group table's metric columns
METRIC_HELP = {"ECE ↓": "expected calibration error, 10 equal-width bins (lower is better)",
               "Brier ↓": "mean squared error of the confidence (lower is better)",
               "AUROC ↑": "how well the confidence ranks successes above failures (higher is better; empty when the "
                          "group has one outcome only)"}


def group_tables(tables, group_by: str) -> None:
    """The counts per group and one calibration table per method (four columns at most: whole in the 440 px a
    900 px window leaves beside the sidebar, side by side on a wide one; one row per group with every method's
    metrics side by side was 9 columns for two methods and scrolled sideways at 900 px)."""
    blocks = ui.wrapping_row("cmp_tables", *[420] * (1 + len(tables.metrics)))
    with blocks[0]:
        st.markdown(f"**Per {group_by}: labeled runs and success rate**")
        st.dataframe(tables.counts, hide_index=True, width="stretch",
                     column_config={group_by: st.column_config.TextColumn(pinned=True),
                                    "n": ui.count_column("labeled runs of the group"),
                                    "success rate": st.column_config.ProgressColumn(
                                        format="%.2f", min_value=0, max_value=1,
                                        help="share of the group's labeled runs that succeeded")})
    for block, (method, table) in zip(blocks[1:], tables.metrics.items()):
        with block:
            st.markdown(f"**{ui.md(method)}: calibration per {group_by}**")
            st.dataframe(table, hide_index=True, width="stretch",
                         column_config={group_by: st.column_config.TextColumn(pinned=True),
                                        **{c: st.column_config.NumberColumn(format="%.3f", help=METRIC_HELP[c])
                                           for c in views.GROUP_METRICS}})


def evaluated_comparison(ws, group_by: str, column, link):
    """Reliability, success rate and metrics per group (they wait for the evaluation); the methods' choice goes
    into ``column``. Returns the page's URL parameters with the methods among them."""
    cannot_evaluate = label_problem(ws.labels, for_evaluation=True)
    if cannot_evaluate:
        st.info(f"Comparisons need the cross-validated evaluation, which cannot run on this selection: "
                f"{ui.md(cannot_evaluate)}.")
        return link
    try:
        ev = ui.evaluation(ws)
    except EvaluationError as e:
        st.warning(f"Comparisons need the cross-validated evaluation, which cannot run here: {ui.md(str(e))}")
        return link
    res = ev.result
    groups = views.evaluated_groups(ws, ev, group_by)
    default = [m for m in ("HTC-Reduced", "Bottom10+Temp") if m in res.methods]
    link = url_state.compare_params(res.methods, default, FEATURE_NAMES, "last_top1_avg")
    url_state.restore("compare", link[1:2])     # its methods (checked; junk is ignored)
    methods = column.multiselect("Methods", res.methods, default=default, key="cmp_methods",
                                 wrap=True)      # chips on several lines: at 900 px one row cut "Bottom10+Te…"
    st.caption("Out-of-fold predictions of the pooled evaluation, split by group (each group scored by models that "
               "never saw it). Groups with few runs have wide intervals.")
    if methods:
        st.markdown("**Reliability per group**")
        st.plotly_chart(plots.reliability_facets(views.group_reliability(res, groups, methods)), key="cmp_rel")
        gm = explain.group_metrics(res.labels, views.oof_predictions(res, methods), groups, n_boot=300)
        group_tables(views.group_summary(gm, group_by), group_by)
        st.markdown("**Metrics per group** (whiskers: 95% bootstrap intervals, 300 resamples of the group's runs)")
        st.plotly_chart(plots.group_metric_bars(gm), key="cmp_bars")
        with st.expander("Metrics table"):
            st.dataframe(gm, hide_index=True, width="stretch", column_config={"n": ui.count_column()})
    return link


ui.require_app("compare")

with ui.page_errors("compare"):
    ws = ui.guard()
    c1, c2 = st.columns([1, 2])
    link = url_state.compare_params(features=FEATURE_NAMES, default_feature="last_top1_avg")
    url_state.restore("compare", link[::2])     # a pasted link's grouping and feature, before their widgets
    group_by = c1.radio("Group by", ["model", "framework", "dataset"], horizontal=True, key="cmp_group")
    evaluated_box = st.container()    # filled last: the feature distributions and transfer need no evaluation
    st.markdown("**Feature distributions per group**")
    feature = st.selectbox("Feature", list(FEATURE_NAMES), index=FEATURE_NAMES.index("last_top1_avg"),
                           format_func=feature_label, key="cmp_feature")
    st.caption(f"{REGISTRY[feature].description} Formula: {REGISTRY[feature].formula}")
    fv = views.feature_values(ws.features, ws.ts.meta[group_by], ws.labels, feature)
    st.plotly_chart(plots.feature_distribution(fv, feature_label=feature_label(feature)), key="cmp_feat")

    st.subheader(f"Transfer across {group_by}s")
    st.caption(f"For every {group_by} (source), HTC is fitted on all of its labeled runs and applied unchanged to "
               f"every other {group_by} (target); the diagonal [in brackets] is DirectTrain, the honest nested CV "
               "of the group itself. Labeled runs per group in parentheses. Off-diagonal: mean over seeds.")
    transferred = experiments.cached_transfer(group_by)
    if transferred is None and st.button(f"Compute the transfer matrix by {group_by}", key="cmp_transfer_go"):
        try:
            transferred = experiments.transfer_matrix(ws, group_by)
        except EvaluationError as e:
            st.info(f"No transfer matrix on this selection: {ui.md(str(e))}")
    if transferred is not None:
        t_variant = st.radio("Variant", transferred.variants[::-1], format_func=lambda v: f"HTC-{v.capitalize()}",
                             horizontal=True, key="cmp_transfer_variant")
        st.plotly_chart(experiment_plots.transfer_heatmaps(transferred, t_variant), key="cmp_transfer")
        for note in transferred.notes:
            st.caption(f"note: {ui.md(note)}")
        with st.expander("Transfer cells"):
            st.dataframe(transferred.to_frame(), hide_index=True, width="stretch")

    with evaluated_box:
        link = evaluated_comparison(ws, group_by, c2, link)
    url_state.write(link)
