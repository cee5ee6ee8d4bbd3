"""The htc-trace reader's typed decode (``formats.typedjson``: numbers straight to float64 arrays) against the
reference path (``jsonio.loads`` + ``parse_trajectory``) on real files and on hostile lines.

The reference is the same reader with ``decode_steps`` answering None for every line, so each comparison is
the whole reader's output: every array, every text, the metadata, the step fields, the load report, and the 48
features (to 1e-12; the arrays are compared bit for bit).
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htc_core.features import extract
from htc_core.formats import native, typedjson

ROOT = Path(__file__).resolve().parents[1]
REAL = sorted(p for p in glob.glob(str(ROOT / "sample_runs" / "*" / "*.jsonl")) if "/_" not in p)
REAL += sorted(glob.glob(str(ROOT.parent / "shared" / "data" / "uala-hotpotqa" / "*.jsonl")))


def _read(paths, monkeypatch, typed: bool):
    """(trace set, report, lines the typed decode took) of ``native.read``, with or without the typed decode."""
    taken = []
    real = typedjson.decode_steps

    def spy(raw):
        out = real(raw) if typed else None
        taken.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(native, "decode_steps", spy)
        ts, rep = native.read(paths)
    return ts, rep, sum(taken)


def _problems(rep):
    return [(p.severity, p.file, p.line, p.field, p.reason, p.value, p.trajectory_id) for p in rep.problems]


def _assert_same(a, b):
    assert a.n_trajectories == b.n_trajectories
    for name in ("logprob", "top_logprobs", "step_offsets", "traj_offsets"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and x.dtype == y.dtype, name
        assert np.array_equal(x, y, equal_nan=True), name
    for name in ("step_name", "step_text", "tokens", "top_tokens"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert list(x) == list(y), name
    assert a.meta.equals(b.meta)
    for i in range(a.n_trajectories):
        assert json.dumps(a.trajectory(i), default=str) == json.dumps(b.trajectory(i), default=str)


@pytest.mark.parametrize("path", REAL, ids=lambda p: Path(p).name)
def test_real_files_read_the_same_both_ways(path, monkeypatch):
    fast, rep_fast, taken = _read(path, monkeypatch, typed=True)
    ref, rep_ref, _ = _read(path, monkeypatch, typed=False)
    assert taken == fast.n_trajectories > 0  # every line of these clean files went the typed way
    _assert_same(fast, ref)
    assert _problems(rep_fast) == _problems(rep_ref)
    assert (rep_fast.lines_read, rep_fast.trajectories_read) == (rep_ref.lines_read, rep_ref.trajectories_read)
    f1, f2 = extract(fast), extract(ref)
    assert list(f1.ids) == list(f2.ids)
    np.testing.assert_allclose(f1.values, f2.values, rtol=0, atol=1e-12, equal_nan=True)


def test_real_files_exist():
    assert len(REAL) >= 10, REAL  # sample_runs/ and the shared UALA HotpotQA runs


def _line(steps, **top):
    return {"id": "t", "success": True, "steps": steps, **top}


_ROW = [-0.1, -2.0]
GOOD_STEP = {"name": "a", "logprobs": [-0.1, -0.5], "top_logprobs": [_ROW, [-0.5, -1.0]]}
#: lines the typed decode must refuse (``decode_steps`` None): each then reads exactly as the reference does
REFUSED = {
    "nested array in a row": _line([{**GOOD_STEP, "top_logprobs": [[-0.1, [-2.0]], [-0.5, -1.0]]}]),
    "empty and doubled arrays that keep the count": _line([{**GOOD_STEP, "top_logprobs": [
        [-0.1, -0.2, []], [-0.5, [-1.0, -2.0], -3.0]]}]),
    "nested array in logprobs": _line([{"name": "a", "logprobs": [[-0.1], -0.5]}]),
    "bool among logprobs": _line([{"name": "a", "logprobs": [-0.1, True]}]),
    "bool among alternatives": _line([{**GOOD_STEP, "top_logprobs": [[-0.1, False], [-0.5, -1.0]]}]),
    "string number": _line([{"name": "a", "logprobs": [-0.1, "-1"]}]),
    "null logprob": _line([{"name": "a", "logprobs": [-0.1, None]}]),
    "ragged rows": _line([{**GOOD_STEP, "top_logprobs": [[-0.1, -2.0, -3.0], [-0.5]]}]),
    "rows != tokens": _line([{**GOOD_STEP, "top_logprobs": [_ROW]}]),
    "a number as a row": _line([{**GOOD_STEP, "top_logprobs": [-0.1, -0.5]}]),
    "an object as a row": _line([{**GOOD_STEP, "top_logprobs": [{"a": -0.1}, {"b": -0.5}]}]),
    "empty step": _line([GOOD_STEP, {"name": "b", "logprobs": []}]),
    "no steps": _line([]),
    "step not an object": _line([GOOD_STEP, [-0.1]]),
    "top_logprobs in metadata": {**_line([GOOD_STEP]), "metadata": {"top_logprobs": [[-1.0]]}},
    "top_logprobs as a text": _line([{**GOOD_STEP, "text": "top_logprobs"}]),
    "deep metadata": {**_line([GOOD_STEP]), "metadata": json.loads("[" * 260 + "]" * 260)},
    "not an object": [GOOD_STEP],
}
#: raw lines (not from json.dumps) the typed decode must refuse
REFUSED_RAW = {
    "repeated step key": b'{"id":"t","steps":[{"logprobs":[-0.1],"logprobs":[-0.2,-0.3]}]}',
    "repeated record key": b'{"id":"t","id":"u","steps":[{"logprobs":[-0.1]}]}',
    "lone surrogate": b'{"id":"t","steps":[{"name":"\\ud800","logprobs":[-0.1]}]}',
    "number out of range": b'{"id":"t","steps":[{"logprobs":[-1e400]}]}',
    "NaN": b'{"id":"t","steps":[{"logprobs":[NaN]}]}',
    "huge integer": b'{"id":"t","steps":[{"logprobs":[-123456789012345678901234567890]}]}',
    "truncated": b'{"id":"t","steps":[{"logprobs":[-0.1',
    "invalid UTF-8": b'{"id":"t","steps":[{"name":"\xff","logprobs":[-0.1]}]}',
    "escaped key": b'{"id":"t","steps":[{"logprobs":[-0.1],"top\\u005flogprobs":[[-0.1,[]]]}]}',
    "byte order mark inside the file": b'\xef\xbb\xbf{"id":"t","steps":[{"logprobs":[-0.1]}]}',
    "two documents on a line": b'{"id":"t","steps":[{"logprobs":[-0.1]}]} {"id":"u"}',
    # the skeleton proof (numbers and blanks deleted): look-alikes the deletion makes, and arrays whose skeleton
    # is that of one number
    "key look-alike made by the deletion": b'{"id":"t","steps":[{"logprobs":[-0.1],"top_3logprobs":[[-0.1]]}]}',
    "empty row with a one-number skeleton": b'{"id":"t","steps":[{"logprobs":[-0.1,-0.2],"top_logprobs":[[-0.1],[]]}]}',
    "blank logprobs": b'{"id":"t","steps":[{"logprobs":[ ]}]}',
    "null logprobs": b'{"id":"t","steps":[{"logprobs":null}]}',
    "logprobs as a number": b'{"id":"t","steps":[{"logprobs":-0.1}]}',
    "rows of another width on the next step": b'{"id":"t","steps":[{"logprobs":[-0.1],"top_logprobs":[[-0.1,-1]]},'
                                              b'{"logprobs":[-0.1],"top_logprobs":[[-0.1]]}]}',
    "null alternatives on one step of two": b'{"id":"t","steps":[{"logprobs":[-0.1],"top_logprobs":[[-0.1,-1]]},'
                                            b'{"logprobs":[-0.1],"top_logprobs":null}]}',
    # the next step has as many entries as the last one's keys (``typedjson._step`` reads those keys directly)
    "a repeated key on the next step, as many entries": b'{"id":"t","steps":[{"name":"a","logprobs":[-0.1],'
                                                        b'"top_logprobs":[[-0.1,-2]]},{"logprobs":[-0.2],'
                                                        b'"logprobs":[-0.2],"top_logprobs":[[-0.2,-3]]}]}',
    "no alternatives on the next step, as many entries": b'{"id":"t","steps":[{"name":"a","logprobs":[-0.1],'
                                                         b'"top_logprobs":[[-0.1,-2]]},{"name":"b","text":"c",'
                                                         b'"logprobs":[-0.2]}]}',
}
#: raw lines the typed decode takes (the skeleton proof holds) and whose values the reference path judges the same
TAKEN_RAW = {
    "exponents, signs and blanks": b'{ "id" : "t" , "steps" : [ { "logprobs" : [ -1.5e-3 , -2E+1, -0 ,0, -3 ] ,\t'
                                   b'"top_logprobs" : [ [-1.5e-3,-2E1 ] ,[ 0,-1],[-0.0 , -1],[0,-1],[-3,-4]] } ] }',
    "null alternatives everywhere": b'{"id":"t","steps":[{"logprobs":[-0.1],"top_logprobs":null},{"logprobs":[-0.2]}]}',
    "a positive exponent": b'{"id":"t","steps":[{"logprobs":[-0.1,1e+2]}]}',
    "an escaped key in a text (not a key: its quote is escaped)":
        b'{"id":"t","steps":[{"logprobs":[-0.1],"text":"a \\"logprobs\\": [1] 2"}]}',
    "keys in another order": b'{"steps":[{"top_logprobs":[[-0.1,-2]],"name":"a","logprobs":[-0.1]}],"id":"t"}',
    "another key on the next step, as many entries": b'{"id":"t","steps":[{"name":"a","logprobs":[-0.1],'
                                                     b'"top_logprobs":[[-0.1,-2]]},{"text":"b","logprobs":[-0.2],'
                                                     b'"top_logprobs":[[-0.2,-3]]}]}',
    "fewer keys, then more again": b'{"id":"t","steps":[{"name":"a","text":"x","logprobs":[-0.1]},'
                                   b'{"logprobs":[-0.2]},{"name":"c","text":null,"logprobs":[-0.3]}]}',
}
#: lines the typed decode takes but whose values the reference path must judge (clip, sentinel, order, ids)
JUDGED = {
    "tiny positive value": _line([{**GOOD_STEP, "logprobs": [-0.1, 1e-9]}]),
    "sentinel": _line([{**GOOD_STEP, "logprobs": [-0.1, -9999.0]}]),
    "unsorted alternatives": _line([{**GOOD_STEP, "top_logprobs": [[-2.0, -0.1], [-0.5, -1.0]]}]),
    "top on some steps only": _line([GOOD_STEP, {"name": "b", "logprobs": [-0.3]}]),
    "ids": {**_line([GOOD_STEP]), "id": 7},
    "bool id": {**_line([GOOD_STEP]), "id": True},
    "blank id": {**_line([GOOD_STEP]), "id": "  "},
    "bad success": {**_line([GOOD_STEP]), "success": "maybe"},
    "tokens of the wrong length": _line([{**GOOD_STEP, "tokens": ["a"]}]),
    "bad latency": _line([{**GOOD_STEP, "latency_s": -3}]),
    "verbalized percent": {**_line([GOOD_STEP]), "verbalized_confidence": 80},
    "spaced and pretty": _line([GOOD_STEP, {**GOOD_STEP, "name": "b"}]),
}


def _write(tmp_path, name, lines):
    p = tmp_path / f"{name[:20].replace(' ', '_')}.jsonl"
    p.write_bytes(b"\n".join(ln if isinstance(ln, bytes) else json.dumps(ln).encode() for ln in lines) + b"\n")
    return p


@pytest.mark.parametrize("name", list(REFUSED) + list(REFUSED_RAW))
def test_hostile_lines_are_refused_and_read_as_the_reference_does(name, tmp_path, monkeypatch):
    bad = REFUSED.get(name)
    raw = REFUSED_RAW.get(name) or json.dumps(bad).encode()
    assert typedjson.decode_steps(raw) is None or native.typed_record(raw, file="f", line=1, report=_Rep()) is None
    good = _line([GOOD_STEP], id="ok")
    p = _write(tmp_path, name, [good, raw, {**good, "id": "ok2"}])
    fast, rep_fast, taken = _read(p, monkeypatch, typed=True)
    ref, rep_ref, _ = _read(p, monkeypatch, typed=False)
    assert taken >= 2  # the good lines around it went the typed way
    _assert_same(fast, ref)
    assert _problems(rep_fast) == _problems(rep_ref)
    assert {"ok", "ok2"} <= set(fast.ids)  # valid lines are kept


@pytest.mark.parametrize("name", list(TAKEN_RAW))
def test_lines_the_skeleton_proof_takes_read_as_the_reference_does(name, tmp_path, monkeypatch):
    raw = TAKEN_RAW[name]
    assert typedjson.decode_steps(raw) is not None
    p = _write(tmp_path, name, [raw, _line([GOOD_STEP], id="ok")])
    fast, rep_fast, taken = _read(p, monkeypatch, typed=True)
    ref, rep_ref, _ = _read(p, monkeypatch, typed=False)
    assert taken == 2
    _assert_same(fast, ref)
    assert _problems(rep_fast) == _problems(rep_ref)


class _Rep:
    """A report that fails the test when the typed path reports anything before it refuses."""

    def __getattr__(self, name):
        raise AssertionError(f"typed path used report.{name} on a line it refused")


@pytest.mark.parametrize("name", list(JUDGED))
def test_lines_judged_on_values_read_as_the_reference_does(name, tmp_path, monkeypatch):
    line = JUDGED[name]
    raw = json.dumps(line, indent=1 if name == "spaced and pretty" else None).replace("\n", " ").encode()
    p = _write(tmp_path, name, [raw, _line([GOOD_STEP], id="ok")])
    fast, rep_fast, _ = _read(p, monkeypatch, typed=True)
    ref, rep_ref, _ = _read(p, monkeypatch, typed=False)
    _assert_same(fast, ref)
    assert _problems(rep_fast) == _problems(rep_ref)


_num = st.one_of(st.floats(-50, 0, allow_nan=False), st.integers(-50, 0), st.booleans(), st.none(),
                 st.just("-1"), st.just([]), st.just([-1.0]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lp=st.lists(_num, min_size=0, max_size=4),
       rows=st.lists(st.lists(_num, min_size=0, max_size=3), min_size=0, max_size=4))
def test_property_any_step_arrays_read_as_the_reference_does(lp, rows, tmp_path, monkeypatch):
    line = _line([{"name": "s", "logprobs": lp, "top_logprobs": rows}])
    p = _write(tmp_path, "prop", [line, _line([GOOD_STEP], id="ok")])
    fast, rep_fast, _ = _read(p, monkeypatch, typed=True)
    ref, rep_ref, _ = _read(p, monkeypatch, typed=False)
    _assert_same(fast, ref)
    assert _problems(rep_fast) == _problems(rep_ref)


def test_threads_each_decode_their_own_lines():
    from concurrent.futures import ThreadPoolExecutor

    lines = [json.dumps(_line([{**GOOD_STEP, "logprobs": [-0.01 * i, -0.5]}], id=f"t{i}")).encode()
             for i in range(200)]
    with ThreadPoolExecutor(4) as ex:
        out = list(ex.map(typedjson.decode_steps, lines))
    assert [o[0]["id"] for o in out] == [f"t{i}" for i in range(200)]
    assert [o[1][0] for o in out] == [-0.01 * i for i in range(200)]


def test_a_value_kept_alive_does_not_block_the_next_line():
    line = json.dumps(_line([GOOD_STEP])).encode()
    doc = typedjson._parser().parse(line)  # a value of the shared parser still alive
    assert typedjson.decode_steps(line) is not None
    del doc


def test_a_line_over_the_cap_takes_the_general_path(monkeypatch):
    line = json.dumps(_line([GOOD_STEP])).encode()
    monkeypatch.setattr(typedjson, "MAX_LINE", len(line) - 1)
    assert typedjson.decode_steps(line) is None


_BLANK = st.sampled_from(["", " ", "\t", "  ", "\r\n "])


def _spelled(value, data) -> str:
    """``value`` as JSON text with random blanks and number spellings (exponents, signs, integers)."""
    b = lambda: data.draw(_BLANK)  # noqa: E731
    if isinstance(value, list):
        return "[" + b() + ("," + b()).join(_spelled(v, data) + b() for v in value) + "]"
    if isinstance(value, float):
        fmt = data.draw(st.sampled_from(["{!r}", "{:e}", "{:E}", "{:.3e}"]))
        return fmt.format(value)
    return json.dumps(value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lp=st.lists(_num, min_size=0, max_size=4),
       rows=st.one_of(st.none(), st.lists(st.lists(_num, min_size=0, max_size=3), min_size=0, max_size=4)),
       data=st.data())
def test_property_spelled_step_arrays_read_as_the_reference_does(lp, rows, data, tmp_path, monkeypatch):
    """The skeleton proof against numbers written with exponents and blanks anywhere, next to bools, null,
    strings, empty and nested arrays."""
    top = "" if rows is None else f', "top_logprobs" :{_spelled(rows, data)}'
    raw = f'{{"id": "t", "steps": [{{"name": "s", "logprobs": {_spelled(lp, data)}{top}}}]}}'.encode()
    p = _write(tmp_path, "spelled", [raw, _line([GOOD_STEP], id="ok")])
    fast, rep_fast, _ = _read(p, monkeypatch, typed=True)
    ref, rep_ref, _ = _read(p, monkeypatch, typed=False)
    _assert_same(fast, ref)
    assert _problems(rep_fast) == _problems(rep_ref)


def test_line_arrays_share_slabs_without_overlapping(monkeypatch):
    """Each line's numbers are a slice of a shared slab (issue 29: fewer page faults); consecutive lines never
    overlap, a new slab starts when one is full, a line of more than a quarter slab gets its own memory, and the
    arrays outlive the slab's release."""
    monkeypatch.setattr(typedjson, "SLAB_BYTES", 1 << 20)
    typedjson.release_slab()
    sizes = [10, 20_000, 12_700, 100, 5]  # 256 kB slab: the first three fill it; then a slab of 512 kB
    got = [typedjson.line_array([np.full(n, -float(i)).tobytes()]) for i, n in enumerate(sizes)]
    big = typedjson.line_array([np.full(40_000, -9.0).tobytes()])  # 320 kB > 1 MB / 4
    typedjson.release_slab()
    for i, (arr, n) in enumerate(zip(got, sizes)):
        assert arr.shape == (n,) and arr.flags.writeable and (arr == -float(i)).all()
    assert got[0].base is got[1].base is got[2].base and got[0].base.size == 256 << 7  # 32k floats
    assert got[3].base is not got[2].base and got[3].base.size == 512 << 7
    assert type(big.base.obj) is bytearray and (big == -9.0).all()
    got[0][:] = 1.0  # writing one line's array leaves the next one alone
    assert (got[1] == -1.0).all()


