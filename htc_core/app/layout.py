"""What every page shares on screen: the hand-over from a deep link, the guard every page starts with,
the error boundary around page bodies, the sidebar, the view state in the URL, the jump to the inspector,
and inert markdown."""

from __future__ import annotations

import contextlib
import html
import logging
import math
import re

import streamlit as st

from ..bidi import isolate
from ..confidence import PROFILES
from . import url_state
from .session import (DATA_DIR, DATASETS, DEEP_LINK, INSPECT, MODELS, PAGES, PROFILE, RUNSETS, SEEDS, TOP_K,
                      data_dir, full_workspace, run_set_names, workspace)
from .workspace import Workspace

log = logging.getLogger("htc.dashboard")

#: the mark of a status line of background work (Feature space's projection, the kernels' warm-up): Streamlit's
#: bundled Material Symbols font draws it on every machine, where the emoji U+23F3 was a box in a browser without a
#: colour-emoji font (headless Chromium; docs/ui-review.md). In the browser's page text it reads PENDING_ICON_NAME.
PENDING_ICON_NAME = "hourglass_empty"
PENDING_ICON = f":material/{PENDING_ICON_NAME}:"
#: markdown punctuation escaped by :func:`md`
_MD_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~$=^")
#: a colon that could open or close a shortcode (followed by anything but a space)
_SHORTCODE_COLON = re.compile(r":(?=\S)")


def require_app(page: str) -> None:
    """First line of every page. Streamlit runs a page file on its own (its legacy ``pages/`` mode) when
    a deep link such as /calibration is the very first request a new server process gets, before
    app.py ever ran; hand over to app.py (its st.navigation then rules for good) and come back."""
    if DATA_DIR not in st.session_state:
        st.session_state[DEEP_LINK] = PAGES[page]
        st.session_state[URL_STASH] = {k: st.query_params.get_all(k) for k in st.query_params}
        st.switch_page("app.py")
    url_state.take_link(page)      # the first page of a session owns its link's parameters (Runs filters, ...)


def follow_deep_link() -> None:
    """Called by app.py after st.navigation: finish a hand-over started by :func:`require_app`."""
    target = st.session_state.pop(DEEP_LINK, None)
    if target:
        st.switch_page(target)


#: the Runs page is the default page, served at "/"; ``/runs`` (typed, or a link such as ``/runs?label=failure``)
#: is a hidden page that forwards there with its query parameters, instead of Streamlit's "Page not found" dialog
RUNS_ALIAS = "runs"
#: the Runs page's own URL pathname, which Streamlit reserves although it serves the default page at "/"
RUNS_HOME = "runs_home"


def runs_alias(runs_page) -> st.Page:
    """The hidden page at ``/runs`` (see :data:`RUNS_ALIAS`); app.py runs it at once when it is the one asked for,
    before the store is read, so the forward costs nothing."""
    def forward_to_runs() -> None:
        st.switch_page(runs_page, query_params={k: st.query_params.get_all(k) for k in st.query_params})
    return st.Page(forward_to_runs, title="Runs", url_path=RUNS_ALIAS, visibility="hidden")


#: session-state flag: this session's view was already restored from its URL
URL_RESTORED = "htc_url_restored"
#: the query parameters of a first request that :func:`require_app` handed over to app.py
URL_STASH = "htc_url_stash"
#: query parameters of the view: sidebar filters (repeated parameters) and the inspected trajectory
URL_LISTS = {"runsets": RUNSETS, "datasets": DATASETS, "models": MODELS}
URL_ID = "id"
#: ``?method=`` names the calibrator that explains a run (the inspector's "Explained by" choice)
URL_METHOD = "method"
METHOD_KEY = "insp_variant"
METHOD_NAMES = {"HTC-Reduced": "reduced", "HTC-Full": "full", "HTC-GAM": "gam"}
#: the Compare run sets page's choices: URL parameter -> widget key. Only that page writes them (other pages
#: start from a clean URL); a link restores them: ``/compare_runsets?ab=runsets&a=<id>&b=<id>&conf=HTC-Full``,
#: ``?ab=calibrators&ma=Tail%2BPlatt&mb=HTC-Reduced``, ``&bins=quantile&trust=0.7``. Run sets by id or name.
URL_AB = {"ab": "ab_mode", "a": "ab_a", "b": "ab_b", "conf": "ab_method", "ma": "ab_method_a",
          "mb": "ab_method_b", "bins": "ab_binning", "trust": "ab_threshold"}
