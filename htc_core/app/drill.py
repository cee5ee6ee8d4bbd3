"""Drill-down: from a clicked bin, bar or point of a chart to the runs behind it, then to the inspector.

Every drillable trace names what a point stands for in its ``customdata``: the reliability diagram's
markers and count bars end with (method, bin index), the confidence histogram's bars with (outcome, bin
index), a feature-space point starts with its workspace row. :func:`selected_runs` reads a Streamlit
selection event back into workspace rows through the library's bin assignment
(:func:`htc_core.explain.reliability_members` / :func:`~htc_core.explain.binned_runs`), so the runs
listed for a bin are exactly the ``n`` the chart shows. :func:`show_runs` draws the table and the
"open in the inspector" control.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ..explain.drill import OUTCOMES, BinnedRuns
from .layout import md, open_in_inspector
from ..viz.plots import apply_layout
from .workspace import Workspace

__all__ = ["Drill", "selected_runs", "selected_points", "newest", "runs_frame", "show_runs", "histogram_figure",
           "replay_link", "LINK_POINTS"]

#: most clicked elements a link carries (a larger box or lasso selection is left out of the URL)
LINK_POINTS = 300

_COLORS = {"success": "#54A24B", "failure": "#E45756", "unlabeled": "#999"}


@dataclass(frozen=True)
class Drill:
    """The runs behind one clicked element: ``title`` in words, ``positions``: workspace rows, ``source``:
    the method whose bins were clicked (empty for feature-space points); ``link``: what was clicked, for the URL
    (``name:bin,...`` of a binned chart, ``row,...`` of feature-space points; empty when too many)."""

    title: str
    positions: np.ndarray
    source: str = ""
    link: str = ""

    @property
    def n(self) -> int:
        return int(len(self.positions))


def _points(event) -> list[dict]:
    if event is None:
        return []
    try:
        return list(event.selection.points)
    except (AttributeError, KeyError):
        return []


def keep_clicks(key: str, context) -> callable:
    """The ``on_select`` callback of the chart ``key``: keeps each new selection in session state with the
    ``context`` it was made in (what decides the bins: binning, selection content).

    Why: Streamlit names a chart element by its figure, so a chart drawn again with another figure (the
    Calibration page redraws when an evaluation part finishes) is a new element, and a click that landed on the
    old one just before is dropped with it: the runs of the clicked bin were never listed (issue 30 item 2, the
    flaky drill-down). The callback runs before the rerun the click starts, while the old element is still
    known, so the click is kept and :func:`clicked` replays it on the redrawn chart."""
    def keep() -> None:
        st.session_state[f"{key}__kept"] = (context, st.session_state.get(key))
    return keep


def clicked(key: str, event, context):
    """The selection to drill into: the chart's own (``event``) when it holds points, else the click
    :func:`keep_clicks` kept for this chart in the same ``context`` (lost by a redraw); None when neither."""
    if _points(event):
        return event
    kept_context, kept = st.session_state.get(f"{key}__kept", (None, None))
    return _Event(kept) if kept_context == context and kept is not None else None


class _Event:
    """A kept selection state (a dict, as Streamlit stores it) read like a chart's event (``.selection.points``)."""

    def __init__(self, state):
        sel = state.get("selection", {}) if isinstance(state, Mapping) else getattr(state, "selection", {})
        points = sel.get("points", []) if isinstance(sel, Mapping) else getattr(sel, "points", [])
        self.selection = type("Selection", (), {"points": list(points or [])})()


def _bin_ref(point: dict, names) -> tuple[str, int] | None:
    """(name, bin) from the last two customdata fields of a drillable point, or None."""
    cd = point.get("customdata")
    if not isinstance(cd, (list, tuple)) or len(cd) < 2:
        return None
    name, b = cd[-2], cd[-1]
    try:
        b = int(b)
    except (TypeError, ValueError):
        return None
    return (str(name), b) if str(name) in names else None


