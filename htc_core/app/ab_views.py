"""View-models of the "Compare run sets" page: which runs are side A and side B, their out-of-fold confidences,
and the tables the page shows. Pure pandas/numpy (no Streamlit); the maths is in
:mod:`htc_core.calibration.comparison`.

Decisions (also on the page):

- A side is one or several run sets (what one upload stored together; the shipped samples are one run set per
  file). The default sides, when the selection holds at least two models, are the run sets of the two models with
  the most runs, in name order (for the samples: SmolLM2-135M-greedy vs SmolLM2-135M-sampled-t0.7); otherwise the
  first two run sets.
- Every run's confidence is its out-of-fold prediction (first repeat) in the cross-validated evaluation of the
  sidebar's selection, i.e. from a calibrator that never saw the run; A and B are scored by the same procedure.
- "Two calibrators on the same runs" compares two methods of that evaluation on the runs of one side
  (paired bootstrap, every run paired with itself).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibration.comparison import COMPARED_METRICS, RunSetComparison, compare_run_sets, pairing_keys
from ..features import feature_label
from .workspace import Workspace

__all__ = ["default_sides", "side_positions", "oof_all_rows", "ABInputs", "run_set_inputs", "calibrator_inputs",
           "compare", "metric_table", "flipped_table", "shift_table", "side_label", "short_names", "side_caption"]


def default_sides(ws: Workspace, names: dict) -> tuple[list[str], list[str]]:
    """(A, B) run set ids: the run sets of the two models with the most runs when the selection has two or more
    (in name order; a run set belongs to the model most of its runs have), else the first two run sets (in
    storage order)."""
    present = [i for i in names if i in set(ws.run_set.tolist())]
    models = ws.ts.meta["model"].map(lambda v: "(none)" if v is None else str(v)).to_numpy()
    owner = {}
    for rs in present:
        vals, cnt = np.unique(models[ws.run_set == rs], return_counts=True)
        owner[rs] = str(vals[np.argmax(cnt)])
    size = {}
    for rs, m in owner.items():
        size[m] = size.get(m, 0) + int(np.sum(ws.run_set == rs))
    # the two models with the most runs (a few runs of a third model make a poor default), in name order
    distinct = sorted(sorted(size, key=lambda m: (-size[m], m))[:2])
    if len(distinct) >= 2:
        return ([rs for rs in present if owner[rs] == distinct[0]],
                [rs for rs in present if owner[rs] == distinct[1]])
    return present[:1], present[1:2]


def side_label(run_sets: list[str], names: dict) -> str:
    """A short name of a side: the run set's name, or the first name and how many more."""
    labels = [names.get(r, r) for r in run_sets]
    if not labels:
        return "(empty)"
    return labels[0] if len(labels) == 1 else f"{labels[0]} + {len(labels) - 1} more"


def short_names(names: dict) -> dict:
    """Run set id -> a shorter label that still tells the run sets apart, for the pickers' chips: the ``SOURCE: ``
    prefix and the file extension every name shares are left out (``sample: facts_SmolLM2-135M-greedy.jsonl`` ->
    ``facts_SmolLM2-135M-greedy``); a name stays whole where the rest would be empty or the same as another's."""
    full = {i: str(n) for i, n in names.items()}
    if len(full) < 2:
        return full
    texts = list(full.values())
    prefix = os.path.commonprefix(texts)
    head = prefix.rfind(": ") + 2 if ": " in prefix else 0
    suffix = os.path.commonprefix([t[::-1] for t in texts])[::-1]
    tail = len(suffix) - suffix.rfind(".") if "." in suffix else 0
    short = {i: t[head:len(t) - tail] if len(t) - tail > head else t for i, t in full.items()}
    return short if len(set(short.values())) == len(short) else full


def side_caption(side: str, run_sets: list[str], names: dict, n_runs: int) -> str:
    """What a side holds, with every run set's full name (the chips show shortened names, cut when long)."""
    if not run_sets:
        return f"{side}: no run set chosen"
    listed = ", ".join(str(names.get(r, r)) for r in run_sets)
    count = f"{len(run_sets)} run sets" if len(run_sets) > 1 else "1 run set"
    return f"{side} ({count}, {n_runs:,} runs): {listed}"


def side_positions(ws: Workspace, run_sets: list[str]) -> np.ndarray:
    return np.flatnonzero(np.isin(ws.run_set, list(run_sets)))


def oof_all_rows(ws: Workspace, evaluated, method: str) -> np.ndarray:
    """The out-of-fold confidence (first repeat) of every row of ``ws`` (NaN where not evaluated)."""
    out = np.full(len(ws), np.nan)
    out[evaluated.positions] = np.asarray(evaluated.result.oof[method], dtype=np.float64)
    return out


@dataclass
class ABInputs:
    """The two sides, ready for :func:`compare`: rows of the workspace (``pos_a``/``pos_b``), confidences."""

    name_a: str
    name_b: str
    pos_a: np.ndarray
    pos_b: np.ndarray
    conf_a: np.ndarray
    conf_b: np.ndarray
    paired: bool


def run_set_inputs(ws: Workspace, evaluated, method: str, a: list[str], b: list[str], names: dict) -> ABInputs:
    """Side A = run sets ``a``, side B = run sets ``b``, both scored by ``method``'s out-of-fold confidence."""
    if not a or not b:
        raise ValueError("choose at least one run set for A and one for B")
    if set(a) & set(b):
        raise ValueError("a run set cannot be on both sides: "
                         + ", ".join(names.get(r, r) for r in sorted(set(a) & set(b))))
    conf = oof_all_rows(ws, evaluated, method)
    pa, pb = side_positions(ws, a), side_positions(ws, b)
    name_a, name_b = f"A: {side_label(a, names)}", f"B: {side_label(b, names)}"
    return ABInputs(name_a, name_b, pa, pb, conf[pa], conf[pb], paired=False)


