"""Choosing the GAC's transfer method: leave-one-family-out over model x task (an experiment, not a model).

A *family* is a task (``dataset``) run by one model family (``model`` without its decoding suffix:
``SmolLM2-135M-greedy`` and ``SmolLM2-135M-sampled-t0.7`` are one family, ``SmolLM2-135M``). For every family,
the by-kind GAC (:mod:`htc_core.calibration.general`) is fitted on the runs of all the other families and the
held-out family is scored zero-shot by each candidate of :mod:`htc_core.calibration.transfer_methods`:

- ``gac``: the model as fitted;
- ``tts``: test-time standardization with the held-out runs' own statistics;
- ``em``: the EM base-rate correction of the ``gac`` confidences;
- ``iw``: a weighted Platt step on the training runs, weights from a domain classifier (training vs held out);
- ``stack``: a logistic stack of the ``gac`` logit with the training-free signal that ranked best on the
  training runs; ``stack+em``: then the EM correction;
- ``signal``: that signal alone, Platt-scaled on the training runs (no trajectory model at all);
  ``signal+em``: then the EM correction;
- ``stack-oof``: the stack fitted on *out-of-family* GAC logits of the training runs (3 folds by family
  inside the training families), so the stack weighs the GAC as it transfers, not as it fits;
  ``stack-all-oof``: the same with all three training-free signals at once (each weight non-negative);
- the set-level methods (:data:`SET_LEVEL`, :mod:`htc_core.calibration.rank_ensemble`), which rank the held-out
  runs *as a set* from their own unlabeled scores (the ``stack-oof`` logit and the three signals): ``summa-select``
  (the ranker SUMMA estimates best, Platt-scaled on the training runs), ``summa`` (the SUMMA-weighted mean rank),
  ``rank-mean`` (the plain mean rank), ``consensus`` (the ranker agreeing most with the others) -- these three
  re-order the ``stack-oof`` confidences -- and ``rank-mean-platt`` (the mean rank through a Platt map fitted on
  the training families, each ranked within itself); below ``set_min_runs`` held-out runs they keep the per-run
  confidences. ``TransferChoice.estimates`` holds, per family and ranker, SUMMA's label-free AUROC estimate
  next to the true one.

Next to them, each training-free signal's AUROC on the held-out family, and the shift measurements the
expected-error range is built from (:mod:`htc_core.calibration.expected_error`). No held-out label reaches a fit:
the candidates see the held-out *features* only (as a user's unlabeled runs), labels only score them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..calibration.transfer_methods import (SIGNALS, STACKABLE, domain_weights, em_prior, logit, signal_matrix,
                                            signal_scores, sigmoid, stack_logits, stack_scores,
                                            target_standardized_logit, training_free_signals, weighted_platt)
from .gac import KIND_PROFILE, WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES
from .grouping import has_alternatives, score_metrics

__all__ = ["METHODS", "SHIPPABLE", "SET_LEVEL", "SET_MIN_RUNS", "model_family", "family_groups", "TransferChoice",
           "leave_one_family_out", "prepare", "fit_transfer", "expected_error_points", "range_self_check"]

METHODS = ("gac", "tts", "em", "iw", "stack", "stack+em", "signal", "signal+em", "stack-oof", "stack-all-oof",
           "summa-select", "summa", "rank-mean", "consensus", "rank-mean-platt")
#: set-level methods (:mod:`htc_core.calibration.rank_ensemble`): they rank the runs of one scored set with the
#: rankers (the ``stack-oof`` logit and the three training-free signals) chosen or combined from that set's own
#: unlabeled scores; below :data:`SET_MIN_RUNS` runs, or with fewer than 3 distinct usable rankers for the SUMMA
#: ones, they keep the ``stack-oof`` confidences
SET_LEVEL = ("summa-select", "summa", "rank-mean", "consensus", "rank-mean-platt")
#: a set-level method needs this many scored runs (the ranks of fewer are too coarse; every family here holds 16 or
#: 500 runs, so leave-one-family-out cannot tell any threshold in 17-500 apart)
SET_MIN_RUNS = 50
#: methods that score each run on its own (a GAC file holds them); tts, em and iw need the whole scored set;
#: stack-all-oof is measured (does combining every signal transfer better?) but a GAC file holds one signal
SHIPPABLE = ("gac", "stack", "signal", "stack-oof")
_SUFFIX = re.compile(r"-(greedy|sampled.*)$")


def model_family(model: str) -> str:
    """``SmolLM2-135M-sampled-t0.7`` -> ``SmolLM2-135M`` (the decoding configuration is not a family)."""
    return _SUFFIX.sub("", str(model))


def family_groups(meta: pd.DataFrame) -> np.ndarray:
    """``dataset x model family`` per run, e.g. ``units | SmolLM2-135M``."""
    ds = meta["dataset"].astype(str) if "dataset" in meta else pd.Series(["?"] * len(meta))
    mo = meta["model"].astype(str) if "model" in meta else pd.Series(["?"] * len(meta))
    return np.array([f"{d} | {model_family(m)}" for d, m in zip(ds, mo)], dtype=object)


@dataclass
class TransferChoice:
    """Per held-out family: metrics of every method, the signals' AUROC and the shift measurements."""

    rows: pd.DataFrame                 # family, method, n, ece, brier, auroc
    shifts: pd.DataFrame               # family, n, max_shift, rate_gap, em_gap, missing_topk, train_rate, rate
    signal_auroc: pd.DataFrame         # family x signal
    chosen_signal: dict = field(default_factory=dict)   # family -> the signal the stack used
    #: method -> each row's held-out confidence (every row is held out once; filled by leave_one_family_out)
    predictions: dict = field(default_factory=dict)
    groups: np.ndarray | None = None                    # each row's family (the rows of ``predictions``)
    #: family, ranker, auroc (true), estimated (SUMMA, label-free, unclipped), residual of the rank-one fit
    estimates: pd.DataFrame = field(default_factory=pd.DataFrame)
    set_min_runs: int = 50                                # the fewest held-out runs a set-level method acts on

    def summary(self) -> pd.DataFrame:
        """method -> mean and worst ECE / Brier / AUROC over the held-out families."""
        g = self.rows.groupby("method", sort=False)
        out = pd.DataFrame({"ece_mean": g.ece.mean(), "ece_worst": g.ece.max(), "brier_mean": g.brier.mean(),
                            "brier_worst": g.brier.max(), "auroc_mean": g.auroc.mean(), "auroc_worst": g.auroc.min()})
        return out.reindex([m for m in METHODS if m in out.index])

    def best(self) -> str:
        """The method a GAC file can hold (:data:`SHIPPABLE`: scores one run at a time) with the lowest mean ECE
        (ties: the lower worst ECE)."""
        s = self.summary()
        s = s[s.index.isin(SHIPPABLE)]
        return str(s.sort_values(["ece_mean", "ece_worst"]).index[0])

    def best_set_level(self, per_run: str | None = None) -> str | None:
        """The :data:`SET_LEVEL` method that wins over the per-run method ``per_run`` (default :meth:`best`):
        a mean ECE no higher and a higher mean AUROC (the highest such AUROC); None when none does."""
        base_name = per_run or self.best()
        r = self.rows
        base = r[r.method == base_name].set_index("family")
        best, best_auroc = None, float(base.auroc.mean())
        for m in SET_LEVEL:
            x = r[r.method == m].set_index("family")
            # below set_min_runs a set-level method keeps the per-run confidences (the shipped model's)
            x = x.where(x.n >= self.set_min_runs, base.reindex(x.index))
            if x.ece.mean() <= base.ece.mean() + 1e-12 and x.auroc.mean() > best_auroc:
                best, best_auroc = m, float(x.auroc.mean())
        return best

    def estimate_table(self) -> str:
        """How well the label-free (SUMMA) AUROC estimates match the true AUROCs: per ranker, the mean absolute
        error over the held-out families, and how often the ranker estimated best is the truly best one."""
        e = self.estimates
        if e.empty:
            return "no label-free estimates"
        lines = ["label-free (SUMMA) AUROC estimate vs true, per held-out family",
                 f"{'family':30s} " + "  ".join(f"{r:>17}" for r in e.ranker.unique()) + "  residual  picked/best"]
        hits = 0
        for fam, r in e.groupby("family", sort=False):
            cells = [f"{x.auroc:.3f} est {x.estimated:.3f}" if x.estimated == x.estimated
                     else f"{x.auroc:.3f} est   -  " for x in r.itertuples()]
            ok = r[np.isfinite(r.estimated)]
            picked = ok.ranker.iloc[int(np.argmax(ok.estimated))] if len(ok) else "-"
            best = r.ranker.iloc[int(np.nanargmax(r.auroc))]
            hits += picked == best
            lines.append(f"{fam:30s} " + "  ".join(f"{c:>17}" for c in cells)
                         + f"  {r.residual.iloc[0]:8.3f}  {picked}/{best}")
        err = (e.estimated - e.auroc).abs()
        lines.append(f"mean |estimate - true| {float(err.mean()):.3f}; the ranker estimated best is the truly best on "
                     f"{hits} of {e.family.nunique()} families")
        return "\n".join(lines)

    def wins_vs_signal(self, method: str) -> pd.DataFrame:
        r = self.rows[self.rows.method == method].set_index("family")
        best = self.signal_auroc.max(axis=1)
        return pd.DataFrame({"auroc": r.auroc, "best_signal_auroc": best.reindex(r.index)})

    def table(self) -> str:
        lines = ["held-out family                 runs  " + "  ".join(f"{m:>16}" for m in METHODS) + "  best signal"]
        for fam, r in self.rows.groupby("family", sort=False):
            cells = {x.method: f"{x.ece:.3f}/{x.auroc:.3f}" for x in r.itertuples()}
            best = self.signal_auroc.loc[fam].max()
            lines.append(f"{fam:30s} {int(r.n.iloc[0]):5d}  " + "  ".join(f"{cells.get(m, '-'):>16}" for m in METHODS)
                         + f"  {best:.3f}")
        s = self.summary()
        lines.append("mean ECE/AUROC                       " + "  ".join(
            f"{s.ece_mean[m]:.3f}/{s.auroc_mean[m]:.3f}".rjust(16) for m in s.index))
        lines.append("worst ECE/AUROC                      " + "  ".join(
            f"{s.ece_worst[m]:.3f}/{s.auroc_worst[m]:.3f}".rjust(16) for m in s.index))
        return "\n".join(["ECE/AUROC per held-out family (leave-one-family-out)"] + lines)

    def to_dict(self) -> dict:
        s = self.summary()
        return {"experiment": "leave-one-family-out transfer methods", "methods": list(METHODS),
                "chosen": self.best(),
                "summary": {m: {k: round(float(v), 4) for k, v in s.loc[m].items()} for m in s.index},
                "rows": [{k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else
                              (int(v) if isinstance(v, (np.integer,)) else v)) for k, v in r.items()}
                         for r in self.rows.to_dict("records")],
                "shifts": [{k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else
                                (int(v) if isinstance(v, (np.integer,)) else v)) for k, v in r.items()}
                           for r in self.shifts.to_dict("records")],
                "signal_auroc": {f: {s_: round(float(v), 4) for s_, v in r.items() if np.isfinite(v)}
                                 for f, r in self.signal_auroc.iterrows()},
                "stack_signal": dict(self.chosen_signal), "set_level": self.best_set_level(),
                "set_min_runs": self.set_min_runs,
                "estimates": [{k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else v)
                               for k, v in r.items()} for r in self.estimates.to_dict("records")]}


