"""``htc serve``: receive OpenTelemetry traces (OTLP/HTTP) and store them for the dashboard.

The receiver writes into the dashboard's store (DuckDB), which is the app side of the package; the command line
is the room on top and imports it inside the command, so ``import htc_core.cli`` stays free of DuckDB.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from .common import CLIError, probability_arg


def _port(value: str) -> int:
    try:
        p = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {value!r}") from None
    if not 0 <= p <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, got {p}")
    return p


def _seconds(value: str) -> float:
    try:
        s = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not 0 < s < 86_400:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 86400), got {value!r}")
    return s


def _log(message: str) -> None:
    """One write per line: the receiver's threads log at once, and print's separate newline let lines run together."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def cmd_serve(args: argparse.Namespace) -> int:
    from ..app import otlp_server as server
    from ..app import otlp_sink as sink
    from ..app import store as store_mod

    data = Path(args.data_dir).expanduser() if args.data_dir else store_mod.default_data_dir()
    try:
        buffer = sink.TraceBuffer(store_mod.Store(data), model=args.model, settle_s=args.settle, idle_s=args.idle,
                                  group_by=None if args.group_by == "trace" else "session",
                                  alert_below=args.alert_below)
    except (OSError, ValueError) as e:
        raise CLIError(f"cannot start: {e}") from None
    try:
        rx = server.OTLPReceiver(buffer, host=args.host, port=args.port, flush_s=1.0,
                                 log=_log)
    except OSError as e:
        raise CLIError(f"cannot listen on {args.host}:{args.port}: {e}") from None
    host, port = rx.address
    print(f"htc serve: OTLP/HTTP traces at http://{host}:{port}/v1/traces (protobuf or JSON), stored in {data}; "
          f"runs scored with {args.model}. Ctrl-C or SIGTERM stops (held traces are stored first).", file=sys.stderr,
          flush=True)
    previous = _stop_on_sigterm()
    try:
        rx.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0


def _stop_on_sigterm():
    """SIGTERM (``kill``, ``docker stop``, systemd, a CI runner's cancel) stops the receiver as Ctrl-C does, so the
    traces it holds are stored before it exits (the default action ended the process and lost them). A server
    started in the background from a shell ignores Ctrl-C, so SIGTERM is how it is usually stopped. Returns the
    handler it replaced (None where signals cannot be set: not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, stop)


def register(sub) -> None:
    p = sub.add_parser("serve", help="receive OpenTelemetry traces (OTLP/HTTP) live into the dashboard's store",
                       description="An OTLP/HTTP receiver: POST /v1/traces with protobuf or JSON bodies (what an "
                                   "OpenTelemetry OTLP exporter sends). Each finished trace (root span in and "
                                   "quiet for --settle seconds, or quiet for --idle seconds) becomes a trajectory "
                                   "(LLM spans = steps, logprobs from the raw responses; TOOL spans = observations), "
                                   "scored with --model (through the live Monitor, the confidence after each step kept, "
                                   "where it computes the model exactly: gac-prefix, HTC model files) "
                                   "and appended to a run set per service name and day (same id all day); each "
                                   "flush prints one line: runs stored, run set, scorer, mean confidence and the "
                                   "model's applicability verdict; the "
                                   "dashboard shows them without a restart. Bad payloads get 400 with the reason; "
                                   "the good spans of a partly bad one are kept. Protobuf needs "
                                   "pip install 'htc-calibration[otel]'.",
                       epilog="example: htc serve --port 4318, then in the agent: "
                              "OTLPSpanExporter(endpoint='http://127.0.0.1:4318/v1/traces')")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: spans hold prompts and answers)")
    p.add_argument("--port", type=_port, default=4318, help="port (default 4318, OTLP/HTTP's; 0 picks a free one)")
    p.add_argument("--data-dir", metavar="DIR", help="the dashboard's data directory (default $HTC_DATA_DIR or ~/.htc)")
    p.add_argument("--model", default="gac",
                   help="model that scores each run: a shipped name (gac, gac-full) or a model file (default gac)")
    p.add_argument("--settle", type=_seconds, default=2.0, metavar="S",
                   help="a trace whose root span arrived is finished after S quiet seconds (default 2)")
    p.add_argument("--idle", type=_seconds, default=30.0, metavar="S",
                   help="a trace without a root span is finished after S quiet seconds (default 30)")
    p.add_argument("--alert-below", type=probability_arg, default=None, metavar="P",
                   help="name each run whose confidence fell below P at some step (the live Monitor's alert)")
    p.add_argument("--group-by", choices=("trace", "session"), default="trace",
                   help="one trajectory per trace (default) or per session.id")
    p.set_defaults(func=cmd_serve)
