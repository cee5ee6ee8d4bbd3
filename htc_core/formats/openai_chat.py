"""OpenAI Chat Completions responses: ``choices[].logprobs.content[].{token, logprob, bytes, top_logprobs[]}``.

Containers (also used by ``responses`` and ``completions``):

- a ``.json`` file holding an array of responses: one trajectory (id = file
  name), one step per response, in array order; the array is streamed;
- a ``.json`` file holding one object ``{"id": ..., "responses": [...], "success": ...}``
  or a single response (one trajectory);
- JSONL with one trajectory per line: a list of responses, or an object with
  an id (``id``, ``trajectory_id``, ``trace_id``, ``run_id``, ``session_id``,
  ``conversation_id``), a list under ``responses`` (or ``calls``,
  ``completions``, ``steps``, ``turns``) and optional labels/metadata
  (``success``, ``question``, ``answer``, ``gold``, ``dataset``, ``model``,
  ``verbalized_confidence``, ``metadata``).

A list element may be the response itself or a wrapper holding it under
``response``/``raw_response``/``completion``/``output``/``result``/``body``;
a list of ``chat.completion.chunk`` objects (a streamed call) is reassembled
into one step. A response without logprobs is dropped with a warning (the
trajectory is kept when other steps have logprobs); a malformed one rejects
its trajectory with file, line, field, value and reason.

This module also holds ``parse_response`` / ``find_response``, the shape
dispatcher every OpenAI-shaped reader uses (chat, chunks, Responses API,
legacy completions).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from ..report import LoadReport
from ..traces import TraceSet, TraceSetBuilder
from . import _shared, completions, responses
from ._shared import FieldError, MissingLogprobs, ParseError, StepPart, TrajAcc

NAME = "openai-chat"

#: keys under which a wrapper (call-log line, list element) may hold the raw response
RESPONSE_KEYS = ("response", "raw_response", "completion", "output", "result", "body", "raw", "llm_output", "data")
#: keys under which a trajectory object holds its list of responses
LIST_KEYS = ("responses", "calls", "completions", "steps", "turns")


# ------------------------------------------------------------------ shapes
def is_chat(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if obj.get("object") in ("chat.completion", "chat.completion.chunk"):
        return True
    ch = obj.get("choices")
    if isinstance(ch, list) and ch and isinstance(ch[0], dict):
        c = ch[0]
        if "message" in c or "delta" in c:
            return True
        lp = c.get("logprobs")
        return isinstance(lp, dict) and "content" in lp
    return False


def is_chunk(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if obj.get("object") == "chat.completion.chunk":
        return True
    ch = obj.get("choices")
    return isinstance(ch, list) and bool(ch) and isinstance(ch[0], dict) and "delta" in ch[0]


def is_chunk_list(obj: Any) -> bool:
    return isinstance(obj, list) and bool(obj) and all(isinstance(c, dict) for c in obj[:4]) and is_chunk(obj[0])


def is_any_response(obj: Any) -> bool:
    return is_chat(obj) or responses.is_response(obj) or completions.is_response(obj)


def find_response(obj: Any, depth: int = 0) -> Any:
    """The raw response held by ``obj`` (itself, or under a wrapper key, two levels deep), else None."""
    if is_any_response(obj) or is_chunk_list(obj):
        return obj
    if depth < 2 and isinstance(obj, dict):
        for k in RESPONSE_KEYS:
            v = obj.get(k)
            if v is None or isinstance(v, (int, float, bool)):
                continue
            if isinstance(v, str):
                if not v.startswith("{"):
                    continue
                try:
                    v = _shared.loads(v)
                except ParseError:
                    continue
            r = find_response(v, depth + 1)
            if r is not None:
                return r
    return None


# ----------------------------------------------------------------- parsing
def _message_text(msg: Any) -> str | None:
    if not isinstance(msg, dict):
        return None
    text = _shared.text_of(msg.get("content"))
    if text:
        return text
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and calls:
        out = []
        for c in calls:
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict):
                out.append(f"{fn.get('name')}({fn.get('arguments')})")
        return "; ".join(out) or None
    return text


def parse_chat(resp: dict, prefix: str = "") -> StepPart:
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices:
        raise FieldError(f"{prefix}choices", choices, "must be a non-empty list")
    ch = choices[0]
    if not isinstance(ch, dict):
        raise FieldError(f"{prefix}choices[0]", ch, f"must be an object, got {_shared._type_name(ch)}")
    text = _message_text(ch.get("message") if "message" in ch else ch.get("delta"))
    lp = ch.get("logprobs")
    f = f"{prefix}choices[0].logprobs"
    if lp is None:
        raise MissingLogprobs(f, None, "no logprobs (request them with logprobs=True, top_logprobs=k)",
                              has_value=False)
    if not isinstance(lp, dict):
        raise FieldError(f, lp, f"must be an object, got {_shared._type_name(lp)}")
    content = lp.get("content")
    if content is None:
        if lp.get("refusal") is not None:
            part = _shared.token_list(lp["refusal"], f + ".refusal")
        elif "token_logprobs" in lp:
            part = completions.parse_logprobs(lp, f)
        else:
            raise MissingLogprobs(f + ".content", None, "is null (no logprobs for this output)", has_value=False)
    else:
        part = _shared.token_list(content, f + ".content")
    part.text = text
    return part


def parse_chunks(chunks: list, prefix: str = "") -> StepPart:
    """A streamed call (list of ``chat.completion.chunk``) reassembled into one step."""
    parts: list[StepPart] = []
    missing = None
    for i, c in enumerate(chunks):
        if not isinstance(c, dict):
            raise FieldError(f"{prefix}[{i}]", c, f"a chunk must be an object, got {_shared._type_name(c)}")
        part = parse_chunk(c, f"{prefix}[{i}].")
        if part is None:
            continue
        if isinstance(part, MissingLogprobs):
            missing = missing or part
            continue
        parts.append(part)
    if missing is not None:
        raise missing
    return _shared.concat_parts(parts) if parts else _shared.empty_part()


def parse_chunk(c: dict, prefix: str = "") -> StepPart | MissingLogprobs | None:
    """One chunk: a part, None (no generated text: role/usage chunk) or a MissingLogprobs to raise later."""
    choices = c.get("choices")
    if not choices:
        return None  # usage-only chunk
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise FieldError(f"{prefix}choices", choices, "must be a list of objects")
    ch = choices[0]
    delta = ch.get("delta")
    text = _message_text(delta) if delta is not None else _shared.text_of(ch.get("text"))
    lp = ch.get("logprobs")
    content = None
    if isinstance(lp, dict):
        content = lp.get("content")
        if content is None and "token_logprobs" in lp:
            part = completions.parse_logprobs(lp, f"{prefix}choices[0].logprobs")
            part.text = text
            return part
    elif lp is not None:
        raise FieldError(f"{prefix}choices[0].logprobs", lp, f"must be an object, got {_shared._type_name(lp)}")
    if content is None:
        if text:
            return MissingLogprobs(f"{prefix}choices[0].logprobs", None,
                                   "streamed chunk has text but no logprobs", has_value=False)
        return None
    part = _shared.token_list(content, f"{prefix}choices[0].logprobs.content")
    part.text = text
    return part


def parse_response(resp: Any, prefix: str = "") -> StepPart:
    """Any OpenAI-shaped response (chat, chunk list, Responses API, completions) -> one step part."""
    if is_chunk_list(resp):
        return parse_chunks(resp, prefix)
    if is_chat(resp):
        if is_chunk(resp):
            part = parse_chunk(resp, prefix)
            if isinstance(part, MissingLogprobs):
                raise part
            return part if part is not None else _shared.empty_part()
        return parse_chat(resp, prefix)
    if responses.is_response(resp):
        return responses.parse_response(resp, prefix)
    if completions.is_response(resp):
        return completions.parse_response(resp, prefix)
    raise FieldError(prefix.rstrip(".") or "response", resp, "not an LLM response (no choices[] or output[])")


def response_model(resp: Any) -> str | None:
    if isinstance(resp, list) and resp:
        resp = resp[0]
    if isinstance(resp, dict):
        m = resp.get("model")
        if isinstance(m, str) and m:
            return m
    return None


# -------------------------------------------------------------- containers
def responses_of(obj: Any) -> list | None:
    """The list of responses a trajectory object holds (None when it is not such an object)."""
    if isinstance(obj, list) and not is_chunk_list(obj):
        return obj
    if isinstance(obj, dict) and not is_any_response(obj):
        for k in LIST_KEYS:
            v = obj.get(k)
            if isinstance(v, list):
                return v
    return None


def _list_key(obj: dict) -> str:
    return next((k for k in LIST_KEYS if isinstance(obj.get(k), list)), "responses")


def sniff_container(sample, is_resp, what: str) -> str | None:
    """None when ``sample`` holds ``what`` in one of the trajectory containers, else why not."""
    objs = sample.objs
    if not objs:
        return sample.why_empty or "no JSON value could be read"
    first = objs[0]
    if sample.kind == "json-array":
        r = find_response(first)
        if r is not None:
            rr = r[0] if is_chunk_list(r) else r
            return None if is_resp(rr) else f"array elements are LLM responses of another kind (not {what})"
        lst = responses_of(first)
    elif sample.kind == "json-object":
        if is_resp(first):
            return None
        if is_any_response(first):
            return f"a single LLM response of another kind (not {what})"
        lst = responses_of(first)
        if lst is None:
            return f"the JSON object holds no list of responses under {'/'.join(LIST_KEYS)}"
    else:
        for obj in objs:
            if find_response(obj) is not None and responses_of(obj) is None:
                return ("each line is a single LLM call, not a trajectory (that is openai-calllog)")
            lst = responses_of(obj)
            if lst:
                break
        else:
            lst = responses_of(first)
        if lst is None:
            return f"lines are {_shared._type_name(first)}s without a list of responses under {'/'.join(LIST_KEYS)}"
    if not lst:
        return "the first trajectory holds no responses"
    for el in lst[:3]:
        r = find_response(el)
        if r is None:
            continue
        rr = r[0] if is_chunk_list(r) else r
        return None if is_resp(rr) else f"its responses are of another kind (not {what})"
    return f"the first trajectory's list holds no LLM responses ({what})"


def sniff(sample) -> str | None:
    return sniff_container(sample, is_chat, "Chat Completions responses (choices[].logprobs.content)")


def add_call(acc: TrajAcc, el: Any, *, report: LoadReport, file: str, line: int | None, field: str,
             default_name: str = "llm_call") -> None:
    """Parse one list element (response or wrapper) into a step of ``acc``."""
    resp = find_response(el)
    if resp is None:
        report.warn(file, line, "not an LLM response; skipped", field=field, value=el, trajectory_id=acc.id)
        return
    try:
        part = parse_response(resp, f"{field}.")
    except MissingLogprobs as e:
        acc.missing += 1
        report.warn(file, line, f"{e.reason}; step dropped", field=e.field, trajectory_id=acc.id)
        return
    except FieldError as e:
        _shared.fail(acc, report, file, line, e.reason, field=e.field, value=e.value, has_value=e.has_value)
        return
    name = default_name
    if isinstance(el, dict) and el is not resp:
        n = el.get("name") or el.get("step_name") or el.get("kind")
        if isinstance(n, str) and n:
            name = n
    if "model" not in acc.meta:
        m = response_model(resp)
        if m:
            acc.meta["model"] = m
    acc.add(name, part)


def trajectory_from_obj(obj: Any, *, default_id: str, report: LoadReport, file: str, line: int | None
                        ) -> TrajAcc | None:
    lst = responses_of(obj)
    if lst is None:
        if find_response(obj) is not None:
            report.error(file, line, "a single LLM response where a trajectory was expected "
                                     "(read call logs with --format openai-calllog)", value=obj)
        else:
            report.error(file, line, f"a trajectory must be a list of responses or an object with "
                                     f"'responses', got {_shared._type_name(obj)}", value=obj)
        return None
    tid = _shared.find_id(obj) if isinstance(obj, dict) else None
    acc = TrajAcc(tid or default_id, file, line)
    key = _list_key(obj) if isinstance(obj, dict) else ""
    if isinstance(obj, dict):
        _shared.take_meta(acc, obj, report, file, line)
    for i, el in enumerate(lst):
        add_call(acc, el, report=report, file=file, line=line, field=f"{key}[{i}]")
    return acc


def read_container_file(path: Path, *, builder: TraceSetBuilder, report: LoadReport, defaults: dict | None,
                        framework: str | None = None) -> None:
    """Read one file of openai-chat / responses / completions containers into ``builder``."""
    path = Path(path)
    file = str(path)
    seen: set[str] = set()
    stem = _shared.stem(file)

    def finish(acc: TrajAcc | None, line: int | None) -> None:
        if acc is None:
            return
        rec = _shared.build_record(acc, report, defaults, framework)
        if rec is not None:
            _shared.add_record(builder, rec, report, file, line, seen)

    kind = _shared.container_kind(path)
    if kind == "json-array":
        mode = None
        acc: TrajAcc | None = None
        i = 0
        lines_before = report.lines_read
        try:
            for line, el in _shared.iter_json_array(path):
                report.lines_read += 1
                if mode is None:
                    mode = "trajectories" if responses_of(el) is not None and find_response(el) is None else "responses"
                    if mode == "responses":
                        acc = TrajAcc(stem, file, 1)
                if mode == "responses":
                    add_call(acc, el, report=report, file=file, line=line, field=f"[{i}]")
                else:
                    finish(trajectory_from_obj(el, default_id=f"{stem}:{i}", report=report, file=file, line=line),
                           line)
                i += 1
        except ParseError as e:
            if acc is not None:
                _shared.fail(acc, report, file, e.line, f"{e.reason}; the trajectory is incomplete", value=e.value)
            else:
                report.error(file, e.line, e.reason, value=e.value)
        if mode is None and i == 0 and report.lines_read == lines_before:
            report.error(file, 1, "the JSON array is empty (no responses)")
        finish(acc, 1)
        return
    if kind == "json-object":
        doc = _shared.read_document_reported(path, report, file)
        if doc is _shared.NO_DOCUMENT:
            return
        if is_any_response(doc) or is_chunk_list(doc):
            acc = TrajAcc(stem, file, 1)
            add_call(acc, doc, report=report, file=file, line=1, field="")
            finish(acc, 1)
        else:
            finish(trajectory_from_obj(doc, default_id=stem, report=report, file=file, line=1), 1)
        return
    for no, raw in _iter_lines(path, report, file):
        try:
            obj = _shared.loads(raw)
        except ParseError as e:
            report.error(file, no, e.reason, value=e.value)
            continue
        finish(trajectory_from_obj(obj, default_id=f"{stem}:{no}", report=report, file=file, line=no), no)


def _iter_lines(path: Path, report: LoadReport, file: str, on_error=None):
    """Non-blank lines of a JSONL file, counted in the report; an unreadable (or cut-short .gz) file
    is reported, then ``on_error(exc)`` is called."""
    no = None
    try:
        for no, raw in _shared.common.iter_lines(path):
            report.lines_read += 1
            if raw.strip():
                yield no, raw
    except _shared.READ_ERRORS as e:
        report.error(file, None if no is None else no + 1, _shared.read_error_reason(e))
        if on_error is not None:
            on_error(e)


def read_file(path, *, builder, report: LoadReport, defaults: dict | None = None, **_: Any) -> None:
    read_container_file(path, builder=builder, report=report, defaults=defaults)


def read(paths: str | os.PathLike | Iterable[str | os.PathLike], *, defaults: dict | None = None,
         report: LoadReport | None = None) -> tuple[TraceSet, LoadReport]:
    """Read files or directories of Chat Completions trajectories; returns (trace set, load report)."""
    from . import load

    return load(paths, format=NAME, defaults=defaults, report=report)