def _fit(X, y, profile, seed, fit_kw):
    from ..calibration.calibrators import HTCCalibrator

    kw = {"variant": "reduced", **fit_kw}
    return HTCCalibrator(random_state=seed, profile=profile, **kw).fit(X, y)


def _auroc(y, s) -> float:
    ok = np.isfinite(s)
    if ok.sum() < 2 or len(set(y[ok])) < 2:
        return float("nan")
    return score_metrics(y[ok], s[ok])["auroc"]


def _best_signal(y, sig: pd.DataFrame) -> str:
    # only the probability signals: the stack and the transfer entry take logit(signal), and minus an entropy is
    # no probability (its logit would be a constant)
    aur = {c: _auroc(y, sig[c].to_numpy()) for c in sig.columns if c in STACKABLE and np.isfinite(sig[c]).all()}
    return max(aur, key=lambda c: aur[c]) if aur else "seq_prob"


def _kind_logits(models, feats, alt, rows, *, tts: bool) -> np.ndarray:
    """The by-kind GAC logit of ``rows`` (``tts``: standardized with those rows' own statistics)."""
    z = np.empty(len(rows))
    for kind, mask in ((WITH_ALTERNATIVES, alt[rows]), (WITHOUT_ALTERNATIVES, ~alt[rows])):
        if not mask.any():
            continue
        m = models.get(kind) or models[WITHOUT_ALTERNATIVES]
        X = feats[m.profile_][rows[mask]]
        z[mask] = target_standardized_logit(m, X) if tts else m.decision_function(X)
    return z


