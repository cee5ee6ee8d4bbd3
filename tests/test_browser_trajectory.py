"""The inspector's whole trajectory in real headless Chromium: a failed sample run opened by its link shows its
tool calls, observations and the final answer next to the gold answer without a single click."""

from __future__ import annotations

import pytest

from test_browser import SHOTS, _assert_clean, _settle, browser, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

TRAJ = "arithmetic-0004-SmolLM2-135M-greedy"   # failed: the agent computed 192 + 44 = 236, gold 157


def test_failed_run_shows_its_story_without_a_click(server, browser):  # noqa: F811
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = ctx.new_page()
    page.goto(f"{server['url']}/inspector?id={TRAJ}", wait_until="domcontentloaded")
    page.wait_for_selector("text=The whole trajectory, step by step", timeout=300000)  # the first start hands over
    _settle(page)
    _assert_clean(page, "inspector of a failed run")
    main = page.locator('[data-testid="stMain"]')
    for text in ("Final answer", "Gold answer", "157", "calculator[192 + 44]", "Observation (tool result)",
                 "Lowest-probability token(s)"):
        hits = main.get_by_text(text, exact=False).all()   # (the folded few-shot input holds "Final Answer" too)
        assert any(h.is_visible() for h in hits), text
    assert "wrong" in main.inner_text()
    # the lowest-probability tokens are outlined in the coloured output
    assert page.locator('span[title*="lowest of this step"]').count() >= 1
    main.get_by_text("The whole trajectory, step by step").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "inspector_trajectory.png"))
    ctx.close()
