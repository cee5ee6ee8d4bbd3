"""Each ``htc`` command imports only what it uses (issue 29, item 1).

Every check runs ``main([...])`` in a new interpreter and reads ``sys.modules`` afterwards, so an import added
at registration time (``register(sub)`` runs for every command, ``--version`` included) or at module level of
a reader fails here, not as seconds of start-up a user pays on every call. The start-up CPU time itself is
measured by ``python -m htc_dev.bench coldstart`` (never timed in a test).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_runs" / "units"
#: libraries whose import costs a visible fraction of a second (measured: sklearn 1.2 s CPU with scipy,
#: pandas 0.45 s, numba 0.4 s, scipy.special 0.35 s)
WATCHED = ("numpy", "pandas", "pyarrow", "scipy", "sklearn", "numba", "threadpoolctl", "duckdb", "streamlit",
           "plotly", "torch")

SCRIPT = r"""
import contextlib, io, json, sys
from htc_core.cli import main, build_parser
argv = json.loads(sys.argv[1])
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    try:
        if argv == ["--all-help"]:            # every sub-command's --help text, in one process
            p = build_parser()
            for action in p._subparsers._group_actions:
                for sub in action.choices.values():
                    sub.format_help()
            rc = 0
        else:
            rc = main(argv)
    except SystemExit as e:
        rc = e.code
watched = json.loads(sys.argv[2])
print(json.dumps({"rc": rc, "out": out.getvalue()[-2000:],
                  "loaded": [m for m in watched if m in sys.modules]}))
