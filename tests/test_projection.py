"""2-D projections (htc_core.app.projection): shapes, determinism, progress, small and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

from htc_core.app.projection import expected_seconds, project


def blobs(n=120, d=48, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(3, d))
    lab = np.arange(n) % 3
    return centres[lab] + rng.normal(size=(n, d)), lab


@pytest.mark.parametrize("method", ["tsne", "umap"])
def test_projection_shape_progress_and_structure(method):
    X, lab = blobs()
    seen = []
    p = project(X, method=method, progress=lambda f, m: seen.append((f, m)), tick=0.05)
    assert p.coords.shape == (120, 2) and np.isfinite(p.coords).all() and p.method == method
    assert seen[0][0] == 0.0 and seen[-1][0] == 1.0 and "done" in seen[-1][1]
    assert all(0.0 <= f <= 1.0 for f, _ in seen)
    assert all(a <= b for (a, _), (b, _) in zip(seen, seen[1:]))
    # the three blobs stay apart: every point's nearest neighbour in 2-D is from its own blob
    d = ((p.coords[:, None, :] - p.coords[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    assert (lab[d.argmin(1)] == lab).mean() > 0.95


def test_projection_is_deterministic_with_a_seed():
    X, _ = blobs(60)
    a = project(X, method="tsne", random_state=3).coords
    b = project(X, method="tsne", random_state=3).coords
    assert np.allclose(a, b)


def test_tiny_and_constant_inputs():
    assert project(np.ones((1, 48)), method="umap").coords.shape == (1, 2)
    assert project(np.ones((2, 48)), method="tsne").coords.shape == (2, 2)
    p = project(np.random.default_rng(0).normal(size=(8, 48)), method="umap")
    assert p.coords.shape == (8, 2) and "fallback" in p.params
    X = np.zeros((30, 48))
    X[:, 0] = np.arange(30)
    assert np.isfinite(project(X, method="tsne").coords).all()   # zero-variance columns stay 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="method"):
        project(np.ones((5, 2)), method="pca")
    with pytest.raises(ValueError, match="finite"):
        project(np.array([[1.0, np.nan], [0.0, 1.0], [2.0, 2.0]]), method="tsne")
    with pytest.raises(ValueError, match="non-empty 2-D"):
        project(np.ones(5), method="tsne")
    assert expected_seconds(10_000, "umap") > expected_seconds(100, "umap")


def test_fit_on_a_sample_places_the_rest_next_to_their_neighbours():
    rng = np.random.default_rng(1)
    # two far-apart clusters: every placed run must land with the fitted runs of its own cluster
    X = np.vstack([rng.normal(0, 1, (300, 48)), rng.normal(8, 1, (300, 48))])
    p = project(X, method="tsne", fit_cap=120, random_state=0)
    assert p.coords.shape == (600, 2) and np.isfinite(p.coords).all()
    assert p.params["fitted_on"] == 120 and p.params["placed"] == 480
    a, b = p.coords[:300].mean(axis=0), p.coords[300:].mean(axis=0)
    near_a = np.linalg.norm(p.coords - a, axis=1) < np.linalg.norm(p.coords - b, axis=1)
    assert near_a[:300].all() and not near_a[300:].any()
    assert "fitted_on" not in project(X[:50], method="tsne", fit_cap=120).params   # small input: fitted on all
    with pytest.raises(ValueError, match="fit_cap"):
        project(X, fit_cap=1)


def test_stratified_sample_keeps_the_success_rate_and_is_seeded():
    from htc_core.app.sampling import stratified_sample

    pos = np.arange(10_000) * 3
    y = (np.random.default_rng(0).random(10_000) < 0.3).astype(float)
    s = stratified_sample(pos, y, 1000)
    assert len(s) == 1000 and len(np.unique(s)) == 1000 and np.isin(s, pos).all()
    assert abs(y[s // 3].mean() - y.mean()) < 0.001
    assert np.array_equal(s, stratified_sample(pos, y, 1000))          # same rows every time
    assert np.array_equal(stratified_sample(pos[:10], y[:10], 1000), pos[:10])
    with pytest.raises(ValueError, match="cap"):
        stratified_sample(pos, y, 1)
