"""``htc adapt-curve``: zero-shot GAC vs from-scratch HTC vs the adapted GAC at 10..200 labels of a held-out group."""

from __future__ import annotations

import argparse
import sys

from .common import CLIError, add_input_options, load_inputs, seeds_arg


def _sizes(value: str) -> list[int]:
    try:
        sizes = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 10,20,50, got {value!r}") from None
    if not sizes or min(sizes) < 4:
        raise argparse.ArgumentTypeError(f"label budgets must be integers >= 4, got {value!r}")
    return sizes


def _show(done: int, total: int, msg: str) -> None:
    print(f"\r  label budget {done}/{total} ({msg})".ljust(60), end="" if done < total else "\n", file=sys.stderr,
          flush=True)


def cmd_adapt_curve(args: argparse.Namespace) -> int:
    from ..experiments.adapt_curve import adaptation_curve

    ts, _ = load_inputs(args, quiet=args.json)
    progress = _show if not args.json and sys.stderr.isatty() else None
    try:
        res = adaptation_curve(ts, group=args.group, target=args.target, sizes=args.sizes, seeds=args.seeds,
                               prior=args.prior, progress=progress)
    except ValueError as e:
        raise CLIError(str(e)) from None
    print(res.to_json() if args.json else res.table())
    return 0


def register(sub) -> None:
    p = sub.add_parser("adapt-curve", help="zero-shot GAC, from-scratch HTC and the adapted GAC at 10..200 labels",
                       description="For the runs of one held-out group (--target, a value of --group): draw N "
                                   "labeled runs (stratified by outcome), test on the rest, and compare the GAC "
                                   "zero-shot, HTC-Reduced fitted on the N runs alone, and the GAC adapted to them "
                                   "(htc fit --prior); mean ± std over seeds 42, 43, ... By default the GAC is "
                                   "fitted here on the other groups of the input, so no target run reaches it.",
                       epilog="example: htc adapt-curve sample_runs/ --target units --sizes 10,20,50 --seeds 2")
    add_input_options(p)
    p.add_argument("--group", default="dataset", metavar="KEY",
                   help="metadata column whose values are the groups (default: dataset)")
    p.add_argument("--target", required=True, metavar="NAME", help="the held-out group to adapt to")
    p.add_argument("--sizes", type=_sizes, default=[10, 20, 50, 100, 200], metavar="N,N,...",
                   help="label budgets (default: 10,20,50,100,200; a budget that leaves fewer than 30 target runs "
                        "to test on is left out)")
    p.add_argument("--seeds", type=seeds_arg, default=5, metavar="N", help="repeats per budget (default: 5)")
    p.add_argument("--prior", metavar="MODEL",
                   help="use this model (shipped name or file) as the prior instead of a GAC fitted on the other "
                        "groups; refused when its card lists the target among its training data")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(func=cmd_adapt_curve)
