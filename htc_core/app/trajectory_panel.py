"""The inspector's "whole trajectory" panel: draws a :class:`~htc_core.app.trajectory_view.TrajectoryView`.

Every trace text is untrusted: it goes through ``st.text``/``st.code`` (shown as is) or ``layout.md`` (escaped
markdown), and the coloured tokens are HTML-escaped one by one. Long texts show a preview that says how much
is left, and the whole text in a fold below it.
"""

from __future__ import annotations

import html

import streamlit as st

from ..explain import format_confidence
from .layout import md, wrapping_row
from ..viz.plots import probability_color
from .trajectory_view import StepView, TrajectoryView, bounded, change_words, preview

__all__ = ["render_answer", "render_steps", "token_html", "strip_html", "show_text"]

#: characters of one token put on the page (a hostile token can be a megabyte)
TOKEN_ON_PAGE = 200

MARK = "outline: 2px solid #b00020; outline-offset: 1px; font-weight: 700;"


def token_html(tokens, probability, marked=()) -> str:
    """Tokens as spans coloured by probability (value on hover); the ``marked`` positions are outlined. Every
    token is HTML-escaped, so trace text can never become markup."""
    marked = set(marked)
    parts = ['<div style="font-family: monospace; font-size: 0.85rem; line-height: 1.9; white-space: pre-wrap; '
             'word-break: break-word;">']
    for j, (t, p) in enumerate(zip(tokens, probability)):
        t = t if len(t) <= TOKEN_ON_PAGE else f"{t[:TOKEN_ON_PAGE]}… ({len(t):,} characters)"
        txt = html.escape(t, quote=True) if t != "" else "␣"
        txt = txt.replace("\n", "↵\n")
        extra = MARK if j in marked else ""
        tip = f"p = {float(p):.3f}" + (" (lowest of this step)" if j in marked else "")
        parts.append(f'<span title="{tip}" style="background:{probability_color(p)}; border-radius:3px; '
                     f'padding:1px 1px; margin:0 1px; {extra}">{txt}</span>')
    parts.append("</div>")
    return "".join(parts)


