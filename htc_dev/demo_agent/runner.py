"""A ReAct-style agent loop (thought -> tool call -> observation -> ... -> final answer).

One LLM generation per step; every call is made through an OpenAI-compatible
client with ``logprobs=True, top_logprobs=k`` and handed to a recorder. After
the final answer the agent is asked for a verbalized confidence (stored on
the trajectory, not as a step). Labels come from comparing the final answer
with the gold answer.
"""

from __future__ import annotations

import re
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

from .tasks import Task, check_answer
from .tools import run_tool

TOOL_OF_FAMILY = {"arithmetic": "calculator", "units": "convert", "facts": "search", "strings": "python",
                  "docs": "lookup", "lists": "code"}

TOOL_HELP = {
    "calculator": "calculator[expression] evaluates arithmetic, e.g. calculator[12 * 7 + 3]",
    "convert": "convert[value unit to unit] converts units (km, m, cm, mi, ft, in, kg, g, lb, l, ml, gal, h, min, s, day), "
               "e.g. convert[3 km to m]",
    "search": "search[keyword] looks up a country in a fact table (capital, continent, currency, language), "
              "e.g. search[France]",
    "python": "python[expression] runs string functions: reverse(s), upper(s), lower(s), len(s), count(s, c), "
              "e.g. python[reverse('cat')]",
    "lookup": "lookup[keywords] searches a collection of documents about towns and returns the best passage, "
              "e.g. lookup[Arlenford mayor]",
    "code": "code[snippet] runs a short Python snippet on lists of numbers (sum, max, min, sorted, len, round; "
            "statements separated by ';') and returns the last value, e.g. code[xs = [3, 8, 5]; max(xs)]",
}

EXAMPLES = {
    "calculator": [("A farmer has 6 crates with 14 eggs in each crate. How many eggs are there?",
                    "I need to multiply 6 by 14.", "calculator[6 * 14]", "84", "84"),
                   ("Sam had 50 stamps, bought 12 more and then gave away 9. How many stamps are left?",
                    "I need to add 12 and subtract 9.", "calculator[50 + 12 - 9]", "53", "53")],
    "convert": [("How many meters are in 3 kilometers?", "I need to convert km to m.", "convert[3 km to m]",
                 "3000", "3000"),
                ("How many kilograms are in 10 pounds?", "I need to convert lb to kg.", "convert[10 lb to kg]",
                 "4.54", "4.54")],
    "search": [("What is the currency of Japan?", "I should look up Japan.", "search[Japan]",
                "Japan: capital Tokyo; continent Asia; currency yen; language Japanese.", "yen"),
               ("What is the capital of Kenya?", "I should look up Kenya.", "search[Kenya]",
                "Kenya: capital Nairobi; continent Africa; currency shilling; language Swahili.", "Nairobi")],
    "python": [("What is the word 'cat' spelled backwards?", "I can reverse the string.", "python[reverse('cat')]",
                "tac", "tac"),
               ("How many letters are in 'sunflower'?", "I can count the letters.", "python[len('sunflower')]",
                "9", "9")],
    "lookup": [("What is Brackwell known for?", "I should search the documents for Brackwell.",
                "lookup[Brackwell known for]",
                "Brackwell is a town in the western coast, founded in 1811 on the river Tamber. It has 9200 "
                "inhabitants, its mayor is Owen Pryce, and it is known for its wool.", "wool"),
               ("In which year was Millbrook founded?", "I should search the documents for Millbrook.",
                "lookup[Millbrook founded]",
                "Millbrook is a town in the central plain, founded in 1884 on the river Ember. It has 7400 "
                "inhabitants, its mayor is Greta Novak, and it is known for its flour.", "1884")],
    "code": [("What is the sum of the numbers 12, 7, 30?", "I can add them with a snippet.",
              "code[sum([12, 7, 30])]", "49", "49"),
             ("What is the smallest of the numbers 44, 18, 61, 25?", "I can take the minimum.",
              "code[xs = [44, 18, 61, 25]; min(xs)]", "18", "18")],
}

ACTION = re.compile(r"Action:\s*([A-Za-z_]+)\s*\[(.*?)\]", re.S)
FINAL = re.compile(r"Final Answer:\s*(.+)", re.I)
CONF_NUM = re.compile(r"(\d{1,3}(?:\.\d+)?)")
#: what the agent is told after a step with neither an action nor a final answer
INVALID_REPLY = "Please reply with 'Action: <tool>[<input>]' or 'Final Answer: <answer>'."


