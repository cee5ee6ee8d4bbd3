"""Retake the dashboard screenshots in docs/screenshots/ (repository-only tool, not shipped).

Start the dashboard on the shipped sample runs first, e.g.

    HTC_DATA_DIR=/tmp/shots-data streamlit run app.py --server.port 8619 --server.headless true

then run ``python -m htc_dev.screenshots --url http://127.0.0.1:8619`` (``--only calibration,examples`` retakes
some). Each page is opened by URL at 1440 px wide, the script waits until the page's run is over (no running
status, no progress bar, no status line of background work, marked by htc_core.app.layout.PENDING_ICON: Feature
space waits until UMAP has replaced the PCA preview), then saves a full-page PNG, palette-quantized to keep the files
small.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

#: htc_core.app.layout.PENDING_ICON_NAME (written out: this tool imports no Streamlit)
PENDING_ICON_NAME = "hourglass_empty"

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
WIDTH = 1440
INSPECTED = "arithmetic-0004-SmolLM2-135M-greedy"   # failed (192 + 44 = 236, gold 157): its reasons are shown

# file name -> (URL path and query, text the page shows when drawn, the most height kept)
SHOTS = {
    "runs": ("/", "Runs", 2200),
    "calibration": ("/calibration?models=SmolLM2-135M-greedy&models=SmolLM2-135M-sampled-t0.7",    # README's numbers
                     "Reliability diagram", 3600),
    "feature_weights": ("/weights", "Feature weights", 6000),
    "feature_space": ("/feature_space", "UMAP of the standardized 48 features", 2200),
    "examples": ("/examples", "Examples", 6000),
    "compare_llms": ("/compare", "Compare LLMs", 3400),
    "compare_runsets": ("/compare_runsets", "Compare run sets", 3400),
    "trajectory_inspector": (f"/inspector?id={INSPECTED}", "The whole trajectory, step by step", 4400),
}


def settle(page, timeout: float = 600.0) -> None:
    """Wait until the script run is over and no background-work status line (its icon's name in the page's text:
    layout.PENDING_ICON_NAME) is left in the main area."""
    page.wait_for_timeout(800)
    deadline = time.time() + timeout
    main = page.locator('[data-testid="stMain"]')
    while time.time() < deadline:
        busy = (page.locator('[data-testid="stStatusWidget"]').count()
                + page.locator('[data-testid="stProgress"]').count()
                + page.locator('[data-testid="stSpinner"]').count() + main.get_by_text(PENDING_ICON_NAME).count())
        if not busy:
            page.wait_for_timeout(1500)
            if not page.locator('[data-testid="stStatusWidget"]').count():
                return
        page.wait_for_timeout(500)
    raise TimeoutError(f"{page.url} kept running for more than {timeout:.0f} s")


def shoot(page, base: str, name: str) -> Path:
    """Open one page, wait for it, and save its full-page screenshot as docs/screenshots/<name>.png."""
    route, marker, max_height = SHOTS[name]
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    page.goto(base.rstrip("/") + route, wait_until="domcontentloaded")
    page.locator('[data-testid="stMain"]').get_by_text(marker).first.wait_for(timeout=600_000)
    settle(page)
    size = 0
    for _ in range(4):          # grow the viewport to the page (Streamlit scrolls inside stMain) until it is stable
        height = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]')
                                          || document.scrollingElement; return m.scrollHeight; }""")
        if int(min(max(height, 900), max_height)) == size:
            break
        size = int(min(max(height, 900), max_height))
        page.set_viewport_size({"width": WIDTH, "height": size})
        page.wait_for_timeout(1500)                # plotly re-lays out to the new size
        settle(page)
    png = page.screenshot(full_page=True)
    path = OUT / f"{name}.png"
    Image.open(io.BytesIO(png)).convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT).save(
        path, optimize=True)
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8619", help="the running dashboard")
    ap.add_argument("--only", default="", help="comma-separated names among: " + ", ".join(SHOTS))
    ap.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium executable")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(SHOTS)
    unknown = sorted(set(names) - set(SHOTS))
    if unknown:
        ap.error(f"unknown screenshot name(s): {', '.join(unknown)}")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        for name in names:
            path = shoot(page, args.url, name)
            print(f"{path.relative_to(OUT.parent.parent)}  {path.stat().st_size // 1024} KiB", flush=True)
        browser.close()


if __name__ == "__main__":
    main()
