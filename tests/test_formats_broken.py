"""A corpus of broken inputs generated in tmp_path: every problem is reported with file, line and reason;
nothing valid is lost; no traceback reaches the user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import make_traj
from htc_core.formats import detect, load

FIX = Path(__file__).parent / "fixtures" / "formats"


def lines_of(name):
    return [x for x in (FIX / name).read_text().splitlines() if x.strip()]


def native_line(tid="n1"):
    return json.dumps({"id": tid, "success": True,
                       "steps": [{"name": "s", "logprobs": [-0.1, -0.2], "top_logprobs": [[-0.1, -2.0], [-0.2, -3.0]]}]})


@pytest.fixture
def corpus(tmp_path):
    """A directory mixing every format, good and broken files."""
    d = tmp_path / "corpus"
    d.mkdir()
    for name in ("calllog.jsonl", "chat_run.json", "responses.json", "completions.jsonl", "atif.json",
                 "smolagents_run.json"):
        shutil.copy(FIX / name, d / name)
    (d / "native.jsonl").write_text(native_line() + "\n")
    (d / "unknown.json").write_text(json.dumps({"hello": "world"}))
    call = next(ln for ln in lines_of("calllog.jsonl") if '"response"' in ln)
    (d / "mixed_lines.jsonl").write_text(native_line("m1") + "\n" + call + "\n")
    (d / "empty.jsonl").write_text("")
    (d / "garbage.jsonl").write_bytes(os.urandom(2000).replace(b"\n", b" "))
    deep = "[" * 5000 + "]" * 5000
    (d / "deep.json").write_text(deep)
    return d


def test_mixed_directory(corpus):
    ts, rep = load(corpus)
    # every valid file contributed
    by_source = ts.meta["source"].map(lambda s: Path(s).name).value_counts().to_dict()
    assert by_source == {"calllog.jsonl": 4, "chat_run.json": 1, "responses.json": 1, "completions.jsonl": 2,
                         "atif.json": 1, "smolagents_run.json": 1, "native.jsonl": 1}
    errs = {Path(p.file).name: p for p in rep.errors}
    unknown = errs["unknown.json"].reason
    assert unknown.startswith("unknown format")
    for fmt in ("native", "openai-chat", "openai-calllog", "responses", "completions", "smolagents", "atif"):
        assert f"{fmt}: " in unknown  # every format tried, with its reason
    assert "ambiguous" in errs["mixed_lines.jsonl"].reason
    assert "native (line 1)" in errs["mixed_lines.jsonl"].reason
    assert "openai-calllog (line 2)" in errs["mixed_lines.jsonl"].reason
    assert "empty" in errs["empty.jsonl"].reason
    assert "garbage.jsonl" in errs and "deep.json" in errs
    assert "nested too deeply" in errs["deep.json"].reason or "unknown format" in errs["deep.json"].reason


def test_cli_never_shows_a_traceback(corpus, capsys):
    from htc_core.cli import main

    rc = main(["validate", str(corpus), "--max-problems", "50"])
    out = capsys.readouterr()
    assert rc == 0
    assert "Traceback" not in out.out + out.err
    assert "unknown.json" in out.out and "ambiguous" in out.out
    rc = main(["import", str(corpus / "unknown.json"), "--out", str(corpus / "x.jsonl")])
    out = capsys.readouterr()
    assert rc == 1 and "Traceback" not in out.out + out.err and "unknown format" in out.out


def test_format_option_overrides_detection(corpus):
    ts, rep = load(corpus / "mixed_lines.jsonl", format="native")
    assert list(ts.ids) == ["m1"]
    assert rep.errors and rep.errors[0].line == 2  # the call-log line is not a native trajectory
    with pytest.raises(ValueError, match="valid formats: auto, native, openai-chat"):
        load(corpus, format="langfuse")


def test_truncated_calllog_keeps_other_trajectories(tmp_path):
    lines = lines_of("calllog.jsonl")
    p = tmp_path / "t.jsonl"
    # cut the last LLM call of q-mars in half, as a crash while writing would
    idx = max(i for i, ln in enumerate(lines) if '"q-mars"' in ln and '"response"' in ln)
    lines[idx] = lines[idx][: len(lines[idx]) // 2]
    p.write_text("\n".join(lines) + "\n")
    ts, rep = load(p)
    assert sorted(ts.ids) == ["q-gold", "q-paris", "q-tokyo"]
    e = rep.errors[0]
    assert e.line == idx + 1 and e.trajectory_id == "q-mars" and "truncated" in e.reason
    assert rep.rejected == 1


def test_missing_logprobs_everywhere(tmp_path):
    rows = [json.loads(x) for x in lines_of("calllog.jsonl")]
    for r in rows:
        if "response" in r:
            r["response"]["choices"][0].pop("logprobs")
    p = tmp_path / "nolp.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ts, rep = load(p)
    assert ts.n_trajectories == 0
    assert rep.rejected == 4
    assert all("none of its 2 LLM call(s) has logprobs" in e.reason for e in rep.errors)
    assert len([w for w in rep.warnings if "step dropped" in w.reason]) == 8


def test_wrong_types_native_and_calllog(tmp_path):
    p = tmp_path / "n.jsonl"
    bad = json.loads(native_line("b"))
    bad["steps"][0]["logprobs"] = "not a list"
    p.write_text(native_line("a") + "\n" + json.dumps(bad) + "\n" + native_line("c") + "\n")
    ts, rep = load(p)
    assert list(ts.ids) == ["a", "c"]
    assert (rep.errors[0].line, rep.errors[0].field) == (2, "steps[0].logprobs")


@pytest.mark.parametrize("name", ["calllog.jsonl", "chat_trajectories.jsonl", "completions.jsonl"])
def test_invalid_utf8_line(tmp_path, name):
    raw = (FIX / name).read_bytes().splitlines(keepends=True)
    i = 1
    raw[i] = raw[i][:40] + b"\xff\xfe\xc3" + raw[i][40:]
    p = tmp_path / name
    p.write_bytes(b"".join(raw))
    ts, rep = load(p)
    assert any(e.line == i + 1 and "UTF-8" in e.reason for e in rep.errors), rep.summary()
    assert ts.n_trajectories >= 1


def test_invalid_utf8_in_json_array(tmp_path):
    data = (FIX / "chat_run.json").read_bytes()
    cut = data.index(b'"token"', len(data) // 2)
    p = tmp_path / "bad.json"
    p.write_bytes(data[:cut] + b"\xff" + data[cut:])
    ts, rep = load(p, format="openai-chat")
    assert ts.n_trajectories == 0
    assert "UTF-8" in rep.errors[0].reason and rep.errors[0].line > 1


def test_deeply_nested_lines(tmp_path):
    p = tmp_path / "deep.jsonl"
    # 200k levels: orjson 3.8 would overflow the C stack (a segfault); the reader must report it instead
    deep = '{"trajectory_id": "d", "response": ' + "[" * 200_000 + "]" * 200_000 + "}"
    call = next(ln for ln in lines_of("calllog.jsonl") if '"response"' in ln)
    p.write_text(call + "\n" + deep + "\n")
    ts, rep = load(p, format="openai-calllog")
    assert rep.errors and rep.errors[0].line == 2 and "nested too deeply" in rep.errors[0].reason
    assert ts.n_trajectories == 1
    q = tmp_path / "deep.json"
    q.write_text('{"id": "x", "responses": ' + "[" * 200_000 + "]" * 200_000 + "}")
    ts, rep = load(q, format="openai-chat")
    assert "nested too deeply" in rep.errors[0].reason


def test_missing_inputs_reported(tmp_path):
    ts, rep = load([tmp_path / "nope.jsonl", tmp_path])
    reasons = " | ".join(p.reason for p in rep.errors)
    assert "no such file" in reasons and "holds no" in reasons
    assert ts.n_trajectories == 0


def test_detect_reasons_for_unknown_jsonl(tmp_path):
    p = tmp_path / "events.jsonl"
    p.write_text('{"event": "start"}\n{"event": "tool", "name": "search"}\n')
    fmt, why = detect(p)
    assert fmt is None and "openai-calllog: no line holds one LLM response" in why
    assert "2 values checked" in why


@pytest.mark.slow
def test_one_gigabyte_calllog(tmp_path):
    """A ~1 GB call log is read with memory bounded by the output arrays (run with -m slow)."""
    lines = [ln.encode() + b"\n" for ln in lines_of("calllog.jsonl")]
    block = b"".join(lines)
    path = tmp_path / "big.jsonl"
    n = 0
    with open(path, "wb") as fh:
        while fh.tell() < 1_000_000_000:
            fh.write(block.replace(b'"q-', b'"r%d-' % n))
            n += 1
    script = textwrap.dedent(f"""
        import resource, sys
        from htc_core.formats import load
        ts, rep = load({str(path)!r}, format="openai-calllog")
        print(ts.n_trajectories, rep.rejected, ts.memory_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[1])
    n_traj, rejected, arrays, maxrss_kb = map(int, out.stdout.split())
    assert n_traj == 4 * n and rejected == 0
    size = path.stat().st_size
    assert maxrss_kb * 1024 < size  # memory follows the output, not the file


