"""The sequence baselines cut every mini-batch and prediction chunk to its own longest run (issue 11: learning
curves under 10 minutes). The padding after a run is masked, so the cut must change no prediction: here the
trimmed path is compared with the untrimmed one (every batch at the full padded length of X) on real runs of
``sample_runs/`` whose lengths differ (8 to 192 tokens), to 1e-5."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from htc_core.formats import load

torch = pytest.importorskip("torch", reason="PyTorch is not installed (optional extra: pip install -e \".[learning]\")")

from htc_core.experiments.learning import _TorchInputs  # noqa: E402
from htc_core.experiments.sequence_models import LSTMBaseline, TransformerBaseline, token_sequences  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mixed():
    """80 real labeled runs of all four task families (train 60, test 20), the longest ones included."""
    ts, _ = load([str(REPO / "sample_runs")])
    ts = ts.labeled()
    lengths = ts.tokens_per_trajectory
    rng = np.random.default_rng(0)
    pick = np.concatenate([rng.choice(len(ts), 76, replace=False), np.argsort(lengths)[-4:]])
    pick = np.unique(pick)[:80]
    rng.shuffle(pick)
    sub = ts.take(pick)
    X, y = token_sequences(sub), sub.labels.astype(int)
    real = (~np.isnan(X[..., 0])).sum(axis=1)
    # the premise of the test: most runs are much shorter than X's padded length, so trimming really cuts
    assert X.shape[1] >= 150 and np.median(real) < X.shape[1] / 3
    return X[:60], y[:60], X[60:]


def _fit_predict(est, X, y, Xte, trim):
    est._trim_batches = trim                      # instance attribute: the reference path when False
    return est.fit(X, y).predict_proba(Xte)


def test_batches_are_cut_to_their_longest_run(mixed):
    X, _, _ = mixed
    data = _TorchInputs(torch, X, sequences=True)
    real = (~np.isnan(X[..., 0])).sum(axis=1)
    idx = torch.as_tensor(np.argsort(real)[:4])                    # the four shortest runs
    x, pad = data.rows(idx)
    assert x.shape == (4, real[idx.numpy()].max(), X.shape[2]) and pad.shape == x.shape[:2]
    assert (pad.sum(dim=1).numpy() == real[idx.numpy()].max() - real[idx.numpy()]).all()
    assert torch.isfinite(x).all()
    full = _TorchInputs(torch, X, sequences=True, trim=False).rows(idx)[0]
    assert full.shape[1] == X.shape[1] and torch.equal(full[:, :x.shape[1]], x)


def test_lstm_fit_and_predictions_are_the_same_trimmed_or_not(mixed):
    X, y, Xte = mixed
    # the LSTM's dropout acts on the final hidden state only (shape independent of the length): the whole
    # fit, paper settings, must give the same predictions
    a = _fit_predict(LSTMBaseline(max_epochs=6, random_state=1), X, y, Xte, trim=True)
    b = _fit_predict(LSTMBaseline(max_epochs=6, random_state=1), X, y, Xte, trim=False)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    assert np.ptp(a[:, 1]) > 1e-3                      # not a constant that would match anyway


def test_transformer_predictions_are_the_same_trimmed_or_not(mixed):
    X, y, Xte = mixed
    # paper settings: one fitted model, its predictions with and without trimming (eval mode, no dropout)
    model = TransformerBaseline(max_epochs=3, random_state=1).fit(X, y)
    for rows in (Xte, X):
        model._trim_batches = True
        p_trim = model.predict_proba(rows)
        model._trim_batches = False
        np.testing.assert_allclose(model.predict_proba(rows), p_trim, rtol=0, atol=1e-5)
        assert np.ptp(p_trim[:, 1]) > 1e-3


def test_transformer_fit_is_the_same_trimmed_or_not_without_dropout(mixed):
    X, y, Xte = mixed
    # training with dropout draws its masks in the batch's shape, so a trimmed fit is another (seeded,
    # reproducible) draw of the same procedure; without dropout the training itself must be equivalent:
    # the same gradients, epochs and weights up to float rounding
    a = _fit_predict(TransformerBaseline(dropout=0.0, max_epochs=6, random_state=2), X, y, Xte, trim=True)
    b = _fit_predict(TransformerBaseline(dropout=0.0, max_epochs=6, random_state=2), X, y, Xte, trim=False)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    assert np.ptp(a[:, 1]) > 1e-3