#: the Compare page's parameters of a first request, kept until that page applies them (:func:`apply_ab_url`)
AB_STASH = "htc_url_ab"


def restore_from_url() -> None:
    """Once per session (a new tab, a reload, a pasted link), before the sidebar's widgets exist: take the
    filters (``?runsets=<run set id or name>&datasets=a&datasets=b&models=m``), the trajectory
    (``?id=<trajectory id or run-set:id>``) and the explaining calibrator (``?method=HTC-Full``) from the URL.
    The page itself is in the URL's path (``/inspector``). Later runs write the URL instead (:func:`write_url`),
    so the widgets stay in charge."""
    if st.session_state.get(URL_RESTORED):
        return
    st.session_state[URL_RESTORED] = True
    stash = st.session_state.pop(URL_STASH, None)     # the hand-over of require_app switched pages without them
    params = stash if stash is not None else {k: st.query_params.get_all(k) for k in st.query_params}
    for param, key in URL_LISTS.items():
        values = [v for v in params.get(param, []) if v]
        if values:
            st.session_state[key] = values
    ids = [v for v in params.get(URL_ID, []) if v]
    if ids:
        st.session_state[INSPECT] = ids[0]
    wanted = {k.lower(): v for k, v in METHOD_NAMES.items()}
    methods = [wanted[v.lower()] for v in params.get(URL_METHOD, []) if v and v.lower() in wanted]
    if methods:     # an unknown name is ignored: the page's default applies
        st.session_state[METHOD_KEY] = methods[0]
    st.session_state[url_state.PAGE_STASH] = params     # each page's own widgets: url_state.restore
    ab = {p: [v for v in params.get(p, []) if v] for p in URL_AB}
    st.session_state[AB_STASH] = {p: v for p, v in ab.items() if v}


def apply_ab_url(names: dict) -> None:
    """On the Compare run sets page, before its widgets: the choices a link brought (:data:`URL_AB`), checked
    against what exists (``names``: run set id -> name); the mode, run sets, binning and threshold are set
    here, the methods once the page knows them (:func:`valid_choice`). Anything unknown is left out."""
    wanted = st.session_state.pop(AB_STASH, None) or {}
    by_name = {n: i for i, n in names.items()}
    for param, values in wanted.items():
        key, first = URL_AB[param], values[0]
        if param in ("a", "b"):
            ids = [v if v in names else by_name.get(v) for v in values]
            if any(ids):
                st.session_state[key] = [i for i in ids if i]
        elif param == "ab" and first in ("runsets", "calibrators"):
            st.session_state[key] = first
        elif param == "bins" and first in ("uniform", "quantile"):
            st.session_state[key] = first
        elif param == "trust":
            with contextlib.suppress(ValueError):
                trust = float(first)
                if math.isfinite(trust):  # inf, 1e309 (inf once parsed) and nan are left out like any junk
                    st.session_state[key] = min(0.95, max(0.05, round(round(trust / 0.05) * 0.05, 2)))
        elif param in ("conf", "ma", "mb"):
            st.session_state[key] = first


def valid_choice(key: str, options: list, default) -> None:
    """Keep ``key``'s value (from a link or an earlier run) when it is one of ``options``, else ``default``
    (method names from a link match regardless of case)."""
    value = st.session_state.get(key)
    if value not in options:
        match = [o for o in options if isinstance(value, str) and str(o).lower() == value.lower()]
        st.session_state[key] = match[0] if match else default


