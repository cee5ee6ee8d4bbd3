"""A ``streamlit run app.py`` server for the browser parts of the dashboard benchmark: a free port, the
server process (its output discarded), headless Chromium when it is there, and loading the app's URL once the
server answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import checkout_root

ROOT = checkout_root() or Path.cwd()
APP = ROOT / "app.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(port: int, data_dir: Path, samples: Path, env: dict) -> subprocess.Popen:
    """``streamlit run app.py`` on ``port`` with the given store and sample folder, output discarded."""
    return subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(port),
                             "--server.headless", "true", "--", "--data-dir", str(data_dir), "--sample-dir",
                             str(samples)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def chromium_path() -> str | None:
    """Chromium's path (``$HTC_CHROMIUM``, default /usr/bin/chromium) when it and Playwright are both there."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return None
    path = os.environ.get("HTC_CHROMIUM", "/usr/bin/chromium")
    return path if Path(path).exists() else None


def launch_chromium(playwright, path: str):
    """Headless Chromium at ``path`` from a ``sync_playwright()`` context."""
    return playwright.chromium.launch(executable_path=path, args=["--headless", "--no-sandbox", "--disable-gpu",
                                                                  "--disable-background-networking",
                                                                  "--no-first-run"])


def open_when_up(page, port: int, *, attempt_ms: int, pause_s: float, limit_s: float = 120, path: str = "") -> None:
    """Load the app's URL (plus ``path``) in ``page``, retrying until the server answers (or ``limit_s``
    passes)."""
    deadline = time.time() + limit_s
    while True:
        try:
            page.goto(f"http://127.0.0.1:{port}{path}", timeout=attempt_ms)
            return
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(pause_s)
