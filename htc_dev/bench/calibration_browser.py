"""Part of the dashboard benchmark: the Calibration page's first visit in a real ``streamlit run`` server and
headless Chromium, the way a user meets it (AppTest's harness polls its script thread every millisecond, which
takes the GIL from the evaluation's fold threads, so its timing understates a real server).

A store that holds the sample runs with their features, its kept results removed (so nothing of the evaluation
is cached); a new server; Chromium opens the Runs page (the app starts the evaluation in its background job once
the page is drawn) and, as soon as it is drawn, clicks Calibration; the clock stops when the page is complete (no part still
evaluating, no running status, no progress bar, the metric table on screen). Then the same with a new server
and the link ``/calibration`` opened straight away. Importing Streamlit/Playwright here is fine:
``htc_dev.bench`` is not part of the core.
"""

from __future__ import annotations

import time
from pathlib import Path


def _idle(page, limit_s: float) -> None:
    """Wait until the page's script run is over (no running status widget, no progress bar, twice in a row)."""
    deadline, quiet = time.time() + limit_s, 0
    while time.time() < deadline and quiet < 2:
        busy = (page.locator('[data-testid="stStatusWidget"]').count()
                + page.locator('[data-testid="stProgress"]').count())
        quiet = 0 if busy else quiet + 1
        page.wait_for_timeout(100)


#: whether the reliability diagram draws HTC-Reduced (the evaluation's last part; on the diagram by default)
_HAS_REDUCED = """() => { const gd = document.querySelector('.js-plotly-plot');
    return !!(gd && gd._fullData && gd._fullData.some(t => (t.name || '').startsWith('HTC-Reduced'))); }"""


def _complete(page, limit_s: float) -> None:
    """Wait until the Calibration page shows every evaluation part: HTC-Reduced, the last part, drawn in the
    reliability diagram, no part still evaluating, the metric table on screen and the page idle (the page
    draws the cheap parts first and reruns as each later one finishes: a quiet moment between two parts, before
    the page has written what is still pending, is not the end)."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        _idle(page, deadline - time.time())
        if (page.get_by_text("Still evaluating:").count() == 0
                and page.locator('[data-testid="stDataFrame"]').count() > 0 and page.evaluate(_HAS_REDUCED)):
            return
        page.wait_for_timeout(100)
    raise TimeoutError(f"the Calibration page was not complete after {limit_s:.0f} s")


def _visit(chromium: str, data_dir: Path, samples: Path, env: dict, *, direct: bool) -> dict:
    """One first visit in a new server whose store keeps no result: through the Runs page and a click on
    Calibration (``direct=False``), or by the link ``/calibration`` straight away (``direct=True``, timed from
    asking for the page, the session's start included)."""
    from playwright.sync_api import sync_playwright

    from htc_core.app.store import Store
    from .server import free_port, open_when_up, start_app, launch_chromium

    Store(data_dir).clear_results()              # nothing of the evaluation kept: a true first visit
    port = free_port()
    proc = start_app(port, data_dir, samples, env)
    out: dict = {}
    try:
        with sync_playwright() as p:
            b = launch_chromium(p, chromium)
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            if direct:
                open_when_up(page, port, attempt_ms=3000, pause_s=0.2, path="/_stcore/health")
                t1 = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/calibration")
            else:
                t0 = time.perf_counter()
                open_when_up(page, port, attempt_ms=3000, pause_s=0.2)
                page.wait_for_selector('[data-testid="stDataFrame"]', timeout=300_000)
                _idle(page, 300)
                out["landing_s"] = time.perf_counter() - t0
                t1 = time.perf_counter()
                page.locator('[data-testid="stSidebarNav"]').get_by_text("Calibration", exact=True).click()
            page.wait_for_selector("h1:has-text('Calibration')", timeout=300_000)
            page.wait_for_timeout(300)
            _complete(page, 1800)
            out["first_s"] = time.perf_counter() - t1
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def first_visit_browser(data_dir: Path, samples: Path, env: dict) -> dict | None:
    """Seconds from opening the app to the Runs page drawn and from the click on Calibration to that page
    complete (``landing_s``, ``first_s``), and from asking for ``/calibration`` in a new server to that page
    complete (``direct_s``); None without Playwright or Chromium."""
    from .server import chromium_path

    chromium = chromium_path()
    if chromium is None:
        return None
    out = _visit(chromium, data_dir, samples, env, direct=False)
    out["direct_s"] = _visit(chromium, data_dir, samples, env, direct=True)["first_s"]
    return out


def first_visit_seconds(data_dir: Path, samples: Path, env: dict) -> float | None:
    """Seconds from the click on Calibration to that page complete, in a new server started with ``env`` (the
    Runs page drawn first); None without Playwright or Chromium."""
    from .server import chromium_path

    chromium = chromium_path()
    return None if chromium is None else _visit(chromium, data_dir, samples, env, direct=False)["first_s"]
