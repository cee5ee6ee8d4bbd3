"""The argparse types of htc_core.cli.common: one positive-integer check behind --chunk-size / --workers
(``1,000`` accepted) and behind --seeds, --repeats, --max-steps and ``htc label next -n`` (int() as written)."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from htc_core.cli import main
from htc_core.cli.common import positive_int, seeds_arg


def _reference(text: str, value: str) -> int | str:
    """The former inline check (three copies), as the oracle: the value or the error message."""
    try:
        v = int(text)
    except ValueError:
        return f"expected a positive integer, got {value!r}"
    return v if v >= 1 else f"expected a positive integer, got {value!r}"


def _outcome(fn, value: str) -> int | str:
    try:
        return fn(value)
    except argparse.ArgumentTypeError as e:
        return str(e)


@given(st.one_of(st.integers(-5, 10**7).map(str), st.integers(1, 10**7).map(lambda n: f"{n:,}"),
                 st.text(alphabet="0123456789,_ -+x.", max_size=8)))
def test_both_types_answer_as_the_former_checks(value):
    assert _outcome(seeds_arg, value) == _reference(value, value)
    assert _outcome(positive_int, value) == _reference(value.replace(",", "").replace("_", ""), value)


def test_label_next_n_uses_the_shared_check(capsys):
    with pytest.raises(SystemExit):
        main(["label", "next", "sample_runs/units/units_SmolLM2-135M-greedy.jsonl", "-n", "0"])
    assert "expected a positive integer, got '0'" in capsys.readouterr().err
    assert seeds_arg("1_000") == 1000 and positive_int("1,000") == 1000
    with pytest.raises(argparse.ArgumentTypeError):
        seeds_arg("1,000")
