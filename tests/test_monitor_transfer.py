"""The live Monitor of a GAC whose model file combines its logit with a training-free signal (``transfer``, as
the shipped ``gac`` and ``gac-full`` do): after step k it gives what the GAC gives on the run's k-step prefix."""

import numpy as np
import pytest

from htc_core.calibration.models import load_model
from htc_core.calibration.transfer_methods import RunningSignals, training_free_signals
from htc_core.formats import load
from htc_core.monitor import Monitor
from htc_core.traces.prefix import prefix_pairs

from conftest import REPO


@pytest.fixture(scope="module")
def runs():
    ts, _ = load(str(REPO / "sample_runs" / "units"))
    return ts.take(np.arange(12))


def _replay(mon, ts, i):
    mon.reset()
    out = []
    for s in range(ts.traj_offsets[i], ts.traj_offsets[i + 1]):
        a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
        out.append(mon.add_step(ts.logprob[a:b], ts.top_logprobs[a:b]))
    return out


@pytest.mark.parametrize("name", ["gac", "gac-full", "gac-prefix"])
def test_monitor_of_a_transfer_gac_equals_the_gac_on_every_prefix(runs, name):
    gac = load_model(name)
    if gac.transfer is None:
        pytest.skip(f"{name} holds no transfer entry")
    mon = Monitor(gac)
    S = runs.steps_per_trajectory
    for i in range(len(runs)):
        live = _replay(mon, runs, i)
        pre = prefix_pairs(runs, np.full(S[i], i), np.arange(1, S[i] + 1))
        batch = gac.predict_proba_traces(pre, set_level=False)[:, 1]     # a Monitor scores one run at a time
        np.testing.assert_allclose(live, batch, rtol=1e-9, atol=1e-12)


def test_running_signals_equal_the_batch_signals(runs):
    want = training_free_signals(runs)
    for i in range(len(runs)):
        rs = RunningSignals()
        for s in range(runs.traj_offsets[i], runs.traj_offsets[i + 1]):
            a, b = runs.step_offsets[s], runs.step_offsets[s + 1]
            rs.add(runs.logprob[a:b], runs.top_logprobs[a:b])
        for name in want.columns:
            assert rs.value(name) == pytest.approx(want[name].iloc[i], rel=1e-12, nan_ok=True)
    with pytest.raises(ValueError, match="signal must be one of"):
        RunningSignals().value("nope")
