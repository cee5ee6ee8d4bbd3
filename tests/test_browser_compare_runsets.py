"""The run-set selector and the "Compare run sets" page in real headless Chromium, on the project's own
sample runs: SmolLM2-135M-greedy vs SmolLM2-135M-sampled-t0.7 (the two decoding configurations), scoped to the
facts dataset and those two models through the URL so the evaluation stays short. (Without the models, the
default sides of facts are the two models with the most runs: Gemma3-270M-greedy, 256 since its easy tier, and
SmolLM2-135M-greedy, 250.)"""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlparse

import pytest

from test_browser import SHOTS, _assert_clean, _screenshot, _settle, browser, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


def test_run_sets_in_the_url_scope_the_pages(server, browser):  # noqa: F811
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = ctx.new_page()
    name = "sample: facts_SmolLM2-135M-greedy.jsonl"          # a shared link may name a run set
    page.goto(f"{server['url']}/?runsets={quote(name)}", wait_until="domcontentloaded")
    side = page.locator('[data-testid="stSidebar"]')
    side.get_by_text("trajectories selected").wait_for(timeout=240000)   # the first start loads the samples
    _settle(page)
    _assert_clean(page, "runs page with ?runsets")
    assert "250 of 4,001 trajectories selected" in side.inner_text()
    assert name in side.locator('[data-testid="stMultiSelect"]').first.inner_text()
    # the URL now carries the run set's id (names need not be unique); a reload keeps the choice
    page.wait_for_function("() => window.location.search.includes('runsets=')", timeout=20000)
    ids = parse_qs(urlparse(page.url).query)["runsets"]
    assert len(ids) == 1 and len(ids[0]) == 12
    page.reload(wait_until="domcontentloaded")
    _settle(page)
    assert "250 of 4,001 trajectories selected" in page.locator('[data-testid="stSidebar"]').inner_text()
    ctx.close()


def test_compare_the_two_decoding_configurations(server, browser):  # noqa: F811
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = ctx.new_page()
    page.goto(f"{server['url']}/compare_runsets?datasets=facts&models=SmolLM2-135M-greedy"
              "&models=SmolLM2-135M-sampled-t0.7", wait_until="domcontentloaded")
    _settle(page, timeout=600)
    _assert_clean(page, "compare run sets")
    assert page.locator("h1").first.inner_text() == "Compare run sets"
    main = page.locator('[data-testid="stMain"]')
    # the default sides: the greedy run set against the sampled one
    pickers = main.locator('[data-testid="stMultiSelect"]')
    assert "facts_SmolLM2-135M-greedy" in pickers.nth(0).inner_text()
    assert "facts_SmolLM2-135M-sampled-t0.7" in pickers.nth(1).inner_text()
    # no run-set chip is cut (ui-review 23), at 1440 and at 900 px: each picker spans the page, its chips wrap
    chips = ("() => Array.from(document.querySelectorAll('[data-testid=\"stMain\"] "
             "[data-testid=\"stMultiSelectTagsContainer\"] span')).filter(e => !e.children.length && "
             "e.textContent.trim()).map(e => [e.textContent, e.scrollWidth, e.clientWidth])")
    for width in (1440, 900):
        page.set_viewport_size({"width": width, "height": 1000})
        try:                                    # the layout settles after the resize
            page.wait_for_function(f"() => {{ const c = ({chips})(); return c.length == 2 && "
                                   "c.every(([t, sw, cw]) => sw <= cw); }", timeout=10_000, polling=250)
        except Exception:
            raise AssertionError((width, page.evaluate(chips))) from None
    page.set_viewport_size({"width": 1440, "height": 1000})
    # the metric table: five metrics, A, B and B - A with intervals
    table = metric_cells(page)
    for metric in ("ECE", "Brier", "AUROC", "verdict accuracy", "success rate", "B − A"):
        assert metric in table, (metric, table)
    assert table.count("[") >= 15                                       # every value with its interval
    page.wait_for_function("Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".filter(e => e.querySelector('svg.main-svg')).length >= 3", timeout=60_000)
    assert main.locator(".js-plotly-plot").count() == 3          # reliability overlay, differences, feature shifts
    # the flipped-runs list: its heading with the counts and the table
    heading = main.locator('[data-testid="stMarkdownContainer"]').filter(has_text="Runs whose verdict flipped") \
        .first.inner_text()
    assert "of 250 paired runs" in heading, heading
    grid = main.locator('[data-testid="stDataFrame"]').last
    _screenshot(page, SHOTS / "compare_runsets.png")
    # the comparison is in the URL: the same link in a new browser context shows the same sides and table
    page.wait_for_function("() => ['ab=', 'a=', 'b=', 'conf=', 'trust='].every(p => window.location.search.includes(p))",
                           timeout=20000)
    other = browser.new_context(viewport={"width": 1440, "height": 1000})
    shared = other.new_page()
    shared.goto(page.url, wait_until="domcontentloaded")
    _settle(shared, timeout=600)
    _assert_clean(shared, "compare run sets from a pasted link")
    again = shared.locator('[data-testid="stMain"]')
    assert "facts_SmolLM2-135M-greedy" in again.locator('[data-testid="stMultiSelect"]').nth(0).inner_text()
    assert metric_cells(shared) == table
    other.close()
    # select the first flipped pair (the row-selection column of the grid) and open A's run in the inspector
    grid.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)
    _settle(page)
    button = main.get_by_role("button", name="Open A's run")
    button.wait_for(timeout=30000)
    opened = button.inner_text().split("run ", 1)[1].split(" in the")[0].replace("\\", "")
    assert "SmolLM2-135M-greedy" in opened
    button.click()
    _settle(page)
    _assert_clean(page, "inspector from the comparison")
    assert page.locator("h1").first.inner_text() == "Trajectory inspector"
    assert opened in page.locator('[data-testid="stCaptionContainer"]').filter(has_text="dataset").first.inner_text()
    ctx.close()


def metric_cells(page) -> str:
    """The metric table's headers and cells as text (a data grid: its cells are in the page for assistive
    technology, role columnheader / gridcell)."""
    grid = page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').first     # the page's first table
    grid.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=60_000)
    return " ".join(grid.locator('[role="columnheader"], [role="gridcell"]').all_inner_texts())
