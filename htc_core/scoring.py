"""Scoring trace sets with a fitted model: the table ``htc score`` writes, one chunk at a time.

``score_frame(model, ts)`` is a library function (the scale-out engines of ``htc_core.engines`` call it): id,
calibrated confidence and the raw baseline confidences of each trajectory. ``score_columns`` gives the same
columns as numpy arrays without pandas (what ``htc score`` writes).
"""

from __future__ import annotations


def score_frame(model, ts, *, verbalized_column: bool | None = None, explain: bool = False,
                set_level: bool = False):
    """id, calibrated confidence and the raw baseline confidences of ``ts`` (one chunk): what ``htc score`` writes.

    A General Agent Calibrator scores each run with the sub-model of its kind (column ``gac_model``). With
    ``set_level=True`` (``htc score --as-set``), one whose ``transfer`` holds a ``set_level`` step scores a chunk
    of at least its ``min_runs`` runs as a set, and writes ``confidence_per_run``: each run scored on its own, as
    a Monitor scores it (equal to ``confidence`` in a smaller chunk). Any other model scores the 48 features extracted in its own token-confidence profile and top-k.

    Parameters
    ----------
    model : HTCCalibrator, HTCGAM or GeneralCalibrator
        A fitted model (for example from :func:`htc_core.load_model`; a scorer of
        :func:`htc_core.calibration.models.load_scorer` too, without ``explain``).
    ts : TraceSet
        The runs to score.
    verbalized_column : bool, optional
        None writes the ``verbalized`` column when some trajectory has a stated confidence, True always,
        False never.
    explain : bool, default False
        Add the columns of :func:`explained_columns` (structural flags, the three strongest reasons, the
        features).
    set_level : bool, default False
        True: a GAC with a set-level step scores the chunk as a set (module text); False: every run on its own
        (no ``confidence_per_run`` column), the number the dashboard shows.

    Returns
    -------
    DataFrame
        One row per trajectory: ``id``, ``confidence``, (``gac_model``, ``confidence_per_run``), then one column
        per baseline
        (``last_step_tp``, ``global_trace_tp``, ``bottom10``, ``lowest_group``, ``tail``, ``verbalized``).

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.scoring import score_frame
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> table = score_frame(htc.load_model("gac"), ts)
    >>> list(table.columns)
    ['id', 'confidence', 'gac_model', 'last_step_tp', 'global_trace_tp', 'bottom10', 'lowest_group', 'tail']
    >>> table.loc[0, "id"], round(float(table.loc[0, "confidence"]), 3), table.loc[0, "gac_model"]
    ('units-0000-Gemma3-270M-greedy', 0.418, 'with_alternatives')
    """
    import pandas as pd

    df = pd.DataFrame(score_columns(model, ts, verbalized_column=verbalized_column, set_level=set_level))
    if explain:
        df = pd.concat([df, explained_columns(model, ts)], axis=1)
    return df


def score_columns(model, ts, *, verbalized_column: bool | None = None, set_level: bool = False) -> dict:
    """The columns of :func:`score_frame` (without ``explain``) as numpy arrays: numpy only, no pandas.

    What ``htc score`` writes (with :meth:`~htc_core.tablewriter.TableWriter.write_columns`): with a model of
    :func:`htc_core.calibration.models.load_scorer`, scoring imports neither pandas, scikit-learn nor scipy.

    Parameters
    ----------
    model : LinearScorer, GACScorer, GAMScorer, HTCCalibrator, HTCGAM or GeneralCalibrator
        A fitted model (:func:`htc_core.calibration.models.load_scorer` or :func:`htc_core.load_model`).
    ts : TraceSet
        The runs to score.
    verbalized_column : bool, optional
        As in :func:`score_frame`.
    set_level : bool, default False
        As in :func:`score_frame`.

    Returns
    -------
    dict of str to ndarray
        The columns in :func:`score_frame`'s order: ``id`` (object), ``confidence``, (``gac_model``,
        ``confidence_per_run``), then the baselines (float64).

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.models import load_scorer
    >>> from htc_core.scoring import score_columns
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> cols = score_columns(load_scorer("gac"), ts)
    >>> list(cols)
    ['id', 'confidence', 'gac_model', 'last_step_tp', 'global_trace_tp', 'bottom10', 'lowest_group', 'tail']
    >>> round(float(cols["confidence"][0]), 3)
    0.418
    """
    import numpy as np

    from .calibration.baselines import BASELINE_COLUMNS, baseline_arrays
    from .calibration.linear_scoring import GACScoring
    from .features import extract

    cols = {"id": np.asarray(ts.ids, dtype=object)}
    # ValueError: scores that would not be finite, never written as NaN
    if isinstance(model, GACScoring):       # a GeneralCalibrator or a GACScorer
        profile, top_k = "paper", 5
        p, per_run = model.confidences_traces(ts, set_level=set_level)
        cols["confidence"], cols["gac_model"] = p, model.kinds(ts)
        if set_level and (model.transfer or {}).get("set_level"):
            cols["confidence_per_run"] = per_run      # every chunk, so that chunks share their columns
    else:
        # the features of the model's own token-confidence profile and top-k (recorded in the model file)
        profile, top_k = model.profile_, model.top_k_
        fm = extract(ts, profile=profile, top_k=top_k)
        cols["confidence"] = np.ascontiguousarray(model.predict_proba(fm)[:, 1])
    base = baseline_arrays(ts, profile=profile, top_k=top_k)
    if verbalized_column and "Verbalized" not in base:
        base["Verbalized"] = np.full(ts.n_trajectories, np.nan)
    for col, v in base.items():
        if col != "Verbalized" or verbalized_column is not False:
            cols[BASELINE_COLUMNS[col]] = v
    return cols


