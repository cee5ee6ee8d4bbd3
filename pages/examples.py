"""Examples: where HTC changed the verdict of a single-signal baseline (like the paper's qualitative examples)."""

import streamlit as st

from htc_core.app import experiments, ui, views
from htc_core.calibration.evaluation import EvaluationError, label_problem

ui.require_app("examples")
st.title("Examples")

with ui.page_errors("examples"):
    ws = ui.guard()
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
    c1, c2, c3 = st.columns(3)
    baseline = c1.selectbox("Baseline", base_methods,
                            index=views.preferred_baseline(base_methods, res.strongest_baseline()), key="ex_baseline",
                            help="Starts on the strongest baseline by Brier score. A rescaled baseline (+Platt, +Iso, "
                                 "+Temp) can err both ways; raw token probabilities are almost always high, so they "
                                 "show over-confidence only.")
    htc = c2.selectbox("HTC model", htc_methods, key="ex_htc")
    n = c3.number_input("Examples per side", min_value=1, max_value=20, value=4, key="ex_n")
    st.caption("Confidences are out-of-fold predictions (first repeat of the honest evaluation): no trajectory was "
               "scored by a model that saw it.")
    exs = views.examples_for(ws, ev, baseline=baseline, htc=htc, n=int(n))
    left, right = st.columns(2)
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
                    st.text(f"Question: {row['question'] or '—'}")
                    st.text(f"Answer:   {row['answer'] or '—'}\nGold:     {row['gold'] or '—'}")
                    m1, m2, m3 = st.columns(3)
                    m1.metric(f"{baseline}", f"{row['baseline']:.2f}")
                    m2.metric(f"{htc}", f"{row['htc']:.2f}", delta=f"{row['change']:+.2f}",
                              delta_color=better)   # green: the change moved towards the true outcome
                    m3.metric("outcome", "success" if row["success"] == 1 else "failure")
                    if st.button("Why? Open in the inspector", key=f"ex_open_{title[:5]}_{i}"):
                        ui.open_in_inspector(row["key"])
