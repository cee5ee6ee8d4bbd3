"""Can the GAC rank at least as well as the best training-free signal on every set, without labels?

    python -m htc_dev.bench gac_rank            # leave-one-family-out choice, then the foreign table
    python -m htc_dev.bench gac_rank --quick    # 200 bootstrap resamples instead of 1,000

The shipped GAC (transfer ``signal-oof``) ranks every run set exactly as the minimum token probability. Where
another training-free signal ranks a set better (the mean entropy on the Gemma ``units`` runs), it loses. Each
candidate below ranks the runs with the three training-free signals only, label-free, and calibrates its score
with an out-of-family Platt map fitted on training runs
(:func:`htc_core.experiments.transfer_maps.out_of_family_platt`, as ``signal-oof`` does):

- ``min_prob`` (the shipped one), ``seq_prob``, ``neg_entropy``: one signal;
- ``z-mean``: per run, the mean of the three signals' scores (logit of a probability, minus the entropy as it is),
  each standardized with the training runs' mean and sd: rank averaging that needs no set, so a Monitor could
  run it; ``gac+z-mean`` counts the GAC's own score (the minimum token probability) twice;
- ``rank-mean``: the mean of the three signals' ranks within the scored set;
- ``consensus``: per set, the signal whose ranks agree most with the mean rank of the other two
  (:func:`htc_core.calibration.rank_ensemble.consensus_agreement`); ``spread``: the signal whose sd on the set is
  the largest multiple of its sd on the training runs; ``nearest-family``: the signal that ranks best the training
  family whose signals look most like the set's (each signal's mean and sd, in training sd), as the library's
  set-level step chooses it (:mod:`htc_core.calibration.signal_choice`: that family's best signal usable on the
  set); ``nearest-50``: the same as a GAC file scores it (a set under 50 runs keeps the minimum token probability);
  ``nearest-cut``: the minimum token probability where the nearest family lies further than any training family
  from its own nearest one; ``nearest-oof``: a second Platt step on ``nearest-family``'s confidences, fitted on
  each training family scored without it (how far the choice's calibration carries to a new family);
  ``nearest-reorder``: the minimum token probability's confidences (the per-run GAC's), handed out in the order of
  the signal ``nearest-family`` chose (:func:`htc_core.calibration.rank_ensemble.reorder`): its ranking, the
  per-run confidence histogram;
- ``bimodal``: per set, the signal whose scores are the most bimodal there
  (:func:`htc_core.calibration.rank_ensemble.choose_by_bimodality`), through that signal's map;
- ``bimodal-margin``: the minimum token probability unless another signal is more bimodal by a margin; the margin
  is chosen inside the training families of each split, the same way as the candidate.

The choice, on the training runs only (``sample_runs/``, 10 families = task x model family): leave one family
out, fit the maps on the other nine, score the held-out family; a family is *met* where the candidate's AUROC is
at least the best signal's, a *clear loss* where the 95% paired bootstrap interval of the difference lies below 0
(:func:`htc_dev.bench.gac_foreign.auroc_gap`), otherwise *within noise*. The candidate chosen has the fewest
clear losses, then the most met, then the lowest mean deficit. The foreign sets (UALA HotpotQA files and both
together, the Gemma runs as a new model family with maps fitted on the SmolLM2 runs alone, the synthetic fixture)
are scored afterwards in the layout of ``python -m htc_dev.bench gac_foreign`` (99 rows: whole runs once for
``gac`` and once for ``gac-full``, which hold the same map, and 7 prefix cuts), labels only scoring.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .gac_foreign import CUTS, DEFAULT_FOREIGN, NEW_FAMILY, SAMPLE_RUNS, auroc_gap, fixture_sets, uala_sets

PER_RUN = {"min_prob": (0, 1, 0), "seq_prob": (1, 0, 0), "neg_entropy": (0, 0, 1), "z-mean": (1, 1, 1),
           "gac+z-mean": (1, 2, 1)}
SET_LEVEL = ("rank-mean", "consensus", "spread", "nearest-family", "nearest-50", "nearest-cut", "nearest-oof",
             "nearest-reorder", "bimodal", "bimodal-margin")
CANDIDATES = tuple(PER_RUN) + SET_LEVEL
NEAREST = ("min_prob", "nearest-family", "nearest-50", "nearest-cut", "nearest-oof", "nearest-reorder")    # shown with Brier and AUROC
MARGINS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, float("inf"))
DEFAULT = 1                      # the column of the minimum token probability: the shipped GAC's ranking


def signal_scores(ts) -> np.ndarray:
    """[n_runs, 3]: logit of the sequence probability, logit of the minimum token probability, minus the mean
    entropy (NaN without top-k alternatives): each signal on the scale its map reads."""
    from htc_core.calibration.transfer_methods import logit, training_free_signal_arrays

    s = training_free_signal_arrays(ts)
    return np.column_stack([logit(s["seq_prob"]), logit(s["min_prob"]), s["neg_entropy"]])


def weighted_mean(S: np.ndarray, w, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Per run, the ``w``-weighted mean of the standardized finite columns of ``S`` (0 where none is)."""
    Z = (S - mu) / sd
    W = np.where(np.isfinite(Z), np.asarray(w, dtype=np.float64), 0.0)
    return np.where(W.sum(axis=1) > 0, np.nansum(np.nan_to_num(Z) * W, axis=1) / np.maximum(W.sum(axis=1), 1e-12),
                    0.0)