def test_cut_short_and_corrupt_gzip(tmp_path):
    import gzip

    from htc_core.formats import native

    data = gzip.compress((FIX / "calllog.jsonl").read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    ts, rep = load(cut)  # detected from the lines before the cut
    assert "compressed file is cut short" in rep.errors[0].reason and rep.errors[0].line is not None
    assert list(ts.ids) == ["q-paris"]  # complete; the trajectory being written at the cut is rejected
    assert rep.errors[1].trajectory_id == "q-tokyo"
    bad = bytearray(data)
    bad[len(bad) // 2: len(bad) // 2 + 20] = b"x" * 20
    corrupt = tmp_path / "corrupt.jsonl.gz"
    corrupt.write_bytes(bytes(bad))
    ts, rep = load(corrupt)
    assert any("corrupt" in p.reason for p in rep.errors)
    # native.read (used directly by other modules) reports a cut-short .gz instead of raising
    nat = tmp_path / "nat.jsonl.gz"
    nat.write_bytes(gzip.compress(("\n".join([native_line(f"n{i}") for i in range(2000)]) + "\n").encode())[:3000])
    ts, rep = native.read(nat)
    assert ts.n_trajectories > 0 and "EOFError" in rep.errors[-1].reason


def test_deeply_nested_value_is_reported_not_a_crash(tmp_path):
    """A bare array nested 60,000 deep where a step belongs: the report line is written (bounded repr), the good
    trajectory of the same file is kept."""
    deep = "[" * 60_000 + "]" * 60_000
    good = json.dumps(make_traj("ok", [([-0.1, -0.2], None)]))
    path = tmp_path / "deep.jsonl"
    path.write_text(good + "\n" + '{"id": "deep", "steps": ' + deep + "}\n")
    ts, rep = load(path, format="native")
    assert list(ts.ids) == ["ok"]
    assert len(rep.errors) == 1 and rep.errors[0].line == 2
    assert len(str(rep.errors[0])) < 400
