"""The ``htc`` command: features, validate (and more, one sub-command per job)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__

EPILOG = """examples:
  htc validate ../shared/data/uala-hotpotqa/
  htc features sample_runs/ --out features.csv
  htc evaluate ../shared/data/uala-hotpotqa/hotpotqa_llama2-70b_run-a.jsonl
  htc fit runs.jsonl --variant reduced --out model.json
  htc score model.json new_runs.jsonl --out scores.csv
"""


class CLIError(Exception):
    """An error the user can fix; printed without a traceback."""


def _add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="trace files or directories (directories are searched for .jsonl/.json files)")
    p.add_argument("--format", default="auto",
                   help="input format: auto (default: detected per file), native, openai-chat, openai-calllog, "
                        "responses, completions, smolagents, atif")
    p.add_argument("--dataset", help="set the dataset name of every trajectory that has none")
    p.add_argument("--model", help="set the model name of every trajectory that has none")
    p.add_argument("--labels", metavar="FILE",
                   help="CSV or JSONL joined by trajectory id: success (and dataset, model, question, gold, "
                        "answer, verbalized_confidence) columns")
    p.add_argument("--group-by", metavar="KEY",
                   help="openai-calllog: the trajectory-id key of each line (default: the first of trajectory_id, "
                        "trace_id, run_id, session_id, conversation_id)")


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
        ts, report = load(args.inputs, format=args.format, defaults=defaults,
                          labels=getattr(args, "labels", None), group_by=getattr(args, "group_by", None))
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


def cmd_import(args: argparse.Namespace) -> int:
    from .formats import load, native

    defaults = {k: getattr(args, k) for k in ("dataset", "model") if getattr(args, k, None)}
    try:
        ts, report = load(args.inputs, format=args.format, defaults=defaults, labels=args.labels,
                          group_by=args.group_by)
    except ValueError as e:
        raise CLIError(str(e)) from None
    to_stdout = args.out in (None, "-")
    report_fh = sys.stderr if to_stdout else sys.stdout
    print(report.summary(max_lines=args.max_problems), file=report_fh)
    if ts.n_trajectories == 0:
        print("nothing to write: no valid trajectories", file=report_fh)
        return 1
    if to_stdout:
        native.write(ts, sys.stdout)
    else:
        out = Path(args.out)
        if not out.name.endswith(".jsonl"):
            raise CLIError(f"--out must end in .jsonl (htc-trace JSONL), got {out}")
        n = native.write(ts, out)
        print(f"wrote {n} trajectories ({ts.n_steps} steps, {ts.n_tokens} tokens, k={ts.k}) to {out}",
              file=report_fh)
    return 0


def _labeled_only(ts, command: str):
    import numpy as np

    y = ts.labels
    n_unlab = int(np.isnan(y).sum())
    if n_unlab == len(y):
        raise CLIError(f"none of the {len(y)} trajectories has a success label; {command} needs labeled runs")
    if n_unlab:
        print(f"htc {command}: note: ignoring {n_unlab} unlabeled trajectories", file=sys.stderr)
        ts = ts.labeled()
    return ts


def _seeds_arg(value: str) -> int:
    try:
        v = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return v


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .calibration.evaluation import EvaluationError, evaluate

    ts, _ = load_inputs(args)
    ts = _labeled_only(ts, "evaluate")
    progress = None
    if not args.json and sys.stderr.isatty():
        def progress(done, total, msg):
            print(f"\r  {done}/{total} outer folds ({msg})", end="" if done < total else "\n",
                  file=sys.stderr, flush=True)
    try:
        res = evaluate(ts, seeds=args.seeds, profile=args.profile, top_k=args.top_k, progress=progress)
    except EvaluationError as e:
        raise CLIError(str(e)) from None
    if args.json:
        print(res.to_json())
    else:
        print(res.table())
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    from .calibration.calibrators import HTCCalibrator
    from .features import extract

    ts, _ = load_inputs(args)
    ts = _labeled_only(ts, "fit")
    y = ts.labels
    n_pos = int(y.sum())
    if min(n_pos, len(y) - n_pos) < 2:
        raise CLIError(f"fit needs at least 2 successes and 2 failures, got {n_pos} and {len(y) - n_pos}")
    fm = extract(ts, profile=args.profile, top_k=args.top_k)
    model = HTCCalibrator(variant=args.variant)      # records fm's profile and top-k (profile_, top_k_)
    model.fit(fm, y, meta=ts.meta)
    out = model.save(args.out)
    print(f"fitted HTC-{args.variant.capitalize()} on {len(y)} trajectories (success rate {y.mean():.3f}): "
          f"alpha = {model.alpha_:g}, {model.n_selected_} of {model.n_features_in_} features kept")
    print(f"wrote {out}")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    import pandas as pd

    from .calibration.baselines import BASELINE_COLUMNS, baseline_confidences
    from .calibration.calibrators import HTCCalibrator
    from .features import extract

    try:
        model = HTCCalibrator.load(args.model)
    except ValueError as e:
        raise CLIError(str(e)) from None
    ts, _ = load_inputs(args)
    # the features of the model's own token-confidence profile and top-k (recorded in the model file)
    fm = extract(ts, profile=model.profile_, top_k=model.top_k_)
    conf = model.predict_proba(fm)[:, 1]
    df = pd.DataFrame({"id": ts.ids, "confidence": conf})
    base = baseline_confidences(ts, profile=model.profile_, top_k=model.top_k_)
    for col in base:
        df[BASELINE_COLUMNS[col]] = base[col].to_numpy()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False, float_format="%.17g")
    print(f"scored {len(df)} trajectories with {args.model} (HTC-{model.variant.capitalize()}); wrote {out}")
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

    p = sub.add_parser("evaluate", help="cross-validated ECE, Brier and AUROC of HTC vs the baselines",
                       description="Evaluate HTC-Full, HTC-Reduced and the baselines (LastStep-TP, GlobalTrace-TP, "
                                   "Bottom10, LowestGroup, Tail, each raw and with temperature scaling; "
                                   "Verbalized when present) with 5-fold stratified CV, alpha chosen by nested CV "
                                   "on the training folds only, repeated over seeds 42, 43, ... Metrics are "
                                   "computed on the pooled out-of-fold predictions (mean ± std over repeats). "
                                   "Unlabeled trajectories are ignored.")
    _add_input_options(p)
    _add_feature_options(p)
    p.add_argument("--seeds", type=_seeds_arg, default=3, metavar="N",
                   help="number of CV repeats, seeds 42..42+N-1 (default: 3)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("fit", help="fit an HTC calibrator and save it as JSON",
                       description="Fit HTC-Reduced (L1, sparse) or HTC-Full (L2) on labeled runs, alpha chosen "
                                   "by 5-fold stratified CV, and write the model as JSON (weights, scaler, feature "
                                   "names, profile, training summary). Unlabeled trajectories are ignored.")
    _add_input_options(p)
    _add_feature_options(p)
    p.add_argument("--variant", choices=("reduced", "full"), default="reduced",
                   help="reduced = L1 (default), full = L2")
    p.add_argument("--out", required=True, metavar="MODEL.json", help="where to write the model")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("score", help="score runs with a saved model (labels not needed)",
                       description="Write id, calibrated confidence and the raw baseline confidences "
                                   "(last_step_tp, global_trace_tp, bottom10, lowest_group, tail, verbalized when "
                                   "present) per trajectory. Features use the model's confidence profile and top-k.")
    p.add_argument("model", metavar="MODEL.json", help="a model written by `htc fit`")
    _add_input_options(p)
    p.add_argument("--out", required=True, metavar="FILE.csv", help="output CSV")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("import", help="convert traces of any supported format to htc-trace JSONL",
                       description="Read traces (OpenAI chat/call logs, Responses API, completions, smolagents, "
                                   "ATIF, native), join --labels, write htc-trace JSONL v1 and print the load "
                                   "report. Exits 1 when nothing valid was read.")
    _add_input_options(p)
    p.add_argument("--out", metavar="FILE.jsonl", help="output file (default: standard output)")
    p.add_argument("--max-problems", type=int, default=20, help="problems to print (default: 20)")
    p.set_defaults(func=cmd_import)
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
