"""The candidate transfer methods scored on one held-out family, fitted on the other families.

For every family, the by-kind GAC (:mod:`htc_core.calibration.general`) is fitted on the runs of all the other
families and the held-out family is scored zero-shot by each candidate of
:mod:`htc_core.calibration.transfer_methods` (:func:`held_out_confidences`):

- ``gac``: the model as fitted;
- ``tts``: test-time standardization with the held-out runs' own statistics;
- ``em``: the EM base-rate correction of the ``gac`` confidences;
- ``iw``: a weighted Platt step on the training runs, weights from a domain classifier (training vs held out);
- ``stack``: a logistic stack of the ``gac`` logit with the training-free signal that ranked best on the
  training runs; ``stack+em``: then the EM correction;
- ``signal``: that signal alone, Platt-scaled on the training runs (no trajectory model at all);
  ``signal+em``: then the EM correction; ``signal-oof``: that signal through a Platt map calibrated on
  *out-of-family* scores (:func:`~htc_core.experiments.transfer_maps.out_of_family_platt`: each training family
  scored by the signal's map fitted without it, then a Platt step on those scores), so the map is as steep as it
  transfers between families;
- ``stack-oof``: the stack fitted on *out-of-family* GAC logits of the training runs (3 folds by family
  inside the training families), so the stack weighs the GAC as it transfers, not as it fits;
  ``stack-all-oof``: the same with all three training-free signals at once (each weight non-negative);
- the set-level methods (:data:`~htc_core.experiments.transfer_choice.SET_LEVEL`,
  :mod:`htc_core.calibration.rank_ensemble`; :func:`set_level_methods`), which rank the held-out
  runs *as a set* from their own unlabeled scores (the ``stack-oof`` logit and the three signals): ``summa-select``
  (the ranker SUMMA estimates best, Platt-scaled on the training runs), ``summa`` (the SUMMA-weighted mean rank),
  ``rank-mean`` (the plain mean rank), ``consensus`` (the ranker agreeing most with the others) -- these three
  re-order the ``stack-oof`` confidences -- and ``rank-mean-platt`` (the mean rank through a Platt map fitted on
  the training families, each ranked within itself), ``nearest-family`` (the signal that ranks best the training
  family whose signals look most like the held-out set's, through its out-of-family map:
  :mod:`htc_core.calibration.signal_choice`); below ``set_min_runs`` held-out runs they keep the per-run
  confidences.

Next to them, the shift measurements the expected-error range is built from
(:mod:`htc_core.calibration.expected_error`). No held-out label reaches a fit: the candidates see the held-out
*features* only (as a user's unlabeled runs). The helpers here are shared with
:mod:`~htc_core.experiments.transfer_lofo` and :mod:`~htc_core.experiments.transfer_entry` (public names kept out
of ``__all__``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..calibration.transfer_methods import (STACKABLE, domain_weights, em_prior, logit, signal_matrix,
                                            signal_scores, sigmoid, stack_logits, stack_scores,
                                            target_standardized_logit, weighted_platt)
from .gac import KIND_PROFILE, WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES
from .grouping import score_metrics
from .transfer_choice import SET_LEVEL, SET_MIN_RUNS
from .transfer_maps import fit_nearest_family, out_of_family_platt, platt_signal

__all__: list[str] = []

# the alpha grid of the experiment's fits (a coarser grid than the shipped fits' DEFAULT_ALPHAS: 14 held-out
# families x 8 fits each on a shared 2-core machine)
EXPERIMENT_ALPHAS = (0.01, 0.1, 1.0, 5.0, 20.0, 50.0)



def _fit(X, y, profile, seed, fit_kw):
    """An HTC calibrator (HTC-Reduced unless ``fit_kw`` says otherwise) fitted on one profile's features."""
    from ..calibration.calibrators import HTCCalibrator

    kw = {"variant": "reduced", **fit_kw}
    return HTCCalibrator(random_state=seed, profile=profile, **kw).fit(X, y)


def finite_auroc(y, s) -> float:
    """AUROC of the finite scores ``s`` (NaN with fewer than 2 or with one outcome)."""
    ok = np.isfinite(s)
    if ok.sum() < 2 or len(set(y[ok])) < 2:
        return float("nan")
    return score_metrics(y[ok], s[ok])["auroc"]


def best_signal(y, sig: pd.DataFrame) -> str:
    """The stackable training-free signal of the best AUROC on the rows of ``sig``."""
    # only the probability signals: the stack and the transfer entry take logit(signal), and minus an entropy is
    # no probability (its logit would be a constant)
    aur = {c: finite_auroc(y, sig[c].to_numpy()) for c in sig.columns if c in STACKABLE and np.isfinite(sig[c]).all()}
    return max(aur, key=lambda c: aur[c]) if aur else "seq_prob"


