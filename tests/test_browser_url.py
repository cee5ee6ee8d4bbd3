"""Every page's view round-trips through its URL (issue 27 item 6), in real headless Chromium on the project's
sample runs: the state is set through the page's widgets (and chart clicks), the URL is read, and that URL opened
in a NEW browser context (a new session, as a pasted link) shows the same widget values and the same result (the
drill-down list, the selected run, the same numbers). A pasted Runs link with junk in it is also checked. One
dashboard serves the whole module."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from conftest import REPO
from test_browser import _assert_clean, _require_browser, _settle, browser, start_dashboard  # noqa: F401
from test_browser_drill import HAS_REDUCED, _click, _listed
from test_browser_compare_runsets import metric_cells

pytestmark = pytest.mark.browser
VIEW = {"width": 1440, "height": 1000}
#: a run of the shipped samples (its id is unique there, so a link names it by id)
RUN = "arithmetic-0003-SmolLM2-135M-greedy"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One dashboard for the module, on the first 60 runs of each of the eight SmolLM2 sample files (480 runs:
    four datasets, two models, eight run sets), so its first start, evaluation and UMAP take seconds."""
    _require_browser()
    root = tmp_path_factory.mktemp("url")
    samples = root / "samples"
    samples.mkdir()
    for src in sorted((REPO / "sample_runs").glob("*/*_SmolLM2-135M-*.jsonl")):
        if src.parent.name != "_calllog":
            lines = src.read_text(encoding="utf-8").splitlines(True)[:60]
            (samples / src.name).write_text("".join(lines), encoding="utf-8")
    with start_dashboard(root, samples) as url:
        yield {"url": url}


# ------------------------------------------------------------------ driving the widgets
def _open(browser, url: str, title: str):  # noqa: F811
    """``url`` in a new browser context (a new session), once the page ``title`` has drawn and settled."""
    page = browser.new_context(viewport=VIEW).new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.locator('[data-testid="stMain"] h1').filter(has_text=title).first.wait_for(timeout=300_000)
    _ready(page)
    _assert_clean(page, f"{title} ({url})")
    return page


def _ready(page) -> None:
    """Settled, with no part of the evaluation still pending (its last part redraws the page)."""
    _settle(page)
    page.get_by_text("Still evaluating:").wait_for(state="detached", timeout=300_000)
    _settle(page)


def _query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def _wait_url(page, name: str, *values: str) -> None:
    """Until the page's URL carries ``name`` with exactly ``values`` (the page writes it once its rerun is over)."""
    page.wait_for_function("([k, v]) => new URLSearchParams(location.search).getAll(k).join('|') === v",
                           arg=[name, "|".join(values)], timeout=120_000)
    _ready(page)


def _radio(page, group: str, option: str) -> None:
    page.locator('[data-testid="stRadio"]').filter(has_text=group).get_by_text(option, exact=True).click()


def _checked(page, group: str, option: str) -> bool:
    return page.locator('[data-testid="stRadio"]').filter(has_text=group).get_by_label(option, exact=True).is_checked()


def _pick(page, label: str, option: str, exact: bool = True) -> None:
    """Choose ``option`` in the select box ``label`` as a user does: open it, type, take the match (``exact``
    False: the option whose text starts with ``option``)."""
    box = page.get_by_role("combobox", name=label, exact=True).first
    box.click()
    box.fill(option)
    match = (page.get_by_role("option", name=option, exact=True) if exact else
             page.get_by_role("option").filter(has_text=re.compile("^" + re.escape(option)))).first
    match.click()


def _choice(page, label: str) -> str:
    return page.get_by_role("combobox", name=label, exact=True).first.input_value()


def _slide(page, label: str, steps: int) -> None:
    thumb = page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").first
    thumb.focus()
    for _ in range(steps):
        thumb.press("ArrowRight")


def _slider(page, label: str) -> str:
    return page.locator('[data-testid="stSlider"]').filter(has_text=label).locator('input[type="range"]').first \
        .input_value()


def _tags(page, label: str) -> list[str]:
    return page.locator('[data-testid="stMultiSelect"]').filter(has_text=label).locator(
        '.react-aria-ComboBox [data-tag]').all_inner_texts()


def _metrics(page) -> list[str]:
    return page.locator('[data-testid="stMetric"]').all_inner_texts()


def _same_url(old, new) -> None:
    """The new session wrote back the same view: no parameter lost, none added."""
    assert _query(new) == _query(old), (old.url, new.url)


def _close(*pages) -> None:
    for p in pages:
        p.context.close()


# ------------------------------------------------------------------ Runs
def _matches(page) -> tuple[int, int, str]:
    text = page.locator('[data-testid="stCaptionContainer"]').filter(has_text="trajectories match").first.inner_text()
    m = re.search(r"([\d,]+) of ([\d,]+) trajectories match; rows ([\d,]+–[\d,]+)", text)
    assert m, text
    return int(m[1].replace(",", "")), int(m[2].replace(",", "")), m[3]


