"""Drill-down in a real browser (Playwright + headless Chromium): a plain mouse click on a bin of the
reliability diagram, a bar of the confidence histogram or a point of the feature space lists the runs in it,
and one of them opens in the inspector.

The app runs on 160 of the project's own recorded runs (sample_runs/, both outcomes), so the evaluation
behind the Calibration page finishes in seconds. Skips without Chromium/Playwright unless
``HTC_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from test_browser import (SHOTS, _assert_clean, _require_browser, _screenshot, _settle, browser,  # noqa: F401
                          start_dashboard)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _require_browser()
    root = tmp_path_factory.mktemp("drill")
    samples = root / "samples"
    samples.mkdir()
    shipped = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    lines = shipped.read_text(encoding="utf-8").splitlines(True)[:160]
    (samples / "arithmetic-160.jsonl").write_text("".join(lines), encoding="utf-8")
    with start_dashboard(root, samples) as url:
        yield {"url": url}


# pixel position of point `index` of the first trace whose name starts with `trace` (of chart `chart`), and
# that point's customdata: where a user's mouse would click it
POINT_JS = """([chart, trace, index]) => {
    const gd = document.querySelectorAll('.js-plotly-plot')[chart];
    const tr = gd._fullData.find(t => (t.name || '').startsWith(trace) && t.x && t.x.length > index);
    const xa = gd._fullLayout[tr.xaxis.replace('x', 'xaxis')], ya = gd._fullLayout[tr.yaxis.replace('y', 'yaxis')];
    const box = gd.getBoundingClientRect();
    const y = tr.type === 'bar' ? tr.y[index] / 2 : tr.y[index];     // a bar: click its middle
    return {x: box.left + xa._offset + xa.l2p(tr.x[index]), y: box.top + ya._offset + ya.l2p(y),
            customdata: tr.customdata ? tr.customdata[index] : null, n: tr.x.length};
}"""


HAS_REDUCED = """() => { const gd = document.querySelector('.js-plotly-plot');
    return !!(gd && gd._fullData && gd._fullData.some(t => (t.name || '').startsWith('HTC-Reduced'))); }"""


def _open_page(page, link: str, charts: int) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(link, exact=True).click()
    page.get_by_role("heading", name=link).first.wait_for(timeout=60_000)
    _settle(page)
    page.wait_for_function("Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           f".filter(e => e._fullLayout && e.querySelector('svg.main-svg')).length >= {charts}",
                           timeout=120_000)
    # the evaluation's last parts redraw the page when they finish ("Still evaluating: ..."): a click during
    # such a redraw is lost, so wait until none is pending and the page has settled again. The page writes
    # "Still evaluating" only once the rest is drawn, so on Calibration also wait until the reliability
    # diagram draws HTC-Reduced (the last part, drawn by default): with the evaluation started early by the
    # Runs page, its last part can finish just as Calibration is first drawn, and the page then reruns.
    if link == "Calibration":
        page.wait_for_function(HAS_REDUCED, timeout=240_000)
    page.get_by_text("Still evaluating:").wait_for(state="detached", timeout=240_000)
    _settle(page)
    page.wait_for_timeout(800)


def _click(page, chart: int, trace: str, index: int) -> dict:
    page.locator(".js-plotly-plot").nth(chart).scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    pt = page.evaluate(POINT_JS, [chart, trace, index])
    page.mouse.move(pt["x"], pt["y"])
    page.wait_for_timeout(300)
    page.mouse.click(pt["x"], pt["y"])
    _settle(page)
    return pt


def _listed(page, timeout: float = 30_000) -> tuple[int, str]:
    """The drill-down heading's count ('**N runs: ...**') and text. The page is first shown whole (the viewport
    grown to its height, as a user scrolls to the list below the charts): on the long Calibration page the
    list can otherwise sit below the fold and never count as visible."""
    h = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]')
                                 || document.scrollingElement; return m.scrollHeight; }""")
    page.set_viewport_size({"width": 1440, "height": int(min(max(h, 1000), 4200))})
    page.wait_for_timeout(800)
    heading = page.locator('[data-testid="stMarkdownContainer"] strong').filter(
        has_text=re.compile(r"^[0-9,]+ runs?: ")).first
    heading.wait_for(state="attached", timeout=timeout)
    heading.scroll_into_view_if_needed()      # a page taller than the grown viewport (wrapping rows at any width)
    heading.wait_for(timeout=timeout)
    text = page.locator('[data-testid="stMarkdownContainer"] strong').filter(has_text=" run").all_inner_texts()
    text = [t for t in text if ": " in t and t.split(" ")[0].replace(",", "").isdigit()]
    assert text, "no drill-down table heading"
    return int(text[0].split(" ")[0].replace(",", "")), text[0]


def _open_first_in_inspector(page) -> str:
    chosen = page.get_by_label("Run to inspect (or select a row of the table)").input_value()
    tid = chosen.split(" · ")[0].strip()
    page.get_by_role("button", name="Open in the inspector").first.click()
    page.get_by_role("heading", name="Trajectory inspector").first.wait_for(timeout=60_000)
    _settle(page)
    page.get_by_text(f"{tid} · dataset").first.wait_for(timeout=30_000)    # the inspector shows that run
    return tid


# marks the chart's element; the mark is gone once Streamlit draws that chart again (a new element)
MARK_JS = "(chart) => { document.querySelectorAll('.js-plotly-plot')[chart].__htcMark = true; }"
MARKED_JS = "(chart) => document.querySelectorAll('.js-plotly-plot')[chart].__htcMark === true"


