"""``htc evaluate``, ``htc fit``, ``htc score``: the honest evaluation, fitting and scoring with a model file."""

from __future__ import annotations

import argparse
import contextlib
import sys

from .engine_opts import add_engine_options
from .common import CLIError, add_chunk_option, add_feature_options, add_input_options, chunk_reader, \
    labeled_only, load_inputs, output_path, report_problems, seeds_arg


def _warn_small(command: str, y) -> None:
    from ..calibration.evaluation import small_sample_warning

    msg = small_sample_warning(y)
    if msg:
        print(f"htc {command}: warning: {msg}", file=sys.stderr)


def _fold_progress(done: int, total: int, msg: str) -> None:
    print(f"\r  {done}/{total} outer folds ({msg})", end="" if done < total else "\n", file=sys.stderr, flush=True)


def _n_jobs_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a non-zero integer (-1: one per core), got {text!r}")
    return value


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..calibration.evaluation import EvaluationError, evaluate

    ts, _ = load_inputs(args)
    ts = labeled_only(ts, "evaluate")
    _warn_small("evaluate", ts.labels)
    progress = _fold_progress if not args.json and sys.stderr.isatty() else None
    try:
        methods = None
        if args.gam:
            from ..calibration.methods import METHODS

            methods = [m for m in METHODS.values() if m.in_default_table or m.name == "HTC-GAM"]
        res = evaluate(ts, seeds=args.seeds, profile=args.profile, top_k=args.top_k, progress=progress,
                       methods=methods, n_jobs=args.n_jobs)
    except EvaluationError as e:
        raise CLIError(str(e)) from None
    if args.json:
        print(res.to_json())
    else:
        print(res.table())
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    from ..calibration.calibrators import HTCCalibrator
    from ..calibration.evaluation import label_problem
    from ..calibration.gam import HTCGAM
    from ..features import extract

    out = output_path(args.out, (".json",))  # checked before the work
    ts, _ = load_inputs(args)
    ts = labeled_only(ts, "fit")
    y = ts.labels
    problem = label_problem(y, for_evaluation=False)
    if problem:
        raise CLIError(problem)
    _warn_small("fit", y)
    if args.prefixes:
        if args.prior:
            raise CLIError("--prefixes and --prior cannot be combined; fit on `htc prefixes` output with --prior")
        ts, n_runs = _every_prefix(ts), len(ts)
        y = ts.labels
        print(f"fitting on {len(ts):,} prefixes of {n_runs:,} runs (id@k: the first k steps; label: the run's outcome)")
    if args.prior:
        return _fit_with_prior(args, ts, out)
    fm = extract(ts, profile=args.profile, top_k=args.top_k)
    # records fm's profile and top-k (profile_, top_k_)
    model = HTCGAM() if args.variant == "gam" else HTCCalibrator(variant=args.variant)
    model.fit(fm, y, meta=ts.meta)
    out = model.save(out)  # atomic
    if args.variant == "gam":
        crit = {k: "n/a" if v is None else f"{v:.4f}" for k, v in model.cv_results_.items() if k != "gam"}
        print(f"fitted {model.display_name} on {len(y)} trajectories (success rate {y.mean():.3f}): inner-CV "
              f"criterion (AUROC - Brier - ECE) GAM {crit['gam_criterion']} vs HTC-Reduced "
              f"{crit['linear_criterion']}; alpha = {model.alpha_:g}, {model.n_selected_} of "
              f"{model.n_features_in_} features used")
    else:
        print(f"fitted HTC-{args.variant.capitalize()} on {len(y)} trajectories (success rate {y.mean():.3f}): "
              f"alpha = {model.alpha_:g}, {model.n_selected_} of {model.n_features_in_} features kept")
    print(f"wrote {out}")
    return 0


def _every_prefix(ts):
    """Every prefix 1..S of every run, ids RUN@k (as `htc prefixes` writes them): a model for a live monitor."""
    import numpy as np

    from ..traces.prefix import prefix_pairs
    from ..traces.traceset import concat_ranges

    S = ts.steps_per_trajectory
    lengths = concat_ranges(np.ones(len(S), np.int64), S + 1)
    out = prefix_pairs(ts, np.repeat(np.arange(len(S)), S), lengths)
    out.meta["id"] = [f"{v}@{k}" for v, k in zip(out.meta["id"], lengths)]
    return out


def _lookahead(chunks):
    """(chunk, more chunks follow) pairs."""
    it = iter(chunks)
    cur = next(it, None)
    while cur is not None:
        nxt = next(it, None)
        yield cur, nxt is not None
        cur = nxt


