"""Scale-out engines (htc_core.engines): the per-piece function over Arrow batches, in-process, on a real Dask
LocalCluster (2 worker processes) and on Spark local[2], against the plain single-process ``htc features`` /
``htc score`` on real files (sample_runs/ and the UALA HotpotQA runs in /work/shared/data).

The Dask tests need the ``[cluster]`` extra; they skip without it unless ``HTC_REQUIRE_DASK=1`` (set by .ci/run).
The Spark test needs pyspark and Java; it is marked slow (a JVM and Python workers: minutes on a busy machine):
``python -m pytest -m slow tests/test_engines.py -k spark``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from htc_core.calibration.metrics import auroc, brier_score, expected_calibration_error
from htc_core.cli import main
from htc_core.engines import Task, run, split_inputs
from htc_core.formats import load

from conftest import REPO, make_traj, write_jsonl

SAMPLE = REPO / "sample_runs"


def _inputs(uala_run_a):
    return [str(SAMPLE / "arithmetic"), str(SAMPLE / "facts"), str(SAMPLE / "_calllog"), str(uala_run_a)]


def _assert_same_table(a_path, b_path, tol=1e-12):
    a, b = pd.read_csv(a_path), pd.read_csv(b_path)
    assert list(a.columns) == list(b.columns)
    assert len(a) == len(b) > 0
    for c in a.columns:
        if a[c].dtype.kind == "f":
            assert (a[c].isna() == b[c].isna()).all(), c
            np.testing.assert_allclose(a[c].to_numpy(), b[c].to_numpy(), rtol=0, atol=tol, err_msg=c)
        else:
            assert a[c].fillna("<NA>").astype(str).tolist() == b[c].fillna("<NA>").astype(str).tolist(), c


@pytest.fixture(scope="module")
def reference(tmp_path_factory, uala_run_a):
    """Single-process outputs (the chunked reader of `htc features` / `htc score`) and one-shot metrics."""
    d = tmp_path_factory.mktemp("ref")
    inputs = _inputs(uala_run_a)
    assert main(["features", *inputs, "--out", str(d / "features.csv"), "--chunk-size", "400"]) == 0
    # the engines score each run on its own, as htc score does by default
    assert main(["score", "gac", *inputs, "--out", str(d / "scores.csv")]) == 0
    ts, _ = load(inputs)
    conf = pd.read_csv(d / "scores.csv")["confidence"].to_numpy()
    y = ts.labels
    lab = ~np.isnan(y)
    metrics = {"ece": expected_calibration_error(y[lab], conf[lab]), "brier": brier_score(y[lab], conf[lab]),
               "auroc": auroc(y[lab], conf[lab]), "n": int(lab.sum())}
    return {"dir": d, "inputs": inputs, "metrics": metrics}


def _check_metrics(res, ref):
    m = res.metrics.to_dict()
    assert m["n"] == ref["n"] > 100
    for k in ("ece", "brier", "auroc"):
        assert abs(m[k] - ref[k]) <= 1e-12, k


def test_local_engine_equals_the_chunked_reader_on_real_files(reference, tmp_path):
    out = tmp_path / "f.csv"
    res = run(reference["inputs"], Task("features"), out, engine="local", piece_bytes=256 << 10)
    assert res.pieces > 8  # the JSONL files really are cut into byte ranges
    assert out.read_bytes() == (reference["dir"] / "features.csv").read_bytes()
    res = run(reference["inputs"], Task.for_model("gac"), tmp_path / "s.csv", engine="local",
              piece_bytes=256 << 10)
    _assert_same_table(reference["dir"] / "scores.csv", tmp_path / "s.csv")
    _check_metrics(res, reference["metrics"])


def test_pieces_keep_the_load_report_exact_across_cuts(tmp_path):
    """Bad lines, a repeated id in a later piece of the same file and an id used by an earlier file: the same
    problems at the same file lines as formats.load, and the same kept rows."""
    good = [make_traj(f"t{i}", [([-0.1 * (i % 7), -0.2], [[-0.1, -2.0], [-0.2, -3.0]]), ([-0.3], None)],
                      success=bool(i % 2)) for i in range(60)]
    lines = [json.dumps(g) for g in good]
    lines[7] = "{not json"
    lines[30] = json.dumps(make_traj("t3", [([-0.5], None)]))  # t3 again, far from the first
    lines[41] = json.dumps({"id": "bad", "steps": [{"logprobs": [0.5, "x"]}]})
    a = write_jsonl(tmp_path / "a.jsonl", lines)
    b = write_jsonl(tmp_path / "b.jsonl", [make_traj("t10", [([-0.4, -0.1], None)]), ""])
    pieces = split_inputs([a, b], piece_bytes=300)
    assert len(pieces) > 10 and all(p.end > p.start for p in pieces)
    with open(a, "rb") as fh:  # every cut is at a line end
        data = fh.read()
    assert all(p.start == 0 or data[p.start - 1:p.start] == b"\n" for p in pieces if p.path == str(a))
    res = run([a, b], Task("features"), tmp_path / "f.csv", piece_bytes=300)
    _, ref = load([a, b])

    def key(r):
        return sorted((p.file, p.line, p.reason, p.severity) for p in r.problems)

    assert key(res.report) == key(ref)
    assert (res.report.trajectories_read, res.report.rejected) == (ref.trajectories_read, ref.rejected)
    main(["features", str(a), str(b), "--out", str(tmp_path / "ref.csv")])
    assert (tmp_path / "f.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()


def test_validation_and_missing_extras(tmp_path, monkeypatch, capsys):
    with pytest.raises(ValueError, match="kind must be one of"):
        Task("fit")
    with pytest.raises(ValueError, match="top_k must be"):
        Task("features", top_k=0)
    with pytest.raises(ValueError, match="engine must be one of"):
        run([SAMPLE], Task(), tmp_path / "x.csv", engine="ray")
    with pytest.raises(ValueError, match="piece_bytes"):
        split_inputs([SAMPLE], piece_bytes=0)
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the [cluster] extra were not installed
    monkeypatch.setitem(sys.modules, "pyspark", None)
    for engine, extra in (("dask", '".[cluster]"'), ("spark", '".[spark]"')):
        assert main(["features", str(SAMPLE / "facts"), "--out", str(tmp_path / "x.csv"), "--engine", engine]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"htc features: error: --engine {engine} needs pip install -e {extra}"), err
    assert not (tmp_path / "x.csv").exists()
    assert main(["score", "gac", str(SAMPLE / "facts"), "--out", str(tmp_path / "x.csv"), "--engine", "dask",
                 "--explain"]) == 2
    assert "--explain is not supported with --engine dask" in capsys.readouterr().err


def test_arrow_rows_without_pandas_equal_the_chunked_reader_on_odd_metadata(tmp_path):
    """The engines' features rows are Arrow columns made from numpy buffers (no pandas in a worker): the same CSV
    bytes and the same Parquet table (dtypes included) as the single-process reader, with non-ASCII and missing
    ids' neighbours (dataset/model absent on some runs), unlabeled runs, a piece whose runs are all labeled
    True (Arrow's "all valid" bitmap) and one-token runs."""
    def traj(i, **extra):
        steps = [([-0.05 * (i % 5) - 0.01, -0.3], [[-0.01, -3.0], [-0.3, -1.5]]), ([-0.2], None)]
        if i % 4 == 0:
            steps = [([-0.4], None)]
        return make_traj(f"r\u00e9-{i}-\u65e5", steps, **extra)

    a = write_jsonl(tmp_path / "a.jsonl", [traj(i, success=None if i % 3 == 0 else bool(i % 2),
                                                **({"dataset": "d\u00fc"} if i % 2 else {}),
                                                **({"model": "m"} if i % 5 else {})) for i in range(40)])
    b = write_jsonl(tmp_path / "b.jsonl", [traj(i, success=True, dataset="x") for i in range(7)])
    for ext in ("csv", "parquet"):
        ref, got = tmp_path / f"ref.{ext}", tmp_path / f"got.{ext}"
        assert main(["features", str(a), str(b), "--out", str(ref)]) == 0
        res = run([a, b], Task("features"), got, engine="local", piece_bytes=700)
        assert res.pieces > 5 and res.rows == 47
        if ext == "csv":
            assert got.read_bytes() == ref.read_bytes()
        else:
            pd.testing.assert_frame_equal(pd.read_parquet(got), pd.read_parquet(ref))
            import pyarrow.parquet as pq      # the same Arrow types and pandas metadata (text: string, not large_string)

            assert pq.read_schema(got).equals(pq.read_schema(ref), check_metadata=True)
    frame = pd.read_parquet(got)
    assert frame["success"].isna().sum() == 14 and frame["dataset"].isna().sum() == 20


def test_core_and_cli_import_without_dask_or_pyspark():
    code = ("import sys, htc_core, htc_core.cli, htc_core.engines, htc_core.engines.common, "
            "htc_core.engines.local\nhtc_core.cli.build_parser()\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'pyspark')]\n"
            "assert not bad, bad\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=REPO)


# ---- Dask: a real LocalCluster of two worker processes ---------------------------------------------------------

def _need_dask():
    if importlib.util.find_spec("distributed") is None:
        if os.environ.get("HTC_REQUIRE_DASK") == "1":
            pytest.fail('HTC_REQUIRE_DASK=1 but dask.distributed is not installed (pip install -e ".[cluster]")')
        pytest.skip('dask.distributed not installed (pip install -e ".[cluster]")')


@pytest.fixture(scope="module")
def dask_scheduler():
    _need_dask()
    from htc_core.engines.dask_engine import local_cluster

    with local_cluster(2) as cluster:     # the cluster `--engine dask` starts without --scheduler
        yield cluster.scheduler_address


@pytest.mark.heavy
def test_dask_two_workers_equal_single_process(reference, dask_scheduler, tmp_path, capsys):
    inputs = reference["inputs"]
    out = tmp_path / "f.csv"
    assert main(["features", *inputs, "--out", str(out), "--engine", "dask", "--scheduler", dask_scheduler,
                 "--piece-size", "1"]) == 0
    assert "pieces on 2 workers" in capsys.readouterr().err
    assert out.read_bytes() == (reference["dir"] / "features.csv").read_bytes()   # features: exactly equal
    res = run(inputs, Task.for_model("gac"), tmp_path / "s.csv", engine="dask", scheduler=dask_scheduler,
              piece_bytes=1 << 20)
    assert res.workers == 2 and res.pieces > 4
    _assert_same_table(reference["dir"] / "scores.csv", tmp_path / "s.csv")
    _check_metrics(res, reference["metrics"])


# ---- Spark: local[2], when pyspark and Java are present ---------------------------------------------------------

@pytest.mark.slow
@pytest.mark.heavy
def test_spark_local_equals_single_process(reference, tmp_path):
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip('pyspark not installed (pip install -e ".[spark]")')
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime (Spark needs Java 17+)")
    res = run(reference["inputs"], Task("features"), tmp_path / "f.csv", engine="spark", workers=2,
              piece_bytes=2 << 20)
    assert res.engine == "spark" and res.pieces > 2
    assert (tmp_path / "f.csv").read_bytes() == (reference["dir"] / "features.csv").read_bytes()
    res = run(reference["inputs"], Task.for_model("gac"), tmp_path / "s.csv", engine="spark", workers=2,
              piece_bytes=2 << 20)
    _assert_same_table(reference["dir"] / "scores.csv", tmp_path / "s.csv")
    _check_metrics(res, reference["metrics"])


@pytest.mark.heavy
def test_a_dask_worker_computing_features_starts_light_and_quiet(tmp_path):
    """Inside a real worker of the engine's own LocalCluster, after features pieces: no pandas, scipy or
    scikit-learn was imported, and the worker's profiler (a thread sampling every 10 ms) is off."""
    _need_dask()
    from distributed import Client

    from htc_core.engines.dask_engine import local_cluster

    def worker_state():
        import sys

        import dask

        return ([m for m in ("pandas", "scipy", "sklearn", "numba", "pyarrow") if m in sys.modules],
                dask.config.get("distributed.worker.profile.enabled"))

    with local_cluster(1) as cluster, Client(cluster) as client:
        out = tmp_path / "f.csv"
        res = run([SAMPLE / "facts", SAMPLE / "arithmetic"], Task("features"), out, engine="dask",
                  scheduler=cluster.scheduler_address, piece_bytes=64 << 10)
        assert res.pieces > 2 and res.workers == 1
        (loaded, profiling), = client.run(worker_state).values()
        run([SAMPLE / "facts", SAMPLE / "arithmetic"], Task("features"), tmp_path / "f.parquet", engine="dask",
            scheduler=cluster.scheduler_address, piece_bytes=64 << 10)
    assert loaded == ["pyarrow"] and profiling is False
    inputs = [str(SAMPLE / "facts"), str(SAMPLE / "arithmetic")]
    for ext in ("csv", "parquet"):
        assert main(["features", *inputs, "--out", str(tmp_path / f"r.{ext}")]) == 0
    assert out.read_bytes() == (tmp_path / "r.csv").read_bytes()
    import pyarrow.parquet as pq     # the Parquet too: same types and pandas metadata (text: string, not large_string)

    got, ref = pq.read_table(tmp_path / "f.parquet"), pq.read_table(tmp_path / "r.parquet")
    assert got.schema.equals(ref.schema, check_metadata=True) and got.equals(ref)
