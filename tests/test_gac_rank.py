"""The label-free ranking candidates of ``python -m htc_dev.bench gac_rank`` against synthetic run sets with a known
answer: which score each trusts, that their calibration maps never turn a ranking upside down, and the choice rule."""

import numpy as np
import pytest

from htc_core.calibration.metrics import auroc, expected_calibration_error
from htc_core.calibration.transfer_methods import sigmoid
from htc_dev.bench import gac_rank as gr


def synthetic_families(n=600, seed=0):
    """Scores [n, 3] of three families with one calibration: column 1 splits successes from failures (4 sd),
    columns 0 and 2 are noise; column 2 is undefined (NaN) on a tenth of the runs."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(float)
    S = rng.standard_normal((n, 3)) + y[:, None] * np.array([0.0, 4.0, 0.0])
    S[rng.random(n) < 0.1, 2] = np.nan
    return S, y, np.repeat(np.array(["a", "b", "c"], dtype=object), n // 3)


def test_set_level_choices_trust_the_score_that_splits_the_runs():
    S, y, g = synthetic_families()
    maps = gr.Maps(S, y, g)
    best = auroc(y, sigmoid(S[:, 1]))
    for method in ("bimodal", "bimodal-margin", "min_prob"):            # min_prob: column 1 is the default
        p = maps.confidences(method, S, 0.1)
        assert auroc(y, p) == pytest.approx(best)
        assert expected_calibration_error(y, p) < 0.06                  # one calibration across the families
    # spread: the score whose sd on the set is the largest multiple of its training sd
    assert maps.pick("spread", S * np.array([1.0, 3.0, 2.0])) == 1
    # consensus: two noisy copies of a score and the score itself; the score agrees most with the other two
    rng = np.random.default_rng(2)
    x = rng.standard_normal(600)
    copies = np.column_stack([x + rng.standard_normal(600), x + rng.standard_normal(600), x])
    assert maps.pick("consensus", copies) == 2
    assert maps.pick("consensus", np.column_stack([x, x, np.full(600, np.nan)])) == gr.DEFAULT   # two: the default
    # the noise columns alone: the choice cannot find a signal that is not there (AUROC about 1/2)
    assert abs(auroc(y, maps.confidences("seq_prob", S)) - 0.5) < 0.06


def test_per_run_mean_uses_the_defined_scores_of_each_run():
    S = np.array([[1.0, 3.0, np.nan], [1.0, 3.0, 5.0]])
    z = gr.weighted_mean(S, (1, 1, 1), np.zeros(3), np.ones(3))
    assert z.tolist() == [2.0, 3.0]
    assert gr.weighted_mean(np.full((1, 3), np.nan), (1, 1, 1), np.zeros(3), np.ones(3)).tolist() == [0.0]


def test_a_map_that_would_invert_the_ranking_is_made_flat_at_the_base_rate():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(400), (rng.random(400) < 0.3).astype(float)
    assert gr.increasing((0.5, -1.0), x, y) == (0.5, -1.0)
    a, b = gr.increasing((-0.5, 0.2), x, y)
    p = sigmoid(a * x + b)
    assert a == 1e-3 and p.mean() == pytest.approx(y.mean(), abs=1e-3)
    assert auroc(y, p) == pytest.approx(auroc(y, sigmoid(x)))         # the ranking stays the score's


def test_the_choice_prefers_fewer_clear_losses_then_more_met_then_the_smaller_deficit():
    def rows(*verdicts):
        return [{"ece": 0.1, "gap": {"verdict": v, "diff": d}} for v, d in verdicts]

    met, noise, clear = ("at least as well", 0.0), ("within noise", -0.05), ("clear loss", -0.2)
    assert gr.choose({"min_prob": rows(met, met, clear), "bimodal": rows(met, noise, noise)}) == "bimodal"
    assert gr.choose({"min_prob": rows(met, noise), "seq_prob": rows(met, met)}) == "seq_prob"
    assert gr.choose({"seq_prob": rows(met, noise), "min_prob": rows(met, noise)}) == "min_prob"   # ties: shipped
    assert gr.tally(rows(met, noise, clear))[:5] == (1, 1, 1, pytest.approx(0.25 / 3), 0.2)


def test_nearest_family_takes_the_best_signal_of_the_training_family_that_looks_alike():
    """Two training families: in "a" column 0 ranks (column 1 is noise), in "b" column 1 does, and "b"'s scores sit
    5 sd higher. A set that looks like "b" gets column 1; one that looks like "a", column 0."""
    rng = np.random.default_rng(3)
    n = 400
    y = (rng.random(2 * n) < 0.5).astype(float)
    S = rng.standard_normal((2 * n, 3))
    S[:n, 0] += 3 * y[:n]
    S[n:, 1] += 3 * y[n:]
    S[n:] += 5.0
    g = np.repeat(np.array(["a", "b"], dtype=object), n)
    maps = gr.Maps(S, y, g)
    assert [c for _, c in maps.families] == [0, 1]
    assert maps.pick("nearest-family", S[n:][:100]) == 1 and maps.pick("nearest-family", S[:n][:100]) == 0
