"""Fuzz every reader with hostile values (issue 16): huge integers, numbers over the int-string limit, numbers
that overflow a float64, lone surrogates, deep nesting, a BOM, LF/CRLF/CR line endings.

Each example writes good one-trajectory lines (from the project's real recordings) with bad lines among them:
a good line whose value at a random path is replaced by a hostile JSON text. Asserted: no exception escapes,
every good line is kept, every bad line is reported exactly once (one error at its line), nothing else is.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from htc_core.formats import READERS, load
from hostile_records import HOSTILE, hostile_line, paths, templates, with_id

TEMPLATES = templates()
PATHS = {fmt: [paths(r) for r in recs] for fmt, recs in TEMPLATES.items()}


def test_every_reader_is_fuzzed():
    assert set(TEMPLATES) == set(READERS)


#: hostile raw JSON texts: the fixed ones plus generated integers, digit runs and nestings
raw_values = st.one_of(
    st.sampled_from(sorted(HOSTILE.values())),
    st.integers(min_value=10 ** 309, max_value=10 ** 420).map(lambda n: str(n)),
    st.integers(min_value=4301, max_value=6000).map(lambda n: "-" + "7" * n),
    st.integers(min_value=1, max_value=0xFFFF).filter(lambda c: 0xD800 <= c <= 0xDFFF or c < 0x80).map(
        lambda c: json.dumps(chr(0xD800 + c % 0x800)) if c >= 0x80 else '"\\udc%02x"' % c),
    st.integers(min_value=201, max_value=2500).map(lambda d: "[" * d + "]" * d),
)


@st.composite
def hostile_files(draw, fmt: str):
    recs = TEMPLATES[fmt]
    n = draw(st.integers(min_value=2, max_value=6))
    bad = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(lambda b: not all(b)))
    lines, good_ids, bad_lines = [], [], []
    for i, is_bad in enumerate(bad):
        t = draw(st.integers(min_value=0, max_value=len(recs) - 1))
        tid = f"t{i}"
        obj = with_id(fmt, recs[t], tid)
        if is_bad:
            p = draw(st.sampled_from(PATHS[fmt][t]))
            lines.append(hostile_line(obj, p, draw(raw_values)))
            bad_lines.append(i + 1)
        else:
            lines.append(json.dumps(obj, ensure_ascii=draw(st.booleans())))
            good_ids.append(tid)
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    data = (eol.join(lines) + draw(st.sampled_from([eol, ""]))).encode("utf-8")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data, good_ids, bad_lines


@pytest.mark.parametrize("fmt", sorted(TEMPLATES))
def test_reader_keeps_good_lines_and_reports_each_bad_line_once(fmt, tmp_path_factory):
    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(hostile_files(fmt))
    def check(case):
        data, good_ids, bad_lines = case
        path = tmp_path_factory.mktemp("fuzz") / "runs.jsonl"
        path.write_bytes(data)
        ts, rep = load(path, format=fmt)   # no exception may escape
        assert sorted(ts.ids) == sorted(good_ids), [str(p) for p in rep.errors]
        lines_with_errors = [p.line for p in rep.errors]
        for ln in bad_lines:
            assert lines_with_errors.count(ln) == 1, (ln, [str(p) for p in rep.errors])
        assert sorted(lines_with_errors) == bad_lines, [str(p) for p in rep.errors]
        assert rep.rejected == len(bad_lines)

    check()


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.lists(st.booleans(), min_size=2, max_size=5).filter(lambda b: not all(b)), raw_values, st.data())
def test_json_array_of_trajectories_goes_on_after_a_bad_element(tmp_path_factory, bad, raw, data):
    """Whole-document formats: a bad element of a streamed .json array is reported, the next ones are read."""
    recs = TEMPLATES["openai-chat"]
    parts, good = [], []
    for i, is_bad in enumerate(bad):
        obj = with_id("openai-chat", recs[i % len(recs)], f"t{i}")
        if is_bad:
            p = data.draw(st.sampled_from(PATHS["openai-chat"][i % len(recs)]))
            parts.append(hostile_line(obj, p, raw))
        else:
            parts.append(json.dumps(obj))
            good.append(f"t{i}")
    path = tmp_path_factory.mktemp("arr") / "runs.json"
    path.write_text("[\n" + ",\n".join(parts) + "\n]\n", encoding="utf-8")
    ts, rep = load(path, format="openai-chat")
    assert sorted(ts.ids) == good, [str(p) for p in rep.errors]
    assert len(rep.errors) == sum(bad)


@pytest.mark.parametrize("fmt", ["openai-chat", "responses", "completions", "smolagents", "atif"])
def test_whole_document_with_a_hostile_value_is_one_error(fmt, tmp_path_factory):
    """Whole-document files (.json): the document is the record; a hostile value in it is reported once."""
    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(st.data(), raw_values, st.booleans())
    def check(data, raw, bom):
        p = data.draw(st.sampled_from(PATHS[fmt][0]))
        text = hostile_line(with_id(fmt, TEMPLATES[fmt][0], "doc"), p, raw).encode("utf-8")
        path = tmp_path_factory.mktemp("doc") / "run.json"
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text)
        ts, rep = load(path, format=fmt)
        assert ts.n_trajectories == 0 and len(rep.errors) == 1, [str(e) for e in rep.errors]

    check()


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.lists(st.booleans(), min_size=2, max_size=6).filter(lambda b: not all(b)), st.data())
def test_labels_reader_keeps_good_rows_and_reports_each_bad_row_once(tmp_path_factory, bad, data):
    from htc_core.formats.labels import read_labels
    from htc_core.report import LoadReport

    rows, good = [], []
    for i, is_bad in enumerate(bad):
        row = {"id": f"t{i}", "success": bool(i % 2), "question": f"q{i}", "verbalized_confidence": 0.5}
        if is_bad:
            key = data.draw(st.sampled_from(["success", "question", "verbalized_confidence"]))
            rows.append(hostile_line(row, (key,), data.draw(raw_values)))
        else:
            rows.append(json.dumps(row))
            good.append(f"t{i}")
    eol = data.draw(st.sampled_from(["\n", "\r\n", "\r"]))
    path = tmp_path_factory.mktemp("labels") / "labels.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if data.draw(st.booleans()) else b"") + (eol.join(rows) + eol).encode())
    rep = LoadReport()
    out = read_labels(path, rep)
    assert sorted(out) == good
    assert sorted(p.line for p in rep.errors) == [i + 1 for i, b in enumerate(bad) if b]
    assert rep.rejected == 0