def _first_ids(page) -> list[str]:
    """The trajectory ids of the Runs table's first rows, in order."""
    grid = page.locator('[data-testid="stDataFrame"]').last
    grid.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=60_000)   # cells come after the grid
    cells = grid.locator('[role="gridcell"]').all_inner_texts()
    return [c for c in cells if re.fullmatch(r"[a-z]+-\d{4}-SmolLM2-135M-.+", c)]


def test_runs_filters_and_sort_set_in_the_page_round_trip(server, browser):  # noqa: F811
    page = _open(browser, f"{server['url']}/", "Runs")
    everything, total, _ = _matches(page)
    assert everything == total
    _pick(page, "Label", "failure")
    _wait_url(page, "label", "failure")
    _pick(page, "Sort by", "steps")
    _wait_url(page, "sort", "steps")
    page.locator('[data-testid="stCheckbox"]').filter(has_text="Descending").get_by_text("Descending").click()
    _wait_url(page, "desc", "1")
    shown, _, rows = _matches(page)
    assert 0 < shown < total
    ids = _first_ids(page)

    other = _open(browser, page.url, "Runs")
    assert _matches(other) == (shown, total, rows)
    assert _choice(other, "Label") == "failure" and _choice(other, "Sort by") == "steps"
    assert other.get_by_label("Descending").is_checked()
    assert ids and _first_ids(other) == ids, (ids, _first_ids(other))   # the same rows, in the same order
    _same_url(page, other)
    _close(page, other)


def test_a_pasted_runs_link_applies_its_filters_and_sort_and_drops_junk(server, browser):  # noqa: F811
    link = (f"{server['url']}/?conf=GlobalTrace-TP&label=failure&sort=steps&desc=1&size=50&page=2"
            "&range=0&range=0.8&flags=nonsense&q=" + "x" * 300)          # the last two are junk: ignored
    other = _open(browser, link, "Runs")
    shown, total, rows = _matches(other)
    assert 50 < shown < total and rows == f"51–{min(100, shown)}"
    assert _choice(other, "Label") == "failure" and _choice(other, "Rows per page") == "50"
    assert _choice(other, "Sort by") == "steps" and _choice(other, "Confidence") == "GlobalTrace-TP"
    assert other.get_by_label("Descending").is_checked()
    assert "0.80" in other.locator('[data-testid="stSlider"]').filter(has_text="Confidence range").first.inner_text()
    q = _query(other)
    assert q["label"] == ["failure"] and q["sort"] == ["steps"] and q["page"] == ["2"] and q["range"] == ["0", "0.8"]
    assert "q" not in q and "flags" not in q            # the junk did not come back into the URL
    _close(other)


def test_runs_path_opens_the_runs_page_with_its_link_and_no_page_not_found(server, browser):  # noqa: F811
    """Runs is the default page, served at "/"; "/runs" (typed, or an old link) forwards there with its parameters
    instead of showing Streamlit's "Page not found" dialog over the Runs page."""
    other = _open(browser, f"{server['url']}/runs?label=failure&sort=steps", "Runs")
    assert other.get_by_text("Page not found").count() == 0
    assert urlparse(other.url).path == "/"
    assert _choice(other, "Label") == "failure" and _choice(other, "Sort by") == "steps"
    q = _query(other)
    assert q["label"] == ["failure"] and q["sort"] == ["steps"]
    nav = other.locator('[data-testid="stSidebarNav"]').inner_text()
    assert nav.count("Runs") == 1                 # the forwarding page is hidden from the sidebar
    _close(other)


# ------------------------------------------------------------------ Calibration
RELIABILITY_TARGET = """() => { const gd = document.querySelectorAll('.js-plotly-plot')[0];
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, pts = [];
    gd._fullData.forEach(t => { if (t.mode === 'lines+markers' && t.customdata)
        t.x.forEach((x, j) => pts.push({trace: t.name, j: j, px: xa.l2p(x), py: ya.l2p(t.y[j]), cd: t.customdata[j]})); });
    pts.forEach(p => p.gap = Math.min(...pts.filter(q => q !== p).map(q => Math.hypot(p.px - q.px, p.py - q.py)), 1e9));
    pts.sort((a, b) => (b.gap >= 15) - (a.gap >= 15) || Number(b.cd[0]) - Number(a.cd[0]));
    return pts[0]; }"""


def _calibration_ready(page) -> None:
    page.wait_for_function(HAS_REDUCED, timeout=300_000)     # the evaluation's last part (HTC-Reduced) is drawn
    _ready(page)


