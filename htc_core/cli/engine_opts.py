"""``--engine local|dask|spark [--scheduler ADDRESS] [--workers N]`` of ``htc features`` and ``htc score``."""

from __future__ import annotations

import argparse
import sys

from .common import CLIError, positive_int, report_problems


def add_engine_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scale-out (see docs/scale.md: Running on a cluster)")
    g.add_argument("--engine", choices=("local", "dask", "spark"), default="local",
                   help="local (default): this process, chunk by chunk; dask: dask.distributed workers "
                        '(pip install -e ".[cluster]"); spark: Spark mapInArrow (pip install -e ".[spark]", '
                        "Java 17+). htc-trace JSONL is split into byte ranges at line ends, other formats by file")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="dask: scheduler address (tcp://host:8786); spark: master URL (spark://host:7077, "
                        "local[4]); default: a local cluster of --workers processes on this machine")
    g.add_argument("--workers", type=positive_int, default=2, metavar="N",
                   help="workers of the local cluster when no --scheduler is given (default: 2)")
    g.add_argument("--piece-size", type=positive_int, default=None, metavar="MB",
                   help="dask/spark: MB of htc-trace JSONL per task (default: sized to the data, about 4 tasks "
                        "per worker, 1 to 32 MB)")


def check_engine_args(args: argparse.Namespace) -> None:
    """The options the dask and spark engines do not take, refused before any work."""
    if args.engine == "local":
        if args.scheduler:
            raise CLIError("--scheduler needs --engine dask or --engine spark")
        return
    for opt, attr in (("--labels", "labels"), ("--group-by", "group_by"), ("--explain", "explain")):
        if getattr(args, attr, None):
            raise CLIError(f"{opt} is not supported with --engine {args.engine}; run `htc import` first to join "
                           "labels and convert to htc-trace JSONL, or use --engine local" if opt != "--explain"
                           else f"--explain is not supported with --engine {args.engine}; use --engine local")


def run_engine(args: argparse.Namespace, task, out):
    """Run ``task`` with the chosen engine; user errors (missing extra, nothing read) as ``CLIError``."""
    from ..engines import run
    from ..engines.driver import NothingRead

    try:
        res = run(args.inputs, task, out, engine=args.engine, scheduler=args.scheduler, workers=args.workers,
                  format=args.format, piece_bytes=None if args.piece_size is None else args.piece_size << 20)
    except ImportError as e:
        msg = str(e)
        if not msg.startswith("--engine"):
            raise
        raise CLIError(msg.split(" (")[0]) from None
    except NothingRead as e:
        report_problems(_Done(args.inputs, e.report))
    except ValueError as e:
        raise CLIError(str(e)) from None
    report_problems(_Done(args.inputs, res.report))
    print(f"{args.engine}: {res.pieces} pieces on {res.workers} workers", file=sys.stderr)
    return res


class _Done:
    """What ``report_problems`` reads of a reader, for an engine run."""

    def __init__(self, inputs, report):
        self.inputs, self.report, self.n_trajectories = inputs, report, report.trajectories_read
