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

    Made by :func:`confidence_examples`. The two tables have the columns position (the row of the inputs),
    id, dataset, model, question, answer, gold (those ``meta`` has), success, baseline, htc and change
    (htc - baseline).

    Parameters
    ----------
    baseline : str
        The baseline's name.
    htc : str
        The calibrated method's name.
    over : pandas.DataFrame
        Over-confident failures (baseline high, HTC lower, wrong), largest drop first.
    under : pandas.DataFrame
        Under-confident successes (baseline low, HTC higher, right), largest rise first.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.explain.examples import confidence_examples
    >>> meta = pd.DataFrame({"id": ["a", "b", "c", "d"], "question": ["2+2?", "3+3?", "4+4?", "5*5?"]})
    >>> ex = confidence_examples(meta, [0, 1, 0, 1], [0.9, 0.3, 0.6, 0.8], [0.2, 0.7, 0.5, 0.9],
    ...                          baseline="verbalized", htc="HTC", n=2)
    >>> ex.baseline, list(ex.over["id"]), list(ex.under["id"])
    ('verbalized', ['a', 'c'], ['b', 'd'])
    """

    baseline: str
    htc: str
    over: pd.DataFrame
    under: pd.DataFrame


def confidence_examples(meta: pd.DataFrame, labels, baseline_conf, htc_conf, *, baseline: str, htc: str,
                        n: int = 5) -> ExampleSet:
    """The ``n`` failures HTC lowered most and the ``n`` successes it raised most against ``baseline``.

    All inputs are aligned row by row; ``position`` in the result is the row. Runs without a finite
    confidence under either method are left out.

    Parameters
    ----------
    meta : pandas.DataFrame
        One row per trajectory; its columns id, dataset, model, question, answer and gold are copied when
        present (a ``TraceSet``'s ``meta``).
    labels : array-like of shape (n_runs,)
        1 success, 0 failure, NaN unlabeled.
    baseline_conf : array-like of shape (n_runs,)
        The baseline's confidences.
    htc_conf : array-like of shape (n_runs,)
        The calibrated confidences (out-of-fold ones for an honest picture).
    baseline : str
        The baseline's name.
    htc : str
        The calibrated method's name.
    n : int, default 5
        The most examples of each kind.

    Returns
    -------
    ExampleSet
        The over-confident failures and under-confident successes.

    Raises
    ------
    ValueError
        If the inputs differ in length or ``n`` is not a positive integer.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.explain.examples import confidence_examples
    >>> meta = pd.DataFrame({"id": ["a", "b", "c", "d"], "question": ["2+2?", "3+3?", "4+4?", "5*5?"]})
    >>> ex = confidence_examples(meta, [0, 1, 0, 1], [0.9, 0.3, 0.6, 0.8], [0.2, 0.7, 0.5, 0.9],
    ...                          baseline="verbalized", htc="HTC", n=1)
    >>> ex.over
       position id question  success  baseline  htc  change
    0         0  a     2+2?      0.0       0.9  0.2    -0.7
    >>> ex.under
       position id question  success  baseline  htc  change
    0         1  b     3+3?      1.0       0.3  0.7     0.4
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
    """HTC's own worst mistakes: its most confident failures and least confident successes.

    Made by :func:`worst_mistakes`. The two tables have the columns position (the row of the inputs), id,
    dataset, model, question, answer, gold (those ``meta`` has), success, confidence, error
    (``|confidence - outcome|``) and flags (the structural flags in words, when given).

    Parameters
    ----------
    method : str
        The method whose confidences were ranked.
    confident_failures : pandas.DataFrame
        Failed runs with the highest confidence, highest first.
    doubted_successes : pandas.DataFrame
        Successful runs with the lowest confidence, lowest first.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.explain.examples import worst_mistakes
    >>> meta = pd.DataFrame({"id": ["a", "b", "c", "d"], "question": ["2+2?", "3+3?", "4+4?", "5*5?"]})
    >>> m = worst_mistakes(meta, [0, 1, 0, 1], [0.9, 0.3, 0.6, 0.8], n=1)
    >>> m.method, list(m.confident_failures["id"]), list(m.doubted_successes["id"])
    ('HTC', ['a'], ['b'])
    """

    method: str
    confident_failures: pd.DataFrame
    doubted_successes: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        """Both tables in one, with a ``kind`` column ("confident failure" or "doubted success").

        Returns
        -------
        pandas.DataFrame
            The confident failures, then the doubted successes.

        Examples
        --------
        >>> import pandas as pd
        >>> from htc_core.explain.examples import worst_mistakes
        >>> meta = pd.DataFrame({"id": ["a", "b", "c", "d"]})
        >>> worst_mistakes(meta, [0, 1, 0, 1], [0.9, 0.3, 0.6, 0.8], n=1).to_frame()
           position id  success  confidence  error               kind
        0         0  a      0.0         0.9    0.9  confident failure
        1         1  b      1.0         0.3    0.7    doubted success
        """
        return pd.concat([self.confident_failures.assign(kind="confident failure"),
                          self.doubted_successes.assign(kind="doubted success")], ignore_index=True)


def worst_mistakes(meta: pd.DataFrame, labels, confidence, *, method: str = "HTC", flags=None,
                   n: int = 10) -> Mistakes:
    """The ``n`` most confident failures and ``n`` least confident successes under ``confidence``.

    Use out-of-fold confidences (an evaluation's ``oof``): in-sample ones flatter the model. Runs without a
    finite confidence are left out.

    Parameters
    ----------
    meta : pandas.DataFrame
        One row per trajectory; its columns id, dataset, model, question, answer and gold are copied when
        present (a ``TraceSet``'s ``meta``).
    labels : array-like of shape (n_runs,)
        1 success, 0 failure, NaN unlabeled.
    confidence : array-like of shape (n_runs,)
        The confidences to rank.
    method : str, default "HTC"
        The method's name, kept in the result.
    flags : StructuralFlags or None, default None
        The structural flags of the same trajectories (:func:`~htc_core.explain.flags.structural_flags`);
        when given, a ``flags`` column lists them in words.
    n : int, default 10
        The most runs of each kind.

    Returns
    -------
    Mistakes
        The confident failures and the doubted successes.

    Raises
    ------
    ValueError
        If the inputs differ in length or ``n`` is not a positive integer.

    Examples
    --------
    >>> import pandas as pd
    >>> from htc_core.explain.examples import worst_mistakes
    >>> meta = pd.DataFrame({"id": ["a", "b", "c", "d"], "question": ["2+2?", "3+3?", "4+4?", "5*5?"]})
    >>> m = worst_mistakes(meta, [0, 1, 0, 1], [0.9, 0.3, 0.6, 0.8], n=1)
    >>> m.confident_failures
       position id question  success  confidence  error
    0         0  a     2+2?      0.0         0.9    0.9
    >>> m.doubted_successes
       position id question  success  confidence  error
    0         1  b     3+3?      1.0         0.3    0.7
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
