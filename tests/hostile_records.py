"""Good records of every input format (from the project's real recordings) and the hostile values the fuzz
and corpus tests put into them. Shared by tests/test_hostile_*.py and tests/fixtures/hostile/make_hostile.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORMATS_DIR = ROOT / "tests" / "fixtures" / "formats"
HOSTILE_DIR = ROOT / "tests" / "fixtures" / "hostile"
SAMPLE = ROOT / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"

#: a placeholder string replaced, in the serialized line, by a raw hostile JSON text
MARK = "__HOSTILE__"


def _native() -> list[dict]:
    out = []
    with open(SAMPLE, encoding="utf-8") as fh:
        for _ in range(2):
            obj = json.loads(fh.readline())
            for st in obj["steps"]:
                for key in ("logprobs", "top_logprobs", "tokens", "top_tokens"):
                    if key in st and isinstance(st[key], list):
                        st[key] = st[key][:12]
                st["text"] = (st.get("text") or "")[:80]
            obj["steps"] = obj["steps"][:2]
            out.append(obj)
    return out


def _lines(name: str) -> list[dict]:
    return [json.loads(ln) for ln in (FORMATS_DIR / name).read_text(encoding="utf-8").splitlines() if ln.strip()]


def _doc(name: str):
    return json.loads((FORMATS_DIR / name).read_text(encoding="utf-8"))


def templates() -> dict[str, list[dict]]:
    """format -> good one-line records (each becomes a trajectory of its own once ``with_id`` renames it)."""
    return {
        "native": _native(),
        "openai-chat": _lines("chat_trajectories.jsonl"),
        "completions": _lines("completions.jsonl"),
        "responses": [{"id": "r", "responses": [r]} for r in _doc("responses.json")],
        "openai-calllog": [o for o in _lines("calllog.jsonl") if "response" in o][:4],
        "smolagents": [{"id": "s", "steps": _doc("smolagents_run.json")}],
        "atif": [_doc("atif.json")],
        "otel": [_otel_trace()],
    }


def _otel_trace() -> dict:
    """The first trace of the OpenTelemetry fixture as one OTLP JSON request (all its spans on one line)."""
    lines = [json.loads(ln) for ln in (ROOT / "tests" / "fixtures" / "foreign" / "otel_otlp.jsonl")
             .read_text(encoding="utf-8").splitlines() if ln.startswith('{"')]
    first = lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    spans = [sp for d in lines for sp in d["resourceSpans"][0]["scopeSpans"][0]["spans"] if sp.get("traceId") == first]
    return {"resourceSpans": [{"resource": lines[0]["resourceSpans"][0]["resource"],
                               "scopeSpans": [{"scope": {"name": "openinference"}, "spans": spans}]}]}


def with_id(fmt: str, obj: dict, tid: str) -> dict:
    """A copy of a template record carrying trajectory id ``tid``."""
    o = copy.deepcopy(obj)
    if fmt == "openai-calllog":
        o["trajectory_id"] = tid
    elif fmt == "atif":
        o["session_id"] = tid
    elif fmt == "otel":
        for sp in o["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            sp["traceId"] = tid
    else:
        o["id"] = tid
    return o


def paths(obj, prefix=()) -> list[tuple]:
    """Every path (tuple of keys/indexes) to a value inside ``obj``, the root excluded."""
    out = []
    stack = [(obj, prefix)]
    while stack:
        v, p = stack.pop()
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, x in items:
            out.append(p + (k,))
            stack.append((x, p + (k,)))
    return sorted(out, key=repr)


def put(obj, path: tuple, value) -> None:
    cur = obj
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value


def hostile_line(obj: dict, path: tuple, raw: str) -> str:
    """``obj`` serialized with the value at ``path`` replaced by the raw JSON text ``raw``."""
    o = copy.deepcopy(obj)
    put(o, path, MARK)
    return json.dumps(o, ensure_ascii=False).replace(json.dumps(MARK), raw, 1)


#: raw JSON texts of values no reader may let through (name -> text); small except where noted
HOSTILE = {
    "int_400_digits": "-" + "9" * 400,
    "int_over_str_limit": "9" * 5000,           # Python's int-string limit is 4,300 digits
    "float_overflow": "1e400",
    "neg_float_overflow": "-2.5E+999",
    "lone_surrogate": '"\\ud800"',
    "lone_low_surrogate": '"ok \\udfff text"',
    "deep_array_300": "[" * 300 + "]" * 300,      # deeper than MAX_DEPTH (200), within orjson's limit
    "deep_object_1500": '{"a":' * 1500 + "1" + "}" * 1500,  # deeper than orjson's and json's limits
}
