"""Train the shipped prefix-aware General Agent Calibrator ``gac-prefix`` (the live Monitor's default model).

    python -m htc_dev.train_gac_prefix                 # reads sample_runs/ (two model families)
    python -m htc_dev.train_gac_prefix --out out/models   # a look elsewhere, without touching the package
    python -m htc_dev.train_gac_prefix --compare-corpus htc_core/calibration/models/gac-prefix.json   # old vs grown

The whole-run GAC (``python -m htc_dev.train_gac``) sees only finished runs; a live
:class:`~htc_core.monitor.Monitor` scores a run after each of its steps, i.e. prefixes. ``gac-prefix`` is a
GAC (same two sub-models and routing as ``gac``: runs that list top-k alternatives -> a ``paper``-profile
model fitted on the runs that list them; runs without -> a ``chosen``-profile model fitted on all) fitted on
**every prefix of every labeled run**: the first k steps of each run for k = 1 .. S (its last prefix is the
whole run), each labeled with the outcome of the whole run, HTC-Reduced (L1).

Decisions where the issue is silent:

- Every prefix is one training row, so a run of S steps counts S times: long runs weigh more, as they do in
  a monitor's stream of steps. The inner CV that picks alpha splits rows, so prefixes of one run may fall on
  both sides of an inner fold (alpha only); the card's numbers below are leave-one-dataset-out, where no run
  of the held-out dataset reaches a fit, so they are honest.
- Transfer, chosen as for ``gac`` but over prefixes (:func:`prefix_leave_one_out`): for each held-out family
  (task x model family) a prefix GAC is fitted on every prefix of the other families' runs, and every candidate
  of :mod:`htc_core.experiments.transfer_candidates` (the GAC as fitted, test-time standardization, EM base rate,
  importance weights, the stacks with the best training-free running signal, the signal alone) scores every
  prefix of the held-out runs. The shipped method is the one a Monitor can apply step by step with the lowest
  mean ECE there; the card also holds every candidate per cut (25/50/75/100% of the steps, step 1/2/3; a run
  shorter than k enters whole) next to each running signal's AUROC. ``--table-only`` prints both tables.
  One seed (the fits are deterministic but for the inner folds' shuffling).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .train_gac import (foreign_section, load_training, self_check_line, submodel_card, training_arguments,
                        training_data)

NAME = "gac-prefix"
FRACTIONS = (0.25, 0.5, 0.75, 1.0)
STEPS = (1, 2, 3)


def all_prefixes(ts):
    """Every prefix (k = 1 .. S steps) of every run of ``ts``, ids ``RUN@k``; label and metadata of the run."""
    from htc_core.traces import concat
    from htc_core.traces.prefix import prefixes

    S = ts.steps_per_trajectory
    parts = []
    for k in range(1, int(S.max()) + 1 if len(S) else 1):
        idx = np.flatnonzero(S >= k)
        part = prefixes(ts.take(idx), k)
        part.meta["id"] = [f"{v}@{k}" for v in part.meta["id"]]
        parts.append(part)
    return concat(parts)


def fit_prefix_gac(ts, *, variant: str = "reduced", seed: int = 42, **fit_kw):
    """A GAC fitted on every prefix of every labeled run of ``ts`` (``fit_kw``: HTCCalibrator parameters)."""
    from htc_core.calibration.general import fit_general

    return fit_general(all_prefixes(ts.labeled()), variant=variant, name=NAME, seed=seed, **fit_kw)


def _cuts():
    return [(f"{f:.0%} of steps", dict(fraction=f)) for f in FRACTIONS] + [(f"step {k}", dict(steps=k)) for k in STEPS]


def cut_rows(ts, ids) -> dict:
    """prefix label -> the positions in ``ids`` (prefix ids ``RUN@k`` of :func:`all_prefixes`) of each run's
    prefix at that cut (25/50/75/100% of its steps, step 1/2/3; a run shorter than k enters whole)."""
    from htc_core.traces.prefix import prefix_lengths

    pos = {str(v): i for i, v in enumerate(ids)}
    run_ids = [str(v) for v in ts.ids]
    return {label: np.array([pos[f"{r}@{k}"] for r, k in zip(run_ids, prefix_lengths(ts, **cut))], dtype=np.int64)
            for label, cut in _cuts()}


def prefix_leave_one_out(ts, *, seed: int = 42, progress=print):
    """The transfer candidates of :mod:`htc_core.experiments.transfer_candidates` chosen leave-one-family-out over
    *prefixes*: for each held-out family (task x model family) a prefix GAC fitted on every prefix of the other
    families' runs, each candidate scored on every prefix of the held-out runs (the Monitor's stream; the
    choice is made there), and per cut (:func:`cut_rows`). Returns (the TransferChoice, the per-cut rows, the
    prepared prefix data for :func:`htc_core.experiments.transfer_entry.fit_transfer`)."""
    from htc_core.experiments.transfer_families import prepare
    from htc_core.experiments.transfer_lofo import leave_one_family_out

    ts = ts.labeled()
    d = prepare(all_prefixes(ts))
    choice = leave_one_family_out(d, seed=seed, progress=None if progress is None else (
        lambda i, n, g: progress(f"  leave-one-family-out over prefixes {i}/{n} ({g})")))
    return choice, by_cut(ts, d, choice), d


def by_cut(ts, d: dict, choice) -> list[dict]:
    """Per held-out family, cut and method: n, ECE, Brier, AUROC of the held-out confidences on those prefixes;
    and (method ``signal:NAME``) each training-free running signal's AUROC there."""
    from htc_core.experiments.grouping import score_metrics
    from htc_core.experiments.transfer_families import family_groups
    from htc_core.calibration.transfer_methods import SIGNALS

    fam = family_groups(ts.meta)
    rows = []
    for g in choice.shifts["family"]:
        sub = ts.take(np.flatnonzero(fam == g))
        for label, r in cut_rows(sub, d["ids"]).items():
            y = d["y"][r]
            for m, p in choice.predictions.items():
                rows.append({"heldout": g, "prefix": label, "method": m, "n": int(len(r)),
                             **{k: round(v, 4) for k, v in score_metrics(y, p[r]).items()}})
            for s in SIGNALS:
                v = d["signals"][s].to_numpy()[r]
                ok = np.isfinite(v)
                if ok.sum() > 1 and len(set(y[ok])) == 2:
                    rows.append({"heldout": g, "prefix": label, "method": f"signal:{s}", "n": int(ok.sum()),
                                 "auroc": round(score_metrics(y[ok], v[ok])["auroc"], 4)})
    return rows


