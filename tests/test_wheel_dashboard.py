"""`pip install dist/*.whl[app] && htc dashboard` shows the sample runs (issue 30 item 3), in a real browser.

The wheel is built from this checkout (``pip wheel . --no-deps``: setuptools from the package index in pip's
build isolation), installed into a fresh virtual environment that sees this environment's packages (the
dependencies the wheel declares are those; ``--no-deps`` keeps the install offline), and started with
``htc dashboard`` from outside the checkout, with the flags of ``streamlit run app.py``. Chromium then opens
it: the Runs page lists the shipped sample runs, which came with the wheel. Minutes: marked slow and browser.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
import zipfile

import pytest

from conftest import REPO
from test_browser import _assert_clean, _free_port, _require_browser, _settle, browser  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory):
    _require_browser()
    d = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-w", str(d / "dist"),
                            "-q"], capture_output=True, text=True, timeout=600)
    if built.returncode != 0:
        pytest.skip(f"cannot build the wheel here (needs setuptools>=68 from the package index): "
                    f"{built.stderr[-500:]}")
    (whl,) = (d / "dist").glob("*.whl")
    names = zipfile.ZipFile(whl).namelist()
    share = [n for n in names if "/data/share/htc/dashboard/" in n]
    assert any(n.endswith("/dashboard/app.py") for n in share) and sum("/pages/" in n for n in share) >= 8
    assert sum(n.endswith(".jsonl") for n in share) == 8                 # the four families, both decodings
    assert whl.stat().st_size < 8_000_000
    venv = d / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HTC_DATA_DIR", "HTC_SAMPLE_DIR")}
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300,
                   env=env)
    # --force-reinstall: this environment's editable install of the checkout must not count as installed
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--force-reinstall", str(whl)],
                   check=True, timeout=300, env=env)
    return {"venv": venv, "root": d, "env": env}


def test_htc_dashboard_from_the_wheel_shows_the_sample_runs(wheel_env, browser):
    venv, root = wheel_env["venv"], wheel_env["root"]
    env = dict(wheel_env["env"])
    env.update(HTC_DASHBOARD_ALPHAS="0.1,1,10", PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import htc_core; print(htc_core.__file__)"],
                           env=env, cwd=root, capture_output=True, text=True, check=True).stdout
    assert str(venv) in where                                            # the wheel's copy, not the checkout
    port = _free_port()
    log = open(root / "dashboard.log", "w")
    proc = subprocess.Popen([str(venv / "bin" / "htc"), "dashboard", "--server.port", str(port), "--server.address",
                             "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false", "--",
                             "--data-dir", str(root / "data")], env=env, cwd=root, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("htc dashboard did not start: " + (root / "dashboard.log").read_text()[-2000:])
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_role("heading", name="Runs").first.wait_for(timeout=180_000)
        _settle(page)
        for family in ("arithmetic", "facts", "strings", "units"):   # the sample runs that came with the wheel
            for decoding in ("greedy", "sampled-t0.7"):           # (the run-set table's cells: a canvas grid)
                page.get_by_text(f"sample: {family}_SmolLM2-135M-{decoding}.jsonl").first.wait_for(
                    state="attached", timeout=120_000)
        _assert_clean(page, "Runs, from the wheel")
        page.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    assert "share/htc/dashboard/app.py" in (root / "dashboard.log").read_text()
