"""Streamlit glue of labeling: the label bar (evidence first, Success / Failure / Skip with keyboard shortcuts), the
queue's background refit, conflicts, the estimate panel and rules. Used by ``pages/label.py`` and, for the label
bar alone, the inspector (:func:`label_bar`).

After each label the store's revision changes, the selection's content digest with it, and :func:`queue` starts
(or joins) a background job (:mod:`~htc_core.app.jobs`) that adapts the GAC to the labels and estimates it
(:func:`~htc_core.app.label_views.compute_queue`); meanwhile the page keeps proposing from the previous refit, so a
label never waits for a fit. The adapted model is saved in the store with its card and becomes the selection's
scorer on the Label page and the label bar (setting ``label-model:<selection>``).
"""

from __future__ import annotations

import threading

import numpy as np
import streamlit as st

from ..calibration.adapt import named_prior
from . import adapted_scorer, experiments, jobs, session, trajectory_view
from .label_store import LabelStore
from .label_views import LabelQueueView, compute_queue, evidence, model_card
from .layout import md
from .workspace import Workspace

__all__ = ["labels", "labeled_from_files", "queue", "next_position", "label_bar", "selection_key", "KEYS", "NO_BG_EVAL", "saved_model_id",
           "record", "adapted_confidence", "current_confidence", "shown_position", "skip_shown", "inspector_label_bar", "conflict_prompt"]

#: keyboard shortcuts of the label buttons
KEYS = {"success": "s", "failure": "f", "skip": "x", "previous": "p", "next": "n"}
#: session-state flag: the page that set it asks app.py not to start the background evaluation on this run (the
#: Label page changes the labels at every click; the evaluation would restart each time)
NO_BG_EVAL = "htc_label_no_bg_eval"
SHOWN, SKIPPED = "label_shown", "label_skipped"
_RESULTS: dict = {}          # (data dir, selection key) -> (content digest, LabelQueueView)
_LOCK = threading.Lock()


@st.cache_resource(show_spinner=False)
def _label_store(data_dir: str) -> LabelStore:
    return LabelStore(session.get_store(data_dir))


def labels() -> LabelStore:
    return _label_store(session.data_dir())


def labeled_from_files(ws: Workspace) -> str | None:
    """When every run of the selection has a label and none came from a person or a rule (all from the runs' files
    or label files): what to do instead of a queue (a sentence); else None. Refitting the GAC over labels the
    evaluation already covers would only redo, slower, what the Calibration page measures."""
    if len(ws) == 0 or not np.all(np.isfinite(ws.labels)):
        return None
    cur = labels().current(sorted({str(r) for r in ws.run_set}))
    if cur["source"].isin(["person", "rule"]).any():
        return None
    return (f"Every run of this selection ({len(ws):,}) has a label from its files, so the queue has nothing to "
            "propose: the cross-validated evaluation on the Calibration page measures the calibration on all of "
            "them (and can adapt the GAC to them there). To label, upload runs without labels or choose a run set "
            "that has unlabeled runs in the sidebar.")


def selection_key(ws: Workspace) -> str:
    """The selection's runs (not their labels): a short hash of the run keys."""
    return adapted_scorer.selection_key(ws)


def _prior_inputs(ws: Workspace):
    """(features, the shipped GAC's sub-model for the selection's kind of runs)."""
    gac = experiments.shipped_gac()
    kinds = ws.stored.gac_kind if ws.stored is not None else gac.kinds(ws.ts)
    kind = "with_alternatives" if len(kinds) and np.all(np.asarray(kinds) == "with_alternatives") \
        else "without_alternatives"
    model = named_prior(gac.models[kind], f"{gac.name}/{kind}")     # adaptation_["prior"]: gac/<kind>
    same = (model.profile_, int(model.top_k_)) == (ws.profile, int(ws.top_k))
    X = ws.features if same else session.workspace_for_profile(model.profile_, model.top_k_).features
    return X, model


def queue(ws: Workspace) -> tuple[LabelQueueView | None, jobs.Job | None]:
    """(the newest refit of the selection's queue, the job refitting it now or None when the refit is current)."""
    skey, digest = (session.data_dir(), selection_key(ws)), ws.content_digest()
    with _LOCK:
        have = _RESULTS.get(skey)
    if have is not None and have[0] == digest:
        return have[1], None
    key = ("label-queue", digest)
    job = jobs.running(key)
    if job is not None and job.error is not None and not job.is_running:
        return (have[1] if have else None), job
    if job is None:
        X, prior = _prior_inputs(ws)
        y = np.array(ws.labels, dtype=np.float64)
        store, data_dir = session.store(), session.data_dir()

        def work(job: jobs.Job) -> None:
            view = compute_queue(X, y, prior, progress=lambda f, m: job.progress(int(f * 10), 10, m))
            if view.model is not None:
                _save_model(store, data_dir, skey[1], view)
            with _LOCK:
                _RESULTS[skey] = (digest, view)

        job = jobs.submit(f"{data_dir}#labels", key, "Adapting the GAC to the labels", work)
    return (have[1] if have else None), job


