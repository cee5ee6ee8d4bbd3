"""``htc validate``, ``htc features``, ``htc import``: reading traces and writing what was read."""

from __future__ import annotations

import argparse
import sys

from .common import CLIError, add_feature_options, add_input_options, load_inputs, output_path


def cmd_validate(args: argparse.Namespace) -> int:
    from ..formats import load

    defaults = {k: getattr(args, k) for k in ("dataset", "model") if getattr(args, k, None)}
    try:
        ts, report = load(args.inputs, format=args.format, defaults=defaults,
                          labels=getattr(args, "labels", None), group_by=getattr(args, "group_by", None))
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
    from ..atomic import atomic_path
    from ..features import extract

    out = output_path(args.out, (".csv", ".parquet"))  # checked before the work
    ts, _ = load_inputs(args)
    try:
        fm = extract(ts, profile=args.profile, top_k=args.top_k)
    except ValueError as e:
        raise CLIError(str(e)) from None
    df = fm.to_frame(ts.meta)
    with atomic_path(out) as tmp:
        if out.suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False, float_format="%.17g")
    print(f"wrote {len(df)} trajectories x {len(fm.names)} features to {out}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from ..formats import load, native

    out = output_path(args.out, (".jsonl",))  # checked before the work; None: standard output
    defaults = {k: getattr(args, k) for k in ("dataset", "model") if getattr(args, k, None)}
    try:
        ts, report = load(args.inputs, format=args.format, defaults=defaults, labels=args.labels,
                          group_by=args.group_by)
    except ValueError as e:
        raise CLIError(str(e)) from None
    to_stdout = out is None
    report_fh = sys.stderr if to_stdout else sys.stdout
    print(report.summary(max_lines=args.max_problems), file=report_fh)
    if ts.n_trajectories == 0:
        print("nothing to write: no valid trajectories", file=report_fh)
        return 1
    if to_stdout:
        native.write(ts, sys.stdout)
    else:
        n = native.write(ts, out)  # atomic: a failure half-way leaves the previous file intact
        print(f"wrote {n} trajectories ({ts.n_steps} steps, {ts.n_tokens} tokens, k={ts.k}) to {out}",
              file=report_fh)
    return 0



def register(sub) -> None:
    p = sub.add_parser("validate", help="read traces and print the load report",
                       description="Read trace files and print what was kept and rejected (file, line, field, "
                                   "value, reason). Exits 1 when nothing valid was read.")
    add_input_options(p)
    p.add_argument("--max-problems", type=int, default=20, help="problems to print (default: 20)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("features", help="compute the 48 HTC features per trajectory",
                       description="Write one row per trajectory: id, dataset, model, success and the 48 "
                                   "features in the paper's order, named as in its Listing FEATURE_MAP_FINAL_STABLE.")
    add_input_options(p)
    add_feature_options(p)
    p.add_argument("--out", required=True, metavar="FILE", help="output .csv or .parquet")
    p.set_defaults(func=cmd_features)

    p = sub.add_parser("import", help="convert traces of any supported format to htc-trace JSONL",
                       description="Read traces (OpenAI chat/call logs, Responses API, completions, smolagents, "
                                   "ATIF, native), join --labels, write htc-trace JSONL v1 and print the load "
                                   "report. Exits 1 when nothing valid was read.")
    add_input_options(p)
    p.add_argument("--out", metavar="FILE.jsonl", help="output file (default: standard output)")
    p.add_argument("--max-problems", type=int, default=20, help="problems to print (default: 20)")
    p.set_defaults(func=cmd_import)
