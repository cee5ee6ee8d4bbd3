"""Distinct signals: features that carry the same information explained as one.

By the paper's definitions several of the 48 features are exact copies of each other on real data (for example
``token_volatility_mean`` and ``attention_spread_mean`` are both the mean of r), and others are almost perfectly
correlated. A linear model may then put large weights of opposite sign on such columns that cancel each other;
listing them as separate "reasons" shows artefacts of the fit, not causes. Here the columns are grouped on the
data the explanation refers to:

- exact copies (and constant columns) form one signal;
- correlated columns are joined into one signal by average-linkage clustering on ``1 - |r|`` (Pearson), cut at
  ``1 - threshold``: two groups merge while the mean ``|r|`` between their members exceeds ``threshold`` (0.7 by
  default). Average linkage, unlike single linkage (connected components of ``|r| > threshold``), does not chain
  loosely related columns into one large group through a few strong pairs; 0.7 joins what a linear model can
  trade against each other (on the sample runs, entropy within a step and tokens per step correlate at ``|r|`` 0.8
  and got weights of -9.4 and +7.9 that cancelled), and keeps distinct measurements apart.

A signal's contribution to the logit is the sum of its members' contributions, so the signals still add up to
the model's logit exactly. ``signs`` orient the members: +1 where a member rises with the signal's first
member, -1 where it falls (explanations say "higher" or "lower" for the whole signal from them).

The grouping depends only on the matrix and the threshold, and explaining run after run of one run set asks for
the same grouping every time: :func:`signal_groups` remembers it for the last :data:`CACHE_SIZE` matrices, keyed
on their content (a hash of the values, the shape and the threshold), so only the first run pays for the
correlation and the clustering.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

__all__ = ["Signal", "signal_groups", "DEFAULT_CORRELATION"]

DEFAULT_CORRELATION = 0.7

#: how many (matrix, threshold) groupings :func:`signal_groups` remembers (least recently used dropped first)
CACHE_SIZE = 8
_cache: OrderedDict[tuple, tuple] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class Signal:
    """One distinct signal: columns that carry the same information, explained as one.

    Parameters
    ----------
    members : tuple of int
        Column indices (the paper's order for the 48 features), increasing.
    kind : {"single", "duplicate", "correlated"}
        One column; exact copies only; or at least one member joined by correlation.
    signs : tuple of int, default ()
        Per member: +1 where it rises with the signal's first member, -1 where it falls (empty: all +1).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.explain.signals import signal_groups
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(size=50), rng.normal(size=50)
    >>> X = np.column_stack([a, a, -a + 0.1 * rng.normal(size=50), b])   # a copy, a mirror, another
    >>> signal_groups(X)[0]
    Signal(members=(0, 1, 2), kind='correlated', signs=(1, 1, -1))
    """

    members: tuple[int, ...]
    kind: str
    signs: tuple[int, ...] = ()    # per member: +1 rises with the first member, -1 falls (empty: all +1)

    def sign_of(self, member: int) -> int:
        """How column ``member`` moves with the signal's first member.

        Parameters
        ----------
        member : int
            A column index among ``members``.

        Returns
        -------
        int
            +1 when it rises with the first member, -1 when it falls.

        Examples
        --------
        >>> from htc_core.explain.signals import Signal
        >>> signal = Signal(members=(0, 1, 2), kind="correlated", signs=(1, 1, -1))
        >>> signal.sign_of(1), signal.sign_of(2)
        (1, -1)
        """
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
    """Group the columns of a feature matrix into distinct signals.

    Exact copies (and constant columns) form one signal; correlated columns join by average-linkage clustering
    on ``1 - |r|`` cut at ``1 - threshold``. Non-finite values count as 0. The result is remembered for the last
    :data:`CACHE_SIZE` matrices (keyed on their values), so explaining many runs of one run set groups once.

    Parameters
    ----------
    X : array-like of shape (n_runs, n_features)
        The features of the runs the explanation refers to.
    threshold : float or None, default 0.7
        Two clusters merge while the mean ``|r|`` between their members exceeds it, in (0, 1); None merges exact
        copies only.

    Returns
    -------
    list of Signal
        Every column in exactly one signal, in order of their first member.

    Raises
    ------
    ValueError
        If ``X`` is not 2-D or ``threshold`` is outside (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.explain.signals import signal_groups
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(size=50), rng.normal(size=50)
    >>> X = np.column_stack([a, a, -a + 0.1 * rng.normal(size=50), b])   # a copy, a mirror, another
    >>> [(s.members, s.kind) for s in signal_groups(X)]
    [((0, 1, 2), 'correlated'), ((3,), 'single')]
    >>> [(s.members, s.kind) for s in signal_groups(X, threshold=None)]
    [((0, 1), 'duplicate'), ((2,), 'single'), ((3,), 'single')]
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D feature matrix, got shape {X.shape}")
    if threshold is not None and not (0.0 < float(threshold) < 1.0):
        raise ValueError(f"threshold must be in (0, 1) or None, got {threshold!r}")
    key = (X.shape, None if threshold is None else float(threshold),
           hashlib.blake2b(np.ascontiguousarray(X).tobytes(), digest_size=20).digest())
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return list(_cache[key])
    signals = _grouped(np.where(np.isfinite(X), X, 0.0), threshold)
    with _cache_lock:
        _cache[key] = tuple(signals)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return signals


def _grouped(X: np.ndarray, threshold: float | None) -> list[Signal]:
    """The signals of a finite matrix (:func:`signal_groups` without its checks and its cache)."""
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
