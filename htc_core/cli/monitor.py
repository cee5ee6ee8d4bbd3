"""``htc early-warning``, ``htc prefixes``, ``htc monitor``: partial runs, and the confidence after each step."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import CLIError, add_feature_options, add_input_options, labeled_only, load_inputs, seeds_arg


def _int_list(value: str) -> list[int]:
    try:
        out = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {value!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {value!r}")
    return out


def _fraction_list(value: str) -> list[float]:
    try:
        out = [float(v.strip().rstrip("%")) / (100 if v.strip().endswith("%") else 1)
               for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions such as 0.25,0.5 or 25%,50%, "
                                         f"got {value!r}") from None
    if any(not 0 < f <= 1 for f in out):
        raise argparse.ArgumentTypeError(f"fractions must be in (0, 1], got {value!r}")
    return out


def _progress(done: int, total: int, msg: str) -> None:
    print(f"\r  {done}/{total} prefix lengths ({msg})   ", end="" if done < total else "\n", file=sys.stderr,
          flush=True)


def cmd_early_warning(args: argparse.Namespace) -> int:
    from ..calibration.evaluation import EvaluationError
    from ..calibration.prefixes import early_warning

    ts, _ = load_inputs(args)
    ts = labeled_only(ts, "early-warning")
    steps = None if args.max_steps is None else range(1, args.max_steps + 1)
    progress = _progress if not args.json and sys.stderr.isatty() else None
    try:
        res = early_warning(ts, steps=steps, fractions=args.fractions, seeds=args.seeds, profile=args.profile,
                            top_k=args.top_k, false_alarm=args.false_alarm, progress=progress)
    except (EvaluationError, ValueError) as e:
        raise CLIError(str(e)) from None
    print(res.to_json() if args.json else res.table())
    return 0


def cmd_prefixes(args: argparse.Namespace) -> int:
    import numpy as np

    from ..formats import native
    from ..traces import concat
    from ..traces.prefix import prefix_lengths, prefixes

    ts, _ = load_inputs(args)
    S = ts.steps_per_trajectory
    cuts = []
    if args.steps:
        cuts += [np.where(S >= k, k, 0) for k in args.steps]   # a run shorter than k has no k-step prefix
    for f in args.fractions or ():
        cuts.append(prefix_lengths(ts, fraction=f))
    if not cuts:                                               # default: every prefix of every run
        cuts = [np.where(S >= k, k, 0) for k in range(1, int(S.max()) + 1)]
    pairs = sorted({(i, int(k)) for cut in cuts for i, k in enumerate(cut) if k > 0})
    parts, built = [], []
    for k in sorted({k for _, k in pairs}):
        idx = [i for i, kk in pairs if kk == k]
        part = prefixes(ts.take(idx), k)
        part.meta["id"] = [f"{v}@{k}" for v in part.meta["id"]]
        parts.append(part)
        built += [(i, k) for i in idx]
    order = sorted(range(len(built)), key=built.__getitem__)   # run by run, shortest prefix first
    out = concat(parts).take(order)
    n = native.write(out, args.out)
    print(f"wrote {n} prefixes of {len(ts)} runs to {args.out} (id@k: the first k steps of run id)")
    return 0


def cmd_monitor(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..monitor import Monitor

    try:
        monitor = Monitor(args.model, threshold=args.threshold)
    except ValueError as e:
        raise CLIError(str(e)) from None
    ts, _ = load_inputs(args)
    rows = []
    for i, tid in enumerate(ts.ids):
        monitor.reset()
        for k, s in enumerate(range(ts.traj_offsets[i], ts.traj_offsets[i + 1]), start=1):
            a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
            conf = monitor.add_step(ts.logprob[a:b], ts.top_logprobs[a:b])
            rows.append({"id": tid, "step": k, "tokens": int(b - a), "confidence": conf,
                         "alert": bool(monitor.alerts and monitor.alerts[-1].step == k)})
    df = pd.DataFrame(rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False, float_format="%.17g")
    alerted = df.groupby("id")["alert"].any()
    msg = f"; {int(alerted.sum())} runs alerted (confidence < {args.threshold})" if args.threshold is not None else ""
    print(f"replayed {len(ts)} runs ({len(df)} steps) through a Monitor of {args.model}{msg}; wrote {out}")
    if hasattr(monitor.model, "assess") and len(ts):
        _print_expected(monitor.model, ts, df.groupby("id", sort=False)["confidence"].last().to_numpy())
    return 0


def _print_expected(gac, ts, final) -> None:
    """The GAC's applicability verdict and expected ECE range for the replayed runs (final confidences)."""
    import sys

    from ..calibration.shift import shift_check
    expected = gac.assess(shift_check(gac, ts, name=gac.name), gac.kinds(ts) == "with_alternatives", final)
    line = f"applicability: {expected.message()}"
    print(f"htc monitor: warning: {line}" if expected.flagged else line, file=sys.stderr if expected.flagged else
          sys.stdout)


