"""The agent runner's real tools, task generators and answer checker (no model needed)."""

from __future__ import annotations

import pytest

from htc_core.demo_agent.runner import ACTION, FINAL, TOOL_OF_FAMILY, few_shot, system_prompt
from htc_core.demo_agent.tasks import FAMILIES, check_answer, make_tasks
from htc_core.demo_agent.tools import calculator, converter, python_sandbox, run_tool, search


def test_calculator():
    assert calculator("23 * 17") == "391"
    assert calculator("(4 + 5) / 2") == "4.5"
    assert calculator("2 ** 10") == "1024"
    assert calculator("1 / 0") == "Error: division by zero"
    assert calculator("__import__('os')").startswith("Error")
    assert calculator("9 ** 999999").startswith("Error")


def test_converter_and_search():
    assert converter("3 km to m") == "3000"
    assert converter("10 lb to kg") == "4.54"
    assert converter("2 kg to km").startswith("Error: cannot convert mass")
    assert converter("three km to m").startswith("Error: use the form")
    assert "capital Lima" in search("Peru")
    assert search("Atlantis").startswith("No entry")


@pytest.mark.parametrize("expr,out", [("reverse('cat')", "tac"), ("len('banana')", "6"), ("upper('ab')", "AB"),
                                      ("count('banana', 'a')", "3"), ("'abc'[1:]", "bc")])
def test_python_sandbox(expr, out):
    assert python_sandbox(expr) == out


@pytest.mark.parametrize("expr", ["__import__('os').system('id')", "open('/etc/passwd').read()",
                                  "().__class__.__bases__", "[x for x in 'ab']", "'a' * 10**9"])
def test_python_sandbox_refuses(expr):
    assert python_sandbox(expr).startswith("Error")


def test_unknown_tool():
    assert run_tool("shell", "ls").startswith("Error: unknown tool")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tasks_are_deterministic_and_gold_is_checkable(family):
    a = make_tasks(family, 40, seed=3)
    assert a == make_tasks(family, 40, seed=3)
    assert a != make_tasks(family, 40, seed=4)
    assert len({t.id for t in a}) == 40
    for t in a:
        assert check_answer(t.gold, t), t
        assert not check_answer(None, t) and not check_answer("", t)


def test_gold_answers_follow_from_the_tools():
    for t in make_tasks("facts", 30):
        country = t.question.rstrip("?").split(" of ")[-1].split(" is ")[-1]
        assert t.gold in search(country)


def test_checker_numbers_and_text():
    t = make_tasks("units", 1)[0]
    assert check_answer(f"The answer is {t.gold} units", t)
    fact = next(t for t in make_tasks("facts", 50) if t.gold == "Buenos Aires" or " " not in t.gold)
    assert check_answer(fact.gold.lower() + ".", fact)
    assert not check_answer("Paris" if fact.gold != "Paris" else "Rome", fact)


def test_prompt_examples_parse_with_the_runners_own_patterns():
    for family, tool in TOOL_OF_FAMILY.items():
        assert tool in system_prompt(tool)
        msgs = few_shot(tool)
        actions = [m["content"] for m in msgs if m["role"] == "assistant" and "Action:" in m["content"]]
        finals = [m["content"] for m in msgs if m["role"] == "assistant" and "Final Answer" in m["content"]]
        for a in actions:
            m = ACTION.search(a)
            assert m and m.group(1) == tool
            assert not run_tool(m.group(1), m.group(2)).startswith("Error")
        assert all(FINAL.search(f) for f in finals)
