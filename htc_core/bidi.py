"""Bidirectional-text isolation of untrusted text (issue 30 #8).

A trace's dataset name, question or answer may hold Unicode bidi controls (U+202E RIGHT-TO-LEFT OVERRIDE and
kin) or right-to-left script. Shown inline, an unclosed override reverses the text that *follows* it (a report
header, a card's verdict), so a name could make "success" read "sseccus" or reorder numbers. :func:`isolate`
wraps such text in FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE (U+2068 ... U+2069) after closing every
embedding, override or isolate the text itself left open (and dropping a stray U+2069 that would close the
wrapper early), so its direction cannot leak out (Unicode Standard
Annex #9, isolates). Text with no bidi control and no right-to-left letter is returned unchanged.
"""

from __future__ import annotations

import re

__all__ = ["isolate", "needs_isolation"]

FSI, PDI, PDF = "\u2068", "\u2069", "\u202c"
_EMBEDDINGS = frozenset("\u202a\u202b\u202d\u202e")     # LRE RLE LRO RLO, closed by PDF
_ISOLATES = frozenset("\u2066\u2067\u2068")             # LRI RLI FSI, closed by PDI
# bidi controls (ALM, LRM, RLM, the embeddings, overrides and isolates) and right-to-left scripts
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc"
                   "\U00010800-\U00010fff\U0001e800-\U0001efff]")


def needs_isolation(text: str) -> bool:
    """Whether ``text`` holds a bidi control or a right-to-left letter.

    Parameters
    ----------
    text : str
        The text.

    Returns
    -------
    bool

    Examples
    --------
    >>> from htc_core.bidi import needs_isolation
    >>> needs_isolation("units"), needs_isolation("\\u05e9\\u05dc\\u05d5\\u05dd"), needs_isolation("a\\u202eb")
    (False, True, True)
    """
    return _BIDI.search(text) is not None


def _balanced(text: str) -> str:
    """``text`` without the PDIs that match no isolate it opened (they would close the isolate around it), then
    the PDF/PDI characters that close what it opened and left open, innermost first."""
    stack: list[str] = []
    out: list[str] = []
    for ch in text:
        if ch in _EMBEDDINGS:
            stack.append(PDF)
        elif ch in _ISOLATES:
            stack.append(PDI)
        elif ch == PDF and stack and stack[-1] == PDF:
            stack.pop()
        elif ch == PDI:
            if PDI not in stack:
                continue                          # a stray PDI: dropped
            del stack[len(stack) - 1 - stack[::-1].index(PDI):]   # closes its isolate and all opened inside
        out.append(ch)
    return "".join(out) + "".join(reversed(stack))


def isolate(text) -> str:
    """``text`` (str() of it) made direction-neutral for what surrounds it; unchanged when it needs nothing.

    Parameters
    ----------
    text : object
        The untrusted text (None gives ``""``).

    Returns
    -------
    str
        The text wrapped in FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE, with what it left open closed
        and a stray POP DIRECTIONAL ISOLATE dropped.

    Examples
    --------
    >>> from htc_core.bidi import isolate
    >>> isolate("units")
    'units'
    >>> isolate("\\u202eevil")                       # an unclosed RIGHT-TO-LEFT OVERRIDE, closed and isolated
    '\\u2068\\u202eevil\\u202c\\u2069'
    """
    s = "" if text is None else str(text)
    if not needs_isolation(s):
        return s
    return FSI + _balanced(s) + PDI
