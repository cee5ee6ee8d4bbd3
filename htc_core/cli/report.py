"""``htc report``: one self-contained HTML file with the whole analysis of a set of runs."""

from __future__ import annotations

import argparse
import sys

from .common import CLIError, add_feature_options, add_input_options, labeled_only, load_inputs, output_path, seeds_arg

INSTALL_HINT = "htc report draws its figures with plotly: pip install 'htc-core[app]' (or: pip install plotly)"


def cmd_report(args: argparse.Namespace) -> int:
    out = output_path(args.out, (".html", ".htm"))
    if out is None:
        raise CLIError("--out must name an .html file")
    try:     # not core: the figures are the dashboard's plotly builders
        from ..htmlreport import build_report, compute_report
        from ..htmlreport.learning import read_learning_curve
    except ImportError as e:
        raise CLIError(f"{INSTALL_HINT} ({e})") from None
    from ..atomic import write_text
    from ..calibration.evaluation import EvaluationError

    curve = None
    if args.learning_curve:
        try:
            curve = read_learning_curve(args.learning_curve)
        except ValueError as e:
            raise CLIError(str(e)) from None
    ts, _ = load_inputs(args)
    ts = labeled_only(ts, "report")

    def say(msg: str) -> None:
        print(f"htc report: {msg}", file=sys.stderr, flush=True)

    try:
        data = compute_report(ts, seeds=args.seeds, by=args.by, ablation=args.ablation, learning_curve=curve,
                              profile=args.profile, top_k=args.top_k, sources=[str(p) for p in args.inputs],
                              title=args.title, progress=say)
    except EvaluationError as e:
        raise CLIError(str(e)) from None
    html = build_report(data)
    write_text(out, html)
    parts = [k for k, v in (("transfer", data.transfer), ("GAC leave-one-out", data.gac),
                            ("ablation", data.ablation), ("learning curves", data.learning_curve)) if v is not None]
    print(f"wrote {out} ({len(html.encode('utf-8')) / 1e6:.1f} MB, self-contained): evaluation of {data.evaluation.n} "
          f"runs, reliability, feature weights, selection frequency"
          + "".join(f", {p}" for p in parts) + ", examples")
    return 0


def register(sub) -> None:
    from ..experiments.group_keys import GROUP_KEYS

    p = sub.add_parser("report", help="one self-contained HTML report (opens offline): evaluation, reliability, "
                                      "weights, transfer, GAC, ablation, learning curves, examples",
                       description="Run the analysis of the labeled runs and write it as one HTML file that opens "
                                   "offline (plotly.js embedded once; no external script, font or CDN): the "
                                   "evaluation table (best highlighted), reliability diagrams, feature weights and "
                                   "selection frequency, the transfer matrix and GAC leave-one-out when the runs "
                                   "hold >= 2 groups (--by), the feature-family ablation (--ablation), learning "
                                   "curves from a computed result (--learning-curve), and the most over- and "
                                   "under-confident runs (text escaped). Needs plotly (the [app] extra).",
                       epilog="example: htc report sample_runs/units/ sample_runs/strings/ --seeds 1 "
                              "--out out/report.html")
    add_input_options(p)
    add_feature_options(p)
    p.add_argument("--out", required=True, metavar="FILE.html", help="the report file")
    p.add_argument("--by", choices=GROUP_KEYS, default="dataset",
                   help="groups of the transfer matrix and leave-one-out (default: dataset)")
    p.add_argument("--seeds", type=seeds_arg, default=3, metavar="N", help="seeds 42..42+N-1 (default: 3)")
    p.add_argument("--ablation", action="store_true", help="add the 15-combination feature-family ablation "
                                                           "(about 15 evaluations more)")
    p.add_argument("--learning-curve", metavar="FILE.json",
                   help="a computed learning curve (htc learning-curve --json, or any JSON table of method x size "
                        "with mean/std metrics) to draw")
    p.add_argument("--title", default="HTC calibration report", help="the report's title")
    p.set_defaults(func=cmd_report)
