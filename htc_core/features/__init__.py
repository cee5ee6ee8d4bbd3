"""The 48 HTC features (paper Appendix, Listing FEATURE_MAP_FINAL_STABLE), computed vectorized.

>>> from htc_core import load
>>> from htc_core.features import extract, REGISTRY
>>> fm = extract(load("sample_runs/units/")[0])      # FeatureMatrix, fm.values is [n_trajectories, 48]
>>> REGISTRY["last_top1_avg"].formula
'x_S'
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..traces import TraceSet
from . import dynamics, position, stability, structure
from .registry import FAMILIES, FeatureSpec
from .steps import EPS, FeatureContext, StepStats, build_context, step_stats

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

_MODULES = (dynamics, position, stability, structure)


def _build_registry() -> dict[str, FeatureSpec]:
    reg: dict[str, FeatureSpec] = {}
    i = 0
    for mod in _MODULES:
        for name, group, display, formula, desc in mod.SPECS:
            reg[name] = FeatureSpec(i, name, mod.FAMILY, group, display, formula, desc)
            i += 1
    return reg


REGISTRY: dict[str, FeatureSpec] = _build_registry()
FEATURE_NAMES: tuple[str, ...] = tuple(REGISTRY)
N_FEATURES = len(FEATURE_NAMES)


def feature_label(name: str) -> str:
    """A feature's one label on every page, table and figure: its code and short name.

    The dashboard, the report and the figures all name a feature this way (the snake-case name goes on hover
    where a figure has room for it), so a feature reads alike on Feature weights and on Compare run sets.

    Parameters
    ----------
    name : str
        A feature name of the registry; any other name (a model's own column) is returned as given.

    Returns
    -------
    str
        E.g. "F13 Token gradient, min" for ``token_gradient_min``.

    Examples
    --------
    >>> from htc_core.features import feature_label
    >>> feature_label("token_gradient_min"), feature_label("x0")
    ('F13 Token gradient, min', 'x0')
    """
    spec = REGISTRY.get(str(name))
    return str(name) if spec is None else f"{spec.code} {spec.display_name}"


def get_feature(name: str) -> FeatureSpec:
    """The registered feature ``name`` (also accepts codes such as 'F31').

    Parameters
    ----------
    name : str
        A feature name of :data:`FEATURE_NAMES` or its code ``F0`` ... ``F47`` (any case).

    Returns
    -------
    FeatureSpec
        Its index, name, family, group, display name, formula and description.

    Raises
    ------
    ValueError
        For an unknown name, listing the valid ones.

    Examples
    --------
    >>> from htc_core.features import FEATURE_NAMES, get_feature
    >>> spec = get_feature("F0")
    >>> spec.name == FEATURE_NAMES[0], spec.index
    (True, 0)
    >>> get_feature(FEATURE_NAMES[47]).index
    47
    """
    if isinstance(name, str) and name.upper().startswith("F") and name[1:].isdigit():
        i = int(name[1:])
        if 0 <= i < N_FEATURES:
            return REGISTRY[FEATURE_NAMES[i]]
    if name not in REGISTRY:
        raise ValueError(f"unknown feature {name!r}; valid features: {', '.join(FEATURE_NAMES)}")
    return REGISTRY[name]


def family_of(name: str) -> str:
    """The feature family of a feature: one of the paper's four (Dynamics, Position, Stability, Structure).

    Parameters
    ----------
    name : str
        A feature name or code, as :func:`get_feature` takes it.

    Returns
    -------
    str
        The family's name.

    Examples
    --------
    >>> from htc_core.features import FEATURE_NAMES, family_of
    >>> len({family_of(n) for n in FEATURE_NAMES})
    4
    """
    return get_feature(name).family


@dataclass
class FeatureMatrix:
    """Result of feature extraction: one row per trajectory, columns in the paper's order.

    A FeatureMatrix behaves as a 2-D array where scikit-learn expects one: ``np.asarray(fm)`` is
    ``fm.values``, ``len(fm)`` and ``fm.shape`` count the trajectories, and ``fm[rows]`` (integer
    indices, a boolean mask or a slice) is the FeatureMatrix of those rows, with their ids, names and
    token-confidence profile. So ``cross_val_score(HTCCalibrator(), fm, y)`` splits it like an array
    while every fold keeps the profile the calibrator checks.

    Parameters
    ----------
    values : ndarray of shape (n_trajectories, n_features)
        The feature values (float64).
    ids : ndarray of shape (n_trajectories,)
        The trajectory ids, one per row.
    profile : str
        The token-confidence profile the features were computed with (``"paper"``, ``"chosen"``, ...).
    top_k : int
        The number of alternatives averaged into TopkConf.
    names : tuple of str, default=FEATURE_NAMES
        The column names.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.features import FeatureMatrix
    >>> fm = FeatureMatrix(np.arange(6.0).reshape(3, 2), np.array(["a", "b", "c"], dtype=object),
    ...                    "paper", 5, ("f0", "f1"))
    >>> fm.shape, len(fm)
    ((3, 2), 3)
    >>> fm[[0, 2]].ids.tolist()
    ['a', 'c']
    >>> np.asarray(fm)[1].tolist()
    [2.0, 3.0]
    >>> frame = fm.to_frame()
    >>> frame.index.tolist(), frame.columns.tolist()
    (['a', 'b', 'c'], ['f0', 'f1'])
    """

    values: np.ndarray          # float64 [n_trajectories, 48]
    ids: np.ndarray             # object [n_trajectories]
    profile: str
    top_k: int
    names: tuple[str, ...] = FEATURE_NAMES

    def __len__(self) -> int:
        return self.values.shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        """(n_trajectories, n_features), as a 2-D array's.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, report = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> fm.shape
        (250, 48)
        """
        return self.values.shape

    @property
    def ndim(self) -> int:
        """2, as a 2-D array's.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, report = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> fm.ndim
        2
        """
        return 2

    @property
    def dtype(self) -> np.dtype:
        """The values' dtype (float64).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, report = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> fm.dtype
        dtype('float64')
        """
        return self.values.dtype

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False and dtype is not None and np.dtype(dtype) != self.values.dtype:
            raise ValueError("a FeatureMatrix cannot be converted to another dtype without a copy")
        arr = self.values if dtype is None else self.values.astype(dtype, copy=False)
        return arr.copy() if copy else arr

    def __getitem__(self, key) -> "FeatureMatrix":
        """Rows of the matrix: ``fm[rows]`` or ``fm[rows, ...]`` (how scikit-learn's splitters index)."""
        if isinstance(key, tuple):
            if len(key) == 2 and key[1] is Ellipsis:
                key = key[0]
            else:
                raise IndexError("a FeatureMatrix is indexed by rows only (fm[rows]); take columns with "
                                 "fm.column(name) or np.asarray(fm)[:, columns]")
        if isinstance(key, (int, np.integer)):
            key = [key]
        if isinstance(key, slice):
            return self.take(np.arange(len(self))[key])
        return self.take(key)

    def column(self, name: str) -> np.ndarray:
        """The values of one feature.

        Parameters
        ----------
        name : str
            A feature name or code (``"F31"``).

        Returns
        -------
        ndarray of shape (n_trajectories,)

        Examples
        --------
        >>> import htc_core as htc
        >>> fm = htc.extract(htc.load("sample_runs/units/")[0])
        >>> fm.column("F0").shape
        (500,)
        """
        return self.values[:, get_feature(name).index]

    def to_frame(self, meta: "pd.DataFrame | None" = None) -> "pd.DataFrame":
        """The features as a DataFrame.

        Parameters
        ----------
        meta : DataFrame, optional
            The trace set's metadata table. Without it (the default) the frame holds the feature columns
            only, indexed by trajectory id (index name ``"id"``), so it goes back into a calibrator's
            ``fit`` and ``predict_proba`` as it is. With it, the export layout: ``id``, ``dataset``,
            ``model`` and ``success`` columns first, then the features (what ``htc features`` writes).

        Returns
        -------
        DataFrame
            One row per trajectory.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/")
        >>> frame = htc.extract(ts).to_frame()
        >>> frame.index.name, frame.shape
        ('id', (500, 48))
        """
        import pandas as pd

        if meta is not None:
            df = pd.DataFrame(self.values, columns=list(self.names))
            head = meta[["id", "dataset", "model", "success"]].reset_index(drop=True)
            return pd.concat([head, df], axis=1)
        return pd.DataFrame(self.values, columns=list(self.names), index=pd.Index(self.ids, name="id"))

    def take(self, indices) -> "FeatureMatrix":
        """The FeatureMatrix of some rows.

        Parameters
        ----------
        indices : array-like of int or bool
            Row positions or a boolean mask.

        Returns
        -------
        FeatureMatrix
            Those rows, with their ids, names and profile.

        Examples
        --------
        >>> import htc_core as htc
        >>> fm = htc.extract(htc.load("sample_runs/units/")[0])
        >>> fm.take([0, 1]).shape
        (2, 48)
        """
        idx = np.asarray(indices)
        if idx.size == 0:
            idx = idx.astype(np.intp)
        if idx.dtype != bool and idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise IndexError(f"rows must be integer positions or a boolean mask, got {idx.dtype} values")
        return FeatureMatrix(self.values[idx], self.ids[idx], self.profile, self.top_k, self.names)


#: from this many tokens on, the token confidences' row sums (a BLAS matrix-vector product over [n, k], memory
#: bound) run on one BLAS thread: with OpenBLAS's threads the 1.5 M tokens of the ingest bench cost 0.05 s more
#: CPU (the threads spin), for the same sums (BLAS splits the rows, not the sums); below it, setting the
#: limit (about 3 ms) would cost more than it saves
BLAS_LIMIT_TOKENS = 100_000


def _blas_limit(n_tokens: int):
    if n_tokens < BLAS_LIMIT_TOKENS:
        return contextlib.nullcontext()
    from ..calibration.blas_threads import one_blas_thread

    return one_blas_thread()


def extract(ts: TraceSet, *, profile: str = "paper", top_k: int = 5) -> FeatureMatrix:
    """Compute the 48 HTC features of every trajectory.

    Cost is O(total tokens): per-step statistics come from segment reductions over the step offsets,
    per-trajectory features from reductions over the trajectory offsets; there is no Python loop over
    trajectories or tokens.

    Parameters
    ----------
    ts : TraceSet
        The runs (every trajectory needs a step, every step a token: the readers ensure it).
    profile : str, default="paper"
        The token-confidence profile (DESIGN.md section 3); ``"chosen"`` ignores the alternatives.
    top_k : int, default=5
        The number of alternatives averaged into TopkConf.

    Returns
    -------
    FeatureMatrix
        One row per trajectory, the paper's 48 columns in order; array-like for scikit-learn.

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/")
    >>> fm = htc.extract(ts)
    >>> fm.shape, fm.names[0], fm.profile
    ((500, 48), 'top1_gradient_mean', 'paper')
    """
    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    if np.any(ts.steps_per_trajectory == 0):
        bad = ts.ids[ts.steps_per_trajectory == 0][:3]
        raise ValueError(f"every trajectory needs at least one step; empty: {list(bad)}")
    if np.any(ts.tokens_per_step == 0):
        raise ValueError("every step needs at least one token (readers drop empty steps)")
    with _blas_limit(ts.n_tokens):
        ctx = build_context(ts, profile=profile, top_k=top_k)
    values = np.empty((ts.n_trajectories, N_FEATURES), dtype=np.float64)
    for mod in _MODULES:
        for name, arr in mod.compute(ctx).items():
            values[:, REGISTRY[name].index] = arr
    return FeatureMatrix(values=values, ids=ts.ids, profile=profile, top_k=top_k)


__all__ = [
    "REGISTRY", "FEATURE_NAMES", "N_FEATURES", "FAMILIES", "FeatureSpec", "FeatureMatrix", "FeatureContext",
    "StepStats", "EPS", "extract", "get_feature", "family_of", "build_context", "step_stats",
]
