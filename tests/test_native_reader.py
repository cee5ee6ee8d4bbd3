"""htc-trace JSONL reader: real broken files, clear messages, nothing valid lost."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import LOG, make_traj, write_jsonl
from htc_core.formats import native

GOOD = make_traj("good", [([LOG(0.9), LOG(0.8)], None)])


def _read_lines(tmp_path, lines, name="in.jsonl"):
    p = tmp_path / name
    with open(p, "wb") as fh:
        for ln in lines:
            fh.write(ln if isinstance(ln, bytes) else (ln if isinstance(ln, str) else json.dumps(ln)).encode())
            fh.write(b"\n")
    return native.read(p)


def _traj(**over):
    d = make_traj("bad", [([LOG(0.5), LOG(0.6)], [[LOG(0.5), LOG(0.2)], [LOG(0.6), LOG(0.1)]])])
    d.update(over)
    return d


def _step(**over):
    st_ = {"name": "s", "logprobs": [LOG(0.5), LOG(0.6)]}
    st_.update(over)
    return _traj(steps=[st_])


BROKEN = {
    "malformed_json": ('{"id": "x", "steps": [', None, "truncated JSON"),
    "not_an_object": ("[1, 2, 3]", None, "must be a JSON object"),
    "missing_id": ({"steps": [{"logprobs": [-0.1]}]}, "id", "missing trajectory id"),
    "missing_steps": ({"id": "bad"}, "steps", "missing 'steps'"),
    "steps_not_list": (_traj(steps={"a": 1}), "steps", "must be a list"),
    "missing_logprobs": (_step(logprobs=None), "steps[0].logprobs", "missing"),
    "logprobs_string": (_step(logprobs="-0.1,-0.2"), "steps[0].logprobs", "must be a list of numbers"),
    "nan_logprob": ('{"id": "bad", "steps": [{"logprobs": [-0.1, NaN]}]}', "steps[0].logprobs[1]", "must be finite"),
    "inf_logprob": ('{"id": "bad", "steps": [{"logprobs": [-Infinity]}]}', "steps[0].logprobs[0]", "must be finite"),
    "positive_logprob": (_step(logprobs=[-0.1, 0.5]), "steps[0].logprobs[1]", "must be <= 0"),
    "bool_logprob": (_step(logprobs=[True]), "steps[0].logprobs[0]", "must be a number"),
    "sentinel_chosen": (_step(logprobs=[-9999.0]), "steps[0].logprobs[0]", "sentinel"),
    "top_length_mismatch": (_step(top_logprobs=[[-0.1]]), "steps[0].top_logprobs", "has 1 entries but logprobs has 2"),
    "top_positive": (_step(top_logprobs=[[-0.1, 2.0], [-0.2]]), "steps[0].top_logprobs[0][1]", "must be <= 0"),
    "tokens_mismatch": (_step(tokens=["a"]), "steps[0].tokens", "has 1 entries but logprobs has 2"),
    "success_string": (_traj(success="yes"), "success", "must be true, false or null"),
    "success_int": (_traj(success=1), "success", "must be true, false or null"),
    "all_steps_empty": (_traj(steps=[{"logprobs": []}]), "steps", "all 1 steps are empty"),
    "no_steps": (_traj(steps=[]), "steps", "no steps"),
    "invalid_utf8": (b'{"id": "bad\xff\xfe", "steps": []}', None, "invalid UTF-8"),
    "deeply_nested": ("[" * 100000 + "]" * 100000, None, None),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_line_is_reported_and_good_lines_kept(tmp_path, case):
    line, field, reason = BROKEN[case]
    ts, rep = _read_lines(tmp_path, [GOOD, line, make_traj("good2", [([LOG(0.3)], None)])])
    assert list(ts.ids) == ["good", "good2"], rep.summary()
    assert rep.rejected == 1 and rep.trajectories_read == 2
    (p,) = rep.errors
    assert p.line == 2 and p.file.endswith("in.jsonl")
    if field is not None:
        assert p.field == field
    if reason is not None:
        assert reason in p.reason, p.reason
    assert str(p).startswith(p.file + ":2")


def test_duplicate_ids_in_one_file_keep_the_first(tmp_path):
    a = make_traj("dup", [([LOG(0.9)], None)])
    b = make_traj("dup", [([LOG(0.1)], None)])
    ts, rep = _read_lines(tmp_path, [a, b])
    assert ts.n_trajectories == 1 and ts.logprob[0] == pytest.approx(LOG(0.9))
    assert rep.errors[0].line == 2 and "duplicate" in rep.errors[0].reason


def test_same_id_in_two_files_is_kept_under_a_new_name(tmp_path):
    write_jsonl(tmp_path / "run1.jsonl", [make_traj("q1", [([LOG(0.9)], None)])])
    write_jsonl(tmp_path / "run2.jsonl", [make_traj("q1", [([LOG(0.2)], None)])])
    ts, rep = native.read(tmp_path)
    assert list(ts.ids) == ["q1", "q1@run2"] and rep.rejected == 0
    assert "kept as 'q1@run2'" in rep.warnings[0].reason


def test_empty_steps_dropped_and_tiny_positive_clipped(tmp_path):
    d = make_traj("a", [([], None), ([LOG(0.5), 5e-7], None), ([], None)])
    ts, rep = _read_lines(tmp_path, [d])
    assert ts.n_steps == 1 and rep.empty_steps_dropped == 2 and rep.clipped_values == 1
    assert ts.logprob[1] == 0.0


def test_vllm_sentinel_in_alternatives_is_missing(tmp_path):
    d = make_traj("a", [([LOG(0.5)], [[-9999.0, LOG(0.5), LOG(0.2)]])])
    ts, rep = _read_lines(tmp_path, [d])
    assert rep.rejected == 0
    np.testing.assert_allclose(ts.top_logprobs[0][:2], [LOG(0.5), LOG(0.2)])
    assert np.isnan(ts.top_logprobs[0][2])


def test_verbalized_confidence_forms(tmp_path):
    rows = [_traj(id="a", verbalized_confidence=0.7), _traj(id="b", verbalized_confidence="85%"),
            _traj(id="c", verbalized_confidence=90), _traj(id="d", verbalized_confidence="high")]
    ts, rep = _read_lines(tmp_path, rows)
    np.testing.assert_allclose(ts.meta["verbalized_confidence"].to_numpy()[:3], [0.7, 0.85, 0.9])
    assert np.isnan(ts.meta["verbalized_confidence"].iat[3])
    assert any("not a number" in w.reason for w in rep.warnings)


def test_empty_file_missing_file_and_empty_directory(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    ts, rep = native.read(tmp_path / "empty.jsonl")
    assert ts.n_trajectories == 0 and "file is empty" in rep.errors[0].reason
    ts, rep = native.read(tmp_path / "nope.jsonl")
    assert "no such file" in rep.errors[0].reason
    (tmp_path / "d").mkdir()
    ts, rep = native.read(tmp_path / "d")
    assert "holds no" in rep.errors[0].reason


def test_blank_lines_are_ignored_and_line_numbers_stay_true(tmp_path):
    ts, rep = _read_lines(tmp_path, ["", GOOD, "   ", '{"id": 1'])
    assert ts.n_trajectories == 1 and rep.errors[0].line == 4


def test_reader_streams_without_holding_the_file(tmp_path):
    """A 24 MB file whose bulk is an ignored field: peak memory stays far below the file size."""
    pad = "x" * 200_000
    p = tmp_path / "big.jsonl"
    with open(p, "w") as fh:
        for i in range(120):
            fh.write(json.dumps({**make_traj(f"t{i}", [([LOG(0.5)] * 20, None)]), "padding": pad}) + "\n")
    size = p.stat().st_size
    tracemalloc.start()
    ts, rep = native.read(p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ts.n_trajectories == 120
    assert peak < size / 8, (peak, size)


# ----------------------------------------------------------- property tests
_good_step = st.builds(
    lambda lps, k: {"logprobs": lps, "top_logprobs": [[v] + [v - 1.0 - j for j in range(k)] for v in lps]},
    st.lists(st.floats(min_value=-30, max_value=0, allow_nan=False), min_size=1, max_size=12),
    st.integers(0, 4),
)
_good_traj = st.builds(lambda steps, ok: {"steps": steps, "success": ok},
                       st.lists(_good_step, min_size=1, max_size=5), st.sampled_from([True, False, None]))

_corruptions = st.sampled_from([
    lambda d: json.dumps(d)[:-3],                                             # truncated
    lambda d: json.dumps({**d, "steps": [{"logprobs": [0.5]}]}),              # positive
    lambda d: json.dumps({**d, "steps": "nope"}),                             # wrong type
    lambda d: json.dumps({k: v for k, v in d.items() if k != "steps"}),       # missing steps
    lambda d: json.dumps({**d, "success": "true"}),                           # non-boolean label
    lambda d: json.dumps({**d, "steps": [{"logprobs": [-1.0, -2.0], "top_logprobs": [[-1.0]]}]}),  # mismatch
    lambda d: json.dumps(d).replace('"steps"', '"steps" NaN', 1),             # garbage
    lambda d: json.dumps(d).encode()[:5] + b"\xff" + json.dumps(d).encode()[5:],  # invalid utf-8
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_good_traj, st.booleans(), _corruptions), min_size=1, max_size=25))
def test_property_valid_lines_kept_corrupted_reported(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("prop") / "p.jsonl"
    want_ids, bad_lines = [], []
    with open(path, "wb") as fh:
        for i, (traj, corrupt, how) in enumerate(rows, start=1):
            d = {"id": f"t{i}", **traj}
            if corrupt:
                out = how(d)
                fh.write(out if isinstance(out, bytes) else out.encode())
                bad_lines.append(i)
            else:
                fh.write(json.dumps(d).encode())
                want_ids.append(f"t{i}")
            fh.write(b"\n")
    ts, rep = native.read(path)
    assert list(ts.ids) == want_ids
    assert sorted(p.line for p in rep.errors) == bad_lines
    assert rep.trajectories_read == len(want_ids) and rep.rejected == len(bad_lines)
