"""The runs' metadata as plain columns: what a trace set holds until a pandas DataFrame is asked for.

A reader builds one :class:`MetaTable` per trace set (one numpy array per column of ``META_COLUMNS``); the
trace set's ``meta`` property turns it into the DataFrame users know only on first access, so a command that
never looks at ``ts.meta`` (``htc features`` writing CSV, ``htc validate``) never imports pandas (0.2-0.4 s of
CPU at every start, issue 29). Columns:

- ``success``: float64, 1.0 / 0.0, NaN when unlabeled (the DataFrame's nullable ``boolean`` column);
- ``verbalized_confidence``: float64, NaN when absent;
- every other column (``id``, ``dataset``, ``model``, ``framework``, ``question``, ``answer``, ``gold``,
  ``source``, ``metadata`` as a JSON string): an object array of str or None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

META_COLUMNS = (
    "id",
    "dataset",
    "model",
    "framework",
    "question",
    "answer",
    "gold",
    "success",
    "verbalized_confidence",
    "source",
    "metadata",
)
#: the float64 columns (NaN = missing); the others hold str or None
NUMBER_COLUMNS = ("success", "verbalized_confidence")


def _object_array(values: list) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def _success_value(v: Any) -> float:
    """1.0 / 0.0, NaN for None or pandas' NA (any other value by its truth, as the DataFrame column did)."""
    if v is None or v is _na():
        return np.nan
    return 1.0 if bool(v) else 0.0


def _na() -> Any:
    """pandas' NA when pandas is loaded (a value may come from a DataFrame), else a sentinel nothing equals."""
    import sys

    pd = sys.modules.get("pandas")
    return pd.NA if pd is not None else _NO_NA


_NO_NA = object()


