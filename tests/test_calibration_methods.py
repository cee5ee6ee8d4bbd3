"""The evaluation's methods: one interface, a registry, and a loop that knows no method by name."""

import inspect

import numpy as np
import pytest

from htc_core.calibration import crossval, methods
from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.evaluation import EvaluationError, evaluate
from htc_core.calibration.methods import METHODS, FitContext, Fitted, Method, register_method, resolve_methods
from htc_core.features import extract
from htc_core.synthetic import synthetic_trace_set

FAST = (1.0, 5.0, 20.0)
TABLE = ["HTC-Full", "HTC-Reduced"] + [f"{b}{s}" for b in ("LastStep-TP", "GlobalTrace-TP", "Bottom10", "LowestGroup",
                                                            "Tail", "Verbalized")
                                      for s in ("", "+Temp", "+Platt", "+Iso")]


@pytest.fixture(scope="module")
def traces():
    return synthetic_trace_set(n_traj=60, n_steps=3, n_tokens=12, k=5, seed=2)


class FirstFeatures(Method):
    """An ablation-style method: HTC-Reduced on the first ``k`` features only."""

    selects_features = True

    def __init__(self, k: int):
        self.k = k
        self.name = f"HTC-Reduced[:{k}]"

    def fit(self, X, y, ctx):
        cal = HTCCalibrator(alphas=ctx.alphas, random_state=ctx.seed).fit(X[:, :self.k], y)
        mask = np.zeros(X.shape[1], dtype=bool)
        mask[:self.k] = cal.coef_[0] != 0
        return Fitted(predict=lambda Xt: cal.predict_proba(Xt[:, :self.k])[:, 1],
                      info={"n_features": int(mask.sum()), "alpha": cal.alpha_}, selected=mask)


def test_registry_is_the_paper_table_in_order():
    assert list(METHODS) == TABLE + ["HTC-GAM"]   # HTC-GAM registered, opt-in (not in the default table)
    assert not METHODS["HTC-GAM"].in_default_table
    assert all(isinstance(m, Method) and m.name == name for name, m in METHODS.items())
    assert {m.input for m in METHODS.values() if m.name.startswith("HTC")} == {"features"}
    assert METHODS["Tail+Temp"].input == "Tail" and METHODS["Verbalized"].input == "Verbalized"


def test_the_loop_names_no_method():
    src = inspect.getsource(crossval)
    for word in ("HTC", "Temp", "Platt", "Iso", "Verbalized", "Bottom10", "TemperatureScaling", "HTCCalibrator"):
        assert word not in src, word


def test_resolve_methods():
    assert [m.name for m in resolve_methods(None)] == TABLE
    assert [m.name for m in resolve_methods(["Tail", "HTC-Full"])] == ["HTC-Full", "Tail"]   # the table's order
    assert [m.name for m in resolve_methods("Tail")] == ["Tail"]
    extra = FirstFeatures(5)
    assert [m.name for m in resolve_methods(["HTC-Full", extra])] == ["HTC-Full", "HTC-Reduced[:5]"]
    with pytest.raises(ValueError, match=r"unknown methods \['HTC-Huge'\]; valid methods: \['HTC-Full'"):
        resolve_methods(["HTC-Huge"])


def test_a_new_method_is_one_object(traces):
    r = evaluate(traces, seeds=1, alphas=FAST, methods=["HTC-Reduced", FirstFeatures(8)])
    assert r.methods == ["HTC-Reduced", "HTC-Reduced[:8]"]
    rows = r.per_fold[r.per_fold.method == "HTC-Reduced[:8]"]
    assert len(rows) == 5 and (rows.n_features <= 8).all() and rows.alpha.isin(FAST).all()
    assert set(r.summary["HTC-Reduced[:8]"]) == {"ece", "brier", "auroc", "n_features"}
    counts = r.selected_counts["HTC-Reduced[:8]"]
    assert counts.reindex(extract(traces).names[8:]).sum() == 0
    assert np.isfinite(r.oof_all["HTC-Reduced[:8]"]).all()


def test_registered_method_runs_by_default(traces, monkeypatch):
    monkeypatch.setattr(methods, "METHODS", dict(METHODS))
    register_method(FirstFeatures(4))
    with pytest.raises(ValueError, match="already registered"):
        register_method(FirstFeatures(4))
    r = evaluate(traces, seeds=1, alphas=FAST)
    # no verbalized confidence in these traces; +Iso needs 200 runs in every training fold (these have 48)
    assert r.methods == [*[m for m in TABLE if "Verbalized" not in m and "+Iso" not in m], "HTC-Reduced[:4]"]
    assert "Verbalized: not evaluated, no trajectory carries a verbalized confidence" in r.notes
    assert "Tail+Iso: not evaluated, it needs at least 200 runs in every training fold, the smallest has 48" in r.notes


def test_fit_context_carries_the_settings(traces):
    seen = []

    class Spy(Method):
        name = "spy"
        input = "GlobalTrace-TP"

        def fit(self, X, y, ctx):
            seen.append(ctx)
            return Fitted(predict=lambda c: c)

    r = evaluate(traces, seeds=[7, 8], alphas=FAST, methods=[Spy()], profile="deepconf", top_k=3, inner_folds=3)
    assert [c.seed for c in seen] == [7] * 5 + [8] * 5
    assert all(isinstance(c, FitContext) and c.alphas == FAST and c.inner_folds == 3 for c in seen)
    assert (seen[0].profile, seen[0].top_k) == ("deepconf", 3) and (r.profile, r.top_k) == ("deepconf", 3)
    assert r.per_fold[["n_features", "alpha", "temperature"]].isna().all().all()


def test_feature_matrix_brings_its_profile(traces):
    fm = extract(traces, profile="deepconf", top_k=3)
    r = evaluate(fm, traces.labels, seeds=1, alphas=FAST, methods=["HTC-Reduced", "Tail"])
    assert (r.profile, r.top_k) == ("deepconf", 3) and r.methods == ["HTC-Reduced"]
    assert r.skipped == {"Tail": "baselines need the token traces (a TraceSet), not a feature matrix"}
    with pytest.raises(ValueError, match="profile='paper' was given, but data is a FeatureMatrix computed with "
                                         "profile 'deepconf'"):
        evaluate(fm, traces.labels, seeds=1, alphas=FAST, profile="paper")


def test_baselines_only_do_not_compute_features(traces, monkeypatch):
    import htc_core.features

    def boom(*a, **k):
        raise AssertionError("features were extracted")

    monkeypatch.setattr(htc_core.features, "extract", boom)
    r = evaluate(traces, seeds=1, methods=["Bottom10", "Bottom10+Temp"])
    assert r.methods == ["Bottom10", "Bottom10+Temp"] and r.selected_counts == {}


def test_failure_lists_the_requested_methods(traces):
    labels = np.r_[np.ones(57), np.zeros(3)]
    with pytest.raises(EvaluationError, match=r"cannot evaluate \(HTC-Full, Tail\): only 3 failures"):
        evaluate(traces, labels, seeds=1, methods=["Tail", "HTC-Full"])
    with pytest.raises(EvaluationError, match="no method selected"):
        evaluate(traces, seeds=1, methods=[])
