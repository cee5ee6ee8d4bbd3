"""The ``htc`` command: features, validate (and more, one sub-command per job)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__

EPILOG = """examples:
  htc validate ../shared/data/uala-hotpotqa/
  htc features sample_runs/ --out features.csv
"""


class CLIError(Exception):
    """An error the user can fix; printed without a traceback."""


def _add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="trace files or directories (directories are searched for *.jsonl)")
    p.add_argument("--format", default="auto", help="input format (default: auto-detect)")
    p.add_argument("--dataset", help="set the dataset name of every trajectory that has none")
    p.add_argument("--model", help="set the model name of every trajectory that has none")


def _add_feature_options(p: argparse.ArgumentParser) -> None:
    from .confidence import PROFILES

    p.add_argument("--profile", default="paper", choices=sorted(PROFILES),
                   help="token-confidence profile (default: paper; see DESIGN.md section 3)")
    p.add_argument("--top-k", type=int, default=5, metavar="K",
                   help="alternatives averaged into TopkConf (default: 5)")


def load_inputs(args: argparse.Namespace, *, quiet: bool = False):
    from .formats import load

    defaults = {k: getattr(args, k) for k in ("dataset", "model") if getattr(args, k, None)}
    try:
        ts, report = load(args.inputs, format=args.format, defaults=defaults)
    except ValueError as e:
        raise CLIError(str(e)) from None
    if not quiet and (report.problems or report.rejected):
        print(report.summary(max_lines=5), file=sys.stderr)
    if ts.n_trajectories == 0:
        raise CLIError("no valid trajectories were read from " + ", ".join(map(str, args.inputs)))
    return ts, report


def cmd_validate(args: argparse.Namespace) -> int:
    from .formats import load

    defaults = {k: getattr(args, k) for k in ("dataset", "model") if getattr(args, k, None)}
    try:
        ts, report = load(args.inputs, format=args.format, defaults=defaults)
    except ValueError as e:
        raise CLIError(str(e)) from None
    print(report.summary(max_lines=args.max_problems))
    if ts.n_trajectories:
        labeled = ts.labels
        n_lab = int((~__import__("numpy").isnan(labeled)).sum())
        print(f"steps: {ts.n_steps}, tokens: {ts.n_tokens}, alternatives per token (k): {ts.k}")
        if n_lab:
            print(f"labeled: {n_lab}, success rate: {__import__('numpy').nanmean(labeled):.3f}")
    return 0 if ts.n_trajectories else 1


def cmd_features(args: argparse.Namespace) -> int:
    from .features import extract

    ts, _ = load_inputs(args)
    try:
        fm = extract(ts, profile=args.profile, top_k=args.top_k)
    except ValueError as e:
        raise CLIError(str(e)) from None
    df = fm.to_frame(ts.meta)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".parquet":
        df.to_parquet(out, index=False)
    elif out.suffix == ".csv":
        df.to_csv(out, index=False, float_format="%.17g")
    else:
        raise CLIError(f"--out must end in .csv or .parquet, got {out}")
    print(f"wrote {len(df)} trajectories x {len(fm.names)} features to {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="htc",
        description="Holistic Trajectory Calibration: how far to trust your LLM agent runs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"htc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("validate", help="read traces and print the load report",
                       description="Read trace files and print what was kept and rejected (file, line, field, "
                                   "value, reason). Exits 1 when nothing valid was read.")
    _add_input_options(p)
    p.add_argument("--max-problems", type=int, default=20, help="problems to print (default: 20)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("features", help="compute the 48 HTC features per trajectory",
                       description="Write one row per trajectory: id, dataset, model, success and the 48 "
                                   "features in the paper's order (F0..F47).")
    _add_input_options(p)
    _add_feature_options(p)
    p.add_argument("--out", required=True, metavar="FILE", help="output .csv or .parquet")
    p.set_defaults(func=cmd_features)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        print(f"htc {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