def _held_out(d: dict, g: str, seed: int, fit_kw: dict) -> tuple[dict, dict, dict, str]:
    y, groups, feats, alt, sig = d["y"], d["groups"], d["features"], d["alt"], d["signals"]
    te, tr = np.flatnonzero(groups == g), np.flatnonzero(groups != g)
    models = {WITHOUT_ALTERNATIVES: _fit(feats["chosen"][tr], y[tr], "chosen", seed, fit_kw)}
    tr_alt = tr[alt[tr]]
    if len(tr_alt) and len(set(y[tr_alt])) == 2:
        models[WITH_ALTERNATIVES] = _fit(feats["paper"][tr_alt], y[tr_alt], "paper", seed, fit_kw)
    z_tr, z_te = _kind_logits(models, feats, alt, tr, tts=False), _kind_logits(models, feats, alt, te, tts=False)
    train_rate = float(y[tr].mean())
    p = {"gac": sigmoid(z_te), "tts": sigmoid(_kind_logits(models, feats, alt, te, tts=True))}
    em = em_prior(p["gac"], train_rate)
    p["em"] = em.adjusted
    w = domain_weights(feats["chosen"][tr], feats["chosen"][te])
    a, b = weighted_platt(z_tr, y[tr], w)
    p["iw"] = sigmoid(a * z_te + b)
    name = _best_signal(y[tr], sig.iloc[tr])
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
    z_oof = _oof_logits(d, tr, seed, fit_kw, models)
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
    """The :data:`SET_LEVEL` confidences of the held-out rows ``te`` (each from the held-out set's unlabeled
    scores and maps fitted on the training rows ``tr``), and one row per ranker: its true and its label-free
    (SUMMA) AUROC estimate. ``p_te``: the ``stack-oof`` confidences of ``te``; ``zs_tr``: its out-of-family logit
    on ``tr``."""
    from ..calibration import rank_ensemble as rk

    y, groups = d["y"], d["groups"]
    A = signal_matrix(d["signals"])
    S_te = np.column_stack([logit(p_te), A[te]])
    calibrated = [p_te] + [_platt_signal(A[tr, j], y[tr], A[te, j]) for j in range(A.shape[1])]
    out = {m: p_te for m in SET_LEVEL}
    use = _distinct(S_te, rk.usable_columns(S_te))
    est = rk.estimate_auroc(S_te[:, use], float(p_te.mean()), names=np.array(rk.RANKERS)[use]) if use.sum() >= 3 \
        else None
    rows = _estimate_rows(y[te], S_te, use, est)
    if len(te) < min_runs:
        return out, rows
    a, b = rk.fit_rank_mean_platt(np.column_stack([zs_tr, A[tr]]), y[tr], groups[tr])
    out["rank-mean-platt"] = sigmoid(a * logit(rk.rank_mean(S_te)) + b)
    out["rank-mean"] = rk.reorder(p_te, rk.rank_mean(S_te))
    if est is not None:
        cols = np.flatnonzero(use)
        out["summa-select"] = calibrated[cols[int(np.argmax(est.u))]]
        out["summa"] = rk.reorder(p_te, rk.combine_ranks(S_te[:, use], rk.ensemble_weights(est)))
        out["consensus"] = calibrated[cols[int(np.argmax(rk.consensus_agreement(S_te[:, use])))]]
    return out, rows


