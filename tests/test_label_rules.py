"""Label rules: each kind on hand-made cases, on the project's own runs, and a property test that a rule never
labels a run lacking the fields it needs."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.formats import load
from htc_core.label_rules import ANSWER_KINDS, AnswerRule, FieldRule, apply_rule, preview


def _meta(rows):
    return pd.DataFrame([{"id": f"r{i}", "answer": a, "gold": g, "metadata": json.dumps(md) if md is not None else None}
                         for i, (a, g, md) in enumerate(rows)])


@pytest.mark.parametrize("rule,answer,gold,expected", [
    (AnswerRule("exact"), " Paris ", "Paris", 1.0),
    (AnswerRule("exact"), "paris", "Paris", 0.0),
    (AnswerRule("normalized"), "The Paris!", "paris", 1.0),
    (AnswerRule("numeric", abs_tol=0.011), "It is 1,234.005 km", "1234", 1.0),
    (AnswerRule("numeric", rel_tol=0.001), "about 1240", "1234", 0.0),
    (AnswerRule("numeric"), "no idea", "12", 0.0),
    (AnswerRule("numeric"), "12", "twelve", math.nan),
    (AnswerRule("contains"), "It is in Buenos Aires, Argentina.", "argentina", 1.0),
    (AnswerRule("regex"), "colour", "colou?r", 1.0),
    (AnswerRule("regex"), "x", "(", math.nan),
    (AnswerRule("regex", pattern=r"^\s*{gold}\s*$"), " a.b ", "a.b", 1.0),
    (AnswerRule("regex", pattern=r"^{gold}$"), "axb", "a.b", 0.0),
    (AnswerRule("choice"), "(b) because", "B", 1.0),
    (AnswerRule("choice"), "Answer: C.", "b", 0.0),
    (AnswerRule("choice"), "I think so", "B", 0.0),
    (AnswerRule("choice"), "B", "Paris", math.nan),
    (AnswerRule("exact"), None, "x", math.nan),
    (AnswerRule("exact"), "x", "  ", math.nan),
])
def test_answer_rules(rule, answer, gold, expected):
    got = apply_rule(rule, _meta([(answer, gold, None)]))[0]
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


@pytest.mark.parametrize("rule,md,expected", [
    (FieldRule("passed"), {"passed": True}, 1.0),
    (FieldRule("passed"), {"passed": "fail"}, 0.0),
    (FieldRule("passed"), {"passed": 0.5}, math.nan),
    (FieldRule("score", ">=", 0.7), {"score": "0.7"}, 1.0),
    (FieldRule("score", ">=", 0.7), {"score": 0.69}, 0.0),
    (FieldRule("reward", ">", 0), {"reward": float("nan")}, math.nan),
    (FieldRule("reward", ">", 0), {}, math.nan),
    (FieldRule("reward", ">", 0), None, math.nan),
])
def test_field_rules(rule, md, expected):
    got = apply_rule(rule, _meta([("a", "b", md)]))[0]
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


def test_bad_rules_are_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        AnswerRule("fuzzy")
    with pytest.raises(ValueError, match="abs_tol"):
        AnswerRule("numeric", abs_tol=-1)
    with pytest.raises(ValueError, match="pattern"):
        AnswerRule("regex", pattern="(")
    with pytest.raises(ValueError, match="op must be one of"):
        FieldRule("score", "~")
    with pytest.raises(ValueError, match="threshold"):
        FieldRule("score", ">=", float("inf"))


def test_numeric_rule_reproduces_the_sample_runs_labels():
    ts, _ = load("sample_runs/units")
    p = preview(AnswerRule("numeric", abs_tol=0.011, rel_tol=0.005), ts.meta, n_examples=3)
    y = ts.meta["success"].astype(float).to_numpy()
    assert p.n_success + p.n_failure == len(y) and np.array_equal(p.labels, y)
    assert len(p.success_examples) == 3 and len(p.failure_examples) == 3
    assert list(p.success_examples.columns) == ["id", "answer", "gold"]


def test_preview_counts_the_unlabeled_by_reason():
    p = preview(AnswerRule("numeric"), _meta([("1", "1", None), ("1", None, None), ("2", "two", None)]))
    assert (p.n_success, p.n_failure) == (1, 0) and p.unlabeled == {"no gold": 1, "gold is not a number": 1}


texts = st.one_of(st.none(), st.just(""), st.just("  "), st.text(max_size=12),
                  st.sampled_from(["B", "(c)", "12", "1,000.5", "the Paris", "a.b", "["]))
values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True),
                   st.text(max_size=6), st.sampled_from(["yes", "fail", "0.7", "NaN"]))
metas = st.one_of(st.none(), st.dictionaries(st.sampled_from(["reward", "passed", "score", "other"]), values,
                                             max_size=3))
rules = st.one_of(st.builds(AnswerRule, kind=st.sampled_from(ANSWER_KINDS), abs_tol=st.floats(0, 2),
                            rel_tol=st.floats(0, 1)),
                  st.builds(FieldRule, field=st.sampled_from(["reward", "passed", "score"]),
                            op=st.sampled_from(["truthy", ">=", ">", "<=", "<", "=="]), threshold=st.floats(-2, 2)))


@settings(max_examples=300, deadline=None)
@given(rule=rules, rows=st.lists(st.tuples(texts, texts, metas), min_size=1, max_size=6))
def test_a_rule_never_labels_a_run_lacking_its_fields(rule, rows):
    y = apply_rule(rule, _meta(rows))
    assert y.shape == (len(rows),) and set(np.unique(y[np.isfinite(y)])) <= {0.0, 1.0}
    for (answer, gold, md), v in zip(rows, y):
        if isinstance(rule, AnswerRule):
            lacking = answer is None or gold is None or not gold.strip()
        else:
            val = (md or {}).get(rule.field)
            lacking = val is None or (isinstance(val, float) and not math.isfinite(val))
        if lacking:
            assert math.isnan(v), (rule, answer, gold, md, v)
