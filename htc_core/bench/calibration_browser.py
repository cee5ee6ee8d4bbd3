"""Part of the dashboard benchmark: the Calibration page's first visit in a real ``streamlit run`` server and
headless Chromium, the way a user meets it (AppTest's harness polls its script thread every millisecond, which
takes the GIL from the evaluation's fold threads, so its timing understates a real server).

A store that holds the sample runs with their features, its kept results removed (so nothing of the evaluation
is cached); a new server; Chromium opens the Runs page and, as soon as it is drawn, clicks Calibration (which
starts the evaluation in its background job); the clock stops when the page has finished (no running status,
no progress bar) with the metric table on screen. Importing Streamlit/Playwright here is fine:
``htc_core.bench`` is not part of the core.
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


def first_visit_browser(data_dir: Path, samples: Path, env: dict) -> dict | None:
    """Seconds from opening the app to the Runs page drawn, and from the click on Calibration to that page
    complete; None without Playwright or Chromium."""
    from ..app.store import Store
    from .server import _free_port, _open_when_up, _start_app, chromium_path, launch_chromium

    chromium = chromium_path()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    Store(data_dir).clear_results()              # nothing of the evaluation kept: a true first visit
    port = _free_port()
    proc = _start_app(port, data_dir, samples, env)
    try:
        with sync_playwright() as p:
            b = launch_chromium(p, chromium)
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            t0 = time.perf_counter()
            _open_when_up(page, port, attempt_ms=3000, pause_s=0.2)
            page.wait_for_selector('[data-testid="stDataFrame"]', timeout=300_000)
            _idle(page, 300)
            landing = time.perf_counter() - t0
            t1 = time.perf_counter()
            page.locator('[data-testid="stSidebarNav"]').get_by_text("Calibration", exact=True).click()
            page.wait_for_selector("h1:has-text('Calibration')", timeout=300_000)
            page.wait_for_timeout(300)
            _idle(page, 1800)
            page.wait_for_selector('[data-testid="stDataFrame"]', timeout=60_000)
            first = time.perf_counter() - t1
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"landing_s": landing, "first_s": first}
