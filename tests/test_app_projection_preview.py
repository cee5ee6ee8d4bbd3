"""Feature space without a wait (issue 29 item 3): the page draws a PCA of the features at once, with a status line,
while UMAP is computed in a background job; then draws UMAP (kept in the store). The PCA itself is checked
against numpy's SVD."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import htc_core.app.compute as compute
import htc_core.app.projection_job as projection_job
from htc_core.app.layout import PENDING_ICON
from htc_core.app.projection import pca
from htc_core.app.store import Store

from apptest_kit import go, new_app, problems
from conftest import REPO

SHIPPED = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"


@pytest.fixture
def sample_dir(tmp_path) -> Path:
    d = tmp_path / "samples"
    d.mkdir()
    lines = SHIPPED.read_text(encoding="utf-8").splitlines(True)[:60]
    (d / "arithmetic-60.jsonl").write_text("".join(lines), encoding="utf-8")
    return d


def _stored_projections(data: Path) -> int:
    with Store(data)._connect() as con:
        return con.execute("SELECT count(*) FROM results WHERE kind = 'projection'").fetchone()[0]


def _wait_stored(data: Path, n: int, limit_s: float = 240.0) -> None:
    deadline = time.monotonic() + limit_s
    while _stored_projections(data) < n:
        assert time.monotonic() < deadline, "the background projection was not kept within the limit"
        time.sleep(0.2)


def _captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


@pytest.mark.app
def test_feature_space_shows_a_pca_and_a_status_while_umap_runs_then_umap(tmp_path, sample_dir, monkeypatch):
    compute.fit_registry.clear()
    gate = threading.Event()
    real = projection_job.project

    def held(*args, **kwargs):        # the real UMAP, started only when the test has looked at the page
        assert gate.wait(240)
        return real(*args, **kwargs)

    monkeypatch.setattr(projection_job, "project", held)
    data = tmp_path / "data"
    at = new_app(monkeypatch, data, sample_dir, timeout=300)
    at.run()
    go(at, "feature_space")
    assert not problems(at), problems(at)
    assert len(at.get("plotly_chart")) == 1                     # a chart at once: the PCA preview
    text = _captions(at)
    assert "PCA of the standardized 48 features" in text and "shown while UMAP is computed" in text
    assert PENDING_ICON in text and "UMAP" in text.split(PENDING_ICON, 1)[1]   # the status line says what computes
    assert _stored_projections(data) == 0
    preview = at.get("plotly_chart")[0].proto.spec

    gate.set()
    _wait_stored(data, 1)
    at.run()                                                    # what the status's refresh does when the job ends
    assert not problems(at), problems(at)
    text = _captions(at)
    assert "UMAP of the standardized 48 features: fitted on all 60 runs" in text
    assert PENDING_ICON not in text and "PCA" not in text
    assert at.get("plotly_chart")[0].proto.spec != preview


@pytest.mark.app
def test_a_failed_projection_is_said_and_the_pca_stays(tmp_path, sample_dir, monkeypatch):
    compute.fit_registry.clear()
    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise ValueError("umap broke")

    monkeypatch.setattr(projection_job, "project", broken)
    at = new_app(monkeypatch, tmp_path / "data", sample_dir, timeout=300)
    at.run()
    go(at, "feature_space")
    deadline = time.monotonic() + 120
    while not calls or not [w for w in at.warning if "UMAP failed" in w.value]:
        assert time.monotonic() < deadline, "the failure was never said"
        time.sleep(0.3)
        at.run()
    assert not at.exception
    assert "umap broke" in [w.value for w in at.warning if "UMAP failed" in w.value][0]
    assert len(at.get("plotly_chart")) == 1 and "PCA of the standardized" in _captions(at)
    at.run()                                                    # a later visit tries once more
    deadline = time.monotonic() + 60
    while len(calls) < 2:
        assert time.monotonic() < deadline, "a later visit did not try again"
        time.sleep(0.2)


def test_pca_is_the_first_two_principal_components_with_fixed_signs():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 6)) @ rng.normal(size=(6, 6)) + 5.0
    X[:, 2] = 7.0                                               # a constant feature stays 0 after scaling
    p = pca(X)
    assert p.method == "pca" and p.coords.shape == (300, 2)
    Z = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    _, s, vt = np.linalg.svd(Z, full_matrices=False)
    ref = Z @ vt[:2].T
    for j in range(2):                                          # the same axes up to sign, and its sign fixed
        assert np.allclose(np.abs(p.coords[:, j]), np.abs(ref[:, j]), atol=1e-8)
    assert np.allclose(p.params["explained"], (s[:2] ** 2) / (s ** 2).sum())
    assert np.array_equal(pca(X).coords, p.coords)
    order = rng.permutation(300)                                # the rows' order changes nothing but the order
    assert np.allclose(pca(X[order]).coords, p.coords[order], atol=1e-9)


def test_pca_edge_cases_and_bad_input():
    assert np.array_equal(pca(np.ones((1, 4))).coords, np.zeros((1, 2)))
    one = pca(np.arange(5.0).reshape(5, 1))
    assert one.coords.shape == (5, 2) and np.all(one.coords[:, 1] == 0)
    with pytest.raises(ValueError, match="finite"):
        pca(np.array([[1.0, np.nan], [2.0, 3.0]]))
    with pytest.raises(ValueError, match="non-empty"):
        pca(np.empty((0, 3)))
