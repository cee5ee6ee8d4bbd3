"""The report's result objects computed from a TraceSet (what ``htc report`` runs)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .build import ReportData

__all__ = ["compute_report"]

GROUP_COLUMNS = ("dataset", "model", "framework")


def _say(progress, msg: str) -> None:
    """``progress(msg)`` when a callback is given."""
    if progress is not None:
        progress(msg)


def compute_report(ts, *, seeds: int | Sequence[int] = 3, by: str = "dataset", ablation: bool = False,
                   learning_curve=None, profile: str | None = None, top_k: int | None = None,
                   sources: Sequence[str] = (), n_examples: int = 10, title: str = "HTC calibration report",
                   progress: Callable[[str], None] | None = None) -> ReportData:
    """The report's results computed from runs: what ``htc report`` runs.

    The nested-CV evaluation, HTC-Reduced and HTC-Full fitted on all labeled runs, the worst mistakes (each with
    its strongest reason), and when ``ts`` holds at least 2 groups of ``by`` the transfer matrix and the GAC
    leave-one-out; the ablation when asked for. Every part not computed says why in ``skipped``.

    Parameters
    ----------
    ts : TraceSet
        The runs (unlabeled ones are left out, with a note).
    seeds : int or sequence of int, default 3
        Repeats of the evaluations (a number: seeds 42, 43, ...).
    by : {"dataset", "model", "framework"}, default "dataset"
        The grouping column of the transfer matrix and the leave-one-out.
    ablation : bool, default False
        Also the feature-family ablation (15 more evaluations).
    learning_curve : LearningCurve or None, default None
        A computed learning curve (:func:`~htc_core.htmlreport.learning.read_learning_curve`) to show.
    profile : str or None, default None
        The token-confidence profile (None: the evaluation's default).
    top_k : int or None, default None
        Alternatives per token (None: the evaluation's default).
    sources : sequence of str, default ()
        The files the runs came from (shown in the report).
    n_examples : int, default 10
        Confident failures and doubted successes shown.
    title : str, default "HTC calibration report"
        The page's title.
    progress : callable or None, default None
        ``progress(message)`` before each stage.

    Returns
    -------
    ReportData
        The results, for :func:`~htc_core.htmlreport.build.build_report`.

    Raises
    ------
    ValueError
        If ``by`` or ``ablation`` is invalid.
    EvaluationError
        If the labeled runs cannot be evaluated.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.htmlreport.compute import compute_report
    >>> ts, _ = load(["sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 16 runs, one dataset
    >>> data = compute_report(ts, seeds=1, n_examples=2, progress=print)
    evaluating 16 labeled runs (nested CV)
    >>> list(data.models), len(data.mistakes.confident_failures)
    (['HTC-Reduced', 'HTC-Full'], 2)
    >>> data.skipped["transfer"]
    'the runs hold 1 dataset(s); transfer and leave-one-out need at least 2'
    """
    from ..calibration import HTCCalibrator, evaluate
    from ..calibration.evaluation import EvaluationError
    from ..experiments.gac import gac_leave_one_out
    from ..experiments.grouping import GROUP_KEYS
    from ..experiments.transfer import transfer
    from ..explain import worst_mistakes
    from ..features import extract

    if by not in GROUP_KEYS:
        raise ValueError(f"by must be one of {tuple(GROUP_KEYS)}, got {by!r}")
    if not isinstance(ablation, bool):
        raise ValueError(f"ablation must be True or False, got {ablation!r}")
    n_all = len(ts)
    ts = ts.labeled()
    notes = [] if len(ts) == n_all else [f"{n_all - len(ts)} unlabeled run(s) left out (calibration needs outcomes)"]
    _say(progress, f"evaluating {len(ts)} labeled runs (nested CV)")
    ev = evaluate(ts, seeds=seeds, profile=profile, top_k=top_k)
    fm = extract(ts, profile=ev.profile, top_k=ev.top_k)
    models = {}
    for v in ("reduced", "full"):
        models[f"HTC-{v.capitalize()}"] = HTCCalibrator(v).fit(fm, ts.labels, meta=ts.meta)
    groups = {c: {str(k): int(n) for k, n in ts.meta[c].astype(str).value_counts(sort=False).sort_index().items()}
              for c in GROUP_COLUMNS if c in ts.meta.columns and ts.meta[c].notna().any()}
    skipped: dict = {}
    tr = gac = abl = None
    n_groups = len(groups.get(by, {}))
    if n_groups >= 2:
        _say(progress, f"transfer matrix across {n_groups} {by}s")
        try:
            tr = transfer(ts, by=by, seeds=seeds, profile=ev.profile, top_k=ev.top_k)
            _say(progress, f"GAC leave one {by} out")
            gac = gac_leave_one_out(ts, by=by, seeds=seeds)
        except EvaluationError as e:
            skipped["transfer"] = skipped["gac"] = str(e)
    else:
        skipped["transfer"] = skipped["gac"] = (f"the runs hold {n_groups} {by}(s); transfer and leave-one-out need "
                                                "at least 2")
    if ablation:
        from ..experiments.ablation import ablation as run_ablation

        _say(progress, "feature-family ablation (15 combinations)")
        abl = run_ablation(ts, seeds=seeds, profile=ev.profile, top_k=ev.top_k)
    else:
        skipped["ablation"] = "not asked for (htc report --ablation; it runs 15 more evaluations)"
    if learning_curve is None:
        skipped["learning"] = "no computed learning curve given (htc report --learning-curve FILE.json)"
    method = "HTC-Reduced" if "HTC-Reduced" in ev.oof else ev.methods[0]
    mistakes = worst_mistakes(ts.meta, ts.labels, np.asarray(ev.oof[method]), method=method, n=n_examples)
    _add_reasons(mistakes, ev, method, fm, ts)
    return ReportData(evaluation=ev, models=models, title=title, sources=list(sources), groups=groups, transfer=tr,
                      gac=gac, ablation=abl, learning_curve=learning_curve, mistakes=mistakes, skipped=skipped,
                      notes=notes)


def _add_reasons(mistakes, ev, method: str, fm, ts) -> None:
    """Each example's strongest reason, from the fold model that gave its out-of-fold confidence (the
    dashboard's inspector explains the same number with the same model)."""
    from ..explain import explain_trajectory

    if not ev.fold_models.get(method):
        return
    for frame in (mistakes.confident_failures, mistakes.doubted_successes):
        reasons = []
        for p in frame["position"]:
            e = explain_trajectory(ev.fold_model(method, int(p)), fm, int(p), labels=ts.labels,
                                   groups=ts.meta["dataset"], n_reasons=1)
            reasons.append(e.reasons[0] if e.reasons else "")
        frame["reason"] = reasons