def _platt_signal(a_tr: np.ndarray, y_tr: np.ndarray, a_te: np.ndarray) -> np.ndarray:
    """A signal's score on the held-out rows, Platt-scaled on the training rows (NaN -> the training median)."""
    fill = float(np.nanmedian(a_tr)) if np.isfinite(a_tr).any() else 0.0
    a, b = weighted_platt(np.where(np.isfinite(a_tr), a_tr, fill), y_tr)
    return sigmoid(a * np.where(np.isfinite(a_te), a_te, fill) + b)


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
        rows.append({"ranker": name, "auroc": _auroc(y, S[:, j]), "estimated": e,
                     "residual": float("nan") if est is None else est.residual})
    return rows


def _rate_gaps(p: np.ndarray, train_rate: float) -> dict:
    """|mean confidence - training rate| and |EM base rate - training rate| of one method's confidences."""
    return {"rate_gap": abs(float(p.mean()) - train_rate), "em_gap": abs(em_prior(p, train_rate).prior - train_rate)}


def _oof_logits(d: dict, tr: np.ndarray, seed: int, fit_kw: dict, models: dict, n_folds: int = 3) -> np.ndarray:
    """GAC logits of the training rows ``tr``, each from a GAC fitted without its family (families dealt
    round-robin into ``n_folds`` folds); with one training family, ``models``' own logits."""
    y, groups, feats, alt = d["y"], d["groups"], d["features"], d["alt"]
    fams = sorted(set(groups[tr]))
    if len(fams) < 2:
        return _kind_logits(models, feats, alt, tr, tts=False)
    fold_of = {f: i % n_folds for i, f in enumerate(fams)}
    fold = np.array([fold_of[g] for g in groups[tr]])
    z = np.zeros(len(tr))
    for k in range(min(n_folds, len(fams))):
        inner_tr, inner_te = tr[fold != k], tr[fold == k]
        inner = {WITHOUT_ALTERNATIVES: _fit(feats["chosen"][inner_tr], y[inner_tr], "chosen", seed, fit_kw)}
        wa = inner_tr[alt[inner_tr]]
        if len(wa) and len(set(y[wa])) == 2:
            inner[WITH_ALTERNATIVES] = _fit(feats["paper"][wa], y[wa], "paper", seed, fit_kw)
        z[fold == k] = _kind_logits(inner, feats, alt, inner_te, tts=False)
    return z