def write_ab_url(mode: str, choices: dict) -> None:
    """The Compare page's current choices (URL parameter -> value or list) into its URL; the other mode's
    parameters are dropped."""
    current = {"ab": mode, **choices}
    for param in URL_AB:
        value = current.get(param)
        if value is None or value == []:
            if param in st.query_params:
                del st.query_params[param]
            continue
        values = [str(v) for v in value] if isinstance(value, list) else [str(value)]
        if st.query_params.get_all(param) != values:
            st.query_params[param] = values


def write_url() -> None:
    """The sidebar's filters into the URL (after the first run of a session), so a reload or a shared link
    opens the same view."""
    if not st.session_state.get(URL_RESTORED):
        return
    for param, key in URL_LISTS.items():
        values = [str(v) for v in st.session_state.get(key) or []]
        if values:
            if st.query_params.get_all(param) != values:
                st.query_params[param] = values
        elif param in st.query_params:
            del st.query_params[param]
    variant = st.session_state.get(METHOD_KEY)
    method = next((k for k, v in METHOD_NAMES.items() if v == variant), None)
    if method and st.query_params.get(URL_METHOD) != method:
        st.query_params[URL_METHOD] = method
    elif method is None and URL_METHOD in st.query_params:
        del st.query_params[URL_METHOD]


def set_url_id(trajectory_id: str | None) -> None:
    """The inspected trajectory into the URL (``?id=``)."""
    if trajectory_id and st.query_params.get(URL_ID) != trajectory_id:
        st.query_params[URL_ID] = trajectory_id


def open_in_inspector(key: str) -> None:
    st.session_state[INSPECT] = key
    st.switch_page(PAGES["inspector"])


def guard() -> Workspace:
    """The guard every page starts with: no data -> a helpful note and stop."""
    ws = workspace()
    if len(ws) == 0:
        if len(full_workspace()) == 0:
            st.info("No runs are stored yet. Open **Runs** and upload agent traces (htc-trace JSONL, OpenAI "
                    "chat/call-log, Responses, completions, smolagents or ATIF), or start the app with the shipped "
                    "`sample_runs/`.")
        else:
            st.info("No trajectory matches the run sets/datasets/models chosen in the sidebar.")
        st.stop()
    return ws


@contextlib.contextmanager
def page_errors(page: str):
    """Error boundary of a page body: an unexpected error shows a short message, the traceback goes to
    the server log (never to the browser)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException

    try:
        yield
    except ScriptControlException:
        raise
    except Exception as e:  # noqa: BLE001 - the boundary
        log.exception("page %s failed", page)
        msg = " ".join(str(e).split())
        if len(msg) > 300:
            msg = msg[:297] + "..."
        if _is_store_error(e):  # every page reads the store: saying "the other pages still work" would be wrong
            st.error(f"The store at `{md(data_dir())}` cannot be read ({type(e).__name__}: {md(msg)}). No page can "
                     "show data until it is repaired: stop the app, move that folder away (or set HTC_DATA_DIR to "
                     "another one) and start again. The details are in the server log.")
        else:
            st.error(f"This page stopped on an unexpected problem ({type(e).__name__}: {md(msg)}). "
                     "The details are in the server log; the other pages still work.")


def _is_store_error(e: BaseException) -> bool:
    import duckdb

    from .locking import StoreError

    return isinstance(e, (StoreError, duckdb.Error))


#: session key: the run set a finished upload stored, chosen as the selection on the next run (before the sidebar's
#: widgets exist, which a widget's own key cannot be set after)
SELECT_UPLOAD = "htc_select_upload"


def wrapping_row(key: str, *widths: int) -> list:
    """Blocks side by side that wrap instead of squeezing: block ``k`` is ``widths[k]`` px wide (at most the page's
    width) in a horizontal container that moves a block to the next row when the row has no room for it.

    ``st.columns`` squeezes every block to its share of any width: at 900 px with the sidebar open a 2/5 column
    is 170 px, which cut a chart's axis labels and legend and hid a table's columns. Here, at 1440 px the blocks
    sit side by side as before; at 900 px each gets a row of its own, whole. The container's key names it in the
    page (class ``st-key-<key>``)."""
    row = st.container(horizontal=True, gap="small", key=key)
    return [row.container(width=int(w)) for w in widths]


#: a table's count column: thousands separators ("1,000", as the pages' texts write counts), still a number that
#: sorts as one (st.column_config's printf format, "," for the separator)
COUNT_FORMAT = "%,d"


def count_column(help: str | None = None):
    """The column configuration of a count in an ``st.dataframe``: "1,000", sorted as a number."""
    return st.column_config.NumberColumn(format=COUNT_FORMAT, help=help)


def clear_filters() -> None:
    """The sidebar's "Clear the filters" button: every run set, dataset and model selected again."""
    for key in (RUNSETS, DATASETS, MODELS):
        st.session_state[key] = []


