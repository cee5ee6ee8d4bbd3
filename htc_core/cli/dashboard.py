"""``htc dashboard``: start the Streamlit dashboard, from a checkout or from an installed wheel.

The wheel carries the dashboard's entry script (``app.py``), its pages and the sample runs as data files
(``share/htc/dashboard/`` under the install prefix, see ``pyproject.toml``); a checkout runs its own ``app.py``.
Every argument is passed to ``streamlit run`` as is, so the flags are those of ``streamlit run app.py``:
``htc dashboard --server.port 8501 --server.headless true -- --data-dir DIR``.
"""

from __future__ import annotations

import argparse
import os
import site
import sys
import sysconfig
from pathlib import Path

from .common import CLIError

#: where the wheel's data files put the dashboard, under an install prefix
SHARE = Path("share") / "htc" / "dashboard"


def dashboard_dir() -> Path:
    """The folder holding the dashboard's ``app.py``, ``pages/`` and ``sample_runs/``: the checkout this package
    runs from, else the install prefix's ``share/htc/dashboard`` (a venv, the system, or ``pip --user``)."""
    checkout = Path(__file__).resolve().parents[2]
    candidates = [checkout]
    prefixes = [sysconfig.get_path("data"), sys.prefix, sys.base_prefix, getattr(site, "USER_BASE", None)]
    candidates += [Path(p) / SHARE for p in dict.fromkeys(prefixes) if p]
    for d in candidates:
        if (d / "app.py").is_file() and (d / "pages").is_dir():
            return d
    raise CLIError("the dashboard's files are not installed (looked in "
                   + ", ".join(str(d) for d in candidates) + "); install the wheel with its [app] extra: "
                   "pip install 'htc-calibration[app]'")


def cmd_dashboard(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("streamlit") is None:
        raise CLIError("the dashboard needs streamlit: pip install 'htc-calibration[app]'")
    d = dashboard_dir()
    argv = [sys.executable, "-m", "streamlit", "run", str(d / "app.py"), *args.streamlit_args]
    print(f"htc dashboard: streamlit run {d / 'app.py'} {' '.join(args.streamlit_args)}".rstrip(), file=sys.stderr,
          flush=True)
    os.chdir(d)        # the sample runs and pages are found next to app.py, as with `streamlit run app.py`
    os.execv(sys.executable, argv)
    return 0  # pragma: no cover - execv does not return


def register(sub) -> None:
    p = sub.add_parser("dashboard", help="start the dashboard (Streamlit) in a browser",
                       description="Start the HTC dashboard: `streamlit run app.py` of this installation. Every "
                                   "argument goes to `streamlit run` as written (its --server.* options; the app's "
                                   "own after `--`: --data-dir DIR, --sample-dir DIR).",
                       epilog="examples: htc dashboard\n          htc dashboard --server.port 8600 "
                              "--server.headless true -- --data-dir /tmp/htc-data",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("streamlit_args", nargs=argparse.REMAINDER, metavar="ARG",
                   help="arguments of `streamlit run` (and the app's own after `--`)")
    p.set_defaults(func=cmd_dashboard)