def selected_runs(event, binned: Mapping[str, BinnedRuns], rows: np.ndarray, *, kind: str = "method",
                  ) -> Drill | None:
    """The runs of the bins clicked in a binned chart. ``binned``: name -> :class:`BinnedRuns` (methods of a
    reliability diagram, ``kind="method"``; or one histogram's bins under its name, ``kind="outcome"``,
    where the customdata name is the outcome); ``rows``: workspace row of each binned position (an
    evaluation's ``positions``). None when nothing drillable is selected."""
    picked, titles, sources, refs = [], [], [], []
    for pt in _points(event):
        if kind == "method":
            ref = _bin_ref(pt, binned)
            if ref is None or not 0 <= ref[1] < binned[ref[0]].n_bins:
                continue
            bins = binned[ref[0]]
            picked.append(bins.members(ref[1]))
            sources.append(ref[0])
            refs.append(ref)
            titles.append(f"bin {bins.label(ref[1])} of {ref[0]}")
        else:
            ref = _bin_ref(pt, OUTCOMES)
            bins = next(iter(binned.values()), None)
            if ref is None or bins is None or not 0 <= ref[1] < bins.n_bins:
                continue
            picked.append(bins.members(ref[1], ref[0]))
            sources.append(bins.name)
            refs.append(ref)
            titles.append(f"{ref[0]}s with {bins.name} confidence in {bins.label(ref[1])}")
    if not picked:
        return None
    pos = np.unique(np.concatenate(picked)) if len(picked) > 1 else picked[0]
    refs = list(dict.fromkeys(f"{name}:{b}" for name, b in refs))
    return Drill(title="; ".join(dict.fromkeys(titles)), positions=np.asarray(rows)[pos], source=sources[0],
                 link=",".join(refs) if len(refs) <= LINK_POINTS else "")


def selected_points(event, n_rows: int) -> Drill | None:
    """The workspace rows of the feature-space points selected (clicked, or boxed/lassoed): customdata[0]."""
    rows = []
    for pt in _points(event):
        cd = pt.get("customdata")
        try:
            r = int(cd[0])
        except (TypeError, ValueError, IndexError, KeyError):
            continue
        if 0 <= r < n_rows:
            rows.append(r)
    if not rows:
        return None
    rows = list(dict.fromkeys(rows))
    return Drill(title="the selected point" if len(rows) == 1 else f"{len(rows)} selected points",
                 positions=np.asarray(rows, dtype=np.int64),
                 link=",".join(map(str, rows)) if len(rows) <= LINK_POINTS else "")


def replay_link(key: str, context, link: str | None, *, points: bool = False) -> None:
    """A pasted link's selection (:attr:`Drill.link`) replayed as a click on the chart ``key`` drawn in
    ``context`` (through :func:`clicked`); what the chart does not have is dropped by the readers above."""
    clicks = []
    for part in (link or "").split(",")[:LINK_POINTS]:
        name, _, b = part.rpartition(":")
        if points and part.strip().isdigit():
            clicks.append({"customdata": [int(part)]})
        elif not points and name and b.isdigit():
            clicks.append({"customdata": [name, int(b)]})
    if clicks:
        st.session_state[f"{key}__kept"] = (context, {"selection": {"points": clicks}})


def newest(state_key: str, candidates: Mapping[str, Drill | None]) -> Drill | None:
    """Of several charts' selections (``name -> Drill`` or None), the one that changed last (each chart keeps
    its selection across reruns, so "the bin the user just clicked" is the one whose selection is new)."""
    seen = st.session_state.setdefault(state_key, {"sig": {}, "last": None})
    for name, d in candidates.items():
        sig = None if d is None else (d.title, d.n)
        if sig is not None and seen["sig"].get(name) != sig:
            seen["last"] = name
        seen["sig"][name] = sig
    last = candidates.get(seen["last"]) if seen["last"] else None
    return last if last is not None else next((d for d in candidates.values() if d is not None), None)


