"""The one answer and question extractor every reader shares.

A run's final answer, in this order:

1. an explicit field: ``answer`` (or ``final_answer``) on the record, or in a labels file (joined later,
   which overrides);
2. a final-answer tool call of the last step that called a tool (``final_answer``, ``finish``, ``submit``,
   ... with its argument, or ReAct's ``Finish[...]`` action);
3. the last step's text: the last ``Final Answer: ...`` / ``Answer: ...`` line, ``\\boxed{...}``,
   ``#### 42`` (GSM8K), or "the answer is ..." sentence.

The question is an explicit field, else the first user message of the first call (chat messages), else the
prompt of a completions request.

Nothing is guessed beyond these: a step whose text states none of them gives no answer, and
:func:`run_ended_without_answer` says whether such a run really has none (it ended on a tool call or an action,
or on an empty step) or cannot be decided from the text (``None``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .common import text_of

__all__ = ["ANSWER_KEYS", "ANSWER_TOOLS", "answer_from_text", "answer_from_tool", "answer_of_steps",
           "question_of_messages", "question_of_request", "run_ended_without_answer"]

# record keys that hold a run's final answer (first found wins)
ANSWER_KEYS = ("answer", "final_answer")
# tool names that end a run with their argument as the answer (compared lower-cased, ``-``/space as ``_``)
ANSWER_TOOLS = frozenset({"final_answer", "finalanswer", "final", "answer", "finish", "submit", "submit_answer",
                          "return_answer", "respond", "final_response"})

_LINE = re.compile(r"^[ \t>*_#-]*(?:final[ \t]+answer|answer)[ \t]*\**[ \t]*[:：][ \t]*\**[ \t]*(.+?)[ \t]*$",
                   re.IGNORECASE | re.MULTILINE)
_BOXED = re.compile(r"\\boxed\s*\{")
_HASHES = re.compile(r"^[ \t]*####[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_ANSWER_IS = re.compile(r"\b(?:the[ \t]+)?(?:final[ \t]+)?answer[ \t]+is[ \t]*:?[ \t]*([^\n]+)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<![A-Z])\.\s+")
_FINISH = re.compile(r"^[ \t]*Action[ \t]*\d*[ \t]*:[ \t]*Finish[ \t]*\[(.*)\][ \t]*$", re.IGNORECASE | re.MULTILINE)
_ACTION = re.compile(r"^[ \t]*Action[ \t]*\d*[ \t]*:[ \t]*(\w[\w.-]*)", re.IGNORECASE | re.MULTILINE)


def _clean(value: str) -> str | None:
    """An answer without surrounding blanks, markdown marks, quotes and a sentence's final period."""
    v = value.strip().strip("*`").strip()
    if len(v) > 1 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1].strip()
    if v.endswith(".") and not re.search(r"\.\w+\.$|\b[A-Z]\.$", v):   # a sentence's end, not "D.C." / "U.S."
        v = v[:-1].rstrip()
    return v or None