class MetaTable:
    """One row per trajectory, the columns of ``META_COLUMNS`` as numpy arrays (see the module docstring).

    Parameters
    ----------
    columns : dict of str to ndarray
        Every name of ``META_COLUMNS``, each array of the same length.

    Examples
    --------
    >>> from htc_core.traces import MetaTable
    >>> t = MetaTable.from_rows([{"id": "a", "success": True}, {"id": "b"}])
    >>> len(t), t.column("success").tolist()
    (2, [1.0, nan])
    """

    __slots__ = ("columns",)

    def __init__(self, columns: dict[str, np.ndarray]):
        missing = [c for c in META_COLUMNS if c not in columns]
        if missing:
            raise ValueError(f"columns misses {', '.join(missing)}")
        n = {len(columns[c]) for c in META_COLUMNS}
        if len(n) > 1:
            raise ValueError(f"the columns differ in length: {sorted(n)}")
        self.columns = {c: columns[c] for c in META_COLUMNS}

    def __len__(self) -> int:
        return len(self.columns["id"])

    def column(self, name: str) -> np.ndarray:
        """The array of one column.

        Parameters
        ----------
        name : str
            One of ``META_COLUMNS``.

        Returns
        -------
        ndarray
            The table's own array (copy it before changing it).

        Examples
        --------
        >>> from htc_core.traces import MetaTable
        >>> MetaTable.from_rows([{"id": "a"}]).column("id").tolist()
        ['a']
        """
        if name not in self.columns:
            raise ValueError(f"name must be one of {', '.join(META_COLUMNS)}, got {name!r}")
        return self.columns[name]

    @classmethod
    def from_rows(cls, rows: list[dict]) -> "MetaTable":
        """A table from one dict per trajectory.

        Parameters
        ----------
        rows : list of dict
            Column name -> value; a missing key is None (NaN for the number columns). ``success`` is True /
            False / None (pandas' NA reads as None), ``verbalized_confidence`` a number or None.

        Returns
        -------
        MetaTable

        Examples
        --------
        >>> from htc_core.traces import MetaTable
        >>> MetaTable.from_rows([{"id": "a", "verbalized_confidence": 0.5}]).column("verbalized_confidence")
        array([0.5])
        """
        cols: dict[str, np.ndarray] = {}
        for c in META_COLUMNS:
            vals = [r.get(c) for r in rows]
            if c == "success":
                cols[c] = np.array([_success_value(v) for v in vals], dtype=np.float64)
            elif c == "verbalized_confidence":
                cols[c] = np.array([np.nan if v is None else float(v) for v in vals], dtype=np.float64)
            else:
                cols[c] = _object_array(vals)
        return cls(cols)

    @classmethod
    def empty(cls, n: int = 0) -> "MetaTable":
        """The table of ``n`` runs that carry no metadata.

        Parameters
        ----------
        n : int, default=0
            Rows.

        Returns
        -------
        MetaTable
            Every text column None, ``metadata`` ``"{}"``, the number columns NaN.

        Examples
        --------
        >>> from htc_core.traces import MetaTable
        >>> MetaTable.empty(2).column("metadata").tolist()
        ['{}', '{}']
        """
        cols = {c: np.full(n, np.nan) if c in NUMBER_COLUMNS else np.full(n, None, dtype=object)
                for c in META_COLUMNS}
        cols["metadata"] = np.full(n, "{}", dtype=object)
        return cls(cols)

    @classmethod
    def from_frame(cls, df: "pd.DataFrame") -> "MetaTable":
        """A table from a metadata DataFrame.

        Parameters
        ----------
        df : DataFrame
            A frame with the columns of ``META_COLUMNS`` (``TraceSet.meta``); other columns are dropped.

        Returns
        -------
        MetaTable

        Examples
        --------
        >>> from htc_core.traces import MetaTable
        >>> frame = MetaTable.from_rows([{"id": "a", "success": False}]).to_frame()
        >>> MetaTable.from_frame(frame).column("success").tolist()
        [0.0]
        """
        cols = {}
        for c in META_COLUMNS:
            if c == "success":
                cols[c] = df[c].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
            elif c == "verbalized_confidence":
                cols[c] = df[c].to_numpy(dtype=np.float64, copy=True)
            else:
                cols[c] = df[c].to_numpy(dtype=object, copy=True)
        return cls(cols)

    def to_frame(self) -> "pd.DataFrame":
        """The table as the DataFrame of ``TraceSet.meta``.

        Returns
        -------
        DataFrame
            Text columns of str / None (object dtype), ``success`` nullable boolean, ``verbalized_confidence``
            float64; a fresh frame, its arrays copied.

        Examples
        --------
        >>> from htc_core.traces import MetaTable
        >>> MetaTable.from_rows([{"id": "a", "success": True}]).to_frame()["success"].dtype
        BooleanDtype
        """
        import pandas as pd

        out: dict[str, Any] = {}
        for c in META_COLUMNS:
            v = self.columns[c]
            if c == "success":
                out[c] = pd.Series(pd.arrays.BooleanArray(v == 1.0, np.isnan(v)), copy=False)
            elif c == "verbalized_confidence":
                out[c] = pd.Series(v.copy(), dtype="float64")
            else:
                out[c] = pd.Series(v.copy(), dtype=object)
        return pd.DataFrame(out)

    def take(self, indices: np.ndarray) -> "MetaTable":
        """Some rows of the table.

        Parameters
        ----------
        indices : ndarray of int
            Row positions, in the order wanted.

        Returns
        -------
        MetaTable

        Examples
        --------
        >>> import numpy as np
        >>> from htc_core.traces import MetaTable
        >>> MetaTable.from_rows([{"id": "a"}, {"id": "b"}]).take(np.array([1, 0])).column("id").tolist()
        ['b', 'a']
        """
        return MetaTable({c: v[indices] for c, v in self.columns.items()})

    @staticmethod
    def concat(tables: Sequence["MetaTable"]) -> "MetaTable":
        """Tables one after the other.

        Parameters
        ----------
        tables : sequence of MetaTable
            At least one.

        Returns
        -------
        MetaTable
            The rows of every table, in order.

        Examples
        --------
        >>> from htc_core.traces import MetaTable
        >>> len(MetaTable.concat([MetaTable.empty(2), MetaTable.empty(1)]))
        3
        """
        return MetaTable({c: np.concatenate([t.columns[c] for t in tables]) for c in META_COLUMNS})


__all__ = ["MetaTable", "META_COLUMNS"]
