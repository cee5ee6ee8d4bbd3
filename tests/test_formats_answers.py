"""The shared answer/question extractor (``formats.answers``) and the tool lines of call logs, on foreign-shaped
files (``tests/fixtures/foreign``, written by ``make_foreign.py``), not only on ``sample_runs/``."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, write_jsonl
from htc_core.explain import structural_flags
from htc_core.explain.flags import structural_flags_loop
from htc_core.formats import detect, load
from htc_core.formats.answers import (answer_from_text, answer_from_tool, answer_of_steps, question_of_request,
                                      run_ended_without_answer)

FOREIGN = REPO / "tests" / "fixtures" / "foreign"


@pytest.mark.parametrize("text, want", [
    ("Thought: done.\nAnswer: 112", "112"),
    ("blah\nFinal Answer: 8", "8"),
    ("**Final Answer:** Paris.", "Paris"),
    ("Answer: first\nthen more\nAnswer: second", "second"),
    ("so \\boxed{\\frac{1}{2}} holds", "\\frac{1}{2}"),
    ("\\boxed{3} then \\boxed{4}", "4"),
    ("work\n#### 42", "42"),
    ("Hence the answer is Washington D.C.", "Washington D.C."),
    ("The final answer is 17.", "17"),
    ("Action: Finish[Argentine]", "Argentine"),
    ("Thought: search.\nAction: search[x]", None),
    ("", None),
    ("I have no idea", None),
])
def test_answer_from_text(text, want):
    assert answer_from_text(text) == want


def test_answer_from_tool_calls():
    assert answer_from_tool('{"name":"final_answer","arguments":{"answer":"Canberra"}}') == "Canberra"
    assert answer_from_tool({"name": "Final-Answer", "arguments": '{"result": 12}'}) == "12"
    assert answer_from_tool({"name": "finish", "arguments": "yes"}) == "yes"
    assert answer_from_tool({"name": "search", "arguments": {"q": "x"}}) is None
    # the last tool call decides: a final_answer tool beats the text, a later plain tool call hides earlier ones
    got = answer_of_steps(["Answer: 1"], ['{"name":"final_answer","arguments":"2"}'])
    assert got == ("2", "final_answer tool call")
    assert answer_of_steps(["Answer: 1", "Action: x"], ['{"name":"final_answer","arguments":"2"}',
                                                         '{"name":"search","arguments":"q"}']) == (None, None)
    assert answer_of_steps(["Answer: 1"], [None]) == ("1", "last step's text")


def test_question_of_request():
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": [{"type": "text", "text": "Q?"}]},
            {"role": "user", "content": "later"}]
    assert question_of_request({"messages": msgs}) == "Q?"
    assert question_of_request({"prompt": "P"}) == "P"
    assert question_of_request({"input": [{"role": "user", "content": "R?"}]}) == "R?"
    assert question_of_request(None) is None and question_of_request({"messages": []}) is None


def test_run_ended_without_answer_is_true_only_when_it_really_did():
    assert run_ended_without_answer("Action: search[x]", None) is True
    assert run_ended_without_answer("x", '{"name":"search","arguments":"q"}') is True
    assert run_ended_without_answer("   ", None) is True
    assert run_ended_without_answer("I think it is seven", None) is None       # undecidable
    assert run_ended_without_answer(None, None) is None
    assert run_ended_without_answer("Action: Finish[]", None) is None


def test_foreign_calllog_keeps_observations_questions_and_answers():
    path = FOREIGN / "react_calllog.jsonl"
    assert detect(path)[0] == "openai-calllog"
    ts, rep = load(path)
    assert rep.rejected == 0 and rep.tool_lines == 4 and rep.skipped_lines == 0, rep.summary()
    m = ts.meta.set_index("id")
    assert m.loc["r1", "question"] == "What is 14 times 8?" and m.loc["r1", "answer"] == "112"
    assert m.loc["r2", "answer"] == "Canberra" and pd.isna(m.loc["r3", "answer"])
    assert json.loads(m.loc["r1", "metadata"]) == {"answer_source": "last step's text"}
    obs = list(ts.step_field("observation"))
    tools = [None if t is None else json.loads(t) for t in ts.step_field("tool")]
    assert obs == ["112", None, "Canberra is the capital city of Australia.", None, "Error: bad syntax", "24"]
    assert tools[0] == {"name": "calculator", "arguments": "14*8"} and tools[1] is None
    assert tools[5] == {"name": "calculator", "arguments": "3 * 8"}
    assert ts.k == 5 and ts.tokens is not None
    fl = structural_flags(ts).frame.set_axis(ts.ids)
    assert list(fl["no_final_answer"]) == [False, False, True]          # r3 stopped after a tool call
    assert fl.loc["r3", "tool_error"] and not fl.loc["r1", "tool_error"]
    pd.testing.assert_frame_equal(structural_flags_loop(ts).frame, structural_flags(ts).frame)


def test_foreign_native_without_token_strings_states_its_answers():
    ts, rep = load(FOREIGN / "cod_native.jsonl")
    assert rep.rejected == 0 and ts.tokens is None
    assert list(ts.meta["answer"].where(ts.meta["answer"].notna(), None)) == ["8", "\\frac{12}{1}", "42", "42", None]
    fl = structural_flags(ts).frame
    assert list(fl["no_final_answer"].iloc[:4]) == [False] * 4
    assert pd.isna(fl["no_final_answer"].iloc[4])                  # states no answer, but no action either: unknown
    pd.testing.assert_frame_equal(structural_flags_loop(ts).frame, fl)


def test_explicit_answer_fields_win(tmp_path):
    rows = [{"id": "a", "answer": "explicit", "steps": [{"text": "Answer: from text", "logprobs": [-0.1]}]},
            {"id": "b", "final_answer": "fa", "steps": [{"text": "Answer: from text", "logprobs": [-0.1]}]},
            {"id": "c", "steps": [{"text": "Answer: from text", "logprobs": [-0.1]}]}]
    ts, _ = load(write_jsonl(tmp_path / "r.jsonl", rows))
    assert list(ts.meta["answer"]) == ["explicit", "fa", "from text"]
    labels = tmp_path / "labels.csv"
    labels.write_text("id,answer\nc,from labels\n")
    ts, _ = load(tmp_path / "r.jsonl", labels=labels)
    assert ts.meta["answer"][2] == "from labels"


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_extractor_never_fails_and_returns_stripped_text(text):
    ans = answer_from_text(text)
    assert ans is None or (isinstance(ans, str) and ans == ans.strip() and ans)
    assert run_ended_without_answer(text, None) in (True, None)


def test_tool_lines_numbered_like_the_next_call_attach_to_the_call_before(tmp_path):
    src = [json.loads(x) for x in (FOREIGN / "react_calllog.jsonl").read_text().splitlines()]
    run = [d for d in src if d["trajectory_id"] == "r1"]          # call 0, tool line 0, call 1
    run[1]["step"] = 1                                             # this logger numbers the tool line like call 1
    ts, rep = load(write_jsonl(tmp_path / "log.jsonl", run))
    assert list(ts.step_field("observation")) == ["112", None] and rep.tool_lines == 1
    # tool lines gathered at the end of the file still go to their own step
    moved = [run[0], run[2], {**run[1], "step": 0}]
    ts, _ = load(write_jsonl(tmp_path / "log2.jsonl", moved))
    assert list(ts.step_field("observation")) == ["112", None]
