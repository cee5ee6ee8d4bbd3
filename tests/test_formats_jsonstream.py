"""The streaming JSON-array iterator and the line parser used by the readers (property tests)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htc_core.formats.jsonio import ParseError, container_kind, iter_json_array, loads

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20)
elements = st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=4) | st.lists(json_values, max_size=4),
                    max_size=8)


def render(els, indent):
    return json.dumps(els, indent=indent, ensure_ascii=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(els=elements, indent=st.sampled_from([None, 0, 1, 2]), chunk=st.sampled_from([1, 3, 7, 64, 1 << 20]))
def test_array_stream_equals_json_loads(tmp_path, els, indent, chunk):
    text = render(els, indent)
    p = tmp_path / "a.json"
    p.write_text(text, encoding="utf-8")
    got = list(iter_json_array(p, chunk=chunk))
    assert [v for _, v in got] == els
    # each element's line is where it starts in the file
    for (line, v), start in zip(got, _starts(text, els, indent)):
        assert line == start


def _starts(text, els, indent):
    if indent is None or not els:
        return [1] * len(els)
    lines = []
    pos = text.index("[") + 1
    for el in els:
        s = render(el, indent).replace("\n", "\n" + " " * indent)
        i = text.index(s, pos)
        lines.append(text.count("\n", 0, i) + 1)
        pos = i + len(s)
    return lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(els=elements.filter(lambda e: len(e) >= 1), frac=st.floats(0.05, 0.95), chunk=st.sampled_from([2, 5, 4096]))
def test_truncated_array_yields_complete_prefix_then_reports(tmp_path, els, frac, chunk):
    text = render(els, 1)
    cut = text[: max(1, int(len(text) * frac))]
    p = tmp_path / "t.json"
    p.write_text(cut, encoding="utf-8")
    got = []
    with pytest.raises(ParseError) as exc:
        for _, v in iter_json_array(p, chunk=chunk):
            got.append(v)
    assert got == els[: len(got)]  # never a wrong element, only a prefix
    assert exc.value.line is not None and 1 <= exc.value.line <= cut.count("\n") + 1


def test_array_errors(tmp_path):
    cases = {
        "": "file is empty",
        '{"a": 1}': "expected a JSON array",
        '[{"a": 1} {"b": 2}]': "expected ',' or ']'",
        '[{"a": 1},\n {"b": tru}]': "malformed JSON",
    }
    for text, reason in cases.items():
        p = tmp_path / "e.json"
        p.write_text(text)
        with pytest.raises(ParseError, match=reason):
            list(iter_json_array(p))
    p.write_bytes(b'[{"a": 1},\n{"b": "\xff"}]')
    it = iter_json_array(p, chunk=4)
    assert next(it) == (1, {"a": 1})
    with pytest.raises(ParseError, match="invalid UTF-8") as exc:
        next(it)
    assert exc.value.line == 2


def test_loads_reasons():
    assert loads(b'{"a": NaN}')["a"] != loads(b'{"a": NaN}')["a"]  # json fallback reads NaN
    with pytest.raises(ParseError, match="truncated JSON: the text ends inside a string"):
        loads(b'{"a": "abc')
    with pytest.raises(ParseError, match="truncated JSON"):
        loads(b'{"a": [1, 2')
    with pytest.raises(ParseError, match="malformed JSON: Expecting value at column 7"):
        loads(b'{"a": x, "b": 1}')
    with pytest.raises(ParseError, match="invalid UTF-8 at byte 7"):
        loads(b'{"a": "\xff"}')


def test_container_kind(tmp_path):
    for name, text, kind in [("a.jsonl", "[1]\n[2]\n", "jsonl"), ("a.json", "[\n1\n]", "json-array"),
                             ("a.json", '{"a":\n 1}', "json-object"), ("a.json", '{"a": 1}\n{"a": 2}\n', "jsonl"),
                             ("a.txt", '{"a": 1}\n', "jsonl"), ("a.txt", '{\n"a": 1}\n', "json-object")]:
        p = tmp_path / name
        p.write_text(text)
        assert container_kind(p) == kind, (name, text)
