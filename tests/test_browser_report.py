"""The ``htc report`` file in headless Chromium with every network request blocked: it opens and plotly draws.

Skips when Chromium or Playwright is missing, unless ``HTC_REQUIRE_BROWSER=1`` (then it fails)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from htc_core.formats import load
from htc_core.htmlreport import build_report, compute_report

from conftest import REPO

pytestmark = pytest.mark.browser
CHROMIUM = os.environ.get("HTC_CHROMIUM", "/usr/bin/chromium")


def _require_browser():
    why = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        why = "playwright is not installed (pip install playwright)"
    if why is None and not Path(CHROMIUM).exists():
        why = f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)"
    if why:
        if os.environ.get("HTC_REQUIRE_BROWSER") == "1":
            pytest.fail(f"HTC_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)


def test_report_opens_offline_and_plotly_draws(tmp_path):
    _require_browser()
    from playwright.sync_api import sync_playwright

    ts, _ = load([str(REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"),
                  str(REPO / "sample_runs" / "facts" / "facts_SmolLM2-135M-greedy.jsonl")])
    g = ts.meta.dataset.astype(str).to_numpy()
    ts = ts.take(np.concatenate([np.flatnonzero(g == "units")[:40], np.flatnonzero(g == "facts")[:40]]))
    ts.meta.loc[0, "question"] = "<script>window.__pwned=1</script><img src=x onerror='window.__pwned=2'>"
    path = tmp_path / "report.html"
    path.write_text(build_report(compute_report(ts, seeds=1, sources=["units + facts"])), encoding="utf-8")

    requested, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            ctx = browser.new_context(offline=True)
            page = ctx.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))

            def block(route):
                if not route.request.url.startswith("file:"):
                    requested.append(route.request.url)
                    return route.abort()
                return route.continue_()

            page.route("**/*", block)
            page.goto(path.as_uri())
            page.wait_for_selector(".main-svg", timeout=60_000)
            n_plots = page.locator(".plot-container").count()
            n_figs = page.locator("div.fig").count()
            pwned = page.evaluate("window.__pwned === undefined")
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert requested == []                    # nothing outside the file was asked for
    assert errors == []
    assert n_figs >= 8 and n_plots == n_figs  # every figure drawn
    assert pwned                              # the hostile question stayed text
