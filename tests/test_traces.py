"""The columnar trace set: slicing, concatenation, round trips."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import LOG, make_traj, write_jsonl
from htc_core.formats import native
from htc_core.traces import TraceSet, concat_ranges, concat


@pytest.fixture()
def small(tmp_path):
    trajs = [
        make_traj("a", [([LOG(0.5), LOG(0.4)], [[LOG(0.5), LOG(0.3)], [LOG(0.4), LOG(0.35)]]), ([0.0], None)], True),
        make_traj("b", [([LOG(0.9)] * 3, None)], False, question="q?"),
        make_traj("c", [([LOG(0.2)], None), ([LOG(0.3)], None), ([LOG(0.4), LOG(0.1)], None)], None),
    ]
    ts, rep = native.read(write_jsonl(tmp_path / "s.jsonl", trajs))
    assert rep.trajectories_read == 3
    return ts


def test_shapes(small):
    assert small.n_trajectories == 3 and small.n_steps == 6 and small.n_tokens == 10 and small.k == 2
    assert list(small.steps_per_trajectory) == [2, 1, 3]
    assert list(small.tokens_per_trajectory) == [3, 3, 4]
    np.testing.assert_array_equal(small.labels[:2], [1.0, 0.0])
    assert np.isnan(small.labels[2]) and not small.has_labels
    assert small.labeled().n_trajectories == 2


def test_take_and_select(small):
    sub = small.select(["c", "a"])
    assert list(sub.ids) == ["c", "a"]
    assert list(sub.steps_per_trajectory) == [3, 2]
    np.testing.assert_allclose(sub.logprob[:4], [LOG(0.2), LOG(0.3), LOG(0.4), LOG(0.1)])
    assert sub.trajectory(1)["steps"][0]["top_logprobs"][1] == pytest.approx([LOG(0.4), LOG(0.35)])
    assert small.take([]).n_trajectories == 0
    with pytest.raises(KeyError, match="unknown trajectory ids"):
        small.select(["zz"])
    with pytest.raises(IndexError):
        small.take([3])


def test_concat_pads_alternatives(small):
    no_top = small.take([1])
    both = concat([no_top, small])
    assert both.n_trajectories == 4 and both.k == 2
    assert list(both.ids) == ["b", "a", "b", "c"]
    assert np.isnan(both.top_logprobs[:3]).all()
    np.testing.assert_array_equal(both.take([1, 2, 3]).logprob, small.logprob)
    assert concat([small]) is small and concat([]).n_trajectories == 0


def test_write_read_round_trip(small, tmp_path):
    out = tmp_path / "rt.jsonl"
    native.write(small, out)
    again, rep = native.read(out)
    assert rep.rejected == 0
    np.testing.assert_array_equal(again.logprob, small.logprob)
    np.testing.assert_array_equal(np.nan_to_num(again.top_logprobs, nan=9), np.nan_to_num(small.top_logprobs, nan=9))
    np.testing.assert_array_equal(again.step_offsets, small.step_offsets)
    assert again.meta["question"].tolist() == small.meta["question"].tolist()
    assert [again.trajectory(i) for i in range(3)] == [small.trajectory(i) for i in range(3)]


def test_ranges_vectorized_matches_loop():
    rng = np.random.default_rng(0)
    starts = rng.integers(0, 50, 40)
    lens = rng.integers(0, 5, 40)
    want = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lens)])
    np.testing.assert_array_equal(concat_ranges(starts, starts + lens), want)


def test_invalid_offsets_rejected():
    with pytest.raises(ValueError, match="step_offsets"):
        TraceSet(logprob=np.zeros(3), top_logprobs=np.zeros((3, 0)), step_offsets=[0, 2],
                 traj_offsets=[0, 1], meta=TraceSet.empty().meta)
