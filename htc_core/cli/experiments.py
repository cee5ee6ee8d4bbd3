"""``htc transfer``, ``htc gac``, ``htc ablation``, ``htc models``: the paper's transfer, generalization and
ablation experiments, and the shipped models."""

from __future__ import annotations

import argparse
import json
import sys

from .common import CLIError, add_feature_options, add_input_options, load_inputs, seeds_arg

VARIANTS = {"both": ("full", "reduced"), "full": ("full",), "reduced": ("reduced",)}


def _progress(what: str, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None

    def show(done: int, total: int, msg: str) -> None:
        print(f"\r  {what} {done}/{total} ({msg})".ljust(70), end="" if done < total else "\n", file=sys.stderr,
              flush=True)

    return show


def _emit(res, as_json: bool) -> int:
    print(res.to_json() if as_json else res.table())
    return 0


def _run(fn, *a, **kw):
    from ..calibration.evaluation import EvaluationError

    try:
        return fn(*a, **kw)
    except EvaluationError as e:
        raise CLIError(str(e)) from None


def cmd_transfer(args: argparse.Namespace) -> int:
    from ..experiments.transfer import transfer

    ts, _ = load_inputs(args, quiet=args.json)
    res = _run(transfer, ts, by=args.by, variants=VARIANTS[args.variant], seeds=args.seeds, profile=args.profile,
               top_k=args.top_k, progress=_progress("source group", args.json))
    return _emit(res, args.json)


def cmd_gac(args: argparse.Namespace) -> int:
    from ..experiments.gac import STRATEGIES, gac_leave_one_out

    ts, _ = load_inputs(args, quiet=args.json)
    strategies = STRATEGIES if args.strategy == "all" else (args.strategy,)
    res = _run(gac_leave_one_out, ts, by=args.by, variants=VARIANTS[args.variant], seeds=args.seeds,
               strategies=strategies, top_k=args.top_k, progress=_progress("held-out group", args.json))
    return _emit(res, args.json)


def cmd_ablation(args: argparse.Namespace) -> int:
    from ..experiments.ablation import ablation
    from .common import labeled_only

    ts, _ = load_inputs(args, quiet=args.json)
    ts = labeled_only(ts, "ablation")
    res = _run(ablation, ts, variants=VARIANTS[args.variant], seeds=args.seeds, profile=args.profile,
               top_k=args.top_k, progress=_progress("outer fold", args.json))
    return _emit(res, args.json)


def cmd_models(args: argparse.Namespace) -> int:
    from ..calibration.models import SHIPPED, shipped_models

    models = shipped_models()
    if args.name:
        models = [m for m in models if m.name == args.name]
        if not models:
            raise CLIError(f"no shipped model named {args.name!r}; shipped models: {', '.join(SHIPPED)}")
    if args.json:
        print(json.dumps([m.to_dict() for m in models], indent=1))
        return 0
    if not models:
        print("no shipped models in this installation (python -m htc_dev.train_gac writes them, in a checkout of "
              "the repository)")
        return 0
    for m in models:
        print(_card_text(m, full=bool(args.name)))
    return 0


def _card_text(m, *, full: bool) -> str:
    c = m.card
    td = c.get("training_data", {})
    lines = [f"{m.name}: {c.get('title', '')}", f"  file: {m.path}",
             f"  trained on {td.get('n', '?')} runs ({td.get('runs_with_alternatives', '?')} with top-k alternatives, "
             f"{td.get('runs_without_alternatives', '?')} without) from {', '.join(td.get('sources', []))}"]
    for r in td.get("by_dataset_and_model", []) if full else []:
        lines.append(f"    {r['dataset']:<12} {r['model']:<28} {r['runs']:>5} runs, success {r['success_rate']:.3f}, "
                     f"alternatives: {'yes' if r['top_k_alternatives'] else 'no'}")
    for kind, sub in (c.get("models") or {}).items():
        if sub:
            lines.append(f"  {kind}: profile {sub['profile']}, top-k {sub['top_k']}, {sub['n_train']} runs, "
                         f"alpha {sub['alpha']:g}, {sub['n_selected']} features kept")
    loo = c.get("leave_one_out", {})
    if "summary" in loo:
        lines += _family_lines(c, loo, full)
        rows = []
    else:
        rows = [r for r in loo.get("rows", []) if full or r["method"] in ("GAC (by-kind)", "DirectTrain")]
    if rows:
        lines.append(f"  leave-one-{loo.get('by', 'dataset')}-out (zero-shot on the held-out group; mean over seeds "
                     f"{', '.join(map(str, loo.get('seeds', [])))}):")
        for r in rows:
            lines.append(f"    {r['heldout']:<12} {r['method']:<15} ECE {r['ece']['mean']:.3f}  Brier "
                         f"{r['brier']['mean']:.3f}  AUROC {r['auroc']['mean']:.3f}")
    if full:
        lines.append(f"  routing: {c.get('routing', '')}")
        lines.append(f"  decision: {c.get('decision', '')}")
    lines.append(f"  use: htc score {m.name} INPUT --out scores.csv" + ("" if full else f"   (full card: htc models {m.name})"))
    return "\n".join(lines)


def _family_lines(c: dict, loo: dict, full: bool) -> list[str]:
    """The leave-one-family-out section of a card: the shipped transfer method per held-out family (every
    candidate with the full card), mean and worst over the families."""
    chosen = loo.get("chosen", "gac")
    held = (c.get("transfer") or {}).get("held") or {}
    what = f"{chosen}" + (f" (signal {held.get('signal')}, coef {held.get('coef')})" if held else "")
    regen = loo.get("regenerate", "in a checkout: python -m htc_dev.train_gac --table-only")
    out = [f"  transfer: {what}, chosen leave-one-family-out ({regen})"]
    methods = loo.get("methods", []) if full else [m for m in ("gac", chosen) if m]
    for r in loo.get("rows", []):
        if r["method"] in dict.fromkeys(methods):
            out.append(f"    {r['family']:<28} {r['method']:<10} ECE {r['ece']:.3f}  Brier {r['brier']:.3f}  "
                       f"AUROC {r['auroc']:.3f}")
    for m in dict.fromkeys(methods):
        s = loo.get("summary", {}).get(m)
        if s:
            out.append(f"    {'mean / worst':<28} {m:<10} ECE {s['ece_mean']:.3f} / {s['ece_worst']:.3f}  AUROC "
                       f"{s['auroc_mean']:.3f} / {s['auroc_worst']:.3f}")
    return out + _prefix_lines(loo.get("mean_by_prefix") or [], chosen)


def _prefix_lines(means: list[dict], chosen: str) -> list[str]:
    """A prefix model's card: per cut, the mean over held-out families of the model as fitted and of the chosen
    transfer (ECE / AUROC) next to the best running signal's AUROC."""
    by = {(r["prefix"], r["method"]): r for r in means}
    out = [f"    per cut, mean over held-out families: ECE / AUROC of gac and {chosen}, best running signal's AUROC"] \
        if means else []
    for cut in dict.fromkeys(r["prefix"] for r in means):
        cells = [f"{m} {by[(cut, m)]['ece']:.3f} / {by[(cut, m)]['auroc']:.3f}" for m in dict.fromkeys(("gac", chosen))
                 if (cut, m) in by]
        sig = [(r["auroc"], k[1][7:]) for k, r in by.items() if k[0] == cut and k[1].startswith("signal:")]
        best = f"  best signal {max(sig)[1]} {max(sig)[0]:.3f}" if sig else ""
        out.append(f"    {cut:<16} " + "   ".join(cells) + best)
    return out


def register(sub) -> None:
    from ..experiments.group_keys import GROUP_KEYS

    p = sub.add_parser("transfer", help="source x target transfer matrices (ECE, Brier, AUROC) across groups",
                       description="For every group of runs (--by dataset, model or framework), fit HTC-Full and "
                                   "HTC-Reduced on all of its labeled runs and evaluate them unchanged on every "
                                   "other group. The diagonal is DirectTrain: the honest nested CV of the group "
                                   "itself. Off-diagonal cells are mean ± std over seeds (which drive the alpha "
                                   "selection), the diagonal over CV repeats. Unlabeled runs and groups with too "
                                   "few labels are left out with a note.")
    _experiment_options(p, GROUP_KEYS)
    add_feature_options(p)
    p.set_defaults(func=cmd_transfer)

    p = sub.add_parser("gac", help="General Agent Calibrator: leave-one-group-out vs DirectTrain",
                       description="For every group (--by), fit a calibrator on the pooled runs of all the other "
                                   "groups and apply it zero-shot to the held-out one, next to DirectTrain (nested "
                                   "CV of the held-out group). --strategy picks how runs with and without top-k "
                                   "alternatives are pooled: by-kind (the shipped GAC: one model per kind, chosen "
                                   "per run), pooled (one model on everything), chosen (alternatives ignored), all.")
    _experiment_options(p, GROUP_KEYS)
    p.add_argument("--strategy", choices=("by-kind", "pooled", "chosen", "all"), default="by-kind",
                   help="pooling of runs with/without alternatives (default: by-kind)")
    p.add_argument("--top-k", type=int, default=5, metavar="K", help="alternatives averaged into TopkConf (default: 5)")
    p.set_defaults(func=cmd_gac)

    p = sub.add_parser("ablation", help="HTC on the 15 combinations of feature families + selection frequency",
                       description="Evaluate HTC-Full and HTC-Reduced on each of the 15 non-empty combinations of "
                                   "the four feature families (Dynamics, Position, Stability, Structure) with the "
                                   "protocol of `htc evaluate` (same folds; the all-families row equals its HTC "
                                   "rows), and count how often each feature is the Top-1, in the Top-3 / Top-5 by "
                                   "|weight|, and selected at all, over folds and seeds, by feature and family.")
    _experiment_options(p, None)
    add_feature_options(p)
    p.set_defaults(func=cmd_ablation)

    p = sub.add_parser("models", help="list the shipped models (gac, gac-full, gac-prefix) and their model cards",
                       description="List the models shipped inside the package with their model cards (training "
                                   "data, runs per dataset and model, profile, top-k, leave-one-out results). "
                                   "Score runs with one: htc score gac INPUT --out scores.csv")
    p.add_argument("name", nargs="?", help="show the full card of one model (gac, gac-full, gac-prefix)")
    p.add_argument("--json", action="store_true", help="print the models and cards as JSON")
    p.set_defaults(func=cmd_models)


def _experiment_options(p: argparse.ArgumentParser, group_keys) -> None:
    add_input_options(p)
    if group_keys:
        p.add_argument("--by", choices=group_keys, default="dataset",
                       help="the metadata column that defines the groups (default: dataset)")
    p.add_argument("--variant", choices=tuple(VARIANTS), default="both",
                   help="HTC variants to run (default: both = full and reduced)")
    p.add_argument("--seeds", type=seeds_arg, default=3, metavar="N", help="seeds 42..42+N-1 (default: 3)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the tables "
                                                       "(fields: docs/cli.md, 'JSON outputs')")