def parse_action(text: str) -> tuple[str, str] | None:
    """(tool, argument) of the first ``Action: tool[argument]`` in ``text``, or None. The argument ends at the
    first ``]``, except for the ``code`` tool, whose snippets hold lists: there it ends at the ``]`` that
    balances the opening ``[`` (or at the last ``]`` of the text when none balances)."""
    m = ACTION.search(text)
    if m is None:
        return None
    name, arg = m.group(1), m.group(2)
    if name.lower() == "code":
        depth, start = 1, m.start(2)
        for i in range(start, len(text)):
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            if depth == 0:
                return name, text[start:i]
        return name, text[start:text.rindex("]")]
    return name, arg


def system_prompt(tool: str) -> str:
    return ("You solve questions step by step with one tool.\n"
            f"Tool: {TOOL_HELP[tool]}\n"
            "Reply in this format:\nThought: <your reasoning>\nAction: <tool>[<input>]\n"
            "When you see the Observation, reply:\nFinal Answer: <answer>")


def few_shot(tool: str) -> list[dict]:
    msgs: list[dict] = []
    for q, thought, action, obs, ans in EXAMPLES[tool]:
        msgs += [{"role": "user", "content": f"Question: {q}"},
                 {"role": "assistant", "content": f"Thought: {thought}\nAction: {action}"},
                 {"role": "user", "content": f"Observation: {obs}"},
                 {"role": "assistant", "content": f"Final Answer: {ans}"}]
    return msgs


@dataclass
class AgentSettings:
    max_steps: int = 4
    max_tokens: int = 48
    temperature: float = 0.0
    top_p: float = 1.0
    top_logprobs: int = 5
    seed: int = 42
    ask_confidence: bool = True


@dataclass
class AgentRun:
    task: Task
    steps: list[dict] = field(default_factory=list)        # {"name", "text", "response"}
    answer: str | None = None
    success: bool = False
    verbalized_confidence: float | None = None
    confidence_text: str | None = None
    seconds: float = 0.0
    stop_reason: str = ""


def _content(resp: dict) -> str:
    return (resp["choices"][0]["message"].get("content") or "").strip()


def step_seed(seed: int, task_id: str, step: int) -> int:
    """Sampling seed of one LLM call: fixed by the run seed, the task and the step, so runs are reproducible
    and different tasks do not share their random draws (only matters when temperature > 0)."""
    return (seed + 1000 * step + zlib.crc32(task_id.encode()) * 7919) % 2**32


def run_agent(client: Any, task: Task, settings: AgentSettings, *, model: str = "local",
              on_call: Callable[[dict, dict, int], None] | None = None,
              confidence_client: Any = None) -> AgentRun:
    """Drive one task to a final answer (or the step limit); returns the run with raw responses.

    ``confidence_client`` (default ``client``) asks the verbalized-confidence question after the final
    answer; pass the unrecorded client when ``client`` is wrapped by a ``Recorder``, so that question is
    stored on the trajectory (``run.verbalized_confidence``) and not recorded as an agent step.
    """
    tool = TOOL_OF_FAMILY[task.family]
    messages = [{"role": "system", "content": system_prompt(tool)}, *few_shot(tool),
                {"role": "user", "content": f"Question: {task.question}"}]
    run = AgentRun(task)
    t0 = time.perf_counter()
    for step in range(settings.max_steps):
        request = dict(model=model, messages=list(messages), max_tokens=settings.max_tokens,
                       temperature=settings.temperature, top_p=settings.top_p,
                       seed=step_seed(settings.seed, task.id, step), stop=["Observation:", "\nQuestion:"],
                       logprobs=True, top_logprobs=settings.top_logprobs)
        resp = client.chat.completions.create(**request)
        if on_call is not None:
            on_call(request, resp, step)
        text = _content(resp)
        messages.append({"role": "assistant", "content": text})
        final = FINAL.search(text)
        action = parse_action(text)
        kind = "final" if final else ("action" if action else "invalid")
        run.steps.append({"name": kind, "text": text, "response": resp})
        if final:
            run.answer = final.group(1).strip().splitlines()[0].strip()
            run.stop_reason = "final_answer"
            break
        if action:
            obs = run_tool(*action)
        else:
            obs = INVALID_REPLY
        messages.append({"role": "user", "content": f"Observation: {obs}"})
    else:
        run.stop_reason = "step_limit"
    run.success = check_answer(run.answer, task)
    if settings.ask_confidence and run.answer is not None:
        messages.append({"role": "user", "content": "How confident are you that your final answer is correct? "
                                                    "Reply with only a number from 0 to 100."})
        asker = client if confidence_client is None else confidence_client
        resp = asker.chat.completions.create(model=model, messages=messages, max_tokens=6, temperature=0.0,
                                              seed=settings.seed, logprobs=False)
        run.confidence_text = _content(resp)
        m = CONF_NUM.search(run.confidence_text)
        if m:
            v = float(m.group(1))
            run.verbalized_confidence = min(v, 100.0) / 100.0
    run.seconds = time.perf_counter() - t0
    return run