"""


def loaded_by(argv: list[str], watched=WATCHED) -> set[str]:
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(argv), json.dumps(list(watched))], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["rc"] == 0, res["out"]
    return set(res["loaded"])


def test_version_and_help_import_no_numeric_library():
    # numpy is allowed (the confidence profiles name the --profile choices); nothing heavier
    for argv in (["--version"], ["--help"], ["--all-help"]):
        assert loaded_by(argv) <= {"numpy"}, argv


def test_validate_imports_no_table_or_estimator_library():
    # the trace set keeps its metadata as plain columns (traces.metatable): pandas only once ts.meta is read
    assert loaded_by(["validate", str(SAMPLE)]) <= {"numpy"}


def test_features_to_csv_imports_neither_pandas_nor_an_estimator_library(tmp_path):
    loaded = loaded_by(["features", str(SAMPLE), "--out", str(tmp_path / "f.csv")])
    # pyarrow (without pyarrow.compute: 0.03 s CPU) formats the numbers: Arrow's C++ writer, faster than a Python
    # writer from the first row on (docs/benchmarks-ingest.md); threadpoolctl only from 100k tokens on
    assert loaded <= {"numpy", "pyarrow"}, loaded
    assert not loaded_by(["features", str(SAMPLE), "--out", str(tmp_path / "g.csv")], ["pyarrow.compute"])


def test_features_to_parquet_uses_pandas_and_no_estimator_library(tmp_path):
    loaded = loaded_by(["features", str(SAMPLE), "--out", str(tmp_path / "f.parquet")])
    assert "pandas" in loaded      # the Parquet file is written from the DataFrame (its schema's pandas metadata)
    assert not loaded & {"scipy", "sklearn", "numba", "threadpoolctl", "duckdb", "streamlit", "plotly", "torch"}


def test_score_imports_no_app_or_learning_library(tmp_path):
    loaded = loaded_by(["score", "gac", str(SAMPLE), "--out", str(tmp_path / "s.csv")])
    assert not loaded & {"duckdb", "streamlit", "plotly", "torch"}


#: what scoring a fitted JSON model needs: the model file read by calibration.linear_scoring (numpy), the features,
#: the baselines, the applicability check and Arrow's CSV writer; never pandas, scipy, scikit-learn or numba
SCORING = {"numpy", "pyarrow"}
HEAVY = {"pandas", "scipy", "sklearn", "numba", "threadpoolctl"}


@pytest.mark.parametrize("model", ["gac", "gac-full", "gac-prefix"])
def test_score_with_a_shipped_gac_imports_numpy_only(tmp_path, model):
    jsonl = ROOT / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    loaded = loaded_by(["score", model, str(jsonl), "--out", str(tmp_path / "s.csv")])
    assert loaded <= SCORING and not loaded & HEAVY, loaded


def test_score_with_a_model_file_of_htc_fit_imports_numpy_only(tmp_path):
    from htc_core.cli import main

    for variant in ("reduced", "full"):
        model = tmp_path / f"{variant}.json"
        # the model file is written by htc fit run here (what the file holds, not the process that wrote it,
        # is the point; a fit process of its own cost 1.2 s CPU of imports each)
        assert main(["fit", str(SAMPLE), "--variant", variant, "--out", str(model)]) == 0
        # a directory of JSONL files, read chunk by chunk, with the applicability check of an HTC model
        loaded = loaded_by(["score", str(model), str(SAMPLE), "--out", str(tmp_path / "s.csv")])
        assert loaded <= SCORING and not loaded & HEAVY, (variant, loaded)


@pytest.fixture(scope="module")
def gam_files(tmp_path_factory) -> dict:
    """HTC-GAM model files, one of each kind (shape functions; HTC-Reduced won), fitted here in the test process
    (what the file holds is the point, not the process that wrote it)."""
    import htc_core as htc
    from htc_core.calibration.gam import HTCGAM

    ts, _ = htc.load(str(SAMPLE / "units_SmolLM2-135M-greedy.jsonl"))
    fm, d = htc.extract(ts), tmp_path_factory.mktemp("gam")
    return {sel: HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select=sel).fit(fm, ts.labels).save(d / f"{sel}.json")
            for sel in ("gam", "linear")}


@pytest.mark.parametrize("kind", ["gam", "linear"])
def test_score_with_an_htc_gam_file_imports_numpy_only(tmp_path, gam_files, kind):
    # the file read by calibration.gam_scoring (numpy's Cox-de Boor basis): neither scikit-learn nor scipy
    loaded = loaded_by(["score", str(gam_files[kind]), str(SAMPLE), "--out", str(tmp_path / "s.csv")])
    assert loaded <= SCORING and not loaded & HEAVY, (kind, loaded)


def test_monitor_and_a_worker_with_an_htc_gam_file_import_no_estimator_library(tmp_path, gam_files):
    jsonl = ROOT / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    loaded = loaded_by(["monitor", str(gam_files["gam"]), str(jsonl), "--threshold", "0.35",
                        "--allow-whole-run-model", "--out", str(tmp_path / "m.csv")],
                       [*WATCHED, *ESTIMATOR, "scipy.interpolate"])
    # numba imports the top of scipy (scipy, scipy.linalg) for its kernels; the splines are not scipy's
    assert not loaded & {*ESTIMATOR, "scipy.interpolate"}, loaded
    assert loaded <= {"numpy", "numba", "scipy", "pyarrow"}, loaded
    p = subprocess.run([sys.executable, "-c", SCORE_WORKER.replace('"gac"', "sys.argv[3]"), str(SAMPLE),
                        json.dumps(WATCHED), str(gam_files["gam"])], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert not set(json.loads(p.stdout.strip().splitlines()[-1])) & {"scipy", "sklearn", "numba", "threadpoolctl"}


def test_score_as_a_set_imports_numpy_only_and_parquet_adds_pandas_only(tmp_path):
    # --as-set ranks the runs of a chunk (numpy's average ranks, scipy's rankdata to the bit)
    loaded = loaded_by(["score", "gac", str(SAMPLE), "--as-set", "--out", str(tmp_path / "s.csv")])
    assert loaded <= SCORING and not loaded & HEAVY, loaded
    # Parquet is written from a DataFrame (its schema's pandas metadata)
    loaded = loaded_by(["score", "gac", str(SAMPLE), "--out", str(tmp_path / "s.parquet")])
    assert "pandas" in loaded and not loaded & {"scipy", "sklearn", "numba", "threadpoolctl"}, loaded


def test_score_explain_loads_the_estimator_it_explains_with(tmp_path):
    loaded = loaded_by(["score", "gac", str(SAMPLE / "units_SmolLM2-135M-greedy.jsonl"), "--explain", "--out",
                        str(tmp_path / "s.csv")])
    assert {"pandas", "sklearn"} <= loaded                 # asked for: reasons and out-of-fold scores


WORKER = r"""
import json, sys
from htc_core.engines.common import Task, run_piece, split_inputs
pieces = split_inputs(sys.argv[1])
run_piece(pieces[0], Task("features"))
print(json.dumps([m for m in json.loads(sys.argv[2]) if m in sys.modules]))
"""


def test_a_dask_or_local_engine_task_computing_features_starts_light():
    # what one engine task imports for a features piece (the Dask and local engines run exactly this function per
    # piece; a real Dask worker is checked in tests/test_engines.py): the rows leave as Arrow columns made from
    # numpy buffers, so not even pandas (0.2-0.4 s CPU in every worker process)
    p = subprocess.run([sys.executable, "-c", WORKER, str(SAMPLE), json.dumps(WATCHED)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    loaded = set(json.loads(p.stdout.strip().splitlines()[-1]))
    assert loaded <= {"numpy", "pyarrow"}, loaded


SCORE_WORKER = r"""
import json, sys
from htc_core.engines.common import Task, map_batches, pieces_batch, split_inputs
pieces = split_inputs(sys.argv[1])
list(map_batches([pieces_batch(pieces[:1])], Task.for_model("gac")))
print(json.dumps([m for m in json.loads(sys.argv[2]) if m in sys.modules]))
"""


def test_a_dask_or_spark_worker_scoring_with_a_gac_imports_no_estimator_library():
    # a worker reads the model for scoring only (calibration.linear_scoring); its table is a DataFrame (pandas)
    p = subprocess.run([sys.executable, "-c", SCORE_WORKER, str(SAMPLE), json.dumps(WATCHED)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    loaded = set(json.loads(p.stdout.strip().splitlines()[-1]))
    assert not loaded & {"scipy", "sklearn", "numba", "threadpoolctl", "duckdb", "streamlit", "plotly", "torch"}


#: what scikit-learn (or pandas) would bring; numba itself imports the top of scipy (scipy, scipy.linalg)
ESTIMATOR = {"pandas", "sklearn", "scipy.special", "scipy.stats", "scipy.sparse", "scipy.optimize", "threadpoolctl"}
MONITOR_SCRIPT = r"""
import json, sys
import htc_core as htc
mon = htc.Monitor(threshold=0.35)
mon.add_step([-0.1, -0.2, -0.05], [[-0.1, -2.5], [-0.2, -1.9], [-0.05, -3.0]])
print(json.dumps({"model": type(mon.model).__name__, "loaded": [m for m in json.loads(sys.argv[1]) if m in sys.modules]}))
"""


def test_default_monitor_construction_and_one_update_import_no_estimator_library():
    # Monitor() reads gac-prefix for scoring only (calibration.linear_scoring): numpy plus numba's update kernels
    p = subprocess.run([sys.executable, "-c", MONITOR_SCRIPT, json.dumps([*WATCHED, *ESTIMATOR])], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["model"] == "GACScorer"
    assert set(res["loaded"]) <= {"numpy", "numba", "scipy"}, res["loaded"]


def test_monitor_help_and_a_replay_import_no_estimator_library(tmp_path):
    assert loaded_by(["monitor", "--help"]) <= {"numpy"}
    jsonl = ROOT / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    for model in ("gac-prefix", "gac"):     # gac: fitted on whole runs, allowed with the flag
        loaded = loaded_by(["monitor", model, str(jsonl), "--threshold", "0.35", "--allow-whole-run-model",
                            "--out", str(tmp_path / "m.csv")], [*WATCHED, *ESTIMATOR])
        # the replayed table goes to Arrow's CSV writer as numpy columns: no pandas; numba imports scipy's top
        assert not loaded & ESTIMATOR, (model, loaded)
        assert loaded <= {"numpy", "numba", "scipy", "pyarrow"}, (model, loaded)



def _subcommands(parser) -> dict:
    return {name: sub for action in parser._subparsers._group_actions for name, sub in action.choices.items()}


def test_the_module_of_each_command_is_the_one_that_registers_it():
    import argparse
    import importlib

    from htc_core.cli import COMMAND_MODULE, COMMAND_MODULES

    found = {}
    for name in COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"htc_core.cli.{name}").register(sub)
        found.update(dict.fromkeys(sub.choices, name))
    assert found == COMMAND_MODULE


def test_a_command_line_builds_the_parsers_of_its_module_only_and_the_same_ones():
    from htc_core.cli import COMMAND_MODULE, build_parser

    full = _subcommands(build_parser())
    assert set(full) == set(COMMAND_MODULE)
    for command, module in COMMAND_MODULE.items():
        only = _subcommands(build_parser(command))
        assert set(only) == {c for c, m in COMMAND_MODULE.items() if m == module}
        assert only[command].format_help() == full[command].format_help()
    assert set(_subcommands(build_parser("no-such-command"))) == set(full)  # argparse names the valid ones


def test_an_unknown_command_is_refused_with_the_valid_ones(capsys):
    from htc_core.cli import main

    with pytest.raises(SystemExit):
        main(["featurs"])
    err = capsys.readouterr().err
    assert "invalid choice: 'featurs'" in err and "features" in err and "warmup" in err


SERVE_SCRIPT = r"""
import contextlib, faulthandler, io, json, os, signal, sys, threading, time, urllib.request
faulthandler.dump_traceback_later(480, exit=True)    # a hang ends with every thread's stack in stderr
# Ctrl-C as in a terminal: a process started in the background by a non-interactive shell (nohup, `cmd &`, some CI
# runners) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler
signal.signal(signal.SIGINT, signal.default_int_handler)
from htc_core.cli import main
lines, out = json.loads(sys.argv[1]), io.StringIO()
class Log(io.StringIO):           # what htc serve prints to stderr, watched for its address and its flush line
    def write(self, s):
        out.write(s)
        return len(s)
