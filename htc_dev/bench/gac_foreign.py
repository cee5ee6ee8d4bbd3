"""The shipped GAC zero-shot on run sets it was not trained on, next to the training-free signals.

    python -m htc_dev.bench gac_foreign                       # ../shared/data/uala-hotpotqa (Llama-2-70B)
    python -m htc_dev.bench gac_foreign RUNS [RUNS ...] --model gac-full

For each run set: the GAC's zero-shot ECE, Brier and AUROC; the AUROC of each training-free signal
(length-normalized sequence probability, minimum token probability, minus the mean top-k entropy; no training);
the applicability verdict and the expected ECE range the GAC prints before any label is seen, and whether the
measured ECE lies inside it. One row per ``dataset x model`` group of the input and one for the whole input.
Measured, never asserted in tests.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import shared_data_dir

DEFAULT_FOREIGN = shared_data_dir() / "uala-hotpotqa"


def evaluate_set(gac, ts) -> dict:
    """Zero-shot metrics, the signals' AUROC and the expected-error check of one labeled TraceSet."""
    import numpy as np

    from htc_core.experiments.grouping import score_metrics
    from htc_core.calibration.shift import shift_check
    from htc_core.calibration.transfer_methods import SIGNALS, training_free_signals

    y = ts.labels
    p = gac.predict_proba(ts)[:, 1]
    expected = gac.assess(shift_check(gac, ts, name=gac.name), gac.kinds(ts) == "with_alternatives", p)
    sig = training_free_signals(ts)
    aur = {}
    for s in SIGNALS:
        v = sig[s].to_numpy()
        ok = np.isfinite(v)
        aur[s] = score_metrics(y[ok], v[ok])["auroc"] if ok.sum() > 1 and len(set(y[ok])) == 2 else float("nan")
    m = score_metrics(y, p)
    best = max((v for v in aur.values() if v == v), default=float("nan"))
    return {"n": int(len(y)), "success_rate": float(y.mean()), **m, "signals": aur, "best_signal_auroc": best,
            "gac_ranks_at_least_as_well": bool(m["auroc"] >= best - 1e-9),
            "expected": expected.to_dict(), "inside": bool(expected.low <= m["ece"] <= expected.high)}


def _groups(ts):
    import numpy as np

    key = ts.meta["dataset"].astype(str) + " | " + ts.meta["model"].astype(str)
    for k in sorted(set(key)):
        yield k, ts.filter(np.asarray(key == k))
    yield "all", ts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m htc_dev.bench gac_foreign", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", type=Path, default=[DEFAULT_FOREIGN])
    ap.add_argument("--model", default="gac", help="a shipped GAC name or a GAC file (default gac)")
    args = ap.parse_args(argv)
    from htc_core.calibration.models import load_model
    from htc_core.formats import load

    gac = load_model(args.model)
    ts, _ = load([str(p) for p in args.runs])
    ts = ts.labeled()
    print(f"{args.model} zero-shot on {', '.join(map(str, args.runs))} ({len(ts)} labeled runs)")
    print(f"{'run set':40s} {'runs':>5} {'rate':>5}  {'ECE':>5} {'Brier':>5} {'AUROC':>5}  {'seq_p':>5} {'min_p':>5} "
          f"{'-entr':>5}  {'expected ECE':>12}  inside  verdict")
    for name, sub in _groups(ts):
        r = evaluate_set(gac, sub)
        s, e = r["signals"], r["expected"]
        print(f"{name[:40]:40s} {r['n']:5d} {r['success_rate']:5.2f}  {r['ece']:5.3f} {r['brier']:5.3f} "
              f"{r['auroc']:5.3f}  {s['seq_prob']:5.3f} {s['min_prob']:5.3f} {s['neg_entropy']:5.3f}  "
              f"{e['low']:5.2f}-{e['high']:4.2f}  {'yes' if r['inside'] else 'NO':>6}  {e['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
