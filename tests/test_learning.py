"""Learning baselines and learning curves (issue 11 item 4): the protocol (no outer-test run reaches a fit,
test labels hidden, poisoned test runs change nothing else), seeds, the estimators' scikit-learn behaviour,
the sequence featurization and the command. PyTorch / xgboost tests skip when the [learning] extra is
missing (they run for real where it is installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from htc_core.experiments.learning import GPBaseline, MissingExtraError, require
from htc_core.experiments.learning_curve import (CURVE_METHODS, CurveMethod, learning_curve,
                                                 register_curve_method)
from htc_core.experiments.sequence_models import FLOOR, token_sequences
from htc_core.formats import load

REPO = Path(__file__).resolve().parents[1]
NEEDS_TORCH = "PyTorch is not installed (optional extra: pip install -e \".[learning]\")"
NEEDS_XGB = "xgboost is not installed (optional extra: pip install -e \".[learning]\")"


def _has(mod):
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


torch_only = pytest.mark.skipif(not _has("torch"), reason=NEEDS_TORCH)
xgb_only = pytest.mark.skipif(not _has("xgboost"), reason=NEEDS_XGB)


@pytest.fixture(scope="module")
def runs():
    ts, _ = load([str(REPO / "sample_runs" / "arithmetic")])
    return ts


@pytest.fixture(scope="module")
def small(runs):
    from htc_core.features import extract

    sub = runs.take(np.arange(0, 500, 4))                    # 125 real runs
    return extract(sub, profile="paper", top_k=5).values, sub.labels.astype(int), sub


# ------------------------------------------------------------------ the protocol
def _spy(calls):
    def fit_predict(train_ts, y_train, test_ts, seed):
        calls.append((set(train_ts.ids), set(test_ts.ids), np.asarray(y_train).copy(), test_ts.labels.copy(), seed))
        return np.full(len(test_ts), float(np.mean(y_train)))

    return CurveMethod("spy", fit_predict, kind="test")


def test_no_test_run_reaches_a_fit_and_test_labels_are_hidden(runs):
    calls = []
    res = learning_curve(runs, sizes=[40, 80, 10_000], repeats=2, folds=3, methods=[_spy(calls)])
    truth = dict(zip(runs.ids, runs.labels))
    assert len(calls) == 2 * 3 * 3
    for train_ids, test_ids, y_train, test_labels, seed in calls:
        assert not train_ids & test_ids
        assert np.isnan(test_labels).all()                          # the method never sees a test label
        assert sorted(y_train) == sorted(truth[i] for i in train_ids)
    sizes = [len(c[0]) for c in calls]
    assert {40, 80} <= set(sizes) and max(sizes) in (333, 334)          # 10,000 is clipped to the fold
    assert any("larger than some outer training parts" in n for n in res.notes)
    # every run is scored exactly once per (size, seed): pooled out-of-fold predictions
    for p in res.predictions.values():
        assert np.isfinite(p).all()


def _poison(ts, rows):
    """``ts`` with the tokens of ``rows`` set to absurd log-probabilities (lengths and labels unchanged)."""
    lp, top = ts.logprob.copy(), ts.top_logprobs.copy()
    starts = ts.step_offsets[ts.traj_offsets]
    for r in rows:
        a, b = starts[r], starts[r + 1]
        lp[a:b] = -30.0
        top[a:b] = -30.0
    return replace(ts, logprob=lp, top_logprobs=top)


@pytest.mark.parametrize("method", ["HTC-Reduced", pytest.param("XGBoost", marks=xgb_only)])
def test_poisoned_test_runs_change_no_other_prediction_of_their_fold(runs, method):
    from sklearn.model_selection import StratifiedKFold

    y = runs.labels.astype(int)
    _, te = next(StratifiedKFold(3, shuffle=True, random_state=42).split(np.zeros((len(y), 1)), y))
    poisoned, clean = te[::2], te[1::2]
    kw = dict(sizes=[60], repeats=1, folds=3, methods=[method])
    a = learning_curve(runs, **kw).predictions[(method, 60, 42)]
    b = learning_curve(_poison(runs, poisoned), **kw).predictions[(method, 60, 42)]
    # fold 0's model never saw fold 0's test runs: poisoning half of them leaves the other half's scores alone
    np.testing.assert_array_equal(a[clean], b[clean])
    assert not np.allclose(a[poisoned], b[poisoned])                # the poison itself is visible


def test_seeds_make_the_curves_reproducible(runs):
    kw = dict(sizes=[40, 80], folds=3, methods=["HTC-Full", "HTC-Reduced"])
    a, b = learning_curve(runs, repeats=[7], **kw), learning_curve(runs, repeats=[7], **kw)
    cols = ["method", "size", "n_train", "fold", "ece", "brier", "auroc"]
    assert a.rows[cols].equals(b.rows[cols])
    c = learning_curve(runs, repeats=[8], **kw)
    assert not np.allclose(a.rows["brier"], c.rows["brier"])


def test_result_frame_dict_and_table(runs):
    res = learning_curve(runs, sizes=[40, 80], repeats=1, folds=3, methods=["HTC-Reduced", "GP"])
    f = res.to_frame()
    assert list(f.method) == ["HTC-Reduced", "HTC-Reduced", "GP", "GP"] and list(f["size"]) == [40, 80, 40, 80]
    assert (f.n_fits == 3).all() and f.auroc_mean.between(0.5, 1).all()
    d = json.loads(res.to_json())
    assert d["experiment"] == "learning_curve" and d["sizes"] == [40, 80] and d["folds"] == 3
    assert set(d["curves"][0]) == {"method", "size", "n_train", "n_fits", "ece", "brier", "auroc", "seconds"}
    assert "AUROC" in res.table() and "n=80" in res.table()


def test_bad_arguments_name_the_argument(runs):
    for kw, word in [(dict(sizes=[5]), "sizes"), (dict(folds=1), "folds"), (dict(methods=["nope"]), "methods"),
                     (dict(repeats=0), "seeds")]:
        with pytest.raises(ValueError, match=word):
            learning_curve(runs, **kw)
    with pytest.raises(ValueError, match="TraceSet"):
        learning_curve(np.zeros((3, 48)))


def test_a_method_needing_a_missing_package_says_how_to_install(capsys):
    from htc_core.cli import main

    with pytest.raises(MissingExtraError, match=r'pip install -e "\.\[learning\]"'):
        require("htc_no_such_module", "the test baseline")
    # the command run here (main returns its exit code; an exception would fail the test), the registry left as
    # it was; a process of its own cost 1.2 s CPU of imports for the same check
    register_curve_method(CurveMethod("NeedsMissing", print, requires=("htc_no_such_module",)))
    try:
        code = main(["learning-curve", str(REPO / "sample_runs" / "units"), "--methods", "needsmissing"])
    finally:
        del CURVE_METHODS["NeedsMissing"]
    err = capsys.readouterr().err
    assert code == 2
    assert 'htc learning-curve: error:' in err and 'pip install -e ".[learning]"' in err
    assert "Traceback" not in err


def test_importing_htc_core_imports_neither_torch_nor_xgboost():
    code = ("import sys, htc_core; from htc_core import learning_curve; "
            "import htc_core.experiments.learning, htc_core.experiments.sequence_models, htc_core.cli.learning; "
            "print('torch' in sys.modules, 'xgboost' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"}).stdout
    assert out.split() == ["False", "False"]


# ------------------------------------------------------------------ the estimators
def _estimators():
    from htc_core.experiments.learning import MLPBaseline, XGBoostBaseline
    from htc_core.experiments.sequence_models import LSTMBaseline, TransformerBaseline

    return [pytest.param(MLPBaseline(max_epochs=20), "features", marks=torch_only, id="mlp"),
            pytest.param(XGBoostBaseline(), "features", marks=xgb_only, id="xgboost"),
            pytest.param(GPBaseline(n_restarts_optimizer=1), "features", id="gp"),
            pytest.param(LSTMBaseline(max_epochs=8), "sequence", marks=torch_only, id="lstm"),
            pytest.param(TransformerBaseline(max_epochs=4, batch_size=16), "sequence", marks=torch_only,
                         id="transformer")]


@pytest.mark.parametrize("est,kind", _estimators())
def test_estimator_follows_sklearn_conventions(small, est, kind):
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    X, y, sub = small
    if kind == "sequence":
        X = token_sequences(sub)
    params = est.get_params()
    assert clone(est).get_params() == params
    with pytest.raises(NotFittedError):
        est.predict_proba(X)
    est2 = clone(est).set_params(random_state=3)
    assert est2.get_params()["random_state"] == 3
    fitted = est2.fit(X[:100], y[:100])
    assert fitted is est2 and list(est2.classes_) == [0, 1]
    p = est2.predict_proba(X[100:])
    assert p.shape == (len(X) - 100, 2) and np.allclose(p.sum(axis=1), 1) and ((p >= 0) & (p <= 1)).all()
    assert set(est2.predict(X[100:])) <= {0, 1}
    again = clone(est).set_params(random_state=3).fit(X[:100], y[:100]).predict_proba(X[100:])
    np.testing.assert_allclose(again, p, rtol=0, atol=1e-12)          # seeded: same weights, same scores
    with pytest.raises(ValueError, match="y must"):
        clone(est).fit(X[:100], np.arange(100) % 3)
    with pytest.raises(ValueError, match="both outcomes"):
        clone(est).fit(X[:100], np.zeros(100, dtype=int))
    bad = X[100:, ..., :-1] if kind == "sequence" else X[100:, :-1]
    with pytest.raises(ValueError):
        est2.predict_proba(bad)


# ------------------------------------------------------------------ the sequence featurization
def test_token_sequences_pad_pool_and_fill_missing_alternatives(runs):
    sub = runs.take(np.arange(20))
    S = token_sequences(sub, top_k=5)
    lengths = sub.tokens_per_trajectory
    assert S.shape == (20, lengths.max(), 6)
    i = int(np.argmin(lengths))
    assert np.isnan(S[i, lengths[i]:]).all() and np.isfinite(S[i, :lengths[i]]).all()
    a = sub.step_offsets[sub.traj_offsets[i]]
    np.testing.assert_allclose(S[i, :lengths[i], 0], np.clip(sub.logprob[a:a + lengths[i]], FLOOR, 0))
    P = token_sequences(sub, top_k=5, max_len=4)                     # long runs are mean-pooled, not cut
    j = int(np.argmax(lengths))
    b = sub.step_offsets[sub.traj_offsets[j]]
    assert P.shape[1] == 4 and np.isfinite(P[j]).all()
    assert np.isclose(P[j, :, 0].mean(), np.clip(sub.logprob[b:b + lengths[j]], FLOOR, 0).mean(), atol=0.5)
    no_alt = replace(sub, top_logprobs=np.zeros((sub.n_tokens, 0)))
    assert (token_sequences(no_alt)[i, :lengths[i], 1:] == FLOOR).all()
    with pytest.raises(ValueError, match="max_len"):
        token_sequences(sub, max_len=0)


# ------------------------------------------------------------------ the command
def test_cli_learning_curve_json(capsys):
    from htc_core.cli import main

    rc = main(["learning-curve", str(REPO / "sample_runs" / "units"), "--sizes", "40,80", "--folds", "3",
               "--methods", "htc-full,HTC-Reduced", "--json", "--quiet"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert d["methods"] == ["HTC-Full", "HTC-Reduced"] and d["n_runs"] == 500 and len(d["curves"]) == 4


@pytest.mark.heavy
def test_every_registered_baseline_runs_end_to_end(runs):
    if not (_has("torch") and _has("xgboost")):
        pytest.skip(NEEDS_TORCH)
    res = learning_curve(runs, sizes=[40], repeats=1, folds=2)
    f = res.to_frame()
    assert list(f.method) == list(CURVE_METHODS)
    assert f.auroc_mean.notna().all() and (f.n_fits == 2).all()
