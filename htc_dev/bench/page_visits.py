"""Part of the cold-start benchmark (``python -m htc_dev.bench coldstart --pages``): the first visit of every
dashboard page in a real ``streamlit run`` server and headless Chromium, on a fresh install and again warm.

Cold: an empty data directory (the app opens on ``sample_runs/`` and computes every run's features, as a new
user's first start does) and an empty kernel cache (``HTC_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` pointed at a new
folder: nothing of htc's or umap's compiled code from an earlier process). Warm: a second server on the same
data directory and caches (the store holds the runs, their features and whatever results the first server
kept; the kernels load from the cache).

Chromium opens the app (Runs is the landing page: timed from asking for ``/``, the server already answering)
and then clicks each page of the sidebar in the order of :data:`PAGES`, one after the other. For every page:

- **usable**: seconds from the click until the page's main chart or table (:data:`PAGES`) is on screen, drawn
  by this page's run (not a greyed element of the page before), and no spinner in the main area (a spinner
  means the page waits for something before it can draw). A progress bar or status line for work that goes on
  in the background while the page is drawn is allowed: that is the visible status of what is still computing.
- **CPU**: CPU seconds of the server process (all its threads, background jobs included) from the click to usable:
  on a loaded machine the wall time grows with the load, this much less (the browser's rendering not counted;
  on an idle 2-core machine the wall time is about this, less where two threads overlap).
- **settled**: seconds until, in addition, no progress bar, spinner, running-script indicator or status line of
  background work (:data:`PENDING_TEXT`) shows twice in a row 0.1 s apart (everything the page shows is final),
  at most :data:`SETTLE_LIMIT_S`.

The next page is clicked once the page before settled (or its limit passed). The load average (1 min) is read
at each click. Importing Playwright here is fine: ``htc_dev`` is not part of the product.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

#: the sidebar's pages in the order they are clicked, each with the elements that make it usable (CSS, inside
#: the main area; Streamlit gives an element with ``key=K`` the class ``st-key-K``); any one group suffices
PAGES: list[tuple[str, tuple[tuple[str, ...], ...]]] = [
    ("Runs", ((".st-key-browse_table",),)),
    ("Calibration", ((".st-key-cal_reliability", '[data-testid="stDataFrame"]'),)),
    ("Feature weights", ((".st-key-w_bar_reduced", ".st-key-w_bar_full"),)),
    ("Feature space", ((".st-key-fs_chart",),)),
    ("Examples", (('[class*="st-key-ex_open_"]',),)),
    ("Compare LLMs", ((".st-key-cmp_rel", ".st-key-cmp_feat"),)),
    ("Compare run sets", ((".st-key-ab_reliability",), ('[data-testid="stAlert"]',))),
    # no run chosen yet (a first visit): the inspector shows its search and run picker
    ("Trajectory inspector", ((".st-key-insp_step_confidence",), ('[class*="st-key-insp_pick_"]',))),
    # runs labeled by their files (the sample runs): the page says so and links to Calibration
    ("Label", ((".st-key-queue_success",), ('[data-testid="stAlert"]', '[data-testid="stPageLink"]'))),
    ("Side by side", ((".st-key-sbs_steps_B",),)),
]
#: the most seconds a page may take to become usable, and then to settle
USABLE_LIMIT_S = 180.0
SETTLE_LIMIT_S = 300.0
FRESH = ':not([data-stale="true"])'


@dataclass
class Visit:
    page: str
    usable_s: float | None      # None: not usable within USABLE_LIMIT_S
    settled_s: float | None     # None: still working after SETTLE_LIMIT_S more
    load: float                 # the 1-minute load average at the click
    cpu_s: float | None = None  # CPU seconds of the server process (all its threads) from the click to usable
    cpu_settled_s: float | None = None   # the same, from the click to settled


def _usable(page, title: str, groups) -> bool:
    main = page.locator('[data-testid="stMain"]')
    if main.locator('[data-testid="stSpinner"]').count():
        return False
    if not any(h.strip() == title for h in main.locator("h1").all_inner_texts()):
        return False
    for group in groups:
        if all(main.locator(f"{sel}{FRESH}").count() for sel in group):
            return True
    return False


#: what a page writes while a part of it is still computing in the background (Feature space's status line,
#: Calibration's list of parts still evaluating): a page that shows one has not settled
PENDING_TEXT = ("hourglass_empty", "Still evaluating")     # the first: layout.PENDING_ICON's name in the page


def _busy(page) -> bool:
    main = page.locator('[data-testid="stMain"]')
    return bool(page.locator('[data-testid="stStatusWidget"]').count()
                + main.locator('[data-testid="stProgress"]').count() + main.locator('[data-testid="stSpinner"]').count()
                + sum(main.get_by_text(t).count() for t in PENDING_TEXT))


def _wait(cond, limit_s: float, page) -> float | None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit_s:
        if cond():
            return time.perf_counter() - t0
        page.wait_for_timeout(100)
    return None


def _server_cpu(server) -> float:
    t = server.cpu_times()
    return t.user + t.system


def _visit_one(page, title: str, groups, t0: float, load: float, server) -> Visit:
    c0 = _server_cpu(server)
    ok = _wait(lambda: _usable(page, title, groups), USABLE_LIMIT_S, page)
    usable = None if ok is None else time.perf_counter() - t0
    cpu = _server_cpu(server) - c0
    quiet = {"n": 0}

    def settled() -> bool:
        quiet["n"] = 0 if (_busy(page) or not _usable(page, title, groups)) else quiet["n"] + 1
        return quiet["n"] >= 2

    done = _wait(settled, SETTLE_LIMIT_S, page) if usable is not None else None
    return Visit(title, usable, None if done is None else time.perf_counter() - t0, load, cpu,
                 _server_cpu(server) - c0)


def visit_pages(port: int, chromium: str, server_pid: int) -> list[Visit]:
    """Every page of :data:`PAGES` once, in one browser tab, against the server on ``port`` (process
    ``server_pid``)."""
    import psutil
    from playwright.sync_api import sync_playwright

    from .server import launch_chromium, open_when_up

    out: list[Visit] = []
    server = psutil.Process(server_pid)
    with sync_playwright() as p:
        b = launch_chromium(p, chromium)
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        open_when_up(page, port, attempt_ms=3000, pause_s=0.2, path="/_stcore/health")
        for title, groups in PAGES:
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            if title == "Runs":
                page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            else:
                page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
            v = _visit_one(page, title, groups, t0, load, server)
            out.append(v)
            print(f"  {title:<22}{_fmt(v.usable_s):>9}{_fmt(v.settled_s):>10}{_fmt(v.cpu_s):>8}  load {load:.1f}",
                  flush=True)
        b.close()
    return out


def _fmt(s: float | None) -> str:
    return "-" if s is None else f"{s:.1f}"


def server_round(data_dir: Path, cache: Path, samples: Path, env: dict, chromium: str) -> list[Visit]:
    """One new server on ``data_dir`` with the kernel caches in ``cache``, every page visited once."""
    from .server import free_port, start_app

    env = dict(env, HTC_CACHE_DIR=str(cache), NUMBA_CACHE_DIR=str(cache / "numba"))
    port = free_port()
    proc = start_app(port, data_dir, samples, env)
    try:
        return visit_pages(port, chromium, proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def cold_and_warm(samples: Path, env: dict, work: Path) -> tuple[list[Visit], list[Visit]] | None:
    """(cold, warm) visits of every page (see the module doc); None without Playwright or Chromium."""
    from .server import chromium_path

    chromium = chromium_path()
    if chromium is None:
        return None
    data, cache = work / "data", work / "cache"
    print("cold: empty data directory and kernel caches (page, usable s, settled s, server CPU s to usable, load at "
          "the click)", flush=True)
    cold = server_round(data, cache, samples, env, chromium)
    print("warm: a second server, same data directory and caches", flush=True)
    warm = server_round(data, cache, samples, env, chromium)
    return cold, warm


def print_table(cold: list[Visit], warm: list[Visit]) -> None:
    print(f"{'page':<22}{'cold usable':>12}{'settled':>9}{'CPU':>6}{'load':>6}{'warm usable':>13}{'settled':>9}"
          f"{'CPU':>6}{'load':>6}")
    for c, w in zip(cold, warm):
        print(f"{c.page:<22}{_fmt(c.usable_s):>12}{_fmt(c.settled_s):>9}{_fmt(c.cpu_s):>6}{c.load:>6.1f}"
              f"{_fmt(w.usable_s):>13}{_fmt(w.settled_s):>9}{_fmt(w.cpu_s):>6}{w.load:>6.1f}")
    slow = [c.page for c in cold if c.usable_s is None or c.usable_s > 10.0]
    print("cold first visits over 10 s: " + (", ".join(slow) if slow else "none"))