class Maps:
    """Everything fitted on training rows (scores ``S``, labels ``y``, families ``groups``): each signal's and each
    per-run combination's out-of-family Platt map, the standardization of the combinations, the fill of NaNs."""

    def __init__(self, S: np.ndarray, y: np.ndarray, groups: np.ndarray, nested: bool = True):
        from htc_core.experiments.transfer_maps import out_of_family_platt

        self.mu, self.sd = np.nanmean(S, axis=0), np.nanstd(S, axis=0)
        self.fill = np.nanmedian(S, axis=0)
        self.signal = []
        for j in range(S.shape[1]):
            ok = np.isfinite(S[:, j])
            self.signal.append(increasing(out_of_family_platt(S[ok, j], y[ok], groups[ok]), S[ok, j], y[ok]))
        self.per_run = {}
        for m, w in PER_RUN.items():
            if sum(w) > 1:
                x = weighted_mean(S, w, self.mu, self.sd)
                self.per_run[m] = increasing(out_of_family_platt(x, y, groups), x, y)
        from htc_core.calibration.rank_ensemble import fit_rank_mean_platt

        self.rank_mean = fit_rank_mean_platt(S, y, groups)
        from htc_core.calibration.signal_choice import NAMES, build_entry

        # nearest-family as the library scores it (the set-level entry a GAC file holds), from these maps
        from htc_core.experiments.transfer_choice import SET_MIN_RUNS

        # (min_runs: the families too small to lend their best signal; the bench scores every set as a set anyway)
        self.entry = build_entry(S, y, groups, dict(zip(NAMES, self.signal)), min_runs=SET_MIN_RUNS)
        self.families = [(np.array(f["profile"], dtype=np.float64), NAMES.index(f["best"]))
                         for f in self.entry["families"]]
        self.cut = nearest_neighbour_distance(self.entry)
        self.outer = outer_step(S, y, groups) if nested else None

    def profile(self, S: np.ndarray) -> np.ndarray:
        """A set's signals in training units: each one's mean and sd on the set (NaN where undefined)."""
        with np.errstate(invalid="ignore"):
            return np.r_[(np.nanmean(S, axis=0) - self.mu) / self.sd, np.nanstd(S, axis=0) / self.sd]

    def column(self, S: np.ndarray, j: int) -> np.ndarray:
        from htc_core.calibration.transfer_methods import sigmoid

        a, b = self.signal[j]
        return sigmoid(a * np.where(np.isfinite(S[:, j]), S[:, j], self.fill[j]) + b)

    def pick(self, method: str, S: np.ndarray) -> int:
        """The column ``consensus`` or ``spread`` trusts on the set ``S`` (usable columns only)."""
        from htc_core.calibration import rank_ensemble as rk

        use = np.flatnonzero(rk.usable_columns(S))
        if not use.size:
            return DEFAULT
        if method in ("nearest-family", "nearest-oof"):
            return self.nearest(S)
        if method == "nearest-cut":
            return self.nearest(S, self.cut)
        if method == "consensus":
            if use.size < 3:                 # two rankers agree with each other equally: keep the default
                return DEFAULT if DEFAULT in use else int(use[0])
            score = rk.consensus_agreement(S[:, use])
        else:
            score = np.nanstd(S[:, use], axis=0) / self.sd[use]
        return int(use[int(np.argmax(score))])

    def nearest(self, S: np.ndarray, max_distance: float | None = None) -> int:
        """The library's choice (:func:`htc_core.calibration.signal_choice.choose_signal`): the best usable signal
        of the training family nearest to ``S`` in :meth:`profile`; the default beyond ``max_distance``."""
        from htc_core.calibration.signal_choice import NAMES, choose_signal

        return NAMES.index(choose_signal({**self.entry, "max_distance": max_distance}, S).signal)

    def confidences(self, method: str, S: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """The candidate ``method``'s confidences of one scored set ``S``."""
        from htc_core.calibration import rank_ensemble as rk
        from htc_core.calibration.transfer_methods import logit, sigmoid

        if method in PER_RUN and sum(PER_RUN[method]) == 1:
            return self.column(S, int(np.argmax(PER_RUN[method])))
        if method in PER_RUN:
            a, b = self.per_run[method]
            return sigmoid(a * weighted_mean(S, PER_RUN[method], self.mu, self.sd) + b)
        if method == "rank-mean":
            a, b = self.rank_mean
            return sigmoid(a * logit(rk.rank_mean(S)) + b)
        if method == "nearest-50":            # as a GAC file scores it: a set under SET_MIN_RUNS runs run by run
            from htc_core.experiments.transfer_choice import SET_MIN_RUNS

            return self.column(S, DEFAULT if len(S) < SET_MIN_RUNS else self.pick("nearest-family", S))
        if method in ("consensus", "spread", "nearest-family", "nearest-cut"):
            return self.column(S, self.pick(method, S))
        if method == "nearest-reorder":      # the per-run confidences, handed out in the chosen signal's order
            j = self.pick("nearest-family", S)
            return rk.reorder(self.column(S, DEFAULT), np.where(np.isfinite(S[:, j]), S[:, j], self.fill[j]))
        if method == "nearest-oof":
            a, b = self.outer
            return sigmoid(a * logit(self.column(S, self.pick(method, S))) + b)
        if method == "bimodal":
            return self.column(S, rk.choose_by_bimodality(S))
        return self.column(S, rk.choose_by_bimodality(S, default=DEFAULT, margin=margin))


def nearest_neighbour_distance(entry: dict) -> float:
    """The largest distance of a training family to its nearest other training family (``nearest-cut``'s
    ``max_distance``): beyond it, no training family was ever matched that far, so the choice is untested there."""
    P = np.array([f["profile"] for f in entry["families"]], dtype=np.float64)
    if len(P) < 2:
        return float("inf")
    D = np.nansum((P[:, None, :] - P[None, :, :]) ** 2, axis=2)
    np.fill_diagonal(D, np.inf)
    return float(D.min(axis=1).max())


def outer_step(S: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    """``nearest-oof``'s second Platt step: each training family scored by ``nearest-family`` fitted without it
    (its maps and family profiles from the others), then one Platt step on the logits of those out-of-family
    confidences (kept increasing): how far the chosen signal's map carries to a family the choice has not seen."""
    from htc_core.calibration.transfer_methods import logit, weighted_platt

    fams = sorted(set(groups))
    if len(fams) < 3:
        return 1.0, 0.0
    z = np.empty(len(y))
    for f in fams:
        m = groups == f
        z[m] = logit(Maps(S[~m], y[~m], groups[~m], nested=False).confidences("nearest-family", S[m]))
    return increasing(weighted_platt(z, y), z, y)


def increasing(ab: tuple[float, float], x: np.ndarray, y: np.ndarray, *, floor: float = 1e-3) -> tuple[float, float]:
    """The map ``ab`` (slope, intercept on ``x``) if its slope is positive; else a flat one of slope ``floor`` at the
    training base rate. Every candidate's score is larger = more confident by construction; an out-of-family step
    whose slope comes out negative (the map moves that much between families) would turn the ranking upside down
    (the entropy's map with SmolLM2 units held out did: AUROC 0.936 -> 0.05)."""
    from htc_core.calibration.transfer_methods import logit

    if ab[0] > 0:
        return ab
    return floor, float(logit(np.mean(y))) - floor * float(np.mean(x))


def best_column(S: np.ndarray, y: np.ndarray) -> int:
    """The column of ``S`` with the highest AUROC against ``y`` (a training family's labels), NaN rows left out."""
    from htc_core.calibration.metrics import auroc
    from htc_core.calibration.rank_ensemble import scaled_ranks

    aur = []
    for j in range(S.shape[1]):
        ok = np.isfinite(S[:, j])
        aur.append(auroc(y[ok], scaled_ranks(S[ok, j])[:, 0]) if ok.sum() > 1 and len(set(y[ok])) == 2 else np.nan)
    return int(np.nanargmax(aur)) if np.isfinite(aur).any() else DEFAULT


def families(ts) -> np.ndarray:
    from htc_core.experiments.transfer_families import family_groups

    return np.asarray(family_groups(ts.meta), dtype=object)


def verdicts(ts, S, y, maps: Maps, n_boot: int) -> dict:
    """method (and ``bimodal-margin@m`` for every margin) -> (ECE, auroc_gap dict) of one scored set."""
    from htc_core.calibration.metrics import auroc, brier_score, expected_calibration_error

    out = {}
    keys = [(m, 0.0) for m in CANDIDATES if m != "bimodal-margin"] + [("bimodal-margin", m) for m in MARGINS]
    for method, margin in keys:
        p = maps.confidences(method, S, margin)
        key = method if method != "bimodal-margin" else f"bimodal-margin@{margin}"
        out[key] = (float(expected_calibration_error(y, p)), auroc_gap(y, p, ts, n_boot=n_boot),
                    float(brier_score(y, p)), float(auroc(y, p)))
    return out


def tally(rows: list[dict]) -> tuple[int, int, int, float, float, float, float]:
    """(met, within noise, clear losses, mean deficit, worst deficit, mean ECE, worst ECE) of ``rows``
    ({"ece", "gap"})."""
    v = [r["gap"]["verdict"] for r in rows]
    d = [max(0.0, -r["gap"]["diff"]) for r in rows]
    e = [r["ece"] for r in rows]
    return (v.count("at least as well"), v.count("within noise"), v.count("clear loss"), float(np.mean(d)),
            float(np.max(d)), float(np.mean(e)), float(np.max(e)))


def rule_key(rows: list[dict]) -> tuple:
    """The choice's order: fewest clear losses, then most met, then the lowest mean AUROC deficit."""
    met, _, clear, mean_def, *_ = tally(rows)
    return (clear, -met, round(mean_def, 6))


def leave_one_family_out(ts, *, n_boot: int = 1000, progress=None) -> dict:
    """family -> :func:`verdicts` of that family's runs, every map fitted on the other families' runs."""
    S, y, g = signal_scores(ts), np.asarray(ts.labels, dtype=np.float64), families(ts)
    out = {}
    for i, fam in enumerate(sorted(set(g))):
        if progress:
            progress(f"  leave-one-family-out {i + 1}/{len(set(g))} ({fam})")
        tr, te = np.flatnonzero(g != fam), np.flatnonzero(g == fam)
        out[fam] = verdicts(ts.take(te), S[te], y[te], Maps(S[tr], y[tr], g[tr]), n_boot)
    return out


def chosen_margin(per_family: dict, leave_out: str | None = None) -> float:
    """The margin of ``bimodal-margin`` that :func:`rule_key` prefers over ``per_family`` without ``leave_out``
    (the smallest margin among equals)."""
    fams = [f for f in per_family if f != leave_out]
    return min(MARGINS, key=lambda m: (rule_key([_row(per_family[f], f"bimodal-margin@{m}") for f in fams]), m))


def _row(v: dict, name: str, **extra) -> dict:
    ece, gap, brier, aur = v[name]
    return {"ece": ece, "gap": gap, "brier": brier, "auroc": aur, **extra}


def metric_lines(rows_by_method: dict, methods: list[str]) -> str:
    """Mean and worst ECE, Brier and AUROC of ``methods`` over their rows (``rows_by_method``: method -> rows)."""
    lines = [f"{'method':16s} {'ECE mean/worst':>15} {'Brier mean/worst':>17} {'AUROC mean/worst':>17}"]
    for m in methods:
        e, b, a = (np.array([r[k] for r in rows_by_method[m]]) for k in ("ece", "brier", "auroc"))
        lines.append(f"{m:16s} {e.mean():6.3f} / {e.max():.3f}  {b.mean():7.3f} / {b.max():.3f}  "
                     f"{np.nanmean(a):7.3f} / {np.nanmin(a):.3f}")
    return "\n".join(lines)


def lofo_rows(per_family: dict) -> dict:
    """method -> one row per held-out family; ``bimodal-margin`` with its margin chosen on the other families."""
    out = {}
    for m in CANDIDATES:
        rows = []
        for f, v in per_family.items():
            key = f"bimodal-margin@{chosen_margin(per_family, f)}" if m == "bimodal-margin" else m
            rows.append(_row(v, key, family=f, key=key))
        out[m] = rows
    return out


def choose(rows_by_method: dict) -> str:
    """The candidate :func:`rule_key` prefers (the shipped ``min_prob`` among equals)."""
    return min(rows_by_method, key=lambda m: (rule_key(rows_by_method[m]), m != "min_prob"))


def case_rows(train, sets: list, *, n_boot: int, margin: float, progress=None) -> list[dict]:
    """The 9 rows of every set of ``sets`` (whole runs for gac and gac-full, then each prefix cut), every
    candidate's maps fitted on ``train`` (whole runs; every prefix of them for the cuts)."""
    from htc_core.traces.prefix import prefixes

    from ..train_gac_prefix import all_prefixes

    y_of = lambda t: np.asarray(t.labels, dtype=np.float64)       # noqa: E731
    pre = all_prefixes(train)
    whole = Maps(signal_scores(train), y_of(train), families(train))
    by_prefix = Maps(signal_scores(pre), y_of(pre), families(pre))
    rows = []
    for name, ts in sets:
        if progress:
            progress(f"  {name}")
        v = verdicts(ts, signal_scores(ts), y_of(ts), whole, n_boot)
        rows += [{"set": name, "cut": "whole runs", "model": m, "v": v} for m in ("gac", "gac-full")]
        for label, cut in CUTS:
            p = prefixes(ts, **cut)
            rows.append({"set": name, "cut": label, "model": "gac-prefix",
                         "v": verdicts(p, signal_scores(p), y_of(p), by_prefix, n_boot)})
    for r in rows:
        r["margin"] = margin
    return rows


def foreign_tally(rows: list[dict], method: str) -> tuple:
    key = lambda r: f"bimodal-margin@{r['margin']}" if method == "bimodal-margin" else method   # noqa: E731
    return tally([_row(r["v"], key(r)) for r in rows])


def _labeled(path):
    from htc_core.formats import load

    ts, _ = load([str(path)])
    return ts.labeled()


def lofo_table(rows_by_method: dict, chosen: str) -> str:
    head = (f"{'method':16s} {'met':>4} {'noise':>5} {'clear':>5}  {'deficit mean/worst':>18}  "
            f"{'ECE mean/worst':>14}")
    lines = [head]
    for m, rows in rows_by_method.items():
        met, noise, clear, dm, dw, em, ew = tally(rows)
        lines.append(f"{m + (' *' if m == chosen else ''):16s} {met:4d} {noise:5d} {clear:5d}  {dm:8.3f} / {dw:.3f}  "
                     f"{em:6.3f} / {ew:.3f}")
    return "\n".join(lines)


def family_lines(rows_by_method: dict, methods: list[str]) -> str:
    lines = [f"{'held-out family':34s} " + " ".join(f"{m:>26s}" for m in methods)]
    for i, r in enumerate(rows_by_method[methods[0]]):
        cells = []
        for m in methods:
            x = rows_by_method[m][i]
            g = x["gap"]
            cells.append(f"{g['diff']:+.3f} {g['verdict'][:5]:5s} ECE {x['ece']:.3f}"
                         + (f" m={x['key'].split('@')[1]}" if "@" in x.get("key", "") else ""))
        lines.append(f"{r['family']:34s} " + " ".join(f"{c:>26s}" for c in cells))
    return "\n".join(lines)


def foreign_table(rows: list[dict]) -> str:
    lines = [f"{'method':16s} {'met':>4} {'noise':>5} {'clear':>5}  {'deficit mean/worst':>18}  {'ECE mean/worst':>14}"
             f"  (of {len(rows)} rows)"]
    for m in CANDIDATES:
        met, noise, clear, dm, dw, em, ew = foreign_tally(rows, m)
        lines.append(f"{m:16s} {met:4d} {noise:5d} {clear:5d}  {dm:8.3f} / {dw:.3f}  {em:6.3f} / {ew:.3f}")
    return "\n".join(lines)


def margin_lines(rows: list[dict]) -> str:
    """``bimodal-margin`` on the foreign rows at every margin, one for all cases (shown, chosen by nothing)."""
    lines = ["bimodal-margin at a fixed margin on every foreign row (shown only; the margin is chosen on training runs)"]
    for m in MARGINS:
        met, noise, clear, dm, dw, em, ew = tally([_row(r["v"], f"bimodal-margin@{m}") for r in rows])
        lines.append(f"  margin {m:<5}: met {met}, within noise {noise}, clear losses {clear}; deficit mean {dm:.3f}, "
                     f"worst {dw:.3f}; ECE mean {em:.3f}, worst {ew:.3f}")
    return "\n".join(lines)


def set_lines(rows: list[dict], methods: list[str]) -> str:
    lines = [f"{'set @ cut':52s} " + " ".join(f"{m:>30s}" for m in methods)]
    for r in rows:
        if r["model"] == "gac-full":
            continue
        cells = []
        for m in methods:
            key = f"bimodal-margin@{r['margin']}" if m == "bimodal-margin" else m
            ece, g, *_ = r["v"][key]
            cells.append(f"{g['diff']:+.3f} {g['verdict'][:5]:5s} ({g['signal'] or '-'}) ECE {ece:.3f}")
        lines.append(f"{(r['set'] + ' @ ' + r['cut'])[:52]:52s} " + " ".join(f"{c:>30s}" for c in cells))
    return "\n".join(lines)


def fallback_lines(ts) -> str:
    """How ``nearest-family`` should fall back where a set lacks top-k alternatives (its entropy undefined), chosen
    on the training runs: each family held out with its entropy removed, the maps and profiles fitted on the other
    nine; the AUROC of (a) the minimum token probability (the default), (b) the nearest family's best signal
    that the set defines (the library's rule), (c) the best signal of the nearest family whose best is defined on
    the set; against the better of the two defined signals."""
    from htc_core.calibration.metrics import fast_auroc
    from htc_core.calibration.signal_choice import NAMES, choose_signal

    S, y, g = signal_scores(ts), np.asarray(ts.labels, dtype=np.float64), families(ts)
    res = {"default (min_prob)": [], "nearest family's best defined (library)": [],
           "nearest family whose best is defined": []}
    best = []
    for fam in sorted(set(g)):
        tr, te = g != fam, g == fam
        maps = Maps(S[tr], y[tr], g[tr], nested=False)
        T = S[te].copy()
        T[:, 2] = np.nan
        aur = [float(fast_auroc(y[te], S[te][:, j])[0]) for j in range(2)]
        fams = [f for f in maps.entry["families"] if f["best"] != "neg_entropy"]
        other = choose_signal({**maps.entry, "families": fams}, T).signal
        for key, sig in zip(res, ("min_prob", choose_signal(maps.entry, T).signal, other)):
            res[key].append(aur[NAMES.index(sig)])
        best.append(max(aur))
    best = np.array(best)
    lines = ["Sets without alternatives, simulated on the training families (entropy removed from the held-out one): "
             "AUROC against the better of the two defined signals"]
    for key, v in res.items():
        v = np.array(v)
        lines.append(f"  {key:42s} met {int(np.sum(v >= best - 1e-12))} of {len(v)}; mean AUROC {v.mean():.3f}; "
                     f"deficit mean {np.mean(best - v):.3f}, worst {np.max(best - v):.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench gac_rank", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200 bootstrap resamples per row instead of 1,000")
    ap.add_argument("--details", action="store_true", help="also print every foreign row")
    args = ap.parse_args(argv)
    n_boot = 200 if args.quick else 1000
    say = lambda s: print(s, file=sys.stderr)      # noqa: E731
    ts = _labeled(SAMPLE_RUNS)
    per_family = leave_one_family_out(ts, n_boot=n_boot, progress=say)
    rows = lofo_rows(per_family)
    chosen = choose(rows)
    print("Leave one family out on the training runs (sample_runs/, 10 families); * = the choice "
          "(fewest clear losses, then most met, then the lowest mean deficit)")
    print(lofo_table(rows, chosen))
    print(family_lines(rows, ["min_prob", "bimodal", "bimodal-margin", "z-mean"]))
    print(metric_lines(rows, list(NEAREST)))
    print(fallback_lines(ts))
    new = ts.meta["model"].astype(str).str.startswith(NEW_FAMILY).to_numpy()
    old = ts.take(np.flatnonzero(~new))
    say("leave-one-family-out on the SmolLM2 families alone (the margin of the new-family case)")
    margin_old = chosen_margin(leave_one_family_out(old, n_boot=n_boot))
    held = ts.take(np.flatnonzero(new))
    tasks = held.meta["dataset"].astype(str).to_numpy()
    gemma = [(f"{NEW_FAMILY} {t} (new family)", held.take(np.flatnonzero(tasks == t))) for t in sorted(set(tasks))]
    foreign = (case_rows(ts, uala_sets(DEFAULT_FOREIGN) + fixture_sets(), n_boot=n_boot,
                         margin=chosen_margin(per_family), progress=say)
               + case_rows(old, gemma + [(f"{NEW_FAMILY} all tasks (new family)", held)], n_boot=n_boot,
                           margin=margin_old, progress=say))
    print(f"\nForeign sets, after the choice (margin of bimodal-margin: {chosen_margin(per_family)} for UALA and "
          f"the fixture, {margin_old} for the new family); rows as in python -m htc_dev.bench gac_foreign")
    print(foreign_table(foreign))
    print(metric_lines({m: [_row(r["v"], m) for r in foreign] for m in NEAREST}, list(NEAREST)))
    whole = [r for r in foreign if r["cut"] == "whole runs"]
    print(f"\nThe whole-run rows only (what gac and gac-full score; a prefix row needs a set-level step in gac-prefix)")
    print(foreign_table(whole))
    print(metric_lines({m: [_row(r["v"], m) for r in whole] for m in NEAREST}, list(NEAREST)))
    print(margin_lines(foreign))
    if args.details:
        print(set_lines(foreign, ["min_prob", chosen] if chosen != "min_prob" else ["min_prob", "bimodal"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