def _save_model(store, data_dir: str, skey: str, view: LabelQueueView) -> None:
    old = store.get_setting(f"label-model:{skey}")     # adapted_scorer.setting_key
    mid = store.save_model(model_card(view, selection=skey), name=f"GAC adapted to {view.n_labeled} labels")
    store.set_setting(f"label-model:{skey}", mid)
    if old:
        store.delete_model(old)


def saved_model_id(ws: Workspace) -> str | None:
    return session.store().get_setting(adapted_scorer.setting_key(ws))


def adapted_confidence(ws: Workspace, i: int) -> tuple[float, dict] | None:
    """Run ``i``'s confidence from the selection's scorer (the GAC adapted on the Label page, as saved with its
    card), or None while the selection has none."""
    scorer = adapted_scorer.adapted_scorer(ws)
    if scorer is None:
        return None
    return float(scorer.confidence([i])[0]), scorer.card


def next_position(ws: Workspace, view: LabelQueueView | None, *, skip: tuple = ()) -> int | None:
    """The first proposed run still unlabeled (and not skipped in this session); without a refit yet: the
    unlabeled run the default strategy picks on the shipped GAC's zero-shot confidences."""
    labeled = np.isfinite(ws.labels)
    if view is not None and len(view.positions):
        for p in view.positions:
            if p < len(labeled) and not labeled[p] and int(p) not in skip:
                return int(p)
    free = np.flatnonzero(~labeled)
    free = free[~np.isin(free, list(skip))] if skip else free
    if not len(free):
        return None
    from ..calibration.active import select

    scores = ws.stored.gac if ws.stored is not None else np.full(len(labeled), 0.5)
    mask = labeled.copy()
    if skip:
        mask[list(skip)] = True
    pick = select(np.nan_to_num(scores, nan=0.5), mask, 1)
    return int(pick[0]) if len(pick) else None


def shown_position(ws: Workspace, view: LabelQueueView | None) -> int | None:
    """The run the queue shows: the one shown before while it is still unlabeled and not skipped (a refit that
    ends between two runs of the page never swaps the run under the user's click), else :func:`next_position`."""
    skipped = tuple(st.session_state.get(SKIPPED, ()))
    shown = st.session_state.get(SHOWN)
    i = ws.position_of(shown) if shown else None
    if i is None or np.isfinite(ws.labels[i]) or i in skipped:
        i = next_position(ws, view, skip=skipped)
        st.session_state[SHOWN] = None if i is None else str(ws.keys[i])
    return i


def skip_shown(i: int) -> None:
    """Skip run ``i`` for the rest of this session (the queue moves on; a skip label is stored too)."""
    st.session_state[SKIPPED] = tuple(st.session_state.get(SKIPPED, ())) + (int(i),)


def current_confidence(ws: Workspace, view: LabelQueueView | None, i: int) -> float:
    """Run ``i``'s confidence: the newest refit's (adapted) or the shipped GAC's zero-shot one."""
    if view is not None and i < len(view.scores):
        return float(view.scores[i])
    return float(ws.stored.gac[i]) if ws.stored is not None else float("nan")


def record(ws: Workspace, i: int, value: str, *, note: str = "", force: bool = False):
    """Store a person's label for run ``i`` of the selection; returns the :class:`LabelWrite`."""
    return labels().record(str(ws.run_set[i]), [str(ws.ts.ids[i])], value, source="person", note=note, force=force)


def _run_evidence(ws: Workspace, i: int):
    """Run ``i``'s outcome evidence (:func:`~htc_core.app.label_views.evidence`), computed before the bar draws."""
    s = session.settings()
    one, j = ws.trajectory(i)
    return evidence(trajectory_view.trajectory_view(one, j, profile=s["profile"], top_k=s["top_k"]), ws.flags.of(i))


