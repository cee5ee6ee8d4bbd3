"""Distinct signals: features that carry the same information explained as one.

By the paper's definitions several of the 48 features are exact copies of each other on real data (for example
``token_volatility_mean`` and ``attention_spread_mean`` are both the mean of r), and others are almost perfectly
correlated. A linear model may then put large weights of opposite sign on such columns that cancel each other;
listing them as separate "reasons" shows artefacts of the fit, not causes. Here the columns are grouped on the
data the explanation refers to:

- exact copies (and constant columns) form one signal;
- columns whose absolute Pearson correlation exceeds ``threshold`` (0.95 by default) are joined into one signal
  (single linkage: connected components of the "|r| > threshold" graph).

A signal's contribution to the logit is the sum of its members' contributions, so the signals still add up to
the model's logit exactly. Each signal is named after its member with the largest absolute weight (ties: the
first in the paper's order), and lists the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Signal", "signal_groups", "DEFAULT_CORRELATION"]

DEFAULT_CORRELATION = 0.95


@dataclass(frozen=True)
class Signal:
    """One distinct signal: ``members`` are column indices (paper order), ``kind`` is 'single', 'duplicate'
    (exact copies only) or 'correlated' (at least one member joined by correlation)."""

    members: tuple[int, ...]
    kind: str


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


def _correlated(X: np.ndarray, threshold: float) -> np.ndarray:
    sd = X.std(axis=0)
    ok = sd > 0
    r = np.zeros((X.shape[1], X.shape[1]))
    if ok.sum() >= 2:
        Z = (X[:, ok] - X[:, ok].mean(axis=0)) / sd[ok]
        r[np.ix_(ok, ok)] = (Z.T @ Z) / len(X)
    return np.abs(r) > threshold


def signal_groups(X, *, threshold: float | None = DEFAULT_CORRELATION) -> list[Signal]:
    """Group the columns of the feature matrix ``X`` (rows: the runs the explanation refers to) into distinct
    signals. ``threshold=None`` merges exact copies only."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D feature matrix, got shape {X.shape}")
    if threshold is not None and not (0.0 < float(threshold) < 1.0):
        raise ValueError(f"threshold must be in (0, 1) or None, got {threshold!r}")
    X = np.where(np.isfinite(X), X, 0.0)
    copies = _exact_copies(X)
    linked = copies | _correlated(X, float(threshold)) if threshold is not None else copies
    signals = []
    for comp in _components(linked):
        if len(comp) == 1:
            kind = "single"
        elif copies[np.ix_(comp, comp)].all():
            kind = "duplicate"
        else:
            kind = "correlated"
        signals.append(Signal(members=tuple(comp), kind=kind))
    return signals
