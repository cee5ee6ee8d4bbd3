"""Examples: where HTC changed the verdict of a single-signal baseline (like the paper's qualitative examples),
and HTC's own worst mistakes (most confident failures, least confident successes)."""

import streamlit as st

from htc_core.app import opening   # nothing but Streamlit: costs nothing

opening.say("Examples")   # the title before this page's imports (or, on a new server's first request, a notice)

import numpy as np

from htc_core import explain
from htc_core.app import experiments, label_panels, ui, url_state, views
from htc_core.calibration.evaluation import EvaluationError, label_problem

ui.require_app("examples")

with ui.page_errors("examples"):
    ws = ui.guard()
    scorer = label_panels.scorer_card(ws, key="ex_card")     # the GAC adapted on the Label page, when there is one
    if scorer is not None and not np.all(np.isfinite(ws.labels)):
        st.subheader(f"Unlabeled runs by {ui.md(scorer.name)}")
        doubted, trusted = views.unlabeled_extremes(ws, scorer.confidence(), 4)
        for col, title, frame in zip(st.columns(2), ("Doubted most: check these first", "Trusted most"),
                                     (doubted, trusted)):
            with col:
                st.markdown(f"**{title}**")
                for i, row in frame.iterrows():
                    with st.container(border=True):
                        st.caption(f"{ui.md(row['id'])} · {ui.md(row['dataset'])} · {ui.md(row['model'])}")
                        st.text(f"Question: {ui.isolate(row['question'] or '—')}")
                        st.text(f"Answer:   {ui.isolate(row['answer'] or '— (no final answer)')}\n"
                            f"Gold:     {ui.isolate(row['gold'] or '—')}")
                        st.metric(f"confidence ({scorer.name})", explain.format_confidence(row["confidence"]))
                        if st.button("Open in the inspector", key=f"ex_unl_{title[:5]}_{i}"):
                            ui.open_in_inspector(row["key"])
        st.divider()
    cannot_evaluate = label_problem(ws.labels, for_evaluation=True)
    if cannot_evaluate:
        st.info(f"Examples need the cross-validated evaluation, which cannot run on this selection: "
                f"{ui.md(cannot_evaluate)}. To evaluate, {experiments.LABELS_HOWTO}.")
        st.stop()
    try:
        ev = ui.evaluation(ws)
    except EvaluationError as e:
        st.warning(f"Examples need the cross-validated evaluation, which cannot run on this selection: {ui.md(str(e))}")
        st.stop()
    res = ev.result
    htc_methods, _ = views.split_methods(res.methods)
    base_methods = views.example_baselines(res)
    if not htc_methods or not base_methods:
        st.info("Examples need HTC and at least one baseline in the evaluation.")
        st.stop()
    link = url_state.examples_params(base_methods, htc_methods)
    url_state.restore("examples", link)      # a pasted link's choice (checked; junk is ignored)
    c1, c2, c3 = st.columns([2, 2, 1])     # a number needs less room than a method name ("LowestGroup+…")
    baseline = c1.selectbox("Baseline", base_methods,
                            index=views.preferred_baseline(base_methods, res.strongest_baseline()), key="ex_baseline",
                            help="Starts on the strongest baseline by Brier score. A rescaled baseline (+Platt, +Iso, "
                                 "+Temp) can err both ways; raw token probabilities are almost always high, so they "
                                 "show over-confidence only.")
    htc = c2.selectbox("HTC model", htc_methods, key="ex_htc")
    n = c3.number_input("Per side", min_value=1, max_value=20, value=4, key="ex_n",
                        help="How many examples each side shows (and each list of worst mistakes)")
    url_state.write(link)
    st.caption("Confidences are out-of-fold predictions (first repeat of the honest evaluation): no trajectory was "
               "scored by a model that saw it.")
    exs = views.examples_for(ws, ev, baseline=baseline, htc=htc, n=int(n))
    left, right = ui.wrapping_row("ex_sides", 460, 460)     # side by side at 1440 px, one a row at 900 px
    for col, title, frame, empty, better in (
            (left, "Over-confident failures: baseline high, HTC low, wrong", exs.over,
             "No failure got a lower confidence from HTC than from the baseline.", "inverse"),
            (right, "Under-confident successes: baseline low, HTC high, right", exs.under,
             "No success got a higher confidence from HTC than from the baseline.", "normal")):
        with col:
            st.subheader(title)
            if frame.empty:
                st.info(empty)
            for i, row in frame.iterrows():
                with st.container(border=True):
                    st.caption(f"{ui.md(row['id'])} · {ui.md(row['dataset'])} · {ui.md(row['model'])}")
                    st.text(f"Question: {ui.isolate(row['question'] or '—')}")
                    st.text(f"Answer:   {ui.isolate(row['answer'] or '— (no final answer)')}\n"
                            f"Gold:     {ui.isolate(row['gold'] or '—')}")
                    # each metric as wide as its words, wrapping (three columns in a half page cut them to "0…")
                    m = st.container(horizontal=True, gap="medium", key=f"ex_metrics_{title[:5]}_{i}")
                    m.metric(f"{baseline}", explain.format_confidence(row["baseline"]), width="content")
                    m.metric(f"{htc}", explain.format_confidence(row["htc"]), delta=f"{row['change']:+.2f}",
                             delta_color=better, width="content")   # green: the change moved towards the outcome
                    m.metric("outcome", "success" if row["success"] == 1 else "failure", width="content")
                    if st.button("Why? Open in the inspector", key=f"ex_open_{title[:5]}_{i}"):
                        ui.open_in_inspector(row["key"])

    st.divider()
    st.subheader(f"{htc}'s own worst mistakes")
    st.caption("The failures it was most confident about and the successes it doubted most, by out-of-fold "
               "confidence, with each run's structural flags and, from the fold model that gave that confidence, "
               "the strongest reason that pushed it the wrong way: up for a failure, down for a success (the "
               "inspector explains the same number).")
    worst = views.mistakes_for(ws, ev, htc=htc, n=int(n))
    left, right = ui.wrapping_row("ex_worst_sides", 460, 460)
    for col, title, frame in ((left, "Most confident failures", worst.confident_failures),
                              (right, "Least confident successes", worst.doubted_successes)):
        with col:
            st.markdown(f"**{title}**")
            if frame.empty:
                st.info("None in this selection.")
            for i, row in frame.iterrows():
                with st.container(border=True):
                    st.caption(f"{ui.md(row['id'])} · {ui.md(row['dataset'])} · {ui.md(row['model'])}")
                    st.text(f"Question: {ui.isolate(row['question'] or '—')}")
                    st.text(f"Answer:   {ui.isolate(row['answer'] or '— (no final answer)')}\n"
                            f"Gold:     {ui.isolate(row['gold'] or '—')}")
                    st.metric(f"{htc} (out-of-fold)", explain.format_confidence(row["confidence"]))
                    if row["flags"]:
                        st.warning("Flags: " + ui.md(row["flags"]))
                    if "reason" in row:
                        st.caption("Top reason for the mistake: " + ui.md(row["reason"]))
                    if st.button("Open in the inspector", key=f"ex_worst_{title[:5]}_{i}"):
                        ui.open_in_inspector(row["key"])
