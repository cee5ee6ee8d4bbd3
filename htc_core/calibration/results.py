"""The result of :func:`htc_core.calibration.evaluation.evaluate`: a typed object the pages, the CLI and the
report only read (summary table, per-fold values, out-of-fold predictions, notes)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["EvaluationResult", "METRICS"]

METRICS = ("ece", "brier", "auroc")


@dataclass
class EvaluationResult:
    """Nested-CV evaluation of several methods on the same folds (DESIGN.md section 4)."""

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

    @property
    def oof(self) -> dict:
        """Out-of-fold predictions of the first repeat, per method."""
        return {m: v[0] for m, v in self.oof_all.items()}

    def oof_frame(self) -> pd.DataFrame:
        """First-repeat OOF predictions, one row per trajectory."""
        df = pd.DataFrame({"id": self.ids, "success": self.labels, "fold": self.folds[0]})
        for m, v in self.oof_all.items():
            df[m] = v[0]
        return df

    def to_dict(self) -> dict:
        def num(x):
            return None if x is None or not np.isfinite(x) else float(x)

        methods = {m: {k: {"mean": num(v["mean"]), "std": num(v["std"])} for k, v in self.summary[m].items()}
                   for m in self.methods}
        return {"n": int(self.n), "positive_rate": float(self.positive_rate), "methods": methods}

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """Plain-text table: methods x ECE, Brier, AUROC (mean +- std), features kept."""
        rows = [("method", "ECE", "Brier", "AUROC", "features")]
        for m in self.methods:
            s = self.summary[m]
            cells = [m]
            for k in METRICS:
                cells.append(f"{s[k]['mean']:.3f} ± {s[k]['std']:.3f}")
            nf = s.get("n_features")
            cells.append(f"{nf['mean']:.1f} ± {nf['std']:.1f}" if nf else "1")
            rows.append(tuple(cells))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        head = (f"n = {self.n}, success rate = {self.positive_rate:.3f}, {self.n_splits}-fold CV x "
                f"{len(self.seeds)} repeat(s) (seeds {', '.join(map(str, self.seeds))}); "
                "metrics on pooled out-of-fold predictions, mean ± std over repeats")
        out = [head, *lines]
        out += [f"note: {t}" for t in self.notes]
        return "\n".join(out)
