"""Runs: upload traces, read the load report, manage stored run sets, browse and filter trajectories."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Runs")   # the title before this page's imports (or, on a new server's first request, a notice)

from htc_core import explain
import numpy as np

from htc_core.app import adapt_views, adapted_scorer, experiments, import_views, label_panels, scale, sql_views, ui, views
from htc_core.app import layout, url_state
from htc_core.app import shown as shown_conf
from htc_core.calibration.evaluation import label_problem

ui.require_app("runs")
st.caption("Upload agent runs with token log-probabilities, see what was kept and why anything was rejected, "
           "and browse the stored trajectories.")

with ui.page_errors("runs"):
    full = ui.full_workspace()
    status = ui.bootstrap()
    if status == "missing" and len(full) == 0:
        st.info("The shipped sample runs were not found (the `sample_runs/` folder is empty or missing), so the "
                "store starts empty. Upload your own traces below; the other pages fill in as soon as a run set "
                "is stored.")

    # ------------------------------------------------------------ upload
    with st.expander("Upload runs", expanded=len(full) == 0):
        with st.form("upload", clear_on_submit=True):
            files = st.file_uploader(
                "Trace files (htc-trace JSONL, OpenAI chat / call-log, Responses, completions, smolagents, "
                "ATIF, OpenTelemetry OTLP JSON or Phoenix spans; .json, .jsonl, .gz, .parquet)", accept_multiple_files=True, key="upload_files")
            labels = st.file_uploader("Labels file (optional): CSV or JSONL with id and success",
                                      type=["csv", "jsonl", "json", "tsv"], key="upload_labels")
            c1, c2, c3, c4 = st.columns(4)
            name = c1.text_input("Run set name", placeholder="defaults to the file names")
            dataset = c2.text_input("Dataset", placeholder="when the files do not say")
            model = c3.text_input("Model", placeholder="when the files do not say")
            framework = c4.text_input("Framework", placeholder="when the files do not say")
            submitted = st.form_submit_button("Upload and store", type="primary")
        if submitted:
            if not files:
                st.warning("Choose at least one trace file to upload.")
            else:
                run_name = name.strip() or ", ".join(f.name for f in files)[:120]
                st.session_state[ui.LAST_UPLOAD] = ui.handle_upload(
                    files, labels, name=run_name, fields={"dataset": dataset.strip(), "model": model.strip(),
                                                          "framework": framework.strip()})
                st.session_state[layout.SELECT_UPLOAD] = st.session_state[ui.LAST_UPLOAD]["run_set"]
                st.rerun()   # redraw the sidebar and lists with the new run set; the report stays in session state

    rep = st.session_state.get(ui.LAST_UPLOAD)
    if rep:
        st.subheader("Load report of the last upload")
        problem_table = import_views.problem_table(rep)
        if rep["kept"]:
            st.success(f"Stored {rep['kept']:,} trajectories from {len(rep['files'])} file(s) as run set "
                       f"“{ui.md(rep['name'])}”; it is now the selection (sidebar: Run sets).")
        else:
            st.error("Nothing was stored: no valid trajectory was found in the upload.")
        if rep["rejected"]:
            st.warning(f"Rejected {rep['rejected']:,} trajectories or files; the valid part was kept. Each problem "
                       "below names the file, the line and the reason.")
        if rep["duplicates"]:
            st.warning(f"{len(rep['duplicates'])} duplicate trajectory id(s) in this run set: the first copy of "
                       f"each was kept ({ui.md(', '.join(rep['duplicates'][:10]))}).")
        cols = st.columns(4)
        cols[0].metric("kept", f"{rep['kept']:,}")
        cols[1].metric("rejected", f"{rep['rejected']:,}")
        cols[2].metric("empty steps dropped", f"{rep['empty_steps_dropped']:,}")
        cols[3].metric("values clipped to 0", f"{rep['clipped_values']:,}")
        for line in import_views.import_details(rep):
            st.caption(ui.md(line))
        if len(problem_table):
            st.dataframe(views.blank_missing(problem_table, ["trajectory", "field", "value"], missing=""),
                         hide_index=True, width="stretch",
                         column_config={"reason": st.column_config.TextColumn("reason", width="large")})
            with st.expander("Every problem in full (reasons are not cut off here)"):
                st.text(import_views.problems_text(rep))
        if rep["problems_truncated"]:
            st.caption(f"{rep['problems_truncated']:,} more problems were not listed.")

    # ------------------------------------------------------- stored run sets
    ws = ui.guard()
    st.subheader("Stored run sets")
    sets = ui.store().list_run_sets()
    st.dataframe(sets.rename(columns={"success_rate": "success rate"}), hide_index=True, width="stretch",
                 column_config={"success rate": st.column_config.ProgressColumn(format="%.2f", min_value=0,
                                                                                max_value=1),
                                "created": st.column_config.DatetimeColumn("date", format="YYYY-MM-DD HH:mm")})
    with st.expander("Delete a run set"):
        labels_by_id = {r.id: f"{r.name} ({r.trajectories:,} trajectories, {r.id})" for r in sets.itertuples()}
        victim = st.selectbox("Run set", list(labels_by_id), format_func=labels_by_id.get, key="delete_choice")
        sure = st.checkbox("Yes, delete it with its cached features", key="delete_sure")
        if st.button("Delete run set", disabled=not sure, key="delete_button"):
            ui.store().delete_run_set(victim)
            st.session_state.pop(ui.LAST_UPLOAD, None)
            st.rerun()

    # ------------------------------------------------------------- browse
    st.subheader("Browse trajectories")
    table = scale.runs_table(ws)
    gac_option = "GAC (shipped, zero-shot)"
    evaluated = ui.cached_evaluation()
    if evaluated is None and url_state.linked("runs", "conf").endswith("(out-of-fold)") \
            and label_problem(ws.labels, for_evaluation=True) is None:
        evaluated = ui.evaluation(ws)     # the link shows out-of-fold confidences: compute them (progress bar)
    oof_options = [f"{m} (out-of-fold)" for m in ("HTC-Reduced", "HTC-Full")
                   if views.oof_column(evaluated, len(ws), m) is not None]
    conf_options = oof_options + views.browse_confidences(ws.baselines) + ["HTC-Full (fitted on the selection)",
                                                                            gac_option]
    cannot_fit = label_problem(ws.labels, for_evaluation=False)
    n_unlabeled = len(ws) - len(ui.labeled_positions(ws))
    scorer = adapted_scorer.adapted_scorer(ws)     # the GAC adapted to this selection's labels (Label page)
    in_use_option = "confidence in use"
    if scorer is not None:
        conf_options = [in_use_option, scorer.name, *conf_options]
    if n_unlabeled and scorer is not None:
        st.info(f"{n_unlabeled:,} of {len(ws):,} selected runs have no outcome label. They are scored by the "
                f"selection's {ui.md(scorer.name)} (its card below); the labeled runs by their out-of-fold "
                "confidence once the evaluation has run.")
        label_panels.scorer_card(ws, key="runs_card")
    elif n_unlabeled:
        st.info(f"{n_unlabeled:,} of {len(ws):,} selected runs have no outcome label. They are scored by "
                f"{experiments.GAC_NOTE}. Calibration and the honest evaluation need labels: "
                f"{experiments.LABELS_HOWTO}.")
        expected = adapt_views.gac_expected(ws)
        (st.warning if expected.flagged else st.info)(ui.md(f"GAC zero-shot on this selection: {expected.message()}"))
        shift = adapt_views.gac_shift(ws)
        if shift.shifted:
            st.warning(ui.md(shift.message(prior="gac")))
            with st.expander("Features that moved (standardized mean shift vs the GAC's training data)"):
                st.dataframe(adapt_views.shift_table(shift), hide_index=True)
    conf_default = 0 if scorer is not None else conf_options.index(gac_option) if cannot_fit else 0
    link = url_state.runs_params(ws.values("dataset"), ws.values("model"), explain.FLAGS, conf_options,
                                 sql_views.SORTABLE, sql_views.PAGE_SIZES)
    url_state.restore("runs", link)    # a pasted link's filters, sort and page (checked; junk is ignored)
    c1, c2, c3 = st.columns([2, 2, 1])
    f_ds = c1.multiselect("Dataset", ws.values("dataset"), key="browse_ds", placeholder="any")
    f_ms = c2.multiselect("Model", ws.values("model"), key="browse_ms", placeholder="any")
    f_label = c3.selectbox("Label", ["any", "success", "failure", "unlabeled"], key="browse_label")
    c4, c5, c6 = st.columns([2, 2, 2])
    f_conf = c4.selectbox("Confidence", conf_options, index=conf_default,
                          key="browse_conf")
    f_range = c5.slider("Confidence range", 0.0, 1.0, (0.0, 1.0), step=0.01, key="browse_range")
    f_text = c6.text_input("Search questions", key="browse_text", placeholder="words in the question or id")
    f_flags = st.multiselect("Structural flags (all must be raised)", list(explain.FLAGS), key="browse_flags",
                             format_func=explain.FLAGS.get, placeholder="any")
    if f_conf == gac_option and not n_unlabeled:
        st.caption(ui.md(f"GAC zero-shot on this selection: {adapt_views.gac_expected(ws).message()}"))
    conf_col, values = f_conf, None
    if f_conf.endswith("(out-of-fold)"):
        conf_col = f_conf.removesuffix(" (out-of-fold)") + " (OOF)"
        values = views.oof_column(evaluated, len(ws), f_conf.removesuffix(" (out-of-fold)"))
    fitted_full = f_conf.startswith("HTC-Full (fitted")      # not "HTC-Full (out-of-fold)"
    if fitted_full and cannot_fit is not None:
        st.info(f"HTC-Full cannot be fitted on this selection ({ui.md(cannot_fit)}); showing the shipped GAC's "
                "zero-shot confidence instead.")
        f_conf = gac_option
    if scorer is not None and f_conf == in_use_option:
        use = shown_conf.in_use(ws, np.arange(len(ws)), "reduced", evaluated)
        conf_col, values = "confidence in use", use.confidence
        names, counts = np.unique(np.asarray(use.scorer_names(), dtype=object).astype(str), return_counts=True)
        st.caption("Confidence in use, by scorer: " + ui.md("; ".join(f"{c:,} runs by {n}" for n, c in
                                                                     zip(names, counts))) + ".")
    elif scorer is not None and f_conf == scorer.name:
        conf_col, values = "adapted GAC", scorer.confidence()
        st.caption(f"{ui.md(scorer.name)} for every run; for the labeled ones this is in-sample (it was fitted on "
                   "their labels): their honest number is the out-of-fold one.")
    elif fitted_full and f_conf != gac_option:
        conf_col, values = "HTC-Full", views.calibrated_confidence(ui.fitted_model(ws, "full"), ws.features)
    elif f_conf == gac_option:
        scores = experiments.gac_scores(ws)
        conf_col, values = "GAC", scores.confidence
        counts = scores.counts()
        st.caption(f"GAC: {experiments.GAC_NOTE}. {counts['with_alternatives']:,} runs scored by its model for runs "
                   f"with alternatives, {counts['without_alternatives']:,} by the one without.")
    filters = dict(datasets=f_ds, models=f_ms, label=f_label, confidence=conf_col, values=values,
                   confidence_range=f_range, text=f_text, flags=f_flags)
    c7, c8, c9, c10 = st.columns([2, 1, 1, 1])
    # the option's words never name the column: a selectbox kept showing the name it had when its value was set
    # (after an upload, "confidence (HTC-Reduced (OOF))" over a table sorted by GlobalTrace-TP)
    f_sort = c7.selectbox("Sort by", ["confidence", *sql_views.SORTABLE], key="browse_sort",
                          format_func=lambda c: "confidence (the column chosen above)" if c == "confidence" else c)
    f_sort = conf_col if f_sort == "confidence" else f_sort
    f_desc = c8.toggle("Descending", key="browse_desc")
    f_size = c9.selectbox("Rows per page", sql_views.PAGE_SIZES, index=1, key="browse_page_size")
    first = table.page(**filters, sort=f_sort, descending=f_desc, limit=f_size, offset=0)
    url_state.within("browse_page", 1, first.pages)
    f_page = c10.number_input(f"Page (of {first.pages:,})", 1, first.pages, 1, key="browse_page")
    url_state.write(link)
    shown = first if f_page == 1 else table.page(**filters, sort=f_sort, descending=f_desc, limit=f_size,
                                                 offset=(int(f_page) - 1) * f_size)
    st.caption(f"{shown.total:,} of {len(ws):,} trajectories match; rows {shown.offset + 1:,}–"
               f"{min(shown.total, shown.offset + shown.limit):,} shown (filtered, sorted and paged in DuckDB). "
               "Select a row to open it in the inspector.")
    view = shown.rows[["key", "id", "dataset", "model", "success", conf_col, "flags", "steps", "tokens", "question",
                       "answer", "gold"]]
    event = st.dataframe(views.blank_missing(view, ["dataset", "model", "flags", "question", "answer", "gold"]),
                         hide_index=True, width="stretch", on_select="rerun",
                         selection_mode="single-row", key="browse_table",
                         column_config={"key": None, conf_col: st.column_config.NumberColumn(format="%.3f"),
                                        "flags": st.column_config.TextColumn(width="medium"),
                                        "question": st.column_config.TextColumn(width="large")})
    if shown.total and st.toggle("Prepare a CSV of these runs (the confidence in use and its scorer, out-of-fold "
                                 "confidences, question, answer, gold, flags, reasons, features)", key="browse_export"):
        picked = table.positions(**filters)
        with ui.timed_spinner(f"Explaining {len(picked):,} runs for the CSV", len(picked), kind="CSV export"):
            in_use = shown_conf.in_use(ws, picked, "full" if f_conf.startswith("HTC-Full") else "reduced",
                                       evaluated)
            csv = views.export_frame(ws, picked, in_use, evaluated).to_csv(index=False)
        st.download_button(f"Download {shown.total:,} runs as CSV", csv, file_name="htc-runs.csv", mime="text/csv",
                           key="browse_download")
    rows = event.selection.rows if event is not None else []
    if rows:
        key = view.iloc[rows[0]]["key"]
        if st.button(f"Open {ui.md(view.iloc[rows[0]]['id'])} in the inspector", key="browse_open"):
            ui.open_in_inspector(key)