def _shift_row(models, feats, alt, tr, te, train_rate) -> dict:
    from ..calibration.shift import shift_check_matrix

    d = 0.0
    for kind, m in models.items():
        rows = te[alt[te]] if kind == WITH_ALTERNATIVES else (te[~alt[te]] if WITH_ALTERNATIVES in models else te)
        if len(rows):
            d = max(d, shift_check_matrix(m, feats[KIND_PROFILE[kind]][rows]))
    return {"max_shift": d, "missing_topk": float((~alt[te]).mean()) - float((~alt[tr]).mean()), "train_rate": train_rate}


def prepare(ts) -> dict:
    """Labels, family groups, both profiles' features, alternatives and the training-free signals, once."""
    from ..features import extract

    ts = ts.labeled()
    return {"y": ts.labels, "groups": family_groups(ts.meta), "alt": has_alternatives(ts),
            "features": {p: extract(ts, profile=p, top_k=5).values for p in ("paper", "chosen")},
            "signals": training_free_signals(ts), "ids": ts.ids}


#: the alpha grid of the experiment's fits (a coarser grid than the shipped fits' DEFAULT_ALPHAS: 14 held-out
#: families x 8 fits each on a shared 2-core machine)
EXPERIMENT_ALPHAS = (0.01, 0.1, 1.0, 5.0, 20.0, 50.0)


