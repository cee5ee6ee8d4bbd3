"""``htc report`` / ``htc_core.htmlreport``: one self-contained HTML file, every untrusted text escaped."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from htc_core.cli import main
from htc_core.formats import load
from htc_core.formats.native import write
from htc_core.htmlreport import ReportData, build_report, compute_report, parse_learning_curve

from conftest import REPO

pytestmark = pytest.mark.heavy     # whole-protocol runs (evaluation, transfer, GAC, ablation) on real files

HOSTILE_Q = 'Which <img src=x onerror="window.__pwned=1"> city? </td></table><script>window.__pwned=2</script>'
HOSTILE_ID = "run-<script>alert(1)</script>"
HOSTILE_DATASET = "units\u202e<svg onload=alert(3)>"   # U+202E: right-to-left override


class _Tags(HTMLParser):
    """Every tag, with its attributes, and the text of <script> elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory):
    """40 real runs of each of two datasets (sample_runs units and strings, greedy); one failed run gets a
    hostile question and id, and the units runs a hostile dataset name."""
    d = tmp_path_factory.mktemp("report")
    ts, _ = load([str(REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"),
                  str(REPO / "sample_runs" / "strings" / "strings_SmolLM2-135M-greedy.jsonl")])
    g = ts.meta.dataset.astype(str).to_numpy()
    idx = np.concatenate([np.flatnonzero(g == "units")[:40], np.flatnonzero(g == "strings")[:40]])
    part = ts.take(idx)
    fail = int(np.flatnonzero(part.labels == 0)[0])
    part.meta.loc[fail, "question"] = HOSTILE_Q
    part.meta.loc[fail, "id"] = HOSTILE_ID
    part.meta["dataset"] = part.meta["dataset"].astype(object).where(part.meta["dataset"] != "units", HOSTILE_DATASET)
    write(part, d / "runs.jsonl")
    return d / "runs.jsonl"


@pytest.fixture(scope="module")
def report(hostile_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "report.html"
    curve = tmp_path_factory.mktemp("lc") / "curve.json"
    curve.write_text(json.dumps({"rows": [
        {"method": m, "size": s, "ece": {"mean": 0.2 / s ** 0.3, "std": 0.01}, "brier_mean": 0.2, "brier_std": 0.02,
         "auroc": 0.7} for m in ("HTC-Reduced", "MLP <b>") for s in (50, 100, 200)]}))
    assert main(["report", str(hostile_runs), "--seeds", "1", "--ablation", "--learning-curve", str(curve),
                 "--out", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_report_is_self_contained(report):
    p = _Tags()
    p.feed(report)
    urls = [(t, k, v) for t, a in p.tags for k, v in a.items()
            if k in ("src", "href") and v and re.match(r"\s*(https?:)?//", v)]
    assert urls == []
    assert not [t for t, a in p.tags if t == "link"]                       # no stylesheet or font file
    assert not re.search(r"@import|@font-face|url\(\s*['\"]?https?:", report)
    assert sum(1 for s in p.scripts if len(s) > 1_000_000) == 1           # plotly.js inline, once
    assert [t for t, a in p.tags if t == "script" and "src" in a] == []
    assert report.count("Plotly.newPlot(") >= 8


def test_report_sections(report):
    for heading in ("Evaluation", "Reliability diagrams", "Feature weights and selection frequency",
                    "Selection frequency, HTC-Reduced", "Transfer across datasets",
                    "General Agent Calibrator, leave one dataset out", "Feature-family ablation", "Learning curves",
                    "Confident failures", "Doubted successes"):
        assert heading in report, heading
    assert re.search(r'<td class="best">★ ', report) or '<td class="best">' in report


def test_untrusted_text_is_escaped(report):
    p = _Tags()
    p.feed(report)
    assert not [a for t, a in p.tags if t in ("img", "svg") or any(k.startswith("on") for k in a)]
    assert HOSTILE_Q not in report and HOSTILE_ID not in report
    assert "&lt;script&gt;window.__pwned=2&lt;/script&gt;" in report      # shown as text in the examples table
    assert "run-&lt;script&gt;alert(1)&lt;/script&gt;" in report
    scripts = [s for s in p.scripts if "Plotly.newPlot(" in s and len(s) < 1_000_000]   # plotly's fig.to_html
    assert len(scripts) == report.count("<div class=\"fig\">") and not any("<" in s for s in scripts)  # JSON: \u003c
    assert "MLP &lt;b&gt;" in report


def test_a_bidi_override_in_a_name_cannot_reverse_the_text_after_it(report):
    """Issue 30 #8: the dataset name's U+202E is closed (U+202C) inside an isolate (U+2068 ... U+2069) wherever
    the name appears as text, so the header's counts and the rest of the page read as written."""
    shown = "units\u202e&lt;svg onload=alert(3)&gt;"
    outside_scripts = re.sub(r"<script.*?</script>", "", report, flags=re.S)
    assert outside_scripts.count(shown) >= 1
    assert outside_scripts.count(shown) == outside_scripts.count("\u2068" + shown + "\u202c\u2069")
    rest = outside_scripts.replace("\u2068" + shown + "\u202c\u2069", "NAME")
    # plain text untouched: the only other isolates wrap a text that holds the (isolated) name, e.g. a reason
    # "... higher than 69% of the successful runs of NAME ..."
    outer = re.findall("\u2068([^\u2068\u2069]*)\u2069", rest)
    assert rest.count("\u2068") == len(outer) and all("NAME" in t for t in outer)


def test_the_template_is_package_data_and_autoescapes():
    """The page is a Jinja2 template shipped in the wheel (pyproject's package-data), rendered with autoescape on
    and every value bidi-isolated: a hostile title cannot become markup, and a Markup-free value cannot slip
    through unescaped."""
    import tomllib
    from importlib.resources import files

    from htc_core.htmlreport import build as report_build

    assert files("htc_core.htmlreport").joinpath("templates/report.html.j2").is_file()
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = data["tool"]["setuptools"]["package-data"]["htc_core.htmlreport"]
    assert "templates/*.j2" in shipped and "templates/*.css" in shipped
    env = report_build._template().environment
    assert env.autoescape is True or env.autoescape("report.html.j2")
    out = env.from_string("<p>{{ x }}</p>").render(x='<b onclick="y">\u202ex')
    assert out == '<p>\u2068&lt;b onclick=&#34;y&#34;&gt;\u202ex\u202c\u2069</p>'


def test_report_in_python_leaves_out_what_was_not_computed(hostile_runs):
    ts, _ = load(str(hostile_runs))
    one = ts.take(np.flatnonzero(ts.meta.dataset.astype(str) == "strings"))
    data = compute_report(one, seeds=1, sources=["strings only"])
    assert isinstance(data, ReportData) and data.transfer is None and data.gac is None and data.ablation is None
    html = build_report(data)
    assert "Transfer across" not in html and "Not in this report" in html and "at least 2" in html
    assert data.to_dict()["evaluation"]["n"] == len(one)
    with pytest.raises(ValueError, match="by must be one of"):
        compute_report(one, by="color")
    with pytest.raises(ValueError, match="data must be a ReportData"):
        build_report({"evaluation": None})


def test_learning_curve_formats_and_errors(tmp_path, capsys):
    flat = parse_learning_curve([{"model": "GP", "n_train": 50, "ece_mean": 0.1, "ece_std": 0.02}])
    assert flat.frame.to_dict("records") == [{"method": "GP", "size": 50.0, "metric": "ece", "mean": 0.1, "std": 0.02}]
    nested = parse_learning_curve({"experiment": "learning-curve", "points": [
        {"method": "HTC-Full", "size": 100, "auroc": {"mean": 0.8, "std": 0.01}}]})
    assert list(nested.frame.metric) == ["auroc"]
    with pytest.raises(ValueError, match="row 0 needs a method"):
        parse_learning_curve({"rows": [{"size": 10, "ece": 0.1}]})
    with pytest.raises(ValueError, match="no table of rows"):
        parse_learning_curve({"a": 1})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["report", str(REPO / "sample_runs" / "units"), "--learning-curve", str(bad),
                 "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "htc report: error:" in err and "bad.json: not JSON (line 1" in err and "Traceback" not in err
    assert main(["report", str(REPO / "sample_runs" / "units"), "--out", str(tmp_path / "r.txt")]) == 2
    assert "--out must end in .html" in capsys.readouterr().err