def _score_engine(args: argparse.Namespace, model, out) -> int:
    """``htc score --engine dask|spark``: the model's JSON text goes to the workers; metrics merge exactly."""
    from ..engines.common import Task
    from .engine_opts import check_engine_args, run_engine

    check_engine_args(args)
    defaults = {k: getattr(args, k) for k in ("dataset",) if getattr(args, k, None)}
    res = run_engine(args, Task.for_model(args.model, defaults), out)
    print(f"scored {res.rows} trajectories with {args.model} ({_model_name(model)}); wrote {out}")
    if (getattr(model, "transfer", None) or {}).get("set_level"):
        if getattr(args, "as_set", False):
            print("scored run by run: with --engine a piece is a byte range, not a run set, so --as-set is not used")
    _print_metrics(res.metrics)
    return 0


def _print_metrics(metrics, overlap: "TrainingOverlap | None" = None) -> None:
    if metrics is not None and metrics.n:
        m = metrics.to_dict()
        where = overlap.words() if overlap is not None else "in-sample for the model's own training runs"
        print(f"on the {m['n']} labeled trajectories ({where}): "
              f"ECE {m['ece']:.4f}, Brier {m['brier']:.4f}, AUROC {m['auroc']:.4f}")


class TrainingOverlap:
    """Whether the labeled runs scored come from what the model was trained on, gathered chunk by chunk: a run
    counts as in the training data when its (dataset, model) pair is one the model's card lists (a GAC's
    ``training_data.by_dataset_and_model``), or, for a calibrator that records only its datasets and models
    (``training_summary_``), when both are among them. The metrics line says in-sample, zero-shot or how many
    of each, instead of calling every score in-sample."""

    def __init__(self, model):
        card = getattr(model, "card", None) or {}
        rows = (card.get("training_data") or {}).get("by_dataset_and_model")
        self.pairs = {(str(r.get("dataset")), str(r.get("model"))) for r in rows} if rows else None
        summ = {}
        if self.pairs is None:
            subs = getattr(model, "models_", None)
            base = subs.get("without_alternatives") if isinstance(subs, dict) else model
            summ = getattr(base, "training_summary_", None) or {}
        self.datasets, self.models = set(summ.get("datasets") or []), set(summ.get("models") or [])
        self.known = self.pairs is not None or bool(self.datasets or self.models)
        self.inside = self.n = 0

    def update(self, ts, labeled) -> None:
        import numpy as np

        # the columns as text, None as 'None' (as pandas' astype(str) of ts.meta gave them), without pandas
        ds = np.array([str(v) for v in ts.meta_column("dataset")], dtype=object)
        mo = np.array([str(v) for v in ts.meta_column("model")], dtype=object)
        for d, m in zip(ds[labeled], mo[labeled]):
            self.n += 1
            if self.pairs is not None:
                self.inside += (d, m) in self.pairs
            else:
                self.inside += (d in self.datasets or not self.datasets) and (m in self.models or not self.models)

    def words(self) -> str:
        if not self.known:
            return "in-sample if the model was trained on these runs: it does not record its training data"
        if self.inside == 0:
            return "zero-shot: no run's dataset x model is in the model's training data"
        if self.inside == self.n:
            return "in-sample: every run's dataset x model is in the model's training data"
        return (f"{self.inside} in-sample (their dataset x model is in the model's training data), "
                f"{self.n - self.inside} zero-shot")


def _model_name(model) -> str:
    from ..calibration.linear_scoring import GACScoring

    if isinstance(model, GACScoring):
        return f"GAC-{model.variant.capitalize()}"
    return getattr(model, "display_name", f"HTC-{model.variant.capitalize()}")


