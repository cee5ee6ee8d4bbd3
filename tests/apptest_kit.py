"""What the AppTest modules share: the app's entry script, a quick app on a fresh data directory, the page
switch, the problems a run showed and small copies of the recorded sample runs."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

import htc_core.app.compute as compute
import htc_core.app.ui as ui

from conftest import REPO

APP = str(REPO / "app.py")
#: a short alpha grid: the pages' behaviour, not the paper's 15-alpha search, is under test
QUICK_ALPHAS = (0.1, 1.0, 10.0)
SAMPLE_RUNS = REPO / "sample_runs"


def new_app(monkeypatch, data_dir: Path, sample_dir: Path | None = None, *, timeout: int = 240,
            alphas=QUICK_ALPHAS, seeds: int = 1) -> AppTest:
    """An AppTest of the dashboard on ``data_dir`` that starts from the runs of ``sample_dir`` (not yet run)."""
    monkeypatch.setenv("HTC_DATA_DIR", str(data_dir))
    if sample_dir is not None:
        monkeypatch.setenv("HTC_SAMPLE_DIR", str(sample_dir))
    monkeypatch.setattr(compute, "ALPHAS", alphas)
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.session_state[ui.SEEDS] = seeds
    return at


def problems(at: AppTest) -> list[str]:
    """Every exception and error message the last run showed."""
    return [e.value for e in at.exception] + [e.value for e in at.error]


def go(at: AppTest, page: str) -> AppTest:
    """Switch to ``pages/<page>.py`` and run it."""
    at.switch_page(f"pages/{page}.py")
    at.run()
    return at


def first_lines(dest: Path, sources, n: int, *, names=None) -> Path:
    """Copy the first ``n`` runs (lines) of each recorded file in ``sources`` into ``dest`` (created if needed),
    under the file's own name or the matching entry of ``names``."""
    dest.mkdir(parents=True, exist_ok=True)
    for i, src in enumerate(sources):
        lines = Path(src).read_text(encoding="utf-8").splitlines(True)[:n]
        (dest / (names[i] if names else Path(src).name)).write_text("".join(lines), encoding="utf-8")
    return dest
