"""The ``htc`` command: one sub-command per job, each group in its own module.

Adding a command: a module here with ``cmd_NAME(args) -> int`` functions and ``register(sub)`` adding their
parsers, named in ``COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .._version import __version__
from .common import CLIError

#: modules whose ``register(sub)`` adds sub-commands, in the order of ``htc --help``
COMMAND_MODULES = ("data", "calibrate", "monitor", "experiments", "report", "learning", "adapt", "serve",
                   "dashboard", "labels", "label_next", "warmup")
#: the module of each sub-command (``tests/test_cli_imports.py`` holds it to what the modules register): a
#: command line naming one builds that module's parsers only (issue 29: 0.015 s -> 0.004 s of the start)
COMMAND_MODULE = {
    "validate": "data", "features": "data", "import": "data", "evaluate": "calibrate", "fit": "calibrate",
    "score": "calibrate", "early-warning": "monitor", "prefixes": "monitor", "monitor": "monitor",
    "transfer": "experiments", "gac": "experiments", "ablation": "experiments", "models": "experiments",
    "report": "report", "learning-curve": "learning", "adapt-curve": "adapt", "serve": "serve",
    "dashboard": "dashboard", "labels": "labels", "label": "label_next", "warmup": "warmup",
}

EPILOG = """examples:
  htc validate ../shared/data/uala-hotpotqa/
  htc features sample_runs/units/ --out out/features.csv
  htc evaluate ../shared/data/uala-hotpotqa/hotpotqa_llama2-70b_run-a.jsonl
  htc fit sample_runs/arithmetic/ --variant reduced --out out/model.json
  htc score out/model.json sample_runs/units/ --out out/scores.csv
  htc early-warning sample_runs/arithmetic/ --seeds 1
  htc fit sample_runs/units/ --prefixes --out out/prefix_model.json     # a model for live monitoring
  htc monitor out/prefix_model.json sample_runs/units/ --threshold 0.2 --out out/steps.csv
  htc score gac sample_runs/units/ --out out/scores.csv        # the shipped General Agent Calibrator
  htc transfer sample_runs/ --by dataset
  htc gac sample_runs/ ../shared/data/uala-hotpotqa/ --by dataset
  htc ablation sample_runs/arithmetic/
  htc models
  htc label next sample_runs/units/ --labels labels.csv --model gac -n 10 --json
  htc learning-curve sample_runs/arithmetic/ --sizes 50,100 --methods htc-full,htc-reduced,xgboost
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``htc`` parser: every sub-command, or (``command``, a key of ``COMMAND_MODULE``) the sub-commands of
    its module only."""
    parser = argparse.ArgumentParser(
        prog="htc",
        description="Holistic Trajectory Calibration: how far to trust your LLM agent runs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"htc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (COMMAND_MODULE[command],) if command in COMMAND_MODULE else COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    if argv[:1] == ["dashboard"] and not set(argv[1:2]) & {"-h", "--help"}:
        # every argument goes to `streamlit run` as written (argparse would take its --server.* options for ours)
        args = parser.parse_args(["dashboard"])
        args.streamlit_args = argv[1:]
    else:
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
    except BrokenPipeError:  # `htc import ... | head`: the reader went away; not an error of ours
        _silence_stdout()
        return 141
    except OSError as e:     # a full disk, a vanished folder, a read-only file system: the system's words, no trace
        print(f"htc {args.command}: error: {_os_message(e)}", file=sys.stderr)
        return 1


def _os_message(e: OSError) -> str:
    """``[Errno 28] No space left on device: 'out/x.csv'`` as 'No space left on device (out/x.csv)'; the
    output files are written atomically (htc_core.atomic), so the previous ones are intact."""
    what = e.strerror or str(e) or type(e).__name__
    name = e.filename if e.filename is not None else None
    where = f" ({name})" if name is not None else ""
    return f"{what}{where}; any previous output file was left as it was"


def _silence_stdout() -> None:
    """Point stdout at devnull so that the interpreter's final flush does not raise again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