def test_calibration_methods_binning_threshold_and_drill_down_round_trip(server, browser):  # noqa: F811
    page = _open(browser, f"{server['url']}/calibration", "Calibration")
    _calibration_ready(page)
    methods = "Methods in the reliability diagram"
    before = _tags(page, methods)
    assert len(before) >= 2, before
    for gone in before[:0:-1]:          # all but the first (HTC-Reduced) out of the diagram: a click hits one bin
        page.locator('[data-testid="stMultiSelect"]').filter(has_text=methods).get_by_role(
            "button", name=f"Remove {gone}").click()
        _ready(page)
    _wait_url(page, "methods", before[0])
    _radio(page, "Bins", "equal mass")
    _wait_url(page, "binning", "quantile")
    _slide(page, "Keep runs with confidence at least", 20)
    _wait_url(page, "threshold", "0.7")
    target = page.evaluate(RELIABILITY_TARGET)       # a bin no other method's marker sits near: an unambiguous click
    assert target["gap"] >= 15, target
    _click(page, 0, target["trace"], target["j"])
    n, listed = _listed(page)
    assert n == int(target["cd"][0])
    assert _query(page).get("rel"), page.url

    other = _open(browser, page.url, "Calibration")
    _calibration_ready(other)
    assert _tags(other, methods) == before[:1], _tags(other, methods)
    assert _checked(other, "Bins", "equal mass")
    assert _slider(other, "Keep runs with confidence at least") == "0.7"
    again = _listed(other)
    assert again == (n, listed), (again, n, listed)       # the same drill-down list
    _same_url(page, other)
    _close(page, other)


# ------------------------------------------------------------------ Feature space
ISOLATED_POINT = """() => { const gd = document.querySelectorAll('.js-plotly-plot')[0];
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, pts = [];
    gd._fullData.forEach(t => t.x.forEach((x, j) => pts.push({trace: t.name, j: j, px: xa.l2p(x), py: ya.l2p(t.y[j])})));
    pts.forEach(p => p.gap = Math.min(...pts.filter(q => q !== p).map(q => Math.hypot(p.px - q.px, p.py - q.py))));
    pts.sort((a, b) => b.gap - a.gap);
    return pts[0]; }"""


def _chart_ready(page) -> None:
    page.wait_for_function("document.querySelector('.js-plotly-plot') && "
                           "document.querySelector('.js-plotly-plot')._fullLayout", timeout=300_000)
    _ready(page)
    page.wait_for_timeout(800)          # plotly lays the chart out once more after it appears


def _selected_run(page) -> str:
    return _choice(page, "Run to inspect (or select a row of the table)").split(" · ")[0].strip()


def test_feature_space_projection_colouring_and_clicked_point_round_trip(server, browser):  # noqa: F811
    # t-SNE from the start (a link): UMAP's first fit in a new process costs a minute of compiling here
    page = _open(browser, f"{server['url']}/feature_space?proj=tsne", "Feature space")
    _chart_ready(page)
    _pick(page, "Colour by", "success")
    _wait_url(page, "colour", "success")
    _chart_ready(page)
    target = page.evaluate(ISOLATED_POINT)
    assert target["gap"] >= 8, target              # a point a click cannot confuse with another
    _click(page, 0, target["trace"], target["j"])
    try:
        n, listed = _listed(page, timeout=15_000)
    except Exception:   # the chart was still re-laying out when clicked (the browser sent no selection): click again
        _click(page, 0, target["trace"], target["j"])
        n, listed = _listed(page)
    assert (n, listed) == (1, "1 run: the selected point")
    run = _selected_run(page)
    assert _query(page).get("pts"), page.url

    other = _open(browser, page.url, "Feature space")
    _chart_ready(other)
    assert _choice(other, "Colour by") == "success" and _checked(other, "Projection", "t-SNE")
    assert _listed(other) == (1, "1 run: the selected point") and _selected_run(other) == run
    _same_url(page, other)
    _close(page, other)


# ------------------------------------------------------------------ Examples
def _cards(page) -> list[str]:
    cards = page.locator('[data-testid="stMain"] [data-testid="stMetric"]')
    cards.first.wait_for(timeout=120_000)
    return cards.all_inner_texts()


def test_examples_choices_round_trip(server, browser):  # noqa: F811
    page = _open(browser, f"{server['url']}/examples", "Examples")
    _pick(page, "HTC model", "HTC-Full")
    _wait_url(page, "htc", "HTC-Full")
    box = page.get_by_label("Per side", exact=True)
    box.fill("2")
    box.press("Enter")
    _wait_url(page, "n", "2")
    cards = _cards(page)
    assert cards

    other = _open(browser, page.url, "Examples")
    assert _choice(other, "HTC model") == "HTC-Full" and other.get_by_label("Per side", exact=True).input_value() == "2"
    assert _choice(other, "Baseline") == _choice(page, "Baseline")
    assert _cards(other) == cards                   # the same examples with the same numbers
    _same_url(page, other)
    _close(page, other)


