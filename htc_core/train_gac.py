"""Train the shipped General Agent Calibrators and write their model files with cards.

    python -m htc_core.train_gac                  # reads sample_runs/ and ../shared/data/uala-hotpotqa/
    python -m htc_core.train_gac --seeds 1 --out out/models   # a quick look elsewhere

An application of the library (it reads files, so it lives above ``calibration``, like the CLI). Reads the
labeled runs where they are (``sample_runs/`` of the repository and the MIT-licensed UALA HotpotQA
runs in ``../shared/data/uala-hotpotqa/``; nothing is copied), runs the leave-one-dataset-out experiment
(:func:`htc_core.calibration.gac.gac_leave_one_out`, strategies by-kind / pooled / chosen, next to
DirectTrain) for the card, fits ``gac`` (Reduced) and ``gac-full`` on all runs and writes
``htc_core/calibration/models/gac.json`` and ``gac-full.json``. Only these JSON files are committed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SAMPLE_RUNS = REPO / "sample_runs"
DEFAULT_UALA = REPO.parent / "shared" / "data" / "uala-hotpotqa"
DEFAULT_OUT = Path(__file__).resolve().parent / "calibration" / "models"
NAMES = {"reduced": "gac", "full": "gac-full"}

DECISION = (
    "Runs with top-k alternatives (sample_runs, top-5) and runs without (UALA HotpotQA, chosen-token logprobs "
    "only) give systematically different features: without alternatives Top1Conf and TopkConf fall back to r. "
    "Leave-one-dataset-out, one 'paper'-profile model pooled over both kinds ('pooled') ranks the held-out "
    "HotpotQA runs worse than chance (AUROC below 0.5); a model on 'chosen'-profile features (alternatives "
    "ignored for every run) does not invert. For held-out runs that list alternatives, a 'paper' model fitted "
    "only on the pooled runs that list them ('by-kind') has the lower mean ECE and Brier over the held-out "
    "datasets than 'pooled' (not on every dataset, and 'pooled' ranks slightly better on mean AUROC; see "
    "mean_by_kind_of_heldout and rows), and ignoring the alternatives for them ('chosen') is worse on ECE. "
    "Calibration (ECE) is what a zero-shot confidence is for, so the GAC holds two models and picks one per run from "
    "the input: runs that list alternatives -> with_alternatives ('paper' profile, trained on the runs with "
    "alternatives); runs without -> without_alternatives ('chosen' profile, trained on all runs).")


def _mean_by_kind(loo, variant: str) -> dict:
    """strategy -> kind of held-out group -> mean ECE / Brier / AUROC over those held-out groups."""
    rows = loo.rows[loo.rows.variant == variant]
    kind = {g: ("with_alternatives" if loo.alternatives[g] == loo.n_runs[g] else
                "without_alternatives" if loo.alternatives[g] == 0 else "mixed") for g in loo.groups}
    out: dict = {}
    for method, r in rows.groupby("method", sort=False):
        for k, x in r.groupby(r.heldout.map(kind)):
            out.setdefault(method, {})[k] = {"groups": sorted(x.heldout), **{
                m: round(float(x[f"{m}_mean"].mean()), 4) for m in ("ece", "brier", "auroc")}}
    return out


def _rel(p: Path) -> str:
    """``p`` relative to the repository root (``sample_runs``, ``../shared/data/uala-hotpotqa``)."""
    import os

    return os.path.relpath(p.resolve(), REPO)


def _counts(ts) -> list[dict]:
    from .calibration.grouping import has_alternatives

    m = ts.meta.assign(alternatives=has_alternatives(ts), success=ts.labels)
    g = m.groupby(["dataset", "model"], dropna=False)
    return [{"dataset": str(d), "model": str(mo), "runs": int(len(x)), "success_rate": round(float(x.success.mean()), 4),
             "top_k_alternatives": bool(x.alternatives.all())} for (d, mo), x in g]


def _submodel_card(m) -> dict | None:
    if m is None:
        return None
    return {"profile": m.profile_, "top_k": int(m.top_k_), "variant": m.variant, "alpha": float(m.alpha_),
            "n_train": int(m.training_summary_.get("n", 0)),
            "positive_rate": round(float(m.training_summary_.get("positive_rate", float("nan"))), 4),
            "n_selected": int(m.n_selected_), "selected_features": m.selected_features_}


def loo_section(loo, variant: str) -> dict:
    rows = [r for r in loo.to_dict()["rows"] if r["variant"] == variant]
    return {"by": loo.by, "seeds": loo.seeds, "strategies": loo.strategies,
            "mean_by_kind_of_heldout": _mean_by_kind(loo, variant), "rows": rows, "notes": loo.notes}


def build_card(name: str, variant: str, ts, sources: list[Path], loo: dict, gac) -> dict:
    from ._version import __version__
    from .calibration.grouping import has_alternatives

    alt = has_alternatives(ts)
    return {
        "name": name,
        "title": f"General Agent Calibrator ({'Reduced, L1' if variant == 'reduced' else 'Full, L2'})",
        "htc_version": __version__,
        "intended_use": "zero-shot calibrated confidence for agent runs without outcome labels; the "
                        "leave-one-dataset-out numbers below are what to expect on a dataset it has not seen. "
                        "Fit your own HTC calibrator (htc fit) when you have labeled runs of your task.",
        "training_data": {"sources": [_rel(s) for s in sources],
                          "licenses": {"sample_runs": "the project's own runs (Apache-2.0)",
                                       "uala-hotpotqa": "MIT (see its LICENSE)"},
                          "n": int(len(ts)), "positive_rate": round(float(ts.labels.mean()), 4),
                          "runs_with_alternatives": int(alt.sum()), "runs_without_alternatives": int((~alt).sum()),
                          "by_dataset_and_model": _counts(ts)},
        "models": {k: _submodel_card(m) for k, m in gac.models.items()},
        "routing": "per run, from the input: runs that list top-k alternatives -> with_alternatives; "
                   "runs without -> without_alternatives",
        "decision": DECISION,
        "leave_one_out": loo,
        "applicability": "each sub-model's training.feature_stats holds the per-feature mean and std of its "
                         "training runs; htc score warns when the scored runs' mean of a used feature moves by 2 "
                         "or more training standard deviations (htc_core.calibration.shift)",
        "regenerate": "python -m htc_core.train_gac",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_core.train_gac", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample-runs", type=Path, default=DEFAULT_SAMPLE_RUNS)
    ap.add_argument("--uala", type=Path, default=DEFAULT_UALA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for gac.json and gac-full.json")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the leave-one-out experiment (default 3)")
    ap.add_argument("--reuse-leave-one-out", action="store_true",
                    help="take the card's leave-one-out section from the model files already in --out instead of "
                         "recomputing it (minutes); for changes that do not touch the fits or the data")
    args = ap.parse_args(argv)

    from .calibration.gac import STRATEGIES, gac_leave_one_out
    from .calibration.general import fit_general
    from .formats import load

    sources = [p for p in (args.sample_runs, args.uala) if p.exists()]
    missing = [p for p in (args.sample_runs, args.uala) if not p.exists()]
    for p in missing:
        print(f"train_gac: warning: {p} not found; training without it", file=sys.stderr)
    if not sources:
        print("train_gac: error: no training data found", file=sys.stderr)
        return 2
    ts, report = load([str(p) for p in sources])
    ts = ts.labeled()
    print(f"training data: {len(ts)} labeled runs from {', '.join(map(_rel, sources))}", file=sys.stderr)
    sections = _reused_sections(args.out) if args.reuse_leave_one_out else None
    if sections is None:
        loo = gac_leave_one_out(ts, by="dataset", seeds=args.seeds, strategies=STRATEGIES,
                                progress=lambda d, t, m: print(f"  leave-one-out {d}/{t} ({m})", file=sys.stderr))
        print(loo.table())
        sections = {v: loo_section(loo, v) for v in NAMES}
    for variant, name in NAMES.items():
        gac = fit_general(ts, variant=variant, name=name)
        gac.card = build_card(name, variant, ts, sources, sections[variant], gac)
        out = gac.save(args.out / f"{name}.json")
        print(f"wrote {out}")
    return 0


def _reused_sections(folder: Path) -> dict | None:
    import json

    out = {}
    for variant, name in NAMES.items():
        try:
            out[variant] = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))["card"]["leave_one_out"]
        except (OSError, ValueError, KeyError, TypeError):
            print(f"train_gac: no leave-one-out section in {folder / (name + '.json')}; recomputing", file=sys.stderr)
            return None
    print("train_gac: leave-one-out sections reused from the existing model files", file=sys.stderr)
    return out


if __name__ == "__main__":
    sys.exit(main())
