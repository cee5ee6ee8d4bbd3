"""The shipped prefix-aware GAC (``gac-prefix``): the Monitor's default model, no labels of the user needed."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import htc_core as htc
from htc_core.calibration.linear_scoring import GACScorer, LinearScorer
from htc_core.calibration.models import DEFAULT_MONITOR, SHIPPED, load_model
from htc_core.cli import main
from htc_core.collect import Recorder
from htc_core.formats import load
from htc_core.monitor import Monitor
from htc_core.traces.prefix import prefixes

from conftest import REPO, make_traj, write_jsonl

TOL = 1e-9


def _replay(ts, mon, gac, indices):
    """Largest |monitor - gac.predict_proba(k-step prefix)| over every step of the runs ``indices``."""
    worst, checked = 0.0, 0
    for i in indices:
        mon.reset()
        one = ts.take([i])
        for k, s in enumerate(range(ts.traj_offsets[i], ts.traj_offsets[i + 1]), start=1):
            a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
            p = mon.add_step(ts.logprob[a:b], ts.top_logprobs[a:b])
            worst = max(worst, abs(p - gac.predict_proba(prefixes(one, k))[0, 1]))
            checked += 1
    assert checked > 0
    return worst


def test_default_monitor_is_the_shipped_prefix_gac():
    assert DEFAULT_MONITOR == "gac-prefix" and "gac-prefix" in SHIPPED
    mon = Monitor()
    # read for scoring only (numpy, no scikit-learn): the estimator's numbers to the bit (test below)
    assert isinstance(mon.model, GACScorer) and mon.model.name == "gac-prefix"
    card = mon.model.card
    assert card["training_data"]["n_prefixes"] > card["training_data"]["n"] > 2000
    loo = card["leave_one_out"]
    heldout = {r["heldout"] for r in loo["by_prefix"]}
    assert heldout >= {f"{t} | {m}" for t in ("arithmetic", "facts", "strings", "units")
                       for m in ("SmolLM2-135M", "Gemma3-270M")}
    assert heldout == {r["family"] for r in loo["rows"]}
    assert {p["family"] for p in card["expected_error"]["points"]} == heldout
    assert all(p["ece_low"] <= p["ece"] <= p["ece_high"] for p in card["expected_error"]["points"])
    prefixes_seen = {r["prefix"] for r in loo["by_prefix"]}
    assert {"step 1", "25% of steps", "100% of steps"} <= prefixes_seen
    # the transfer is the candidate with the lowest mean ECE over the held-out prefixes, and the file holds it
    from htc_core.experiments.transfer_choice import SHIPPABLE

    shippable = {m: s["ece_mean"] for m, s in loo["summary"].items() if m in SHIPPABLE}
    assert loo["chosen"] == min(shippable, key=shippable.get) == card["transfer"]["chosen"]
    assert (mon.model.transfer is None) == (loo["chosen"] == "gac")


def test_monitor_equals_gac_on_prefixes_of_real_runs(uala_run_a):
    """Runs with top-5 alternatives (sample_runs) and without (UALA): the with- and without-alternatives
    sub-models are routed as the GAC routes the k-step prefix."""
    gac = load_model("gac-prefix")
    ts, _ = load([str(REPO / "sample_runs" / "units"), str(REPO / "sample_runs" / "arithmetic")])
    S = ts.steps_per_trajectory
    idx = list(np.flatnonzero(S >= 3)[:6]) + list(np.flatnonzero(S == 1)[:2])
    assert _replay(ts, Monitor(), gac, idx) < TOL
    ua, _ = load(uala_run_a)
    assert _replay(ua, Monitor("gac-prefix"), gac, range(8)) < TOL


def _histories(ts, mon):
    out = []
    for i in range(len(ts)):
        mon.reset()
        for s in range(ts.traj_offsets[i], ts.traj_offsets[i + 1]):
            a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
            mon.add_step(ts.logprob[a:b], ts.top_logprobs[a:b])
        out.append((list(mon.history), list(mon.alerts)))
    return out


@pytest.mark.parametrize("name", ["gac-prefix", "gac", "gac-full"])
def test_a_shipped_name_scores_as_the_estimator_to_the_bit(name):
    """Monitor(name) reads the file for scoring only; its confidences and alerts equal, bit for bit, those of a
    Monitor of the GeneralCalibrator estimator (with and without alternatives, transfer included)."""
    ts, _ = load([str(REPO / "sample_runs" / "units"), str(REPO / "sample_runs" / "arithmetic")])
    ts = ts.take(np.arange(0, len(ts), 7))
    light, full = Monitor(name, threshold=0.4), Monitor(load_model(name), threshold=0.4)
    assert type(light.model).__name__ == "GACScorer" and type(full.model).__name__ == "GeneralCalibrator"
    got, want = _histories(ts, light), _histories(ts, full)
    assert got == want and any(alerts for _, alerts in want)


def test_an_htc_model_file_scores_as_the_estimator_to_the_bit(tmp_path):
    ts, _ = load(str(REPO / "sample_runs" / "units"))
    path = tmp_path / "m.json"
    htc.HTCCalibrator("reduced", alphas=(1.0,), inner_folds=2).fit(htc.extract(ts), ts.labels).save(path)
    light, full = Monitor(str(path)), Monitor(htc.HTCCalibrator.load(path))
    assert isinstance(light.model, LinearScorer) and light._fast and full._fast
    part = ts.take(np.arange(0, len(ts), 5))
    assert _histories(part, light) == _histories(part, full)


def test_a_run_whose_alternatives_start_later_switches_model(tmp_path):
    """Step 1 lists no alternatives, step 2 does: after step 1 the without-alternatives model scores the run
    (as the GAC scores that 1-step prefix), from step 2 on the with-alternatives model."""
    steps = [([-0.1, -0.7, -0.02], None),
             ([-0.3, -0.05], [[-0.3, -1.9, -2.5], [-0.05, -3.2, -4.0]]),
             ([-1.2], [[-0.6, -1.2]])]
    path = write_jsonl(tmp_path / "mixed.jsonl", [make_traj("mixed", steps)])
    ts, _ = load(str(path))
    gac = load_model("gac-prefix")
    mon = Monitor()
    for k, (lp, top) in enumerate(steps, start=1):
        p = mon.add_step(lp, top)
        part = prefixes(ts, k)
        assert abs(p - gac.predict_proba(part)[0, 1]) < TOL
        assert gac.kinds(part)[0] == ("without_alternatives" if k == 1 else "with_alternatives")
    assert mon.n_steps == 3 and len(mon.history) == 3


def test_bad_step_leaves_both_sub_monitors_unchanged():
    mon = Monitor(threshold=0.99)
    p1 = mon.add_step([-0.2, -0.4], [[-0.2, -1.0], [-0.4, -2.0]])
    assert mon.alerts and mon.alerts[0].step == 1            # threshold 0.99: an alert on the first step
    with pytest.raises(ValueError, match=r"top_logprobs\[1\]\[1\]"):
        mon.add_step([-0.1, -0.3], [[-0.1, -1.0], [-0.3, 0.5]])
    assert mon.n_steps == 1 and all(part.n_steps == 1 for part in mon._parts)
    assert mon.add_step([], None) == p1                      # an empty step is skipped
    fresh = mon.fresh()
    assert fresh.n_steps == 0 and math.isnan(fresh.confidence) and fresh.threshold == 0.99


def test_recorder_monitor_true_uses_the_shipped_model(tmp_path):
    with Recorder(tmp_path / "calls.jsonl", monitor=True) as rec:
        assert rec._live.template.model.name == "gac-prefix"


def test_cli_monitor_with_the_shipped_name_matches_a_replay(tmp_path, capsys):
    out = tmp_path / "steps.csv"
    units = REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"
    assert main(["monitor", "gac-prefix", str(units), "--threshold", "0.3", "--out", str(out)]) == 0
    assert "through a Monitor of gac-prefix" in capsys.readouterr().out
    df = pd.read_csv(out)
    ts, _ = load(str(units))
    mon, conf = Monitor(), []
    for i in range(3):
        mon.reset()
        for s in range(ts.traj_offsets[i], ts.traj_offsets[i + 1]):
            a, b = ts.step_offsets[s], ts.step_offsets[s + 1]
            conf.append(mon.add_step(ts.logprob[a:b], ts.top_logprobs[a:b]))
    np.testing.assert_allclose(df.confidence.to_numpy()[:len(conf)], conf, rtol=0, atol=1e-12)


def test_models_lists_the_prefix_model(capsys):
    assert main(["models", "--json"]) == 0
    names = [m["name"] for m in json.loads(capsys.readouterr().out)]
    assert "gac-prefix" in names
    assert main(["models", "gac-prefix"]) == 0
    out = capsys.readouterr().out
    assert "step 1" in out and "units | Gemma3-270M" in out
