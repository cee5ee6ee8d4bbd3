"""Issue 17: the whole-array fast path of the native reader, reading in chunks, the chunk-by-chunk table writer,
and htc features / score / import streaming (outputs equal to reading everything at once)."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from htc_core.calibration.metrics import auroc, brier_score, expected_calibration_error
from htc_core.cli import main
from htc_core.features import extract
from htc_core.formats import load
from htc_core.formats import iter_chunks
from htc_core.formats.native import _add_steps, fast_steps, parse_trajectory
from htc_core.report import LoadReport
from htc_core.tablewriter import TableWriter
from htc_core.traces import TrajectoryRecord

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_runs"
FIXTURES = ROOT / "tests" / "fixtures" / "formats"


def _record(tid="t"):
    return TrajectoryRecord(id=tid, steps_logprob=[], steps_top=[], steps_name=[], steps_text=[], steps_tokens=[])


def assert_same_traces(a, b):
    assert a.ids.tolist() == b.ids.tolist()
    np.testing.assert_array_equal(a.logprob, b.logprob)
    k = max(a.k, b.k)  # a chunk is NaN-padded to its own widest row of alternatives
    pad = lambda t: np.hstack([t, np.full((len(t), k - t.shape[1]), np.nan)])  # noqa: E731
    np.testing.assert_array_equal(pad(a.top_logprobs), pad(b.top_logprobs))
    np.testing.assert_array_equal(a.step_offsets, b.step_offsets)
    np.testing.assert_array_equal(a.traj_offsets, b.traj_offsets)
    pd.testing.assert_frame_equal(a.meta.reset_index(drop=True), b.meta.reset_index(drop=True))
    assert a.step_name.tolist() == b.step_name.tolist()
    assert a.step_text.tolist() == b.step_text.tolist()
    ta = [None] * a.n_tokens if a.tokens is None else a.tokens.tolist()
    tb = [None] * b.n_tokens if b.tokens is None else b.tokens.tolist()
    assert ta == tb


def assert_chunks_equal(chunks, ts):
    """Each chunk equals its slice of ``ts`` (a chunk without any token strings has ``tokens`` None)."""
    start = 0
    for c in chunks:
        assert_same_traces(c, ts.take(np.arange(start, start + c.n_trajectories)))
        start += c.n_trajectories
    assert start == ts.n_trajectories


def problems(report):
    return [repr(p) for p in report.problems]


# ------------------------------------------------------------------ the fast path of the native reader
def test_fast_path_gives_the_per_value_arrays_on_every_real_run():
    """Recorded runs of sample_runs/ (htc-trace JSONL): the whole-array path accepts every one and its arrays
    are exactly those of the per-value path."""
    files = [f for f in sorted(SAMPLE.glob("*/*.jsonl")) if not f.parent.name.startswith("_")]
    n = 0
    for f in files:
        for line in f.read_bytes().splitlines()[:300]:
            obj = json.loads(line)
            fast, slow = _record(), _record()
            assert fast_steps(fast, obj["steps"])
            assert _add_steps(slow, obj["steps"]) == (0, 0)
            lp, top, lens = fast.flat()
            lp2, top2, lens2 = slow.flat()
            np.testing.assert_array_equal(lp, lp2)
            np.testing.assert_array_equal(lens, lens2)
            assert (top is None) == (top2 is None)
            if top is not None:
                np.testing.assert_array_equal(top, top2)
            assert fast.steps_name == slow.steps_name and fast.steps_text == slow.steps_text
            assert fast.steps_tokens == slow.steps_tokens
            n += 1
    assert n > 1000


@pytest.mark.parametrize("steps, field, reason", [
    ([{"logprobs": [-0.1, True]}], "steps[0].logprobs[1]", "must be a number, got bool"),
    ([{"logprobs": [-0.1, "-0.5"]}], "steps[0].logprobs[1]", "must be a number, got str"),
    ([{"logprobs": [-0.1, -0.2], "top_logprobs": [[-0.1, False], [-0.2, -0.3]]}], "steps[0].top_logprobs[0][1]",
     "must be a number, got bool"),
    ([{"logprobs": [-0.1, -0.2], "top_logprobs": [[-0.1, "x"], [-0.2, -0.3]]}], "steps[0].top_logprobs[0][1]",
     "must be a number, got str"),
    ([{"logprobs": [-0.1, 0.5]}], "steps[0].logprobs[1]", "must be <= 0 (a log-probability)"),
    ([{"logprobs": [-0.1, -9999]}], "steps[0].logprobs[1]", "chosen-token logprob is the -inf sentinel"),
    ([{"logprobs": [-0.1], "top_logprobs": [[-0.1, 2.0]]}], "steps[0].top_logprobs[0][1]", "must be <= 0"),
])
def test_a_record_the_fast_path_refuses_gets_the_exact_per_value_report(steps, field, reason):
    """The fast path never decides an error: it hands the record to the per-value checks, which name the value.
    A bool in an array (numpy would read it as 1.0) is caught whether or not the caller ruled bools out."""
    for success in (None, True):
        report = LoadReport()
        obj = {"id": "x", "steps": steps, "success": success}
        raw = json.dumps(obj).encode()
        from htc_core.formats.native import bools_outside_arrays

        assert parse_trajectory(obj, file="f", line=1, report=report,
                                no_bools=bools_outside_arrays(raw, obj)) is None
        (p,) = report.problems
        assert p.field == field and reason in p.reason


def test_bools_outside_arrays_is_conservative():
    from htc_core.formats.native import bools_outside_arrays

    assert bools_outside_arrays(b'{"success": true, "steps": []}', {"success": True})
    assert not bools_outside_arrays(b'{"success": true, "steps": [{"logprobs": [false]}]}',
                                    {"success": True, "steps": [{"logprobs": [False]}]})
    # the word inside a string only costs the type pass, never a wrong answer
    assert not bools_outside_arrays(b'{"question": "true or false?"}', {"question": "true or false?"})


def test_clean_fast_path_keeps_tiny_positives_and_ragged_rows_on_the_per_value_path(tmp_path):
    """Values the per-value path changes (tiny positives clipped, -9999 alternatives made NaN, ragged rows padded)
    load exactly as before, with the same counts in the report."""
    f = tmp_path / "odd.jsonl"
    rows = [
        {"id": "clip", "steps": [{"logprobs": [-0.1, 1e-9], "top_logprobs": [[-0.1, -1.0], [1e-9, -2.0]]}]},
        {"id": "sentinel", "steps": [{"logprobs": [-0.1, -0.2], "top_logprobs": [[-0.1, -9999], [-0.2, -3.0]]}]},
        {"id": "ragged", "steps": [{"logprobs": [-0.1, -0.2], "top_logprobs": [[-0.1], [-0.2, -3.0]]}]},
        {"id": "empty-step", "steps": [{"logprobs": []}, {"logprobs": [-0.5]}]},
        {"id": "clean", "steps": [{"logprobs": [-0.3, -0.2], "top_logprobs": [[-0.3, -1.5], [-0.2, -2.5]]}]},
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ts, report = load(f)
    assert ts.ids.tolist() == [r["id"] for r in rows]
    assert report.clipped_values == 2 and report.empty_steps_dropped == 1
    np.testing.assert_array_equal(ts.logprob[:2], [-0.1, 0.0])
    assert np.isnan(ts.top_logprobs[2, 1]) and np.isnan(ts.top_logprobs[4, 1])
    np.testing.assert_array_equal(ts.top_logprobs[-2:], [[-0.3, -1.5], [-0.2, -2.5]])


# ------------------------------------------------------------------ reading in chunks
@pytest.mark.parametrize("size", [1, 137, 5000])
def test_chunks_concatenate_to_load(size):
    reader = iter_chunks(SAMPLE, max_trajectories=size)
    chunks = list(reader)
    assert all(c.n_trajectories <= size for c in chunks)
    ts, report = load(SAMPLE)
    assert_chunks_equal(chunks, ts)
    assert problems(reader.report) == problems(report) and reader.report.files == report.files
    assert reader.n_trajectories == ts.n_trajectories == 4001


def test_chunks_of_mixed_formats_with_labels_and_a_repeated_id(tmp_path):
    """Every format (files not streamed are cut into chunks), the labels joined per chunk and reported once,
    an id repeated inside a file (an error) and one repeated across files (renamed) across chunk boundaries."""
    for f in FIXTURES.iterdir():
        if f.suffix in (".json", ".jsonl"):
            shutil.copy(f, tmp_path / f.name)
    lines = (SAMPLE / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl").read_text().splitlines()[:7]
    (tmp_path / "a_native.jsonl").write_text("\n".join(lines + [lines[2]]) + "\n")  # line 8 repeats line 3's id
    (tmp_path / "z_native.jsonl").write_text(lines[0] + "\n")                      # an id of an earlier file
    labels = tmp_path / "labels.csv"
    ids = [json.loads(x)["id"] for x in lines]
    labels.write_text("id,success\n" + "".join(f"{i},{j % 2 == 0}\n" for j, i in enumerate(ids)) + "nobody,1\n"
                      + f"{ids[0]},maybe\n")  # a bad row: reported after the traces' problems, as by load()
    for size in (2, 3, 1000):
        reader = iter_chunks([tmp_path], max_trajectories=size, labels=labels)
        chunks = list(reader)
        ts, report = load([tmp_path], labels=labels)
        assert_chunks_equal(chunks, ts)
        assert problems(reader.report) == problems(report)
    reasons = " | ".join(p.reason for p in report.problems)
    assert "duplicate trajectory id" in reasons and "earlier file" in reasons and "match no trajectory" in reasons


def test_chunks_refuse_bad_arguments():
    with pytest.raises(ValueError, match="max_trajectories must be a positive integer, got 0"):
        iter_chunks(SAMPLE, max_trajectories=0)
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        iter_chunks(SAMPLE, format="xml")
    reader = iter_chunks(SAMPLE / "units", max_trajectories=10_000)
    list(reader)
    with pytest.raises(RuntimeError, match="read once"):
        list(reader)


# ------------------------------------------------------------------ the table writer
@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_table_writer_chunks_equal_one_frame(tmp_path, suffix):
    df = pd.DataFrame({"id": [f"r{i}" for i in range(10)], "dataset": [None] * 4 + ["d, \"q\"\nx"] * 6,
                       "success": pd.array([True, False, None] + [True] * 7, dtype="boolean"),
                       "x": np.linspace(-1, 1, 10) / 3})
    out = tmp_path / f"t{suffix}"
    with TableWriter(out) as w:
        for start in (0, 4, 7):
            w.write(df.iloc[start:{0: 4, 4: 7, 7: 10}[start]])
    assert w.rows == 10
    back = {".csv": pd.read_csv, ".parquet": pd.read_parquet,
            ".jsonl": lambda p: pd.read_json(p, lines=True, precise_float=True)}[suffix](out)
    assert back["id"].tolist() == df["id"].tolist()
    np.testing.assert_array_equal(back["x"].to_numpy(), df["x"].to_numpy())  # exact round trip
    assert [None if pd.isna(v) else bool(v) for v in back["success"]] == [True, False, None] + [True] * 7
    assert back["dataset"].iloc[5] == "d, \"q\"\nx"
    if suffix == ".csv":
        one = tmp_path / "one.csv"
        df.to_csv(one, index=False)
        assert out.read_text().splitlines()[0] == one.read_text().splitlines()[0]
        pd.testing.assert_frame_equal(back, pd.read_csv(one))


def test_table_writer_failure_half_way_keeps_the_previous_file(tmp_path):
    out = tmp_path / "t.csv"
    out.write_text("previous\n")
    with pytest.raises(ValueError, match="columns"):
        with TableWriter(out) as w:
            w.write(pd.DataFrame({"a": [1.0]}))
            w.write(pd.DataFrame({"b": [1.0]}))
    assert out.read_text() == "previous\n" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


# ------------------------------------------------------------------ the commands, chunk by chunk
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_features_in_chunks_equal_features_at_once(tmp_path, suffix, capsys):
    one, many = tmp_path / f"one{suffix}", tmp_path / f"many{suffix}"
    assert main(["features", str(SAMPLE), "--out", str(one)]) == 0
    assert main(["features", str(SAMPLE), "--out", str(many), "--chunk-size", "333"]) == 0
    read = pd.read_csv if suffix == ".csv" else pd.read_parquet
    a, b = read(one), read(many)
    assert len(a) == 4001 and a.shape[1] == 52
    pd.testing.assert_frame_equal(a, b)
    if suffix == ".csv":
        assert one.read_bytes() == many.read_bytes()


def test_score_in_chunks_and_merged_metrics(tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["fit", str(SAMPLE / "arithmetic"), "--out", str(model)]) == 0
    one, many = tmp_path / "one.csv", tmp_path / "many.csv"
    assert main(["score", str(model), str(SAMPLE), "--out", str(one)]) == 0
    out_one = capsys.readouterr().out
    assert main(["score", str(model), str(SAMPLE), "--out", str(many), "--chunk-size", "300"]) == 0
    out_many = capsys.readouterr().out
    a, b = pd.read_csv(one), pd.read_csv(many)
    pd.testing.assert_frame_equal(a, b)
    ts, _ = load(SAMPLE)
    y = ts.labels
    p = a.set_index("id").loc[ts.ids, "confidence"].to_numpy()
    line = [x for x in out_many.splitlines() if x.startswith("on the")][0]
    assert line == [x for x in out_one.splitlines() if x.startswith("on the")][0]
    assert f"ECE {expected_calibration_error(y, p):.4f}, Brier {brier_score(y, p):.4f}, AUROC {auroc(y, p):.4f}" in line


def test_score_in_chunks_keeps_one_header_when_a_later_chunk_has_verbalized(tmp_path, capsys):
    src = tmp_path / "runs.jsonl"
    lines = (SAMPLE / "units" / sorted(p.name for p in (SAMPLE / "units").iterdir())[0]).read_text().splitlines()
    rows = [json.loads(x) for x in lines[:20]]
    for i, r in enumerate(rows):
        r["verbalized_confidence"] = 0.5 if i >= 15 else None
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = tmp_path / "m.json"
    assert main(["fit", str(SAMPLE / "arithmetic"), "--out", str(model)]) == 0
    out = tmp_path / "s.csv"
    assert main(["score", str(model), str(src), "--out", str(out), "--chunk-size", "10"]) == 0
    df = pd.read_csv(out)
    assert "verbalized" in df.columns and df["verbalized"].isna().sum() == 15 and len(df) == 20


def test_import_in_chunks_equals_import_at_once(tmp_path, capsys):
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    src = [str(FIXTURES / "calllog.jsonl"), str(SAMPLE / "units")]
    assert main(["import", *src, "--out", str(one)]) == 0
    assert main(["import", *src, "--out", str(many), "--chunk-size", "7"]) == 0
    assert one.read_bytes() == many.read_bytes() and one.stat().st_size > 0


def test_nothing_valid_in_chunks_is_an_error_and_keeps_the_previous_output(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "steps": [{"logprobs": [1.5]}]}\n')
    out = tmp_path / "f.csv"
    out.write_text("previous\n")
    assert main(["features", str(bad), "--out", str(out), "--chunk-size", "1"]) == 2
    err = capsys.readouterr().err
    assert "htc features: error: no valid trajectories" in err and "steps[0].logprobs[0]" in err
    assert out.read_text() == "previous\n"
    imp = tmp_path / "i.jsonl"
    imp.write_text("previous\n")
    assert main(["import", str(bad), "--out", str(imp)]) == 1
    assert imp.read_text() == "previous\n"
    with pytest.raises(SystemExit):
        main(["features", str(bad), "--out", str(out), "--chunk-size", "0"])
    assert "expected a positive integer, got '0'" in capsys.readouterr().err