def mean_by_cut(rows: list[dict]) -> list[dict]:
    """Mean over held-out families, per cut and method (signals: AUROC only)."""
    import pandas as pd

    df = pd.DataFrame(rows)
    cols = [c for c in ("ece", "brier", "auroc") if c in df]
    out = df.groupby(["prefix", "method"], sort=False)[cols].mean().round(4).reset_index()
    return [{k: v for k, v in r.items() if v == v} for r in out.to_dict("records")]


def points_by_cut(choice, rows: list[dict], chosen: str) -> list[dict]:
    """The expected-error points of the chosen method (shift measures and ECE on every held-out prefix),
    with ``ece_low``/``ece_high``: its lowest and highest ECE over the cuts of that family."""
    from htc_core.experiments.transfer_range import expected_error_points

    out = []
    for p in expected_error_points(choice, chosen):
        e = [r["ece"] for r in rows if r["heldout"] == p["family"] and r["method"] == chosen]
        out.append({**p, "ece_low": round(min(e + [p["ece"]]), 4), "ece_high": round(max(e + [p["ece"]]), 4)})
    return out


def _decision(chosen: str, means: list[dict]) -> str:
    text = ("Trained on every prefix so that a live Monitor's early steps are scored by a model that has seen early "
            "steps (a whole-run model sees only finished runs). Routing by alternatives as in gac. The transfer "
            f"method ({chosen}) is chosen leave-one-family-out over every prefix of the held-out runs, among those a "
            "Monitor can apply step by step (one run at a time, the signal kept running).")
    if means:
        text += " Mean over held-out families (ECE / AUROC): " + "; ".join(
            f"{r['method']} at {r['prefix']}: {r['ece']:.3f} / {r['auroc']:.3f}"
            for r in means if r["prefix"] in ("step 1", "100% of steps") and r["method"] in ("gac", chosen))
    return text


