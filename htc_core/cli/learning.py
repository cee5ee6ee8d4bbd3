"""``htc learning-curve``: HTC-Full / HTC-Reduced next to the learning baselines as the training set grows."""

from __future__ import annotations

import argparse
import sys

from .common import CLIError, add_input_options, labeled_only, load_inputs, seeds_arg


def _sizes(value: str) -> list[int]:
    try:
        out = [int(v) for v in value.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated training sizes such as 50,100,200,400, "
                                         f"got {value!r}") from None
    if not out or min(out) < 10:
        raise argparse.ArgumentTypeError(f"training sizes must be integers >= 10, got {value!r}")
    return out


def _progress(quiet: bool):
    if quiet:
        return None
    tty = sys.stderr.isatty()

    def show(done: int, total: int, msg: str) -> None:
        # on a terminal one updating line; otherwise (a log, CI) one line every 5 % so progress stays visible
        if tty:
            print(f"\r  fit {done}/{total} ({msg})".ljust(78), end="" if done < total else "\n", file=sys.stderr,
                  flush=True)
        elif done == total or done % max(1, total // 20) == 0:
            print(f"  fit {done}/{total} ({msg})", file=sys.stderr, flush=True)

    return show


def _gac_entries() -> dict:
    """The GAC rows (issue 14): zero-shot and adapted from a GAC that never saw the runs' datasets. Opt-in
    (--with-gac or by name in --methods): they refit a GAC on the shipped one's training sources when the
    input's datasets are among them, which takes minutes."""
    from ..experiments.curve_methods import CurveMethod
    from ..experiments.gac_entries import gac_adapted, gac_zero_shot

    return {"gac zero shot": CurveMethod("GAC zero-shot", gac_zero_shot, kind="zero-shot",
                                         description="the GAC without the runs' datasets, applied unchanged"),
            "gac adapted": CurveMethod("GAC adapted", gac_adapted, kind="htc",
                                       description="HTC fitted with that GAC as its prior (htc fit --prior)")}


def _with_gac_entries(methods, with_gac: bool):
    """Replace the GAC rows' names in ``methods`` by their entries; ``with_gac`` adds both to the default list."""
    from ..experiments.curve_methods import CURVE_METHODS

    extra = _gac_entries()
    if methods is None:
        return list(CURVE_METHODS.values()) + list(extra.values()) if with_gac else None
    out = [extra.get(m.strip().lower().replace("-", " "), m) for m in methods]
    if with_gac:
        out += [e for e in extra.values() if e not in out]
    return out


def cmd_learning_curve(args: argparse.Namespace) -> int:
    from ..calibration.evaluation import EvaluationError
    from ..experiments.learning import MissingExtraError
    from ..experiments.learning_curve import learning_curve, resolve_curve_methods

    methods = None if args.methods is None else [m for m in args.methods.split(",") if m.strip()]
    methods = _with_gac_entries(methods, args.with_gac)
    try:
        resolve_curve_methods(methods)     # unknown names and a missing extra fail before reading the inputs
    except (ValueError, MissingExtraError) as e:
        hint = ("; without the extra, run the methods that need none: --methods htc-full,htc-reduced,gp"
                if isinstance(e, MissingExtraError) else "")
        raise CLIError(f"{e}{hint}") from None
    ts, _ = load_inputs(args, quiet=args.json)
    ts = labeled_only(ts, "learning-curve")
    try:
        res = learning_curve(ts, sizes=args.sizes, repeats=args.repeats, folds=args.folds, methods=methods,
                             progress=_progress(args.quiet))
    except EvaluationError as e:
        raise CLIError(str(e)) from None
    print(res.to_json() if args.json else res.table())
    return 0


def register(sub) -> None:
    from ..experiments.curve_methods import CURVE_METHODS

    p = sub.add_parser(
        "learning-curve", help="HTC vs learning baselines (MLP, XGBoost, GP, LSTM, Transformer) by training size",
        description="For each training size, draw a stratified subsample from the training part of each outer "
                    "fold (the same folds and draws for every method), fit HTC-Full, HTC-Reduced and the learning "
                    "baselines (paper appendix hyperparameters), and score the fold's test runs. Prints ECE, Brier "
                    "and AUROC as mean ± std over repeats x folds, and the seconds per fit. The MLP, XGBoost, LSTM "
                    "and Transformer need the optional extra: pip install -e \".[learning]\". Progress goes to "
                    "standard error (the neural baselines may take minutes).")
    add_input_options(p)
    p.add_argument("--sizes", type=_sizes, default=[50, 100, 200, 400], metavar="N,N,...",
                   help="training sizes (default: 50,100,200,400); a size above a fold's training part uses all of it")
    p.add_argument("--repeats", type=seeds_arg, default=1, metavar="N",
                   help="repeats of the outer CV, seeds 42..42+N-1 (default: 1)")
    p.add_argument("--folds", type=int, choices=range(2, 11), default=5, metavar="K",
                   help="outer stratified folds (default: 5)")
    p.add_argument("--methods", metavar="NAME,...",
                   help=f"comma-separated, case-insensitive (default: all but the GAC rows): {', '.join(CURVE_METHODS)}, "
                        "gac-zero-shot, gac-adapted")
    p.add_argument("--with-gac", action="store_true",
                   help="add 'GAC zero-shot' and 'GAC adapted' (a GAC that never saw the runs' datasets, used "
                        "unchanged and as the prior of htc fit --prior; also selectable by name in --methods)")
    p.add_argument("--json", action="store_true", help="print one JSON object (fields: docs/cli.md, 'JSON outputs')")
    p.add_argument("--quiet", action="store_true", help="no progress on standard error")
    p.set_defaults(func=cmd_learning_curve)
