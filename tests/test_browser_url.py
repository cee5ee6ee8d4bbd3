"""A pasted Runs link with filters, sort and page opens the same view in a new browser session (issue 27
item 6); junk in the link is ignored. Real headless Chromium on the shipped sample runs."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from test_browser import _assert_clean, _settle, browser, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


def _widget(page, testid: str, label: str) -> str:
    return page.locator(f'[data-testid="{testid}"]').filter(has_text=label).first.inner_text()


def _choice(page, label: str) -> str:
    return page.get_by_role("combobox", name=label, exact=True).first.input_value()


def _matches(page) -> tuple[int, int, str]:
    text = page.locator('[data-testid="stCaptionContainer"]').filter(has_text="trajectories match").first.inner_text()
    m = re.search(r"([\d,]+) of ([\d,]+) trajectories match; rows ([\d,]+–[\d,]+)", text)
    assert m, text
    return int(m[1].replace(",", "")), int(m[2].replace(",", "")), m[3]


def test_a_pasted_runs_link_applies_its_filters_and_sort(server, browser):  # noqa: F811
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = ctx.new_page()
    page.goto(f"{server['url']}/runs", wait_until="domcontentloaded")
    _settle(page)
    everything, total, _ = _matches(page)
    assert everything == total

    link = (f"{server['url']}/runs?conf=GlobalTrace-TP&label=failure&sort=steps&desc=1&size=50&page=2"
            "&range=0&range=0.8&flags=nonsense&q=" + "x" * 300)          # the last two are junk: ignored
    other = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()   # a new session
    other.goto(link, wait_until="domcontentloaded")
    _settle(other)
    _assert_clean(other, "Runs from a link")
    shown, total2, rows = _matches(other)
    assert total2 == total and 50 < shown < total and rows == "51–100"
    assert _choice(other, "Label") == "failure" and _choice(other, "Rows per page") == "50"
    assert _choice(other, "Sort by") == "steps" and _choice(other, "Confidence") == "GlobalTrace-TP"
    assert other.get_by_label("Descending").is_checked()
    assert "0.80" in _widget(other, "stSlider", "Confidence range")
    q = parse_qs(urlparse(other.url).query)
    assert q["label"] == ["failure"] and q["sort"] == ["steps"] and q["page"] == ["2"] and q["range"] == ["0", "0.8"]
    assert "q" not in q and "flags" not in q            # the junk did not come back into the URL
    ctx.close()
    other.context.close()
