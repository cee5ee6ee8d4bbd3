"""Trajectory inspector: why this confidence (steps, tokens, contributions, position, reasons)."""

import numpy as np
import streamlit as st

from htc_core.app import ui
from htc_core import explain
from htc_core.app import plots
from htc_core.app.workspace import browse

ui.require_app("inspector")
st.title("Trajectory inspector")

with ui.page_errors("inspector"):
    ws = ui.guard()
    keys = ws.keys
    wanted = st.session_state.get(ui.INSPECT)
    pos = ws.position_of(wanted)
    c1, c2 = st.columns([2, 1])
    needle = c1.text_input("Find a trajectory (id or words of the question)", key="insp_search")
    frame = ws.frame()
    if needle:
        cand = browse(frame, text=needle)["position"].to_numpy()
    else:
        cand = np.arange(len(ws))
    cand = cand[:2000]
    if len(cand) == 0:
        st.info("No trajectory matches the search.")
        st.stop()
    if pos is not None and pos in set(cand.tolist()):
        default = int(np.flatnonzero(cand == pos)[0])
    elif pos is not None and not needle:
        cand = np.concatenate([[pos], cand])
        default = 0
    elif needle:
        default = 0
    else:   # nothing chosen yet: start on the longest trajectory (the richest timeline)
        default = int(np.argmax(frame["steps"].to_numpy()[cand]))
    chosen = c1.selectbox("Trajectory", cand.tolist(), index=default,
                          format_func=lambda p: f"{frame['id'].iat[p]} · {str(frame['question'].iat[p] or '')[:80]}",
                          key=f"insp_pick_{wanted}_{needle}")
    i = int(chosen)
    st.session_state[ui.INSPECT] = str(keys[i])
    variant = c2.radio("Explained by", ["reduced", "full"], format_func=lambda v: f"HTC-{v.capitalize()}",
                       horizontal=True, key="insp_variant")

    row = frame.iloc[i]
    outcome = {1.0: "success", 0.0: "failure"}.get(row["success"], "unlabeled")
    st.caption(f"{ui.md(row['id'])} · dataset {ui.md(row['dataset'])} · model {ui.md(row['model'])} · "
               f"framework {ui.md(row['framework'])} · {row['steps']} steps · {row['tokens']} tokens · {outcome}")
    st.text(f"Question: {row['question'] or '—'}")
    st.text(f"Answer:   {row['answer'] or '—'}\nGold:     {row['gold'] or '—'}")

    n_lab = len(ui.labeled_positions(ws))
    expl = None
    if n_lab >= 10:
        model = ui.fitted_model(ws, variant)
        expl = explain.explain_trajectory(model, ws.features, i, labels=ws.labels,
                                          groups=ws.ts.meta["dataset"].to_numpy(dtype=object), ids=ws.ts.ids)
    m = st.columns(4)
    if expl is not None:
        m[0].metric(f"HTC-{variant.capitalize()} confidence", f"{expl.confidence:.2f}")
    oof = ui.cached_evaluation()
    if oof is not None:
        hit = np.flatnonzero(oof.positions == i)
        meth = f"HTC-{variant.capitalize()}"
        if hit.size and meth in oof.result.oof:
            m[1].metric("out-of-fold (honest)", f"{oof.result.oof[meth][hit[0]]:.2f}")
    m[2].metric("GlobalTrace-TP", f"{row['GlobalTrace-TP']:.2f}")
    m[3].metric("LastStep-TP", f"{row['LastStep-TP']:.2f}")

    if expl is not None:
        st.subheader("Why this confidence")
        with st.container(border=True):
            st.markdown(f"**Calibrated confidence {expl.confidence:.2f}** (logit {expl.logit:+.2f}). "
                        "Strongest reasons, compared with " + ui.md(expl.reference) + ":")
            for r in expl.reasons or ["No feature moves this trajectory far from the model's intercept."]:
                st.markdown("- " + ui.md(r))
    else:
        st.info("At least 10 labeled trajectories are needed to fit a calibrator and explain a confidence.")

    st.subheader("Step timeline")
    s = ui.settings()
    timeline = explain.step_timeline(ws.ts, i, profile=s["profile"], top_k=s["top_k"])
    st.plotly_chart(plots.step_timeline_figure(timeline), key="insp_timeline")
    with st.expander("Step statistics"):
        st.dataframe(timeline, hide_index=True, width="stretch")

    if expl is not None:
        left, right = st.columns([3, 2])
        with left:
            st.markdown("**Contributions to the logit** (weight × standardized value, largest first)")
            st.plotly_chart(plots.waterfall(expl), key="insp_waterfall")
        with right:
            st.markdown(f"**Against its dataset** ({ui.md(row['dataset'])}, HTC-{variant.capitalize()} confidence)")
            same = np.flatnonzero(ws.ts.meta["dataset"].to_numpy(dtype=object) == ws.ts.meta["dataset"].iat[i])
            conf_all = model.predict_proba(ws.features.take(same))[:, 1]
            pct = explain.percentile_of(expl.confidence, conf_all)
            st.plotly_chart(plots.position_figure(conf_all, ws.labels[same], expl.confidence), key="insp_position")
            st.caption(f"Higher than {pct:.0f}% of the {len(same):,} trajectories of this dataset.")
        with st.expander("All feature contributions"):
            st.dataframe(expl.table, hide_index=True, width="stretch")

    st.subheader("Tokens by probability")
    st.caption("Each token is coloured by its probability (red low, green high; hover for the value). Text is shown "
               "escaped, exactly as generated.")
    steps = explain.token_steps(ws.ts, i, profile=s["profile"], top_k=s["top_k"])
    for stp in steps:
        lo = float(np.min(stp.probability)) if len(stp.probability) else float("nan")
        with st.expander(f"Step {stp.step} · {stp.name or 'step'} · {len(stp.tokens)} tokens · lowest p {lo:.2f}",
                         expanded=stp.step == len(steps)):
            st.html(plots.token_html(stp.tokens, stp.probability))
            if not stp.has_token_text:
                st.caption("The source has no token strings; squares stand for the tokens.")
