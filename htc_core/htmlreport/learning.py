"""Learning curves from a computed result (``htc learning-curve --json`` or any table of method x size).

Accepted JSON (decided here, since the learning-curve command is built elsewhere): the rows are the first
of: the object itself when it is a list; its ``"rows"``, ``"curve"``, ``"results"``, ``"table"`` or
``"points"`` list; else its first value that is a list of objects. Each row names a method (``method`` or
``model``), a training size (``size``, ``n_train``, ``train_size`` or ``n``) and metrics as
``{"ece": {"mean": m, "std": s}}``, ``"ece_mean"`` / ``"ece_std"``, or a plain ``"ece": m`` (std 0).
Metrics: ECE, Brier, AUROC (those present).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

__all__ = ["LearningCurve", "parse_learning_curve", "read_learning_curve", "learning_curve_figure"]

METRICS = ("ece", "brier", "auroc")
_ROW_KEYS = ("rows", "curve", "results", "table", "points")
_SIZE_KEYS = ("size", "n_train", "train_size", "n")


@dataclass
class LearningCurve:
    """A computed learning curve in long form, and where it came from.

    Made by :func:`parse_learning_curve` or :func:`read_learning_curve`.

    Parameters
    ----------
    source : str
        Where it came from (a file's path), named in messages and in the report.
    frame : pandas.DataFrame
        method, size, metric ("ece", "brier", "auroc"), mean, std; sorted by metric, method, size.

    Examples
    --------
    >>> from htc_core.htmlreport.learning import parse_learning_curve
    >>> rows = [{"method": "HTC-Reduced", "size": 50, "ece": {"mean": 0.10, "std": 0.02}, "auroc": 0.70},
    ...         {"method": "HTC-Reduced", "size": 100, "ece_mean": 0.08, "ece_std": 0.01, "auroc": 0.75}]
    >>> curve = parse_learning_curve({"rows": rows}, source="demo")
    >>> curve.source, len(curve.frame), sorted(set(curve.frame["metric"]))
    ('demo', 4, ['auroc', 'ece'])
    """

    source: str
    frame: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        """A copy of the long-form table.

        Returns
        -------
        pandas.DataFrame
            method, size, metric, mean, std.

        Examples
        --------
        >>> from htc_core.htmlreport.learning import parse_learning_curve
        >>> rows = [{"method": "HTC-Reduced", "size": 50, "ece": {"mean": 0.10, "std": 0.02}, "auroc": 0.70},
        ...         {"method": "HTC-Reduced", "size": 100, "ece_mean": 0.08, "ece_std": 0.01, "auroc": 0.75}]
        >>> parse_learning_curve(rows).to_frame()
                method   size metric  mean   std
        0  HTC-Reduced   50.0  auroc  0.70  0.00
        1  HTC-Reduced  100.0  auroc  0.75  0.00
        2  HTC-Reduced   50.0    ece  0.10  0.02
        3  HTC-Reduced  100.0    ece  0.08  0.01
        """
        return self.frame.copy()

    def to_dict(self) -> dict:
        """The curve as JSON-ready values.

        Returns
        -------
        dict
            Keys source and rows (records of the long-form table).

        Examples
        --------
        >>> from htc_core.htmlreport.learning import parse_learning_curve
        >>> rows = [{"method": "HTC-Reduced", "size": 50, "ece": {"mean": 0.10, "std": 0.02}, "auroc": 0.70},
        ...         {"method": "HTC-Reduced", "size": 100, "ece_mean": 0.08, "ece_std": 0.01, "auroc": 0.75}]
        >>> d = parse_learning_curve(rows, source="demo").to_dict()
        >>> d["source"], d["rows"][0]
        ('demo', {'method': 'HTC-Reduced', 'size': 50.0, 'metric': 'auroc', 'mean': 0.7, 'std': 0.0})
        """
        return {"source": self.source, "rows": self.frame.to_dict("records")}


def _rows(obj):
    """The list of rows of a parsed JSON value (see the module docstring), or None."""
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict):
        for k in _ROW_KEYS:
            if isinstance(obj.get(k), list):
                return obj[k]
        for v in obj.values():
            if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
                return v
    return None


def _metric(row: dict, m: str):
    """(mean, std) of metric ``m`` in one row, in any accepted form, or None."""
    v = row.get(m)
    if isinstance(v, dict) and "mean" in v:
        return v.get("mean"), v.get("std", 0.0)
    if f"{m}_mean" in row:
        return row[f"{m}_mean"], row.get(f"{m}_std", 0.0)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v, 0.0
    return None


def _number(v) -> float:
    """``v`` as a float, NaN when it is not a number."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def parse_learning_curve(obj, *, source: str = "learning curve") -> LearningCurve:
    """A learning curve from a parsed JSON value (``htc learning-curve --json`` or any table of method x size).

    The accepted shapes are in the module docstring: a list of rows or an object holding one, each row a
    method, a training size and metrics as ``{"mean", "std"}``, ``<metric>_mean`` / ``<metric>_std`` or a plain
    number (std 0).

    Parameters
    ----------
    obj : list or dict
        The parsed JSON.
    source : str, default "learning curve"
        Where it came from, named in the error messages.

    Returns
    -------
    LearningCurve
        The rows in long form.

    Raises
    ------
    ValueError
        Naming ``source`` and the problem: no table of rows, a row that is not an object or lacks a method or a
        size, or no metric anywhere.

    Examples
    --------
    >>> from htc_core.htmlreport.learning import parse_learning_curve
    >>> rows = [{"method": "HTC-Reduced", "size": 50, "ece": {"mean": 0.10, "std": 0.02}, "auroc": 0.70},
    ...         {"method": "HTC-Reduced", "size": 100, "ece_mean": 0.08, "ece_std": 0.01, "auroc": 0.75}]
    >>> parse_learning_curve({"rows": rows}).frame[["size", "metric", "mean"]]
        size metric  mean
    0   50.0  auroc  0.70
    1  100.0  auroc  0.75
    2   50.0    ece  0.10
    3  100.0    ece  0.08
    >>> parse_learning_curve([{"size": 50, "ece": 0.1}], source="curve.json")
    Traceback (most recent call last):
    ...
    ValueError: curve.json: row 0 needs a method ('method' or 'model') and a training size (one of ['size', ...
    """
    rows = _rows(obj)
    if not rows:
        raise ValueError(f"{source}: no table of rows found (expected a list of objects, or an object with "
                         f"one of {list(_ROW_KEYS)})")
    out = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise ValueError(f"{source}: row {i} must be an object, got {type(r).__name__}")
        method = r.get("method", r.get("model"))
        size = next((r[k] for k in _SIZE_KEYS if k in r), None)
        if method is None or size is None:
            raise ValueError(f"{source}: row {i} needs a method ('method' or 'model') and a training size "
                             f"(one of {list(_SIZE_KEYS)}); it has {sorted(r)[:8]}")
        for m in METRICS:
            got = _metric(r, m)
            if got is not None:
                out.append({"method": str(method), "size": _number(size), "metric": m,
                            "mean": _number(got[0]), "std": _number(got[1])})
    if not out:
        raise ValueError(f"{source}: no row carries a metric ({', '.join(METRICS)})")
    return LearningCurve(source=source, frame=pd.DataFrame(out).sort_values(["metric", "method", "size"],
                                                                           kind="stable").reset_index(drop=True))


def read_learning_curve(path: str | Path) -> LearningCurve:
    """A learning curve read from a JSON file (what ``htc report --learning-curve FILE`` reads).

    Parameters
    ----------
    path : str or path-like
        The JSON file (shapes as :func:`parse_learning_curve` accepts).

    Returns
    -------
    LearningCurve
        Its ``source`` is the path.

    Raises
    ------
    ValueError
        Naming the file: it cannot be read, is not JSON (with line and column), nests too deep, or holds no
        learning curve.

    Examples
    --------
    >>> import json, os, tempfile
    >>> from htc_core.htmlreport.learning import read_learning_curve
    >>> path = os.path.join(tempfile.mkdtemp(), "curve.json")
    >>> with open(path, "w") as fh:
    ...     json.dump({"rows": [{"model": "GP", "n_train": 20, "auroc": 0.64}]}, fh)
    >>> read_learning_curve(path).frame
      method  size metric  mean  std
    0     GP  20.0  auroc  0.64  0.0
    >>> with open(path, "w") as fh:
    ...     n = fh.write("{oops")
    >>> read_learning_curve(path)
    Traceback (most recent call last):
    ...
    ValueError: ...curve.json: not JSON (line 1, column 2: Expecting property name enclosed in double quotes)
    """
    p = Path(path)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"{p}: cannot read the learning-curve file ({e.strerror or e})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:   # arrays or objects nested thousands deep: no learning curve nests like that
        raise ValueError(f"{p}: nested deeper than can be read (a learning curve is a list of rows, or an object "
                         "holding one)") from None
    return parse_learning_curve(obj, source=str(p))


def learning_curve_figure(curve: LearningCurve, *, height: int = 380):
    """A computed learning curve as a figure: one panel per metric, mean ± std against the training size.

    Parameters
    ----------
    curve : LearningCurve
        The curve.
    height : int, default 380
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One line per method and metric (with std error bars); logarithmic x axes.

    Examples
    --------
    >>> from htc_core.htmlreport.learning import learning_curve_figure, parse_learning_curve
    >>> rows = [{"method": "HTC-Reduced", "size": 50, "ece": {"mean": 0.10, "std": 0.02}, "auroc": 0.70},
    ...         {"method": "HTC-Reduced", "size": 100, "ece_mean": 0.08, "ece_std": 0.01, "auroc": 0.75}]
    >>> fig = learning_curve_figure(parse_learning_curve(rows))
    >>> [a.text for a in fig.layout.annotations], len(fig.data), fig.layout.xaxis.type
    (['ECE ↓', 'AUROC ↑'], 2, 'log')
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..viz.plots import series_color, apply_layout, esc

    df = curve.frame
    metrics = [m for m in METRICS if m in set(df.metric)]
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[{"ece": "ECE ↓", "brier": "Brier ↓",
                                                                    "auroc": "AUROC ↑"}[m] for m in metrics])
    methods = list(dict.fromkeys(df.method))
    for j, m in enumerate(metrics, start=1):
        for i, name in enumerate(methods):
            s = df[(df.metric == m) & (df.method == name)]
            if s.empty:
                continue
            fig.add_trace(go.Scatter(x=s["size"], y=s["mean"], error_y=dict(type="data", array=s["std"]),
                                     mode="lines+markers", name=esc(name), legendgroup=name, showlegend=j == 1,
                                     line=dict(color=series_color(name, i)),
                                     hovertemplate=f"{esc(name)}<br>size %{{x}}<br>%{{y:.3f}}<extra></extra>"),
                          row=1, col=j)
        fig.update_xaxes(title_text="training runs", type="log", row=1, col=j)
    return apply_layout(fig, None, height, subplot_titles=True)
