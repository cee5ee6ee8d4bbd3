"""The column-wise structural flags equal the per-run reference (``flags.structural_flags_loop``) run for run: on the sample
runs, on the shared UALA runs, and on hostile hand-made and generated texts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.explain.flags import structural_flags
from htc_core.explain.flags import structural_flags_loop
from htc_core.formats import load
from htc_core.synthetic import synthetic_trace_set
from htc_core.traces import concat

from conftest import REPO, UALA


def _same(ts):
    fast, ref = structural_flags(ts), structural_flags_loop(ts)
    pd.testing.assert_frame_equal(fast.frame, ref.frame)
    assert fast.available == ref.available
    return fast


def test_identical_on_the_sample_runs_file_by_file_and_together():
    files = sorted((REPO / "sample_runs").rglob("*.jsonl"))
    files = [f for f in files if not f.name.endswith(".labels.csv")]
    assert len(files) >= 8
    for f in files:
        ts, _ = load(f)
        _same(ts)
    ts, _ = load(REPO / "sample_runs")
    fl = _same(ts)
    assert fl.counts().sum() > 100          # the sample runs raise every kind of flag: a real comparison


@pytest.mark.skipif(not UALA.is_dir(), reason="the shared UALA data is not mounted")
def test_identical_on_the_shared_uala_runs():
    ts, _ = load(UALA)
    fl = _same(ts)
    assert fl.frame["repeated_action"].sum() > 0


def _hand_made(texts_per_run, *, answers, golds, metas, notes=None):
    n = len(texts_per_run)
    steps = [len(t) for t in texts_per_run]
    ts = synthetic_trace_set(n, 1, 2, k=0, seed=0)
    # rebuild with the wanted step counts (0 allowed): one token per step
    n_steps = sum(steps)
    from htc_core.traces import TraceSet

    meta = ts.meta.copy()
    meta["answer"] = pd.Series(answers, dtype=object)
    meta["gold"] = pd.Series(golds, dtype=object)
    meta["metadata"] = pd.Series(metas, dtype=object)
    flat = np.empty(n_steps, dtype=object)
    flat[:] = [t for run in texts_per_run for t in run]
    fields = {}
    if notes is not None:
        obs = np.empty(n_steps, dtype=object)
        obs[:] = [t for run in notes for t in run]
        fields["observation"] = obs
    return TraceSet(logprob=np.full(n_steps, -0.1), top_logprobs=np.zeros((n_steps, 0)),
                    step_offsets=np.arange(n_steps + 1), traj_offsets=np.concatenate([[0], np.cumsum(steps)]),
                    meta=meta, step_text=flat, step_fields=fields)


def test_identical_on_hostile_hand_made_runs():
    runs = [
        [],                                                    # no steps at all
        [None], ["only one"], ["  ", None], [" \u2003 ", "x"],  # unknown / blank (Unicode space) / too few
        ["Action: search[a]", "action 2 : SEARCH[A] "],        # repeated action, case and numbering
        ["Action:\n  go", "Action:  go"],                      # the action after a line break
        ["Thought: a\nAction: x\nAction: x"],                  # a repeat inside one step
        ["Same   text", "same text", None],                   # no Action: lines, whitespace-normalized
        ["\x1c", "a"], ["\x00Action: q", "Action: q\x00"],      # control characters
        ["Action: ı", "ACTİON: ı"],                            # non-ASCII case folding
        ["Final Answer: 42", "Final Answer: 42"],
    ]
    n = len(runs)
    answers = ["42", None, float("nan"), "  ", 1, True, "yes.", "no", "x" * 60, "3.5%", "$1,000", "maybe", 42][:n]
    golds = ["42", "42", "1", None, "1", "1", "yes", "Yes", "y", "12", "1000", "true", 42.0][:n]
    metas = ["{}", '{"stop_reason": "max_steps"}', {"finish_reason": "length"}, "not json", '["list"]',
             '{"status": null}', '{"status": "ok"}', "", None, '{"termination": "Timeout"}', "{}", "{}",
             {"stopped_by": 3}][:n]
    notes = [[None] * len(r) for r in runs]
    notes[5] = ["Traceback (most recent call last)", None]
    notes[6] = ["no errors here", "errors"]
    notes[7] = ["ERROR: boom"]
    ts = _hand_made(runs, answers=answers, golds=golds, metas=metas, notes=notes)
    fl = _same(ts)
    assert fl.frame["repeated_action"].sum() >= 3 and fl.frame["tool_error"].sum() == 2


_TEXT = st.lists(st.sampled_from(["Action", "action", ":", " ", "\n", "\t", "x", "X", "2", "error", "Error",
                                  "\u2003", "Final Answer", "ı"]), max_size=8).map("".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), _TEXT), max_size=4), min_size=1, max_size=8),
       st.data())
def test_identical_on_generated_texts(runs, data):
    n = len(runs)
    value = st.one_of(st.none(), _TEXT, st.sampled_from(["yes", "No", "12", "1,5", "$3"]))
    answers = data.draw(st.lists(value, min_size=n, max_size=n))
    golds = data.draw(st.lists(value, min_size=n, max_size=n))
    metas = data.draw(st.lists(st.sampled_from(["{}", '{"stop_reason": "length"}', '{"status": "done"}', None]),
                               min_size=n, max_size=n))
    notes = [data.draw(st.lists(st.one_of(st.none(), _TEXT), min_size=len(r), max_size=len(r))) for r in runs]
    _same(_hand_made(runs, answers=answers, golds=golds, metas=metas, notes=notes))


def test_identical_on_synthetic_runs_without_text_and_on_a_mix():
    syn = synthetic_trace_set(3000, 5, 4, k=0, seed=3)
    fl = _same(syn)
    # no answers and no step texts: not even a missing answer is decidable (the run may have stated one)
    assert fl.available == []
    ts, _ = load(REPO / "sample_runs" / "units")
    _same(concat([syn.take(np.arange(100)), ts, syn.take(np.arange(5))]))