def _boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (nested braces balanced)."""
    last = None
    for m in _BOXED.finditer(text):
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        if depth == 0:
            last = text[m.end():j - 1]
    return None if last is None else _clean(last)


def answer_from_text(text: Any) -> str | None:
    """The answer a step's text states, or None.

    In this order: the last ``Final Answer:``/``Answer:`` line, else ReAct's ``Action: Finish[...]``, else the
    last ``\\boxed{}``, else ``#### x``, else the last "the answer is x". The answer is stripped of blanks,
    markdown marks, quotes and a sentence's final period.

    Parameters
    ----------
    text : str
        A step's text (anything else gives None).

    Returns
    -------
    str or None
        The answer, or None when the text states none.

    Examples
    --------
    >>> from htc_core.formats.answers import answer_from_text
    >>> answer_from_text("Thought: 6 times 7.\\nFinal Answer: 42.")
    '42'
    >>> answer_from_text("Action: Finish[Paris]"), answer_from_text("I think the answer is Paris. It is")
    ('Paris', 'Paris')
    >>> print(answer_from_text("Action: search[Paris]"))
    None
    """
    if not isinstance(text, str) or not text.strip():
        return None
    low = text.lower()            # each rule runs only where its keyword occurs (most steps state no answer)
    for rule, key in ((_LINE, "answer"), (_FINISH, "finish")):
        hits = rule.findall(text) if key in low else None
        if hits:
            return _clean(hits[-1])
    boxed = _boxed(text) if "\\boxed" in text else None
    if boxed:
        return boxed
    hits = _HASHES.findall(text) if "####" in text else None
    if hits:
        return _clean(hits[-1])
    hits = _ANSWER_IS.findall(text) if "answer" in low and " is" in low else None
    if hits:
        return _clean(_SENTENCE_END.split(hits[-1], maxsplit=1)[0])
    return None


def _tool_parts(tool: Any) -> tuple[str | None, Any]:
    """(name, arguments) of a step's tool: the stored JSON text ``{"name", "arguments"}``, a dict, or a name."""
    if isinstance(tool, str):
        try:
            tool = json.loads(tool)
        except ValueError:
            return tool, None
    if isinstance(tool, dict):
        name = tool.get("name")
        return (name if isinstance(name, str) else None), tool.get("arguments")
    return None, None


def is_answer_tool(name: Any) -> bool:
    """Whether a tool name is a final-answer tool (:data:`ANSWER_TOOLS`, compared lower-cased)."""
    return isinstance(name, str) and re.sub(r"[\s-]+", "_", name.strip().lower()) in ANSWER_TOOLS


