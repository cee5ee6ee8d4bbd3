"""The ui-review's layout findings, checked in real headless Chromium at 900 px (docs/ui-review.md 17-20): what
only a browser lays out. The inspector's label bar and metric labels show whole (they wrap instead of cutting
"Su…"), its primary label button is the run's current label, its "this trajectory" label does not touch the
legend; Compare LLMs' facet titles do not run into each other. One dashboard on 120 labeled sample runs."""

from __future__ import annotations

import pytest

from conftest import REPO
from test_browser import SHOTS, _assert_clean, _require_browser, _settle, browser, start_dashboard  # noqa: F401

pytestmark = pytest.mark.browser
NARROW = {"width": 900, "height": 900}

#: the text of an element is cut when it needs more room than it has (Streamlit ellipsizes: "Su…")
CUT = "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _require_browser()
    root = tmp_path_factory.mktemp("review")
    samples = root / "samples"
    samples.mkdir()
    for src in sorted((REPO / "sample_runs" / "arithmetic").glob("arithmetic_SmolLM2-135M-*.jsonl")):
        (samples / src.name).write_text("".join(src.read_text(encoding="utf-8").splitlines(True)[:60]),
                                        encoding="utf-8")
    with start_dashboard(root, samples) as url:
        yield url


def _open(browser, url: str, title: str):  # noqa: F811
    page = browser.new_context(viewport=NARROW).new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.locator('[data-testid="stMain"] h1').filter(has_text=title).first.wait_for(timeout=300_000)
    _settle(page)
    page.get_by_text("Still evaluating:").wait_for(state="detached", timeout=300_000)
    _settle(page)
    _assert_clean(page, title)
    return page


def _boxes_overlap(a, b) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or
                a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def test_the_inspector_at_900_px_cuts_nothing_and_marks_the_current_label(server, browser):  # noqa: F811
    page = _open(browser, f"{server}/inspector", "Trajectory inspector")
    bar = page.locator(".st-key-insp_label_row")
    buttons = bar.locator('[data-testid="stButton"]')
    assert buttons.count() == 5
    assert [t.split("\n")[0].strip() for t in buttons.all_inner_texts()] == ["Success", "Failure", "Skip",
                                                                             "Previous", "Next"]
    assert bar.locator("button, button *").evaluate_all(CUT) == []
    main = page.locator('[data-testid="stMain"] [data-testid="stMainBlockContainer"]').bounding_box()
    for k in range(5):
        box = buttons.nth(k).bounding_box()
        assert box["x"] >= main["x"] - 1 and box["x"] + box["width"] <= main["x"] + main["width"] + 1
    page.locator('.st-key-insp_metrics [data-testid="stMetricLabel"]').first.wait_for(timeout=300_000)
    _settle(page)
    labels = page.locator('[data-testid="stMetricLabel"]')
    assert labels.count() >= 3
    assert page.locator('[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *').evaluate_all(CUT) == []
    current = page.get_by_text("Current label:").first.inner_text()
    value = "success" if "success (" in current else "failure"      # the shipped runs carry file labels
    primary = buttons.filter(has=page.locator('[data-testid="stBaseButton-primary"]'))
    assert primary.count() == 1 and primary.inner_text().split("\n")[0].strip().lower() == value

    chart = page.locator(".stPlotlyChart").filter(has=page.locator("text=this trajectory")).first
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    mark = chart.locator(".annotation").filter(has_text="this trajectory").first.bounding_box()
    legend = chart.locator(".legend").first.bounding_box()
    assert mark and legend and not _boxes_overlap(mark, legend)


def test_compare_llms_at_900_px_keeps_its_facet_titles_apart(server, browser):  # noqa: F811
    page = _open(browser, f"{server}/compare", "Compare LLMs")
    chart = page.locator(".stPlotlyChart").first
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    titles = chart.locator(".annotation")
    boxes = [titles.nth(k).bounding_box() for k in range(titles.count())]
    assert len(boxes) == 2                     # the two SmolLM2 run sets of the fixture
    assert not _boxes_overlap(boxes[0], boxes[1])


#: the data grid's scroller: wider content than its box means the table scrolls sideways
SIDEWAYS = "grid => { const s = grid.querySelector('.dvn-scroller'); return [s.scrollWidth, s.clientWidth]; }"


