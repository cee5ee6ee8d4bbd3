"""The API reference (docs/api, Sphinx + numpydoc) builds with no warning, covers the whole public API, and
every example in the documented docstrings runs as a doctest from the repository root."""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import htc_core

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "docs" / "api" / "index.rst"
DIRECTIVE = re.compile(r"^\.\. (autofunction|autoclass|data):: (\S+)", re.M)


def documented() -> list[str]:
    """The dotted names of the reference's objects (``htc_core.`` added to bare names)."""
    names = [m.group(2) for m in DIRECTIVE.finditer(INDEX.read_text(encoding="utf-8"))]
    return [n if n.startswith("htc_core.") else f"htc_core.{n}" for n in names]


def resolve(dotted: str):
    module, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def test_the_reference_covers_the_public_api():
    public = {f"htc_core.{n}" for n in htc_core.__all__ if n != "__version__"}
    assert public <= set(documented()), f"public names missing from docs/api/index.rst: {public - set(documented())}"


def test_every_public_name_is_the_object_not_a_module_of_the_same_name():
    # htc_core.experiments.transfer / ablation / learning_curve are modules holding a function of their name:
    # once the module was imported (by anything), the package attribute was the module
    import htc_core.experiments.ablation  # noqa: F401
    import htc_core.experiments.learning_curve  # noqa: F401
    import htc_core.experiments.transfer  # noqa: F401

    for name in htc_core.__all__:
        assert not isinstance(getattr(htc_core, name), types.ModuleType), name


@pytest.mark.docs
def test_the_api_reference_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("numpydoc", reason="the docs extra: pip install -e '.[docs]'")
    out = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html",
                          str(INDEX.parent), str(tmp_path / "html")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    html = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    for name in ("htc_core.load", "htc_core.HTCCalibrator", "htc_core.expected_calibration_error"):
        assert f'id="{name}"' in html


@pytest.mark.docs
@pytest.mark.parametrize("dotted", [n for n in documented() if not n.endswith(("FEATURE_NAMES", "REGISTRY"))])
def test_the_documented_examples_run(dotted, monkeypatch):
    monkeypatch.chdir(ROOT)                       # the examples read sample_runs/ as a reader would
    obj = resolve(dotted)
    tests = doctest.DocTestFinder().find(obj, dotted, module=inspect.getmodule(obj), globs={})
    examples = [t for t in tests if t.examples]
    assert examples, f"{dotted} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in examples:
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
