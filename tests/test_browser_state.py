"""The view lives in the URL: filters and the inspected trajectory survive a reload and a pasted link
(a new browser context, i.e. a new session with nothing in memory). Real headless Chromium."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from test_browser import SHOTS, _assert_clean, _settle, browser, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

TRAJ = "facts-0007-SmolLM2-135M-sampled-t0.7"   # a real sample run (sample_runs/facts)


def _view(page) -> dict:
    """What the page shows: the inspected trajectory's caption, the sidebar's chosen datasets, the title."""
    # the run's caption stays hidden until its label buttons are live (label_glue.hide_until_buttons: Streamlit loads
    # the button code lazily on a fresh tab), so it is read once it is visible
    shown = page.locator('[data-testid="stCaptionContainer"]').filter(has_text="dataset").first
    shown.wait_for(state="visible", timeout=30_000)
    caption = shown.inner_text()
    side = page.locator('[data-testid="stSidebar"]')
    datasets = side.locator('[data-testid="stMultiSelect"]').filter(has_text="Datasets").first.inner_text().split("\n")
    chips = [d for d in ("arithmetic", "facts", "strings", "units") if d in datasets]
    selected = [ln for ln in side.inner_text().split("\n") if "trajectories selected" in ln]
    return {"title": page.locator("h1").first.inner_text(), "caption": caption, "chips": chips,
            "selected": selected}


def test_filters_and_trajectory_survive_reload_and_a_pasted_link(server, browser):  # noqa: F811
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = ctx.new_page()
    # a shared link: Inspector, sidebar filtered to one dataset, one trajectory open
    page.goto(f"{server['url']}/inspector?datasets=facts&id={TRAJ}", wait_until="domcontentloaded")
    _settle(page)
    _assert_clean(page, "inspector link")
    first = _view(page)
    assert first["title"] == "Trajectory inspector"
    assert TRAJ in first["caption"] and "dataset facts" in first["caption"]
    assert first["chips"] == ["facts"]
    assert first["selected"] == ["993 of 4,001 trajectories selected"]
    q = parse_qs(urlparse(page.url).query)
    assert q.get("datasets") == ["facts"] and q.get("id") == [TRAJ] and urlparse(page.url).path == "/inspector"

    # pick another trajectory through the page's own search: the URL follows
    other = "facts-0011-SmolLM2-135M-greedy"
    box = page.get_by_label("Find a trajectory (id or words of the question)")
    box.fill(other)
    box.press("Enter")
    _settle(page)
    assert other in _view(page)["caption"]
    page.wait_for_function(f"() => window.location.search.includes('{other}')", timeout=20000)
    shared = page.url

    # reload: same view
    page.reload(wait_until="domcontentloaded")
    _settle(page)
    _assert_clean(page, "inspector after reload")
    again = _view(page)
    assert other in again["caption"] and again["chips"] == ["facts"] and again["selected"] == first["selected"]
    assert again["title"] == "Trajectory inspector"
    page.screenshot(path=str(SHOTS / "inspector_from_url.png"))

    # the URL pasted into a new browser context (no cookies, a new session): same view
    ctx2 = browser.new_context(viewport={"width": 1440, "height": 1000})
    page2 = ctx2.new_page()
    page2.goto(shared, wait_until="domcontentloaded")
    _settle(page2)
    _assert_clean(page2, "inspector in a new context")
    pasted = _view(page2)
    assert other in pasted["caption"] and pasted["chips"] == ["facts"] and pasted["selected"] == first["selected"]
    assert pasted["title"] == "Trajectory inspector"
    ctx2.close()
    ctx.close()