def _threshold(value: str) -> float:
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {value!r}") from None
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {value!r}")
    return v


def _false_alarm(value: str) -> float:
    try:
        v = float(value)
    except ValueError:
        v = float("nan")
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a rate in (0, 1), got {value!r}")
    return v


def register(sub) -> None:
    p = sub.add_parser("early-warning", help="how early a failing run can be flagged: metrics vs prefix length",
                       description="Evaluate HTC-Reduced, LastStep-TP and GlobalTrace-TP (raw and temperature-scaled) "
                                   "on the first k steps of every run (k = 1, 2, ...) and on 25/50/75/100%% of each "
                                   "run's steps: ECE, Brier and AUROC of the pooled out-of-fold predictions, with "
                                   "5-fold CV by trajectory (the same folds at every prefix length; alpha and "
                                   "temperatures fitted on the training runs' prefixes only), and the fraction of "
                                   "failing runs flagged at a fixed false-alarm rate among successful runs, per "
                                   "prefix and for a live monitor with one threshold (median step of the first "
                                   "alert vs run length). Unlabeled trajectories are ignored.",
                       epilog="example: htc early-warning sample_runs/arithmetic/ --seeds 1")
    add_input_options(p)
    add_feature_options(p)
    p.add_argument("--max-steps", type=seeds_arg, metavar="K",
                   help="prefixes of 1..K steps (default: up to the longest run, at most 20)")
    p.add_argument("--fractions", type=_fraction_list, default=[0.25, 0.5, 0.75, 1.0], metavar="F,F,...",
                   help="fractions of each run's steps (default: 25%%,50%%,75%%,100%%)")
    p.add_argument("--false-alarm", type=_false_alarm, default=0.1, metavar="RATE",
                   help="false-alarm rate among successful runs (default: 0.1)")
    p.add_argument("--seeds", type=seeds_arg, default=3, metavar="N",
                   help="number of CV repeats, seeds 42..42+N-1 (default: 3)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    p.set_defaults(func=cmd_early_warning)

    p = sub.add_parser("prefixes", help="cut runs into their first k steps (htc-trace JSONL)",
                       description="Write the prefixes of every run as htc-trace JSONL, one line per prefix with "
                                   "id 'RUN@k' (its first k steps; label and metadata of the whole run). Default: "
                                   "every prefix 1..S of every run; --steps/--fractions pick some.",
                       epilog="example: htc prefixes sample_runs/units/ --steps 1,2 --out out/prefixes.jsonl")
    add_input_options(p)
    p.add_argument("--steps", type=_int_list, metavar="K,K,...", help="prefix lengths in steps (runs with fewer "
                                                                       "steps are left out of that length)")
    p.add_argument("--fractions", type=_fraction_list, metavar="F,F,...",
                   help="fractions of each run's steps (ceil(F x S), at least 1)")
    p.add_argument("--out", required=True, metavar="FILE.jsonl", help="output file")
    p.set_defaults(func=cmd_prefixes)

    p = sub.add_parser("monitor", help="replay runs step by step through a Monitor: confidence after each step",
                       description="Feed every run to htc_core.Monitor one step at a time, as a live agent would, "
                                   "and write id, step, tokens, calibrated confidence after that step and alert "
                                   "(the confidence fell below --threshold at this step) to a CSV. The confidence "
                                   "after step k equals `htc score` on the run's k-step prefix.",
                       epilog="examples: htc monitor out/model.json sample_runs/units/ --threshold 0.2 "
                              "--out out/steps.csv\n          htc monitor gac-prefix unlabeled_runs.jsonl --out "
                              "out/steps.csv   (no labels needed)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL", help="a model written by `htc fit`, or a shipped model: gac-prefix "
                                                  "(trained on prefixes of runs; no labels of yours needed), gac")
    add_input_options(p)
    p.add_argument("--threshold", type=_threshold, metavar="T", help="alert when the confidence falls below T")
    p.add_argument("--out", required=True, metavar="FILE.csv", help="output CSV")
    p.set_defaults(func=cmd_monitor)
