"""Features computed piece by piece (issue 29): ``ChunkReader.pieces`` and ``features.pieces.chunk_features`` give
``extract`` of each chunk bit for bit, whatever the widths of the alternatives, the profile, ``top_k`` and the
chunk and piece sizes; ``htc features`` writes the bytes it wrote when it computed whole chunks."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htc_core.cli import main
from htc_core.features import extract
from htc_core.features.pieces import chunk_features, settled
from htc_core.formats import iter_chunks, load
from htc_core.heap import keep_freed_memory
from htc_core.tablewriter import TableWriter


def _columns(ts, fm) -> dict:
    return {"id": ts.ids, "f": fm.values}


def _write_runs(path, seed: int, n_runs: int, widths=(0, 1, 2, 3, 4, 5, 7), odd_steps: float = 0.2) -> None:
    """htc-trace JSONL: runs of 1-4 steps of 1-29 tokens; each run's alternatives one of ``widths`` wide, and a
    step of another width (or none) with probability ``odd_steps`` (NaN-padded rows of unequal width)."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n_runs):
        width = int(rng.choice(widths))
        steps = []
        for _ in range(int(rng.integers(1, 5))):
            n = int(rng.integers(1, 30))
            step = {"name": "s", "logprobs": np.round(np.log(rng.uniform(0.01, 1, n)), 8).tolist()}
            k = width if rng.random() >= odd_steps else int(rng.choice([0, 2, 5, 6]))
            if k:
                top = np.sort(np.round(np.log(rng.uniform(0.001, 1, (n, k))), 8), axis=1)[:, ::-1]
                step["top_logprobs"] = top.tolist()
            steps.append(step)
        lines.append(orjson.dumps({"id": f"r{i}", "steps": steps, "success": bool(rng.random() < 0.5)}))
    path.write_bytes(b"\n".join(lines) + b"\n")


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), n_runs=st.integers(1, 40), chunk=st.sampled_from([1, 3, 7, 1000]),
       piece=st.sampled_from([1, 5, 13, 60, 400]), profile=st.sampled_from(["paper", "deepconf", "chosen"]),
       top_k=st.sampled_from([0, 1, 3, 5, 8]), widths=st.sampled_from([(0, 1, 2, 3, 4, 5, 7), (5,), (0, 5), (3,)]))
def test_pieces_give_the_chunks_features_bit_for_bit(tmp_path, seed, n_runs, chunk, piece, profile, top_k, widths):
    path = tmp_path / "runs.jsonl"
    _write_runs(path, seed, n_runs, widths)
    whole = [(c.ids, extract(c, profile=profile, top_k=top_k).values)
             for c in iter_chunks(path, max_trajectories=chunk)]
    got = list(chunk_features(iter_chunks(path, max_trajectories=chunk).pieces(piece), _columns, profile=profile,
                              top_k=top_k))
    assert len(got) == len(whole)
    for (ids, values), cols in zip(whole, got):
        assert list(cols["id"]) == list(ids)
        assert _same(values, cols["f"])


def test_pieces_of_a_chunk_hold_the_chunk(tmp_path):
    """The pieces of each chunk, joined, are the chunk: same runs in order, same arrays; every piece but a chunk's
    last holds at least ``max_tokens`` tokens, a multiple of 4; the report is the same."""
    path = tmp_path / "runs.jsonl"
    _write_runs(path, 3, 60)
    chunks = iter_chunks(path, max_trajectories=25)
    whole = list(chunks)
    reader = iter_chunks(path, max_trajectories=25)
    joined, tokens = [], []
    for ts, first in reader.pieces(50):
        if first:
            joined.append([])
        joined[-1].append(ts)
    assert [sum(len(p) for p in parts) for parts in joined] == [len(c) for c in whole]
    for parts, chunk in zip(joined, whole):
        assert [i for p in parts for i in p.ids] == list(chunk.ids)
        assert _same(np.concatenate([p.logprob for p in parts]), chunk.logprob)
        for p in parts[:-1]:
            assert p.n_tokens >= 50 and p.n_tokens % 4 == 0
        tokens.append([p.n_tokens for p in parts])
    assert max(len(t) for t in tokens) > 2  # the file was really cut
    assert reader.n_trajectories == chunks.n_trajectories == 60
    assert reader.report.summary() == chunks.report.summary()


