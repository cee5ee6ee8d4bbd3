"""The inspector's trajectory view-model (htc_core.app.trajectory_view): folding, which steps open, the marked
lowest-probability tokens, the step fields of a real sample run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from htc_core.app.trajectory_view import FOLD_CHARS, preview, trajectory_view
from htc_core.formats import load, load_bytes

from conftest import REPO


def test_preview_never_cuts_silently():
    assert preview("short") == ("short", 0)
    long = "x" * (FOLD_CHARS + 50)
    head, rest = preview(long)
    assert len(head) + rest == len(long) and rest == 50
    lines = "\n".join(f"line {i}" for i in range(30))
    head, rest = preview(lines, lines=3)
    assert head == "line 0\nline 1\nline 2" and head + lines[len(head):] == lines and rest == len(lines) - len(head)
    assert preview(None) == ("", 0)


def _run(success, n_steps=4):
    steps = [{"name": f"s{j}", "logprobs": [-0.05, -1.5 + 0.1 * j, -0.2], "tokens": ["a", "b", "c"],
              "observation": f"obs {j}", "tool": {"name": "calc", "arguments": f"{j}+1"}} for j in range(n_steps)]
    return {"id": "r", "success": success, "answer": "4", "gold": "5", "steps": steps}


def test_lowest_tokens_marked_and_biggest_drops_open():
    ts, _ = load_bytes(json.dumps(_run(True)).encode(), format="native")
    after = pd.DataFrame({"confidence": [0.9, 0.5, 0.45, 0.7]})
    v = trajectory_view(ts, 0, after=after)
    assert [s.marked for s in v.steps] == [[1]] * 4           # 'b' is the least likely token of every step
    assert v.steps[0].lowest[0][0] == "b" and v.steps[0].lowest[0][1] == pytest.approx(np.exp(-1.5))
    assert [s.open for s in v.steps] == [False, True, True, True]   # two biggest drops + the last step
    assert v.steps[1].change == pytest.approx(-0.4) and v.steps[0].change is None
    assert v.steps[2].tool_call == "calc[2+1]" and v.steps[2].observation == "obs 2"
    assert v.verdict == "correct" and v.answered
    frame = v.to_frame()
    assert list(frame["step"]) == [1, 2, 3, 4] and "lowest_tokens" in frame


def test_a_failed_run_opens_every_step():
    ts, _ = load_bytes(json.dumps(_run(False)).encode(), format="native")
    v = trajectory_view(ts, 0, after=pd.DataFrame({"confidence": [0.9, 0.5, 0.45, 0.7]}))
    assert all(s.open for s in v.steps) and v.verdict == "wrong"


def test_bad_arguments_are_refused():
    ts, _ = load_bytes(json.dumps(_run(True)).encode(), format="native")
    with pytest.raises(ValueError, match="index must be"):
        trajectory_view(ts, 3)
    with pytest.raises(ValueError, match="ts must be a TraceSet"):
        trajectory_view([], 0)


def test_a_real_sample_run_carries_its_story():
    ts, _ = load(REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl")
    i = int(np.flatnonzero(ts.ids == "units-0004-SmolLM2-135M-greedy")[0])
    v = trajectory_view(ts, i)
    assert v.answer == "14.51" and v.gold == "29.03" and v.verdict == "wrong"
    assert v.steps[0].tool_call == "convert[32 pounds to kilograms]" and v.steps[0].observation == "14.51"
    assert v.steps[0].input.startswith("[system]\nYou solve questions step by step")
    assert v.steps[1].input == "Observation: 14.51" and v.steps[1].observation is None
    assert set(v.fields) >= {"input", "tool", "observation"}


FOREIGN = REPO / "tests" / "fixtures" / "foreign"


def test_logprobs_without_token_strings_show_text_and_a_strip_not_placeholders():
    from htc_core.app.trajectory_panel import strip_html

    ts, _ = load(FOREIGN / "cod_native.jsonl")
    v = trajectory_view(ts, 0)
    s = v.steps[0]
    assert not s.has_token_text and s.tokens == [] and len(s.probability) == s.n_tokens > 0
    assert s.output.endswith("Final Answer: 8") and v.answer == "8" and v.answered
    j = int(np.argmin(s.probability))
    assert j in s.marked
    assert (f"token {j + 1} of {s.n_tokens}", pytest.approx(float(s.probability.min()))) in s.lowest
    assert "▪" not in "".join(s.lowest_text) and "'" not in s.lowest_text[0]
    strip = strip_html(s.probability, s.marked)
    assert strip.count("<span") == s.n_tokens and "▪" not in strip and f"token {j + 1} of {s.n_tokens}" in strip
    assert "▪" not in v.to_frame()["lowest_tokens"].iloc[0]


def test_foreign_calllog_view_shows_thought_tool_and_observation():
    ts, _ = load(FOREIGN / "react_calllog.jsonl")
    v = trajectory_view(ts, 0)
    assert v.question == "What is 14 times 8?" and v.answer == "112"
    first = v.steps[0]
    assert first.output.startswith("Thought: I multiply.") and first.tool_call == 'calculator[14*8]'
    assert first.observation == "112" and first.has_token_text and first.lowest[0][0] in first.tokens
    assert {"tool", "observation", "input"} <= set(v.fields)