def answer_from_tool(tool: Any) -> str | None:
    """The answer a final-answer tool call gives (its single argument, or its ``answer``-like argument).

    Parameters
    ----------
    tool : dict, str or None
        The step's tool call: ``{"name": ..., "arguments": ...}`` (arguments a dict, JSON text or a value), the
        same as JSON text (how a trace set stores it), or a bare tool name.

    Returns
    -------
    str or None
        The answer; None when the tool is not a final-answer tool (:data:`ANSWER_TOOLS`) or names no answer.

    Examples
    --------
    >>> from htc_core.formats.answers import answer_from_tool
    >>> answer_from_tool({"name": "final_answer", "arguments": {"answer": 42}})
    '42'
    >>> answer_from_tool('{"name": "submit", "arguments": "Paris"}')
    'Paris'
    >>> print(answer_from_tool({"name": "search", "arguments": {"q": "Paris"}}))
    None
    """
    name, args = _tool_parts(tool)
    if not is_answer_tool(name):
        return None
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return _clean(args)
    if isinstance(args, dict):
        for key in ("answer", "final_answer", "response", "result", "output", "text", "value"):
            if args.get(key) is not None:
                return _clean(text_of(args[key]) if not isinstance(args[key], (int, float)) else str(args[key]))
        if len(args) == 1:
            (v,) = args.values()
            return _clean(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
        return None
    if args is None:
        return None
    return _clean(str(args))


def answer_of_steps(texts: list, tools: list | None = None) -> tuple[str | None, str | None]:
    """(answer, where it came from) from a run's steps.

    A final-answer tool call (when the last step that called a tool called one), else the last step's text.

    Parameters
    ----------
    texts : list of str
        The steps' texts, in order.
    tools : list, optional
        The steps' tool calls (None where a step called none), as :func:`answer_from_tool` reads them.

    Returns
    -------
    answer : str or None
        The answer.
    source : str or None
        ``"final_answer tool call"`` or ``"last step's text"``; ``(None, None)`` when neither states an answer.

    Examples
    --------
    >>> from htc_core.formats.answers import answer_of_steps
    >>> answer_of_steps(["Action: search[Rome]", "Thinking."], [None, {"name": "final_answer", "arguments": "Rome"}])
    ('Rome', 'final_answer tool call')
    >>> answer_of_steps(["Action: search[x]", "Final Answer: 7"])
    ('7', "last step's text")
    >>> answer_of_steps(["No idea yet."])
    (None, None)
    """
    for tool in reversed(tools or []):
        if tool is not None:
            ans = answer_from_tool(tool)
            if ans is not None:
                return ans, "final_answer tool call"
            break
    if texts:
        ans = answer_from_text(texts[-1])
        if ans is not None:
            return ans, "last step's text"
    return None, None


def explicit_answer(obj: dict) -> str | None:
    """An explicit answer field of a record (``answer``, else ``final_answer``), as text (internal: readers)."""
    for key in ANSWER_KEYS:
        v = obj.get(key)
        if v is not None and not isinstance(v, (dict, list)):
            return str(v)
    return None


def question_of_messages(messages: Any) -> str | None:
    """The text of the first user message of a chat request (OpenAI roles; ``human`` too).

    Parameters
    ----------
    messages : list of dict
        Chat messages (``role``, ``content``: a string or a list of content parts).

    Returns
    -------
    str or None
        The first non-blank user message, or None.

    Examples
    --------
    >>> from htc_core.formats.answers import question_of_messages
    >>> question_of_messages([{"role": "system", "content": "Be brief."},
    ...                       {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]}])
    'What is 2+2?'
    """
    if not isinstance(messages, list):
        return None
    for m in messages:
        if isinstance(m, dict) and m.get("role") in ("user", "human"):
            t = text_of(m.get("content"))
            if t and t.strip():
                return t
    return None


def question_of_request(request: Any) -> str | None:
    """The question of a logged request: its first user message, else its ``prompt`` / ``input`` text.

    Parameters
    ----------
    request : dict
        A logged request body: Chat Completions (``messages``), Responses API (``input``: text or items) or
        legacy completions (``prompt``).

    Returns
    -------
    str or None
        The question, or None.

    Examples
    --------
    >>> from htc_core.formats.answers import question_of_request
    >>> question_of_request({"model": "m", "messages": [{"role": "user", "content": "Capital of France?"}]})
    'Capital of France?'
    >>> question_of_request({"prompt": "Q: capital of France?"})
    'Q: capital of France?'
    """
    if not isinstance(request, dict):
        return None
    q = question_of_messages(request.get("messages"))
    if q is None and isinstance(request.get("input"), list):      # Responses API input items
        q = question_of_messages(request["input"])
    if q is not None:
        return q
    for key in ("prompt", "input"):
        v = request.get(key)
        if isinstance(v, str) and v.strip():
            return v
    return None


def fill_answer_question(rec) -> None:
    """Fill a record's blank ``answer`` from its steps (:func:`answer_of_steps`; internal: readers).

    Its ``question`` is filled by the readers, which see the requests. Records the answer's source in
    ``metadata['answer_source']``.
    """
    if rec.answer is not None and str(rec.answer).strip():
        return
    tools = (rec.steps_detail or {}).get("tool")
    ans, source = answer_of_steps(rec.steps_text, tools)
    if ans is not None:
        rec.answer = ans
        if isinstance(rec.metadata, dict):
            rec.metadata.setdefault("answer_source", source)


def run_ended_without_answer(last_text: Any, last_tool: Any) -> bool | None:
    """Whether a run without an answer really ended without one.

    Parameters
    ----------
    last_text : str or None
        The last step's text.
    last_tool : dict, str or None
        The last step's tool call, as :func:`answer_from_tool` reads it.

    Returns
    -------
    bool or None
        True when the last step called a tool (not a final-answer tool), wrote an ``Action:`` (not ``Finish``)
        or generated only whitespace; None (undecidable) when the last step's text states neither an action
        nor an answer, or there is no text.

    Examples
    --------
    >>> from htc_core.formats.answers import run_ended_without_answer
    >>> run_ended_without_answer("Action: search[Paris]", None), run_ended_without_answer("", None)
    (True, True)
    >>> print(run_ended_without_answer("Hmm, let me think.", None))
    None
    """
    name, _ = _tool_parts(last_tool) if last_tool is not None else (None, None)
    if name is not None and not is_answer_tool(name):
        return True
    if not isinstance(last_text, str):
        return None
    if not last_text.strip():
        return True
    acts = _ACTION.findall(last_text)
    if acts and not is_answer_tool(acts[-1]):
        return True
    return None
