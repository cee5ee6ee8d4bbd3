"""Where calibration changed the verdict of a single-signal baseline, like the paper's qualitative examples,
and where HTC itself was most wrong (:func:`worst_mistakes`, on out-of-fold confidences)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["ExampleSet", "confidence_examples", "Mistakes", "worst_mistakes"]


@dataclass
class ExampleSet:
    """Where calibration changed the verdict, like the paper's qualitative examples.

    ``over``: over-confident failures (baseline high, HTC low, wrong), largest
    drop first. ``under``: under-confident successes (baseline low, HTC high,
    right), largest rise first. Columns: position, id, dataset, model,
    question, answer, gold, success, baseline, htc, change (htc - baseline).
    """

    baseline: str
    htc: str
    over: pd.DataFrame
    under: pd.DataFrame


def confidence_examples(meta: pd.DataFrame, labels, baseline_conf, htc_conf, *, baseline: str, htc: str,
                        n: int = 5) -> ExampleSet:
    """The ``n`` failures HTC lowered most and the ``n`` successes it raised most against ``baseline``.

    ``meta`` (one row per trajectory), ``labels`` (1/0/NaN) and the two
    confidences are aligned row by row; ``position`` in the result is the row.
    """
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    b = np.asarray(baseline_conf, dtype=np.float64).reshape(-1)
    h = np.asarray(htc_conf, dtype=np.float64).reshape(-1)
    if not (len(y) == len(b) == len(h) == len(meta)):
        raise ValueError(f"meta, labels, baseline_conf and htc_conf must have one entry per trajectory, got "
                         f"{len(meta)}, {len(y)}, {len(b)}, {len(h)}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    change = h - b
    cols = [c for c in ("id", "dataset", "model", "question", "answer", "gold") if c in meta.columns]
    base = meta[cols].reset_index(drop=True).copy()
    base.insert(0, "position", np.arange(len(meta)))
    base["success"] = y
    base["baseline"] = b
    base["htc"] = h
    base["change"] = change
    ok = np.isfinite(b) & np.isfinite(h)
    over = base[ok & (y == 0) & (change < 0)].sort_values("change", kind="stable").head(n)
    under = base[ok & (y == 1) & (change > 0)].sort_values("change", ascending=False, kind="stable").head(n)
    return ExampleSet(baseline=baseline, htc=htc, over=over.reset_index(drop=True), under=under.reset_index(drop=True))


@dataclass
class Mistakes:
    """HTC's own worst mistakes: ``confident_failures`` (failed runs with the highest confidence, highest first)
    and ``doubted_successes`` (successful runs with the lowest confidence, lowest first). Columns: position, id,
    dataset, model, question, answer, gold, success, confidence, error (|confidence - outcome|), flags (the
    structural flags in words, when given)."""

    method: str
    confident_failures: pd.DataFrame
    doubted_successes: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        return pd.concat([self.confident_failures.assign(kind="confident failure"),
                          self.doubted_successes.assign(kind="doubted success")], ignore_index=True)


def worst_mistakes(meta: pd.DataFrame, labels, confidence, *, method: str = "HTC", flags=None,
                   n: int = 10) -> Mistakes:
    """The ``n`` most confident failures and ``n`` least confident successes under ``confidence``.

    Use out-of-fold confidences (an evaluation's ``oof``): in-sample ones flatter the model. ``flags`` is an
    optional :class:`~htc_core.explain.flags.StructuralFlags` of the same trajectories.
    """
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    c = np.asarray(confidence, dtype=np.float64).reshape(-1)
    if not (len(y) == len(c) == len(meta)):
        raise ValueError(f"meta, labels and confidence must have one entry per trajectory, got {len(meta)}, "
                         f"{len(y)}, {len(c)}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    cols = [k for k in ("id", "dataset", "model", "question", "answer", "gold") if k in meta.columns]
    base = meta[cols].reset_index(drop=True).copy()
    base.insert(0, "position", np.arange(len(meta)))
    base["success"] = y
    base["confidence"] = c
    base["error"] = np.abs(c - y)
    if flags is not None:
        base["flags"] = [", ".join(flags.of(i)) for i in range(len(meta))]
    ok = np.isfinite(c)
    fails = base[ok & (y == 0)].sort_values("confidence", ascending=False, kind="stable").head(n)
    succ = base[ok & (y == 1)].sort_values("confidence", kind="stable").head(n)
    return Mistakes(method=method, confident_failures=fails.reset_index(drop=True),
                    doubted_successes=succ.reset_index(drop=True))
