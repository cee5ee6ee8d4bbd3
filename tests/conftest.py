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


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.path.name
        if module == "test_browser.py":
            item.add_marker(pytest.mark.browser)
        elif module.startswith("test_app") or module in _APP_MODULES:
            item.add_marker(pytest.mark.app)
        elif module == "test_readme_commands.py":
            item.add_marker(pytest.mark.docs)
        elif module in _HEAVY_MODULES:
            item.add_marker(pytest.mark.heavy)
        if module in ("test_collect.py", "test_agents_llm.py", "test_monitor_live.py", "test_otel_live.py") and \
                _MODEL_SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.model_server)