def _fit_with_prior(args: argparse.Namespace, ts, out) -> int:
    from ..experiments.adapt_curve import adapt_traces
    from ..calibration.models import load_model

    if args.variant == "gam":
        raise CLIError("--prior adapts a linear model; it cannot be combined with --variant gam")
    try:
        model = adapt_traces(ts, load_model(args.prior), variant=args.variant)
    except ValueError as e:
        raise CLIError(str(e)) from None
    out = model.save(out)
    a = model.adaptation_
    print(f"adapted {a['prior']} to {len(ts)} labeled trajectories (success rate {ts.labels.mean():.3f}); features: "
          f"profile {model.profile_!r}, top-k {model.top_k_} (the prior's). Choice: {a['choice']} (by {a['criterion']})")
    for r in a["grid"]:
        key, label = ("log_evidence", "log evidence") if "log_evidence" in r else ("log_loss", "log loss")
        score = f"{r[key]:.4f}" if r["available"] else "not a candidate"
        print(f"  {'*' if r['name'] == a['choice'] else ' '} {r['name']:<38} {label} {score}")
    for n in a["notes"]:
        print(f"note: {n}")
    print(f"wrote {out}")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    import numpy as np

    from ..calibration.models import load_model, load_scorer
    from ..calibration.streaming import MetricState
    from ..tablewriter import TableWriter

    out = output_path(args.out, (".csv", ".parquet"))  # checked before the work; None: '-', CSV on stdout
    try:
        # scoring only: the model file read with numpy alone (no scikit-learn, scipy or pandas to import);
        # --explain explains with the estimator itself (its reasons)
        model = load_model(args.model) if args.explain else load_scorer(args.model)
    except ValueError as e:
        raise CLIError(str(e)) from None
    if args.engine != "local":
        if out is None:
            raise CLIError(f"--out - (standard output) is not supported with --engine {args.engine}; name a file")
        return _score_engine(args, model, out)
    reader = chunk_reader(args)
    metrics = MetricState()
    overlap = TrainingOverlap(model)
    shift = _shift_accumulator(model, args.model)
    assess = _AssessParts() if hasattr(model, "assess") else None
    verbalized = None  # one chunk: the column only when present (as always); several: always, for one header
    sets = SetReport()  # chunks a GAC scored as a set, and what its set-level step chose for each
    writer = TableWriter(out) if out is not None else TableWriter(None, stream=sys.stdout.buffer)
    with writer as w, (contextlib.redirect_stdout(sys.stderr) if out is None else contextlib.nullcontext()):
        for i, (ts, more) in enumerate(_lookahead(reader)):
            if i == 0 and more:
                verbalized = True
            try:
                cols = _score_chunk(model, ts, w, verbalized, args)
                sets.update(model, ts, cols)
            except ValueError as e:
                raise CLIError(str(e)) from None
            y = ts.labels
            lab = ~np.isnan(y)
            if lab.any():
                metrics.update(y[lab], cols["confidence"][lab])
                overlap.update(ts, lab)
            if shift is not None:
                shift.update(ts)
            if assess is not None:
                assess.update(model, ts, cols["confidence"], cols.get("confidence_per_run"))
        report_problems(reader)
    with contextlib.redirect_stdout(sys.stderr) if out is None else contextlib.nullcontext():
        # with --out -, standard output holds the CSV only: the summary goes to standard error
        print(f"scored {w.rows} trajectories with {args.model} ({_model_name(model)}); wrote "
              f"{out if out is not None else 'CSV to standard output'}")
        sets.report(model)
        _print_metrics(metrics, overlap)
        sets.report_per_run()
        if shift is not None:
            rep = shift.report()
            if assess is not None and w.rows:
                _report_expected(model.assess(rep, *assess.arrays()), rep, args.model)
            else:
                _report_shift(rep, args.model)
    return 0


def _score_chunk(model, ts, writer, verbalized, args) -> dict:
    """Score one chunk and write its rows; return its confidence columns (numpy arrays)."""
    from ..scoring import score_columns, score_frame

    as_set = getattr(args, "as_set", False)
    if args.explain:    # the explained columns are a DataFrame (text, flags, reasons, features)
        df = score_frame(model, ts, verbalized_column=verbalized, explain=True, set_level=as_set)
        writer.write(df)
        return {c: df[c].to_numpy() for c in ("confidence", "confidence_per_run") if c in df}
    cols = score_columns(model, ts, verbalized_column=verbalized, set_level=as_set)
    writer.write_columns(cols)
    return cols


def _scored_as_set(model, ts, cols) -> int:
    """1 when a GAC scored this chunk as a set (its set-level step; score_columns then gives confidence_per_run)."""
    return int("confidence_per_run" in cols and model.scores_as_set(ts.n_trajectories))


