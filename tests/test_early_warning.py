"""Prefix evaluation (early warning) and the commands around partial runs, on the project's real runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import htc_core as htc
from htc_core.calibration.evaluation import EvaluationError
from htc_core.calibration.prefixes import _monitor_view, alert_threshold, early_warning
from htc_core.cli import main
from htc_core.traces.prefix import prefixes

from conftest import REPO

ALPHAS = (0.01, 0.1, 1.0)


@pytest.fixture(scope="module")
def arithmetic():
    ts, _ = htc.load(REPO / "sample_runs" / "arithmetic")
    return ts.labeled()


@pytest.fixture(scope="module")
def ew(arithmetic):
    return early_warning(arithmetic, seeds=1, alphas=ALPHAS)


def test_each_prefix_is_the_honest_evaluation_of_that_prefix(arithmetic, ew):
    """Every row is evaluate() on the prefixes (same folds by trajectory): step 1 and the whole runs."""
    for label, cut in (("step 1", dict(steps=1)), ("100% of steps", dict(fraction=1.0))):
        ref = htc.evaluate(prefixes(arithmetic, **cut), seeds=1, alphas=ALPHAS, methods=list(ew.methods))
        for m in ew.methods:
            row = ew.curve[(ew.curve.prefix == label) & (ew.curve.method == m)].iloc[0]
            for metric in ("ece", "brier", "auroc"):
                assert row[metric] == pytest.approx(ref.summary[m][metric]["mean"], abs=1e-12)
            assert np.array_equal(ew.oof[(label, m)], ref.oof_all[m])
    S = arithmetic.steps_per_trajectory
    steps = sorted(ew.curve.loc[ew.curve.kind == "steps", "k"].unique())
    assert steps == list(range(1, S.max() + 1))
    run1 = ew.curve[(ew.curve.prefix == "step 1")].running.iloc[0]
    assert run1 == int((S > 1).sum())


def test_htc_warns_earlier_than_the_baselines_on_real_runs(ew):
    """Not a fixed number: on these SmolLM2 runs HTC's first-step AUROC is far above LastStep-TP's."""
    c = ew.curve[ew.curve.prefix == "step 1"].set_index("method")
    assert c.loc["HTC-Reduced", "auroc"] > c.loc["LastStep-TP", "auroc"]
    fa = ew.first_alert.set_index("method")
    assert 0 < fa.loc["HTC-Reduced", "flagged"] <= 1
    assert fa.loc["HTC-Reduced", "median_first_alert"] <= fa.loc["HTC-Reduced", "median_length"]
    by = ew.alerts[ew.alerts.method == "HTC-Reduced"].flagged_by_step.to_numpy()
    assert np.all(np.diff(by) >= 0) and by[-1] == pytest.approx(fa.loc["HTC-Reduced", "flagged"])
    d = json.loads(ew.to_json())
    assert d["false_alarm"] == 0.1 and len(d["curve"]) == len(ew.curve)
    assert "flagged by step" in ew.table()


def test_alert_threshold_flags_the_requested_share():
    conf = np.linspace(0.05, 0.95, 50)
    t = alert_threshold(conf, 0.1)
    assert np.sum(conf < t) == 5
    assert alert_threshold(conf[:3], 0.99) == conf[2]            # floor(2.97) = 2 of 3 flagged


def test_live_monitor_view_by_hand():
    """Three successes and three failures, 3 steps; one threshold flags floor(1/3 * 3) = 1 success."""
    y = np.array([1, 1, 1, 0, 0, 0])
    S = np.array([3, 3, 2, 3, 1, 2])
    c = np.array([[.9, .8, .7], [.6, .9, .9], [.8, .5, .5], [.9, .4, .1], [.2, .2, .2], [.9, .9, .9]])
    oof = {(f"step {k}", "m"): c[None, :, k - 1] for k in (1, 2, 3)}
    alerts, first = _monitor_view(oof, ["m"], [1, 2, 3], y, S, 1 / 3)
    # success minima over existing steps: .7, .6, .5 -> threshold .6 flags the third success only
    row = first.iloc[0]
    assert row.threshold == pytest.approx(0.6)
    # failures: run 3 alerted at step 2 (0.4 < 0.6), run 4 at step 1, run 5 never
    assert row.flagged == pytest.approx(2 / 3)
    assert alerts.flagged_by_step.tolist() == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert row.median_first_alert == 1.5 and row.median_length == 2.0


def test_early_warning_arguments(arithmetic):
    with pytest.raises(ValueError, match="false_alarm"):
        early_warning(arithmetic, false_alarm=1.5)
    with pytest.raises(ValueError, match="steps must be 1, 2"):
        early_warning(arithmetic, steps=[2, 3])
    with pytest.raises(EvaluationError, match="success label"):
        early_warning(_unlabeled(arithmetic))


def _unlabeled(ts):
    t = ts.take(range(20))
    t.meta["success"] = pd.array([pd.NA] * 20, dtype="boolean")
    return t


# ------------------------------------------------------------------ the commands
def test_score_on_prefixes_equals_the_monitor_replay(tmp_path, capsys):
    """Target: `htc score MODEL prefixes.jsonl` on prefixes cut from real runs and a Monitor replay of the
    same runs give the same confidences."""
    model, pre, scores, steps = (tmp_path / n for n in ("m.json", "p.jsonl", "s.csv", "steps.csv"))
    runs = REPO / "sample_runs" / "units"
    assert main(["fit", str(REPO / "sample_runs" / "arithmetic"), "--out", str(model)]) == 0
    assert main(["prefixes", str(runs), "--out", str(pre)]) == 0
    assert main(["score", str(model), str(pre), "--out", str(scores)]) == 0
    assert main(["monitor", str(model), str(runs), "--threshold", "0.2", "--out", str(steps),
                 "--allow-whole-run-model"]) == 0
    s = pd.read_csv(scores)
    m = pd.read_csv(steps)
    m["key"] = m.id + "@" + m.step.astype(str)
    joined = s.merge(m, left_on="id", right_on="key", suffixes=("_score", "_monitor"))
    assert len(joined) == len(s) == len(m) > 500
    assert np.max(np.abs(joined.confidence_score - joined.confidence_monitor)) < 1e-9
    first = m.groupby("id").alert.idxmax()
    alerted = m.groupby("id").alert.any()
    assert alerted.sum() > 0
    assert (m.loc[first[alerted], "confidence"] < 0.2).all()


def test_prefixes_command_picks_lengths(tmp_path):
    out = tmp_path / "p.jsonl"
    runs = REPO / "sample_runs" / "arithmetic"
    assert main(["prefixes", str(runs), "--steps", "2", "--fractions", "50%", "--out", str(out)]) == 0
    ts, _ = htc.load(out)
    full, _ = htc.load(runs)
    S = dict(zip(full.ids, full.steps_per_trajectory))
    for tid, n in zip(ts.ids, ts.steps_per_trajectory):
        run, k = tid.rsplit("@", 1)
        assert int(k) == n and (n == 2 or n == int(np.ceil(S[run] / 2)))
    assert len(set(ts.ids)) == len(ts)


def test_early_warning_command(tmp_path, capsys):
    runs = REPO / "sample_runs" / "facts"
    assert main(["early-warning", str(runs), "--seeds", "1", "--fractions", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {r["method"] for r in d["curve"]} >= {"HTC-Reduced", "LastStep-TP", "GlobalTrace-TP"}
    assert {r["prefix"] for r in d["curve"]} >= {"step 1", "100% of steps"}


@pytest.mark.parametrize("argv,message", [
    (["early-warning", "sample_runs/facts", "--false-alarm", "1.5"], "rate in (0, 1)"),
    (["early-warning", "sample_runs/facts", "--max-steps", "0"], "positive integer"),
    (["prefixes", "sample_runs/facts", "--steps", "0", "--out", "x.jsonl"], "positive integers"),
])
def test_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_user_errors_without_traceback(tmp_path, capsys):
    assert main(["monitor", str(tmp_path / "missing.json"), "sample_runs/facts", "--out", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err      # names the missing file and the shipped models it is not
    assert "htc monitor: error: model" in err and "missing.json" in err and "gac-prefix" in err
    assert "Traceback" not in err
    t = _unlabeled(htc.load(REPO / "sample_runs" / "facts")[0])
    from htc_core.formats import native

    native.write(t, tmp_path / "u.jsonl")
    assert main(["early-warning", str(tmp_path / "u.jsonl")]) == 2
    assert "htc early-warning: error:" in capsys.readouterr().err
