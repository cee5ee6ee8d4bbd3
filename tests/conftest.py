from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
UALA = SHARED / "data" / "uala-hotpotqa"
PAPER = SHARED / "seed" / "agentic-confidence-calibration.tex"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    """A local llama.cpp server with SmolLM2 (its base URL); skips without one unless HTC_REQUIRE_LLAMA=1."""
    import os

    from htc_core.collect.local_server import llama_server, llama_server_available

    missing = llama_server_available()
    if missing:
        if os.environ.get("HTC_REQUIRE_LLAMA") == "1":
            pytest.fail(f"HTC_REQUIRE_LLAMA=1 but {missing}")
        pytest.skip(f"no local llama.cpp server: {missing}")
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(n_ctx=2048, log=log) as url:
        yield url


@pytest.fixture(scope="session")
def uala_dir() -> Path:
    if not UALA.is_dir():
        pytest.skip(f"real data not found at {UALA}")
    return UALA


@pytest.fixture(scope="session")
def uala_run_a(uala_dir) -> Path:
    return uala_dir / "hotpotqa_llama2-70b_run-a.jsonl"


def make_traj(tid, steps, success=True, **extra):
    """An htc-trace JSONL v1 dict; ``steps`` is a list of (logprobs, top_logprobs or None)."""
    out = {"id": tid, "success": success, "steps": []}
    for i, (lps, tops) in enumerate(steps):
        st = {"name": f"step{i}", "logprobs": list(lps)}
        if tops is not None:
            st["top_logprobs"] = tops
        out["steps"].append(st)
    out.update(extra)
    return out


def write_jsonl(path: Path, objs) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for o in objs:
            fh.write(o if isinstance(o, str) else json.dumps(o))
            fh.write("\n")
    return path


LOG = math.log


# Tiers: `python -m pytest` runs everything but `slow`; day to day, the README's fast tier leaves out the marks
# below. Marks are given here by where a test lives or what it uses.
_APP_MODULES = {"test_store.py", "test_projection.py"}  # the dashboard side besides the pages (test_app*.py)
#: whole-protocol runs on real files (nested CV per prefix, experiments, GAM, chunked CLI runs, hostile corpus), and
#: the packaging test (a copy of the repository built into a wheel with pip: 3.6 s CPU, about 12 s wall on a busy
#: machine; issue 29 item 7)
_HEAVY_MODULES = {"test_chunks.py", "test_early_warning.py", "test_cli_experiments.py", "test_experiments.py",
                  "test_gam.py", "test_hostile_inputs.py", "test_wheel_contents.py"}
#: a local model answers: the llama.cpp server (base_url, client) or Gemma 3 270M loaded in-process by llama.cpp
#: (gemma: 4.4 s CPU for one agent step, which the fast tier paid wherever llama-cpp-python was installed)
_MODEL_SERVER_FIXTURES = {"base_url", "client", "gemma"}


def module_tier(module: str) -> str | None:
    """The mark every test of a test module gets from the module's name (None: marked test by test)."""
    if module == "test_browser.py":
        return "browser"
    if module.startswith("test_app") or module in _APP_MODULES:
        return "app"
    if module == "test_readme_commands.py":
        return "docs"
    if module in _HEAVY_MODULES:
        return "heavy"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.path.name
        tier = module_tier(module)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
        if module in ("test_collect.py", "test_agents_llm.py", "test_monitor_live.py", "test_otel_live.py") and \
                _MODEL_SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.model_server)


def module_marks(path: Path) -> set[str]:
    """Marks every test of a test module carries: its tier by name, and a module-level ``pytestmark``
    (``pytest.mark.X`` or a list of them), read from the source without importing it."""
    import ast

    marks = {module_tier(path.name)} - {None}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return marks
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            marks |= {v.attr for v in values if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Attribute)
                      and v.value.attr == "mark"}
    return marks


def never_selected(markexpr: str, marks: set[str]) -> bool:
    """Whether ``-m markexpr`` deselects every test that carries ``marks``, whatever other marks a test adds:
    False for every superset of ``marks`` among the names the expression uses. An expression this cannot read
    (anything but names, and, or, not, parentheses) gives False: the module is imported and pytest decides."""
    import itertools
    import re

    tokens = re.findall(r"\(|\)|[^\s()]+", markexpr)
    if not tokens or any(t not in ("(", ")") and not re.fullmatch(r"[A-Za-z_]\w*", t) for t in tokens):
        return False
    names = sorted({t for t in tokens if t not in ("(", ")", "and", "or", "not")} - marks)
    if len(names) > 12:
        return False
    for extra in itertools.product((False, True), repeat=len(names)):
        value = dict(zip(names, extra), **{m: True for m in marks})
        code = " ".join(t if t in ("(", ")", "and", "or", "not") else str(value.get(t, False)) for t in tokens)
        try:
            if eval(code, {"__builtins__": {}}):   # noqa: S307 (only True, False, and, or, not, parentheses)
                return False
        except SyntaxError:
            return False
    return True


def pytest_ignore_collect(collection_path, config):
    """A test module whose every test the ``-m`` expression deselects is not imported at all: the fast tier
    imported the app, browser, docs and heavy modules (streamlit, playwright, openai, ...) only to deselect
    them, about 2.5 s of its CPU (issue 29, item 7). The tests selected are the same."""
    markexpr = config.getoption("markexpr", default="")
    if not markexpr or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    marks = module_marks(collection_path)
    return True if marks and never_selected(markexpr, marks) else None
