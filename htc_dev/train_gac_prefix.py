"""Train the shipped prefix-aware General Agent Calibrator ``gac-prefix`` (the live Monitor's default model).

    python -m htc_dev.train_gac_prefix                 # reads sample_runs/ (two model families)
    python -m htc_dev.train_gac_prefix --out out/models   # a look elsewhere, without touching the package

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
- Card numbers: for each held-out family (task x model family), ``gac-prefix`` fitted on the prefixes of the
  other families and the whole-run GAC fitted on the whole runs of the other families, both scored zero-shot on the held-out runs'
  prefixes at 25/50/75/100% of their steps and at k = 1, 2, 3 steps (a run shorter than k enters whole).
  One seed (the fits are deterministic but for the inner folds' shuffling).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .train_gac import DEFAULT_OUT, DEFAULT_SAMPLE_RUNS, kind_counts, relative_path, submodel_card

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


def prefix_leave_one_out(ts, *, by: str = "family", variant: str = "reduced", seed: int = 42,
                         progress=print) -> tuple[list[dict], list[dict]]:
    """Rows (held-out group, prefix, model, n, ECE, Brier, AUROC): ``gac-prefix`` and the whole-run GAC
    fitted without the held-out group, scored zero-shot on its prefixes (see the module docstring); and the
    expected-error points (per held-out group: the shift measures and gac-prefix's ECE on the whole runs).
    ``by="family"``: task x model family (:func:`htc_core.experiments.transfer_eval.family_groups`)."""
    from htc_core.calibration.general import fit_general
    from htc_core.experiments.grouping import score_metrics
    from htc_core.experiments.transfer_eval import EXPERIMENT_ALPHAS, family_groups
    from htc_core.traces.prefix import prefixes

    ts = ts.labeled()
    groups = family_groups(ts.meta) if by == "family" else ts.meta[by].astype(str).to_numpy()
    rows, points = [], []
    for g in sorted(set(groups)):
        train, test = ts.take(np.flatnonzero(groups != g)), ts.take(np.flatnonzero(groups == g))
        y = test.labels
        if min(int(y.sum()), int(len(y) - y.sum())) < 1:
            continue
        kw = {"alphas": EXPERIMENT_ALPHAS, "inner_folds": 3}    # the experiment's coarser grid (see transfer_eval)
        models = {NAME: fit_prefix_gac(train, variant=variant, seed=seed, **kw),
                  "gac (whole runs)": fit_general(train, variant=variant, seed=seed, **kw)}
        for label, cut in _cuts():
            part = prefixes(test, **cut)
            for name, m in models.items():
                p = m.predict_proba_traces(part)[:, 1]
                rows.append({"heldout": g, "method": f"{name}, {label}", "prefix": label, "model": name,
                             "n": int(len(y)), **{k: {"mean": round(v, 4), "std": 0.0}
                                                  for k, v in score_metrics(y, p).items()}})
        points.append(_point(models[NAME], train, test, g))
        if progress is not None:
            progress(f"  held out {g}: done")
    return rows, points


def _point(gac, train, test, g: str) -> dict:
    """The expected-error point of one held-out group: shift measures (as GeneralCalibrator.assess measures
    them, against the training runs) and the ECE of ``gac`` on its whole runs."""
    from htc_core.experiments.grouping import has_alternatives, score_metrics
    from htc_core.calibration.shift import shift_check
    from htc_core.calibration.transfer_methods import em_prior

    p = gac.predict_proba(test)[:, 1]
    rate = float(train.labels.mean())
    rep = shift_check(gac, test)
    return {"family": g, "n": int(len(p)), "ece": round(score_metrics(test.labels, p)["ece"], 4),
            "max_shift": round(0.0 if not rep.known else float(np.nan_to_num(rep.max_shift)), 4),
            "rate_gap": round(abs(float(p.mean()) - rate), 4),
            "em_gap": round(abs(em_prior(p, rate).prior - rate), 4),
            "missing_topk": round(float((~has_alternatives(test)).mean() - (~has_alternatives(train)).mean()), 4)}


def _means(rows: list[dict]) -> list[dict]:
    """Mean over held-out groups, per prefix and model."""
    import pandas as pd

    df = pd.DataFrame([{**r, **{m: r[m]["mean"] for m in ("ece", "brier", "auroc")}} for r in rows])
    out = df.groupby(["prefix", "model"], sort=False)[["ece", "brier", "auroc"]].mean().round(4).reset_index()
    return out.to_dict("records")


def _decision(rows: list[dict]) -> str:
    text = ("Trained on every prefix so that a live Monitor's early steps are scored by a model that has seen early "
            "steps (a whole-run model sees only finished runs). Routing by alternatives as in gac.")
    if rows:
        text += " Leave-one-dataset-out, mean over held-out datasets (ECE / Brier / AUROC): " + "; ".join(
            f"{r['model']} at {r['prefix']}: {r['ece']:.3f} / {r['brier']:.3f} / {r['auroc']:.3f}"
            for r in _means(rows) if r["prefix"] in ("step 1", "step 2", "100% of steps"))
    return text


def build_card(ts, prefix_ts, sources, gac, loo_rows, variant: str, points: list | None = None) -> dict:
    from htc_core._version import __version__
    from htc_core.experiments.grouping import has_alternatives

    alt = has_alternatives(ts)
    return {
        "name": NAME,
        "title": "General Agent Calibrator for prefixes (Reduced, L1): the live Monitor's default model",
        "htc_version": __version__,
        "intended_use": "zero-shot calibrated confidence of a run that is still going (after each step), without "
                        "the user's labels: htc_core.Monitor() with no model, Recorder(monitor=True), htc monitor "
                        "without MODEL. Fit your own calibrator on labeled prefixes of your task when you have them.",
        "training_data": {"sources": [relative_path(s) for s in sources],
                          "licenses": {"sample_runs": "the project's own runs (Apache-2.0)",
                                       "uala-hotpotqa": "MIT (see its LICENSE)"},
                          "n": int(len(ts)), "n_prefixes": int(len(prefix_ts)),
                          "prefixes": "every prefix k = 1 .. S steps of every run, labeled with the run's outcome",
                          "positive_rate": round(float(ts.labels.mean()), 4),
                          "runs_with_alternatives": int(alt.sum()), "runs_without_alternatives": int((~alt).sum()),
                          "by_dataset_and_model": kind_counts(ts)},
        "variant": variant,
        "models": {k: submodel_card(m) for k, m in gac.models.items()},
        "routing": "per run, from the input: runs that list top-k alternatives -> with_alternatives; runs without "
                   "-> without_alternatives (a Monitor switches when the first alternative arrives)",
        "decision": _decision(loo_rows),
        "leave_one_out": {"by": "family (task x model family)",
                          "protocol": "each held-out family's runs never reach a fit; gac-prefix "
                          "fitted on the other families' prefixes and the whole-run GAC on their whole runs, both "
                          "scored on the held-out runs' prefixes", "seeds": [42],
                          "mean_over_heldout": _means(loo_rows), "rows": loo_rows},
        "expected_error": {"points": list(points or []), "training_rate": round(float(ts.labels.mean()), 4),
                           "training_share_without_alternatives": round(float((~alt).mean()), 4),
                           "how": "htc_core.calibration.expected_error, points from the leave-one-family-out "
                                  "fits scored on the held-out families' whole runs"},
        "transfer": {"chosen": "gac", "held": None,
                     "why": "a live Monitor folds the two linear sub-models into its per-step update; the "
                            "combination with a training-free signal chosen for gac is not applied to prefixes"},
        "regenerate": "python -m htc_dev.train_gac_prefix",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.train_gac_prefix", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample-runs", type=Path, default=DEFAULT_SAMPLE_RUNS)
    ap.add_argument("--uala", type=Path, default=None,
                    help="also train on these runs (default none: the UALA HotpotQA runs are the foreign set)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"folder for {NAME}.json")
    ap.add_argument("--no-leave-one-out", action="store_true", help="skip the card's leave-one-out numbers")
    args = ap.parse_args(argv)

    from htc_core.formats import load

    wanted = [args.sample_runs] + ([args.uala] if args.uala else [])
    sources = [p for p in wanted if p.exists()]
    for p in wanted:
        if not p.exists():
            print(f"train_gac_prefix: warning: {p} not found; training without it", file=sys.stderr)
    if not sources:
        print("train_gac_prefix: error: no training data found", file=sys.stderr)
        return 2
    ts, _ = load([str(p) for p in sources])
    ts = ts.labeled()
    prefix_ts = all_prefixes(ts)
    print(f"training data: {len(ts)} labeled runs, {len(prefix_ts)} prefixes, from "
          f"{', '.join(map(relative_path, sources))}", file=sys.stderr)
    rows, points = ([], []) if args.no_leave_one_out else prefix_leave_one_out(
        ts, progress=lambda m: print(m, file=sys.stderr))
    if rows:
        print(f"{'prefix':<14}{'model':<18}{'ECE':>7}{'Brier':>7}{'AUROC':>7}   (mean over held-out datasets)")
        for r in _means(rows):
            print(f"{r['prefix']:<14}{r['model']:<18}{r['ece']:7.3f}{r['brier']:7.3f}{r['auroc']:7.3f}")
    gac = fit_prefix_gac(ts)
    gac.card = build_card(ts, prefix_ts, sources, gac, rows, "reduced", points)
    out = gac.save(args.out / f"{NAME}.json")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
