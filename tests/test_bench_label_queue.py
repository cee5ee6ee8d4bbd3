"""The label-queue benchmark's paired comparison (htc_dev/bench/label_queue.py)."""

from __future__ import annotations

import numpy as np
import pytest

from htc_dev.bench.label_queue import paired_difference, run_set_groups


def test_paired_difference_is_the_mean_and_standard_error_of_the_per_seed_differences():
    rng = np.random.default_rng(0)
    base = rng.random(40)
    other = base - 0.01 + 0.002 * rng.standard_normal(40)
    m, se = paired_difference(base, other)
    d = base - other
    assert m == pytest.approx(d.mean()) and se == pytest.approx(d.std(ddof=1) / np.sqrt(40))
    assert 0.008 < m < 0.012 and se < 0.001           # the shared noise of the two arms cancels
    assert paired_difference(base, base) == (0.0, 0.0)
    assert np.isnan(paired_difference([0.1], [0.2])[1])


def test_the_sample_runs_are_one_run_set_and_hotpotqa_another():
    rows = [{"target": t} for t in ("arithmetic", "facts", "HotpotQA")]
    groups = run_set_groups(rows)
    assert [(name, [r["target"] for r in g]) for name, g in groups] == [
        ("sample runs", ["arithmetic", "facts"]), ("HotpotQA", ["HotpotQA"])]
