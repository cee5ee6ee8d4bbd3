"""Hostile input, round three (issue 30): each defect of the round fixed at its cause, one regression test
each (the defect's number in the issue is in the test's name), plus issue 28 item 6 (tablewriter)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.cli import main
from hostile_records import ROOT

SAMPLE = ROOT / "sample_runs" / "units"


def _close_failing_once(monkeypatch, pq, exc: OSError) -> None:
    """``ParquetWriter.close`` raises ``exc`` on its first call only: the writer's own ``__del__`` closes again when
    it is collected (still inside the test), and a second injected failure there was an "exception ignored"
    warning in every run."""
    real, calls = pq.ParquetWriter.close, []

    def close(self):
        calls.append(self)
        if len(calls) == 1:
            raise exc
        return real(self)

    monkeypatch.setattr(pq.ParquetWriter, "close", close)


# -- issue 28 item 6: a failing ParquetWriter.close is not swallowed ----------------------------------------
def test_tablewriter_failing_parquet_close_keeps_the_previous_file(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from htc_core.tablewriter import TableWriter

    out = tmp_path / "o.parquet"
    pd.DataFrame({"id": ["a", "b"], "x": [1.0, 2.0]}).to_parquet(out, index=False)
    before = out.read_bytes()

    _close_failing_once(monkeypatch, pq, OSError(28, "No space left on device (injected at close)"))
    with pytest.raises(OSError, match="No space left"):
        with TableWriter(out) as w:
            w.write(pd.DataFrame({"id": ["c"], "x": [3.0]}))
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["o.parquet"]


def test_tablewriter_block_error_wins_over_a_failing_close(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from htc_core.tablewriter import TableWriter

    _close_failing_once(monkeypatch, pq, OSError(28, "full"))
    with pytest.raises(KeyError, match="the block's own"):
        with TableWriter(tmp_path / "o.parquet") as w:
            w.write(pd.DataFrame({"x": [1.0]}))
            raise KeyError("the block's own")
    assert list(tmp_path.iterdir()) == []


# -- #15: Monitor.add_step takes real numbers only -----------------------------------------------------------
@pytest.mark.parametrize("logprobs,top", [
    ([-0.1, complex(-0.2, 3.0)], None),
    ([-0.1, np.complex128(-0.2 + 3j)], None),
    (np.array([-0.1, -0.2 + 3j]), None),
    ([-0.1, -(10 ** 400)], None),
    ([-0.1, -0.2], np.array([[-0.3], [-0.4 + 1j]])),
    ([-0.1, -0.2], [[-0.3], [np.complex128(-0.4 + 1j)]]),
    ([-0.1, -0.2], [[-0.3], [-(10 ** 400)]]),
])
def test_15_monitor_refuses_complex_and_huge_ints_without_adding_the_step(logprobs, top):
    from htc_core.monitor import Monitor

    mon = Monitor()
    mon.add_step([-0.05, -0.3])
    before = (mon.confidence, len(mon.history))
    with pytest.raises(ValueError, match="real numbers|beyond float range|complex"):
        mon.add_step(logprobs, top)
    assert (mon.confidence, len(mon.history)) == before
    assert mon.add_step([-0.1]) == mon.confidence           # still usable


# -- #8: bidi isolation of untrusted text --------------------------------------------------------------------
_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def _open_after(text: str) -> int:
    """How many embeddings/overrides/isolates are still open at the end of ``text`` (UAX #9 matching)."""
    from htc_core.bidi import PDF, PDI

    stack = []
    for ch in text:
        if ch in "\u202a\u202b\u202d\u202e":
            stack.append(PDF)
        elif ch in "\u2066\u2067\u2068":
            stack.append(PDI)
        elif ch == PDF and stack and stack[-1] == PDF:
            stack.pop()
        elif ch == PDI and PDI in stack:
            del stack[len(stack) - 1 - stack[::-1].index(PDI):]
    return len(stack)


@given(st.text(alphabet=st.sampled_from(list(_CONTROLS + "ab1 ש")), max_size=40))
@settings(max_examples=400, deadline=None)
def test_8_isolate_closes_everything_the_text_opened(text):
    from htc_core.bidi import isolate

    out = isolate(text)
    assert _open_after(out) == 0
    assert out.replace("\u2069", "").find(text.replace("\u2069", "")) >= 0    # all shown but stray PDIs
    if out != text:
        assert out.startswith("\u2068") and out.endswith("\u2069")
        assert _open_after(out[:-1]) == 1            # our own FSI is the one the final PDI closes


def test_8_plain_text_is_untouched_and_md_isolates_the_dashboard_names():
    from htc_core.app.layout import md
    from htc_core.viz.plots import esc
    from htc_core.bidi import isolate

    assert isolate("units · SmolLM2 <b>") == "units · SmolLM2 <b>" and md("plain") == "plain"
    evil = "ds\u202eevil"
    assert md(evil) == "\u2068ds\u202eevil\u202c\u2069"
    assert esc(evil) == "\u2068ds\u202eevil\u202c\u2069"


# -- #16 / #17: the applicability check ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def units_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("shift")
    assert main(["fit", str(SAMPLE), "--out", str(d / "m.json")]) == 0
    one = d / "one.jsonl"
    first = next(p for p in sorted(SAMPLE.glob("*.jsonl")))
    one.write_text(first.read_text(encoding="utf-8").splitlines(True)[0], encoding="utf-8")
    return d / "m.json", one


def test_16_applicability_line_prints_the_effective_threshold(units_model, tmp_path, capsys):
    model, one = units_model
    capsys.readouterr()
    assert main(["score", str(model), str(one), "--out", str(tmp_path / "s.csv")]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.startswith("applicability:"))
    shift = float(line.split("used feature ")[1].split(" <")[0])
    limit = float(line.split(" < ")[1].split(";")[0].split(")")[0])
    assert limit == 3 and shift < limit and "raised to 3/sqrt(runs)" in line, line


def test_17_training_std_0_of_a_used_feature_is_compared_exactly_and_said(units_model, tmp_path, capsys):
    import json

    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.calibration.shift import shift_check
    from htc_core.features import extract
    from htc_core.formats import load

    model, one = units_model
    obj = json.loads(model.read_text())
    m = HTCCalibrator.from_dict(obj)
    fm = extract(load(str(SAMPLE))[0])
    used = [j for j, c in enumerate(np.ravel(m.coef_)) if c != 0]
    assert used
    j = used[0]
    obj["training"]["feature_stats"]["std"][j] = 0.0
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(obj))
    assert shift_check(HTCCalibrator.from_dict(obj), fm).frame.moved.sum() == 0   # the training runs themselves
    rep = shift_check(HTCCalibrator.from_dict(obj), fm.take(np.arange(5)))
    name = m.feature_names_in_[j]
    row = rep.frame[rep.frame.feature == name].iloc[0]
    assert row.used and np.isinf(row["shift"]) and row.moved and rep.shifted     # the training mean is not matched
    assert any("training std 0" in n and name in n for n in rep.notes)
    json.dumps(rep.to_dict(), allow_nan=False)                                    # still valid JSON
    capsys.readouterr()
    assert main(["score", str(tampered), str(one), "--out", str(tmp_path / "s.csv")]) == 0
    err = capsys.readouterr().err
    assert "training std 0" in err and name in err