def runs_frame(ws: Workspace, positions, confidence=None, *, confidence_name: str = "confidence") -> pd.DataFrame:
    """The drill-down table: id, dataset, model, confidence (``confidence[row]`` of the workspace, or NaN),
    outcome, flags, steps and the question; ``key`` last (the inspector's key, not shown)."""
    pos = np.asarray(positions, dtype=np.int64)
    frame = ws.frame()
    sub = frame.iloc[pos]
    conf = np.full(len(pos), np.nan) if confidence is None else np.asarray(confidence, dtype=np.float64)[pos]
    outcome = sub["success"].map(lambda v: "success" if v == 1 else ("failure" if v == 0 else "unlabeled"))
    return pd.DataFrame({"id": sub["id"].astype(str).to_numpy(), "dataset": sub["dataset"].to_numpy(),
                         "model": sub["model"].to_numpy(), confidence_name: conf, "outcome": outcome.to_numpy(),
                         "flags": sub["flags"].to_numpy(), "steps": sub["steps"].to_numpy(),
                         "question": sub["question"].to_numpy(), "key": sub["key"].astype(str).to_numpy()})


def show_runs(ws: Workspace, drill: Drill | None, *, key: str, confidence=None, confidence_name: str = "confidence",
              hint: str = "Click a bin or a bar to list its runs.") -> None:
    """The runs of ``drill`` as a table, and a picker + button that opens one in the inspector."""
    if drill is None:
        st.caption(hint)
        return
    table = runs_frame(ws, drill.positions, confidence, confidence_name=confidence_name)
    st.markdown(f"**{drill.n:,} run{'s' if drill.n != 1 else ''}: {md(drill.title)}**")
    if not len(table):
        return
    shown = table.drop(columns=["key"])
    event = st.dataframe(shown, hide_index=True, width="stretch", height=min(400, 38 + 35 * len(table)),
                         key=f"{key}_table", on_select="rerun", selection_mode="single-row",
                         column_config={confidence_name: st.column_config.NumberColumn(format="%.3f")})
    picked = list(getattr(getattr(event, "selection", None), "rows", []) or [])
    keys = table["key"].tolist()
    labels = dict(zip(keys, [f"{i} · {o} · {c:.3f}" if np.isfinite(c) else f"{i} · {o}"
                             for i, o, c in zip(table["id"], table["outcome"], table[confidence_name])]))
    default = int(picked[0]) if picked and 0 <= int(picked[0]) < len(keys) else 0
    c1, c2 = st.columns([3, 1])
    choice = c1.selectbox("Run to inspect (or select a row of the table)", keys, index=default,
                          format_func=labels.get, key=f"{key}_pick_{default}_{drill.title}")
    if c2.button("Open in the inspector", key=f"{key}_open"):
        open_in_inspector(choice)


def histogram_figure(bins: BinnedRuns, *, title: str | None = None, height: int = 400) -> go.Figure:
    """Confidence histogram split by outcome, drawn from ``bins`` (so each bar's count is the runs a click
    on it lists): overlaid bars per outcome, each with customdata (outcome, bin)."""
    fig = go.Figure()
    centers = (bins.edges[:-1] + bins.edges[1:]) / 2
    width = float(np.diff(bins.edges).min())
    labels = [bins.label(b) for b in range(bins.n_bins)]
    for outcome in ("success", "failure", "unlabeled"):
        counts = bins.counts(outcome)
        if outcome == "unlabeled" and not counts.sum():
            continue
        fig.add_trace(go.Bar(x=centers, y=counts, width=width, name=f"{outcome} ({int(counts.sum())})",
                             marker_color=_COLORS[outcome], opacity=0.65 if outcome != "unlabeled" else 0.5,
                             customdata=np.column_stack([np.array(labels, dtype=object),
                                                         np.full(bins.n_bins, outcome, dtype=object),
                                                         np.arange(bins.n_bins)]),
                             hovertemplate=f"{outcome}<br>confidence %{{customdata[0]}}<br>%{{y}} runs"
                                           "<br>click to list them<extra></extra>"))
    fig.update_layout(barmode="overlay", bargap=0, clickmode="event+select")   # a plain click selects a bar
    fig.update_xaxes(range=[0, 1], title_text="confidence")
    fig.update_yaxes(title_text="trajectories")
    return apply_layout(fig, title, height)