def test_pieces_across_formats_and_labels(tmp_path):
    """A native file, a file of another format and another native file: the chunk pending before the other
    format's file ends there (its next piece starts a chunk), labels are joined piece by piece as chunk by chunk,
    and the report is the same."""
    a, c = tmp_path / "a.jsonl", tmp_path / "c.jsonl"
    _write_runs(a, 4, 30, widths=(5,))
    _write_runs(c, 5, 30, widths=(5,))
    c.write_bytes(c.read_bytes().replace(b'"id":"r', b'"id":"c'))
    other = tmp_path / "b.jsonl"
    other.write_bytes(open("sample_runs/_calllog/arithmetic_SmolLM2-135M-greedy.calllog.jsonl", "rb").read())
    labels = tmp_path / "labels.csv"
    labels.write_text("id,success\nr1,0\nr2,1\nc3,1\nnobody,1\n")
    inputs = [a, other, c]
    whole = list(iter_chunks(inputs, max_trajectories=40, labels=labels))
    reader = iter_chunks(inputs, max_trajectories=40, labels=labels)
    joined = []
    for ts, first in reader.pieces(200):
        if first:
            joined.append([])
        joined[-1].append(ts)
    assert [sum(len(p) for p in parts) for parts in joined] == [len(w) for w in whole]
    for parts, chunk in zip(joined, whole):
        assert [i for p in parts for i in p.ids] == list(chunk.ids)
        assert _same(np.concatenate([p.labels for p in parts]), chunk.labels)
    ref = iter_chunks(inputs, max_trajectories=40, labels=labels)
    list(ref)
    assert reader.report.summary() == ref.report.summary()


def test_pieces_argument_and_single_use(tmp_path):
    path = tmp_path / "runs.jsonl"
    _write_runs(path, 6, 5)
    reader = iter_chunks(path)
    for bad in (0, -1, 1.5, True, "100"):
        with pytest.raises(ValueError, match="max_tokens must be a positive integer"):
            reader.pieces(bad)
    list(reader.pieces(10))
    with pytest.raises(RuntimeError, match="read once"):
        list(reader.pieces(10))


def test_settled():
    """A piece's features are final when its chunk cannot change them: no alternatives, the chosen profile, or
    top_k alternatives on every token that has any (all-absent rows included); not with fewer, nor with rows of
    unequal width."""
    ts, _ = load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
    assert ts.k == 5
    assert settled(ts, "paper", 5) and settled(ts, "deepconf", 3) and settled(ts, "paper", 0)
    assert not settled(ts, "paper", 6) and settled(ts, "chosen", 6)
    top = ts.top_logprobs.copy()
    top[3] = np.nan  # a token without alternatives: still settled
    import dataclasses

    assert settled(dataclasses.replace(ts, top_logprobs=top), "paper", 5)
    top[4, 2:] = np.nan  # a token with 2 of 5: not settled for top_k > 2
    odd = dataclasses.replace(ts, top_logprobs=top)
    assert not settled(odd, "paper", 5) and settled(odd, "paper", 2)


def test_htc_features_writes_the_chunk_bytes(tmp_path, capsys):
    """``htc features`` (pieces) writes the bytes of the whole-chunk computation, CSV and Parquet, for a file cut
    into many pieces with alternatives of mixed widths."""
    import htc_core.features.pieces as pieces

    path = tmp_path / "runs.jsonl"
    _write_runs(path, 7, 120)
    for suffix in ("csv", "parquet"):
        ref = tmp_path / f"ref.{suffix}"
        with TableWriter(ref) as w:
            for ts in iter_chunks(path, max_trajectories=50):
                fm = extract(ts)
                cols = {c: ts.meta_column(c) for c in ("id", "dataset", "model", "success")}
                cols.update((name, fm.values[:, j]) for j, name in enumerate(fm.names))
                w.write_columns(cols, booleans=("success",))
        out = tmp_path / f"out.{suffix}"
        old = pieces.PIECE_TOKENS
        try:
            pieces.PIECE_TOKENS = 100  # many pieces per chunk
            assert main(["features", str(path), "--out", str(out), "--chunk-size", "50"]) == 0
        finally:
            pieces.PIECE_TOKENS = old
        assert out.read_bytes() == ref.read_bytes()
    assert "wrote 120 trajectories x 48 features" in capsys.readouterr().out


def test_keep_freed_memory_answers():
    assert keep_freed_memory() in (True, False)