def calibrator_inputs(ws: Workspace, evaluated, method_a: str, method_b: str, run_sets: list[str]) -> ABInputs:
    """Two methods on the same runs (the chosen run sets, or the whole selection when none is chosen)."""
    if method_a == method_b:
        raise ValueError(f"choose two different methods, got {method_a!r} twice")
    pos = side_positions(ws, run_sets) if run_sets else np.arange(len(ws))
    ca, cb = oof_all_rows(ws, evaluated, method_a)[pos], oof_all_rows(ws, evaluated, method_b)[pos]
    return ABInputs(f"A: {method_a}", f"B: {method_b}", pos, pos, ca, cb, paired=True)


def compare(ws: Workspace, inputs: ABInputs, *, strategy: str = "uniform", threshold: float = 0.5,
            n_boot: int = 1000) -> RunSetComparison:
    """:func:`~htc_core.calibration.comparison.compare_run_sets` on the two sides (features and pairing keys
    from the workspace)."""
    y = ws.labels
    keys = pairing_keys(ws.ts.meta)
    X = ws.features.values
    return compare_run_sets(y[inputs.pos_a], inputs.conf_a, y[inputs.pos_b], inputs.conf_b,
                            name_a=inputs.name_a, name_b=inputs.name_b, X_a=X[inputs.pos_a], X_b=X[inputs.pos_b],
                            keys_a=keys[inputs.pos_a], keys_b=keys[inputs.pos_b], paired=inputs.paired,
                            threshold=threshold, strategy=strategy, n_boot=n_boot)


def _fmt(v: float, lo: float, hi: float, digits: int = 3, signed: bool = False) -> str:
    if not np.isfinite(v):
        return "n/a"
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    return f"{f.format(v)} [{f.format(lo)}, {f.format(hi)}]" if np.isfinite(lo) else f.format(v)


def metric_table(cmp: RunSetComparison) -> pd.DataFrame:
    """One row per metric: the verdict on the difference ('B better' / 'A better' when the interval of the difference
    excludes 0, else 'no clear difference') next to the metric, then A, B and B - A, each 'value [low, high]', and the
    runs counted. The sides' columns are named "A" and "B" (their run sets' names are ``cmp.name_a``/``name_b``,
    a column's help on the page): a run set's name as a header made the column as wide as the name, and the
    verdict, the table's answer, went out of sight at 900 px."""
    rows = []
    for r in cmp.metrics.frame.itertuples(index=False):
        higher = COMPARED_METRICS[r.metric][1]
        if np.isfinite(r.diff_low) and (r.diff_low > 0 or r.diff_high < 0):
            b_better = (r.diff_low > 0) == higher
            verdict = "B better" if b_better else "A better"
            if r.metric == "success_rate":
                verdict = "B higher" if r.diff_low > 0 else "A higher"
        else:
            verdict = "no clear difference"
        rows.append({"metric": f"{r.label} {'↑' if higher else '↓'}", "difference": verdict,
                     "A": _fmt(r.a, r.a_low, r.a_high), "B": _fmt(r.b, r.b_low, r.b_high),
                     "B − A": _fmt(r.diff, r.diff_low, r.diff_high, signed=True),
                     "n (A / B)": f"{r.n_a:,} / {r.n_b:,}"})
    return pd.DataFrame(rows)


def flipped_table(ws: Workspace, cmp: RunSetComparison, inputs: ABInputs) -> pd.DataFrame:
    """The runs whose verdict flipped, one row per pair: dataset, question, both ids, confidences, verdicts and
    outcomes, and the workspace keys of both runs (``key_a``/``key_b``, to open them in the inspector)."""
    fl = cmp.flipped
    meta = ws.ts.meta
    ra = inputs.pos_a[fl["pos_a"].to_numpy(dtype=np.int64)]
    rb = inputs.pos_b[fl["pos_b"].to_numpy(dtype=np.int64)]
    keys = ws.keys

    def outcome(v):
        return "success" if v == 1 else "failure" if v == 0 else "unlabeled"

    return pd.DataFrame({
        "dataset": meta["dataset"].to_numpy(dtype=object)[ra], "question": meta["question"].to_numpy(dtype=object)[ra],
        "id A": ws.ts.ids[ra].astype(str), "confidence A": fl["confidence_a"].round(3), "verdict A": fl["verdict_a"],
        "outcome A": [outcome(v) for v in fl["success_a"]],
        "id B": ws.ts.ids[rb].astype(str), "confidence B": fl["confidence_b"].round(3), "verdict B": fl["verdict_b"],
        "outcome B": [outcome(v) for v in fl["success_b"]],
        "key_a": keys[ra], "key_b": keys[rb]})


def shift_table(cmp: RunSetComparison, k: int = 48) -> pd.DataFrame:
    """The feature shifts, largest first: F-code, name, mean A, mean B, standardized mean difference."""
    if cmp.shifts is None:
        return pd.DataFrame(columns=["feature", "SMD (B − A)", "mean A", "mean B"])
    f = cmp.shifts.top(k)
    return pd.DataFrame({"feature": [feature_label(n) for n in f["feature"]], "SMD (B − A)": f["smd"].round(3),
                         "mean A": f["mean_a"].round(4), "mean B": f["mean_b"].round(4)})