def test_slabs_are_reused_only_once_no_array_of_them_lives(monkeypatch):
    """A full slab is reused for the next lines once every array carved from it (and every view of those) is
    gone, and never while one lives (issue 29: ``htc features`` reads piece after piece through the same slabs
    instead of fresh memory); a line that fits no free slab gets a new one."""
    monkeypatch.setattr(typedjson, "SLAB_BYTES", 1 << 20)
    typedjson.release_slab()
    line = 8_192  # 64 kB: 4 fill the first slab (256 kB), 8 the second (512 kB)

    def arrays(value, n):
        return [typedjson.line_array([np.full(line, value).tobytes()]) for _ in range(n)]

    first = arrays(-1.0, 4)
    slab0 = id(first[0].base)  # the id only: a reference would keep the slab in use
    kept = first[3][5:].reshape(-1, 3)  # a view of a view keeps the slab alive
    del first
    second = arrays(-2.0, 8)  # slab0 is full and in use: a new slab, which they fill
    slab1 = id(second[0].base)
    assert slab1 != slab0 and {id(a.base) for a in second} == {slab1} and (kept == -1.0).all()
    del kept
    third = arrays(-3.0, 4)  # slab1 is full and in use; slab0 is free: reused
    assert {id(a.base) for a in third} == {slab0} and all((a == -2.0).all() for a in second)
    del second
    fourth = arrays(-4.0, 1)  # slab0 is full again; slab1 is free
    assert id(fourth[0].base) == slab1 and all((a == -3.0).all() for a in third)
    typedjson.release_slab()
