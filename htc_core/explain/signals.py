"""Distinct signals: features that carry the same information explained as one.

By the paper's definitions several of the 48 features are exact copies of each other on real data (for example
``token_volatility_mean`` and ``attention_spread_mean`` are both the mean of r), and others are almost perfectly
correlated. A linear model may then put large weights of opposite sign on such columns that cancel each other;
listing them as separate "reasons" shows artefacts of the fit, not causes. Here the columns are grouped on the
data the explanation refers to:

- exact copies (and constant columns) form one signal;
- correlated columns are joined into one signal by average-linkage clustering on ``1 - |r|`` (Pearson), cut at
  ``1 - threshold``: two groups merge while the mean |r| between their members exceeds ``threshold`` (0.7 by
  default). Average linkage, unlike single linkage (connected components of "|r| > threshold"), does not chain
  loosely related columns into one large group through a few strong pairs; 0.7 joins what a linear model can
  trade against each other (on the sample runs, entropy within a step and tokens per step correlate at |r| 0.8
  and got weights of -9.4 and +7.9 that cancelled), and keeps distinct measurements apart.

A signal's contribution to the logit is the sum of its members' contributions, so the signals still add up to
the model's logit exactly. ``signs`` orient the members: +1 where a member rises with the signal's first
member, -1 where it falls (explanations say "higher" or "lower" for the whole signal from them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Signal", "signal_groups", "DEFAULT_CORRELATION"]

DEFAULT_CORRELATION = 0.7


@dataclass(frozen=True)
class Signal:
    """One distinct signal: ``members`` are column indices (paper order), ``kind`` is 'single', 'duplicate'
    (exact copies only) or 'correlated' (at least one member joined by correlation)."""

    members: tuple[int, ...]
    kind: str
    signs: tuple[int, ...] = ()    # per member: +1 rises with the first member, -1 falls (empty: all +1)

    def sign_of(self, member: int) -> int:
        """+1 or -1: how column ``member`` moves with the signal's first member."""
        return self.signs[self.members.index(member)] if self.signs else 1


def _components(adjacent: np.ndarray) -> list[list[int]]:
    """Connected components of a boolean adjacency matrix, each sorted, in order of their first member."""
    d = adjacent.shape[0]
    seen = np.zeros(d, dtype=bool)
    out = []
    for start in range(d):
        if seen[start]:
            continue
        comp, stack = [], [start]
        seen[start] = True
        while stack:
            i = stack.pop()
            comp.append(i)
            for j in np.flatnonzero(adjacent[i] & ~seen):
                seen[j] = True
                stack.append(int(j))
        out.append(sorted(comp))
    return out


def _exact_copies(X: np.ndarray) -> np.ndarray:
    """[d, d] True where two columns are identical on every row (constant columns count as copies of each other)."""
    d = X.shape[1]
    same = np.eye(d, dtype=bool)
    for i in range(d):
        same[i, i + 1:] = np.all(X[:, i:i + 1] == X[:, i + 1:], axis=0)
    constant = np.all(X == X[:1], axis=0) if len(X) else np.ones(d, dtype=bool)
    same |= same.T
    same |= np.outer(constant, constant)
    return same


def _correlation(X: np.ndarray) -> np.ndarray:
    """[d, d] Pearson r of the columns (0 where a column is constant)."""
    sd = X.std(axis=0)
    ok = sd > 0
    r = np.zeros((X.shape[1], X.shape[1]))
    if ok.sum() >= 2:
        Z = (X[:, ok] - X[:, ok].mean(axis=0)) / sd[ok]
        r[np.ix_(ok, ok)] = np.clip((Z.T @ Z) / len(X), -1.0, 1.0)
    return r


def _clusters(r: np.ndarray, copies: np.ndarray, threshold: float) -> np.ndarray:
    """[d, d] True where two columns fall in the same average-linkage cluster of ``1 - |r|`` cut at
    ``1 - threshold`` (exact copies at distance 0)."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    d = r.shape[0]
    if d < 2:
        return np.ones((d, d), dtype=bool)
    dist = np.where(copies, 0.0, 1.0 - np.abs(r))
    np.fill_diagonal(dist, 0.0)
    labels = fcluster(linkage(squareform(dist, checks=False), method="average"), t=1.0 - threshold,
                      criterion="distance")
    return labels[:, None] == labels[None, :]


def signal_groups(X, *, threshold: float | None = DEFAULT_CORRELATION) -> list[Signal]:
    """Group the columns of the feature matrix ``X`` (rows: the runs the explanation refers to) into distinct
    signals: exact copies, and average-linkage clusters whose mean |r| exceeds ``threshold``.
    ``threshold=None`` merges exact copies only."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D feature matrix, got shape {X.shape}")
    if threshold is not None and not (0.0 < float(threshold) < 1.0):
        raise ValueError(f"threshold must be in (0, 1) or None, got {threshold!r}")
    X = np.where(np.isfinite(X), X, 0.0)
    copies = _exact_copies(X)
    r = _correlation(X)
    linked = copies | _clusters(r, copies, float(threshold)) if threshold is not None else copies
    signals = []
    for comp in _components(linked):
        if len(comp) == 1:
            kind = "single"
        elif copies[np.ix_(comp, comp)].all():
            kind = "duplicate"
        else:
            kind = "correlated"
        signs = tuple(1 if (j == comp[0] or copies[comp[0], j] or r[comp[0], j] >= 0) else -1 for j in comp)
        signals.append(Signal(members=tuple(comp), kind=kind, signs=signs))
    return signals
