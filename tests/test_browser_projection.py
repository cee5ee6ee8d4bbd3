"""Feature space in a real server and Chromium (issue 29 item 3): the first visit draws a chart at once (a PCA
while UMAP is computed, with a status line) and the page changes to UMAP by itself when the background job ends,
with no click."""

from __future__ import annotations

import time

import pytest

from htc_core.app.layout import PENDING_ICON_NAME

from test_browser import _assert_clean, _settle, browser, start_dashboard  # noqa: F401  (fixtures)
from test_browser_never_silent import _small_samples

pytestmark = pytest.mark.browser

#: the status icon's font, whether that font is loaded, its drawn width and the font size (px)
ICON_BOX = f"""() => {{
  const e = document.querySelector('[data-testid="stMain"] [role="img"][aria-label="{PENDING_ICON_NAME} icon"]');
  if (!e) return null;
  const cs = getComputedStyle(e);
  return {{font: cs.fontFamily, loaded: document.fonts.check('16px "Material Symbols Rounded"'),
          width: e.getBoundingClientRect().width, size: parseFloat(cs.fontSize)}};
}}"""


def test_feature_space_draws_a_preview_with_a_status_then_umap_by_itself(browser, tmp_path):  # noqa: F811
    with start_dashboard(tmp_path, _small_samples(tmp_path / "samples")) as url:
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(url, wait_until="domcontentloaded")
        page.locator('[data-testid="stMain"] h1').filter(has_text="Runs").wait_for(timeout=180_000)
        _settle(page)
        page.locator('[data-testid="stSidebarNav"]').get_by_text("Feature space", exact=True).click()
        main = page.locator('[data-testid="stMain"]')
        main.locator(".st-key-fs_chart").wait_for(timeout=180_000)      # a chart, whichever projection
        seen, glyph = set(), None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            text = main.inner_text()
            preview, status = "shown while UMAP is computed" in text, PENDING_ICON_NAME in text
            seen.add((preview, status))
            if status and glyph is None:
                glyph = page.evaluate(ICON_BOX)
            if "UMAP of the standardized 48 features" in text and not status:
                break
            page.wait_for_timeout(200)
        else:
            pytest.fail(f"Feature space never changed to UMAP by itself (states seen: {sorted(seen)})")
        if (True, False) in seen:        # a preview drawn without its status line must be a moment of the draw
            assert (True, True) in seen, f"the PCA preview was shown without a status line: {sorted(seen)}"
        # the status icon is drawn by Streamlit's bundled icon font, one glyph about 1 em wide (no emoji font needed;
        # a ligature the font did not turn into a glyph would be as wide as its name "hourglass_empty")
        assert glyph is not None and "Material Symbols" in glyph["font"] and glyph["loaded"], glyph
        assert 0 < glyph["width"] <= 1.6 * glyph["size"], glyph
        assert main.locator(".st-key-fs_chart").count() == 1
        _assert_clean(page, "Feature space after the background projection")
        page.close()
