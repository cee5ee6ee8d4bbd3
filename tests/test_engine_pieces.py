"""Dask/Spark pieces sized to the data (issue 29, item 5): about 4 tasks per worker, 1 to 32 MB each."""

from __future__ import annotations

import os

from htc_core.engines.common import DEFAULT_PIECE_BYTES, MIN_PIECE_BYTES, sized_piece_bytes, split_inputs


def _sparse(path, size: int):
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def test_pieces_follow_the_input_size(tmp_path):
    mb = 1 << 20
    small = _sparse(tmp_path / "a.jsonl", 20 * mb)
    assert sized_piece_bytes(small, 2) == 20 * mb // 8                    # 8 tasks for 2 workers
    assert sized_piece_bytes(small, 1) == 20 * mb // 4
    assert sized_piece_bytes([small, _sparse(tmp_path / "b.jsonl", 20 * mb)], 2) == 40 * mb // 8
    assert sized_piece_bytes(_sparse(tmp_path / "tiny.jsonl", 1000), 2) == MIN_PIECE_BYTES
    big = tmp_path / "big"
    big.mkdir()
    _sparse(big / "c.jsonl", 10 << 30)                                   # 10 GB (sparse): capped
    assert sized_piece_bytes(big, 2) == DEFAULT_PIECE_BYTES
    assert sized_piece_bytes(tmp_path / "missing.jsonl", 2) == MIN_PIECE_BYTES


def test_a_sized_split_gives_every_worker_work(tmp_path):
    line = b'{"id": "r%d", "steps": [{"logprobs": [-0.1, -0.2]}]}\n'
    path = tmp_path / "runs.jsonl"
    with open(path, "wb") as fh:
        for i in range(60000):
            fh.write(line % i)
    size = os.path.getsize(path)
    pieces = split_inputs(path, piece_bytes=sized_piece_bytes(path, 2))
    assert size > MIN_PIECE_BYTES * 2 and len(pieces) >= 2
    assert pieces[0].start == 0 and pieces[-1].end in (-1, size)