def leave_one_family_out(ts, *, seed: int = 42, inner_folds: int = 3, alphas=EXPERIMENT_ALPHAS,
                         progress: Callable[[int, int, str], None] | None = None,
                         set_min_runs: int = SET_MIN_RUNS) -> TransferChoice:
    """Every transfer method on every held-out family of ``ts`` (a labeled TraceSet); see the module docstring.
    ``set_min_runs``: the fewest held-out runs on which a :data:`SET_LEVEL` method acts."""
    d = {**(ts if isinstance(ts, dict) else prepare(ts)), "set_min_runs": int(set_min_runs)}
    fams = [g for g in sorted(set(d["groups"])) if len(set(d["y"][d["groups"] == g])) == 2]
    rows, shifts, aur, chosen, estimates = [], [], {}, {}, []
    preds = {m: np.full(len(d["y"]), np.nan) for m in METHODS}
    for i, g in enumerate(fams):
        te = np.flatnonzero(d["groups"] == g)
        y = d["y"][te]
        p, shift, _, name = _held_out(d, g, seed, {"inner_folds": inner_folds, "alphas": alphas})
        estimates += [{"family": g, **r} for r in shift.pop("estimates")]
        chosen[g] = name
        for m in METHODS:
            preds[m][te] = p[m]
            # a set-level method's shift measures are its per-run confidences' (as GeneralCalibrator.assess takes them)
            rows.append({"family": g, "method": m, "n": len(te), **score_metrics(y, p[m]),
                         **_rate_gaps(p["stack-oof" if m in SET_LEVEL else m], shift["train_rate"])})
        shifts.append({"family": g, "n": len(te), "rate": float(y.mean()), **shift})
        aur[g] = {s: _auroc(y, d["signals"][s].to_numpy()[te]) for s in SIGNALS}
        if progress is not None:
            progress(i + 1, len(fams), g)
    out = TransferChoice(pd.DataFrame(rows), pd.DataFrame(shifts), pd.DataFrame(aur).T, chosen, preds, d["groups"],
                         pd.DataFrame(estimates), int(set_min_runs))
    return _rebase_small_sets(out)


def _rebase_small_sets(choice: TransferChoice) -> TransferChoice:
    """Below ``set_min_runs`` a set-level method keeps the shipped per-run confidences: those of :meth:`best`
    (measured as ``stack-oof``'s, replaced here by the best's rows and predictions where they differ)."""
    base = choice.best()
    if base == "stack-oof":
        return choice
    r = choice.rows.copy()
    for fam, n in choice.shifts[["family", "n"]].itertuples(index=False):
        src = r[(r.family == fam) & (r.method == base)].iloc[0]
        rows = np.flatnonzero(choice.groups == fam)
        for m in SET_LEVEL:
            i = r.index[(r.family == fam) & (r.method == m)][0]
            cols = src.index.drop(["method"]) if n < choice.set_min_runs else ["rate_gap", "em_gap"]
            r.loc[i, cols] = src[cols]
            if n < choice.set_min_runs:
                choice.predictions[m][rows] = choice.predictions[base][rows]
    choice.rows = r
    return choice


def fit_transfer(d: dict, method: str, *, variant: str = "reduced", seed: int = 42, inner_folds: int = 3,
                 models: dict | None = None, set_level: str | None = None) -> dict | None:
    """The ``transfer`` entry of a GAC fitted on all of ``d`` (from :func:`prepare`) for a :data:`SHIPPABLE`
    method: None for ``gac``; the signal chosen on all runs and the stack coefficients otherwise (``stack-oof``
    from out-of-family logits, ``stack`` from the fitted ``models``' own logits, ``signal`` without the GAC).
    ``set_level="rank-mean-platt"``: also the entry's ``set_level`` (:func:`fit_set_level`)."""
    if method not in SHIPPABLE:
        raise ValueError(f"method must be one of {SHIPPABLE}, got {method!r}")
    if set_level not in (None, "rank-mean-platt") or (set_level and method == "gac"):
        raise ValueError(f"set_level must be None or 'rank-mean-platt' (on top of a transfer method other than "
                         f"'gac'), got {set_level!r} with {method!r}")
    if method == "gac":
        return None
    out, _ = _fit_per_run(d, method, variant=variant, seed=seed, inner_folds=inner_folds, models=models)
    if set_level:
        out["set_level"] = fit_set_level(d, variant=variant, seed=seed, inner_folds=inner_folds, models=models)
    return out


