"""The wheel holds the product only (issue 28): every module of ``htc_core`` (core, experiments, figures, HTML
report, app, command line), the shipped model files and the dashboard's data files, and none of the
repository-only tools (``htc_dev``: benchmarks, demo agent, GAC training) or the tests.

The wheel is built from a copy of this checkout's sources with ``pip wheel --no-deps`` (setuptools from the
package index in pip's build isolation, as tests/test_wheel_dashboard.py does; the copy keeps ``build/`` and
``*.egg-info`` out of the checkout). About 10 s.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IGNORED = shutil.ignore_patterns(".git", "shared", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                                 "_build", ".hypothesis")


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> list[str]:
    src = tmp_path_factory.mktemp("src") / "htc"
    shutil.copytree(REPO, src, ignore=IGNORED, symlinks=True)
    dist = src / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(dist)],
                           cwd=src, capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        pytest.skip(f"cannot build the wheel here (needs setuptools>=68 from the package index): "
                    f"{built.stderr.strip()[-300:]}")
    (whl,) = dist.glob("*.whl")
    with zipfile.ZipFile(whl) as z:
        return z.namelist()


def test_the_wheel_holds_every_module_of_htc_core_and_nothing_else_of_python(wheel_names):
    in_checkout = {p.relative_to(REPO).as_posix() for p in (REPO / "htc_core").rglob("*.py")}
    packaged = {n for n in wheel_names if n.endswith(".py") and not n.split("/")[0].endswith(".data")}
    assert packaged == in_checkout, (sorted(in_checkout - packaged)[:10], sorted(packaged - in_checkout)[:10])
    rooms = {n.split("/")[1] for n in packaged if n.count("/") >= 2}
    assert {"calibration", "experiments", "viz", "htmlreport", "app", "cli", "formats", "features"} <= rooms


def test_the_wheel_holds_no_repository_tool_and_no_test(wheel_names):
    tops = {n.split("/")[0] for n in wheel_names}
    assert tops == {"htc_core", "htc_calibration-0.1.0.dist-info", "htc_calibration-0.1.0.data"}, tops
    parts = ("htc_dev", "bench", "demo_agent", "tests")
    assert not [n for n in wheel_names if any(part in parts or part.startswith(("train_gac", "test_", "conftest"))
                                               for part in n.split("/"))]


def test_the_wheel_holds_the_models_and_the_dashboard_files(wheel_names):
    assert {"htc_core/calibration/models/gac.json", "htc_core/calibration/models/gac-full.json"} <= set(wheel_names)
    # the HTML report's Jinja2 template and stylesheet (package data of htc_core.htmlreport)
    assert {"htc_core/htmlreport/templates/report.html.j2", "htc_core/htmlreport/templates/report.css"} <= set(wheel_names)
    share = "htc_calibration-0.1.0.data/data/share/htc/dashboard/"
    assert share + "app.py" in wheel_names
    pages = {p.name for p in (REPO / "pages").glob("*.py")}
    assert {n.rsplit("/", 1)[1] for n in wheel_names if n.startswith(share + "pages/")} == pages
    for family in ("arithmetic", "facts", "strings", "units"):
        assert any(n.startswith(f"{share}sample_runs/{family}/") and n.endswith(".jsonl") for n in wheel_names)
