"""The dashboard in a real browser: Playwright driving Debian's headless Chromium.

Starts ``streamlit run app.py`` on a free port with a temporary data directory,
uploads a file through the real file chooser, visits every page, checks that
the Plotly charts are drawn (SVG present) and that no exception box shows, and
saves a screenshot of each page (to $HTC_SCREENSHOT_DIR, default a temp folder). Skips when Chromium or
Playwright is missing, unless ``HTC_REQUIRE_BROWSER=1`` (set by .ci/run), which
turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import tempfile
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, make_traj, write_jsonl

CHROMIUM = os.environ.get("HTC_CHROMIUM", "/usr/bin/chromium")
# Screenshots go to a temporary folder so that a test run never changes tracked files (HTC_SCREENSHOT_DIR
# chooses another). The docs' pictures come from `python -m htc_dev.screenshots` against a dashboard on the
# sample runs: these tests' pages show uploaded test data.
SHOTS = Path(os.environ.get("HTC_SCREENSHOT_DIR") or (Path(tempfile.gettempdir()) / "htc-screenshots"))
SHOTS.mkdir(parents=True, exist_ok=True)
PAGES = [  # (sidebar link text, url path, file name, plotly charts the page draws)
    ("Runs", "", "runs", 0),
    ("Calibration", "calibration", "calibration", 4),
    ("Feature weights", "weights", "feature_weights", 5),
    ("Feature space", "feature_space", "feature_space", 1),
    ("Examples", "examples", "examples", 0),
    ("Compare LLMs", "compare", "compare_llms", 3),
    ("Trajectory inspector", "inspector", "trajectory_inspector", 4),
]
HOSTILE_Q = 'Which <img src=x onerror="window.__pwned=1"> city? <script>window.__pwned=2</script>'


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def start_dashboard(root: Path, samples: Path):
    """The dashboard (app.py) on a free local port with its store under ``root`` and ``samples`` as the sample
    runs; yields its URL and stops it afterwards. Short alpha grid so evaluations finish quickly."""
    port = _free_port()
    env = dict(os.environ, HTC_DASHBOARD_ALPHAS="0.1,1,10", PYTHONUNBUFFERED="1")
    log = open(root / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--", "--data-dir", str(root / "data"), "--sample-dir", str(samples)],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("streamlit did not start: " + (root / "streamlit.log").read_text()[-2000:])
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _require_browser()
    root = tmp_path_factory.mktemp("browser")
    with start_dashboard(root, REPO / "sample_runs") as url:   # the shipped, project-recorded runs
        yield {"url": url, "root": root}


@pytest.fixture(scope="module")
def browser():
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu",
                                                              "--disable-background-networking", "--no-first-run"])
        yield b
        b.close()


def _settle(page, timeout: float = 240.0) -> None:
    """Wait until the script run is over (no 'running' status widget, no progress bar) and the main area shows no
    status line of background work (layout.PENDING_ICON: Feature space's projection still computing, refreshed every
    second; the page's text shows the icon's name)."""
    from htc_core.app.layout import PENDING_ICON_NAME

    page.wait_for_timeout(600)
    deadline = time.time() + timeout
    while time.time() < deadline:
        running = page.locator('[data-testid="stStatusWidget"]').count()
        bars = page.locator('[data-testid="stProgress"]').count()
        pending = page.locator('[data-testid="stMain"]').get_by_text(PENDING_ICON_NAME).count()
        if not running and not bars and not pending:
            page.wait_for_timeout(500)
            if not page.locator('[data-testid="stStatusWidget"]').count():
                return
        page.wait_for_timeout(300)
    raise AssertionError("the page kept running for more than %.0f s" % timeout)


def _screenshot(page, path: Path, *, max_height: int = 4200) -> None:
    """The whole page: Streamlit scrolls inside its main block, so grow the viewport to its height first."""
    h = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]')
                                 || document.scrollingElement; return m.scrollHeight; }""")
    page.set_viewport_size({"width": 1440, "height": int(min(max(h, 900), max_height))})
    page.wait_for_timeout(800)      # let plotly re-layout to the new size
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 1000})


def _assert_clean(page, where: str) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, f"exception box on {where}"
    errors = page.locator('[data-testid="stAlertContentError"]').all_inner_texts()
    assert not errors, f"error on {where}: {errors}"
    assert page.evaluate("window.__pwned === undefined"), f"injected script ran on {where}"