def kind_logits(models, feats, alt, rows, *, tts: bool) -> np.ndarray:
    """The by-kind GAC logit of ``rows`` (``tts``: standardized with those rows' own statistics)."""
    z = np.empty(len(rows))
    for kind, mask in ((WITH_ALTERNATIVES, alt[rows]), (WITHOUT_ALTERNATIVES, ~alt[rows])):
        if not mask.any():
            continue
        m = models.get(kind) or models[WITHOUT_ALTERNATIVES]
        X = feats[m.profile_][rows[mask]]
        z[mask] = target_standardized_logit(m, X) if tts else m.decision_function(X)
    return z


def held_out_confidences(d: dict, g: str, seed: int, fit_kw: dict) -> tuple[dict, dict, dict, str]:
    """Every method's confidences on family ``g`` fitted on the others, its shift row, models and signal."""
    y, groups, feats, alt, sig = d["y"], d["groups"], d["features"], d["alt"], d["signals"]
    te, tr = np.flatnonzero(groups == g), np.flatnonzero(groups != g)
    models = {WITHOUT_ALTERNATIVES: _fit(feats["chosen"][tr], y[tr], "chosen", seed, fit_kw)}
    tr_alt = tr[alt[tr]]
    if len(tr_alt) and len(set(y[tr_alt])) == 2:
        models[WITH_ALTERNATIVES] = _fit(feats["paper"][tr_alt], y[tr_alt], "paper", seed, fit_kw)
    z_tr, z_te = kind_logits(models, feats, alt, tr, tts=False), kind_logits(models, feats, alt, te, tts=False)
    train_rate = float(y[tr].mean())
    p = {"gac": sigmoid(z_te), "tts": sigmoid(kind_logits(models, feats, alt, te, tts=True))}
    em = em_prior(p["gac"], train_rate)
    p["em"] = em.adjusted
    w = domain_weights(feats["chosen"][tr], feats["chosen"][te])
    a, b = weighted_platt(z_tr, y[tr], w)
    p["iw"] = sigmoid(a * z_te + b)
    name = best_signal(y[tr], sig.iloc[tr])
    s_tr, s_te = sig[name].to_numpy()[tr], sig[name].to_numpy()[te]
    s_te = np.where(np.isfinite(s_te), s_te, np.nanmedian(s_tr))
    c = stack_logits(z_tr, s_tr, y[tr])
    z_st = c[0] * z_te + c[1] * logit(s_te) + c[2]
    p["stack"] = sigmoid(z_st)
    st_tr = sigmoid(c[0] * z_tr + c[1] * logit(s_tr) + c[2])
    p["stack+em"] = em_prior(p["stack"], float(st_tr.mean())).adjusted
    a_s, b_s = weighted_platt(logit(s_tr), y[tr])
    p["signal"] = sigmoid(a_s * logit(s_te) + b_s)
    p["signal+em"] = em_prior(p["signal"], float(sigmoid(a_s * logit(s_tr) + b_s).mean())).adjusted
    a_o, b_o = out_of_family_platt(logit(s_tr), y[tr], groups[tr])
    p["signal-oof"] = sigmoid(a_o * logit(s_te) + b_o)
    z_oof = oof_logits(d, tr, seed, fit_kw, models)
    c_oof = stack_logits(z_oof, s_tr, y[tr])
    p["stack-oof"] = sigmoid(c_oof[0] * z_te + c_oof[1] * logit(s_te) + c_oof[2])
    a_tr, fill = signal_scores(sig.iloc[tr])
    c_all = stack_scores(z_oof, a_tr, y[tr])
    p["stack-all-oof"] = sigmoid(c_all[0] * z_te + signal_scores(sig.iloc[te], fill)[0] @ c_all[1:-1] + c_all[-1])
    zs_tr = logit(sigmoid(c_oof[0] * z_oof + c_oof[1] * logit(s_tr) + c_oof[2]))   # as the shipped ranker
    set_p, est = set_level_methods(d, tr, te, p["stack-oof"], zs_tr, min_runs=d.get("set_min_runs", SET_MIN_RUNS))
    p.update(set_p)
    shift = _shift_row(models, feats, alt, tr, te, train_rate)
    return p, {**shift, "estimates": est}, models, name


