"""The result of :func:`htc_core.calibration.evaluation.evaluate`: a typed object the pages, the CLI and the
report only read (summary table, per-fold values, out-of-fold predictions, notes)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["EvaluationResult", "METRICS", "LOWER_IS_BETTER", "ECE_DEFINITION", "result_to_bytes", "result_from_bytes"]

METRICS = ("ece", "brier", "auroc")
# metrics where a smaller value is better (AUROC: larger is better)
LOWER_IS_BETTER = {"ece": True, "brier": True, "auroc": False}
# the one ECE every table, legend and page shows for an evaluation
ECE_DEFINITION = ("ECE: 10 equal-width bins on the pooled out-of-fold predictions of each repeat, "
                  "mean over repeats")


@dataclass
class EvaluationResult:
    """Nested-CV evaluation of several methods on the same folds (DESIGN.md section 4), from :func:`evaluate`.

    Parameters
    ----------
    n : int
        Trajectories evaluated.
    positive_rate : float
        Share of successes.
    seeds : list of int
        The repeats' seeds.
    n_splits : int
        Outer folds.
    profile : str
    top_k : int
        The features' definitions.
    methods : list of str
        The methods, in table order.
    summary : dict
        Method -> metric -> ``{"mean", "std"}`` over repeats.
    per_fold : DataFrame
        Method, seed, fold, n_test, ece, brier, auroc, n_features, alpha, temperature.
    oof_all : dict
        Method -> out-of-fold predictions of shape (n_repeats, n).
    ids : ndarray
    labels : ndarray
    folds : ndarray of shape (n_repeats, n)
        The outer fold of each trajectory.
    selected_counts, weights : dict
        Per feature-selecting method: how often each feature was selected, and the weights of every fit.
    notes : list of str
    skipped : dict
        Method -> why it did not run.
    n_by_method : dict
        Method -> trajectories it was evaluated on (default ``n``).
    fold_models : dict
        Method -> the fitted models of the first repeat, one per outer fold (the model that produced each run's
        out-of-fold confidence, which the dashboard explains).

    Examples
    --------
    >>> import htc_core as htc
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3, methods=["HTC-Reduced"])
    >>> result.n, result.oof_all["HTC-Reduced"].shape
    (250, (1, 250))
    """

    n: int
    positive_rate: float
    seeds: list[int]
    n_splits: int
    profile: str
    top_k: int
    methods: list[str]
    summary: dict                   # method -> metric -> {"mean", "std"}
    per_fold: pd.DataFrame          # method, seed, fold, n_test, ece, brier, auroc, n_features, alpha, temperature
    oof_all: dict                   # method -> [n_repeats, n] OOF predictions
    ids: np.ndarray
    labels: np.ndarray
    folds: np.ndarray               # [n_repeats, n] outer fold of each trajectory
    selected_counts: dict = field(default_factory=dict)   # feature-selecting method -> Series(feature -> times selected)
    weights: dict = field(default_factory=dict)           # feature-selecting method -> [n_fits, d] weights (seed, fold order)
    notes: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)           # method -> reason
    n_by_method: dict = field(default_factory=dict)       # method -> trajectories it was evaluated on (default n)
    # method -> the first repeat's fitted model of each outer fold (index = fold); the model that produced
    # ``oof[method][i]`` is ``fold_model(method, i)`` (HTC-Full / HTC-Reduced)
    fold_models: dict = field(default_factory=dict)

    def fold_model(self, method: str, row: int):
        """The fitted model whose prediction is ``oof[method][row]``.

        That is the first repeat's model of the outer fold that held ``row`` out (the model the dashboard
        explains for that run).

        Parameters
        ----------
        method : str
            A method of the evaluation.
        row : int
            A row of the evaluation (0 to ``n - 1``); anything else raises ``ValueError``.

        Returns
        -------
        HTCCalibrator or None
            The model, or None when the evaluation kept none for ``method`` (the baselines).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> result.fold_model("HTC-Reduced", 0)
        HTCCalibrator(variant='reduced', alpha_=1, selected=...)
        >>> print(result.fold_model("GlobalTrace-TP", 0))
        None
        """
        models = self.fold_models.get(method)
        if not models:
            return None
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not 0 <= row < self.n:
            raise ValueError(f"row must be a row of the evaluation (0..{self.n - 1}), got {row!r}")
        return models[int(self.folds[0, row])]

    def n_of(self, method: str) -> int:
        """How many trajectories a method was evaluated on.

        Parameters
        ----------
        method : str
            A method of the evaluation (else ``ValueError``).

        Returns
        -------
        int
            ``n``, or fewer for a signal only some runs carry (e.g. Verbalized).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> result.n_of("HTC-Reduced")
        250
        """
        if method not in self.methods:
            raise ValueError(f"method {method!r} is not in this evaluation; methods: {self.methods}")
        return int(self.n_by_method.get(method, self.n))

    def best(self, metric: str, methods=None) -> str | None:
        """The method with the best mean value of a metric: lowest ECE or Brier, highest AUROC.

        Parameters
        ----------
        metric : {"ece", "brier", "auroc"}
            The metric.
        methods : sequence of str, optional
            The candidates (default: the methods evaluated on all ``n`` trajectories, since a subset's
            numbers are not comparable).

        Returns
        -------
        str or None
            The best method (ties go to the first in table order); None when no method has a finite value.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> result.best("ece")
        'HTC-Reduced'
        >>> result.best("ece", ["GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        'GlobalTrace-TP+Platt'
        """
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        if methods is None:
            methods = [m for m in self.methods if self.n_of(m) == self.n] or self.methods
        pool = [m for m in methods if m in self.summary]
        vals = [(self.summary[m][metric]["mean"], m) for m in pool if np.isfinite(self.summary[m][metric]["mean"])]
        if not vals:
            return None
        sign = 1.0 if LOWER_IS_BETTER[metric] else -1.0
        return min(vals, key=lambda t: (sign * t[0], pool.index(t[1])))[1]

    def baselines(self) -> list[str]:
        """The methods that are not HTC (single-signal baselines, raw or rescaled), in table order.

        Returns
        -------
        list of str
            The baselines' names.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> result.baselines()
        ['GlobalTrace-TP', 'GlobalTrace-TP+Platt']
        """
        return [m for m in self.methods if not m.startswith("HTC")]

    def strongest_baseline(self, metric: str = "brier") -> str | None:
        """The baseline with the best mean value of a metric, among those evaluated on all trajectories.

        A subset-only signal such as Verbalized is not comparable, so it competes only when no other baseline
        ran.

        Parameters
        ----------
        metric : {"ece", "brier", "auroc"}, default="brier"
            The metric (Brier: calibration and ranking in one number).

        Returns
        -------
        str or None
            The baseline, or None when there is none with a finite value.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> result.strongest_baseline()
        'GlobalTrace-TP+Platt'
        >>> result.strongest_baseline("auroc")
        'GlobalTrace-TP'
        """
        full = [m for m in self.baselines() if self.n_of(m) == self.n]
        return self.best(metric, full or self.baselines())

    @property
    def oof(self) -> dict:
        """Out-of-fold predictions of the first repeat, per method.

        Returns
        -------
        dict
            Method -> ndarray of shape (n,): each run's confidence from the model that did not see it.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> result.oof["HTC-Reduced"].shape
        (250,)
        """
        return {m: v[0] for m, v in self.oof_all.items()}

    def oof_frame(self) -> pd.DataFrame:
        """First-repeat out-of-fold predictions, one row per trajectory.

        Returns
        -------
        DataFrame
            Columns ``id``, ``success``, ``fold`` and one per method.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> result.oof_frame().columns.tolist()
        ['id', 'success', 'fold', 'HTC-Reduced', 'GlobalTrace-TP', 'GlobalTrace-TP+Platt']
        """
        df = pd.DataFrame({"id": self.ids, "success": self.labels, "fold": self.folds[0]})
        for m, v in self.oof_all.items():
            df[m] = v[0]
        return df

    def to_dict(self) -> dict:
        """The summary as a JSON object (what ``htc evaluate --json`` prints).

        Returns
        -------
        dict
            ``n``, ``positive_rate``, ``methods`` (method -> metric -> ``{"mean", "std"}`` and ``n``; non-finite
            values as None) and ``ece`` (the ECE's definition).

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> d = result.to_dict()
        >>> d["n"], sorted(d["methods"]["HTC-Reduced"])
        (250, ['auroc', 'brier', 'ece', 'n', 'n_features'])
        >>> round(d["methods"]["HTC-Reduced"]["ece"]["mean"], 3)
        0.039
        """
        def num(x):
            return None if x is None or not np.isfinite(x) else float(x)

        methods = {m: {k: {"mean": num(v["mean"]), "std": num(v["std"])} for k, v in self.summary[m].items()}
                   for m in self.methods}
        for m in self.methods:
            methods[m]["n"] = self.n_of(m)
        return {"n": int(self.n), "positive_rate": float(self.positive_rate), "methods": methods,
                "ece": ECE_DEFINITION}

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as JSON text.

        Parameters
        ----------
        **kwargs
            Passed to :func:`json.dumps` (e.g. ``indent=1``).

        Returns
        -------
        str
            The JSON text.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> result.to_json()[:30]
        '{"n": 250, "positive_rate": 0.'
        """
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """Plain-text table: methods x ECE, Brier, AUROC (mean +- std), features kept, runs evaluated.

        Returns
        -------
        str
            A header line, the table (``*`` marks the best value of a column) and the notes.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> result = htc.evaluate(ts, seeds=1, n_splits=3, alphas=(1.0,), inner_folds=3,
        ...                       methods=["HTC-Reduced", "GlobalTrace-TP", "GlobalTrace-TP+Platt"])
        >>> print(result.table())
        n = 250, success rate = 0.480, 3-fold CV x 1 repeat(s) (seeds 42); ...
        method                           ECE           Brier           AUROC    features    n
        --------------------  --------------  --------------  --------------  ----------  ---
        HTC-Reduced           *0.039 ± 0.000  *0.062 ± 0.000  *0.971 ± 0.000  10.0 ± 2.6  250
        GlobalTrace-TP         0.390 ± 0.000   0.348 ± 0.000   0.958 ± 0.000           1  250
        GlobalTrace-TP+Platt   0.045 ± 0.000   0.071 ± 0.000   0.956 ± 0.000           1  250
        """
        rows = [("method", "ECE", "Brier", "AUROC", "features", "n")]
        best = {k: self.best(k) for k in METRICS}
        for m in self.methods:
            s = self.summary[m]
            cells = [m]
            for k in METRICS:
                cells.append(f"{'*' if best[k] == m else ''}{s[k]['mean']:.3f} ± {s[k]['std']:.3f}")
            nf = s.get("n_features")
            cells.append(f"{nf['mean']:.1f} ± {nf['std']:.1f}" if nf else "1")
            cells.append(str(self.n_of(m)))
            rows.append(tuple(cells))
        widths = [max(len(r[i]) for r in rows) for i in range(6)]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        head = (f"n = {self.n}, success rate = {self.positive_rate:.3f}, {self.n_splits}-fold CV x "
                f"{len(self.seeds)} repeat(s) (seeds {', '.join(map(str, self.seeds))}); "
                "metrics on pooled out-of-fold predictions, mean ± std over repeats; "
                "ECE with 10 equal-width bins; * = best value of the column among the methods evaluated on all n; n = trajectories evaluated")
        out = [head, *lines]
        out += [f"note: {t}" for t in self.notes]
        return "\n".join(out)


# ------------------------------------------------------------ a byte form (never pickle) for persistent caches
_BYTES_VERSION = 2   # 2: with the fold models


def _series_dict(d: dict) -> dict:
    return {m: {"index": [str(i) for i in v.index], "values": [int(x) for x in v.to_numpy()]} for m, v in d.items()}


def result_to_bytes(res: EvaluationResult) -> bytes:
    """An evaluation result as bytes, for persistent caches: one ``.npz``, never pickle.

    Arrays are stored as plain numeric or str arrays, the rest as one JSON string (the fold models as their
    model files); read it back with :func:`result_from_bytes`. Loading never executes code.

    Parameters
    ----------
    res : EvaluationResult
        The result.

    Returns
    -------
    bytes
        The ``.npz`` file's content.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.results import result_from_bytes, result_to_bytes
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> result = htc.evaluate(ts, seeds=1, n_splits=3, methods=["GlobalTrace-TP"])
    >>> data = result_to_bytes(result)
    >>> data[:2], result_from_bytes(data).summary == result.summary
    (b'PK', True)
    """
    meta = {"version": _BYTES_VERSION, "n": int(res.n), "positive_rate": float(res.positive_rate),
            "seeds": [int(s) for s in res.seeds], "n_splits": int(res.n_splits), "profile": res.profile,
            "top_k": int(res.top_k), "methods": list(res.methods), "summary": res.summary,
            "per_fold": json.loads(res.per_fold.to_json(orient="split", index=False)),
            "selected_counts": _series_dict(res.selected_counts), "notes": list(res.notes),
            "skipped": dict(res.skipped), "n_by_method": {k: int(v) for k, v in res.n_by_method.items()},
            "weights": list(res.weights),
            "fold_models": {m: [f.to_dict() for f in fs] for m, fs in res.fold_models.items()}}
    arrays = {"meta": np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
              "ids": np.asarray([str(i) for i in res.ids], dtype=str), "labels": np.asarray(res.labels, dtype=float),
              "folds": np.asarray(res.folds, dtype=np.int64)}
    for i, m in enumerate(res.methods):
        arrays[f"oof_{i}"] = np.asarray(res.oof_all[m], dtype=np.float64)
    for i, m in enumerate(meta["weights"]):
        arrays[f"weights_{i}"] = np.asarray(res.weights[m], dtype=np.float64)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _fold_models(obj: dict) -> dict:
    from .calibrators import HTCCalibrator

    return {m: [HTCCalibrator.from_dict(d, source=f"{m} fold {k}") for k, d in enumerate(ds)] for m, ds in obj.items()}


def result_from_bytes(data: bytes) -> EvaluationResult:
    """The :class:`EvaluationResult` written by :func:`result_to_bytes`.

    Parameters
    ----------
    data : bytes
        What :func:`result_to_bytes` returned.

    Returns
    -------
    EvaluationResult
        The result; bytes that are not one raise a ValueError.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.calibration.results import result_from_bytes, result_to_bytes
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> result = htc.evaluate(ts, seeds=1, n_splits=3, methods=["GlobalTrace-TP"])
    >>> again = result_from_bytes(result_to_bytes(result))
    >>> again.methods, bool(np.array_equal(again.oof["GlobalTrace-TP"], result.oof["GlobalTrace-TP"]))
    (['GlobalTrace-TP'], True)
    >>> result_from_bytes(b"not an npz")
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            meta = json.loads(z["meta"].tobytes().decode("utf-8"))
            if meta.get("version") != _BYTES_VERSION:
                raise ValueError(f"unsupported result version {meta.get('version')!r}")
            pf = meta["per_fold"]
            per_fold = pd.DataFrame(pf["data"], columns=pf["columns"]).astype(
                {c: float for c in ("ece", "brier", "auroc", "n_features", "alpha", "temperature") if c in pf["columns"]})
            return EvaluationResult(
                n=meta["n"], positive_rate=meta["positive_rate"], seeds=meta["seeds"], n_splits=meta["n_splits"],
                profile=meta["profile"], top_k=meta["top_k"], methods=meta["methods"], summary=meta["summary"],
                per_fold=per_fold, oof_all={m: z[f"oof_{i}"] for i, m in enumerate(meta["methods"])},
                ids=z["ids"].astype(object), labels=z["labels"], folds=z["folds"],
                selected_counts={m: pd.Series(v["values"], index=v["index"], name="times_selected")
                                 for m, v in meta["selected_counts"].items()},
                weights={m: z[f"weights_{i}"] for i, m in enumerate(meta["weights"])}, notes=meta["notes"],
                skipped=meta["skipped"], n_by_method=meta["n_by_method"],
                fold_models=_fold_models(meta.get("fold_models", {})))
    except (KeyError, OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"not a stored evaluation result: {e}") from None