def _click_listed(page, chart: int, trace: str, index: int) -> tuple[int, str]:
    """Click a point and read the list it opens, and check that the click's rerun did not draw the chart again.

    A click that lands while Streamlit replaces a chart's element hits an empty chart and sends nothing (measured:
    docs/ui-review.md, "Clicks lost while a chart is drawn again"). Streamlit replaces the element when the figure
    changes (a chart with selections is named by its content) or when the chart moves to another place in the
    page; the second no longer happens on Calibration. The first can still meet a click (seen once in a
    clean-clone CI run): as a user would, click the same point once more, saying so in the output, before
    waiting the full time."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.evaluate(MARK_JS, chart)
    _click(page, chart, trace, index)
    try:
        listed = _listed(page, timeout=15_000)
        # the click's rerun leaves the chart in place: each run draws the same elements before it (the evaluation's
        # progress bar has its place in every run), so Streamlit does not draw it again, and a second click made
        # while the list appears is not lost on a chart being drawn again
        assert page.evaluate(MARKED_JS, chart), f"chart {chart} was drawn again by the rerun of a click on it"
        return listed
    except PlaywrightTimeout:
        print(f"drill-down: no list 15 s after the click on {trace}[{index}] of chart {chart}; clicking again")
        _settle(page)
        _click(page, chart, trace, index)
        return _listed(page)


def test_click_a_reliability_bin_lists_its_runs_and_opens_one(server, browser):
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(server["url"], wait_until="domcontentloaded")
    page.get_by_role("heading", name="Runs").first.wait_for(timeout=90_000)
    _settle(page)
    _open_page(page, "Calibration", 4)
    _assert_clean(page, "Calibration")

    # a plain click on the marker of a bin that no other method's marker sits near (so the click is unambiguous)
    page.locator(".js-plotly-plot").nth(0).scroll_into_view_if_needed()
    target = page.evaluate("""() => { const gd = document.querySelectorAll('.js-plotly-plot')[0];
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, pts = [];
        gd._fullData.forEach(t => { if (t.mode === 'lines+markers' && t.customdata)
            t.x.forEach((x, j) => pts.push({trace: t.name, j: j, px: xa.l2p(x), py: ya.l2p(t.y[j]), cd: t.customdata[j]})); });
        pts.forEach(p => p.gap = Math.min(...pts.filter(q => q !== p).map(q => Math.hypot(p.px - q.px, p.py - q.py)), 1e9));
        pts.sort((a, b) => (b.gap >= 15) - (a.gap >= 15) || Number(b.cd[0]) - Number(a.cd[0]));
        return pts[0]; }""")
    assert target["gap"] >= 15, target
    n, text = _click_listed(page, 0, target["trace"], target["j"])
    method, expected = target["cd"][-2], int(target["cd"][0])
    assert n == expected and text.startswith(f"{n} run") and text.endswith(f" of {method}"), (n, expected, text)
    table = page.locator('[data-testid="stDataFrame"]').first
    table.wait_for(timeout=30_000)
    _assert_clean(page, "Calibration after a bin click")
    _screenshot(page, SHOTS / "calibration_drill_reliability.png")
    tid = _open_first_in_inspector(page)
    assert tid
    _assert_clean(page, "inspector opened from a reliability bin")

    # a bar of the confidence histogram (second chart): its count is the number of runs listed
    _open_page(page, "Calibration", 4)
    bars = page.evaluate("""() => { const gd = document.querySelectorAll('.js-plotly-plot')[1];
        const tr = gd._fullData.find(t => t.type === 'bar' && (t.name || '').startsWith('failure'));
        return tr.y.map(Number); }""")
    j = max(range(len(bars)), key=lambda k: bars[k])
    n, text = _click_listed(page, 1, "failure", j)
    assert n == bars[j] and text.split(": ", 1)[1].startswith("failures with "), (n, bars[j], text)
    _assert_clean(page, "Calibration after a histogram click")
    page.close()


def test_click_a_feature_space_point_lists_it_and_opens_it(server, browser):
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(server["url"], wait_until="domcontentloaded")
    page.get_by_role("heading", name="Runs").first.wait_for(timeout=90_000)
    _settle(page)
    _open_page(page, "Feature space", 1)
    page.locator(".js-plotly-plot").nth(0).scroll_into_view_if_needed()
    target = page.evaluate("""() => { const gd = document.querySelectorAll('.js-plotly-plot')[0];
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, pts = [];
        gd._fullData.forEach(t => t.x.forEach((x, j) => pts.push({trace: t.name, j: j, px: xa.l2p(x), py: ya.l2p(t.y[j])})));
        pts.forEach(p => p.gap = Math.min(...pts.filter(q => q !== p).map(q => Math.hypot(p.px - q.px, p.py - q.py))));
        pts.sort((a, b) => b.gap - a.gap);
        return pts[0]; }""")
    assert target["gap"] >= 8, target      # a point a click cannot confuse with another
    pt = _click(page, 0, target["trace"], target["j"])
    try:
        n, text = _listed(page, timeout=15_000)
    except Exception:   # the chart was still re-laying out when clicked (the browser sent no selection): click again
        pt = _click(page, 0, target["trace"], target["j"])
        n, text = _listed(page)
    assert n == 1 and text == "1 run: the selected point", text
    tid = _open_first_in_inspector(page)
    assert tid == pt["customdata"][1]
    _assert_clean(page, "inspector opened from the feature space")
    page.close()