#: the characters a chip of the sidebar's pickers shows whole: about 130 px of text at about 7 px a character
#: (measured in Chromium: "SmolLM2-135M-greedy", 19 characters, is 134 px and was cut to "SmolLM2-135M-gre…")
CHIP_CHARS = 16
#: where a name splits into parts for its chip label
_PARTS = re.compile(r"[-_ /:]")


def chip_label(name: str, width: int = CHIP_CHARS) -> str:
    """``name`` in at most ``width`` characters for a picker's chip: whole when it fits, else its first part, "…"
    and as many of its last parts as fit ("SmolLM2-135M-greedy" -> "SmolLM2…greedy"); a name with an organisation
    ("meta-llama/Llama-3.1-8B") keeps the part after the last "/". Cut by characters where no part fits."""
    text = str(name)
    if len(text) <= width:
        return text
    base = text.rsplit("/", 1)[-1] or text
    if len(base) <= width:
        return base
    cuts = [m.start() for m in _PARTS.finditer(base)]
    head = base[:cuts[0]] if cuts and 0 < cuts[0] <= width // 2 else base[:max(1, width // 2 - 1)]
    room = width - len(head) - 1
    tail = next((base[c + 1:] for c in cuts if c >= len(head) and len(base) - c - 1 <= room), "")
    return f"{head}…{tail or base[len(base) - room:]}"


def chip_labels(names, width: int = CHIP_CHARS) -> dict[str, str]:
    """Name -> :func:`chip_label` for a picker's options (its ``format_func``; the widget's value, the session
    state and the URL keep the full names). A name whose label another name shares keeps its full name, so no two
    chips read alike."""
    full = [str(n) for n in names]
    labels = {n: chip_label(n, width) for n in full}
    seen: dict[str, int] = {}
    for label in labels.values():
        seen[label] = seen.get(label, 0) + 1
    return {n: (label if seen[label] == 1 or label == n else n) for n, label in labels.items()}


def sidebar() -> None:
    """Data selection and settings (drawn by app.py on every run, so they hold across pages)."""
    full = full_workspace()
    with st.sidebar:
        st.markdown("**Data**")
        if len(full):
            ds_all, ms_all = full.values("dataset"), full.values("model")
            names = run_set_names()
            chosen = st.session_state.pop(SELECT_UPLOAD, None)     # a new upload becomes the selection
            if chosen in names:
                st.session_state[RUNSETS] = [chosen]
                for key in (DATASETS, MODELS):
                    st.session_state.pop(key, None)
            if RUNSETS in st.session_state:
                st.session_state[RUNSETS] = run_set_ids(st.session_state[RUNSETS], names)
            for key, allowed in ((DATASETS, ds_all), (MODELS, ms_all)):
                if key in st.session_state:
                    st.session_state[key] = [v for v in st.session_state[key] if v in allowed]
            st.multiselect("Run sets", list(names), key=RUNSETS, placeholder="all run sets",
                           format_func=lambda i: names.get(i, i),
                           help="A run set is what one upload stored together (the shipped samples: one per file). "
                                "Every page shows the chosen run sets only.")
            st.multiselect("Datasets", ds_all, key=DATASETS, placeholder="all datasets")
            chips = chip_labels(ms_all)
            st.multiselect("Models", ms_all, key=MODELS, placeholder="all models",
                           format_func=lambda m: chips.get(m, m),
                           help="Long model names are shortened here; the caption below names the chosen ones in full.")
            st.caption(selection_caption(len(workspace()), len(full), st.session_state.get(MODELS) or [], chips))
            # also the tab's first st.button: Streamlit's browser code loads its Button component lazily, on the
            # first button a tab draws, and until then a button's keyboard shortcut is not bound; drawn here, before
            # any page, it is loaded before a page's label bar (the first key on the Label page: docs/labeling.md)
            st.button("Clear the filters", key="sidebar_clear", on_click=clear_filters, type="tertiary",
                      disabled=not any(st.session_state.get(k) for k in (RUNSETS, DATASETS, MODELS)))
        else:
            st.caption("no runs stored yet")
        with st.expander("Settings"):
            st.selectbox("Confidence profile", list(PROFILES), key=PROFILE,
                         help="How token logprobs become confidences (DESIGN.md section 3); saved in every model.")
            st.number_input("top-k alternatives", min_value=1, max_value=20, step=1, key=TOP_K)
            st.number_input("CV repeats (seeds 42, 43, …)", min_value=1, max_value=5, step=1, key=SEEDS)
        st.caption(f"store: `{data_dir()}`")
        kernel_status()