def strip_html(probability, marked=()) -> str:
    """A heat strip for steps whose source kept no token strings: one cell per token in order, coloured by its
    probability (value and position on hover), the ``marked`` positions outlined. Only numbers go into it."""
    marked = set(marked)
    n = len(probability)
    width = max(3, min(14, 900 // max(n, 1)))
    parts = ['<div style="display:flex; flex-wrap:wrap; gap:1px; align-items:center;">']
    for j, p in enumerate(probability):
        extra = MARK if j in marked else ""
        tip = f"token {j + 1} of {n}: p = {float(p):.3f}" + (" (lowest of this step)" if j in marked else "")
        parts.append(f'<span title="{tip}" style="display:inline-block; width:{width}px; height:18px; '
                     f'background:{probability_color(p)}; {extra}"></span>')
    parts.append("</div>")
    return "".join(parts)


def show_text(text: str, key: str, what: str, prefix: str = "") -> None:
    """``st.text`` of an untrusted text that may be huge: at most :data:`TEXT_ON_PAGE` characters go on the
    page, long lines wrapped (:func:`bounded`); the whole text is one click away as a download."""
    shown, cut = bounded(text)
    st.text(prefix + shown)
    if cut:
        st.caption(f"The {md(what)} has {len(text):,} characters; shown: its start, lines over "
                   "1,000 characters wrapped.")
        st.download_button(f"Download all of the {what} ({len(text):,} characters)",
                           data=text.encode("utf-8", errors="replace"), file_name=f"{key}.txt", mime="text/plain",
                           key=f"dl_{key}", on_click="ignore")


def render_answer(view: TrajectoryView, *, widths: tuple[int, int] = (460, 460), key: str = "answer_boxes") -> None:
    """Question, then the final answer next to the gold answer (the plain fact first when there is none).

    The two boxes are ``widths`` px wide (at most their column's width) and wrap: next to each other where both fit,
    one under the other where not (Side by side's half page at 900 px: two 100 px boxes held five words a line)."""
    show_text(view.question or "—", "question", "question", prefix="Question: ")
    left, right = wrapping_row(key, *widths)
    with left.container(border=True):
        st.markdown("**Final answer**")
        show_text(view.answer if view.answered else "— no final answer (the run ended without one)", "answer",
                  "final answer")
    with right.container(border=True):
        st.markdown(f"**Gold answer** · the answer is **{view.verdict}**")
        show_text(view.gold if view.gold is not None and str(view.gold).strip() else "— (no gold answer recorded)",
                  "gold", "gold answer")


def _long_text(label: str, text: str | None, key: str) -> None:
    """``text`` under a caption, whole when short, else a preview plus the whole text in a fold (a download when
    it is too long for the page)."""
    if text is None:
        return
    head, rest = preview(text)
    st.caption(label)
    if not rest:
        show_text(text, key, label.lower())
        return
    st.text(bounded(head)[0] + f"  … ({rest:,} more characters)")
    with st.expander(f"show all of the {md(label.lower())} ({len(text):,} characters)"):
        show_text(text, key, label.lower())


def _summary(s: StepView) -> str:
    """One line per step, always on screen: confidence after it, the tool call and the observation's start."""
    bits = [f"**Step {s.step}** · {md(s.name or 'step')}"]
    if s.confidence is not None:
        bits.append(f"confidence after it {format_confidence(s.confidence)}{change_words(s.change)}")
    if s.tool_call is not None:
        head, rest = preview(s.tool_call, chars=200, lines=1)
        bits.append(f"tool {md(head)}" + (f" … (+{rest:,} chars)" if rest else ""))
    if s.observation is not None:
        head, rest = preview(s.observation, chars=160, lines=1)
        bits.append(f"observation: {md(head)}" + (f" … (+{rest:,} chars)" if rest else ""))
    if s.error is not None:
        bits.append("**error**")
    if s.latency_s is not None:
        bits.append(f"{s.latency_s:.2f} s")
    return " · ".join(bits)


def _step_body(s: StepView, key: str) -> None:
    if s.input is not None:
        head, rest = preview(s.input, chars=200, lines=3)
        if rest:
            with st.expander(f"Input that came in ({len(s.input):,} characters)"):
                show_text(s.input, f"{key}_in", "input")
        else:
            st.caption("Input that came in")
            st.text(s.input)
    if s.has_token_text:
        st.caption("Model output, tokens coloured by probability (red low, green high; the lowest outlined; hover "
                   "for the value)")
        st.html(token_html(s.tokens, s.probability, s.marked))
    else:
        _long_text("Model output (this source kept no token strings)", s.output, f"{key}_out")
        st.caption(f"Token probabilities in order, one cell per token ({s.n_tokens:,}; red low, green high; the "
                   "lowest outlined; hover for position and value)")
        st.html(strip_html(s.probability, s.marked))
    if s.lowest:
        st.caption("Lowest-probability token(s): " + ", ".join(md(t if len(t) <= 2 * TOKEN_ON_PAGE else
                                                                 t[:2 * TOKEN_ON_PAGE] + "…") for t in s.lowest_text))
    if len(s.probability) < s.n_tokens and s.has_token_text:
        st.caption(f"{s.n_tokens - len(s.probability):,} more tokens of this step are not coloured (the inspector "
                   "colours the first 4,000 of a run); the whole output text:")
        show_text(s.output or "", f"{key}_outall", "output")
    if s.tool_call is not None:
        st.caption("Tool call")
        shown, cut = bounded(s.tool_call)
        st.code(shown + (f"\n… ({len(s.tool_call):,} characters in all)" if cut else ""), language=None)
    _long_text("Observation (tool result)", s.observation, f"{key}_obs")
    _long_text("Error", s.error, f"{key}_err")


def render_steps(view: TrajectoryView, *, key: str = "traj") -> None:
    """Every step: its summary line, and its body open (the steps that lowered the confidence most, the last
    one, every step of a short failed run) or in a fold."""
    if not view.fields:
        st.caption("This source kept no inputs, tool calls or observations: only each step's generated text.")
    for s in view.steps:
        st.markdown(_summary(s))
        if s.open:
            with st.container(border=True):
                _step_body(s, f"{key}_{s.step}")
        else:
            with st.expander(f"Step {s.step} · {md(s.name or 'step')} in full"):
                _step_body(s, f"{key}_{s.step}")