def fit_set_level(d: dict, *, variant: str = "reduced", seed: int = 42, inner_folds: int = 3,
                  models: dict | None = None) -> dict:
    """The ``rank-mean-platt`` set-level entry, as measured by :func:`set_level_methods`: its ``ranker`` is the
    ``stack-oof`` transfer entry (the GAC's ranker in the mean rank, whatever the per-run method is), its ``coef``
    the Platt map of every family's within-family mean rank of that ranker's out-of-family logit and the three
    training-free signals, applied to a scored set of at least ``min_runs`` runs."""
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
    name = _best_signal(y, sig)
    s = sig[name].to_numpy()
    fill = float(np.nanmedian(s))
    s = np.where(np.isfinite(s), s, fill)
    z = None
    if method == "signal":
        a, b = weighted_platt(logit(s), y)
        coef = [0.0, a, b]
    else:
        fit_kw = {"inner_folds": inner_folds, "variant": variant, "alphas": EXPERIMENT_ALPHAS}
        z = (_oof_logits(d, rows, seed, fit_kw, models) if method == "stack-oof"
             else _kind_logits(models, d["features"], d["alt"], rows, tts=False))
        coef = [float(v) for v in stack_logits(z, s, y)]
    out = {"method": method, "signal": name, "coef": [float(v) for v in coef], "fill": fill, "what": SIGNALS[name]}
    if not (~d["alt"]).any():
        # no training run lacks top-k alternatives: the without-alternatives model has never seen such a run
        # (its features move by 4+ training sd on UALA HotpotQA), so those runs get the Platt-scaled signal alone
        a, b = weighted_platt(logit(s), y)
        out["fallback"] = {"kinds": [WITHOUT_ALTERNATIVES], "coef": [0.0, a, b],
                           "why": "no training run lacked top-k alternatives"}
    return out, z


def expected_error_points(choice: TransferChoice, method: str) -> list[dict]:
    """One point per held-out family: its shift measures and the ECE ``method`` reached there."""
    rows = choice.rows[choice.rows.method == method].set_index("family")
    return [{"family": r["family"], "n": int(r["n"]), "ece": round(float(rows.ece[r["family"]]), 4),
             "rate_gap": round(float(rows.rate_gap[r["family"]]), 4), "em_gap": round(float(rows.em_gap[r["family"]]), 4),
             **{k: round(float(r[k]), 4) for k in ("max_shift", "missing_topk")}}
            for r in choice.shifts.to_dict("records")]


def range_self_check(choice: TransferChoice, points: list[dict], method: str) -> list[dict]:
    """The expected-error range checked on the families it is built from: for each held-out family, the range
    :func:`~.expected_error.expected_ece` gives it from the *other* families' points (its own shift measures, its
    ``method`` confidences for the noise), and whether its measured ECE lies inside. Per family: family, n, ECE,
    low, high, inside."""
    from ..calibration.expected_error import expected_ece

    conf = choice.predictions.get(method)
    out = []
    for i, p in enumerate(points):
        rows = np.flatnonzero(choice.groups == p["family"]) if choice.groups is not None else np.array([], int)
        c = conf[rows] if conf is not None and len(rows) else np.full(int(p["n"]), 0.5)
        e = expected_ece(points[:i] + points[i + 1:], p, c)
        out.append({"family": p["family"], "n": int(p["n"]), "ece": p["ece"], "low": round(e.low, 4),
                    "high": round(e.high, 4), "inside": bool(e.low <= p["ece"] <= e.high)})
    return out
