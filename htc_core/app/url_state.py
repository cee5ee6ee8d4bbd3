"""A page's own view in its URL: each page declares its widgets once as :class:`Param` (query parameter,
widget key, what values it takes), calls :func:`restore` before drawing them and :func:`write` after.

A pasted link (``/runs?ds=facts&sort=steps&desc=1&page=2``) is taken apart once per session by
:func:`htc_core.app.layout.restore_from_url`; :func:`take_link` hands its parameters to the page the link
opened, and :func:`restore` sets the widgets it names from them, each value checked: an unknown option, a
number that is not finite (``inf``, ``1e309``, ``nan``), text over :data:`MAX_TEXT` characters are left out
and the page's default applies, never an exception. Afterwards the widgets rule and :func:`write` keeps the
URL in step with them (a value equal to its default is left out, so an untouched page keeps a short URL).
A chart's clicked bins or points are carried too (``rel``, ``bar``, ``pts``) and replayed as a click by
``drill.replay_link``. The sidebar's filters, the inspected trajectory and the Compare page's choices have
their own parameters (``layout``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import streamlit as st

__all__ = ["Param", "MAX_TEXT", "DRILL_LINK", "PAGE_STASH", "take_link", "restore", "linked", "write", "parse", "encode",
           "within", "runs_params", "calibration_params", "feature_space_params", "examples_params",
           "compare_params", "side_by_side_params", "weights_params"]

#: session key: every query parameter of the session's first request (set by ``layout.restore_from_url``)
PAGE_STASH = "htc_url_page_stash"
#: session key: {page: the parameters of the link that opened it}, consumed by :func:`restore`
PAGE_LINK = "htc_url_page_link"
#: longest value taken from a link; a longer one is ignored
MAX_TEXT = 200
#: session keys a link's drill-down selection is restored into, for the page to replay (``drill.replay_link``)
DRILL_LINK = {"rel": "cal_link_rel", "bar": "cal_link_bar", "pts": "fs_link_pts"}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """One widget of a page in the URL. ``kind``: ``one`` (one of ``options``), ``many`` (several of them),
    ``int`` / ``float`` (clamped to ``bounds``, a float rounded to ``step``), ``range`` (two floats in
    ``bounds``), ``text`` or ``bool``. ``default``: the value the URL leaves out."""

    name: str
    key: str
    kind: str
    options: tuple = ()
    bounds: tuple = (0.0, 1.0)
    step: float | None = None
    default: Any = None
    max_len: int = MAX_TEXT


def take_link(page: str) -> None:
    """Called by every page first (``layout.require_app``): the first page of a session owns the link's
    parameters; any later page starts from its own defaults."""
    stash = st.session_state.pop(PAGE_STASH, None)
    if stash is not None:
        st.session_state[PAGE_LINK] = {page: dict(stash)}


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _option(p: Param, text: str):
    exact = [o for o in p.options if str(o) == text]
    loose = exact or [o for o in p.options if str(o).lower() == text.lower()]
    return loose[0] if loose else None


def parse(p: Param, values: list[str]):
    """The widget value that ``values`` (one query parameter's values) stands for, or None when it is unusable."""
    values = [v for v in values if isinstance(v, str) and v and len(v) <= p.max_len]
    if not values:
        return None
    first, (lo, hi) = values[0], p.bounds
    if p.kind == "one":
        return _option(p, first)
    if p.kind == "many":
        picked = [o for o in (_option(p, v) for v in values) if o is not None]
        return list(dict.fromkeys(picked)) or None
    if p.kind == "text":
        return first
    if p.kind == "bool":
        low = first.lower()
        return True if low in _TRUE else False if low in _FALSE else None
    if p.kind == "range":
        xs = [_number(v) for v in values[:2]]
        if len(xs) < 2 or None in xs:
            return None
        a, b = sorted(min(hi, max(lo, x)) for x in xs)
        return (round(a, 2), round(b, 2))
    x = _number(first)
    if x is None:
        return None
    x = min(hi, max(lo, x))
    if p.kind == "int":
        return int(round(x))
    return round(round(x / p.step) * p.step, 6) if p.step else x


def encode(p: Param, value) -> list[str]:
    """The query parameter's values for a widget value (empty: left out of the URL)."""
    if value is None or value == p.default or (p.kind in ("many", "text") and not value):
        return []
    if p.kind == "many":
        return [str(v) for v in value]
    if p.kind == "range":
        return [f"{float(v):g}" for v in value]
    if p.kind == "bool":
        return ["1" if value else "0"]
    if p.kind == "float":
        return [f"{float(value):g}"]
    return [str(value)]


def restore(page: str, params: Iterable[Param]) -> None:
    """Before the widgets are drawn: the values the link that opened ``page`` carries for ``params``, checked
    (:func:`parse`), into the widgets' session state; each parameter is used once, the unusable are dropped."""
    link = (st.session_state.get(PAGE_LINK) or {}).get(page)
    if not link:
        return
    for p in params:
        if p.name in link:
            value = parse(p, link.pop(p.name))
            if value is not None:
                st.session_state[p.key] = value


def linked(page: str, name: str) -> str:
    """The value the link that opened ``page`` still carries for the parameter ``name`` ("" when none): for a
    page that must compute something before the option the link names exists."""
    values = ((st.session_state.get(PAGE_LINK) or {}).get(page) or {}).get(name) or [""]
    return values[0] if isinstance(values[0], str) and len(values[0]) <= MAX_TEXT else ""


def write(params: Iterable[Param], values: dict | None = None) -> None:
    """After the widgets are drawn: their values into the URL (a default one is removed from it); ``values``
    (parameter name -> value) stands in for what is no widget (a chart's clicked bins)."""
    given = values or {}
    for p in params:
        values = encode(p, given[p.name] if p.name in given else st.session_state.get(p.key))
        if values:
            if st.query_params.get_all(p.name) != values:
                st.query_params[p.name] = values
        elif p.name in st.query_params:
            del st.query_params[p.name]


def within(key: str, lo: int, hi: int) -> None:
    """Keep a number widget's value (from a link or an earlier run) inside the bounds it is drawn with now."""
    value = st.session_state.get(key)
    if isinstance(value, (int, float)) and not lo <= value <= hi:
        st.session_state[key] = min(hi, max(lo, int(value)))


# ------------------------------------------------------------------ the pages' parameters
def runs_params(datasets, models, flags, conf_options, sortable, page_sizes) -> list[Param]:
    """The Runs page's browse filters, sort and page."""
    return [Param("ds", "browse_ds", "many", tuple(datasets)), Param("ms", "browse_ms", "many", tuple(models)),
            Param("label", "browse_label", "one", ("any", "success", "failure", "unlabeled"), default="any"),
            Param("conf", "browse_conf", "one", tuple(conf_options)),   # always named: its default moves once
            # the evaluation is done (out-of-fold first), and the link must show the same numbers
            Param("range", "browse_range", "range", default=(0.0, 1.0)), Param("q", "browse_text", "text"),
            Param("flags", "browse_flags", "many", tuple(flags)),
            Param("sort", "browse_sort", "one", ("confidence", *sortable), default="confidence"),
            Param("desc", "browse_desc", "bool", default=False),
            Param("size", "browse_page_size", "one", tuple(page_sizes), default=page_sizes[1]),
            Param("page", "browse_page", "int", bounds=(1, 10**9), default=1)]


def calibration_params(methods, diagram_key: str, hist_key: str, selective: Iterable[str] = ()) -> list[Param]:
    """The Calibration page's diagram methods, binning, histogram method, selective-prediction method and
    threshold (the widget keys name the evaluated methods, so they are passed in)."""
    methods = tuple(methods)
    out = [Param("methods", diagram_key, "many", methods), Param("binning", "cal_binning", "one",
                                                                   ("uniform", "quantile"), default="uniform"),
           Param("hist", hist_key, "one", methods),
           # the drill-down: the reliability diagram's clicked bins (method:bin,...) or histogram bars (outcome:bin)
           Param("rel", DRILL_LINK["rel"], "text", max_len=4000), Param("bar", DRILL_LINK["bar"], "text", max_len=4000)]
    if selective:
        out += [Param("sel", "cal_sel_method", "one", tuple(selective)),
                Param("threshold", "cal_sel_threshold", "float", bounds=(0.0, 1.0), step=0.01, default=0.5)]
    return out


def feature_space_params(colours) -> list[Param]:
    """The Feature space page's projection and colouring."""
    return [Param("proj", "fs_method", "one", ("umap", "tsne"), default="umap"),
            Param("colour", "fs_color", "one", tuple(colours), default="dataset"),
            Param("pts", DRILL_LINK["pts"], "text", max_len=4000)]      # the selected points' rows


def examples_params(baselines, htc_methods) -> list[Param]:
    """The Examples page's baseline, HTC model and number of examples per side."""
    return [Param("baseline", "ex_baseline", "one", tuple(baselines)),
            Param("htc", "ex_htc", "one", tuple(htc_methods)),
            Param("n", "ex_n", "int", bounds=(1, 20), default=4)]


def compare_params(methods=(), default_methods=(), features=(), default_feature=None) -> list[Param]:
    """The Compare LLMs page's grouping, methods and feature (the first one is drawn before the evaluation is
    known, so the page restores it alone first: ``compare_params()[:1]``)."""
    return [Param("group", "cmp_group", "one", ("model", "framework", "dataset"), default="model"),
            Param("methods", "cmp_methods", "many", tuple(methods), default=list(default_methods)),
            Param("feature", "cmp_feature", "one", tuple(features), default=default_feature)]


def side_by_side_params() -> list[Param]:
    """The Side by side page's two runs (as a link names a run: its trajectory id, or its key when the id is not
    unique) and the calibrator that explains them."""
    return [Param("ra", "sbs_link_a", "text"), Param("rb", "sbs_link_b", "text"),
            Param("by", "sbs_variant", "one", ("reduced", "full"), default="reduced")]


def weights_params(selection_methods=()) -> list[Param]:
    """The Feature weights page's choices: non-zero weights only, the variant of the per-dataset heatmap and the
    model of the selection frequencies."""
    return [Param("kept", "w_only_kept", "bool", default=False),
            Param("heat", "w_heat_variant", "one", ("reduced", "full"), default="reduced"),   # the page's one default
            Param("sel", "w_sel_method", "one", tuple(selection_methods),
                  default=next(iter(selection_methods), None))]
