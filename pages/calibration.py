"""Calibration: honest cross-validated evaluation, reliability diagrams, metrics, model fit/download/upload."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Calibration")   # the title before this page's imports (or, on a new server's first request, a notice)

import json

from htc_core import explain
from htc_core.app import (adapt_views, adapted_scorer, drill, experiments, label_panels, report_download, sampling, ui,
                         url_state, views)
from htc_core.viz import plots, prefix_plots, selective_plots
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.evaluation import EvaluationError, label_problem, small_sample_warning

ui.require_app("calibration")

with ui.page_errors("calibration"):
    ws = ui.guard()
    s = ui.settings()
    n_lab = len(ui.labeled_positions(ws))
    st.caption(f"{n_lab:,} labeled of {len(ws):,} selected trajectories · confidence profile `{s['profile']}`, "
               f"top-k {s['top_k']} · outer 5-fold stratified CV with alpha chosen by an inner CV on the training "
               f"folds only, {s['seeds']} repeat(s). Choose datasets and models in the sidebar.")

    if n_lab > sampling.EVAL_CAP:
        st.info(f"{n_lab:,} labeled runs: the cross-validated evaluation below runs on a stratified random sample of "
                f"{sampling.EVAL_CAP:,} of them (same success rate, the same rows in every session), and the fitted "
                f"models on at most {sampling.FIT_CAP:,}; a fitted model then scores every run. A nested CV of all "
                "of them would take hours here and move the metrics by less than their standard error.")
    unstable = small_sample_warning(ws.labels)
    if unstable:
        st.warning(f"Small sample: {ui.md(unstable)}.")
    pending = st.empty()      # the remaining parts' progress bars show here while the page is drawn
    ev = None
    cannot_evaluate = label_problem(ws.labels, for_evaluation=True)
    if cannot_evaluate:
        st.info(f"The cross-validated evaluation cannot run on this selection: {ui.md(cannot_evaluate)}. "
                f"Calibration is measured against outcomes: {experiments.LABELS_HOWTO}. Meanwhile the Runs, "
                f"Feature space and Trajectory inspector pages show the confidence of {experiments.GAC_NOTE}.")
    else:
        try:
            ev = adapted_scorer.with_adapted(ws, ui.evaluation(ws, wait=False))   # + the selection's adapted GAC
        except EvaluationError as e:
            st.warning(f"The evaluation cannot run on this selection: {ui.md(str(e))}")
    label_panels.scorer_card(ws)

    if ev is not None:
        res = ev.result
        for note in res.notes:
            st.caption(f"note: {ui.md(note)}")
        choices = views.calibration_choices(res.methods, res.strongest_baseline())
        link = url_state.calibration_params(res.methods, f"cal_methods_{'-'.join(res.methods)}",
                                            f"cal_hist_{'-'.join(res.methods)}")
        url_state.restore("calibration", link)      # a pasted link's choices (checked; junk is ignored)
        chosen = st.multiselect("Methods in the reliability diagram", res.methods, default=choices.diagram, wrap=True,
                                key=link[0].key)
        left, right = ui.wrapping_row("cal_diagrams", 550, 370)
        with left:
            binning = st.radio("Bins", ["uniform", "quantile"], horizontal=True, key="cal_binning",
                               format_func=lambda b: {"uniform": "equal width", "quantile": "equal mass"}[b])
            st.markdown("**Reliability diagram** (out-of-fold predictions of the first repeat; bars: trajectories "
                        "per bin; whiskers: 95% Wilson intervals; " + (
                            "the legend's ECE is the table's: 10 equal-width bins, mean over repeats)"
                            if binning == "uniform" else "10 equal-mass bins; the legend's ECE uses them, on the "
                            "first repeat, so it differs from the table's equal-width ECE)"))
            curves = explain.reliability_curves(res.labels, views.oof_predictions(res, chosen), strategy=binning)
            rel_context = (binning, ui.cache_key("reliability"))   # what decides the bins a click names
            drill.replay_link("cal_reliability", rel_context, st.session_state.pop(url_state.DRILL_LINK["rel"], None))
            rel_event = st.plotly_chart(plots.reliability_figure(curves, ece=views.table_ece(res, chosen)
                                                                 if binning == "uniform" else None),
                                        key="cal_reliability", selection_mode=("points",),
                                        on_select=drill.keep_clicks("cal_reliability", rel_context))
            rel_event = drill.clicked("cal_reliability", rel_event, rel_context)   # a click lost by a redraw
        with right:
            hist_method = st.selectbox("Confidence histogram of", res.methods, index=choices.histogram_index,
                                       key=link[2].key)
            hist_bins = explain.binned_runs(res.oof[hist_method], res.labels, name=hist_method)
            hist_context = (hist_method, ui.cache_key("histogram"))
            drill.replay_link("cal_hist", hist_context, st.session_state.pop(url_state.DRILL_LINK["bar"], None))
            hist_event = st.plotly_chart(drill.histogram_figure(
                hist_bins, title=f"{hist_method}: out-of-fold confidence by outcome"), key="cal_hist",
                on_select=drill.keep_clicks("cal_hist", hist_context), selection_mode=("points",))
            hist_event = drill.clicked("cal_hist", hist_event, hist_context)
        # drill-down: the runs behind the bin or bar clicked last
        members = explain.reliability_members(res.labels, views.oof_predictions(res, chosen), curves)
        candidates = {"rel": drill.selected_runs(rel_event, members, ev.positions),
                      "bar": drill.selected_runs(hist_event, {hist_method: hist_bins}, ev.positions, kind="outcome")}
        picked = drill.newest("cal_drill_last", candidates)
        clicked = {k: d.link if d is not None and d is picked else None for k, d in candidates.items()}   # for the URL
        shown = picked.source if picked is not None else hist_method
        drill.show_runs(ws, picked, key="cal_drill", confidence=views.workspace_oof(ev, shown, len(ws)),
                        confidence_name=f"{shown} (out-of-fold)",
                        hint="Click a point or a count bar of the reliability diagram, or a bar of the "
                             "histogram, to list the runs in it and open one in the inspector.")
        st.markdown("**Metrics** (pooled out-of-fold predictions, mean ± std over repeats; ↓ lower is better, "
                    f"↑ higher is better; {views.BEST_MARK.strip()} best of the column among the methods evaluated on "
                    "all runs; ECE with 10 equal-width bins; n: runs evaluated; +Temp: temperature scaling, +Platt: "
                    "Platt scaling, +Iso: isotonic regression, each fitted on the training folds only)")
        table = views.metrics_frame(res)
        st.dataframe(table[["method", "ECE ↓", "Brier ↓", "AUROC ↑", "features", "n"]], hide_index=True,
                     width="stretch", height=min(520, 38 + 35 * len(table)),
                     # widths that keep the three metrics whole in the 440 px of a 900 px window (auto widths
                     # cut AUROC there); the method stays when the table scrolls to features and n
                     column_config={"method": st.column_config.TextColumn(pinned=True, width=142),
                                    "ECE ↓": st.column_config.TextColumn(width=90),
                                    "Brier ↓": st.column_config.TextColumn(width=100),
                                    "AUROC ↑": st.column_config.TextColumn(width=100),
                                    "n": ui.count_column("runs evaluated")})
        with st.expander("Per-fold values"):
            st.dataframe(res.per_fold, hide_index=True, width="stretch")

        st.markdown("**Report** · one self-contained HTML file of this selection (opens offline, figures "
                    "interactive): this evaluation and its reliability diagrams, the feature weights and selection "
                    "frequency, the worst mistakes, and the transfer matrix and ablation once computed on the "
                    "Compare LLMs / Feature weights pages. `htc report` writes the same file from the command line, "
                    "with the GAC leave-one-out.")
        report_key = ("cal_report", ui.cache_key("report", s["seeds"]))
        if st.button("Build the HTML report", key="cal_report_build"):
            with ui.timed_spinner("Drawing the report", len(ws)):
                st.session_state["cal_report"] = (report_key, report_download.report_html(ws, ev))
        built = st.session_state.get("cal_report")
        if built is not None and built[0] == report_key:
            st.download_button("Download the report (HTML)", built[1], file_name="htc-report.html", mime="text/html",
                               key="cal_report_download")

        st.subheader("Selective prediction: trust only the runs above a threshold")
        sel = views.selective_views(res, chosen)
        link = url_state.calibration_params(res.methods, link[0].key, link[2].key, sel.risk_coverage)
        url_state.restore("calibration", link)
        if sel.risk_coverage:
            marked = st.selectbox("Threshold for", list(sel.risk_coverage), key="cal_sel_method")
            threshold = st.slider("Keep runs with confidence at least", 0.0, 1.0, 0.5, 0.01, key="cal_sel_threshold")
            cov, acc, kept = sel.risk_coverage[marked].at_threshold(threshold)
            m = st.container(horizontal=True, gap="large", key="cal_sel_metrics")   # each as wide as its words
            m.metric("runs kept", f"{kept:,}", help="the others are abstained on (sent to a human, retried)",
                     width="content")
            m.metric("coverage", f"{cov:.1%}", width="content")
            m.metric("success rate of the runs kept", "n/a" if kept == 0 else f"{acc:.1%}", width="content",
                     delta=None if kept == 0 else views.rate_change(acc, sel.risk_coverage[marked].base_rate))
            left, right = ui.wrapping_row("cal_selective", 460, 460)
            with left:
                st.markdown("**Risk-coverage** (out-of-fold, first repeat; AURC: area under the risk curve, lower "
                            "is better)")
                st.plotly_chart(selective_plots.risk_coverage_figure(sel.risk_coverage, threshold=threshold,
                                                                     marked=marked), key="cal_risk_coverage")
            with right:
                st.markdown("**ROC** (success is the positive class; legend: the table's AUROC)")
                st.plotly_chart(selective_plots.roc_figure(sel.roc, sel.auroc), key="cal_roc")
        url_state.write(link, clicked)

    # --------------------------------------------------------- early warning
    if ev is not None:
        st.subheader("Early warning: how soon a failing run shows")
        ew = ui.early_warning(ws, run=False)
        if ew is None:
            st.caption("Evaluates every method on the first k steps of each run (k = 1, 2, ...) and on 25/50/75/100% "
                       "of its steps, with the same outer folds by trajectory: about one evaluation per prefix length.")
            if st.button("Evaluate the prefixes", key="ew_button"):
                ew = ui.early_warning(ws)
        if ew is not None:
            metric = st.radio("Metric", ["auroc", "brier", "ece"], horizontal=True, key="ew_metric",
                              format_func=lambda m: {"auroc": "AUROC", "brier": "Brier", "ece": "ECE"}[m])
            st.plotly_chart(prefix_plots.early_warning_figure(ew, metric=metric), key="ew_figure")
            st.markdown(f"**A live monitor with one threshold** ({ew.false_alarm:.0%} of the successful runs alerted "
                        "at some step; thresholds set on these out-of-fold confidences)")
            st.dataframe(ew.first_alert, hide_index=True, width="stretch")
            with st.expander("Every prefix length and method"):
                st.dataframe(ew.curve, hide_index=True, width="stretch")
            for note in ew.notes:
                st.caption(f"note: {ui.md(note)}")

    # --------------------------------------------------------- adapt the GAC (issue 14)
    st.subheader("Adapt the shipped GAC with these labels")
    lab = ui.labeled_positions(ws)
    av = adapt_views.adapt_view(ws, len(lab), int(ws.labels[lab].sum()))
    if not av.offered:
        st.caption(f"Not offered on this selection: {ui.md(av.reason)}.")
    else:
        st.caption("Compares, out of fold on the labeled runs, the shipped GAC zero-shot, HTC-Reduced fitted from "
                   "scratch, and the GAC adapted to the labels (`htc fit --prior gac`: its logit recalibrated and its "
                   "weights shrunk toward the GAC's, the strength chosen by the evidence of the labels); then adapts "
                   "it on all of them.")
        if st.button(f"Adapt the GAC with these {av.n_labels:,} labels", key="adapt_button"):
            st.session_state["adapt_shown"] = True
        if st.session_state.get("adapt_shown"):
            cmp = adapt_views.adapt_comparison(ws, lab)
            if cmp.trained_on_these:
                st.caption(f"The shipped GAC was trained on runs of {ui.md(', '.join(cmp.trained_on_these))}: its "
                           "zero-shot numbers here are in-sample (optimistic); `htc adapt-curve` measures it honestly.")
            left, right = st.columns([2, 3])
            left.dataframe(adapt_views.metrics_table(cmp), hide_index=True)
            left.markdown(f"Adapted model's choice on all {cmp.n} runs: **{ui.md(cmp.choice)}** "
                          f"({cmp.n_folds} outer folds).")
            left.download_button("Download the adapted model (JSON)", json.dumps(cmp.model, indent=1),
                                 file_name="htc-adapted-gac.json", mime="application/json", key="adapt_download")
            curves = explain.reliability_curves(cmp.labels, cmp.oof)
            right.plotly_chart(plots.reliability_figure(curves, height=420, ece=dict(zip(cmp.metrics.method,
                               cmp.metrics.ece))), key="adapt_reliability")
            for note in cmp.notes:
                st.caption(f"note: {ui.md(note)}")

    # --------------------------------------------------------- fit and download
    st.subheader("Fit a model on the selection and download it")
    c1, c2 = st.columns([1, 3])
    variant = c1.radio("Variant", ["reduced", "full"], format_func=lambda v: f"HTC-{v.capitalize()}",
                       key="fit_variant", horizontal=True)
    cannot_fit = label_problem(ws.labels, for_evaluation=False)
    if cannot_fit is None:
        if c2.button("Fit on all labeled trajectories of the selection", key="fit_button"):
            model = ui.fitted_model(ws, variant)
            mid = ui.store().save_model(model.to_dict(), name=f"HTC-{variant.capitalize()} on {n_lab} runs")
            st.session_state["fit_model_id"] = mid
        mid = st.session_state.get("fit_model_id")
        if mid:
            body = ui.store().load_model(mid)
            st.success(f"HTC-{body['variant'].capitalize()} fitted on {body['training']['n']} trajectories "
                       f"(alpha {body['alpha']:g}, {len(body['selected_features'])} features kept), saved in the store.")
            st.download_button("Download the model (JSON)", json.dumps(body, indent=1), file_name=f"htc-{body['variant']}.json",
                               mime="application/json", key="fit_download")
    else:
        c2.info(f"No calibrator can be fitted on this selection: {ui.md(cannot_fit)}.")

    # --------------------------------------------------------- upload and score
    st.subheader("Score the selection with a saved model")
    up = st.file_uploader("Model file (JSON written by this dashboard or `htc fit`)", type=["json"], key="model_upload")
    model = None
    if up is not None:
        try:
            model = HTCCalibrator.from_json(up.getvalue(), source=up.name)
        except ValueError as e:
            st.error(f"{ui.md(up.name)} is not a usable model: {ui.md(str(e))}")
    scored = None
    if model is not None:
        target = ui.workspace_for_profile(model.profile, model.top_k)
        try:
            scored = views.score_selection(target, model)
        except ValueError as e:  # e.g. scores that would not be finite: never shown as NaN
            st.error(f"{ui.md(up.name)} cannot score this selection: {ui.md(str(e))}")
    if scored is not None:
        st.success(f"Scored {len(target):,} trajectories with HTC-{model.variant.capitalize()} "
                   f"(profile `{model.profile}`, top-k {model.top_k}, alpha {model.alpha_:g}, "
                   f"trained on {model.training_summary_.get('n', '?')} trajectories).")
        frame = scored.frame
        if scored.metrics is not None:
            st.dataframe(scored.metrics, hide_index=True)
        st.plotly_chart(plots.confidence_histogram(scored.confidence, target.labels,
                                                   title="Uploaded model: confidence by outcome"), key="score_hist")
        cols = ["id", "dataset", "model", "success", "htc_confidence", "GlobalTrace-TP", "question"]
        st.dataframe(frame[cols].head(2000), hide_index=True, width="stretch")
        st.download_button("Download scores (CSV)", frame[["id", "dataset", "model", "success", "htc_confidence"]]
                           .to_csv(index=False), file_name="htc-scores.csv", mime="text/csv", key="score_download")
    models = ui.store().list_models()
    if len(models):
        with st.expander(f"Models saved in the store ({len(models)})"):
            st.dataframe(models, hide_index=True, width="stretch")

    # the parts drawn without: wait until those still computing are all done (they run at once and end close
    # together; one redraw instead of one per part, each costing the browser its charts again), then draw
    # again; also when a part finished while this page was drawn: nothing else would redraw it
    missing = ui.parts_missing(ev) if ev is not None else []
    if missing:
        running = [m for m in missing if m in ui.evaluation_pending()]
        if running:
            with pending.container():
                st.caption("Still evaluating: " + ", ".join(ui.PART_NAMES[m] for m in running)
                           + ". The page updates when they are done.")
                ui.compute_evaluation_parts(ws, running)
        st.rerun()