# -- #2: early-warning's --max-steps is capped by the data ---------------------------------------------------
def test_2_early_warning_max_steps_beyond_the_longest_run_is_capped(tmp_path, capsys):
    import json

    from test_cli_calibration import write_runs

    runs = write_runs(tmp_path / "runs.jsonl", n=80)
    assert main(["early-warning", str(runs), "--max-steps", "1000000000", "--seeds", "1", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    longest = 3
    lengths = {r["k"] for r in res["curve"] if r["kind"] == "steps"}
    assert lengths == {1.0, 2.0, 3.0} and max(r["step"] for r in res["alerts"]) <= longest
    assert any("capped at" in n and "1,000,000,000 asked" in n for n in res["notes"])


# -- item 1: htc monitor with a model fitted on whole runs --------------------------------------------------
@pytest.fixture(scope="module")
def monitor_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("monitor-models")
    greedy = str(SAMPLE / "units_SmolLM2-135M-greedy.jsonl")
    assert main(["fit", greedy, "--out", str(d / "whole.json")]) == 0
    assert main(["fit", greedy, "--prefixes", "--out", str(d / "prefix.json")]) == 0
    return d / "whole.json", d / "prefix.json"


def test_item1_monitor_refuses_a_whole_run_model_unless_asked(monitor_models, tmp_path, capsys):
    import json

    whole, prefix = monitor_models
    assert json.loads(whole.read_text())["training"]["fitted_on"] == "whole runs"
    assert json.loads(prefix.read_text())["training"]["fitted_on"] == "prefixes"
    out = tmp_path / "steps.csv"
    capsys.readouterr()
    assert main(["monitor", str(whole), str(SAMPLE), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "fitted on whole runs" in err and "htc fit RUNS --prefixes" in err and "--allow-whole-run-model" in err
    assert not out.exists()
    assert main(["monitor", str(whole), str(SAMPLE), "--out", str(out), "--allow-whole-run-model"]) == 0
    assert "warning: " in capsys.readouterr().err
    assert main(["monitor", str(prefix), str(SAMPLE), "--out", str(out)]) == 0
    assert main(["monitor", "gac-prefix", str(SAMPLE), "--out", str(out)]) == 0
    assert main(["monitor", "gac", str(SAMPLE), "--out", str(out)]) == 2


def test_item1_fit_prefixes_equals_htc_prefixes_then_fit(monitor_models, tmp_path):
    import json

    _, prefix = monitor_models
    greedy = str(SAMPLE / "units_SmolLM2-135M-greedy.jsonl")
    assert main(["prefixes", greedy, "--out", str(tmp_path / "p.jsonl")]) == 0
    assert main(["fit", str(tmp_path / "p.jsonl"), "--out", str(tmp_path / "m.json")]) == 0
    a, b = json.loads(prefix.read_text()), json.loads((tmp_path / "m.json").read_text())
    assert a["coef"] == b["coef"] and a["training"] == b["training"]


# -- #3 #10 #11 #12: htc prefixes and htc monitor stream, write atomically, honour --out ----------------------
def test_3_prefixes_of_a_long_run_are_written_in_bounded_batches(tmp_path, monkeypatch):
    import json

    import htc_core.cli.monitor as cm
    from htc_core.formats import native

    run = {"id": "long", "success": False, "steps": [{"logprobs": [-0.1, -0.2]} for _ in range(400)]}
    src = tmp_path / "long.jsonl"
    src.write_text(json.dumps(run) + "\n")
    written, real = [], native.write

    def spy(ts, fh):
        written.append(int(ts.n_tokens))
        return real(ts, fh)

    monkeypatch.setattr(native, "write", spy)
    monkeypatch.setattr(cm, "PREFIX_BATCH", 5_000)
    out = tmp_path / "p.jsonl"
    assert main(["prefixes", str(src), "--out", str(out)]) == 0
    # 400 prefixes, 160,400 tokens in all: written in batches of about 5,000 (one prefix over it goes alone)
    assert sum(written) == 2 * 400 * 401 // 2 and max(written) <= 5_000 + 2 * 400 and len(written) > 30
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == [f"long@{k}" for k in range(1, 401)]


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_11_12_monitor_writes_what_its_suffix_says_chunk_by_chunk(monitor_models, tmp_path, suffix):
    import json

    _, prefix = monitor_models
    ref, out = tmp_path / "ref.csv", tmp_path / f"steps{suffix}"
    assert main(["monitor", str(prefix), str(SAMPLE), "--threshold", "0.3", "--out", str(ref)]) == 0
    assert main(["monitor", str(prefix), str(SAMPLE), "--threshold", "0.3", "--out", str(out),
                 "--chunk-size", "7"]) == 0
    got = {".csv": pd.read_csv, ".parquet": pd.read_parquet,
           ".jsonl": lambda p: pd.DataFrame([json.loads(x) for x in p.read_text().splitlines()])}[suffix](out)
    want = pd.read_csv(ref)
    assert list(got.columns) == ["id", "step", "tokens", "confidence", "alert"] and len(got) == len(want) > 1000
    assert (got["id"].astype(str).tolist() == want["id"].tolist()) and (got["alert"] == want["alert"]).all()
    assert np.array_equal(got["confidence"].to_numpy(float), want["confidence"].to_numpy(float))


@pytest.mark.parametrize("command,out", [
    ("monitor", "{dir}/"), ("monitor", "/proc/version"), ("monitor", "{dir}/x.txt"),
    ("prefixes", "{dir}/"), ("prefixes", "{dir}/x.csv"), ("prefixes", "/proc/version")])
def test_11_a_bad_out_is_an_error_line_before_any_work(monitor_models, tmp_path, capsys, command, out):
    _, prefix = monitor_models
    target = out.format(dir=tmp_path)
    args = [command, *([str(prefix)] if command == "monitor" else []), str(SAMPLE), "--out", target]
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"htc {command}: error: --out" in err and "Traceback" not in err and "replayed" not in err


@pytest.mark.parametrize("command", ["monitor", "prefixes"])
def test_10_13_a_full_disk_keeps_the_previous_output(monitor_models, tmp_path, capsys, monkeypatch, command):
    import os

    _, prefix = monitor_models
    out = tmp_path / ("prev.csv" if command == "monitor" else "prev.jsonl")
    out.write_bytes(b"the previous output\n")
    args = [command, *([str(prefix)] if command == "monitor" else []), str(SAMPLE), "--out", str(out)]

    def full(fd):
        raise OSError(28, "No space left on device (injected)")

    monkeypatch.setattr(os, "fsync", full)
    capsys.readouterr()
    assert main(args) == 1
    assert f"htc {command}: error: No space left on device" in capsys.readouterr().err
    assert out.read_bytes() == b"the previous output\n"
    assert [p.name for p in tmp_path.iterdir()] == [out.name]


# -- #14: a learning-curve file nested 100,000 deep ----------------------------------------------------------
@pytest.mark.parametrize("shape", ["[" * 100_000 + "]" * 100_000, '{"rows": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                   "[" * 100_000])
def test_14_report_learning_curve_nested_100000_deep_is_an_error_line(tmp_path, capsys, shape):
    curve = tmp_path / "deep.json"
    curve.write_text(shape)
    capsys.readouterr()
    assert main(["report", str(SAMPLE), "--learning-curve", str(curve), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "htc report: error:" in err and str(curve) in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


# -- #1: a disk-full upload ----------------------------------------------------------------------------------
def test_1_disk_full_upload_removes_its_files_first_and_the_store_still_opens(tmp_path, monkeypatch):
    import duckdb

    import htc_core.app.store_write as sw
    from htc_core.app.store import Store
    from htc_core.formats import load

    ts, _ = load(str(SAMPLE))
    s = Store(tmp_path)
    kept = s.add_run_set(ts.take(range(50)), name="kept", chunk=1000)
    real = sw._discard
    full = {"on": True}

    def discard_on_a_full_disk(con, rs_id):
        if full["on"]:
            raise duckdb.IOException("IO Error: No space left on device (injected)")
        return real(con, rs_id)

    def boom(stage):
        if stage == "after_steps":
            raise OSError(28, "No space left on device (injected)")

    monkeypatch.setattr(sw, "_discard", discard_on_a_full_disk)
    s._fail_hook = boom
    with pytest.raises(OSError, match="No space left"):        # the upload's own error, not the cleanup's
        s.add_run_set(ts, name="too big", chunk=100)
    s._fail_hook = None
    with s._connect() as con:
        (pending,) = con.execute("SELECT id FROM run_set_pending").fetchone()
        con.execute("UPDATE run_set_pending SET pid = 2147483646")    # its process is gone
    assert not list((tmp_path / "columns").glob(f"{pending}*"))       # the files went first
    again = Store(tmp_path)                                            # the sweep cannot delete yet: still opens
    assert again.run_set_ids() == [kept.run_set_id]
    full["on"] = False
    Store(tmp_path)                                                    # space again: the sweep finishes
    with s._connect() as con:
        assert con.execute("SELECT count(*) FROM run_set_pending").fetchone()[0] == 0
    assert s.run_set_ids() == [kept.run_set_id] and len(s.trajectories()) == 50


# -- #5: what of a huge text goes on the page ----------------------------------------------------------------
@given(st.text(alphabet=st.sampled_from(list("ab\n")), max_size=3000), st.integers(1, 500), st.integers(1, 300))
@settings(max_examples=200, deadline=None)
def test_5_bounded_text_is_short_wrapped_and_a_prefix_of_the_text(text, chars, line):
    from htc_core.app.trajectory_view import bounded

    shown, cut = bounded(text, chars, line)
    assert max(map(len, shown.split("\n"))) <= line
    unwrapped_len = len(text[:chars])
    assert len(shown) <= unwrapped_len + unwrapped_len // line + 1
    assert cut == (shown != text)
    if not cut:
        assert shown == text


def test_5_a_megabyte_token_and_id_are_clipped():
    from htc_core.app.trajectory_panel import TOKEN_ON_PAGE, token_html
    from htc_core.app.views import clipped

    html = token_html(["x" * 1_000_000, "ok"], [0.5, 0.9])
    assert len(html) < 2_000 and "1,000,000 characters" in html and TOKEN_ON_PAGE == 200
    assert len(clipped("i" * 1_000_000)) < 250 and clipped("short") == "short"


# -- #4: engines on a truncated or CRC-corrupt .jsonl.gz ------------------------------------------------------
@pytest.fixture(scope="module")
def broken_gz(tmp_path_factory):
    import gzip

    d = tmp_path_factory.mktemp("gz")
    good = (SAMPLE / "units_SmolLM2-135M-greedy.jsonl").read_bytes()
    other = gzip.compress((SAMPLE / "units_SmolLM2-135M-sampled-t0.7.jsonl").read_bytes())
    (d / "a_good.jsonl").write_bytes(good)
    (d / "b_cut.jsonl.gz").write_bytes(other[:30_000])                  # cut short mid-stream
    crc = bytearray(gzip.compress(next((ROOT / "sample_runs" / "strings").glob("*.jsonl")).read_bytes()))
    crc[-6] ^= 0xFF                                                       # the CRC of the trailer is wrong
    (d / "c_crc.jsonl.gz").write_bytes(bytes(crc))
    return d


def _engine_case(broken_gz, tmp_path, capsys, engine):
    ref, out = tmp_path / "ref.csv", tmp_path / f"{engine}.csv"
    assert main(["features", str(broken_gz), "--out", str(ref)]) == 0
    ref_err = capsys.readouterr().err
    assert main(["features", str(broken_gz), "--out", str(out), "--engine", engine]) == 0
    err = capsys.readouterr().err
    assert out.read_bytes() == ref.read_bytes() and len(pd.read_csv(out)) > 500
    for name, words in (("b_cut.jsonl.gz", "compressed file is cut short"), ("c_crc.jsonl.gz", "CRC check failed")):
        assert any(name in line and words in line for line in err.splitlines()), err
        assert any(name in line and words in line for line in ref_err.splitlines()), ref_err
    assert "Traceback" not in err


def test_4_engine_pieces_keep_the_good_runs_of_a_broken_gz_like_the_local_reader(broken_gz, tmp_path, capsys):
    """The per-piece function the Dask and Spark workers run (engines.run(engine='local') runs it in-process)."""
    from htc_core.engines import Task, run

    ref = tmp_path / "ref.csv"
    assert main(["features", str(broken_gz), "--out", str(ref)]) == 0
    res = run([str(broken_gz)], Task("features"), tmp_path / "pieces.csv", engine="local")
    assert (tmp_path / "pieces.csv").read_bytes() == ref.read_bytes()
    errors = [str(p) for p in res.report.errors]
    assert any("b_cut.jsonl.gz" in e and "cut short" in e for e in errors), errors
    assert any("c_crc.jsonl.gz" in e and "CRC check failed" in e for e in errors), errors


@pytest.mark.heavy
def test_4_dask_keeps_the_good_runs_of_a_broken_gz(broken_gz, tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    _engine_case(broken_gz, tmp_path, capsys, "dask")


# -- item 5: htc score --out - ------------------------------------------------------------------------------
def test_item5_score_out_dash_writes_the_csv_to_stdout_and_the_summary_to_stderr(tmp_path):
    import subprocess
    import sys

    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    ref = tmp_path / "s.csv"
    subprocess.run([sys.executable, "-m", "htc_core", "score", "gac", str(SAMPLE), "--out", str(ref)], env=env,
                   check=True, capture_output=True)
    got = subprocess.run([sys.executable, "-m", "htc_core", "score", "gac", str(SAMPLE), "--out", "-"], env=env,
                         capture_output=True)
    assert got.returncode == 0 and got.stdout == ref.read_bytes()
    err = got.stderr.decode()
    assert "scored 500 trajectories" in err and "standard output" in err and "applicability:" in err


# -- item 2: a click that a redraw of the chart would drop is kept and replayed ------------------------------
def test_item2_a_click_kept_by_the_callback_is_replayed_on_the_redrawn_chart():
    import streamlit as st_

    from htc_core.app import drill

    class Empty:
        selection = type("S", (), {"points": []})()

    ctx = ("uniform", ("content", "abc"))
    st_.session_state["cal_rel_test"] = {"selection": {"points": [{"customdata": ["HTC-Reduced", 3]}]}}
    drill.keep_clicks("cal_rel_test", ctx)()                 # Streamlit calls it before the click's rerun
    st_.session_state["cal_rel_test"] = {"selection": {"points": []}}   # the redrawn chart: a new, empty element
    replayed = drill.clicked("cal_rel_test", Empty(), ctx)
    assert [p["customdata"] for p in replayed.selection.points] == [["HTC-Reduced", 3]]
    assert drill.clicked("cal_rel_test", Empty(), ("quantile", ("content", "abc"))) is None   # other bins
    own = type("E", (), {"selection": type("S", (), {"points": [{"customdata": ["x", 1]}]})()})()
    assert drill.clicked("cal_rel_test", own, ctx) is own    # the chart's own selection comes first
    st_.session_state["cal_rel_test"] = {"selection": {"points": []}}   # the user cleared it
    drill.keep_clicks("cal_rel_test", ctx)()
    assert not drill.clicked("cal_rel_test", Empty(), ctx).selection.points
