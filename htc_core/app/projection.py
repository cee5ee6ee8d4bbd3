"""2-D projections of the 48-dimensional feature space: t-SNE (scikit-learn) and UMAP (umap-learn), and the
instant PCA preview the dashboard shows while one of them is computed (:func:`pca`).

Features are standardized first (a zero-variance feature stays 0). The fit
runs in a worker thread while the calling thread reports progress through
``progress(fraction, message)`` every ``tick`` seconds: neither t-SNE nor
UMAP exposes a per-iteration hook, so the fraction is the elapsed time over an
estimate from the number of rows (capped at 0.95 until the fit returns, then
1.0). t-SNE uses Barnes-Hut (an O(n log n) approximation) and fewer
iterations above 5,000 rows.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Projection", "project", "place", "pca", "METHODS", "expected_seconds"]

METHODS = ("umap", "tsne")
#: most runs the dashboard fits a projection on; the other runs are placed by :func:`place`
PROJECTION_FIT_CAP = 10_000
#: most points a scatter plot of the dashboard draws (WebGL); a larger selection is shown as a uniform random
#: sample of this size (stated on the page)
SCATTER_CAP = 20_000
Progress = Callable[[float, str], None]


@dataclass
class Projection:
    """Coordinates [n, 2] of every row, with how they were made."""

    coords: np.ndarray
    method: str
    params: dict = field(default_factory=dict)
    seconds: float = 0.0

    def __len__(self) -> int:
        return self.coords.shape[0]

    def to_bytes(self) -> bytes:
        """The projection as bytes for the store (an ``.npz``: the coordinates and a JSON header; no pickle)."""
        import io
        import json

        buf = io.BytesIO()
        head = json.dumps({"method": self.method, "params": self.params, "seconds": self.seconds}, default=str)
        np.savez(buf, coords=np.asarray(self.coords, dtype=np.float64), head=np.array(head))
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, raw: bytes) -> "Projection":
        import io
        import json

        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            coords, head = z["coords"], json.loads(str(z["head"]))
        if coords.ndim != 2 or coords.shape[1] != 2:
            raise ValueError(f"stored projection has coordinates of shape {coords.shape}, expected [n, 2]")
        return cls(coords=coords, method=str(head["method"]), params=dict(head["params"]),
                   seconds=float(head["seconds"]))


def expected_seconds(n: int, method: str) -> float:
    """A rough estimate of the fit time on this project's 2-core machine (drives the progress bar)."""
    if method == "umap":
        return 15.0 + n / 1000.0
    return 2.0 + (n / 150.0 if n <= 2000 else n / 250.0)


def _standardize(X: np.ndarray) -> np.ndarray:
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (X - mean) / std