def _scorer_names(model, ts):
    """Per run, the model that scored it in words, and (models, index of each run's model) for the reasons."""
    import numpy as np

    from .calibration.linear_scoring import GACScoring

    if isinstance(model, GACScoring):
        kinds = np.asarray(model.kinds(ts), dtype=object)
        names = sorted(k for k, m in model.models.items() if m is not None)
        scorer = [f"{model.name.upper()} ({k.replace('_', ' ')} model, zero-shot)" for k in kinds]
        return scorer, [model.models[k] for k in names], np.array([names.index(str(k)) for k in kinds])
    name = "HTC-GAM" if model.variant == "gam" else f"HTC-{str(model.variant).capitalize()}"
    return [f"{name} (model file)"] * ts.n_trajectories, [model], np.zeros(ts.n_trajectories, dtype=np.int64)


def out_of_fold(model, ts):
    """The out-of-fold confidence of every labeled run of ``ts`` under a model of ``model``'s kind.

    HTC-Full or HTC-Reduced, one cross-validated repeat on these runs' labels: the honest number when the runs
    are the ones a model would be fitted on (a model scoring its own training runs is optimistic).

    Parameters
    ----------
    model : HTCCalibrator
        A fitted HTC-Full or HTC-Reduced calibrator (its variant, profile and top-k are used, not its weights).
    ts : TraceSet
        The runs.

    Returns
    -------
    ndarray of float64 of shape (n_trajectories,) or None
        The out-of-fold confidences, NaN for unlabeled runs; None when the labels cannot be evaluated (for
        example one class only) or the model is not an ``HTCCalibrator``.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.scoring import out_of_fold
    >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    >>> model = htc.HTCCalibrator(variant="reduced").fit_traces(ts)
    >>> oof = out_of_fold(model, ts)
    >>> oof.shape, bool(np.isfinite(oof).all())
    ((250,), True)
    >>> out_of_fold(htc.load_model("gac"), ts) is None      # a GAC is not refitted
    True
    """
    import numpy as np

    from .calibration.calibrators import HTCCalibrator
    from .calibration.evaluation import evaluate, label_problem
    from .features import extract

    if type(model) is not HTCCalibrator or label_problem(ts.labels) is not None:
        return None
    lab = np.flatnonzero(np.isfinite(ts.labels))
    fm = extract(ts.take(lab), profile=model.profile_, top_k=model.top_k_)
    method = f"HTC-{str(model.variant).capitalize()}"
    res = evaluate(fm, ts.labels[lab], seeds=1, methods=[method])
    out = np.full(ts.n_trajectories, np.nan)
    out[lab] = res.oof[method]
    return out


def explained_columns(model, ts, *, n_reasons: int = 3):
    """What the dashboard's export carries, for ``htc score --explain``.

    Parameters
    ----------
    model : HTCCalibrator, HTCGAM or GeneralCalibrator
        The fitted model that scores the runs.
    ts : TraceSet
        The runs.
    n_reasons : int, default 3
        How many of the strongest reasons to give per run.

    Returns
    -------
    DataFrame
        One row per trajectory: ``scorer`` (the model in use), ``success``, ``question``, ``final_answer``,
        ``gold``, ``confidence (out-of-fold)`` for an HTC-Full / -Reduced model (:func:`out_of_fold`),
        ``flags`` (the structural flags), ``reason_1`` ... (the strongest reasons of each run's own scorer: a
        GAC's sub-model per run) and the 48 features in the model's profile.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.scoring import explained_columns
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> table = explained_columns(htc.load_model("gac"), ts, n_reasons=2)
    >>> table.shape
    (8, 56)
    >>> list(table.columns[:8])
    ['scorer', 'success', 'question', 'final_answer', 'gold', 'flags', 'reason_1', 'reason_2']
    >>> table.loc[0, "scorer"]
    'GAC (with alternatives model, zero-shot)'
    >>> table.loc[0, "reason_1"]
    'First step skewness is -2.66, close to the typical successful run (lower than 62% of 4 ...'
    """
    import numpy as np
    import pandas as pd

    from .explain import explain_runs, run_reasons
    from .features import extract

    scorer, models, which = _scorer_names(model, ts)
    meta = ts.meta
    out = pd.DataFrame({"scorer": scorer, "success": ts.labels})
    for col, name in (("question", "question"), ("answer", "final_answer"), ("gold", "gold")):
        out[name] = meta[col].to_numpy(dtype=object) if col in meta.columns else None
    oof = out_of_fold(model, ts)
    if oof is not None:
        out["confidence (out-of-fold)"] = oof
    profile, top_k = (models[0].profile_, models[0].top_k_)
    base = explain_runs(ts, extract(ts, profile=profile, top_k=top_k))
    reasons: list = [[] for _ in range(ts.n_trajectories)]
    if hasattr(models[0], "contributions") and hasattr(models[0], "feature_names_in_"):
        for k, m in enumerate(models):     # each run explained by the model that scored it, in its profile
            fm = extract(ts, profile=m.profile_, top_k=m.top_k_)
            cols = [list(fm.names).index(nm) for nm in m.feature_names_in_]
            texts = run_reasons(np.asarray(fm.values)[:, cols], ts.labels, meta["dataset"], [m],
                                np.where(which == k, 0, -1), n_reasons=n_reasons)
            for i in np.flatnonzero(which == k):
                reasons[i] = texts[i]
    for k in range(n_reasons):
        base.insert(1 + k, f"reason_{k + 1}", [r[k] if len(r) > k else "" for r in reasons])
    return pd.concat([out, base], axis=1)


__all__ = ["score_frame", "score_columns", "explained_columns", "out_of_fold"]
