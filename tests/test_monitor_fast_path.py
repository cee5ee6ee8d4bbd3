"""The default Monitor's per-step shortcuts (issue 29, item 6: <= 20 us per 100-token step) change no output:
the GAC's transfer for one run is the array version's number to the bit, a running signal kept alone equals the
same signal kept with the others, and plain float64 arrays (used as they are) give the bits that lists give."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.calibration.transfer_methods import (SIGNALS, RunningSignals, apply_transfer, apply_transfer_one,
                                                   sigmoid)
from htc_core.monitor import Monitor

TRANSFER = {"method": "stack-oof", "signal": "min_prob", "coef": [0.0349, 0.3647, -0.1137], "fill": 0.2487,
            "fallback": {"kinds": ["without_alternatives"], "coef": [0.0, 0.4009, -0.1161]}}

signal_values = st.one_of(st.floats(0.0, 1.0), st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1.0, 1e-300,
                                                                  1 - 1e-17, 5e-7]))


@settings(max_examples=300, deadline=None)
@given(z=st.floats(-1e6, 1e6), signal=signal_values, kind=st.sampled_from(["with_alternatives",
                                                                          "without_alternatives"]),
       fallback=st.booleans(), a=st.floats(-5, 5), b=st.floats(-5, 5), c=st.floats(-5, 5))
def test_transfer_of_one_run_is_the_array_version_to_the_bit(z, signal, kind, fallback, a, b, c):
    transfer = dict(TRANSFER, coef=[a, b, c])
    if not fallback:
        transfer.pop("fallback")
    want = float(sigmoid(apply_transfer(transfer, [z], [signal], [kind]))[0])
    assert apply_transfer_one(transfer, z, signal, kind) == want


def _steps(seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(int(rng.integers(1, 12))):
        t = int(rng.integers(0, 60))
        lp = np.log(rng.uniform(0.01, 1.0, t))
        if t and rng.random() < 0.2:
            lp[int(rng.integers(0, t))] = np.nan if rng.random() < 0.5 else -np.inf
        top = None if rng.random() < 0.3 else np.sort(np.log(rng.uniform(0.001, 1.0, (t, 5))), axis=1)[:, ::-1]
        if top is not None and rng.random() < 0.5:
            top = np.where(rng.random(top.shape) < 0.2, np.nan, top)
        out.append((lp, np.zeros((t, 0)) if top is None else top))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_a_signal_kept_alone_equals_it_kept_with_the_others(seed):
    every = RunningSignals()
    alone = {name: RunningSignals((name,)) for name in SIGNALS}
    seen = []
    for lp, top in _steps(seed):
        every.add(lp, top)
        seen.append(np.nan_to_num(lp, nan=0.0))      # the chosen tokens as training_free_signals reads them
        allv = np.concatenate(seen)
        if allv.size:
            assert every.value("min_prob") == math.exp(min(float(s.min()) for s in seen if s.size))
            assert every.sum_lp == sum(float(s.sum()) for s in seen if s.size)
        for rs in alone.values():
            rs.add(lp, top)
        for name, rs in alone.items():
            assert np.array_equal(rs.value(name), every.value(name), equal_nan=True)


def test_a_signal_not_kept_is_refused():
    rs = RunningSignals(("min_prob",))
    rs.add(np.array([-0.5]), np.zeros((1, 0)))
    with pytest.raises(ValueError, match="min_prob"):
        rs.value("neg_entropy")
    with pytest.raises(ValueError, match="signals must be among"):
        RunningSignals(("nope",))


@pytest.mark.parametrize("seed", range(8))
def test_default_monitor_gives_the_same_bits_for_arrays_and_lists(seed):
    fast, slow = Monitor(), Monitor()
    for lp, top in _steps(seed + 100):
        lp = np.nan_to_num(lp, nan=-0.5, neginf=-0.5)           # valid steps only
        top = None if top.shape[1] == 0 else np.ascontiguousarray(top)
        a = fast.add_step(lp, top)
        b = slow.add_step(lp.tolist(), None if top is None else top.tolist())
        assert a == b or (math.isnan(a) and math.isnan(b))
    assert fast.history == slow.history