def _matrix(X) -> np.ndarray:
    """The feature values of ``X`` (a FeatureMatrix or an array) as a checked float64 [n, d] array."""
    values = X.values if hasattr(X, "values") and hasattr(X, "profile") else X
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError(f"X must be a non-empty 2-D feature matrix, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("X must be finite (a feature is NaN or infinite)")
    return arr


def pca(X) -> Projection:
    """The first two principal components of the standardized features of ``X``: a projection with nothing to
    fit iteratively and nothing to compile (one 48 x 48 eigendecomposition; about 0.1 s for 10,000 runs), which
    the dashboard shows at once while UMAP or t-SNE is computed. Each axis's sign is fixed (its largest loading
    positive), so the same features give the same picture. ``params["explained"]``: the share of the
    standardized variance each axis holds."""
    arr = _matrix(X)
    t0 = time.perf_counter()
    Z = _standardize(arr)
    Z = Z - Z.mean(axis=0)
    vals, vecs = np.linalg.eigh(Z.T @ Z)
    order = np.argsort(vals)[::-1][:2]
    axes = vecs[:, order]
    signs = np.sign(axes[np.argmax(np.abs(axes), axis=0), np.arange(axes.shape[1])])
    coords = np.zeros((arr.shape[0], 2))
    coords[:, :axes.shape[1]] = Z @ (axes * np.where(signs == 0, 1.0, signs))
    total = float(vals.sum())
    explained = [float(vals[i] / total) if total > 0 else 0.0 for i in order]
    return Projection(coords=coords, method="pca", params={"explained": explained},
                      seconds=time.perf_counter() - t0)


def _fit(X: np.ndarray, method: str, random_state: int | None, params: dict) -> np.ndarray:
    n = X.shape[0]
    if n == 1:
        return np.zeros((1, 2))
    if n == 2:
        return np.array([[-1.0, 0.0], [1.0, 0.0]])
    if method == "tsne":
        from sklearn.manifold import TSNE

        perplexity = float(min(params.get("perplexity", 30.0), max(1.0, (n - 1) / 3.0)))
        max_iter = int(params.get("max_iter", 1000 if n <= 2000 else 300))
        params.update(perplexity=perplexity, max_iter=max_iter, approximation="barnes_hut")
        if n > 2000 and X.shape[1] > 20:
            # approximate: Barnes-Hut on the first 20 principal components, fewer iterations
            from sklearn.decomposition import PCA

            X = PCA(n_components=20, random_state=random_state).fit_transform(X)
            params["pca_components"] = 20
        return TSNE(n_components=2, perplexity=perplexity, init="pca", method="barnes_hut", max_iter=max_iter,
                    random_state=random_state).fit_transform(X)
    import warnings

    n_neighbors = int(min(params.get("n_neighbors", 15), n - 1))
    min_dist = float(params.get("min_dist", 0.1))
    if n <= n_neighbors + 2:
        from sklearn.decomposition import PCA

        params["fallback"] = "pca (too few rows for UMAP)"
        return PCA(n_components=2).fit_transform(X)
    from sklearn.neighbors import NearestNeighbors

    # exact neighbours from scikit-learn (about 1 s for 10,000 x 48): UMAP then skips its NN-descent,
    # whose numba compilation alone costs tens of seconds in a fresh process
    dist, idx = NearestNeighbors(n_neighbors=n_neighbors).fit(X).kneighbors(X)
    n_epochs = int(params.get("n_epochs", 500 if n <= 2000 else 200))
    params.update(n_neighbors=n_neighbors, min_dist=min_dist, n_epochs=n_epochs, neighbours="exact (scikit-learn)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # fixed random_state disables parallelism; no search index kept
        import umap

        model = umap.UMAP(n_components=2, n_neighbors=n_neighbors, min_dist=min_dist, n_epochs=n_epochs,
                          random_state=random_state, precomputed_knn=(idx, dist, None))
        return model.fit_transform(X)


def place(Z_fit: np.ndarray, coords_fit: np.ndarray, Z_new: np.ndarray, *, k: int = 5,
          batch: int = 50_000) -> np.ndarray:
    """Coordinates for new rows: the inverse-distance-weighted mean of the coordinates of their ``k`` nearest
    fitted rows (standardized feature space). The transform of a projection fitted on a sample; t-SNE has
    none of its own, and one rule for both methods keeps the two comparable."""
    from sklearn.neighbors import NearestNeighbors

    k = int(min(k, len(Z_fit)))
    nn = NearestNeighbors(n_neighbors=k).fit(Z_fit)
    out = np.empty((len(Z_new), 2))
    for a in range(0, len(Z_new), batch):
        dist, idx = nn.kneighbors(Z_new[a:a + batch])
        w = 1.0 / np.maximum(dist, 1e-12)
        out[a:a + batch] = (coords_fit[idx] * w[..., None]).sum(axis=1) / w.sum(axis=1, keepdims=True)
    return out


def project(X, *, method: str = "umap", random_state: int | None = 42, progress: Progress | None = None,
            tick: float = 0.25, fit_cap: int | None = None, **params) -> Projection:
    """Project the rows of ``X`` (a feature matrix) to 2-D with ``method`` ('umap' or 'tsne').

    ``fit_cap``: with more rows than this, the projection is fitted on a uniform random sample of ``fit_cap``
    rows (seeded by ``random_state``) and every other row is placed by :func:`place`; ``params`` then record
    ``fitted_on`` and ``placed``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if fit_cap is not None and (not isinstance(fit_cap, int) or fit_cap < 3):
        raise ValueError(f"fit_cap must be an integer of at least 3 or None, got {fit_cap!r}")
    arr = _matrix(X)
    Z = _standardize(arr)
    t0 = time.perf_counter()
    box: dict = {}
    sample = None
    if fit_cap is not None and arr.shape[0] > fit_cap:
        sample = np.sort(np.random.default_rng(random_state).choice(arr.shape[0], fit_cap, replace=False))
        params.update(fitted_on=int(fit_cap), placed=int(arr.shape[0] - fit_cap),
                      placement="inverse-distance-weighted mean of the 5 nearest fitted runs")

    def work() -> None:
        try:
            if sample is None:
                box["coords"] = _fit(Z, method, random_state, params)
                return
            fitted = _fit(Z[sample], method, random_state, params)
            coords = np.empty((Z.shape[0], 2))
            coords[sample] = fitted
            rest = np.setdiff1d(np.arange(Z.shape[0]), sample)
            coords[rest] = place(Z[sample], fitted, Z[rest])
            box["coords"] = coords
        except BaseException as e:  # re-raised in the calling thread
            box["error"] = e

    label = "UMAP" if method == "umap" else "t-SNE"
    if progress is None:
        work()
    else:
        est = expected_seconds(arr.shape[0] if sample is None else len(sample), method) + (
            0.0 if sample is None else arr.shape[0] / 20_000.0)
        worker = threading.Thread(target=work, name=f"htc-{method}", daemon=True)
        progress(0.0, f"{label} of {arr.shape[0]:,} trajectories: starting")
        worker.start()
        while worker.is_alive():
            worker.join(tick)
            el = time.perf_counter() - t0
            progress(min(0.95, el / est), f"{label} of {arr.shape[0]:,} trajectories: {el:.0f} s (about {est:.0f} s)")
    if "error" in box:
        raise box["error"]
    secs = time.perf_counter() - t0
    if progress is not None:
        progress(1.0, f"{label} done in {secs:.1f} s")
    coords = np.asarray(box["coords"], dtype=np.float64)
    return Projection(coords=coords, method=method, params=dict(params, random_state=random_state), seconds=secs)
