"""The ``transfer`` entry of a GAC file, fitted on all training runs for the method the choice picked.

:func:`fit_transfer` fits the per-run method (one of
:data:`~htc_core.experiments.transfer_choice.SHIPPABLE`) and, opt-in, its set-level step (:func:`fit_set_level`
or :func:`~htc_core.experiments.transfer_maps.fit_nearest_family`), as the leave-one-family-out experiment
(:mod:`htc_core.experiments.transfer_lofo`) measured them.
"""

from __future__ import annotations

import numpy as np

from ..calibration.transfer_methods import SIGNALS, logit, signal_matrix, sigmoid, stack_logits, weighted_platt
from .gac import WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES
from .transfer_candidates import EXPERIMENT_ALPHAS, best_signal, kind_logits, oof_logits
from .transfer_choice import SET_MIN_RUNS, SHIPPABLE
from .transfer_maps import fit_nearest_family, out_of_family_platt

__all__ = ["fit_transfer"]


def fit_transfer(d: dict, method: str, *, variant: str = "reduced", seed: int = 42, inner_folds: int = 3,
                 models: dict | None = None, set_level: str | None = None) -> dict | None:
    """The ``transfer`` entry of a GAC file fitted on all of ``d`` for a shippable method.

    None for ``gac``; otherwise the signal chosen on all runs and the stack coefficients (``stack-oof`` from
    out-of-family logits, ``stack`` from the fitted ``models``' own logits, ``signal`` without the GAC,
    ``signal-oof`` without it through :func:`~htc_core.experiments.transfer_maps.out_of_family_platt`). When no
    run lacks top-k alternatives, a ``fallback`` scores such runs by the Platt-scaled signal alone (a signal
    method's own map).

    Parameters
    ----------
    d : dict
        What :func:`~htc_core.experiments.transfer_families.prepare` made of the training runs.
    method : {"gac", "stack", "signal", "signal-oof", "stack-oof"}
        A method of ``SHIPPABLE``.
    variant : str, default "reduced"
        The HTC variant of the out-of-family fits (``stack-oof``).
    seed : int, default 42
        Their inner folds' random state.
    inner_folds : int, default 3
        Their inner folds.
    models : dict or None, default None
        The GAC's fitted models by kind (``stack``, and ``stack-oof`` with one training family).
    set_level : {None, "rank-mean-platt", "nearest-family"}, default None
        Also fit the entry's opt-in ``set_level`` step (:func:`fit_set_level`).

    Returns
    -------
    dict or None
        Keys method, signal, coef ([GAC logit weight, signal weight, intercept]), fill (the signal's value for a
        run without it), what (the signal in words) and, where needed, fallback and (``signal-oof``) rate_map.

    Raises
    ------
    ValueError
        If ``method`` is not shippable, or ``set_level`` is not None, "rank-mean-platt" or "nearest-family" on a
        method other than ``gac``.

    Examples
    --------
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.transfer_entry import fit_transfer
    >>> from htc_core.experiments.transfer_families import prepare
    >>> ts, _ = load(["sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/facts_Gemma3-270M-sampled-t0.7.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-greedy.jsonl",
    ...               "sample_runs/_examples/lists_Gemma3-270M-sampled-t0.7.jsonl"])     # 2 families, 16 runs each
    >>> d = prepare(ts)
    >>> fit_transfer(d, "gac") is None
    True
    >>> entry = fit_transfer(d, "signal")
    >>> entry["signal"], [round(c, 3) for c in entry["coef"]], entry["fallback"]["why"]
    ('min_prob', [0.0, 0.638, -0.31], 'no training run lacked top-k alternatives')
    """
    if method not in SHIPPABLE:
        raise ValueError(f"method must be one of {SHIPPABLE}, got {method!r}")
    if set_level not in (None, "rank-mean-platt", "nearest-family") or (set_level and method == "gac"):
        raise ValueError(f"set_level must be None, 'rank-mean-platt' or 'nearest-family' (on top of a transfer "
                         f"method other than 'gac'), got {set_level!r} with {method!r}")
    if method == "gac":
        return None
    out, _ = _fit_per_run(d, method, variant=variant, seed=seed, inner_folds=inner_folds, models=models)
    if set_level == "nearest-family":
        out["set_level"] = fit_nearest_family(signal_matrix(d["signals"]), d["y"], d["groups"])
    elif set_level:
        out["set_level"] = fit_set_level(d, variant=variant, seed=seed, inner_folds=inner_folds, models=models)
    return out


