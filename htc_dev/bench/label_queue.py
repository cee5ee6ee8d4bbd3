"""The label queue against random order: adapted ECE after 10, 20, ..., 100 labels (issue 26).

    HTC_SHARED_DATA=/work/shared/data nice python -m htc_dev.bench label_queue            # every target, 5 seeds
    python -m htc_dev.bench label_queue --targets HotpotQA --seeds 2 --strategies calibration,random

Targets: each dataset of ``sample_runs/`` (arithmetic, facts, strings, units) and the foreign UALA HotpotQA runs.
The prior never saw its target: a GAC (Reduced) fitted here on every *other* dataset (leave-one-dataset-out; the
shipped GAC was trained on all of them), kept in ``--cache`` as JSON so a second run skips the fits. Per target
and seed (42, 43, ...): the target's runs are split 60/40 (stratified by outcome) into a pool and a test part;
each strategy of :mod:`htc_core.calibration.active` proposes runs from the pool in batches of ``--batch``, the
prior is adapted to the labels after each batch (``HTCCalibrator(prior=GAC)``, as ``htc fit --prior``), and the
adapted model's ECE, Brier and AUROC are measured on the untouched test part. Printed: the ECE curves (mean over
seeds) per target and strategy, the mean over targets, and the done-when line (queue vs random at 30 labels).

Each curve runs :func:`htc_core.calibration.active.queue_step`, the loop of the Label page and ``htc label next``.
A strategy may carry a sharpness (``variance@2``) and ``+w`` / ``-w`` (the refit weighted by the inverse of each
label's chance of being picked, :func:`~htc_core.calibration.active.label_weights`, or not; none: the library's
default for that strategy). ``oracle`` is no queue: the stratified order over the target's out-of-fold probability
from its *own* labels (:func:`oracle_scores`), a bound on what stratifying could gain. Printed last: random order
minus each strategy, paired over seeds (the same split, test part and random keys), with its standard error, at
every size, for the sample runs (each seed's mean over the four) and HotpotQA. ``--estimates`` also measures the
page's ECE estimate (plain and corrected for the noise of the labels: error, coverage of its 90% interval, width)
against the adapted model's ECE on the test part.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

SIZES = tuple(range(10, 101, 10))
# the page's estimate at each size: plain ECE and the one corrected for the noise of the labels (the default):
# absolute error against the test ECE, coverage of the test ECE by the 90% interval, coverage of the test ECE
# corrected the same way (``ref``: the truth without the noise of the ~200 test runs), and the interval's width
ESTIMATE_KEYS = ("est_err_plain", "est_err", "est_cover_plain", "est_cover", "est_cover_ref_plain", "est_cover_ref",
                 "est_width_plain", "est_width")


def _data(args):
    from htc_core.formats import load
    from . import checkout_root, shared_data_dir

    root = checkout_root() or Path.cwd()
    ts, _ = load(root / "sample_runs")
    parts = [ts.labeled()]
    uala = shared_data_dir() / "uala-hotpotqa"
    if uala.is_dir():
        h, _ = load(uala)
        parts.append(h.labeled())
    from htc_core.traces import concat

    return concat(parts)


def _prior(ts, target: str, cache: Path):
    from htc_core.calibration.general import GeneralCalibrator, fit_general

    path = cache / f"gac-without-{target}.json"
    if path.is_file():
        return GeneralCalibrator.from_dict(json.loads(path.read_text()), source=str(path))
    others = ts.take(np.flatnonzero(ts.meta["dataset"].astype(str).to_numpy() != target))
    t0 = time.perf_counter()
    gac = fit_general(others, variant="reduced", name=f"GAC without {target}")
    cache.mkdir(parents=True, exist_ok=True)
    gac.save(path)
    print(f"  prior for {target}: GAC fitted on {len(others)} runs of the other datasets in "
          f"{time.perf_counter() - t0:.0f} s (kept in {path})", flush=True)
    return gac


def parse_strategy(spec: str) -> tuple[str, float | None, bool | None]:
    """``"variance@2"``: the variance strategy with sharpness 2; a ``+w`` / ``-w`` suffix: labels weighted /
    not weighted in the refit (:func:`htc_core.calibration.active.label_weights`; none: the library's default for
    the strategy)."""
    weighted = {"+w": True, "-w": False}.get(spec[-2:])
    spec = spec[:-2] if weighted is not None else spec
    name, _, sharp = spec.partition("@")
    return name, (float(sharp) if sharp else None), weighted


def _estimate_errors(sub, lab, prior, step, y_test, p_test, seed: int) -> dict:
    """The page's estimate of the adapted ECE (out-of-fold, bootstrap interval over the labels; plain and corrected
    for the noise of the labels, :func:`~htc_core.calibration.label_estimate.estimate`) against the adapted model's ECE on
    the test part, plain and corrected the same way: absolute error, whether the interval holds it, its width."""
    from htc_core.calibration.active import out_of_fold
    from htc_core.calibration.label_estimate import binned_ece, estimate
    from htc_core.calibration.metrics import bin_predictions

    bins = bin_predictions(y_test, p_test).bin_ids
    w = np.ones(len(y_test))
    test = {"_plain": float(binned_ece(y_test, p_test, w, bins)),
            "": float(binned_ece(y_test, p_test, w, bins, per_bin_debias=True))}
    out = {}
    oof = out_of_fold(sub, lab, prior, folds=5, seed=seed, weights=step.weights)
    for tag, debias in (("_plain", False), ("", True)):
        est = estimate(lab, oof, random_state=seed, debias=debias)
        out[f"est_err{tag}"] = abs(est.ece - test["_plain"])
        out[f"est_cover{tag}"] = float(est.ece_low <= test["_plain"] <= est.ece_high)
        out[f"est_cover_ref{tag}"] = float(est.ece_low <= test[""] <= est.ece_high)
        out[f"est_width{tag}"] = est.ece_width
    return out


def oracle_scores(fm, y, prior) -> np.ndarray:
    """Every run's out-of-fold probability from the prior adapted to the *target's own labels* (10 folds over all
    its runs, test part included): a stratifier no queue can have, for the ``oracle`` order, which bounds what
    stratifying on any label-free score could gain."""
    from htc_core.calibration.active import out_of_fold

    return out_of_fold(fm, np.asarray(y, dtype=np.float64), prior, folds=10, seed=0)


def _curve(fm, y, prior, pool, test, strategy, seed, batch, sizes, estimates=False, oracle=None):
    """ECE/Brier/AUROC on ``test`` after each budget of ``sizes``, labels proposed by ``strategy`` from ``pool``:
    the loop of the page and of ``htc label next`` (:func:`~htc_core.calibration.active.queue_step`: refit on the
    labels so far, weighted as the strategy is, then the next batch). ``oracle``: every run's oracle score
    (:func:`oracle_scores`), which the ``oracle`` order stratifies on instead of the current confidence."""
    from htc_core.calibration.active import queue_step, select
    from htc_core.experiments.grouping import score_metrics

    name, sharpness, weighted = parse_strategy(strategy)
    sub = fm.take(pool)
    lab = np.full(len(pool), np.nan)
    out = {}
    while True:
        step = queue_step(sub, lab, prior, n=batch, strategy="random" if name == "oracle" else name,
                          seed=seed * 1000, weighted=weighted, sharpness=sharpness)
        n = step.n_labeled
        if name == "oracle":
            step.positions = select(oracle[pool], np.isfinite(lab), batch, strategy="stratified",
                                    seed=seed * 1000 + n)
        if n in sizes:
            p_test = step.model.predict_proba(fm.take(test))[:, 1]
            out[n] = score_metrics(y[test], p_test)
            if estimates and step.adapted:
                out[n] |= _estimate_errors(sub, lab, prior, step, y[test], p_test, seed)
        if n >= max(sizes):
            return out
        lab[step.positions] = y[pool][step.positions]


def _target(ts, target, args, cache):
    from sklearn.model_selection import StratifiedShuffleSplit

    from htc_core.calibration.active import linear_prior
    from htc_core.experiments.adapt_curve import profile_for
    from htc_core.experiments.grouping import score_metrics
    from htc_core.features import extract

    prior = _prior(ts, target, cache)
    tgt = ts.take(np.flatnonzero(ts.meta["dataset"].astype(str).to_numpy() == target))
    y = tgt.labels
    profile, top_k = profile_for(prior, tgt)
    fm = extract(tgt, profile=profile, top_k=top_k)
    prior = linear_prior(prior, fm)      # the GAC's sub-model for these runs' features
    res = {s: {n: [] for n in args.sizes} for s in args.strategies}
    oracle = oracle_scores(fm, y, prior) if "oracle" in args.strategies else None
    zero = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        pool, test = next(StratifiedShuffleSplit(n_splits=1, test_size=0.4, random_state=seed).split(fm.values, y))
        zero.append(score_metrics(y[test], prior.predict_proba(fm.take(test))[:, 1])["ece"])
        for strategy in args.strategies:
            for n, m in _curve(fm, y, prior, pool, test, strategy, seed, args.batch, args.sizes,
                               args.estimates, oracle).items():
                res[strategy][n].append(m)
    return {"target": target, "n": len(y), "positive_rate": float(y.mean()), "zero_shot_ece": float(np.mean(zero)),
            "curves": {s: {n: {k: float(np.mean([m[k] for m in v if k in m])) for k in ("ece", "brier", "auroc")
                               + (ESTIMATE_KEYS if args.estimates else ())}
                           | {"ece_std": float(np.std([m["ece"] for m in v])), "ece_seeds": [m["ece"] for m in v]}
                           for n, v in c.items()}
                       for s, c in res.items()}}


def _diagnose(ts, target, args, cache) -> None:
    """Why a queue can hardly beat random order here: per seed, the test ECE of the zero-shot prior, of 30 random
    labels (mean and spread over 5 draws on the same split), of every pool label, and of a perfectly calibrated
    model on this many test runs (labels drawn from its own probabilities: the measure's floor), and how often the
    refit's inner CV chose each candidate at 30 labels."""
    from collections import Counter

    from sklearn.model_selection import StratifiedShuffleSplit

    from htc_core.calibration.active import adapt_to_labels, linear_prior
    from htc_core.calibration.metrics import expected_calibration_error as ece
    from htc_core.experiments.adapt_curve import profile_for
    from htc_core.features import extract

    prior = _prior(ts, target, cache)
    tgt = ts.take(np.flatnonzero(ts.meta["dataset"].astype(str).to_numpy() == target))
    y, (profile, top_k) = tgt.labels, profile_for(prior, tgt)
    fm = extract(tgt, profile=profile, top_k=top_k)
    prior = linear_prior(prior, fm)
    out, choices, rng = [], Counter(), np.random.default_rng(0)
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        pool, test = next(StratifiedShuffleSplit(n_splits=1, test_size=0.4, random_state=seed).split(fm.values, y))
        sub, Xt = fm.take(pool), fm.take(test)
        full, _ = adapt_to_labels(sub, y[pool].astype(float), prior, random_state=seed)
        p = full.predict_proba(Xt)[:, 1]
        r30 = []
        for rep in range(5):
            lab = np.full(len(pool), np.nan)
            pick = np.random.default_rng(seed * 100 + rep).permutation(len(pool))[:30]
            lab[pick] = y[pool][pick]
            m, adapted = adapt_to_labels(sub, lab, prior, random_state=seed)
            r30.append(ece(y[test], m.predict_proba(Xt)[:, 1]))
            choices[str(m.adaptation_.get("choice")) if adapted else "prior (one outcome)"] += 1
        out.append((ece(y[test], prior.predict_proba(Xt)[:, 1]), np.mean(r30), np.std(r30), ece(y[test], p),
                    np.mean([ece(rng.random(len(p)) < p, p) for _ in range(300)])))
    z, r, rs, f, fl = np.mean(out, axis=0)
    print(f"{target}: {len(test)} test runs; ECE zero-shot {z:.3f}, 30 random labels {r:.3f} (spread over draws on "
          f"one split {rs:.3f}), all {len(pool)} pool labels {f:.3f}, a calibrated model's floor {fl:.3f}; refit "
          f"choices at 30: " + ", ".join(f"{k} x{v}" for k, v in choices.most_common()), flush=True)


def _print(rows, strategies, sizes) -> None:
    head = "  ".join(f"{n:>6d}" for n in sizes)
    for r in rows:
        print(f"\n{r['target']} ({r['n']} runs, success rate {r['positive_rate']:.3f}; zero-shot ECE "
              f"{r['zero_shot_ece']:.4f}) -- adapted ECE on the test part, mean over seeds, by labels:")
        print(f"  {'strategy':<16}{head}")
        for s in strategies:
            print(f"  {s:<16}" + "  ".join(f"{r['curves'][s][n]['ece']:6.4f}" for n in sizes))
    print("\nmean over targets:")
    print(f"  {'strategy':<16}{head}")
    for s in strategies:
        print(f"  {s:<16}" + "  ".join(f"{np.mean([r['curves'][s][n]['ece'] for r in rows]):6.4f}" for n in sizes))


def _print_estimates(rows, strategies, sizes) -> None:
    print("\nthe page's ECE estimate vs the adapted model's ECE on the test part, mean over targets, plain -> "
          "corrected for the noise of the labels (the default): |error| against the test ECE, how often the 90% "
          "interval holds the test ECE, how often it holds the test ECE corrected the same way, the interval's width:")
    for s in strategies:
        for n in sizes:
            v = {k: np.nanmean([r["curves"][s][n].get(k, np.nan) for r in rows]) for k in ESTIMATE_KEYS}
            print(f"  {s:<12}{n:>4} labels: error {v['est_err_plain']:.3f} -> {v['est_err']:.3f}   holds test ECE "
                  f"{v['est_cover_plain']:.0%} -> {v['est_cover']:.0%}   holds corrected test ECE "
                  f"{v['est_cover_ref_plain']:.0%} -> {v['est_cover_ref']:.0%}   width {v['est_width_plain']:.3f} -> "
                  f"{v['est_width']:.3f}")


def paired_difference(baseline, other) -> tuple[float, float]:
    """Mean and standard error of ``baseline - other`` over paired draws (same seed: same split, same test part,
    the same random keys behind both orders); positive: ``other`` is lower.

    >>> m, se = paired_difference([0.12, 0.10, 0.14], [0.10, 0.09, 0.11])
    >>> round(m, 4), round(se, 4)
    (0.02, 0.0058)
    """
    d = np.asarray(baseline, dtype=np.float64) - np.asarray(other, dtype=np.float64)
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    return float(d.mean()), se


def run_set_groups(rows) -> list[tuple[str, list]]:
    """The run sets the done-when names: the sample runs (every target but HotpotQA, each seed's mean over them)
    and each foreign target on its own."""
    sample = [r for r in rows if r["target"] != "HotpotQA"]
    return ([("sample runs", sample)] if sample else []) + [(r["target"], [r]) for r in rows if r["target"] == "HotpotQA"]


def _print_paired(rows, strategies, sizes) -> None:
    print("\npaired over seeds (same split, test part and random keys): random minus the strategy, mean +- standard "
          "error; positive = the strategy's adapted ECE is lower")
    for s in strategies:
        if s == "random":
            continue
        for name, group in run_set_groups(rows):
            cells = []
            for n in sizes:
                base = np.mean([r["curves"]["random"][n]["ece_seeds"] for r in group], axis=0)
                mine = np.mean([r["curves"][s][n]["ece_seeds"] for r in group], axis=0)
                m, se = paired_difference(base, mine)
                cells.append(f"{n}: {m:+.4f}+-{se:.4f}")
            print(f"  {s:<12} {name:<12} " + "  ".join(cells))
        if 30 in sizes:
            verdicts = []
            for name, group in run_set_groups(rows):
                m, se = paired_difference(np.mean([r["curves"]["random"][30]["ece_seeds"] for r in group], axis=0),
                                          np.mean([r["curves"][s][30]["ece_seeds"] for r in group], axis=0))
                verdicts.append(f"{name} {m:+.4f} (se {se:.4f}) {'meets' if m >= 0.01 else 'misses'} 0.01")
            print(f"  at 30 labels, {s}: " + "; ".join(verdicts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench label_queue", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", default="arithmetic,facts,strings,units,HotpotQA")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=42, help="seeds first-seed, first-seed + 1, ...")
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--strategies", default="calibration,stratified,random")
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "htc-bench-priors"))
    ap.add_argument("--criterion", choices=("evidence", "loo", "cv"), default=None,
                    help="how the refit chooses its pull toward the prior (default: the library's, "
                         "htc_core.calibration.adapt.DEFAULT_CRITERION)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--estimates", action="store_true",
                    help="also measure the Label page's estimate of the ECE (out-of-fold, bootstrap interval), "
                         "plain and corrected for the noise of the labels, against the adapted model's ECE on "
                         "the test part: mean absolute error, coverage of the 90%% interval, its width")
    ap.add_argument("--diagnose", action="store_true", help="print the headroom and noise of the comparison instead "
                                                             "(floor, spread of random draws, the refit's choices)")
    args = ap.parse_args(argv)
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    args.strategies = args.strategies.split(",")
    if args.criterion:
        from htc_core.calibration import adapt

        adapt.DEFAULT_CRITERION = args.criterion
    if os.environ.get("HTC_BENCH_LOO_TOLERANCE"):       # development only: the loo criterion's tolerance
        from htc_core.calibration import adapt

        adapt.LOO_TOLERANCE = float(os.environ["HTC_BENCH_LOO_TOLERANCE"])
    t0, c0 = time.perf_counter(), time.process_time()
    ts = _data(args)
    if args.diagnose:
        for target in args.targets.split(","):
            _diagnose(ts, target, args, Path(args.cache))
        return 0
    rows = []
    for target in args.targets.split(","):
        rows.append(_target(ts, target, args, Path(args.cache)))
        print(f"  {target}: done ({time.perf_counter() - t0:.0f} s so far)", flush=True)
    _print(rows, args.strategies, args.sizes)
    if args.estimates:
        _print_estimates(rows, args.strategies, args.sizes)
    if "random" in args.strategies:
        _print_paired(rows, args.strategies, args.sizes)
    print(f"wall {time.perf_counter() - t0:.0f} s, CPU {time.process_time() - c0:.0f} s, load average "
          f"{os.getloadavg()[0]:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0