def _draw_evidence(ev) -> None:
    c = st.columns(2)
    c[0].markdown("**Final answer**")
    c[0].code(ev.answer if ev.answer is not None else "(none)", language=None, wrap_lines=True)
    c[1].markdown("**Gold**")
    c[1].code(ev.gold if ev.gold else "(not known)", language=None, wrap_lines=True)
    if ev.flags:
        st.warning("**Structural flags:** " + md("; ".join(ev.flags)))
    if ev.last_error:   # the run's own error text: shown as evidence, not as an error of the page
        st.markdown("**Last error in the run**")
        st.code(ev.last_error[:600], language=None, wrap_lines=True)
    if ev.last_observation:
        st.markdown("**Last observation**")
        st.code(ev.last_observation[:1200], language=None, wrap_lines=True)
    if ev.question:
        with st.expander("Question"):
            st.code(ev.question[:4000], language=None, wrap_lines=True)


def _bar_state(key: str, name: str):
    return st.session_state.get(f"{key}_{name}")


def _on_label(key: str, render: int, run_set: str, tid: str, position: int, value: str) -> None:
    """A label button's callback (a click or its key). Streamlit runs it at the start of the next run, before the
    page's body, so the label is stored even when that run is cut short by another rerun (the refit's progress
    poll, the next key): read from ``st.button``'s return value in the body it was lost then. ``render`` numbers
    the drawing of the bar the key was pressed on: a second key on the same drawing (pressed while the page was
    still drawing the next run, so the button still named the run just labeled) is refused, visibly, instead of
    relabeling that run."""
    if (_bar_state(key, "applied") or 0) >= render:
        st.session_state[f"{key}_refused"] = (tid, value)
        return
    st.session_state[f"{key}_applied"] = render
    res = labels().record(run_set, [tid], value, source="person")
    st.session_state[f"{key}_last"] = (tid, value, bool(res.conflicts))
    if res.conflicts:
        st.session_state[f"{key}_conflict"] = (run_set, tid, value)
    if value == "skip" and key == "queue":
        skip_shown(position)


def _on_move(key: str, render: int, inspect_key: str, target: str) -> None:
    """Previous / next: the inspector's shown run changes before the body draws it (same reasons as labels)."""
    if (_bar_state(key, "applied") or 0) >= render:
        st.session_state[f"{key}_refused"] = (target, "move")
        return
    st.session_state[f"{key}_applied"] = render
    st.session_state[inspect_key] = target


def _feedback(key: str) -> None:
    """What the last key did: the label stored, or why a key was refused (a toast: never silent)."""
    refused = st.session_state.pop(f"{key}_refused", None)
    if refused is not None:
        st.toast(f"Key not applied ({md(refused[1])}): the page was still drawing after the previous key, so it "
                 "would have gone to the run just labeled. Press it again for the run now shown.")
    last = _bar_state(key, "last")
    if last is not None:
        st.caption(f"Last label: {md(last[0])} → **{md(last[1])}**" + (" (a conflict to resolve)" if last[2] else ""))


def label_bar(ws: Workspace, i: int, *, key: str, navigate: bool = False, evidence_first: bool = True,
              inspect_key: str | None = None, heading=None, title: str | None = None):
    """The run's outcome evidence and its label buttons (``s`` success, ``f`` failure, ``x`` skip; with
    ``navigate``: ``p``/``n`` previous/next run, moving ``inspect_key``). The buttons act through callbacks
    (:func:`_on_label`): a key is applied once or refused visibly, never lost while the page redraws. Returns the
    value clicked in the run that applied it, or None.

    ``heading`` (a function drawing the run's title, or None) and the evidence are drawn above the buttons but sent
    to the browser after them (a slot kept for them, filled last, everything computed before the first element):
    Streamlit binds a button's keyboard shortcut when the button mounts in the browser, and the run's title used to
    show while its buttons were still on their way (up to a second under load), so a key pressed as soon as the run
    appeared reached no button and was lost without a trace. Now a run's title never shows before its keys are
    live, and the slot is emptied first, so the previous run's title and evidence are gone before its buttons
    are replaced (a key on those is refused, never applied to a run not on screen).

    ``title`` (plain text, escaped here with ``md``: it holds the run's id, trace text), when given, is the run's
    heading (h3), drawn above ``heading`` in one markdown element with the style of :func:`hide_until_buttons`, so the title is invisible
    until the bar's buttons are mounted in the browser (their keys live), even on a fresh tab whose button code is
    still loading."""
    ev = _run_evidence(ws, i) if evidence_first else None
    cur = labels().current([str(ws.run_set[i])])
    cur = cur[cur["id"] == str(ws.ts.ids[i])]
    now = "unlabeled" if cur.empty else f"{cur['value'].iat[0]} ({cur['source'].iat[0]})"
    scored = adapted_confidence(ws, i)
    slot = st.empty() if (heading is not None or ev is not None or title is not None) else None
    _feedback(key)
    render = int(_bar_state(key, "render") or 0) + 1
    st.session_state[f"{key}_render"] = render
    st.caption(f"Current label: **{md(now)}** · keys: s success, f failure, x skip"
               + (", p previous, n next" if navigate else "")
               + ("" if scored is None else f" · the selection's adapted GAC ({scored[1].get('labels_used', '?')} "
                                            f"labels, {md(scored[1].get('fitted', ''))}): {scored[0]:.2f}"))
    clicked = _buttons(ws, i, key=key, render=render, navigate=navigate, inspect_key=inspect_key,
                       current=None if cur.empty else str(cur["value"].iat[0]))
    if slot is not None:
        with slot.container(key=f"{key}_run"):
            st.markdown(hide_until_buttons(key) + ("" if title is None else f"\n\n### {md(title)}"),
                        unsafe_allow_html=True)
            if heading is not None:
                heading()
            if ev is not None:
                _draw_evidence(ev)
    return clicked


