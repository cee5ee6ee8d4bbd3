"""``htc label next``: the next runs to label, chosen for calibration (the dashboard's Label queue, as a command).

A script runs the same loop as the page: label the proposed runs, add them to the labels file, ask again; then
``htc fit INPUT --labels FILE --prior gac`` fits the adapted model on them.
"""

from __future__ import annotations

import argparse
import json

from .common import CLIError, add_input_options, load_inputs, seeds_arg


def cmd_label_next(args: argparse.Namespace) -> int:
    import numpy as np

    from ..calibration.active import queue_step
    from ..experiments.adapt_curve import profile_for
    from ..calibration.models import load_model
    from ..features import extract

    ts, _ = load_inputs(args, quiet=args.json)
    try:
        prior = load_model(args.prior)
        profile, top_k = profile_for(prior, ts)
        fm = extract(ts, profile=profile, top_k=top_k)
        step = queue_step(fm, ts.labels, prior, n=args.n, strategy=args.strategy, seed=args.seed)
    except ValueError as e:
        raise CLIError(str(e)) from None
    ids = [str(ts.ids[i]) for i in step.positions]
    if args.json:
        print(json.dumps({"ids": ids, "labeled": step.n_labeled, "adapted": step.adapted,
                          "strategy": args.strategy, "confidence": [round(float(step.scores[i]), 6)
                                                                    for i in step.positions]}))
        return 0
    print(f"{step.n_labeled} of {len(ts)} runs labeled; confidence from "
          f"{'the prior adapted to them' if step.adapted else 'the prior (zero-shot)'}; strategy {args.strategy}")
    for n in step.notes:
        print(f"note: {n}")
    if not ids:
        print("every run is labeled")
    for tid, i in zip(ids, step.positions):
        print(f"  {tid}\tconfidence {step.scores[i]:.3f}")
    if np.isfinite(ts.labels).sum() == 0:
        print("label them (a CSV with id,success), then run again with --labels FILE")
    return 0


#: the strategies of ``calibration.active.STRATEGIES`` (written out: building the parser imports no numpy)
STRATEGIES = ("stratified", "calibration", "mixed", "variance", "refit", "random", "uncertainty")


def register(sub) -> None:
    p = sub.add_parser("label", help="the label queue: which runs to label next for calibration",
                       description="Active labeling for calibration.")
    ops = p.add_subparsers(dest="label_command", metavar="ACTION", required=True)
    q = ops.add_parser("next", help="the next runs to label",
                       description="Adapts the prior (as htc fit --prior) to the runs of INPUT that carry a label "
                                   "(inline or through --labels), scores every run with it and proposes the next N "
                                   "unlabeled runs: by default spread over equal-mass bins of the current "
                                   "confidence, in proportion (htc_core.calibration.active; docs/labeling.md "
                                   "compares the strategies).",
                       epilog="example: htc label next runs/ --labels labels.csv --model gac -n 10 --json")
    add_input_options(q, model_name=False)
    q.add_argument("--model", dest="prior", default="gac", metavar="MODEL",
                   help="the prior: a shipped model (gac, gac-full) or a model file (default: gac)")
    q.add_argument("-n", type=seeds_arg, default=10, metavar="N", help="how many runs to propose (default: 10)")
    q.add_argument("--seed", type=int, default=42, help="random seed (default: 42)")
    q.add_argument("--strategy", choices=STRATEGIES, default="stratified",
                   help="stratified (default), calibration, mixed, variance, refit, random or uncertainty "
                        "(see htc_core.calibration.active)")
    q.add_argument("--json", action="store_true", help='print {"ids": [...], ...} instead of the table')
    q.set_defaults(func=cmd_label_next)
