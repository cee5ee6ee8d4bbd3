"""Structural flags (htc_core.explain.flags): plain facts about a run, unknown when the data cannot decide."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from htc_core.explain import FLAGS, structural_flags
from htc_core.formats import load

from conftest import REPO, make_traj, write_jsonl

SAMPLE = REPO / "sample_runs"


def _traj(tid, texts, *, answer="42", gold="42", meta=None, success=True):
    t = make_traj(tid, [([-0.1, -0.2], None) for _ in texts], success=success, answer=answer, gold=gold,
                  metadata=meta or {})
    for step, text in zip(t["steps"], texts):
        if text is not None:
            step["text"] = text
    return t


def test_each_flag_on_hand_made_runs(tmp_path):
    rows = [
        _traj("clean", ["Thought: add.\nAction: calculator[40 + 2]", "Final Answer: 42"],
              meta={"stop_reason": "final_answer"}),
        _traj("no-answer", ["Thought: hmm", "Thought: still"], answer=None, meta={"stop_reason": "step_limit"}),
        _traj("repeat", ["Action: search[Paris]", "Action: search[paris]", "Final Answer: 42"]),
        _traj("empty", ["Thought: x", "   "]),
        _traj("format", ["Final Answer: forty-two"], answer="forty-two"),
        _traj("yes-no", ["Final Answer: maybe"], answer="maybe", gold="yes"),
        _traj("unknown", [None, None], answer="a", gold=None),
        _traj("ok-finish", ["Final Answer: 42"], meta={"finish_reason": "stop"}),
        _traj("cut", ["Final Answer: 4"], answer="4", meta={"finish_reason": "length"}),
    ]
    ts, rep = load(write_jsonl(tmp_path / "runs.jsonl", rows))
    assert rep.ok and len(ts) == len(rows)
    fl = structural_flags(ts)
    f = fl.frame.set_axis(ts.ids)
    assert list(f.columns) == list(FLAGS)
    assert not f.loc["clean"].fillna(False).any()
    assert f.loc["no-answer", "no_final_answer"] and f.loc["no-answer", "step_limit"]
    assert f.loc["repeat", "repeated_action"] and not f.loc["clean", "repeated_action"]
    assert f.loc["empty", "empty_output"]
    assert f.loc["format", "answer_format"] and f.loc["yes-no", "answer_format"]
    assert f.loc["cut", "step_limit"] and not f.loc["ok-finish", "step_limit"]
    # what the data cannot decide is unknown, never False
    assert f.loc["unknown", ["repeated_action", "empty_output", "answer_format"]].isna().all()
    assert pd.isna(f.loc["clean", "tool_error"]) and "tool_error" not in fl.available
    i = list(ts.ids).index("no-answer")
    assert fl.of(i) == [FLAGS["no_final_answer"], FLAGS["step_limit"]]


def test_flags_on_the_sample_runs_mark_failures():
    ts, _ = load(SAMPLE)
    fl = structural_flags(ts)
    assert len(fl.frame) == len(ts)
    counts = fl.counts()
    assert counts["no_final_answer"] > 0 and counts["step_limit"] > 0 and counts["repeated_action"] > 0
    y = ts.labels
    for flag in ("no_final_answer", "step_limit", "repeated_action"):
        hit = fl.frame[flag].fillna(False).to_numpy(bool)
        assert np.nanmean(y[hit]) < np.nanmean(y[~hit]), flag   # flagged runs fail more often


def test_flags_on_real_runs_of_others(uala_dir):
    ts, _ = load(uala_dir)
    fl = structural_flags(ts)
    hit = fl.frame["no_final_answer"].fillna(False).to_numpy(bool)
    assert hit.sum() >= 1 and np.nanmean(ts.labels[hit]) == 0.0
    assert fl.frame["step_limit"].isna().all()          # UALA records no stop reason: unknown, not False


def test_metadata_that_is_not_an_object_is_ignored(tmp_path):
    t = _traj("odd", ["Final Answer: 42"])
    t["metadata"] = {"stop_reason": None, "note": json.dumps([1, 2])}
    ts, _ = load(write_jsonl(tmp_path / "odd.jsonl", [t]))
    fl = structural_flags(ts)
    assert pd.isna(fl.frame.loc[0, "step_limit"])


def test_worst_mistakes_on_out_of_fold_confidences():
    from htc_core.calibration import evaluate
    from htc_core.explain import worst_mistakes

    ts, _ = load(SAMPLE / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl")
    res = evaluate(ts, seeds=1, methods=["HTC-Reduced"])
    oof = res.oof["HTC-Reduced"]
    fl = structural_flags(ts)
    m = worst_mistakes(ts.meta, ts.labels, oof, method="HTC-Reduced", flags=fl, n=5)
    fails, succ = m.confident_failures, m.doubted_successes
    assert len(fails) == 5 and len(succ) == 5
    assert (fails["success"] == 0).all() and (succ["success"] == 1).all()
    assert fails["confidence"].is_monotonic_decreasing and succ["confidence"].is_monotonic_increasing
    worst_fail = np.max(oof[ts.labels == 0])
    assert fails["confidence"].iloc[0] == worst_fail
    assert list(fails["id"]) == list(ts.ids[fails["position"]])
    assert "flags" in fails.columns and len(m.to_frame()) == 10


def test_exported_reasons_equal_the_inspectors_for_every_run(uala_run_a):
    """explain_runs computes all runs at once; its words must be explain_trajectory's, run by run."""
    from htc_core.calibration import HTCCalibrator
    from htc_core.explain import explain_runs, explain_trajectory
    from htc_core.features import extract

    for path in (uala_run_a, SAMPLE / "units" / "units_SmolLM2-135M-greedy.jsonl"):
        ts, _ = load(path)
        fm = extract(ts)
        model = HTCCalibrator(variant="full", alphas=(1.0,)).fit(fm, ts.labels)
        table = explain_runs(ts, fm, model)
        assert list(table.columns[:4]) == ["flags", "reason_1", "reason_2", "reason_3"]
        assert list(table.columns[4:]) == list(fm.names) and len(table) == len(ts)
        for i in range(0, len(ts), 37):
            one = explain_trajectory(model, fm, i, labels=ts.labels, groups=ts.meta["dataset"])
            assert [r for r in table.loc[i, ["reason_1", "reason_2", "reason_3"]] if r] == one.reasons
        assert explain_runs(ts, fm).columns[1] == fm.names[0]          # no model: flags and features only
