"""``--compare-corpus MODEL_JSON`` of the GAC training commands: the old corpus against the grown one, fairly.

    python -m htc_dev.train_gac --compare-corpus htc_core/calibration/models/gac.json
    python -m htc_dev.train_gac_prefix --compare-corpus htc_core/calibration/models/gac-prefix.json

The training procedure runs on the corpus ``MODEL_JSON`` was trained on (its card's run sets, the first N runs of
each: :func:`htc_dev.train_gac.corpus_of`) and on the grown ``sample_runs/``, nested leave-one-family-out, both
scored on the same held-out runs (:func:`htc_core.experiments.corpus_compare.compare_corpora`); then the full
models of both procedures on the UALA HotpotQA files (never trained on); then the ship rule of docs/gac.md
("The fair comparison and its ship rule"), applied. Nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

# the ship rule (docs/gac.md, written before the comparison was run): a difference within TOLERANCE, or a paired
# bootstrap 95% interval that reaches 0, is "no worse"
TOLERANCE = 0.01
N_BOOT = 2000


def rows_in(ids, corpus_ids) -> np.ndarray:
    """Which of ``ids`` (each row's run id) are among ``corpus_ids`` (the runs of the old corpus,
    :func:`htc_dev.train_gac.corpus_of`)."""
    old = set(map(str, corpus_ids))
    return np.array([str(i) in old for i in ids], dtype=bool)


def no_worse(diff: float, low: float, high: float, *, higher_is_better: bool = False) -> bool:
    """The rule's "no worse" for a difference new - old: within :data:`TOLERANCE` in the bad direction, or its
    bootstrap interval (low, high) reaches 0."""
    worse = -diff if higher_is_better else diff
    return bool(worse <= TOLERANCE + 1e-12 or low <= 0.0 <= high)


def lofo_checks(boot) -> list[dict]:
    """Rules 1-3 on the chosen methods' paired bootstrap (:meth:`CorpusComparison.bootstrap`)."""
    out = []
    for stat, what, up in (("ece_mean", "mean ECE", False), ("ece_worst", "worst ECE", False),
                           ("auroc_mean", "mean AUROC", True)):
        r = boot.loc[stat]
        out.append({"check": f"held-out families: {what}", **_values(r),
                    "pass": no_worse(r["diff"], r.low, r.high, higher_is_better=up)})
    return out


def _values(r) -> dict:
    return {k: float(r[k]) for k in ("old", "new", "diff", "low", "high", "basic_low", "basic_high")}


def foreign_checks(old_models: dict, new_models: dict, folder: Path, cuts: list | None = None) -> list[dict]:
    """Rule 4: each model of both procedures on each run file of ``folder``, ECE and AUROC (``cuts``: the mean over
    those prefixes of each run), new against old with a paired bootstrap over the file's runs; each row also
    holds both procedures' printed range and whether it held the ECE (zero_shot_check, per cut)."""
    from htc_core.calibration.expected_error import zero_shot_check
    from htc_core.experiments.corpus_compare import paired_bootstrap
    from htc_core.formats import load
    from htc_core.traces.prefix import prefixes

    out = []
    for f in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        ts = load(str(f))[0].labeled()
        for name in old_models:
            parts, inside = [], {"old": 0, "new": 0}
            for label, cut in cuts or [("whole runs", None)]:
                sub = ts if cut is None else prefixes(ts, **cut)
                p = {}
                for k, models in (("old", old_models), ("new", new_models)):
                    p[k] = models[name].confidences_traces(sub)[0]
                    inside[k] += zero_shot_check(models[name], sub)["inside"]
                parts.append((label, sub.labels, p["old"], p["new"]))
            y = np.concatenate([x[1] for x in parts])
            cells = np.concatenate([[x[0]] * len(x[1]) for x in parts])
            runs = np.tile(np.arange(len(ts)), len(parts))
            boot = paired_bootstrap(y, np.concatenate([x[2] for x in parts]), np.concatenate([x[3] for x in parts]),
                                    cells, blocks=np.zeros(len(y)), clusters=runs, n_boot=N_BOOT, names=("old", "new"))
            for stat, what, up in (("ece_mean", "ECE", False), ("auroc_mean", "AUROC", True)):
                r = boot.loc[stat]
                out.append({"check": f"{f.name} {name}: {what}" + (f" (mean of {len(parts)} cuts)" if cuts else ""),
                            **_values(r), "pass": no_worse(r["diff"], r.low, r.high, higher_is_better=up),
                            "inside": f"range held it old {inside['old']}/{len(parts)}, new {inside['new']}/{len(parts)}"})
    return out


def print_report(cmp, checks: list[dict], names: list[str], file=sys.stdout) -> bool:
    """The fair table, the reference method's bootstrap and every check of the rule; returns whether the
    retrained files ``names`` ship."""
    print(cmp.table(), file=file)
    ref = cmp.bootstrap("reference", n_boot=N_BOOT)
    print(f"\nthe reference method under both procedures, paired bootstrap ({N_BOOT} resamples of runs within each "
          "held-out family), new - old:", file=file)
    for stat, r in ref.iterrows():
        print(f"  {stat:11s} {r.old:.3f} -> {r.new:.3f}  diff {r['diff']:+.3f}  95% [{r.low:+.3f}, {r.high:+.3f}]",
              file=file)
    print(f"\nthe ship rule (docs/gac.md): no worse = new - old within {TOLERANCE} in the bad direction, or the "
          "95% interval reaches 0 (the percentile interval; the basic one, which corrects ECE's resampling bias, "
          "for information)", file=file)
    for c in checks:
        print(f"  {'PASS' if c['pass'] else 'FAIL'}  {c['check']:52s} {c['old']:.3f} -> {c['new']:.3f}  diff "
              f"{c['diff']:+.3f}  95% [{c['low']:+.3f}, {c['high']:+.3f}] (basic [{c['basic_low']:+.3f}, "
              f"{c['basic_high']:+.3f}])" + (f"  ({c['inside']})" if "inside" in c else ""), file=file)
    ship = all(c["pass"] for c in checks)
    print(f"decision: {'SHIP' if ship else 'KEEP'} the retrained {', '.join(names)}"
          + ("" if ship else f" (failed: {'; '.join(c['check'] for c in checks if not c['pass'])})"), file=file)
    return ship


def same_as_file(models: dict, model_folder: Path, data_folder: Path) -> str:
    """How far the old procedure's refitted models are from the files in ``model_folder`` (max |confidence
    difference| on the first run file of ``data_folder``): the check that ``corpus_of`` gives back the corpus the
    files were trained on."""
    from htc_core.calibration.general import GeneralCalibrator
    from htc_core.formats import load

    files = sorted(data_folder.glob("*.jsonl")) if data_folder.is_dir() else []
    if not files:
        return "old procedure refitted vs the shipped files: no run file to compare them on"
    ts = load(str(files[0]))[0]
    parts = []
    for name, m in models.items():
        f = model_folder / f"{name}.json"
        if f.exists():
            d = np.abs(m.confidences_traces(ts)[0] - GeneralCalibrator.load(f).confidences_traces(ts)[0])
            parts.append(f"{name} {float(d.max()):.2g}")
    return (f"old procedure refitted vs the shipped files, max |confidence difference| on {files[0].name}: "
            + (", ".join(parts) or "no file"))