def client():                     # an exporter: POST every request, wait for the stored line, then Ctrl-C
    deadline = time.time() + 400   # a first start compiles the kernels: minutes on a loaded 2-core machine
    try:
        while "/v1/traces" not in out.getvalue():
            if time.time() > deadline:
                return             # never listened: Ctrl-C all the same, the test fails on the output
            time.sleep(0.05)
        url = out.getvalue().split("OTLP/HTTP traces at ")[1].split()[0].rstrip(",")
        for body in lines:
            req = urllib.request.Request(url, data=body.encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=60).read()
            except Exception:      # the fixture's bad span gets 400 on purpose
                pass
        while "stored " not in out.getvalue() and time.time() < deadline:
            time.sleep(0.05)
    finally:
        os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=client, daemon=True).start()
with contextlib.redirect_stderr(Log()), contextlib.redirect_stdout(out):
    rc = main(["serve", "--port", "0", "--data-dir", sys.argv[2], "--settle", "0.01", "--idle", "0.01"])
watched = json.loads(sys.argv[3])
print(json.dumps({"rc": rc, "out": out.getvalue()[-2000:], "loaded": [m for m in watched if m in sys.modules]}))
"""


def test_serve_receiving_storing_and_scoring_traces_imports_no_estimator_library(tmp_path):
    # htc serve as a user runs it: a free port, OTLP JSON posted to it, the runs scored by the live Monitor
    # (the default model, the shipped gac, read for scoring only) and stored with their per-run columns (the
    # shipped GAC read for scoring only), Ctrl-C. The store is DuckDB with pandas frames; scikit-learn and
    # scipy's estimators stay out
    lines = [x for x in (ROOT / "tests" / "fixtures" / "foreign" / "otel_otlp.jsonl").read_text().splitlines()
             if x.startswith('{"')]
    p = subprocess.run([sys.executable, "-c", SERVE_SCRIPT, json.dumps(lines), str(tmp_path / "data"),
                        json.dumps([*WATCHED, *ESTIMATOR])], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["rc"] == 0 and "stored 3 run(s)" in res["out"], res["out"]
    loaded = set(res["loaded"])
    assert "duckdb" in loaded and not loaded & (ESTIMATOR - {"pandas"}), loaded
    assert not loaded & {"streamlit", "plotly", "torch"}, loaded
