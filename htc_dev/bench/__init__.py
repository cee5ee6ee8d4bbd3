"""Benchmarks: each prints figures measured against a plain reference in the same run (never timed assertions).

    python -m htc_dev.bench features      feature extraction vs the plain-Python reference loop
    python -m htc_dev.bench formats       import speed and memory of a call log vs json/orjson parse alone
    python -m htc_dev.bench calibration   nested CV (path solver vs liblinear) and scoring throughput
    python -m htc_dev.bench monitor       Monitor.add_step per step vs prefix + extract + predict_proba
    python -m htc_dev.bench dashboard     cold start, cached pages, upload, projections (needs the [app] extra)
    python -m htc_dev.bench dashboard_scale  ingest, workspace and each page's data at 10k/100k/1M runs, peak memory
    python -m htc_dev.bench flags         structural flags over columns vs the per-run loop (sample runs, synthetic)
    python -m htc_dev.bench hostile       reading cost of the hostile-value checks vs json/orjson parse alone
    python -m htc_dev.bench experiments   transfer, GAC leave-one-out and ablation vs one evaluate, same runs
    python -m htc_dev.bench ingest        htc features end to end vs json.loads; 30k/300k/1M scaling (time, memory)
    python -m htc_dev.bench scaling       htc features local vs Dask 1 and 2 workers at 10k/100k/1M runs vs json.loads
    python -m htc_dev.bench gam           htc evaluate with HTC-GAM on 500 runs vs the default table; GAM vs Reduced
    python -m htc_dev.bench gac_foreign   the shipped GAC zero-shot on a foreign run set vs training-free signals
    python -m htc_dev.bench gac_rank      label-free ways to rank as the best training-free signal: LOFO choice, foreign sets
    python -m htc_dev.bench learning      learning curves (HTC vs MLP, XGBoost, GP, LSTM, Transformer) on sample_runs/
    python -m htc_dev.bench coldstart     first fit / score / Monitor / evaluate with an empty kernel cache vs warm
    python -m htc_dev.bench label_queue   the label queue vs random order: adapted ECE after 10..100 labels
    python -m htc_dev.bench otel          OTLP JSON file read vs json.loads floors (new processes); htc serve spans/s
    python -m htc_dev.bench logit_bound   HTC with and without the soft logit bound (max_logit=10), same folds
    python -m htc_dev.bench explain       explain_trajectory ms per run on the sample runs; --digest of its output
    python -m htc_dev.bench all           features, formats, calibration and monitor

Options after the name go to that benchmark (``python -m htc_dev.bench NAME --help``).
"""

BENCHMARKS = ("features", "formats", "calibration", "dashboard", "hostile", "monitor", "experiments", "ingest", "gam",
              "scaling", "learning", "dashboard_scale", "flags", "coldstart", "gac_foreign",
              "label_queue", "otel", "logit_bound", "explain", "gac_rank")


def shared_data_dir():
    """Folder of the real agent trajectories made by others (``../shared/data`` next to a source checkout,
    or ``$HTC_SHARED_DATA``); benchmarks read them from there and never copy them. May not exist."""
    import os
    from pathlib import Path

    env = os.environ.get("HTC_SHARED_DATA")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


def checkout_root():
    """Root of the source checkout (app.py, sample_runs/) when the package runs from one, else None."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    return root if (root / "app.py").is_file() else None