@pytest.mark.parametrize("width", [900, 1400])
def test_compare_llms_per_model_tables_fit_whole(server, browser, width):  # noqa: F811
    """ui-review 35, left open then: the per-model table had 9 columns for two methods and scrolled sideways at
    900 px. A table of counts and one per method (four columns at most, the metrics' meaning in their header
    tooltips) fit the page at 900 and at 1400 px: no table scrolls sideways; at 1400 px two share a row."""
    page = _open(browser, f"{server}/compare", "Compare LLMs")
    page.set_viewport_size({"width": width, "height": 900})
    row = page.locator(".st-key-cmp_tables")
    row.scroll_into_view_if_needed()
    grids = row.locator('[data-testid="stDataFrame"]')
    grids.nth(2).locator(".dvn-scroller").wait_for()      # counts, and the two default methods' tables
    page.wait_for_timeout(800)              # the grids lay out again at the new width
    row.screenshot(path=str(SHOTS / f"compare_llms_tables_{width}.png"))
    for k in range(grids.count()):
        content, box = grids.nth(k).evaluate(SIDEWAYS)
        assert content <= box + 1, f"at {width} px table {k} scrolls sideways ({content} px of content in {box} px)"
    tops = [grids.nth(k).bounding_box()["y"] for k in range(grids.count())]
    assert (tops[0] == tops[1]) == (width == 1400), tops      # side by side only where there is room


# --------------------------------------------------------------- the 900 px pass (docs/ui-review.md 25-32)

#: the texts of a plotly chart (tick labels, axis titles, legend entries, annotations) drawn past its own edges
OUTSIDE = """chart => { const box = chart.getBoundingClientRect();
    return [...chart.querySelectorAll('svg text')].filter(t => t.textContent.trim()).filter(t => {
        const r = t.getBoundingClientRect();
        return r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1); }).map(t => t.textContent); }"""


def _charts_whole(page, where: str) -> None:
    charts = page.locator('[data-testid="stMain"] .stPlotlyChart')
    assert charts.count() >= 1, where
    for k in range(charts.count()):
        chart = charts.nth(k)
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        assert chart.evaluate(OUTSIDE) == [], f"{where}: chart {k} cuts {chart.evaluate(OUTSIDE)}"


def _row_layout(page, key: str) -> list[dict]:
    """The boxes of a layout.wrapping_row's blocks."""
    blocks = page.locator(f".st-key-{key} > div")
    return [blocks.nth(k).bounding_box() for k in range(blocks.count())]


@pytest.mark.parametrize("width", [900, 1440])
def test_side_by_side_blocks_wrap_at_900_px_and_share_a_row_at_1440(server, browser, width):  # noqa: F811
    """ui-review 25: st.columns squeezed a chart to 170 px at 900 px (axis labels cut to '(lower is better)', the
    verdict column of Compare run sets' table out of sight); the wrapping rows put each block on a row of its own
    there, whole, and keep them side by side at 1440 px."""
    page = _open(browser, f"{server}/compare_runsets", "Compare run sets")
    page.set_viewport_size({"width": width, "height": 900})
    page.locator('[data-testid="stMain"] .stPlotlyChart').first.wait_for(timeout=300_000)
    _settle(page)
    main = page.locator('[data-testid="stMainBlockContainer"]').bounding_box()
    for key in ("ab_charts", "ab_shifts"):
        boxes = _row_layout(page, key)
        assert len(boxes) == 2, key
        assert all(b["x"] >= main["x"] and b["x"] + b["width"] <= main["x"] + main["width"] for b in boxes)
        same_row = abs(boxes[0]["y"] - boxes[1]["y"]) < 2
        assert same_row == (width == 1440), (key, width, boxes)
    _charts_whole(page, f"Compare run sets at {width} px")


def test_calibration_at_900_px_cuts_no_chart_text(server, browser):  # noqa: F811
    page = _open(browser, f"{server}/calibration", "Calibration")
    page.locator('.st-key-cal_selective .stPlotlyChart').first.wait_for(timeout=300_000)
    _settle(page)
    _charts_whole(page, "Calibration at 900 px")
    labels = page.locator('.st-key-cal_sel_metrics [data-testid="stMetricLabel"]')
    assert "success rate of the runs kept" in labels.all_inner_texts()
    assert page.locator('.st-key-cal_sel_metrics [data-testid="stMetric"] *').evaluate_all(CUT) == []


def test_examples_cards_at_900_px_show_whole_numbers(server, browser):  # noqa: F811
    """ui-review 27: three metrics in a card of half a 900 px page were cut to 'Lowe…' / '0…' / 'f…'."""
    page = _open(browser, f"{server}/examples", "Examples")
    metrics = page.locator('[data-testid="stMain"] [data-testid="stMetric"]')
    assert metrics.count() >= 6
    assert page.locator('[data-testid="stMetric"], [data-testid="stMetric"] *').evaluate_all(CUT) == []
    # ui-review 32: the Baseline picker, a third of the page, showed "LowestGroup+"
    picked = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"] input')     # the chosen value's box
    assert picked.count() == 2
    assert picked.evaluate_all("els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.value)") == []


def test_side_by_side_at_900_px_keeps_its_headline_whole(server, browser):  # noqa: F811
    """ui-review 28: 'HTC-Reduced confidence (out-of-f…' in half a 900 px page."""
    page = _open(browser, f"{server}/side_by_side", "Side by side")
    labels = page.locator('[data-testid="stMain"] [data-testid="stMetricLabel"]')
    assert labels.count() == 2
    assert page.locator('[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *').evaluate_all(CUT) == []