# ------------------------------------------------------------------ Compare LLMs, Compare run sets
def test_compare_llms_grouping_and_methods_round_trip(server, browser):  # noqa: F811
    page = _open(browser, f"{server['url']}/compare", "Compare LLMs")
    _radio(page, "Group by", "dataset")
    _wait_url(page, "group", "dataset")
    page.get_by_text("Per dataset: labeled runs").first.wait_for(timeout=120_000)
    table = page.locator('[data-testid="stDataFrame"]').first
    table.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=60_000)
    rows = table.locator('[role="gridcell"]').all_inner_texts()

    other = _open(browser, page.url, "Compare LLMs")
    assert _checked(other, "Group by", "dataset")
    assert _tags(other, "Methods") == _tags(page, "Methods")
    other.get_by_text("Per dataset: labeled runs").first.wait_for(timeout=120_000)
    table = other.locator('[data-testid="stDataFrame"]').first
    table.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=60_000)
    assert table.locator('[role="gridcell"]').all_inner_texts() == rows    # the same per-dataset summary
    _same_url(page, other)
    _close(page, other)


def test_compare_run_sets_mode_and_threshold_round_trip(server, browser):  # noqa: F811
    page = _open(browser, f"{server['url']}/compare_runsets", "Compare run sets")
    _radio(page, "Compare", "two calibrators on the same runs")
    _wait_url(page, "ab", "calibrators")
    _slide(page, "Trust threshold", 4)
    _wait_url(page, "trust", "0.70")
    metrics = metric_cells(page)

    other = _open(browser, page.url, "Compare run sets")
    assert _checked(other, "Compare", "two calibrators on the same runs")
    assert _slider(other, "Trust threshold") == "0.7", _slider(other, "Trust threshold")
    assert _choice(other, "A (method)") == _choice(page, "A (method)")
    again = metric_cells(other)
    assert again == metrics, (metrics, again)     # the same comparison
    _same_url(page, other)
    _close(page, other)


# ------------------------------------------------------------------ Trajectory inspector, Side by side
def test_inspector_run_and_explaining_calibrator_round_trip(server, browser):  # noqa: F811
    page = _open(browser, f"{server['url']}/inspector", "Trajectory inspector")
    search = page.get_by_label("Find a trajectory (id or words of the question)")
    search.fill(RUN)
    search.press("Enter")
    page.get_by_text(f"{RUN} · dataset").first.wait_for(timeout=60_000)
    _wait_url(page, "id", RUN)
    _radio(page, "Explained by", "HTC-Full")
    _wait_url(page, "method", "HTC-Full")
    headline = _metrics(page)[0]
    assert headline.startswith("HTC-Full confidence"), headline

    other = _open(browser, page.url, "Trajectory inspector")
    other.get_by_text(f"{RUN} · dataset").first.wait_for(timeout=60_000)
    assert _checked(other, "Explained by", "HTC-Full")
    assert _metrics(other)[0] == headline
    _close(page, other)


def test_side_by_side_runs_and_calibrator_round_trip(server, browser):  # noqa: F811
    page = _open(browser, f"{server['url']}/side_by_side", "Side by side")
    _pick(page, "Run B", RUN, exact=False)
    _wait_url(page, "rb", RUN)
    _radio(page, "Explained by", "HTC-Full")
    _wait_url(page, "by", "full")
    run_a = _query(page)["ra"][0]
    shown = _metrics(page)
    assert len(shown) == 2 and all(m.startswith("HTC-Full (out-of-fold)") for m in shown), shown

    other = _open(browser, page.url, "Side by side")
    assert _choice(other, "Run A").startswith(run_a) and _choice(other, "Run B").startswith(RUN)
    assert _checked(other, "Explained by", "HTC-Full")
    assert _metrics(other) == shown                 # the same two runs with the same numbers
    _same_url(page, other)
    _close(page, other)


# ------------------------------------------------------------------ Feature weights
def test_feature_weights_choices_round_trip(server, browser):  # noqa: F811
    page = _open(browser, f"{server['url']}/weights", "Feature weights")
    page.locator('[data-testid="stCheckbox"]').filter(has_text="Show only features with a non-zero weight") \
        .get_by_text("Show only features with a non-zero weight").click()
    _wait_url(page, "kept", "1")
    _radio(page, "Variant", "HTC-Full")          # HTC-Reduced is every view's default now (ui-review 21)
    _wait_url(page, "heat", "full")

    other = _open(browser, page.url, "Feature weights")
    assert other.get_by_label("Show only features with a non-zero weight").is_checked()
    assert _checked(other, "Variant", "HTC-Full")
    _same_url(page, other)
    _close(page, other)
