"""The one walk over JSON values (``formats.walk.walk_values``) that the ATIF, container-format and smolagents
readers share: broken arrays and broken JSONL keep every good value and report the bad ones where they are."""

from __future__ import annotations

import json

import pytest

from htc_core.formats import load, walk
from htc_core.report import LoadReport

A = {"a": 1}
C = {"a": 3}


def _walk(tmp_path, text: str, array: bool = True, name: str = "x.json"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    rep, got = LoadReport(), []
    n = walk.walk_values(p, rep, str(p), lambda i, line, v: got.append((i, line, v)), array=array)
    return n, got, [(pr.line, pr.reason, pr.field, pr.value) for pr in rep.problems], rep


def test_clean_array_hands_on_every_element_with_its_line(tmp_path):
    n, got, problems, rep = _walk(tmp_path, '[\n {"a": 1},\n {"a": 3}\n]\n')
    assert n == 2 and got == [(0, 2, A), (1, 3, C)] and problems == [] and rep.lines_read == 2


def test_truncated_array_keeps_the_elements_before_the_cut(tmp_path):
    n, got, problems, _ = _walk(tmp_path, '[{"a": 1},\n{"a": 3},\n{"a": ')
    assert [v for _, _, v in got] == [A, C]
    assert len(problems) == 1 and problems[0][0] == 3 and "truncated" in problems[0][1]


def test_array_not_closed(tmp_path):
    n, got, problems, _ = _walk(tmp_path, '[{"a": 1},\n{"a": 3}\n')
    assert n == 2 and problems == [(3, "truncated JSON: the array is not closed", None, None)]


def test_trailing_garbage_after_the_array_is_reported_and_the_elements_kept(tmp_path):
    n, got, problems, _ = _walk(tmp_path, '[{"a": 1},\n{"a": 3}]\nthis is not JSON\n')
    assert n == 2
    assert len(problems) == 1 and problems[0][0] == 3 and "content after the closing ']'" in problems[0][1]
    assert "this is not" in problems[0][3]


def test_bad_value_in_the_middle_is_reported_with_its_line_and_the_next_elements_kept(tmp_path):
    n, got, problems, rep = _walk(tmp_path, '[{"a": 1},\n{"a": 1e999},\n{"a": "\\ud800"},\n{"a": 3}]')
    assert [(i, line, v) for i, line, v in got] == [(0, 1, A), (1, 4, C)]
    assert [(line, field) for line, _, field, _ in problems] == [(2, "a"), (3, "a")]
    assert "does not fit a float64" in problems[0][1] and "surrogate" in problems[1][1]
    assert rep.lines_read == 4  # the bad elements are counted too


def test_syntax_error_in_the_middle_keeps_what_came_before(tmp_path):
    n, got, problems, _ = _walk(tmp_path, '[{"a": 1},\n{"a" 2},\n{"a": 3}]')
    assert [v for _, _, v in got] == [A]
    assert len(problems) == 1 and problems[0][0] == 2 and "malformed JSON" in problems[0][1]


def test_missing_comma_between_elements(tmp_path):
    n, got, problems, _ = _walk(tmp_path, '[{"a": 1}\n{"a": 3}]')
    assert n == 1 and problems[0][0] == 2 and "expected ',' or ']'" in problems[0][1]


def test_an_error_while_handling_one_element_costs_only_that_element(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('[{"a": 1},\n{"a": 2},\n{"a": 3}]')
    rep, got = LoadReport(), []

    def each(i, line, v):
        if v["a"] == 2:
            raise KeyError("boom")
        got.append(v)

    assert walk.walk_values(p, rep, "x.json", each, array=True) == 3
    assert got == [A, C]
    assert [(pr.line, "could not be read" in pr.reason) for pr in rep.problems] == [(2, True)]


def test_jsonl_walk_reports_a_bad_line_and_goes_on(tmp_path):
    n, got, problems, rep = _walk(tmp_path, '{"a": 1}\n{"a": \n\n{"a": 3}\n', array=False, name="x.jsonl")
    assert [(i, line, v) for i, line, v in got] == [(0, 1, A), (1, 4, C)]
    assert [line for line, *_ in problems] == [2] and "truncated" in problems[0][1]
    assert rep.lines_read == 4


def test_on_error_hook_sees_whether_the_walk_broke_off(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('[{"a": 1},\n{"a": 1e999},\n{"a": 3},\n{"a": ')
    seen = []
    walk.walk_values(p, LoadReport(), "x.json", lambda *a: None, array=True,
                     on_error=lambda e, broken: seen.append((e.line, broken)))
    assert seen == [(2, False), (4, True)]


# --------------------------------------------------------------- the readers that use it
def _atif(i: int) -> dict:
    return {"schema_version": "ATIF-v1.2", "session_id": f"s{i}", "agent": {"name": "a", "version": "1"},
            "steps": [{"step_id": 1, "source": "user", "message": "q"},
                      {"step_id": 2, "source": "agent", "message": "x",
                       "metrics": {"logprobs": [-0.1, -0.2]}}]}


@pytest.mark.parametrize("middle, broken", [('{"schema_version": 1e999}', False), ('{"schema_version" 1}', True)])
def test_atif_array_with_a_bad_element_in_the_middle(tmp_path, middle, broken):
    p = tmp_path / "runs.json"
    p.write_text("[" + json.dumps(_atif(0)) + ",\n" + middle + ",\n" + json.dumps(_atif(2)) + "]")
    ts, rep = load(p, format="atif")
    errors = [pr for pr in rep.problems if pr.severity == "error"]
    assert [pr.line for pr in errors] == [2]
    assert list(ts.ids) == (["s0"] if broken else ["s0", "s2"])  # after a syntax break nothing can be located


def test_chat_completions_array_cut_short_keeps_the_calls_before(tmp_path):
    resp = {"id": "r", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"},
         "logprobs": {"content": [{"token": "hi", "logprob": -0.1, "top_logprobs": []}]}}]}
    p = tmp_path / "traj.json"
    p.write_text("[" + json.dumps(resp) + ",\n" + json.dumps(resp)[:40])
    ts, rep = load(p, format="openai-chat")
    assert ts.n_trajectories == 0  # one trajectory, incomplete: rejected, and said so with the line
    assert [(pr.line, "the trajectory is incomplete" in pr.reason) for pr in rep.problems] == [(2, True)]
