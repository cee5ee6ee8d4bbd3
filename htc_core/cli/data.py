"""``htc validate``, ``htc features``, ``htc import``: reading traces and writing what was read."""

from __future__ import annotations

import argparse
import sys

from .engine_opts import add_engine_options
from .common import CLIError, add_chunk_option, check_labels, add_feature_options, add_input_options, chunk_reader, \
    output_path, report_problems


def cmd_validate(args: argparse.Namespace) -> int:
    from ..formats import load

    defaults = {k: getattr(args, k) for k in ("dataset", "model") if getattr(args, k, None)}
    try:
        ts, report = load(args.inputs, format=args.format, defaults=defaults,
                          labels=getattr(args, "labels", None), group_by=getattr(args, "group_by", None))
    except ValueError as e:
        raise CLIError(str(e)) from None
    print(report.summary(max_lines=args.max_problems))
    labels = getattr(args, "labels", None)
    bad = [p for p in report.errors if labels is not None and p.file == str(labels)]
    if bad:   # a labels file that cannot label anything (no success column, unreadable): not valid
        raise CLIError(f"the labels file {labels} cannot be used: {bad[0]}")
    if ts.n_trajectories:
        labeled = ts.labels
        n_lab = int((~__import__("numpy").isnan(labeled)).sum())
        print(f"steps: {ts.n_steps}, tokens: {ts.n_tokens}, alternatives per token (k): {ts.k}")
        if n_lab:
            print(f"labeled: {n_lab}, success rate: {__import__('numpy').nanmean(labeled):.3f}")
    return 0 if ts.n_trajectories else 1


def cmd_features(args: argparse.Namespace) -> int:
    from ..features.pieces import PIECE_TOKENS, chunk_features
    from ..heap import keep_freed_memory
    from ..tablewriter import TableWriter

    out = output_path(args.out, (".csv", ".parquet"))  # checked before the work
    if args.engine != "local":
        from ..engines.common import Task
        from .engine_opts import check_engine_args, run_engine

        check_engine_args(args)
        defaults = {k: getattr(args, k) for k in ("dataset", "model") if getattr(args, k, None)}
        try:
            task = Task("features", args.profile, args.top_k, defaults=tuple(sorted(defaults.items())))
        except ValueError as e:
            raise CLIError(str(e)) from None
        res = run_engine(args, task, out)
        print(f"wrote {res.rows} trajectories x 48 features to {out}")
        return 0
    keep_freed_memory()  # this process computes piece after piece: the same memory each time (htc_core.heap)
    reader = chunk_reader(args)
    # chunk by chunk into a temporary file, renamed at the end; each chunk's features computed piece by piece
    # (the same values; fresh memory for one piece instead of one chunk: features.pieces)
    chunks = chunk_features(reader.pieces(PIECE_TOKENS), feature_columns, profile=args.profile, top_k=args.top_k)
    with TableWriter(out) as w:
        while True:
            try:
                cols = next(chunks, None)
            except ValueError as e:
                raise CLIError(str(e)) from None
            if cols is None:
                break
            w.write_columns(cols, booleans=("success",))
        report_problems(reader)  # nothing read: an error, and the previous output is kept
    print(f"wrote {w.rows} trajectories x 48 features to {out}")
    return 0


def feature_columns(ts, fm) -> dict:
    """What ``htc features`` writes, as columns: ``id``, ``dataset``, ``model``, ``success``, then the features
    (the layout of ``FeatureMatrix.to_frame(ts.meta)``, without building the metadata DataFrame)."""
    cols = {c: ts.meta_column(c) for c in ("id", "dataset", "model", "success")}
    cols.update((name, fm.values[:, j]) for j, name in enumerate(fm.names))
    return cols


def cmd_import(args: argparse.Namespace) -> int:
    from ..atomic import atomic_open
    from ..formats import native

    out = output_path(args.out, (".jsonl",))  # checked before the work; None: standard output
    reader = chunk_reader(args)
    to_stdout = out is None
    report_fh = sys.stderr if to_stdout else sys.stdout
    steps = tokens = k = 0
    try:
        with (atomic_open(out, "w") if not to_stdout else _Unclosed(sys.stdout)) as fh:
            for ts in reader:
                native.write(ts, fh)
                steps, tokens, k = steps + ts.n_steps, tokens + ts.n_tokens, max(k, ts.k)
            print(reader.report.summary(max_lines=args.max_problems), file=report_fh)
            check_labels(reader.report, args.labels)   # before the output replaces the previous one
            if reader.n_trajectories == 0:
                raise _NothingWritten  # the previous output file is kept
    except _NothingWritten:
        print("nothing to write: no valid trajectories", file=report_fh)
        return 1
    if not to_stdout:
        print(f"wrote {reader.n_trajectories} trajectories ({steps} steps, {tokens} tokens, k={k}) to {out}",
              file=report_fh)
    return 0


class _NothingWritten(Exception):
    pass


class _Unclosed:
    """``with`` over standard output without closing it."""

    def __init__(self, fh):
        self.fh = fh

    def __enter__(self):
        return self.fh

    def __exit__(self, *exc) -> bool:
        return False


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
    add_chunk_option(p)
    add_engine_options(p)
    p.set_defaults(func=cmd_features)

    p = sub.add_parser("import", help="convert traces of any supported format to htc-trace JSONL",
                       description="Read traces (OpenAI chat/call logs, Responses API, completions, smolagents, "
                                   "ATIF, native), join --labels, write htc-trace JSONL v1 and print the load "
                                   "report. Exits 1 when nothing valid was read.")
    add_input_options(p)
    p.add_argument("--out", metavar="FILE.jsonl", help="output file (default: standard output)")
    p.add_argument("--max-problems", type=int, default=20, help="problems to print (default: 20)")
    add_chunk_option(p)
    p.set_defaults(func=cmd_import)