class SetReport:
    """What ``htc score --as-set`` says about the chunks a GAC scored as a set, gathered chunk by chunk: how many,
    for a ``nearest-family`` step the signal chosen for each chunk and why, and what the per-run transfer (column
    confidence_per_run) gives the same runs: their mean confidence and, on labeled runs, its metrics."""

    SHOWN = 10          # chunks listed one by one; beyond, a count per signal

    def __init__(self):
        from ..calibration.streaming import MetricState

        self.n = 0
        self.lines, self.signals = [], {}
        self.per_run = MetricState()

    def update(self, model, ts, cols) -> None:
        import numpy as np

        if not _scored_as_set(model, ts, cols):
            return
        self.n += 1
        sl = model.transfer["set_level"]
        conf, per_run = cols["confidence"], cols["confidence_per_run"]
        what = f"mean confidence {float(np.mean(conf)):.3f} as a set, {float(np.mean(per_run)):.3f} run by run"
        if sl["method"] == "nearest-family":
            from ..calibration.signal_choice import choose_signal
            from ..calibration.transfer_methods import signal_matrix, training_free_signal_arrays

            choice = choose_signal(sl, signal_matrix(training_free_signal_arrays(ts)))
            self.signals[choice.signal] = self.signals.get(choice.signal, 0) + 1
            what = f"{choice.words()}; {what}"
        if self.n <= self.SHOWN:
            self.lines.append(f"  chunk {self.n} ({ts.n_trajectories} runs): {what}")
        y = ts.labels
        lab = ~np.isnan(y)
        if lab.any():
            self.per_run.update(y[lab], per_run[lab])

    def report(self, model) -> None:
        if not self.n:
            return
        sl, t = model.transfer["set_level"], model.transfer
        how = ("one training-free signal chosen for the chunk, without labels, through its out-of-family map"
               if sl["method"] == "nearest-family" else "its rank within the chunk")
        print(f"scored as a set: {self.n} chunk(s) of at least {sl['min_runs']} runs got each run's confidence from "
              f"{how} ({sl['method']}, chosen leave-one-family-out); column confidence_per_run: each run on its own "
              f"by the per-run transfer ({t.get('method')}, {t.get('signal')}), the number the dashboard and htc "
              "monitor give")
        for line in self.lines:
            print(line)
        if self.n > self.SHOWN:
            print(f"  ... {self.n - self.SHOWN} more chunk(s); signals chosen over all chunks: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(self.signals.items())))

    def report_per_run(self) -> None:
        if self.n and self.per_run.n:
            m = self.per_run.to_dict()
            print(f"the same labeled runs scored run by run (column confidence_per_run): ECE {m['ece']:.4f}, "
                  f"Brier {m['brier']:.4f}, AUROC {m['auroc']:.4f}")


class _AssessParts:
    """What a GAC's expected-error assessment needs, gathered chunk by chunk: which runs list alternatives and
    the confidences (a flag and a float per run)."""

    def __init__(self):
        self.alt, self.conf, self.per_run = [], [], []

    def update(self, model, ts, confidence, per_run=None) -> None:
        import numpy as np

        self.alt.append(model.kinds(ts) == "with_alternatives")
        self.conf.append(np.asarray(confidence, dtype=float))
        # a chunk scored as a set: its base-rate measures come from the runs scored one by one (GAC.assess)
        self.per_run.append(self.conf[-1] if per_run is None else np.asarray(per_run, dtype=float))

    def arrays(self):
        import numpy as np

        return np.concatenate(self.alt), np.concatenate(self.conf), np.concatenate(self.per_run)


def _report_expected(expected, rep, name: str) -> None:
    """Always: the verdict and the expected ECE range; on stderr as a warning when outside the training data."""
    prior = name if not name.endswith(".json") else "MODEL.json"
    line = f"applicability: {expected.message()}"
    if expected.flagged:
        print(f"htc score: warning: {line}", file=sys.stderr)
        if rep.shifted:
            print(f"htc score: warning: {rep.message(prior=prior)}", file=sys.stderr)
    else:
        print(line)


def _shift_accumulator(model, name: str):
    """Feature sums for the applicability check (HTC models and GACs; not HTC-GAM)."""
    from ..calibration.shift import ShiftAccumulator

    if not hasattr(model, "models") and not hasattr(model, "coef_"):
        return None
    return ShiftAccumulator(model, name=name)


def _report_shift(rep, name: str) -> None:
    prior = name if not name.endswith(".json") else "MODEL.json"
    if rep.shifted:
        print(f"htc score: warning: {rep.message(prior=prior)}", file=sys.stderr)
    else:
        print(f"applicability: {rep.message(prior=prior)}")
    for note in rep.notes:   # e.g. a used feature with training std 0 (a constant or a tampered file)
        print(f"htc score: warning: applicability check: {note}", file=sys.stderr)


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="cross-validated ECE, Brier and AUROC of HTC vs the baselines",
                       description="Evaluate HTC-Full, HTC-Reduced and the baselines (LastStep-TP, GlobalTrace-TP, "
                                   "Bottom10, LowestGroup, Tail, each raw and with temperature scaling; "
                                   "Verbalized when present) with 5-fold stratified CV, alpha chosen by nested CV "
                                   "on the training folds only, repeated over seeds 42, 43, ... Metrics are "
                                   "computed on the pooled out-of-fold predictions (mean ± std over repeats). "
                                   "Unlabeled trajectories are ignored.")
    add_input_options(p)
    add_feature_options(p)
    p.add_argument("--seeds", type=seeds_arg, default=3, metavar="N",
                   help="number of CV repeats, seeds 42..42+N-1 (default: 3)")
    p.add_argument("--n-jobs", type=_n_jobs_arg, default=-1, metavar="N",
                   help="outer folds fitted at once in threads (default -1: one per core; 1: serial); the "
                        "result is the same for every N")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--gam", action="store_true",
                   help="also evaluate HTC-GAM (one spline shape function per de-duplicated feature, chosen "
                        "against HTC-Reduced by the same inner CV; slower)")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("fit", help="fit an HTC calibrator and save it as JSON",
                       description="Fit HTC-Reduced (L1, sparse) or HTC-Full (L2) on labeled runs, alpha chosen "
                                   "by 5-fold stratified CV, and write the model as JSON (weights, scaler, feature "
                                   "names, profile, training summary). Unlabeled trajectories are ignored.")
    add_input_options(p)
    add_feature_options(p)
    p.add_argument("--variant", choices=("reduced", "full", "gam"), default="reduced",
                   help="reduced = L1 (default), full = L2, gam = HTC-GAM (spline shape functions per feature, "
                        "kept only when they beat HTC-Reduced in the inner CV, else the file holds HTC-Reduced)")
    p.add_argument("--out", required=True, metavar="MODEL.json", help="where to write the model")
    p.add_argument("--prefixes", action="store_true",
                   help="fit on every prefix (first 1, 2, ..., S steps) of every labeled run, each labeled with its "
                        "run's outcome: the model `htc monitor` and htc_core.Monitor need (one fitted on whole runs "
                        "scores a run after its first step far too low). Same as `htc prefixes` then `htc fit`")
    p.add_argument("--prior", metavar="MODEL",
                   help="adapt this model to the labeled runs instead of fitting from scratch: a shipped name (gac, "
                        "gac-full) or a model file. The fit uses the prior's features (its profile and top-k; for "
                        "a GAC the sub-model for the runs' kind) and chooses by inner CV among the prior, its "
                        "recalibrated logit, weights shrunk toward the prior's (several strengths) and a plain "
                        "HTC fit; the choice and the scores are written to the model file ('adaptation')")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("score", help="score runs with a saved or shipped model (labels not needed)",
                       description="Write id, calibrated confidence and the raw baseline confidences "
                                   "(last_step_tp, global_trace_tp, bottom10, lowest_group, tail, verbalized when "
                                   "present) per trajectory. Features use the model's confidence profile and top-k. "
                                   "MODEL may be a shipped General Agent Calibrator (gac, gac-full; see `htc "
                                   "models`): each run is then scored by its sub-model for runs with or without "
                                   "top-k alternatives (column gac_model), each run on its own (--as-set: a chunk "
                                   "of at least 50 runs scored as a set). After scoring, the runs' features are "
                                   "compared with "
                                   "the model's training statistics: a warning names the features whose mean moved "
                                   "by 2 or more training standard deviations (htc_core.calibration.shift).")
    p.add_argument("model", metavar="MODEL", help="a model file written by `htc fit`, or a shipped model name "
                                                  "(gac, gac-full)")
    add_input_options(p)
    p.add_argument("--out", required=True, metavar="FILE", help="output .csv or .parquet; '-': CSV on standard "
                                                                 "output (the summary then goes to standard error)")
    p.add_argument("--explain", action="store_true",
                   help="also write what the dashboard's export shows of each run: its scorer, outcome, question, final "
                        "answer and gold, its out-of-fold confidence when the runs are labeled (one cross-validated "
                        "repeat of the model's kind on them, per chunk), its structural flags (no final answer, step "
                        "limit, repeated action, ...), its three strongest reasons (from the model that scored it; a "
                        "GAC's sub-model per run) and its 48 features")
    p.add_argument("--as-set", action="store_true",
                   help="a GAC whose model file holds a set-level step: score a chunk of at least 50 runs as a set "
                        "(column confidence_per_run: each run on its own); a run's number then depends on the other "
                        "runs of the chunk. rank-mean-platt: each run's rank within the chunk by the GAC's score and "
                        "three training-free signals; nearest-family: the training-free signal that ranks best the "
                        "training family whose signals look most like the chunk's (the command prints which, why, "
                        "and what the per-run transfer gives). The shipped gac and gac-full hold none (no set-level "
                        "step beat their per-run transfer leave-one-family-out), so with them every run is scored on "
                        "its own: see docs/gac.md")
    add_chunk_option(p)
    add_engine_options(p)
    p.set_defaults(func=cmd_score)
