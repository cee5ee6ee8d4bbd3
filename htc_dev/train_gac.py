"""Train the shipped General Agent Calibrators and write their model files with cards.

    python -m htc_dev.train_gac                  # reads sample_runs/ (two model families)
    python -m htc_dev.train_gac --table-only     # reproduces the card's leave-one-family-out table
    python -m htc_dev.train_gac --out out/models # a quick look elsewhere
    python -m htc_dev.train_gac --compare-corpus htc_core/calibration/models/gac.json   # old vs grown corpus, fairly

An application of the library (it reads files, so it lives above ``calibration``, like the CLI). Reads the
labeled runs of ``sample_runs/`` where they are (SmolLM2-135M and Gemma 3 270M on six task families;
``--uala DIR`` adds more), runs the leave-one-family-out comparison of the transfer candidates
(:func:`htc_core.experiments.transfer_lofo.leave_one_family_out`), ships the winner among those a file can hold,
fits ``gac`` (Reduced) and ``gac-full`` on all runs and writes ``htc_core/calibration/models/gac.json`` and
``gac-full.json`` with cards (every training run set, the table, the expected-error points). Only these JSON
files are committed. The UALA HotpotQA runs (Llama-2-70B) are not trained on: they are the foreign set of
``python -m htc_dev.bench.gac_foreign``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SAMPLE_RUNS = REPO / "sample_runs"
DEFAULT_UALA = REPO.parent / "shared" / "data" / "uala-hotpotqa"
DEFAULT_OUT = REPO / "htc_core" / "calibration" / "models"
NAMES = {"reduced": "gac", "full": "gac-full"}

DECISION = (
    "Runs with top-k alternatives (sample_runs, top-5) and runs without (UALA HotpotQA, chosen-token logprobs "
    "only) give systematically different features: without alternatives Top1Conf and TopkConf fall back to r. "
    "Leave-one-dataset-out, one 'paper'-profile model pooled over both kinds ('pooled') ranks the held-out "
    "HotpotQA runs worse than chance (AUROC below 0.5); a model on 'chosen'-profile features (alternatives "
    "ignored for every run) does not invert. For held-out runs that list alternatives, a 'paper' model fitted "
    "only on the pooled runs that list them ('by-kind') has the lower mean ECE and Brier over the held-out "
    "datasets than 'pooled' (not on every dataset, and 'pooled' ranks slightly better on mean AUROC; see "
    "mean_by_kind_of_heldout and rows), and ignoring the alternatives for them ('chosen') is worse on ECE. "
    "Calibration (ECE) is what a zero-shot confidence is for, so the GAC holds two models and picks one per run from "
    "the input: runs that list alternatives -> with_alternatives ('paper' profile, trained on the runs with "
    "alternatives); runs without -> without_alternatives ('chosen' profile, trained on all runs). "
    "(Decided on the earlier corpus with UALA HotpotQA in training, htc_core.experiments.gac.gac_leave_one_out; "
    "kept since.) On top of the routed model, the transfer method is chosen leave-one-family-out (see transfer).")


def relative_path(p: Path) -> str:
    """``p`` relative to the repository root (``sample_runs``, ``../shared/data/uala-hotpotqa``)."""
    import os

    return os.path.relpath(p.resolve(), REPO)


def kind_counts(ts) -> list[dict]:
    from htc_core.experiments.grouping import has_alternatives

    m = ts.meta.assign(alternatives=has_alternatives(ts), success=ts.labels)
    g = m.groupby(["dataset", "model"], dropna=False)
    return [{"dataset": str(d), "model": str(mo), "runs": int(len(x)), "success_rate": round(float(x.success.mean()), 4),
             "top_k_alternatives": bool(x.alternatives.all())} for (d, mo), x in g]


def run_sets(ts) -> list[dict]:
    """Every training run set (one file of sample_runs: a task x decoding configuration of one model)."""
    from htc_core.experiments.transfer_families import model_family

    m = ts.meta.assign(success=ts.labels)
    out = []
    for (d, mo), x in m.groupby(["dataset", "model"], dropna=False):
        out.append({"run_set": f"{d}_{mo}", "model": str(mo), "model_family": model_family(str(mo)),
                    "task": str(d), "runs": int(len(x)), "success_rate": round(float(x.success.mean()), 4)})
    return out


def submodel_card(m) -> dict | None:
    if m is None:
        return None
    return {"profile": m.profile_, "top_k": int(m.top_k_), "variant": m.variant, "alpha": float(m.alpha_),
            "n_train": int(m.training_summary_.get("n", 0)),
            "positive_rate": round(float(m.training_summary_.get("positive_rate", float("nan"))), 4),
            "n_selected": int(m.n_selected_), "selected_features": m.selected_features_}


def loo_section(choice) -> dict:
    """The card's leave-one-family-out section: every candidate per held-out family, the chosen one, the
    expected-error points (shift measures and the chosen method's ECE per family)."""
    from htc_core.experiments.transfer_range import expected_error_points, range_self_check

    out = choice.to_dict()
    out["by"] = "family (task x model family)"
    if out["chosen"] == "gac":
        out["set_level"] = None          # a set-level entry lives in a transfer entry, which 'gac' has none of
    scored = out["set_level"] or out["chosen"]
    out["points"] = expected_error_points(choice, scored)
    out["range_self_check"] = range_self_check(choice, out["points"], scored)
    # runs scored one by one (a set under set_min_runs, htc score --per-run): the per-run method's points
    out["points_per_run"] = expected_error_points(choice, out["chosen"])
    out["range_self_check_per_run"] = range_self_check(choice, out["points_per_run"], out["chosen"])
    out["regenerate"] = "python -m htc_dev.train_gac --table-only"
    return out


def foreign_section(gac, folder: Path = DEFAULT_UALA, cuts: list | None = None) -> dict:
    """The card's foreign evaluation: ``gac`` zero-shot on every run file of ``folder`` (never trained on, never
    used for a choice), beside each training-free signal and the expected ECE range it prints beforehand
    (:func:`htc_core.calibration.expected_error.zero_shot_check`); ``cuts`` (label, prefixes() arguments): on
    those prefixes of each run. Empty where the folder is not here."""
    from htc_core.calibration.expected_error import zero_shot_check
    from htc_core.formats import load
    from htc_core.traces.prefix import prefixes

    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    rows = []
    for f in files:
        ts, _ = load(str(f))
        ts = ts.labeled()
        for label, cut in cuts or [("whole runs", None)]:
            r = zero_shot_check(gac, ts if cut is None else prefixes(ts, **cut))
            e = r["expected"]
            rows.append({"set": f.name, "prefix": label, "n": r["n"], "success_rate": round(r["success_rate"], 4),
                         **{k: round(r[k], 4) for k in ("ece", "brier", "auroc", "best_signal_auroc")},
                         "signal_auroc": {k: round(v, 4) for k, v in r["signals"].items() if v == v},
                         "ranks_at_least_as_well_as_best_signal": r["gac_ranks_at_least_as_well"],
                         "expected_ece": [e["low"], e["high"]], "verdict": e["verdict"], "inside": r["inside"]})
    return {"sets": rows, "source": relative_path(folder) if files else None,
            "what": "UALA HotpotQA, Llama-2-70B (another model family and task, no top-k alternatives): zero-shot, "
                    "never trained on; all foreign sets: python -m htc_dev.bench gac_foreign"}


def self_check_line(rows: list[dict]) -> str:
    """How often the expected-error range, built from the other held-out families, held a family's own ECE."""
    miss = [f"{r['family']} {r['ece']:.3f} not in {r['low']:.2f}-{r['high']:.2f}" for r in rows if not r["inside"]]
    return (f"expected ECE range from the other families holds each held-out family's ECE on "
            f"{sum(r['inside'] for r in rows)} of {len(rows)}" + (f" (missed: {'; '.join(miss)})" if miss else ""))


def training_data(ts, sources: list[Path], **extra) -> dict:
    """The card's training_data section of a GAC trained on the labeled runs ``ts`` read from ``sources``: every
    run set with its model, task, size and success rate, the runs with and without top-k alternatives, and
    ``extra`` (e.g. the prefixes of ``gac-prefix``) after the run counts; shared by every GAC training command."""
    from htc_core.experiments.grouping import has_alternatives

    alt = has_alternatives(ts)
    return {"sources": [relative_path(s) for s in sources],
            "licenses": {"sample_runs": "the project's own runs (Apache-2.0)",
                         "uala-hotpotqa": "MIT (see its LICENSE), only when trained with --uala"},
            "run_sets": run_sets(ts), "n": int(len(ts)), **extra, "positive_rate": round(float(ts.labels.mean()), 4),
            "runs_with_alternatives": int(alt.sum()), "runs_without_alternatives": int((~alt).sum()),
            "by_dataset_and_model": kind_counts(ts)}


def training_arguments(ap: argparse.ArgumentParser, out_help: str) -> None:
    """The arguments every GAC training command takes: --sample-runs, --uala, --out (``out_help``), --seed."""
    ap.add_argument("--sample-runs", type=Path, default=DEFAULT_SAMPLE_RUNS)
    ap.add_argument("--uala", type=Path, default=None,
                    help="also train on these runs (default: none; the UALA HotpotQA runs of another model family "
                         "are the foreign evaluation set, htc_dev.bench.gac_foreign)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=out_help)
    ap.add_argument("--seed", type=int, default=42, help="seed of the inner folds (default 42)")
    ap.add_argument("--corpus-of", type=Path, default=None, metavar="MODEL_JSON",
                    help="train on the runs that model file was trained on: the run sets its card lists, the first "
                         "N runs of each as the card counts them (run set files only grow by appending), so that "
                         "--table-only reproduces that card's table after sample_runs/ has grown")
    ap.add_argument("--compare-corpus", type=Path, default=None, metavar="MODEL_JSON",
                    help="the fair comparison of this procedure on the corpus MODEL_JSON was trained on and on the "
                         "grown --sample-runs: nested leave-one-family-out, both scored on the same held-out runs, "
                         "and the UALA files; prints the ship rule of docs/gac.md applied, writes nothing")


def load_training(args, prog: str) -> tuple[object, list[Path]]:
    """(the labeled runs of ``args.sample_runs`` and ``args.uala`` that exist, those paths); a warning on stderr for
    each path not found; (None, []) when none is, or when --compare-corpus comes with --corpus-of or --uala (the
    command then exits 2)."""
    from htc_core.formats import load

    if getattr(args, "compare_corpus", None) is not None and (args.corpus_of is not None or args.uala):
        print(f"{prog}: error: --compare-corpus takes neither --corpus-of (it makes that corpus itself) nor --uala "
              "(the UALA files are its foreign set)", file=sys.stderr)
        return None, []
    wanted = [args.sample_runs] + ([args.uala] if args.uala else [])
    sources = [p for p in wanted if p.exists()]
    for p in wanted:
        if not p.exists():
            print(f"{prog}: warning: {p} not found; training without it", file=sys.stderr)
    if not sources:
        print(f"{prog}: error: no training data found", file=sys.stderr)
        return None, []
    ts, _ = load([str(p) for p in sources])
    ts = ts.labeled()
    if getattr(args, "corpus_of", None) is not None:
        ts = corpus_of(ts, args.corpus_of)
    print(f"training data: {len(ts)} labeled runs from {', '.join(map(relative_path, sources))}", file=sys.stderr)
    return ts, sources


def corpus_of(ts, model_file: Path):
    """The runs of ``ts`` that ``model_file`` was trained on: for each run set its card lists (dataset x model), the
    first ``runs`` runs in file order; run sets the card does not list are dropped. Raises ValueError when a listed
    run set holds fewer runs than the card counts (the files changed otherwise than by appending)."""
    import json

    import numpy as np

    listed = {r["run_set"]: int(r["runs"]) for r in json.loads(Path(model_file).read_text())["card"]
              ["training_data"]["run_sets"]}
    keys = (ts.meta["dataset"].astype(str) + "_" + ts.meta["model"].astype(str)).to_numpy()
    position = ts.meta.assign(key=keys).groupby("key").cumcount().to_numpy()
    keep = np.array([position[i] < listed.get(k, 0) for i, k in enumerate(keys)], dtype=bool)
    found = {k: int(n) for k, n in zip(*np.unique(keys[keep], return_counts=True))}
    short = {k: (n, found.get(k, 0)) for k, n in listed.items() if found.get(k, 0) < n}
    if short:
        raise ValueError(f"{model_file}: run sets with fewer runs than its card counts (card, found): {short}")
    return ts.filter(keep)


def build_card(name: str, variant: str, ts, sources: list[Path], loo: dict, gac) -> dict:
    from htc_core._version import __version__
    from htc_core.experiments.grouping import has_alternatives

    alt = has_alternatives(ts)
    return {
        "name": name,
        "title": f"General Agent Calibrator ({'Reduced, L1' if variant == 'reduced' else 'Full, L2'})",
        "htc_version": __version__,
        "intended_use": "zero-shot calibrated confidence for agent runs without outcome labels; the "
                        "leave-one-dataset-out numbers below are what to expect on a dataset it has not seen. "
                        "Fit your own HTC calibrator (htc fit) when you have labeled runs of your task.",
        "training_data": training_data(ts, sources),
        "models": {k: submodel_card(m) for k, m in gac.models.items()},
        "routing": "per run, from the input: runs that list top-k alternatives -> with_alternatives; "
                   "runs without -> without_alternatives",
        "decision": DECISION,
        "transfer": {"chosen": loo.get("chosen"), "set_level": loo.get("set_level"), "held": gac.transfer,
                     "why": "the candidate a GAC file can hold (one run at a time) with the lowest mean ECE over "
                            "the held-out families of leave-one-family-out (task x model family); see "
                            "leave_one_out.summary and rows. set_level: the set-level method (scores a run set of "
                            "at least set_min_runs runs from its own unlabeled ranks) with a mean ECE no higher "
                            "and a higher mean AUROC than the chosen one there, if any (leave_one_out.estimates: "
                            "how well the label-free SUMMA AUROC estimates matched the true AUROCs)"},
        "leave_one_out": loo,
        "expected_error": {"points": loo.get("points", []), "points_per_run": loo.get("points_per_run", []),
                           "training_rate": round(float(ts.labels.mean()), 4),
                           "training_share_without_alternatives": round(float((~alt).mean()), 4),
                           "how": "htc_core.calibration.expected_error: the ECE range of the 3 held-out families "
                                  "nearest in (max feature shift, |predicted - training base rate|, |EM base "
                                  "rate - training base rate|, missing top-k), widened by the sampling noise of "
                                  "ECE on the scored runs (up by its mean, down to its 1% quantile at most)"},
        "applicability": "each sub-model's training.feature_stats holds the per-feature mean and std of its "
                         "training runs; htc score prints the verdict and the expected ECE range with every "
                         "zero-shot score: outside the training data when a used feature's mean moves by 2 "
                         "training sd, the predicted base rate by 0.10 or the share of runs without top-k "
                         "alternatives by 0.5 (htc_core.calibration.shift, expected_error)",
        "regenerate": "python -m htc_dev.train_gac   (the leave-one-family-out table alone: "
                      "python -m htc_dev.train_gac --table-only)",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.train_gac", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    training_arguments(ap, "folder for gac.json and gac-full.json")
    ap.add_argument("--reuse-leave-one-out", action="store_true",
                    help="take the card's leave-one-family-out section from the model files already in --out "
                         "instead of recomputing it (minutes); for changes that do not touch the fits or the data")
    ap.add_argument("--table-only", action="store_true",
                    help="print the leave-one-family-out table (the card's, reproduced) and write nothing")
    args = ap.parse_args(argv)

    from htc_core.experiments.transfer_families import prepare
    from htc_core.experiments.transfer_lofo import leave_one_family_out

    ts, sources = load_training(args, "train_gac")
    if ts is None:
        return 2
    if args.compare_corpus is not None:
        compare_corpus(ts, sources, args.compare_corpus, seed=args.seed)
        return 0
    sections = _reused_sections(args.out) if args.reuse_leave_one_out else None
    if args.table_only:
        choice = leave_one_family_out(prepare(ts), seed=args.seed, progress=_progress)
        print(choice.table())
        print(choice.estimate_table())
        section = loo_section(choice)
        print(f"set-level method that wins: {section['set_level']}")
        print(self_check_line(section["range_self_check"]))
        return 0
    # the UALA runs are the foreign set scored into the card unless they are trained on (--uala)
    for name, gac in train_models(ts, sources, seed=args.seed, sections=sections, progress=_progress,
                                  foreign=args.uala is None).items():
        out = gac.save(args.out / f"{name}.json")
        print(f"wrote {out} (transfer: {gac.card['transfer']['chosen']})")
    return 0


def compare_corpus(ts, sources: list[Path], model_file: Path, *, seed: int = 42) -> bool:
    """The fair comparison (:mod:`htc_dev.compare_corpus`) of this procedure on the corpus of ``model_file`` and on
    the labeled runs ``ts``; prints it and returns whether the rule ships the retrained gac and gac-full."""
    from htc_core.experiments.corpus_compare import compare_corpora
    from htc_core.experiments.transfer_families import prepare

    from . import compare_corpus as cc

    old = cc.rows_in(ts.ids, corpus_of(ts, model_file).ids)
    print(f"old corpus: {int(old.sum())} of the {len(ts)} runs ({model_file}); nested leave-one-family-out",
          file=sys.stderr)
    cmp = compare_corpora(prepare(ts), old, seed=seed, progress=_progress)
    fits = {k: train_models(ts.filter(m), sources, seed=seed, verbose=False, foreign=False)
            for k, m in (("old", old), ("new", np.ones(len(ts), dtype=bool)))}
    print(cc.same_as_file(fits["old"], Path(model_file).parent, DEFAULT_UALA))
    checks = cc.lofo_checks(cmp.bootstrap("chosen", n_boot=cc.N_BOOT)) + cc.foreign_checks(
        fits["old"], fits["new"], DEFAULT_UALA)
    return cc.print_report(cmp, checks, list(NAMES.values()))


def _progress(i: int, n: int, g: str) -> None:
    print(f"  leave-one-family-out {i}/{n} ({g})", file=sys.stderr)


def train_models(ts, sources: list[Path], *, seed: int = 42, variants=NAMES, sections: dict | None = None,
                 progress=None, verbose: bool = True, foreign: bool = True) -> dict:
    """name -> a GAC fitted on the labeled runs ``ts`` with its transfer chosen leave-one-family-out on them and
    its card (``sections``: the leave-one-out sections to reuse, by variant; ``foreign``: score the UALA runs
into the card, :func:`foreign_section`). What the shipped files are made of;
    :mod:`htc_dev.bench.gac_foreign` calls it on one model family to score the other as a new family."""
    from htc_core.calibration.general import fit_general
    from htc_core.experiments.transfer_families import prepare
    from htc_core.experiments.transfer_lofo import leave_one_family_out

    d = prepare(ts)
    if sections is None:
        choice = leave_one_family_out(d, seed=seed, progress=progress)
        section = loo_section(choice)
        if verbose:
            print(choice.table())
            print(choice.estimate_table())
            print(f"set-level method that wins: {section['set_level']}")
            print(self_check_line(section["range_self_check"]))
        sections = {v: section for v in variants}
    out = {}
    for variant, name in variants.items():
        gac = fit_general(ts, variant=variant, name=name, seed=seed)
        gac.transfer = _transfer(d, sections[variant]["chosen"], variant, seed, gac, sections[variant].get("set_level"))
        gac.card = build_card(name, variant, ts, sources, sections[variant], gac)
        if foreign:
            gac.card["foreign_evaluation"] = foreign_section(gac)
        out[name] = gac
    return out


def _transfer(d, method: str, variant: str, seed: int, gac, set_level: str | None = None) -> dict | None:
    from htc_core.experiments.transfer_entry import fit_transfer

    return fit_transfer(d, method, variant=variant, seed=seed, models=gac.models, set_level=set_level)


def _reused_sections(folder: Path) -> dict | None:
    import json

    out = {}
    for variant, name in NAMES.items():
        try:
            out[variant] = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))["card"]["leave_one_out"]
        except (OSError, ValueError, KeyError, TypeError):
            print(f"train_gac: no leave-one-out section in {folder / (name + '.json')}; recomputing", file=sys.stderr)
            return None
    print("train_gac: leave-one-out sections reused from the existing model files", file=sys.stderr)
    return out


if __name__ == "__main__":
    sys.exit(main())