def hide_until_buttons(key: str) -> str:
    """A style that keeps the run's title and evidence (the container ``{key}_run``) invisible while no label button
    of the bar (in ``{key}_row``) is mounted in the browser.

    Streamlit's browser code loads its Button component lazily (one script file, fetched when the tab first draws a
    button; each element waits behind a skeleton until its code is there) while the title, a markdown element, is
    drawn at once. On a fresh tab (a deep link), every button of the page, the sidebar's included, was still a
    skeleton when the run's title showed, so a key pressed at the title had no shortcut to reach and did nothing
    (reproduced by delaying that file: docs/labeling.md). The style uses CSS ``:has()`` to look for a mounted
    ``<button>`` in the bar. Markdown with HTML is itself rendered by lazily loaded code (rehype-raw), so the title
    goes in the same markdown element as the style (``label_bar(..., title=)``): it cannot show before the style."""
    hide = f"body:not(:has(.st-key-{key}_row button)) .st-key-{key}_run"
    return f"<style>{hide}, {hide} * {{visibility: hidden !important;}}</style>"   # a markdown heading sets its own


def button_kind(value: str, current: str | None) -> str:
    """A label button's look: primary (chosen-looking) only for the run's current label, none when unlabeled;
    skip, the least used, is tertiary otherwise."""
    if value == current:
        return "primary"
    return "tertiary" if value == "skip" else "secondary"


def _buttons(ws: Workspace, i: int, *, key: str, render: int, navigate: bool, inspect_key: str | None,
             current: str | None):
    row = st.container(horizontal=True, gap="small", key=f"{key}_row")   # each as wide as its words; they wrap
    clicked = None
    target = (str(ws.run_set[i]), str(ws.ts.ids[i]), int(i))
    for value in ("success", "failure", "skip"):
        if row.button(value.capitalize(), key=f"{key}_{value}", shortcut=KEYS[value], type=button_kind(value, current),
                      on_click=_on_label, args=(key, render, *target, value),
                      help=f"Label this run {value}" + (" (its current label)" if value == current else "")):
            clicked = value
    if navigate:
        for name, j, off in (("Previous", i - 1, i <= 0), ("Next", i + 1, i >= len(ws) - 1)):
            row.button(name, key=f"{key}_{name.lower()[:4]}", shortcut=KEYS[name.lower()], disabled=off,
                       on_click=_on_move, args=(key, render, inspect_key, str(ws.keys[min(max(j, 0), len(ws) - 1)])))
    return clicked


def inspector_label_bar(ws: Workspace, i: int, inspect_key: str, heading=None) -> None:
    """The inspector's label bar: label run ``i``, or move to the previous / next run of the selection
    (``inspect_key``: the session key of the shown run). ``heading`` draws the run above the bar (its id, flags,
    answer and gold), sent after the buttons as in :func:`label_bar`."""
    label_bar(ws, i, key="insp_label", navigate=True, evidence_first=False, inspect_key=inspect_key, heading=heading)
    if conflict_prompt("insp_label"):
        st.rerun()


def conflict_prompt(key: str) -> bool:
    """A pending conflict of this session's last click: keep the file label or use the person's. True when
    one was resolved (the page reruns)."""
    pending = st.session_state.get(f"{key}_conflict")
    if not pending:
        return False
    run_set, tid, value = pending
    st.warning(f"Run {md(tid)} carries a file label that disagrees with **{md(value)}**: choose which holds.")
    c = st.columns(2)
    if c[0].button("Keep the file label", key=f"{key}_keep"):
        labels().resolve(run_set, tid, accept=False)
    elif c[1].button(f"Use {value}", key=f"{key}_use"):
        labels().resolve(run_set, tid, accept=True)
    else:
        return False
    st.session_state.pop(f"{key}_conflict")
    return True
