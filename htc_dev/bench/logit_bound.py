"""``python -m htc_dev.bench logit_bound [--seeds N]``: HTC-Full / HTC-Reduced with and without the soft logit
bound (``HTCCalibrator(max_logit=10)``) on the sample runs, all together and per dataset, evaluated on the same
folds (nested CV, pooled out-of-fold metrics, mean ± std over seeds), with the largest |logit| of the fold
models (out-of-fold) and of the fit on all runs. The README's "Bounded logits" table comes from here."""

from __future__ import annotations

import argparse

import numpy as np


def _row(res, method: str, fm, labels, bound) -> str:
    from htc_core.calibration.calibrators import HTCCalibrator

    s = res.summary[method]
    oof = max(abs(float(res.fold_model(method, i).decision_function(fm.values[i:i + 1])[0])) for i in range(res.n))
    variant = "full" if method.startswith("HTC-Full") else "reduced"
    fit = HTCCalibrator(variant, max_logit=bound).fit(fm, labels)
    cells = [f"{s[k]['mean']:.3f} ± {s[k]['std']:.3f}" for k in ("ece", "brier", "auroc")]
    return f"{method:28s} " + "  ".join(cells) + f"  max|logit| fit {np.abs(fit.decision_function(fm)).max():7.1f}" \
                                                 f"  out-of-fold {oof:7.1f}"


def main(argv=None) -> int:
    from htc_core import evaluate, extract, load
    from htc_core.calibration.methods import HTCMethod
    from . import checkout_root

    p = argparse.ArgumentParser(prog="python -m htc_dev.bench logit_bound", description=__doc__)
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args(argv)
    root = checkout_root()
    if root is None:
        print("needs a source checkout (sample_runs/)")
        return 2
    sets = {"all": root / "sample_runs"} | {d: root / "sample_runs" / d for d in ("arithmetic", "facts", "strings",
                                                                                  "units")}
    for name, path in sets.items():
        ts, _ = load(path)
        ts = ts.labeled()
        fm = extract(ts)
        methods = [HTCMethod(f"{m} (unbounded)", v, max_logit=None) for m, v in (("HTC-Full", "full"),
                                                                                 ("HTC-Reduced", "reduced"))]
        methods += [HTCMethod(m, v) for m, v in (("HTC-Full", "full"), ("HTC-Reduced", "reduced"))]
        res = evaluate(fm, ts.labels, seeds=args.seeds, methods=methods, n_jobs=-1)
        print(f"== {name}: {res.n} runs; ECE, Brier, AUROC (mean ± std over {args.seeds} seeds)", flush=True)
        for m in methods:
            print(_row(res, m.name, fm, ts.labels, m.max_logit), flush=True)
    return 0