def loo_section(choice, rows: list[dict]) -> dict:
    """The card's leave-one-family-out section: every candidate on every held-out prefix (summary, rows), the
    chosen one, the same per cut (by_prefix, mean_by_prefix), the expected-error points and their self-check."""
    from htc_core.experiments.transfer_range import range_self_check

    out = choice.to_dict()
    chosen = out["chosen"]
    # a Monitor scores one run at a time, so no set-level method (which ranks a whole scored set) is shipped here
    out["set_level"] = None
    out.update({"by": "family (task x model family), every prefix of the held-out runs",
                "protocol": "each held-out family's runs never reach a fit: the prefix GAC is fitted on every "
                            "prefix of the other families' runs, the candidates' combinations on those prefixes; "
                            "scored on every prefix of the held-out runs (the choice) and per cut",
                "seeds": [42], "by_prefix": rows, "mean_by_prefix": mean_by_cut(rows),
                "points": points_by_cut(choice, rows, chosen), "regenerate": "python -m htc_dev.train_gac_prefix"})
    out["range_self_check"] = range_self_check(choice, out["points"], chosen)
    return out


def build_card(ts, prefix_ts, sources, gac, loo: dict, variant: str) -> dict:
    from htc_core._version import __version__
    from htc_core.experiments.grouping import has_alternatives

    p_alt = has_alternatives(prefix_ts)
    chosen = loo.get("chosen", "gac")
    return {
        "name": NAME,
        "title": "General Agent Calibrator for prefixes (Reduced, L1): the live Monitor's default model",
        "htc_version": __version__,
        "intended_use": "zero-shot calibrated confidence of a run that is still going (after each step), without "
                        "the user's labels: htc_core.Monitor() with no model, Recorder(monitor=True), htc monitor "
                        "without MODEL. Fit your own calibrator on labeled prefixes of your task when you have them.",
        "training_data": training_data(
            ts, sources, n_prefixes=int(len(prefix_ts)),
            prefixes="every prefix k = 1 .. S steps of every run, labeled with the run's outcome"),
        "variant": variant,
        "models": {k: submodel_card(m) for k, m in gac.models.items()},
        "routing": "per run, from the input: runs that list top-k alternatives -> with_alternatives; runs without "
                   "-> without_alternatives (a Monitor switches when the first alternative arrives)",
        "decision": _decision(chosen, loo.get("mean_by_prefix", [])),
        "leave_one_out": loo,
        "expected_error": {"points": list(loo.get("points") or []),
                           "training_rate": round(float(prefix_ts.labels.mean()), 4),
                           "training_share_without_alternatives": round(float((~p_alt).mean()), 4),
                           "how": "htc_core.calibration.expected_error: the ECE range of the 3 held-out families "
                                  "nearest in shift, from the lowest to the highest ECE the chosen method reached "
                                  "on them at any cut (ece_low, ece_high), widened by ECE's sampling noise"},
        "transfer": {"chosen": chosen, "held": gac.transfer,
                     "why": "the candidate a Monitor can apply step by step (one run at a time) with the lowest "
                            "mean ECE over every prefix of the held-out families (leave_one_out.summary, rows; "
                            "per cut: by_prefix); the Monitor keeps the signal running (RunningSignals)"},
        "regenerate": "python -m htc_dev.train_gac_prefix",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.train_gac_prefix", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    training_arguments(ap, f"folder for {NAME}.json")
    ap.add_argument("--table-only", action="store_true",
                    help="print the leave-one-family-out tables (the card's, reproduced) and write nothing")
    args = ap.parse_args(argv)

    ts, sources = load_training(args, "train_gac_prefix")
    if ts is None:
        return 2
    progress = lambda m: print(m, file=sys.stderr)    # noqa: E731
    if args.compare_corpus is not None:
        compare_corpus(ts, sources, args.compare_corpus, seed=args.seed)
        return 0
    if args.table_only:
        choice, rows, _ = prefix_leave_one_out(ts, seed=args.seed, progress=progress)
        print(choice.table())
        loo = loo_section(choice, rows)
        print(cut_table(loo["mean_by_prefix"], loo["chosen"]))
        print(self_check_line(loo["range_self_check"]))
        return 0
    gac = train_prefix_model(ts, sources, seed=args.seed, progress=progress, foreign=args.uala is None)
    out = gac.save(args.out / f"{NAME}.json")
    print(f"wrote {out} (transfer: {gac.card['transfer']['chosen']})")
    return 0


def compare_corpus(ts, sources: list[Path], model_file: Path, *, seed: int = 42) -> bool:
    """The fair comparison (:mod:`htc_dev.compare_corpus`) of this procedure over prefixes, on the corpus of
    ``model_file`` and on the labeled runs ``ts``: both score every prefix of each held-out family's runs (a run's
    prefixes resampled together), the UALA files at the card's cuts; prints it and returns whether the rule
    ships the retrained gac-prefix."""
    from functools import partial

    from htc_core.experiments.corpus_compare import compare_corpora
    from htc_core.experiments.transfer_families import prepare

    from . import compare_corpus as cc
    from .train_gac import DEFAULT_UALA, corpus_of

    ts = ts.labeled()
    pre = all_prefixes(ts)
    run_of = np.array([str(i).rsplit("@", 1)[0] for i in pre.ids], dtype=object)
    old_ids = corpus_of(ts, model_file).ids
    old, old_runs = cc.rows_in(run_of, old_ids), cc.rows_in(ts.ids, old_ids)
    print(f"old corpus: {int(old_runs.sum())} of the {len(ts)} runs ({model_file}); nested leave-one-family-out "
          "over prefixes", file=sys.stderr)
    cmp = compare_corpora(prepare(pre), old, seed=seed, clusters=run_of, points=partial(cut_points, ts),
                          progress=lambda i, n, g: print(f"  held out {i}/{n} ({g})", file=sys.stderr))
    fits = {k: {NAME: train_prefix_model(ts.filter(m), sources, seed=seed, verbose=False, foreign=False)}
            for k, m in (("old", old_runs), ("new", np.ones(len(ts), dtype=bool)))}
    print(cc.same_as_file(fits["old"], Path(model_file).parent, DEFAULT_UALA))
    checks = cc.lofo_checks(cmp.bootstrap("chosen", n_boot=cc.N_BOOT)) + cc.foreign_checks(
        fits["old"], fits["new"], DEFAULT_UALA, cuts=_cuts())
    return cc.print_report(cmp, checks, [NAME])


def cut_points(ts, choice, method: str, data: dict) -> list[dict]:
    """The expected-error points (:func:`points_by_cut`) of a leave-one-family-out ``choice`` over the prefixes
    ``data`` (prepared, ids ``RUN@k``) of runs of ``ts``: what a procedure fitted on those runs prints from."""
    runs = {str(i).rsplit("@", 1)[0] for i in data["ids"]}
    sub = ts.filter(np.array([str(i) in runs for i in ts.ids], dtype=bool))
    return points_by_cut(choice, by_cut(sub, data, choice), method)


def train_prefix_model(ts, sources: list[Path], *, seed: int = 42, progress=None, verbose: bool = True,
                       foreign: bool = True):
    """``gac-prefix`` fitted on every prefix of the labeled runs ``ts``, its transfer chosen leave-one-family-out
    over prefixes, with its card. What the shipped file is made of; :mod:`htc_dev.bench.gac_foreign` calls it on
    one model family to score the other as a new family."""
    from htc_core.experiments.transfer_entry import fit_transfer

    ts = ts.labeled()
    choice, rows, d = prefix_leave_one_out(ts, seed=seed, progress=progress)
    loo = loo_section(choice, rows)
    if verbose:
        print(choice.table())
        print(cut_table(loo["mean_by_prefix"], loo["chosen"]))
        print(self_check_line(loo["range_self_check"]))
    gac = fit_prefix_gac(ts, seed=seed)
    gac.transfer = fit_transfer(d, loo["chosen"], seed=seed, models=gac.models)
    gac.card = build_card(ts, all_prefixes(ts), sources, gac, loo, "reduced")
    if foreign:
        gac.card["foreign_evaluation"] = foreign_section(gac, cuts=_cuts())
    return gac


def cut_table(means: list[dict], chosen: str) -> str:
    """Mean over held-out families per cut: ECE/AUROC of gac, the chosen method, signal and stack-oof, and each
    running signal's AUROC."""
    from htc_core.calibration.transfer_methods import SIGNALS

    methods = list(dict.fromkeys(["gac", chosen, "signal", "stack-oof"]))
    head = f"{'prefix':<15}" + "".join(f"{m:>14}" for m in methods) + "".join(f"{s:>12}" for s in SIGNALS)
    lines = ["ECE/AUROC per cut, mean over held-out families (every prefix model fitted without the family)", head]
    by = {(r["prefix"], r["method"]): r for r in means}
    for label, _ in _cuts():
        cells = [f"{by[(label, m)]['ece']:.3f}/{by[(label, m)]['auroc']:.3f}" if (label, m) in by else "-"
                 for m in methods]
        sig = [f"{by[(label, 'signal:' + s)]['auroc']:.3f}" if (label, "signal:" + s) in by else "-" for s in SIGNALS]
        lines.append(f"{label:<15}" + "".join(f"{c:>14}" for c in cells) + "".join(f"{c:>12}" for c in sig))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
