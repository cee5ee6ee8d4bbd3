"""Compare run sets: A vs B (two run sets, or two calibrators on the same runs): metrics with bootstrap
intervals and their difference, overlaid reliability diagrams, feature shifts, runs whose verdict flipped."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Compare run sets")   # the title before this page's imports (or, on a new server's first request, a notice)

from htc_core.app import ab_views, ui
from htc_core.viz import ab_plots, plots
from htc_core.app import shown as shown_conf
from htc_core.app.compute import ALPHAS
from htc_core.calibration.evaluation import EvaluationError, label_problem

ui.require_app("compare_runsets")

with ui.page_errors("compare_runsets"):
    ws = ui.guard()
    names = {i: n for i, n in ui.run_set_names().items() if i in set(ws.run_set.tolist())}
    cannot_evaluate = label_problem(ws.labels, for_evaluation=True)
    if cannot_evaluate:
        st.info(f"The comparison needs the cross-validated evaluation, which cannot run on this selection: "
                f"{ui.md(cannot_evaluate)}.")
        st.stop()
    ui.apply_ab_url(names)                      # the choices a shared link carries (checked against what exists)
    mode = st.radio("Compare", ["runsets", "calibrators"], horizontal=True, key="ab_mode",
                    format_func=lambda m: {"runsets": "two run sets", "calibrators": "two calibrators on the same runs"}[m])
    try:
        ev = ui.evaluation(ws)
    except EvaluationError as e:
        st.warning(f"The comparison needs the cross-validated evaluation, which cannot run here: {ui.md(str(e))}")
        st.stop()
    methods = ev.result.methods
    reduced = "HTC-Reduced" if "HTC-Reduced" in methods else methods[0]
    # a run-set picker spans the page, so its chips hold whole names (ui-review 23); two methods fit side by side
    c1, c2 = (st.container(), st.container()) if mode == "runsets" else st.columns(2)
    # the settings row: "Confidence from" first for run sets; the two methods are chosen above for calibrators
    c3, c4, c5 = st.columns([3, 2, 3]) if mode == "runsets" else (None, *st.columns([2, 3, 3])[:2])
    if mode == "runsets":
        if len(names) < 2:
            st.info("Two run sets are needed: upload another one on **Runs**, or widen the sidebar's choice.")
            st.stop()
        da, db = ab_views.default_sides(ws, names)
        for k, default in (("ab_a", da), ("ab_b", db)):
            kept = [r for r in st.session_state.get(k) or [] if r in names]
            st.session_state[k] = kept or default
        short = ab_views.short_names(names)           # chips: without the shared "sample: " and ".jsonl"
        pick = ("Run sets of this side; the chips show the names without the prefix and extension all run sets "
                "share. The full names are listed under the pickers.")
        a = c1.multiselect("A (one or several run sets)", list(names), key="ab_a", format_func=short.get,
                           wrap=True, help=pick)
        b = c2.multiselect("B (one or several run sets)", list(names), key="ab_b", format_func=short.get,
                           wrap=True, help=pick)
        ui.valid_choice("ab_method", methods, reduced)
        method = c3.selectbox("Confidence from", methods, key="ab_method")
        settings_key = ("runsets", tuple(a), tuple(b), method)
        choices = {"a": a, "b": b, "conf": method}
    else:
        ui.valid_choice("ab_method_a", methods, ev.result.strongest_baseline() or methods[0])
        ui.valid_choice("ab_method_b", methods, reduced)
        ma = c1.selectbox("A (method)", methods, key="ab_method_a")
        mb = c2.selectbox("B (method)", methods, key="ab_method_b")
        rs = st.session_state.get(ui.RUNSETS) or []
        settings_key = ("calibrators", ma, mb, tuple(rs))
        choices = {"ma": ma, "mb": mb}
    st.session_state.setdefault("ab_threshold", 0.5)
    strategy = c4.radio("Bins", ["uniform", "quantile"], horizontal=True, key="ab_binning",
                        format_func=lambda s: {"uniform": "equal width", "quantile": "equal mass"}[s],
                        help="Binning of the reliability diagram and the ECE: 10 equal-width bins on [0, 1], or "
                             "10 bins with the same number of runs each.")
    threshold = c5.slider("Trust threshold", 0.05, 0.95, step=0.05, key="ab_threshold",
                          help="A run's verdict is 'trust' when its confidence is at least this, else 'doubt'.")
    if mode == "runsets":
        for side, chosen in (("A", a), ("B", b)):
            st.caption(ui.md(ab_views.side_caption(side, chosen, names, len(ab_views.side_positions(ws, chosen)))))
    ui.write_ab_url(mode, {**choices, "bins": strategy, "trust": f"{threshold:.2f}"})
    try:
        inputs = (ab_views.run_set_inputs(ws, ev, method, a, b, names) if mode == "runsets"
                  else ab_views.calibrator_inputs(ws, ev, ma, mb, rs))
    except ValueError as e:
        st.info(ui.md(str(e)))
        st.stop()

    key = ui.cache_key("ab_compare", ui.settings()["seeds"], ALPHAS, *settings_key, strategy, float(threshold))
    try:
        cmp = ui.computed(key, "Bootstrapping the comparison",
                          lambda progress: ab_views.compare(ws, inputs, strategy=strategy, threshold=threshold))
    except ValueError as e:
        st.warning(f"No comparison on these runs: {ui.md(str(e))}")
        st.stop()
    st.caption("Every run's confidence is its out-of-fold prediction (first repeat) in the cross-validated evaluation "
               "of the sidebar's selection, from a calibrator that never saw it. Intervals: 95% percentile bootstrap "
               f"over the runs ({cmp.metrics.n_boot} resamples; "
               + ("one resample of the shared runs for both sides, i.e. paired" if cmp.metrics.paired
                  else "A and B resampled independently") + "). Verdict accuracy: share of runs where "
               f"\"trust\" (confidence ≥ {threshold:.2f}) matches the outcome.")

    st.markdown("**Metrics**")
    st.dataframe(ab_views.metric_table(cmp), hide_index=True, width="stretch", key="ab_metrics", column_config={
        "metric": st.column_config.TextColumn(pinned=True),
        "difference": st.column_config.TextColumn(pinned=True, help="the verdict on B − A: a side is better where "
                                                  "the 95% interval of the difference excludes 0"),
        "A": st.column_config.TextColumn(help=f"A: {ui.md(cmp.name_a)}; value [95% interval]"),
        "B": st.column_config.TextColumn(help=f"B: {ui.md(cmp.name_b)}; value [95% interval]")})
    left, right = ui.wrapping_row("ab_charts", 540, 380)
    with left:
        st.markdown(f"**Reliability diagrams overlaid** ({'equal-width' if strategy == 'uniform' else 'equal-mass'} "
                    "bins; whiskers: 95% Wilson intervals)")
        st.plotly_chart(plots.reliability_figure(cmp.curves), key="ab_reliability")
    with right:
        st.markdown("**Difference B − A**")
        st.plotly_chart(ab_plots.difference_figure(cmp), key="ab_diff")

    if cmp.shifts is not None:
        st.markdown("**Feature shifts**, ranked by effect size (standardized mean difference: B mean − A mean over "
                    "the pooled standard deviation)")
        left, right = ui.wrapping_row("ab_shifts", 450, 470)
        left.plotly_chart(ab_plots.shift_figure(cmp), key="ab_shift")
        right.dataframe(ab_views.shift_table(cmp), hide_index=True, width="stretch", height=460, key="ab_shift_table")

    st.markdown(f"**Runs whose verdict flipped** ({cmp.counts['flipped']:,} of {cmp.counts['paired']:,} paired runs)")
    st.caption("Pairing: " + ("every run with itself (the same runs under two calibrators)." if cmp.metrics.paired
               else "the same task on both sides: the same dataset and task id (a metadata task_id, or the "
                    "trajectory id with the model name taken out: facts-0007-SmolLM2-135M-greedy is task facts-0007), "
                    "else the same question text; a task present more than once on a side is left unpaired. "
                    f"Unpaired: {cmp.counts['unpaired_a']:,} of A, {cmp.counts['unpaired_b']:,} of B.") + " Select a row to open its runs in the inspector.")
    for note in cmp.notes:
        st.caption(f"note: {ui.md(note)}")
    flipped = ab_views.flipped_table(ws, cmp, inputs)
    if flipped.empty:
        st.info("No paired run changed its verdict.")
    else:
        shown = flipped.drop(columns=["key_a", "key_b"])
        event = st.dataframe(shown, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                             key="ab_flipped")
        rows = event.selection.rows if event is not None else []
        if rows:
            row = flipped.iloc[rows[0]]
            o1, o2 = st.columns(2)
            if o1.button(f"Open A's run {row['id A']} in the inspector", key="ab_open_a"):
                ui.open_in_inspector(row["key_a"])
            if o2.button(f"Open B's run {row['id B']} in the inspector", key="ab_open_b"):
                ui.open_in_inspector(row["key_b"])
            if st.button("Open both side by side", key="ab_open_pair", type="primary"):
                shown_conf.open_side_by_side(row["key_a"], row["key_b"])
