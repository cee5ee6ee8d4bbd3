"""The cheap proofs of the htc-trace reader's fast path (issue 29, docs/benchmarks-ingest.md) against slow and
obvious references, and broken files read through them.

- ``typedjson.step_shapes``: one regular-expression pass over a line's skeleton, each distinct piece judged once
  and remembered, against the per-key scan it replaced (kept here as the reference);
- ``jsonvalues.nests_within`` / ``may_nest_too_deep``: brackets deleted pair by pair against the running count of
  ``max_bracket_depth``;
- a file of good lines and broken ones that reach the new code: every broken line is reported with its file,
  line, field and value exactly as the reference path reports it, and every good line is kept.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import htc_core as htc
from htc_core.formats import native, typedjson
from htc_core.jsonvalues import MAX_DEPTH, max_bracket_depth, may_nest_too_deep, nests_within


def reference_shapes(skeleton: bytes):
    """The per-key scan ``step_shapes`` replaced: every ``logprobs"`` after a quote or ``"top_``, its value
    compared with the skeleton of n numbers or of n rows of k numbers."""
    lens, tops = [], []
    pos = skeleton.find(b'logprobs"')
    while pos >= 0:
        before = skeleton[pos - 1] if pos else -1
        is_top = before == 95 and skeleton[pos - 5:pos] == b'"top_'
        if before == 34 or is_top:
            v = pos + 10
            if v > len(skeleton) or skeleton[v - 1] != 58:
                return None
            if is_top and skeleton.startswith(b"null", v):
                tops.append(None)
            elif is_top:
                k = skeleton.find(b"]", v) - v - 1
                end = skeleton.find(b"]]", v) + 2
                n = (end - v - 1) // (k + 2) if k > 0 else 0
                row = b"[" + b"," * (k - 1) + b"]"
                if n < 1 or not skeleton.startswith(b"[" + b",".join([row] * n) + b"]", v) \
                        or end - v != n * (k + 2) + 1:
                    return None
                tops.append((n, k))
                pos = end - 9
            else:
                end = skeleton.find(b"]", v) + 1
                n = end - v - 1
                if n < 1 or not skeleton.startswith(b"[" + b"," * (n - 1) + b"]", v):
                    return None
                lens.append(n)
                pos = end - 9
        pos = skeleton.find(b'logprobs"', pos + 9)
    return lens, tops


def _skeleton(obj) -> bytes:
    return json.dumps(obj).encode().translate(None, typedjson.NUMBER_TEXT)


_number = st.one_of(st.floats(-50, 0, allow_nan=False), st.integers(-50, 0))
_odd = st.one_of(st.booleans(), st.none(), st.just("x"), st.just([]), st.just([-1.0]), st.just({"a": -1}),
                 st.just("logprobs"), st.just('"top_logprobs": [[1]]'))
_value = st.one_of(_number, _odd)
_key = st.sampled_from(["logprobs", "top_logprobs", "top_3logprobs", "name", "text", "2logprobs", "top_logprob"])
_array = st.one_of(st.lists(_number, min_size=0, max_size=5), st.lists(_value, min_size=0, max_size=4))
_rows = st.one_of(st.none(), st.lists(st.lists(_number, min_size=1, max_size=3), min_size=0, max_size=4),
                  st.lists(st.one_of(st.lists(_value, max_size=3), _value), min_size=0, max_size=4))


@settings(max_examples=400, deadline=None)
@given(steps=st.lists(st.dictionaries(_key, st.one_of(_array, _rows, _value), min_size=0, max_size=4),
                      min_size=0, max_size=4),
       meta=st.dictionaries(_key, st.one_of(_array, _value), max_size=2))
def test_step_shapes_is_the_per_key_scan_on_valid_json(steps, meta):
    """Any valid JSON line (keys anywhere, look-alikes, hostile values next to numbers): the same answer."""
    sk = _skeleton({"id": "t", "steps": steps, "metadata": meta})
    assert typedjson.step_shapes(sk) == reference_shapes(sk)


def test_step_shapes_is_never_looser_than_the_per_key_scan():
    """Random skeletons that valid JSON cannot make: where the two differ, step_shapes refuses."""
    pieces = [b'"logprobs":', b'"top_logprobs":', b"[", b"]", b",", b"null", b'"', b"{", b"}", b"tru", b'"top_',
              b"logprobs", b":", b"[,,]", b"[[,],[,]]", b"[[]]", b"[]", b'"x":', b"[,]", b"[[,,],[,,],[,,]]"]
    rng = random.Random(7)
    for _ in range(50_000):
        sk = b"{" + b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        got, ref = typedjson.step_shapes(sk), reference_shapes(sk)
        assert got == ref or got is None, sk


def test_step_shapes_on_the_shapes_of_a_file():
    sk = _skeleton({"id": "t", "steps": [
        {"name": "a", "logprobs": [-0.1, -0.2], "top_logprobs": [[-0.1, -1.0, -2.0], [-0.2, -1.5, -3.0]]},
        {"name": "b", "logprobs": [-0.3], "top_logprobs": None},
        {"name": "c", "logprobs": [-0.1] * 700, "top_logprobs": [[-0.1, -1.0, -2.0]] * 700}]})  # > 4 kB piece
    assert typedjson.step_shapes(sk) == ([2, 1, 700], [(2, 3), None, (700, 3)])


def test_the_memory_of_pieces_stays_bounded():
    typedjson.SHAPE_MEMO.clear()
    for n in range(1, 5000):
        piece = b'"logprobs":[' + b"," * (n % 600) + b"]"
        assert typedjson.value_shape(piece) == n % 600 + 1
        assert len(typedjson.SHAPE_MEMO) <= 4096
    big = b'"top_logprobs":[' + b",".join([b"[,]"] * 2000) + b"]"
    assert typedjson.value_shape(big) == (2000, 2) and big not in typedjson.SHAPE_MEMO
    assert typedjson.value_shape(b'"logprobs":[[,],[,]]') is typedjson.BAD_SHAPE  # rows under the wrong key
    assert typedjson.value_shape(b'"top_logprobs":[,,]') is typedjson.BAD_SHAPE   # numbers where rows belong
    assert typedjson.value_shape(b'"logprobs"') is typedjson.BAD_SHAPE            # a text, not a key
    assert typedjson.value_shape(b'"top_logprobs":null') is None


# ------------------------------------------------------------------ nesting depth
_text = st.lists(st.sampled_from(["[", "]", "{", "}", '"', "a", ",", "1", '"[', ']"']), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=_text, depth=st.integers(0, 12))
def test_nests_within_never_claims_more_than_the_running_count(text, depth):
    raw = text.encode()
    if nests_within(raw, depth):
        assert max_bracket_depth(raw) <= depth


@pytest.mark.parametrize("levels", [1, 5, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 300])
@pytest.mark.parametrize("inner", ["[]", "{}", '{"a": [1, 2]}', '"]]]"', '"[[["'])
def test_may_nest_too_deep_is_the_running_count(levels, inner):
    """Deep and shallow texts, brackets unbalanced inside strings, bytes and str: the answer of the numpy scan."""
    body = "[" * levels + inner + "]" * levels
    text = '{"pad": "' + "x" * 500 + '", "v": ' + body + ', "rows": [' + ",".join(["[1]"] * 300) + "]}"
    expect = max_bracket_depth(text) > MAX_DEPTH
    assert may_nest_too_deep(text) is expect
    assert may_nest_too_deep(text.encode()) is expect


@settings(max_examples=300, deadline=None)
@given(text=_text, extra=st.integers(0, 250))
def test_may_nest_too_deep_property(text, extra):
    raw = ("[" * extra + text + "]" * extra + "," + "[]" * 200).encode()
    assert may_nest_too_deep(raw) is (max_bracket_depth(raw) > MAX_DEPTH)


# ------------------------------------------------------------------ broken files through the fast path
GOOD = {"id": "g", "success": True, "steps": [
    {"name": "a", "logprobs": [-0.1, -0.5], "top_logprobs": [[-0.1, -2.0], [-0.5, -1.0]]},
    {"name": "b", "logprobs": [-0.2], "top_logprobs": [[-0.2, -3.0]]}]}
BROKEN = [
    b'{"id":"b1","steps":[{"name":"a","logprobs":[-0.1,[-0.5]],"top_logprobs":[[-0.1,-2],[-0.5,-1]]}]}',
    b'{"id":"b2","steps":[{"name":"a","logprobs":[-0.1],"top_logprobs":[[-0.1,-2]]},'
    b'{"logprobs":[-0.2],"logprobs":[-0.2,-0.3],"top_logprobs":[[-0.2,-3]]}]}',      # repeated key, same count
    b'{"id":"b3","steps":[{"name":"a","logprobs":[-0.1],"top_logprobs":[[-0.1,-2]]},'
    b'{"name":"b","logprobs":[-0.2],"top_logprobs":[[-0.2,"x"]]}]}',
    b'{"id":"b4","steps":[{"name":"a","logprobs":[-0.1,0.5]}]}',                     # a positive logprob
    b'{"id":"b5","steps":[{"name":"a","logprobs":[-0.1],"top_logprobs":[[-0.1,-2],[-1,-2]]}]}',  # rows != tokens
    b'{"id":"b6","metadata":' + b"[" * 250 + b"]" * 250 + b',"steps":[{"logprobs":[-0.1]}]}',    # too deep
    b'{"id":"b7","steps":[{"name":"a","logprobs":[-0.1]',                            # cut short
    b'{"id":"b8","steps":[{"name":"a","logprobs":[-0.1],"top_logprobs":[[-0.1,-2]]},'
    b'{"text":"b","logprobs":[-0.2],"top_logprobs":[[-0.2,-3]]}]}',                  # same count, another key: good
]


def _problems(rep):
    return [(p.severity, p.file, p.line, p.field, p.reason, p.value, p.trajectory_id) for p in rep.problems]


def test_a_broken_file_keeps_its_good_lines_and_explains_the_bad_ones(tmp_path, monkeypatch):
    lines = []
    for i, bad in enumerate(BROKEN):
        lines += [json.dumps({**GOOD, "id": f"g{i}"}).encode(), bad]
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    ts, rep = htc.load(path)
    with monkeypatch.context() as m:  # the reference: every line the general way
        m.setattr(native, "decode_steps", lambda raw: None)
        ref, rep_ref = htc.load(path)
    assert _problems(rep) == _problems(rep_ref)
    assert np.array_equal(ts.logprob, ref.logprob) and np.array_equal(ts.top_logprobs, ref.top_logprobs)
    assert ts.ids.tolist() == ref.ids.tolist()
    assert {f"g{i}" for i in range(len(BROKEN))} | {"b8"} == set(ts.ids)  # every good line kept
    errors = {p.line: p for p in rep.errors}
    assert sorted(errors) == [2, 4, 6, 8, 10, 12, 14]  # each broken line once, by its number in the file
    assert all(p.file == str(path) for p in rep.errors)
    assert (errors[2].trajectory_id, errors[2].field, errors[2].value) == ("b1", "steps[0].logprobs[1]", "[-0.5]")
    assert errors[4].field == "steps[1].top_logprobs"  # the repeated key: the last one wins, as in the reference
    assert (errors[6].field, errors[6].value) == ("steps[1].top_logprobs[0][1]", "'x'")
    assert (errors[8].field, errors[8].value) == ("steps[0].logprobs[1]", "0.5")
    assert "2 entries" in errors[10].reason
    assert errors[12].field == "metadata" and "200 levels" in errors[12].reason
    assert errors[14].reason.startswith("truncated JSON")
