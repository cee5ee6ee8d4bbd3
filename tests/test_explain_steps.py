"""One trajectory step by step, as the inspector shows it (htc_core.explain.steps)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from htc_core import explain
from htc_core.confidence import token_confidence
from htc_core.features import build_context
from htc_core.formats import load

from conftest import REPO


@pytest.fixture(scope="module")
def uala(uala_run_a):
    ts, _ = load(uala_run_a)
    return ts.take(np.arange(200))


def test_step_timeline_and_tokens(uala):
    ts = uala
    i = int(np.argmax(ts.steps_per_trajectory))
    tl = explain.step_timeline(ts, i)
    ctx = build_context(ts.take([i]))
    assert len(tl) == ts.steps_per_trajectory[i] and list(tl["step"]) == list(range(1, len(tl) + 1))
    assert np.allclose(tl["top1_confidence"], ctx.steps.top1) and np.allclose(tl["entropy"], ctx.steps.entropy)
    steps = explain.token_steps(ts, i)
    one = ts.take([i])
    r = token_confidence(one.logprob, one.top_logprobs).r
    assert sum(len(s.tokens) for s in steps) == one.n_tokens
    assert np.allclose(np.concatenate([s.probability for s in steps]), r)
    assert steps[0].tokens == [str(t) for t in one.tokens[: one.step_offsets[1]]]
    short = explain.token_steps(ts, i, max_tokens=5)
    assert sum(len(s.tokens) for s in short) == 5
    assert steps[0].lowest == pytest.approx(r[: one.step_offsets[1]].min())
    empty = [s for s in short if not s.tokens]
    assert empty and all(math.isnan(s.lowest) for s in empty)


def test_confidence_after_steps_is_the_model_on_each_prefix():
    import htc_core as htc
    from htc_core.explain import confidence_after_steps
    from htc_core.traces.prefix import prefixes

    ts, _ = htc.load(REPO / "sample_runs" / "strings")
    ts = ts.labeled()
    model = htc.HTCCalibrator("reduced", alphas=(0.1,)).fit(htc.extract(ts), ts.labels)
    i = int(np.argmax(ts.steps_per_trajectory))
    df = confidence_after_steps(model, ts, i)
    assert df.step.tolist() == list(range(1, ts.steps_per_trajectory[i] + 1))
    want = [model.predict_proba(htc.extract(prefixes(ts.take([i]), k)))[0, 1] for k in df.step]
    assert np.allclose(df.confidence, want, atol=1e-9, rtol=0)
    assert df.confidence.iloc[-1] == pytest.approx(model.predict_proba(htc.extract(ts.take([i])))[0, 1], abs=1e-9)