def set_level_methods(d: dict, tr: np.ndarray, te: np.ndarray, p_te: np.ndarray, zs_tr: np.ndarray, *,
                      min_runs: int = SET_MIN_RUNS) -> tuple[dict, list]:
    """The :data:`~htc_core.experiments.transfer_choice.SET_LEVEL` confidences of the held-out rows ``te`` (each
    from the held-out set's unlabeled scores and maps fitted on the training rows ``tr``), and one row per ranker:
    its true and its label-free (SUMMA) AUROC estimate. ``p_te``: the ``stack-oof`` confidences of ``te``;
    ``zs_tr``: its out-of-family logit on ``tr``."""
    from ..calibration import rank_ensemble as rk
    from ..calibration.signal_choice import nearest_family_confidences

    y, groups = d["y"], d["groups"]
    A = signal_matrix(d["signals"])
    S_te = np.column_stack([logit(p_te), A[te]])
    calibrated = [p_te] + [platt_signal(A[tr, j], y[tr], A[te, j]) for j in range(A.shape[1])]
    out = {m: p_te for m in SET_LEVEL}
    use = _distinct(S_te, rk.usable_columns(S_te))
    est = rk.estimate_auroc(S_te[:, use], float(p_te.mean()), names=np.array(rk.RANKERS)[use]) if use.sum() >= 3 \
        else None
    rows = _estimate_rows(y[te], S_te, use, est)
    if len(te) < min_runs:
        return out, rows
    a, b = rk.fit_rank_mean_platt(np.column_stack([zs_tr, A[tr]]), y[tr], groups[tr])
    out["rank-mean-platt"] = sigmoid(a * logit(rk.rank_mean(S_te)) + b)
    # its families lend their best signal from SET_MIN_RUNS runs on; the set is scored whatever min_runs says here
    nf = fit_nearest_family(A[tr], y[tr], groups[tr])
    out["nearest-family"] = nearest_family_confidences({**nf, "min_runs": 0}, A[te])[0]
    out["rank-mean"] = rk.reorder(p_te, rk.rank_mean(S_te))
    if est is not None:
        cols = np.flatnonzero(use)
        out["summa-select"] = calibrated[cols[int(np.argmax(est.u))]]
        out["summa"] = rk.reorder(p_te, rk.combine_ranks(S_te[:, use], rk.ensemble_weights(est)))
        out["consensus"] = calibrated[cols[int(np.argmax(rk.consensus_agreement(S_te[:, use])))]]
    return out, rows


def _distinct(S: np.ndarray, use: np.ndarray) -> np.ndarray:
    """``use`` without a column that ranks the runs as an earlier used one does (Spearman > 0.999: the GAC's
    logit of runs without alternatives is the minimum token probability's)."""
    from ..calibration.rank_ensemble import scaled_ranks

    use = use.copy()
    R = scaled_ranks(S)
    for j in np.flatnonzero(use):
        for i in np.flatnonzero(use[:j]):
            if R[:, i].std() > 0 and R[:, j].std() > 0 and np.corrcoef(R[:, i], R[:, j])[0, 1] > 0.999:
                use[j] = False
                break
    return use


def _estimate_rows(y: np.ndarray, S: np.ndarray, use: np.ndarray, est) -> list:
    from ..calibration.rank_ensemble import RANKERS

    rows, k = [], 0
    for j, name in enumerate(RANKERS):
        e = float("nan")
        if est is not None and use[j]:
            e, k = float(est.raw[k]), k + 1
        rows.append({"ranker": name, "auroc": finite_auroc(y, S[:, j]), "estimated": e,
                     "residual": float("nan") if est is None else est.residual})
    return rows


def oof_logits(d: dict, tr: np.ndarray, seed: int, fit_kw: dict, models: dict, n_folds: int = 3) -> np.ndarray:
    """GAC logits of the training rows ``tr``, each from a GAC fitted without its family (families dealt
    round-robin into ``n_folds`` folds); with one training family, ``models``' own logits."""
    y, groups, feats, alt = d["y"], d["groups"], d["features"], d["alt"]
    fams = sorted(set(groups[tr]))
    if len(fams) < 2:
        return kind_logits(models, feats, alt, tr, tts=False)
    fold_of = {f: i % n_folds for i, f in enumerate(fams)}
    fold = np.array([fold_of[g] for g in groups[tr]])
    z = np.zeros(len(tr))
    for k in range(min(n_folds, len(fams))):
        inner_tr, inner_te = tr[fold != k], tr[fold == k]
        inner = {WITHOUT_ALTERNATIVES: _fit(feats["chosen"][inner_tr], y[inner_tr], "chosen", seed, fit_kw)}
        wa = inner_tr[alt[inner_tr]]
        if len(wa) and len(set(y[wa])) == 2:
            inner[WITH_ALTERNATIVES] = _fit(feats["paper"][wa], y[wa], "paper", seed, fit_kw)
        z[fold == k] = kind_logits(inner, feats, alt, inner_te, tts=False)
    return z


def _shift_row(models, feats, alt, tr, te, train_rate) -> dict:
    """The shift measures of a held-out family: the largest feature shift, missing top-k, the training rate."""
    from ..calibration.shift import shift_check_matrix

    d = 0.0
    for kind, m in models.items():
        rows = te[alt[te]] if kind == WITH_ALTERNATIVES else (te[~alt[te]] if WITH_ALTERNATIVES in models else te)
        if len(rows):
            d = max(d, shift_check_matrix(m, feats[KIND_PROFILE[kind]][rows]))
    return {"max_shift": d, "missing_topk": float((~alt[te]).mean()) - float((~alt[tr]).mean()), "train_rate": train_rate}