def selection_caption(n_selected: int, n_all: int, models: list, chips: dict) -> str:
    """The sidebar's count of selected trajectories, with the chosen models' full names where a chip shortens one
    (escaped: a model name comes from the runs' files)."""
    text = f"{n_selected:,} of {n_all:,} trajectories selected"
    if any(chips.get(m, m) != m for m in models):
        text += " · models: " + ", ".join(md(m) for m in models)
    return text


def kernel_status() -> None:
    """While the background warm-up (:mod:`htc_core.kernels`, started by app.py) compiles, its status in the
    sidebar, refreshed every 2 s: a first start on a new machine says what it prepares and for about how long,
    instead of a page waiting unannounced. Once the kernels are ready the app runs once more, without this part,
    so the refresh stops (a refresh that ran on forever kept Streamlit's running indicator on)."""
    from .. import kernels

    if kernels.status_text() is None:
        return

    @st.fragment(run_every=2.0)
    def live() -> None:
        text = kernels.status_text()
        if text is None:
            st.rerun()              # once: the next run of the app draws no status, and this refresh stops
        st.caption(f"{PENDING_ICON} {text}")

    live()


def run_set_ids(chosen, names: dict) -> list[str]:
    """The run set ids among ``chosen`` (ids, or names as a shared link may carry them; a name that several
    run sets share chooses them all); unknown entries are dropped."""
    out: list[str] = []
    for v in chosen or []:
        hits = [v] if v in names else [i for i, n in names.items() if n == v]
        out.extend(h for h in hits if h not in out)
    return out


def md_code(text) -> str:
    """:func:`md` for a line of ours whose `backticked` parts are commands or ids: those parts shown as code (a
    code span shows its text literally: nothing in it is rendered), the rest escaped like :func:`md` (which alone
    would show the backticks themselves). A line with an unmatched backtick goes through :func:`md` whole."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:
        return md(text)
    return "".join(md(p) if i % 2 == 0 else f"`{p}`" for i, p in enumerate(parts))


def md(text) -> str:
    """Untrusted text made inert wherever Streamlit renders markdown (st.markdown/caption/info/..., and the
    labels of expanders, tabs, metrics and widgets): the one escaping helper of the dashboard.

    HTML-escaped, markdown punctuation backslash-escaped (no links, images, formatting, ``$`` LaTeX or
    ``:red[...]`` directives), and a zero-width space after every colon that touches a word, so that emoji
    (``:smile:``) and icon (``:material/home:``) shortcodes, which Streamlit replaces inside text, never
    form. Selectbox and multiselect options are plain text and must not go through it.
    """
    if text is None:
        return ""
    text = isolate(text)    # a bidi override inside cannot reverse the text around it (issue 30 #8)
    out = "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in html.escape(text, quote=False))
    return _SHORTCODE_COLON.sub(":\u200b", out)
