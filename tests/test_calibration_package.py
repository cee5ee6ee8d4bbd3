"""The calibration package's public names and the layers it may import."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "htc_core" / "calibration"
PUBLIC = ("HTCCalibrator", "evaluate", "EvaluationResult", "EvaluationError", "merge_results", "label_problem",
          "DEFAULT_ALPHAS", "RAW_BASELINES", "expected_calibration_error", "brier_score", "auroc",
          "reliability_curve", "wilson_interval", "Method", "register_method")


def test_public_names_come_from_the_package():
    import htc_core
    import htc_core.calibration as cal
    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.calibration.evaluation import evaluate

    assert set(PUBLIC) <= set(cal.__all__)
    for name in cal.__all__:
        assert getattr(cal, name) is not None, name
    assert cal.HTCCalibrator is HTCCalibrator and cal.evaluate is evaluate
    assert htc_core.HTCCalibrator is HTCCalibrator and htc_core.label_problem is cal.label_problem
    with pytest.raises(AttributeError, match="public names"):
        cal.no_such_name  # noqa: B018


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_metrics_import_stays_light_and_no_app_library_is_imported():
    light = _run("import sys, htc_core.calibration.metrics, htc_core.calibration.baselines\n"
                 "print([m for m in ('sklearn', 'scipy', 'numba') if m in sys.modules])")
    assert light == "[]"
    # every calibration module (so every name of `from htc_core.calibration import *`, all resolved by
    # test_public_names_come_from_the_package) imports no app library: held with every other core module in one
    # process by tests/test_architecture.py::test_core_and_cli_import_no_app_library_at_run_time


def _imports(path: Path):
    """Every imported module name, function-level imports included, made absolute."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["htc_core", "calibration"][: 3 - node.level] if path.parent == PKG else ["htc_core"]
                yield ".".join(base + ([node.module] if node.module else []))
            else:
                yield node.module


@pytest.mark.parametrize("path", sorted(PKG.glob("*.py")), ids=lambda p: p.name)
def test_calibration_imports_only_lower_layers(path):
    bad = [m for m in _imports(path) if m.startswith(("htc_core.app", "htc_core.explain", "htc_core.formats",
                                                       "htc_dev.bench", "htc_core.cli", "streamlit", "duckdb",
                                                       "plotly", "umap"))]
    assert not bad, bad


# Module size and function complexity of every module (this package included): tests/test_architecture.py
