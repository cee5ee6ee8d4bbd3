"""The Label page's panels (Streamlit glue): the estimate with its interval and stop suggestion, zero-shot vs adapted
curves, the adapted model's card, the labels' CSV download, pending conflicts, and label rules with their preview.
The numbers come from :mod:`~htc_core.app.label_views` and :mod:`htc_core.label_rules`."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ..label_rules import ANSWER_KINDS, FIELD_OPS, AnswerRule, FieldRule, preview
from . import adapted_scorer, label_glue, session
from ..viz import plots
from .label_views import LabelQueueView
from .layout import md, md_code
from .workspace import Workspace

__all__ = ["estimate_panel", "download_panel", "conflicts_panel", "rules_panel", "scorer_card"]


def _point(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{v:.3f}"


def _interval(lo: float, hi: float) -> str:
    return "not defined yet" if not (np.isfinite(lo) and np.isfinite(hi)) else f"{lo:.3f} to {hi:.3f}"


def estimate_panel(ws: Workspace, view: LabelQueueView | None, job) -> None:
    n_lab = int(np.isfinite(ws.labels).sum())
    st.markdown(f"**{n_lab} of {len(ws):,} runs labeled**")
    if job is not None and job.is_running:
        _watch(job)
    elif job is not None and job.error:
        st.error(f"The refit failed: {md(job.error)}")
    if view is None:
        st.info("The GAC (zero-shot) picks the first runs; the adapted model and its estimate appear after the "
                "first labels of both outcomes.")
        return
    st.caption(f"Estimate from the refit on {view.n_labeled} labels ({md(view.created)}).")
    est, zero = view.estimate, view.zero_shot_estimate
    if est is not None:
        c = st.columns(3)
        for col, name, (v, lo, hi) in zip(c, ("ECE, adapted", "AUROC, adapted", "ECE, GAC zero-shot"),
                                          ((est.ece, est.ece_low, est.ece_high),
                                           (est.auroc, est.auroc_low, est.auroc_high),
                                           (zero.ece, zero.ece_low, zero.ece_high))):
            col.metric(name, _point(v))
            col.caption(f"90% interval {_interval(lo, hi)}")
        noise = (f", corrected for the noise of {est.n} labels (what {est.n} labels of a perfectly calibrated model "
                 "would show, bin by bin, is taken off)") if est.debiased else " (plain, not corrected for label noise)"
        st.caption(f"ECE estimated from {est.n} labels{noise}. Out-of-fold: each labeled run scored by the GAC adapted "
                   "to the other labeled runs; 90% intervals by bootstrap over the labels so far.")
    (st.success if view.stop.startswith("enough") else st.info)(md(view.stop))
    if view.curves:
        st.plotly_chart(plots.reliability_figure(view.curves, height=420), key="label_curves")
    if view.model is not None:
        with st.expander("Adapted model (the selection's scorer)", expanded=False):
            st.markdown(f"GAC adapted to **{view.n_labeled} labels** on {md(view.created)}; choice: "
                        f"{md(view.choice)}. Saved in the store as model "
                        f"`{md(label_glue.saved_model_id(ws) or 'pending')}`.")
            for n in view.notes + list(view.model.adaptation_.get("notes", [])):
                st.caption(md(n))


def scorer_card(ws: Workspace, *, key: str = "scorer_card", actions: bool = False):
    """The selection's adapted scorer named, with its card; with ``actions``: save it in the store (a copy no later
    refit replaces) and download it as the model file ``htc score MODEL_FILE RUNS`` reads. Returns the scorer or None."""
    scorer = adapted_scorer.adapted_scorer(ws)
    if scorer is None:
        return None
    st.caption(f"The selection's scorer: **{md(scorer.name)}**. It scores every run of this selection that no "
               "evaluation held out, on Runs, Examples, the inspector, the CSV export and the HTML report.")
    with st.expander(f"Card of {md(scorer.name)}", expanded=actions):
        for line in scorer.card_lines():
            st.markdown("- " + md_code(line))     # its `htc fit ...` command and model id as code
        if not actions:
            return scorer
        c = st.columns(2)
        if c[0].button("Save in the store", key=f"{key}_save",     # short: the card's half column holds it whole
                       help="Save the adapted model in the store: a copy that stays when more labels refit the "
                            "selection's scorer"):
            st.session_state[f"{key}_saved"] = (adapted_scorer.keep(scorer), scorer.name)
        c[1].download_button("Download (JSON)", adapted_scorer.model_file_text(scorer),
                             help="The adapted model as the JSON model file `htc score` reads",
                             file_name="htc-adapted-gac.json", mime="application/json", key=f"{key}_download")
        saved = st.session_state.get(f"{key}_saved")
        if saved:
            st.success(f"Saved in the store as model `{md(saved[0])}` ({md(saved[1])}); the Calibration page lists "
                       "it under the models saved. Score new runs with the downloaded file: "
                       "`htc score htc-adapted-gac.json RUNS --out scores.csv`.")
    return scorer


def _watch(job) -> None:
    """While the refit runs: its progress, polled every second; when it ends, the page runs again to show it."""
    @st.fragment(run_every=1.0)
    def watch() -> None:
        if not job.is_running:
            st.rerun()
        st.caption(f"Refitting after the newest label: {md(job.message or 'started')} ({job.fraction:.0%})")

    watch()


def download_panel(ws: Workspace) -> None:
    run_sets = sorted({str(r) for r in ws.run_set})
    csv = label_glue.labels().export_csv(run_sets)
    st.download_button("Download the labels (CSV)", csv, file_name="labels.csv", mime="text/csv",
                       key="label_download")
    hist = label_glue.labels().history(run_sets)
    if len(hist):
        with st.expander(f"Label history ({len(hist)} {'entry' if len(hist) == 1 else 'entries'})"):
            st.dataframe(hist.tail(200), hide_index=True, width="stretch")


def conflicts_panel(ws: Workspace) -> None:
    run_sets = sorted({str(r) for r in ws.run_set})
    c = label_glue.labels().conflicts(run_sets)
    if c.empty:
        return
    st.warning(f"{len(c)} labels disagree with the label a run already carries; none is applied until you choose.")
    for k, row in c.head(20).iterrows():
        cols = st.columns([3, 1, 1])
        cols[0].markdown(f"{md(row['id'])}: now **{md(row['current'])}** ({md(row['current_source'])}), proposed "
                         f"**{md(row['proposed'])}** ({md(row['proposed_source'])})")
        if cols[1].button("Keep", key=f"conf_keep_{k}"):
            label_glue.labels().resolve(row["run_set"], row["id"], accept=False)
            st.rerun()
        if cols[2].button("Use proposed", key=f"conf_use_{k}"):
            label_glue.labels().resolve(row["run_set"], row["id"], accept=True)
            st.rerun()


def _rule_from_widgets():
    src = st.radio("Derive from", ["answer vs gold", "a metadata field"], horizontal=True, key="rule_src")
    if src == "answer vs gold":
        kind = st.selectbox("Comparison", ANSWER_KINDS, index=1, key="rule_kind")
        c = st.columns(3)
        abs_tol = c[0].number_input("absolute tolerance", 0.0, value=0.0, key="rule_abs") if kind == "numeric" else 0.0
        rel_tol = c[1].number_input("relative tolerance", 0.0, value=0.0, key="rule_rel") if kind == "numeric" else 0.0
        pattern = c[2].text_input("pattern ({gold} = the gold)", key="rule_pat") if kind == "regex" else ""
        return AnswerRule(kind, abs_tol=float(abs_tol), rel_tol=float(rel_tol), pattern=pattern or None)
    c = st.columns(3)
    name = c[0].text_input("field", value="reward", key="rule_field")
    op = c[1].selectbox("test", FIELD_OPS, key="rule_op")
    t = c[2].number_input("threshold", value=0.0, key="rule_t") if op != "truthy" else 0.0
    return FieldRule(name.strip() or "reward", op, float(t))


def rules_panel(ws: Workspace) -> None:
    with st.expander("Label by rule (from the runs' own fields)"):
        try:
            rule = _rule_from_widgets()
        except ValueError as e:
            st.error(md(str(e)))
            return
        meta = ws.frame()
        p = preview(rule, meta)
        st.markdown(f"**{md(p.rule)}**: {p.n_success} successes, {p.n_failure} failures, "
                    f"{len(meta) - p.n_success - p.n_failure} runs left unlabeled"
                    + (" (" + md(", ".join(f"{k}: {v}" for k, v in p.unlabeled.items())) + ")" if p.unlabeled else ""))
        c = st.columns(2)
        c[0].caption("Sample of successes")
        c[0].dataframe(p.success_examples, hide_index=True, width="stretch")
        c[1].caption("Sample of failures")
        c[1].dataframe(p.failure_examples, hide_index=True, width="stretch")
        n = p.n_success + p.n_failure
        if n and st.button(f"Write these {n} rule labels", key="rule_write"):
            done = _write_rule(ws, p.labels, p.rule)
            st.success(md(done))


def _write_rule(ws: Workspace, y: np.ndarray, rule: str) -> str:
    rows = np.flatnonzero(np.isfinite(y))
    out = []
    for rs in sorted({str(ws.run_set[i]) for i in rows}):
        sel = [i for i in rows if str(ws.run_set[i]) == rs]
        res = label_glue.labels().record(rs, [str(ws.ts.ids[i]) for i in sel],
                                         ["success" if y[i] == 1 else "failure" for i in sel], source="rule",
                                         note=rule)
        out.append(res.summary())
    session.store()   # the revision changed: the next run of the page reads the new labels
    return "; ".join(out)
