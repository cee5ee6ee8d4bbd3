"""The shipped GAC zero-shot on run sets it was not trained on, next to each training-free signal.

    python -m htc_dev.bench gac_foreign                 # every foreign set held here (below)
    python -m htc_dev.bench gac_foreign RUNS [RUNS ...]   # these files or folders, each one set
    python -m htc_dev.bench gac_foreign --check         # exit 1 unless every expected range holds its ECE

The foreign sets, each scored separately:

- every file of ``../shared/data/uala-hotpotqa/`` (Llama-2-70B, HotpotQA, no top-k alternatives), and all
  of them together: the shipped ``gac``, ``gac-full`` and ``gac-prefix``;
- **a new model family**: the Gemma 3 270M runs of ``sample_runs/gemma3/`` scored by GACs trained the way the
  shipped ones are (:func:`htc_dev.train_gac.train_models`, :func:`htc_dev.train_gac_prefix.train_prefix_model`:
  the transfer method, its signal and weights, and the expected-error points all chosen leave-one-family-out)
  but on the SmolLM2 runs alone, so no Gemma run reaches any choice; per task and all together;
- the labeled fixture files of ``tests/fixtures/foreign/`` (synthetic, a handful of runs: shown, not evidence).

For each set and model: ECE, Brier, AUROC; the AUROC of each training-free signal (length-normalized sequence
probability, minimum token probability, minus the mean top-k entropy; no training), whether the GAC ranks at
least as well as the best of them, and the applicability verdict with the expected ECE range the GAC prints
before any label is seen, and whether the measured ECE lies inside it. ``gac-prefix`` the same on the prefixes
at 25/50/75/100% of each run's steps and at step 1/2/3, against the running signals of the same prefixes.
Where the GAC (each run scored on its own) ranks below the best signal, a paired bootstrap of the runs (1,000
resamples, 95% percentile interval of the AUROC difference, :func:`auroc_gap`) tells a loss within sampling
noise (the interval holds 0) from a clear one; the bar itself stays "at least the best signal's AUROC".
Nothing here is fitted on a foreign set's labels; they only score.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from . import shared_data_dir

DEFAULT_FOREIGN = shared_data_dir() / "uala-hotpotqa"
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "foreign"
SAMPLE_RUNS = REPO / "sample_runs"
NEW_FAMILY = "Gemma3"          # the model family held out as "a new model family" (model names start with it)
CUTS = ([(f"{f:.0%} of steps", {"fraction": f}) for f in (0.25, 0.5, 0.75, 1.0)]
        + [(f"step {k}", {"steps": k}) for k in (1, 2, 3)])


def evaluate_set(gac, ts) -> dict:
    """Zero-shot metrics of ``gac`` on the labeled TraceSet ``ts``, the signals' AUROC and the expected-error
    check (:func:`htc_core.calibration.expected_error.zero_shot_check`) as ``htc score --as-set`` scores it;
    ``per_run``: the same with every run scored on its own (the default everywhere; equal to the rest where the
    GAC does not score ``ts`` as a set), ``as_set``: whether it does."""
    from htc_core.calibration.expected_error import zero_shot_check

    r = zero_shot_check(gac, ts, set_level=True)
    as_set = bool(getattr(gac, "scores_as_set", lambda n: False)(len(ts)))
    before = zero_shot_check(gac, ts, set_level=False) if as_set else r
    r["as_set"] = as_set
    r["per_run"] = {k: before[k] for k in ("ece", "brier", "auroc", "gac_ranks_at_least_as_well", "inside")}
    r["per_run"]["gap"] = auroc_gap(np.asarray(ts.labels, dtype=np.float64),
                                    gac.confidences_traces(ts, set_level=False)[1], ts)
    return r


def auroc_gap(y: np.ndarray, p: np.ndarray, ts, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """AUROC of the confidences ``p`` minus the best training-free signal's on the runs ``ts`` (labels ``y``), with
    the 95% percentile interval of a paired bootstrap of the runs (both AUROCs from the same resamples; the best
    signal is the one best on all the runs, its undefined runs left out of both). ``verdict``: "at least as well",
    "within noise" (below, the interval holds 0) or "clear loss" (the interval lies below 0)."""
    from scipy.stats import rankdata

    from htc_core.calibration.bootstrap import percentile_intervals
    from htc_core.calibration.transfer_methods import training_free_signals

    sig = training_free_signals(ts)
    aur = {c: _auroc_rows(y[None, np.isfinite(v)], v[None, np.isfinite(v)])[0]
           for c in sig.columns for v in [sig[c].to_numpy()] if np.isfinite(v).sum() > 1}
    aur = {c: a for c, a in aur.items() if a == a}
    if not aur:
        return {"signal": None, "diff": float("nan"), "low": float("nan"), "high": float("nan"), "verdict": "-"}
    best = max(aur, key=aur.get)
    v = sig[best].to_numpy()
    ok = np.isfinite(v)
    yy, a, b = y[ok], rankdata(np.asarray(p, dtype=np.float64)[ok]), v[ok]

    def stat(i):
        return _auroc_rows(yy[i], a[i]) - _auroc_rows(yy[i], b[i])

    iv = percentile_intervals(stat, (int(ok.sum()),), n_boot=n_boot, random_state=seed)
    d, lo, hi = iv.triple(0)
    verdict = "at least as well" if d >= -1e-9 else ("within noise" if hi >= 0 else "clear loss")
    return {"signal": best, "diff": d, "low": lo, "high": hi, "verdict": verdict}


def _auroc_rows(Y: np.ndarray, S: np.ndarray) -> np.ndarray:
    """AUROC (ties 1/2) of each row of the scores ``S`` [m, n] against the labels of the same row of ``Y``; NaN for a
    row with one outcome."""
    from scipy.stats import rankdata

    Y, S = np.atleast_2d(Y).astype(np.float64), np.atleast_2d(S)
    R = rankdata(S, axis=1)
    n_pos = Y.sum(axis=1)
    n_neg = Y.shape[1] - n_pos
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0),
                        ((R * Y).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg), np.nan)


def evaluate_prefixes(gac, ts) -> list[dict]:
    """:func:`evaluate_set` of a prefix model on the prefixes of ``ts`` at each cut (:data:`CUTS`)."""
    from htc_core.traces.prefix import prefixes

    return [{"cut": label, **evaluate_set(gac, prefixes(ts, **cut))} for label, cut in CUTS]


def _labeled(paths) -> object:
    from htc_core.formats import load

    ts, _ = load([str(p) for p in paths])
    return ts.labeled()


def uala_sets(folder: Path) -> list[tuple[str, object]]:
    """(name, labeled runs) for every run file of the UALA folder, then all of them together."""
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else ([folder] if folder.exists() else [])
    if not files:
        print(f"gac_foreign: {folder} not found: the UALA sets are left out", file=sys.stderr)
    out = [(f"UALA {f.stem}", _labeled([f])) for f in files]
    return out + ([("UALA all files", _labeled(files))] if len(files) > 1 else [])


def fixture_sets(folder: Path = FIXTURES) -> list[tuple[str, object]]:
    """(name, labeled runs) of each fixture file that carries labels for both outcomes."""
    from htc_core.formats import load

    out = []
    for f in sorted(folder.glob("*.jsonl")):
        try:
            ts, _ = load(str(f))
        except ValueError:
            continue
        ts = ts.labeled()
        if len(ts) and len(set(ts.labels)) == 2:
            out.append((f"fixture {f.name} (synthetic)", ts))
    return out


def new_family_case(sample_runs: Path = SAMPLE_RUNS, family: str = NEW_FAMILY, *, seed: int = 42):
    """(whole-run GACs, the prefix GAC, [(name, runs)]): models trained as the shipped ones are, on the runs of
    ``sample_runs`` whose model is not of ``family``; the ``family`` runs per task and all together."""
    from ..train_gac import train_models
    from ..train_gac_prefix import train_prefix_model

    ts = _labeled([sample_runs])
    new = ts.meta["model"].astype(str).str.startswith(family).to_numpy()
    train, held = ts.take(np.flatnonzero(~new)), ts.take(np.flatnonzero(new))
    src = [sample_runs]
    gacs = train_models(train, src, seed=seed, verbose=False, foreign=False)
    pre = train_prefix_model(train, src, seed=seed, verbose=False, foreign=False)
    tasks = held.meta["dataset"].astype(str).to_numpy()
    sets = [(f"{family} {t} (new family)", held.take(np.flatnonzero(tasks == t))) for t in sorted(set(tasks))]
    return gacs, pre, sets + [(f"{family} all tasks (new family)", held)]


HEAD = (f"{'run set':52s} {'model':10s} {'runs':>5} {'rate':>5}  {'per-run ECE/Brier/AUROC':>23}  "
        f"{'ECE':>5} {'Brier':>5} {'AUROC':>5}  {'seq_p':>5} {'min_p':>5} {'-entr':>5}  >=best  "
        f"{'per-run AUROC - best signal [95%]':34s}  {'expected ECE':>12}  inside  verdict")


def row_text(name: str, model: str, r: dict) -> str:
    s, e = r["signals"], r["expected"]
    f = lambda v: f"{v:5.3f}" if v == v else "  nan"    # noqa: E731
    b = r.get("per_run") or r
    before = (f"{b['ece']:.3f}/{b['brier']:.3f}/{f(b['auroc'])}{'*' if r.get('as_set') else ' '}")
    return (f"{name[:52]:52s} {model[:10]:10s} {r['n']:5d} {r['success_rate']:5.2f}  {before:>23}  "
            f"{r['ece']:5.3f} {r['brier']:5.3f} "
            f"{f(r['auroc'])}  {f(s['seq_prob'])} {f(s['min_prob'])} {f(s['neg_entropy'])}  "
            f"{'yes' if r['gac_ranks_at_least_as_well'] else 'NO':>6}  {gap_text(b.get('gap')):34s}  "
            f"{e['low']:5.2f}-{e['high']:4.2f}     "
            f"{'yes' if r['inside'] else 'NO':>6}  {e['verdict']}")


def gap_text(g: dict | None) -> str:
    """``+0.000 [-0.031, +0.027] at least as well`` (:func:`auroc_gap`), "-" without a signal."""
    if not g or g["signal"] is None:
        return "-"
    return f"{g['diff']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}] {g['verdict']}"


def report(cases: list[tuple[str, dict, object, list]]) -> list[dict]:
    """Print every set of every case (whole runs by each GAC, prefixes by the prefix GAC); the result rows."""
    out = []
    print(HEAD)
    for case, gacs, _, sets in cases:
        for name, ts in sets:
            for model, gac in gacs.items():
                r = evaluate_set(gac, ts)
                out.append({"case": case, "set": name, "model": model, "cut": "whole runs", **r})
                print(row_text(name, model, r))
    print(f"\ngac-prefix on prefixes ({HEAD.split('model')[0].strip()} = set @ cut)")
    print(HEAD)
    for case, _, pre, sets in cases:
        for name, ts in sets:
            for r in evaluate_prefixes(pre, ts):
                out.append({"case": case, "set": name, "model": "gac-prefix", **r})
                print(row_text(f"{name} @ {r['cut']}", "gac-prefix", r))
    return out


def summary(rows: list[dict]) -> str:
    n = len(rows)
    ranks = sum(r["gac_ranks_at_least_as_well"] for r in rows)
    inside = sum(r["inside"] for r in rows)
    pr = [r.get("per_run") or r for r in rows]
    as_set = sum(bool(r.get("as_set")) for r in rows)
    return (f"\nGAC AUROC >= the best training-free signal's on {ranks} of {n} (set, model, cut) rows; the expected "
            f"ECE range printed beforehand holds the measured ECE on {inside} of {n}\n"
            f"scored as a set (* in the per-run column) on {as_set} rows; with every run scored on its own: AUROC >= "
            f"best on {sum(r['gac_ranks_at_least_as_well'] for r in pr)} of {n}, expected range holds the ECE on "
            f"{sum(r['inside'] for r in pr)} of {n}\n" + noise_line(pr))


def noise_line(per_run: list[dict]) -> str:
    """How the rows where the GAC, each run scored on its own, ranks below the best signal split into losses
    within sampling noise and clear ones (:func:`auroc_gap`), with the mean and worst AUROC deficit."""
    gaps = [r["gap"] for r in per_run if "gap" in r and r["gap"]["signal"] is not None]
    below = [g for g in gaps if g["verdict"] != "at least as well"]
    noise = sum(g["verdict"] == "within noise" for g in below)
    deficit = [max(0.0, -g["diff"]) for g in gaps]
    return (f"per run, below the best signal on {len(below)} of {len(gaps)} rows: {noise} within sampling noise (95% "
            f"paired bootstrap interval of the AUROC difference holds 0), {len(below) - noise} clear losses; AUROC "
            f"deficit mean {np.mean(deficit) if deficit else float('nan'):.3f}, worst "
            f"{max(deficit) if deficit else float('nan'):.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench gac_foreign", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", type=Path, help="score these files or folders (each one set) instead of the "
                                                       "foreign sets held here, with the shipped models")
    ap.add_argument("--check", action="store_true", help="exit 1 when a measured ECE lies outside its expected range")
    args = ap.parse_args(argv)
    from htc_core.calibration.models import load_model

    shipped = {n: load_model(n) for n in ("gac", "gac-full")}
    if args.runs:
        sets = [(str(p), _labeled([p])) for p in args.runs]
        for name, ts in sets:
            if not len(ts):
                print(f"gac_foreign: {name}: no labeled runs (a success label is needed to measure ECE); skipped",
                      file=sys.stderr)
        sets = [(n, ts) for n, ts in sets if len(ts)]
        if not sets:
            return 2
        cases = [("given", shipped, load_model("gac-prefix"), sets)]
    else:
        cases = [("foreign", shipped, load_model("gac-prefix"), uala_sets(DEFAULT_FOREIGN) + fixture_sets())]
        print("training GACs on the SmolLM2 runs alone (the Gemma runs are the new family) ...", file=sys.stderr)
        gacs, pre, sets = new_family_case()
        cases.append(("new family", gacs, pre, sets))
    rows = report(cases)
    print(summary(rows))
    return 1 if args.check and not all(r["inside"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
