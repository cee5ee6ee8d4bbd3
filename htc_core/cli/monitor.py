"""``htc early-warning``, ``htc prefixes``, ``htc monitor``: partial runs, and the confidence after each step."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import (CLIError, add_chunk_option, add_feature_options, add_input_options, chunk_reader, labeled_only,
                     load_inputs, output_path, probability_arg, report_problems, seeds_arg)


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


#: prefix tokens and steps gathered and written at a time: memory holds one batch (or one prefix, when a single
#: prefix is bigger), whatever the length of the runs
PREFIX_BATCH = 2_000_000
#: above this many prefix tokens in a chunk, `htc prefixes` says that the output grows with the square of run length
PREFIX_NOTE = 50_000_000


def _prefix_plan(ts, args):
    """(runs, lengths): the prefixes to write, run by run, shortest first."""
    import numpy as np

    from ..traces.prefix import prefix_lengths
    from ..traces.traceset import concat_ranges

    S = ts.steps_per_trajectory
    cuts = [np.where(S >= k, k, 0) for k in args.steps or ()]   # a run shorter than k has no k-step prefix
    cuts += [prefix_lengths(ts, fraction=f) for f in args.fractions or ()]
    if not cuts:                                                 # default: every prefix of every run
        return np.repeat(np.arange(len(S)), S), concat_ranges(np.ones(len(S), np.int64), S + 1)
    K = np.stack(cuts, axis=1)
    pairs = np.unique(np.column_stack([np.repeat(np.arange(len(S)), K.shape[1]), K.ravel()])[K.ravel() > 0], axis=0)
    return pairs[:, 0], pairs[:, 1]


def _batches(ts, runs, lengths, budget: int):
    """(lo, hi) slices of the plan whose prefixes hold about ``budget`` tokens and steps."""
    import numpy as np

    first = ts.traj_offsets[runs]
    cost = ts.step_offsets[first + lengths] - ts.step_offsets[first] + lengths
    total = np.cumsum(cost)
    lo = 0
    while lo < len(total):
        base = int(total[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(total, base + budget, side="right")), lo + 1)
        yield lo, hi
        lo = hi


def cmd_prefixes(args: argparse.Namespace) -> int:
    from ..atomic import atomic_open
    from ..formats import native
    from ..traces.prefix import prefix_pairs

    out = output_path(args.out, (".jsonl",))    # htc-trace JSONL only; checked before any work
    if out is None:
        raise CLIError("--out must name a .jsonl file")
    reader = chunk_reader(args)
    n_prefixes = noted = 0
    with atomic_open(out, "w") as fh:              # the previous file stays until the last line is written
        for ts in reader:
            runs, lengths = _prefix_plan(ts, args)
            for lo, hi in _batches(ts, runs, lengths, PREFIX_BATCH):
                part = prefix_pairs(ts, runs[lo:hi], lengths[lo:hi])
                part.meta["id"] = [f"{v}@{k}" for v, k in zip(part.meta["id"], lengths[lo:hi])]
                native.write(part, fh)
            n_prefixes += len(runs)
            noted = noted or _note_size(ts, runs, lengths)
        report_problems(reader)                    # nothing read: an error, and the previous file is kept
    print(f"wrote {n_prefixes} prefixes of {reader.n_trajectories} runs to {out} (id@k: the first k steps of run id)")
    return 0


def _note_size(ts, runs, lengths) -> bool:
    first = ts.traj_offsets[runs]
    tokens = int((ts.step_offsets[first + lengths] - ts.step_offsets[first]).sum())
    if tokens <= PREFIX_NOTE:
        return False
    print(f"htc prefixes: note: {len(runs):,} prefixes holding {tokens:,} tokens from {len(ts):,} runs: every "
          "prefix of a long run grows with the square of its length; --steps or --fractions pick some lengths",
          file=sys.stderr)
    return True


def cmd_monitor(args: argparse.Namespace) -> int:
    from ..monitor import Monitor, fitted_on_prefixes
    from ..tablewriter import SUFFIXES, TableWriter

    out = output_path(args.out, SUFFIXES)       # .csv, .parquet or .jsonl: written as its suffix says
    if out is None:
        raise CLIError("--out must name a .csv, .parquet or .jsonl file")
    try:
        monitor = Monitor(args.model, threshold=args.threshold)
    except ValueError as e:
        raise CLIError(str(e)) from None
    if not fitted_on_prefixes(monitor.model):
        _whole_run_model(args)
    reader = chunk_reader(args)
    n_steps = n_alerted = 0
    gac = monitor.model if hasattr(monitor.model, "assess") else None
    if gac is not None:     # the expected-error line of a GAC: feature sums, alternatives and final confidences
        from ..calibration.shift import ShiftAccumulator
        shift, alts, finals = ShiftAccumulator(gac, name=gac.name), [], []
    with TableWriter(out) as w:                   # chunk by chunk, renamed onto --out only when complete
        for ts in reader:
            cols = _replay(monitor, ts)
            w.write_columns(cols)                 # CSV straight from the arrays: no pandas for the table
            n_steps += ts.n_steps
            n_alerted += len(set(cols["id"][cols["alert"]]))        # ids with an alert at any step
            if gac is not None and len(ts):
                shift.update(ts)
                alts.append(gac.kinds(ts) == "with_alternatives")
                finals.append(cols["confidence"][ts.traj_offsets[1:] - 1])
        report_problems(reader)
    msg = f"; {n_alerted} runs alerted (confidence < {args.threshold})" if args.threshold is not None else ""
    print(f"replayed {reader.n_trajectories} runs ({n_steps} steps) through a Monitor of {args.model}{msg}; "
          f"wrote {out}")
    if gac is not None and finals:
        import numpy as np
        _print_expected(gac, shift.report(), np.concatenate(alts), np.concatenate(finals))
    return 0


def _whole_run_model(args: argparse.Namespace) -> None:
    """A model fitted on whole runs scores a run after its first step far too low (it never saw a one-step
    run that went on): refused unless asked, pointing to a prefix-fitted one."""
    why = (f"{args.model} was fitted on whole runs, not on prefixes: after the first steps its confidences are "
           "far too low and nearly every run alerts. Fit one on prefixes: `htc fit RUNS --prefixes --out "
           "model.json` (or use the shipped gac-prefix)")
    if not args.allow_whole_run_model:
        raise CLIError(why + "; --allow-whole-run-model to use this one anyway")
    print(f"htc monitor: warning: {why}", file=sys.stderr)


def _replay(monitor, ts) -> dict:
    """One row per step of every run of ``ts`` as numpy columns (id, step, tokens, confidence, alert): the
    confidence after the step and whether it alerted."""
    import numpy as np

    S = ts.steps_per_trajectory
    conf = np.empty(ts.n_steps)
    alert = np.zeros(ts.n_steps, dtype=bool)
    for i in range(len(ts)):
        monitor.reset()
        for k, s in enumerate(range(ts.traj_offsets[i], ts.traj_offsets[i + 1]), start=1):
            a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
            conf[s] = monitor.add_step(ts.logprob[a:b], ts.top_logprobs[a:b])
            alert[s] = bool(monitor.alerts and monitor.alerts[-1].step == k)
    starts = np.repeat(ts.traj_offsets[:-1], S)
    return {"id": np.repeat(np.asarray(ts.ids, dtype=object), S), "step": np.arange(ts.n_steps) - starts + 1,
            "tokens": np.diff(ts.step_offsets), "confidence": conf, "alert": alert}


def _print_expected(gac, rep, alternatives, final) -> None:
    """The GAC's applicability verdict and expected ECE range for the replayed runs: ``rep`` is the shift report
    over all chunks, ``alternatives`` which runs list top-k alternatives, ``final`` each run's last confidence."""
    expected = gac.assess(rep, alternatives, final)
    line = f"applicability: {expected.message()}"
    print(f"htc monitor: warning: {line}" if expected.flagged else line, file=sys.stderr if expected.flagged else
          sys.stdout)


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
    p.add_argument("--out", required=True, metavar="FILE.jsonl", help="output file (htc-trace JSONL)")
    add_chunk_option(p)
    p.set_defaults(func=cmd_prefixes)

    p = sub.add_parser("monitor", help="replay runs step by step through a Monitor: confidence after each step",
                       description="Feed every run to htc_core.Monitor one step at a time, as a live agent would, "
                                   "with a model fitted on prefixes (htc fit --prefixes, or the shipped gac-prefix), "
                                   "and write id, step, tokens, calibrated confidence after that step and alert "
                                   "(the confidence fell below --threshold at this step) to a CSV. The confidence "
                                   "after step k equals `htc score` on the run's k-step prefix.",
                       epilog="examples: htc fit sample_runs/units/ --prefixes --out out/prefix_model.json\n"
                              "          htc monitor out/prefix_model.json sample_runs/units/ --threshold 0.2 "
                              "--out out/steps.csv\n          htc monitor gac-prefix unlabeled_runs.jsonl --out "
                              "out/steps.csv   (no labels needed)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL", help="a model written by `htc fit`, or a shipped model: gac-prefix "
                                                  "(trained on prefixes of runs; no labels of yours needed), gac")
    add_input_options(p)
    p.add_argument("--threshold", type=probability_arg, metavar="T", help="alert when the confidence falls below T")
    p.add_argument("--out", required=True, metavar="FILE.csv", help="output table: .csv, .parquet or .jsonl")
    p.add_argument("--allow-whole-run-model", action="store_true",
                   help="use a model fitted on whole runs (refused by default: it alerts on nearly every run "
                        "after its first step; fit one with `htc fit RUNS --prefixes`)")
    add_chunk_option(p)
    p.set_defaults(func=cmd_monitor)
