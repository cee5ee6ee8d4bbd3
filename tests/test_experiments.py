"""Transfer and GAC leave-one-group-out on real sample runs: the protocol (a poisoned target never reaches a
fit), the diagonal = DirectTrain, seeds reproducible, the with/without-alternatives strategies."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from htc_core.calibration.evaluation import EvaluationError, evaluate
from htc_core.experiments.gac import gac_leave_one_out
from htc_core.experiments.grouping import fit_rows, grouped_data, has_alternatives
from htc_core.experiments.transfer import transfer
from htc_core.formats import load
from htc_core.traces import concat

REPO = Path(__file__).resolve().parents[1]
FAST = (0.1, 1.0, 10.0)
KW = dict(alphas=FAST, inner_folds=3, n_splits=3)


def _subset(ts, per_group: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    groups = ts.meta["dataset"].astype(str).to_numpy()
    idx = np.concatenate([rng.choice(np.flatnonzero(groups == g), per_group, replace=False) for g in sorted(set(groups))])
    return ts.take(np.sort(idx))


@pytest.fixture(scope="module")
def runs():
    """60 real greedy SmolLM2 runs of each of the 4 task families (with top-5 alternatives)."""
    ts, _ = load([str(p) for p in sorted((REPO / "sample_runs").glob("*/*SmolLM2-135M-greedy.jsonl"))])
    return _subset(ts, 60)


@pytest.fixture(scope="module")
def mixed(runs, uala_run_a):
    """The same plus 80 real UALA HotpotQA runs (no alternatives)."""
    ua, _ = load(uala_run_a)
    return concat([runs, _subset(ua, 80)])


def _poison(ts, group: str, by: str = "dataset"):
    """A copy whose ``group`` runs have flipped labels and tripled logprobs (every feature changes)."""
    g = ts.meta[by].astype(str).to_numpy() == group
    tok_traj = np.repeat(ts.step_trajectory_index(), np.diff(ts.step_offsets))
    lp = ts.logprob.copy()
    lp[g[tok_traj]] *= 3.0
    top = ts.top_logprobs.copy()
    top[g[tok_traj]] *= 3.0
    meta = ts.meta.copy()
    meta.loc[g, "success"] = ~meta.loc[g, "success"].astype(bool)
    return dataclasses.replace(ts, logprob=lp, top_logprobs=top, meta=meta)


def _same_model(a, b):
    return (np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
            and np.array_equal(a.mean_, b.mean_) and a.alpha_ == b.alpha_)


def test_transfer_poisoned_target_never_reaches_a_fit(runs):
    clean = transfer(runs, seeds=[42], variants=("reduced",), **KW)
    bad = transfer(_poison(runs, "facts"), seeds=[42], variants=("reduced",), **KW)
    for (v, src, seed), model in clean.models.items():
        same = _same_model(model, bad.models[(v, src, seed)])
        assert same == (src != "facts"), (src, same)      # only the poisoned group's own model may change
    c, b = clean.matrix("brier"), bad.matrix("brier")
    others = [g for g in clean.groups if g != "facts"]
    assert np.array_equal(c.loc[others, others].to_numpy(), b.loc[others, others].to_numpy())
    assert not np.allclose(c.loc[others, "facts"], b.loc[others, "facts"])   # the poison did change the target


def test_transfer_matrix_shape_diagonal_and_frames(runs):
    res = transfer(runs, seeds=[42, 43], **KW)
    assert res.groups == ["arithmetic", "facts", "strings", "units"]
    assert res.n_runs == {g: 60 for g in res.groups}
    for v in ("full", "reduced"):
        m = res.matrix("ece", v)
        assert m.shape == (4, 4) and np.isfinite(m.to_numpy()).all()
        # diagonal = DirectTrain = evaluate on the group's runs alone, same seeds and folds
        g = runs.filter(runs.meta["dataset"].astype(str).to_numpy() == "units")
        ev = evaluate(g, seeds=[42, 43], methods=["HTC-Full" if v == "full" else "HTC-Reduced"], **KW)
        name = ev.methods[0]
        assert m.loc["units", "units"] == pytest.approx(ev.summary[name]["ece"]["mean"], abs=1e-12)
    kinds = res.to_frame().set_index(["variant", "source", "target"]).kind
    assert kinds.loc[("reduced", "facts", "facts")] == "direct" and kinds.loc[("reduced", "facts", "units")] == "transfer"
    d = res.to_dict()
    assert d["experiment"] == "transfer" and len(d["cells"]) == 2 * 16 and d["n_runs"]["facts"] == 60
    assert "DirectTrain" in res.table()


def test_transfer_seeds_reproducible(runs):
    a = transfer(runs, seeds=[7], variants=("reduced",), **KW)
    b = transfer(runs, seeds=[7], variants=("reduced",), **KW)
    assert a.cells.equals(b.cells)


def test_gac_poisoned_heldout_never_reaches_its_pooled_fit(mixed):
    kw = dict(seeds=[42], variants=("reduced",), strategies=("by-kind", "pooled"), direct=False, **KW)
    clean = gac_leave_one_out(mixed, **kw)
    bad = gac_leave_one_out(_poison(mixed, "strings"), **kw)
    for (v, held, seed, which), model in clean.models.items():
        same = _same_model(model, bad.models[(v, held, seed, which)])
        assert same == (held == "strings"), (held, which)   # every other held-out group pools the poisoned runs
    # the held-out group's own pooled model is unchanged, its metrics change with its (poisoned) labels
    r = clean.to_frame().set_index(["heldout", "method"])
    rb = bad.to_frame().set_index(["heldout", "method"])
    assert r.loc[("strings", "GAC (by-kind)"), "n_train"] == rb.loc[("strings", "GAC (by-kind)"), "n_train"]


def test_fit_rows_refuses_rows_of_a_forbidden_group(runs):
    d = grouped_data(runs, by="dataset", top_k=5)
    with pytest.raises(RuntimeError, match="protocol violation: 60 training rows"):
        fit_rows(d, "paper", "reduced", np.arange(len(d.y)), forbidden=["facts"], seed=42, alphas=FAST)


def test_gac_strategies_route_runs_by_kind(mixed):
    assert has_alternatives(mixed).sum() == 240 and (~has_alternatives(mixed)).sum() == 80
    res = gac_leave_one_out(mixed, seeds=[42, 43], variants=("reduced",), strategies=("by-kind", "pooled", "chosen"),
                            **KW)
    t = res.to_frame().set_index(["heldout", "method"])
    assert set(res.groups) == {"HotpotQA", "arithmetic", "facts", "strings", "units"}
    assert res.alternatives == {"HotpotQA": 0, "arithmetic": 60, "facts": 60, "strings": 60, "units": 60}
    # held-out HotpotQA (no alternatives): by-kind uses the chosen-profile model, exactly like "chosen"
    for m in ("ece", "brier", "auroc"):
        assert t.loc[("HotpotQA", "GAC (by-kind)"), f"{m}_mean"] == t.loc[("HotpotQA", "GAC (chosen)"), f"{m}_mean"]
    # held-out sample-run groups: by-kind is fitted on the pooled runs with alternatives only
    assert t.loc[("units", "GAC (by-kind)"), "n_train"] == 180 and t.loc[("units", "GAC (pooled)"), "n_train"] == 260
    assert t.loc[("HotpotQA", "GAC (by-kind)"), "n_train"] == 240 and t.loc[("units", "DirectTrain"), "n_train"] == 60
    assert {r["method"] for r in res.to_dict()["rows"]} == {"GAC (by-kind)", "GAC (pooled)", "GAC (chosen)",
                                                            "DirectTrain"}
    assert res.summary("ece").shape == (5, 4)


def test_gac_seeds_reproducible_and_std_over_seeds(runs):
    a = gac_leave_one_out(runs, seeds=[3, 4], variants=("reduced",), direct=False, **KW)
    b = gac_leave_one_out(runs, seeds=[3, 4], variants=("reduced",), direct=False, **KW)
    assert a.rows.equals(b.rows)
    assert a.seeds == [3, 4] and (a.rows.ece_std >= 0).all()


def test_experiments_validate_inputs(runs):
    with pytest.raises(ValueError, match="by must be one of .*'team'"):
        transfer(runs, by="team")
    with pytest.raises(ValueError, match="data must be a TraceSet"):
        transfer(np.zeros((10, 48)))
    with pytest.raises(ValueError, match="variants must be"):
        transfer(runs, variants=("big",))
    with pytest.raises(ValueError, match="strategies must be"):
        gac_leave_one_out(runs, strategies=("magic",))
    one = runs.filter(runs.meta["dataset"].astype(str).to_numpy() == "units")
    with pytest.raises(EvaluationError, match="at least 2 dataset groups"):
        transfer(one, **KW)
    # a group with one outcome only is left out with a note, the rest still runs
    meta = runs.meta.copy()
    meta.loc[meta.dataset == "facts", "success"] = False
    res = transfer(dataclasses.replace(runs, meta=meta), seeds=[42], variants=("reduced",), **KW)
    assert "facts" not in res.groups and any("'facts' left out" in n for n in res.notes)


def test_monitor_with_a_chosen_profile_model_ignores_alternatives(runs):
    """The GAC's model for runs without alternatives ('chosen' profile) scores a live run like extract does."""
    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.explain import confidence_after_steps
    from htc_core.features import extract

    # HTC-Full: L2 keeps weight on the TopkConf columns, which the alternatives would change
    model = HTCCalibrator(variant="full", alphas=FAST, inner_folds=3).fit(extract(runs, profile="chosen"), runs.labels)
    for i in (0, 100, 200):
        live = confidence_after_steps(model, runs, i).confidence.iloc[-1]
        assert live == pytest.approx(model.predict_proba(extract(runs.take([i]), profile="chosen"))[0, 1], abs=1e-9)