def fit_set_level(d: dict, *, variant: str = "reduced", seed: int = 42, inner_folds: int = 3,
                  models: dict | None = None) -> dict:
    """The ``rank-mean-platt`` set-level entry, as measured by
    :func:`~htc_core.experiments.transfer_candidates.set_level_methods`: its ``ranker`` is the ``stack-oof`` transfer
    entry (the GAC's ranker in the mean rank, whatever the per-run method is), its ``coef`` the Platt map of every
    family's within-family mean rank of that ranker's out-of-family logit and the three training-free signals,
    applied to a scored set of at least ``min_runs`` runs."""
    from ..calibration.rank_ensemble import fit_rank_mean_platt
    from ..calibration.transfer_methods import apply_transfer

    ranker, z = _fit_per_run(d, "stack-oof", variant=variant, seed=seed, inner_folds=inner_folds, models=models)
    kinds = np.where(d["alt"], WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES).astype(object)
    zs = logit(sigmoid(apply_transfer(ranker, z, d["signals"][ranker["signal"]].to_numpy(), kinds)))
    a, b = fit_rank_mean_platt(np.column_stack([zs, signal_matrix(d["signals"])]), d["y"], d["groups"])
    return {"method": "rank-mean-platt", "coef": [a, b], "min_runs": SET_MIN_RUNS, "ranker": ranker,
            "what": "a run set of at least min_runs runs: sigmoid(a logit(r) + b), r = each run's mean rank within "
                    "the set of the ranker's logit and the three training-free signals (those defined and not "
                    "constant on the set); chosen leave-one-family-out"}


def _fit_per_run(d: dict, method: str, *, variant: str, seed: int, inner_folds: int, models) -> tuple[dict, object]:
    """(the per-run transfer entry of ``method``, the GAC logit of every row it was fitted on, or None)."""
    y, sig = d["y"], d["signals"]
    rows = np.arange(len(y))
    name = best_signal(y, sig)
    s = sig[name].to_numpy()
    fill = float(np.nanmedian(s))
    s = np.where(np.isfinite(s), s, fill)
    z = None
    rate_map = None
    if method in ("signal", "signal-oof"):
        a, b = a1, b1 = weighted_platt(logit(s), y)
        if method == "signal-oof":
            a, b = out_of_family_platt(logit(s), y, d["groups"])
            # the base-rate measures read the plain Platt map: logit of it = (a1 / a) * (logit p - b) + b1
            rate_map = [a1 / a, b1 - a1 * b / a] if abs(a) > 1e-12 else None
        coef = [0.0, a, b]
    else:
        fit_kw = {"inner_folds": inner_folds, "variant": variant, "alphas": EXPERIMENT_ALPHAS}
        z = (oof_logits(d, rows, seed, fit_kw, models) if method == "stack-oof"
             else kind_logits(models, d["features"], d["alt"], rows, tts=False))
        coef = [float(v) for v in stack_logits(z, s, y)]
    out = {"method": method, "signal": name, "coef": [float(v) for v in coef], "fill": fill, "what": SIGNALS[name]}
    if rate_map:
        out["rate_map"] = [float(v) for v in rate_map]
    if not (~d["alt"]).any():
        # no training run lacks top-k alternatives: the without-alternatives model has never seen such a run
        # (its features move by 4+ training sd on UALA HotpotQA), so those runs get the Platt-scaled signal alone
        # (a signal method's own map: the signal alone is what it is anyway)
        a, b = coef[1:] if method in ("signal", "signal-oof") else weighted_platt(logit(s), y)
        out["fallback"] = {"kinds": [WITHOUT_ALTERNATIVES], "coef": [0.0, float(a), float(b)],
                           "why": "no training run lacked top-k alternatives"}
    return out, z