def test_upload_through_the_file_chooser_and_visit_every_page(server, browser, tmp_path):
    evil = make_traj("evil-1", [([-0.4, -0.01], None), ([-0.1, -2.0, -0.3, -0.05], None)], success=False,
                     question=HOSTILE_Q, dataset="arithmetic", model="SmolLM2-135M-greedy", answer="<b>x</b>")
    evil["steps"][1]["tokens"] = ["<script>window.__pwned=3</script>", "<img src=x onerror=window.__pwned=4>",
                                  " plain", " text"]     # the last step: its token view is open
    good = [make_traj(f"up-{i}", [([-0.05 * (i % 7 + 1), -0.3, -0.01], None)], success=bool(i % 3),
                      question=f"uploaded question {i}", dataset="Uploaded", model="Tiny-LM") for i in range(24)]
    upload = write_jsonl(tmp_path / "my-runs.jsonl", good + [evil] + ["{broken line"])

    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    dialogs, remote = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    # offline and private (issue 30 #9): nothing is fetched from another host (the favicon is an inline emoji,
    # the icon font is Streamlit's bundled copy), so the dashboard works without a network and leaks nothing
    local = re.compile(r"^(data:|blob:|about:|https?://(localhost|127\.0\.0\.1)[:/])")
    page.on("request", lambda r: None if local.match(r.url) else remote.append(r.url))
    page.goto(server["url"], wait_until="domcontentloaded")
    page.get_by_role("heading", name="Runs").first.wait_for(timeout=90_000)
    _settle(page)
    _assert_clean(page, "Runs (first start)")

    # upload through the real file chooser
    upload_expander = page.get_by_text("Upload runs", exact=True)
    if not page.locator('[data-testid="stFileUploaderDropzone"]').first.is_visible():
        upload_expander.click()
    with page.expect_file_chooser() as fc:
        page.locator('[data-testid="stFileUploaderDropzone"]').first.locator("button").click()
    fc.value.set_files(str(upload))
    page.get_by_text("my-runs.jsonl").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Upload and store").click()
    page.get_by_text("Stored 25 trajectories").wait_for(timeout=120_000)
    _settle(page)
    assert page.get_by_text("Rejected 1 trajectories or files").count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0
    SHOTS.mkdir(parents=True, exist_ok=True)

    for link, path, name, charts in PAGES:
        if link != "Runs":
            page.locator('[data-testid="stSidebarNav"]').get_by_text(link, exact=True).click()
            page.get_by_role("heading", name=link).first.wait_for(timeout=60_000)
        _settle(page)
        if charts:   # every figure drawn (its SVG present)
            # (== rather than >=: while a page reruns to add the evaluation's last part, the previous run's
            # charts stay on screen until replaced, so the count can pass the final one for a moment)
            page.wait_for_function("Array.from(document.querySelectorAll('.js-plotly-plot'))"
                                   f".filter(e => e.querySelector('svg.main-svg')).length == {charts}",
                                   timeout=60_000)
        n_charts = page.locator(".js-plotly-plot").count()     # one per figure (a figure holds several SVGs)
        assert n_charts == charts, (link, n_charts)
        _assert_clean(page, link)
        _screenshot(page, SHOTS / f"{name}.png")

    # a plain click on a point of the feature space lists it; its button opens it in the inspector
    # (tests/test_browser_drill.py checks the drill-down of every chart in detail)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Feature space", exact=True).click()
    page.get_by_role("heading", name="Feature space").first.wait_for(timeout=60_000)
    _settle(page)
    page.wait_for_function("document.querySelector('.js-plotly-plot') && "
                           "document.querySelector('.js-plotly-plot')._fullLayout", timeout=60_000)
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    xy = page.evaluate("""() => {
        const gd = document.querySelector('.js-plotly-plot');
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect(), pts = [];
        gd._fullData.forEach(t => t.x.forEach((x, j) => pts.push([box.left + xa._offset + xa.l2p(x),
                                                                box.top + ya._offset + ya.l2p(t.y[j]), t.customdata[j][1]])));
        pts.forEach(p => p.push(Math.min(...pts.filter(q => q !== p).map(q => Math.hypot(p[0] - q[0], p[1] - q[1])))));
        pts.sort((a, b) => b[3] - a[3]);      // the most isolated point: a click cannot hit another
        return pts[0];
    }""")
    page.mouse.move(xy[0], xy[1])
    page.wait_for_timeout(300)
    page.mouse.click(xy[0], xy[1])
    _settle(page)
    page.get_by_text("1 run: the selected point").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Open in the inspector").first.click()
    page.get_by_role("heading", name="Trajectory inspector").first.wait_for(timeout=60_000)
    _settle(page)
    page.get_by_text(f"{xy[2]} · dataset").first.wait_for(timeout=30_000)   # the inspector shows that trajectory
    _assert_clean(page, "inspector opened from the feature space")

    # the hostile trajectory in the inspector: its markup shows as text and never runs
    page.get_by_label("Find a trajectory (id or words of the question)").fill("evil-1")
    page.keyboard.press("Enter")
    _settle(page)
    page.get_by_text("<script>window.__pwned=3</script>").first.wait_for(timeout=30_000)
    assert page.get_by_text(HOSTILE_Q).count() >= 1
    _assert_clean(page, "inspector (hostile trace)")
    assert not dialogs
    assert not remote, remote[:5]
    assert page.evaluate("document.querySelector(\"link[rel='shortcut icon']\").href").startswith("data:")
    page.screenshot(path=str(SHOTS / "trajectory_inspector_hostile.png"), full_page=False)
    page.close()
