"""What every ``htc`` sub-command shares: the error type, the input and feature options, reading the inputs."""

from __future__ import annotations

import argparse
import sys


class CLIError(Exception):
    """An error the user can fix; printed without a traceback."""


def output_path(value: str | None, suffixes: tuple[str, ...], option: str = "--out"):
    """The output file of a command, checked before any computation (suffix, folder, permissions);
    written later with ``htc_core.atomic`` so that a failed run leaves the previous file intact."""
    from pathlib import Path

    from ..atomic import OutputError, check_writable

    if value is None or value == "-":
        return None
    out = Path(value)
    if not out.name.endswith(suffixes):
        raise CLIError(f"{option} must end in {' or '.join(suffixes)}, got {out}")
    try:
        return check_writable(out)
    except OutputError as e:
        raise CLIError(f"{option}: {e}") from None


def add_input_options(p: argparse.ArgumentParser, *, model_name: bool = True) -> None:
    """The input options; ``model_name=False`` leaves out ``--model NAME`` (a command whose --model is a model
    file)."""
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="trace files or directories (directories are searched for .jsonl/.json files)")
    p.add_argument("--format", default="auto",
                   help="input format: auto (default: detected per file), native, openai-chat, openai-calllog, "
                        "responses, completions, smolagents, atif, otel (OpenTelemetry: OTLP JSON or a Phoenix spans "
                        "export, .jsonl or .parquet)")
    p.add_argument("--dataset", help="set the dataset name of every trajectory that has none")
    if model_name:
        p.add_argument("--model", help="set the model name of every trajectory that has none")
    p.add_argument("--labels", metavar="FILE",
                   help="CSV or JSONL joined by trajectory id: success (and dataset, model, question, gold, "
                        "answer, verbalized_confidence) columns")
    p.add_argument("--group-by", metavar="KEY",
                   help="openai-calllog: the trajectory-id key of each line (default: the first of trajectory_id, "
                        "trace_id, run_id, session_id, conversation_id); otel: 'session' makes one trajectory per "
                        "session.id instead of one per trace")


def add_feature_options(p: argparse.ArgumentParser) -> None:
    from ..confidence import PROFILES

    p.add_argument("--profile", default="paper", choices=sorted(PROFILES),
                   help="token-confidence profile (default: paper; see DESIGN.md section 3)")
    p.add_argument("--top-k", type=int, default=5, metavar="K",
                   help="alternatives averaged into TopkConf (default: 5)")


def load_inputs(args: argparse.Namespace, *, quiet: bool = False):
    from ..formats import load

    defaults = {k: getattr(args, k) for k in ("dataset", "model") if isinstance(getattr(args, k, None), str)}
    try:
        ts, report = load(args.inputs, format=args.format, defaults=defaults,
                          labels=getattr(args, "labels", None), group_by=getattr(args, "group_by", None))
    except ValueError as e:
        raise CLIError(str(e)) from None
    show_report(report, getattr(args, "labels", None), quiet=quiet)
    if ts.n_trajectories == 0:
        raise CLIError("no valid trajectories were read from " + ", ".join(map(str, args.inputs)))
    return ts, report


def show_report(report, labels, *, quiet: bool = False) -> None:
    """The load report's problems on standard error (when any), and the labels join's summary line once; a
    labels file that gave no run a success label is an error (it never joins nothing silently)."""
    if not quiet and (report.problems or report.rejected):
        print(report.summary(max_lines=5), file=sys.stderr)      # the summary holds the labels line
    elif not quiet and report.labels is not None:
        print(report.labels["summary"], file=sys.stderr)
    check_labels(report, labels)


def check_labels(report, labels) -> None:
    """A CLIError when a labels file was given but no run got a success label from it."""
    if labels is not None and report.trajectories_read and (report.labels is None or not report.labels["labeled"]):
        why = next((str(p) for p in report.errors if p.file == str(labels)), None)
        raise CLIError(f"the labels file {labels} gave no run a success label"
                       + (f": {why}" if why else " (see the summary above)"))


def add_chunk_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunk-size", type=positive_int, default=50_000, metavar="N",
                   help="trajectories held in memory at a time (default: 50,000); the output is written chunk by "
                        "chunk, so memory stays bounded whatever the input size")


def positive_int(value: str) -> int:
    """argparse type: a positive integer (``1,000`` and ``1_000`` accepted)."""
    return _positive(value.replace(",", "").replace("_", ""), value)


def _positive(text: str, value: str) -> int:
    """``text`` as a positive integer; the message names ``value``, what the user typed."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return v


def probability_arg(value: str) -> float:
    """An argparse type: a probability in [0, 1] (a threshold or an alert level)."""
    try:
        p = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1], got {value!r}") from None
    if not 0.0 <= p <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1], got {value!r}")
    return p


def chunk_reader(args: argparse.Namespace):
    """The inputs of a command as ``TraceSet`` chunks (``formats.chunks``); iterate, then ``report_problems``."""
    from ..formats import iter_chunks

    defaults = {k: getattr(args, k) for k in ("dataset", "model") if getattr(args, k, None)}
    try:
        return iter_chunks(args.inputs, max_trajectories=getattr(args, "chunk_size", 50_000), format=args.format,
                           defaults=defaults, labels=getattr(args, "labels", None),
                           group_by=getattr(args, "group_by", None))
    except ValueError as e:
        raise CLIError(str(e)) from None


def report_problems(reader, *, quiet: bool = False) -> None:
    """After a chunked read: the load report's problems on standard error; nothing read is an error."""
    show_report(reader.report, getattr(reader, "labels", None), quiet=quiet)
    if reader.n_trajectories == 0:
        raise CLIError("no valid trajectories were read from " + ", ".join(map(str, reader.inputs)))


def labeled_only(ts, command: str):
    import numpy as np

    y = ts.labels
    n_unlab = int(np.isnan(y).sum())
    if n_unlab == len(y):
        raise CLIError(f"none of the {len(y)} trajectories has a success label; {command} needs labeled runs")
    if n_unlab:
        print(f"htc {command}: note: ignoring {n_unlab} unlabeled trajectories", file=sys.stderr)
        ts = ts.labeled()
    return ts


def seeds_arg(value: str) -> int:
    """argparse type: a positive integer as ``int()`` reads it (seeds, repeats, counts; no thousands comma)."""
    return _positive(value, value)
