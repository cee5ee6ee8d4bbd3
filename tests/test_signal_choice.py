"""The ``nearest-family`` set-level step (htc_core.calibration.signal_choice): a synthetic shift with a known answer,
the fallback where a signal is undefined, the entry's checks, its round trip through a GAC model file, and what
``htc score --as-set`` says about the choice."""

import json

import numpy as np
import pandas as pd
import pytest

from htc_core.calibration import signal_choice as sc
from htc_core.calibration.metrics import auroc
from htc_core.calibration.transfer_methods import sigmoid
from htc_core.experiments.transfer_maps import fit_nearest_family


def two_families(n=400, seed=3):
    """Scores [2n, 3] of two training families: in "a" the sequence probability (column 0) ranks the runs and the
    others are noise; in "b" the entropy (column 2) does, and every score sits 5 sd higher."""
    rng = np.random.default_rng(seed)
    y = (rng.random(2 * n) < 0.5).astype(float)
    S = rng.standard_normal((2 * n, 3))
    S[:n, 0] += 3 * y[:n]
    S[n:, 2] += 3 * y[n:]
    S[n:] += 5.0
    return S, y, np.repeat(np.array(["a", "b"], dtype=object), n)


def test_a_set_built_like_a_family_gets_that_familys_best_signal():
    S, y, g = two_families()
    entry = fit_nearest_family(S, y, g)
    assert [(f["name"], f["best"]) for f in entry["families"]] == [("a", "seq_prob"), ("b", "neg_entropy")]
    T, yt, _ = two_families(seed=11)                 # fresh runs of the same two families: the targets
    like_b, like_a = T[400:], T[:400]
    c = sc.choose_signal(entry, like_b)
    assert (c.signal, c.family, c.reason) == ("neg_entropy", "b", "nearest") and c.runner_up[0] == "a"
    assert c.distance < 0.1 < c.runner_up[1]
    assert sc.choose_signal(entry, like_a).signal == "seq_prob"
    p, choice = sc.nearest_family_confidences(entry, like_b)
    a, b = entry["maps"]["neg_entropy"]
    np.testing.assert_allclose(p, sigmoid(a * like_b[:, 2] + b))
    assert auroc(yt[400:], p) == pytest.approx(auroc(yt[400:], sigmoid(like_b[:, 2])))
    assert auroc(yt[400:], p) > 0.9
    assert auroc(yt[400:], sigmoid(like_b[:, 1])) < 0.6        # the per-run signal would not rank this set
    assert sc.nearest_family_confidences(entry, like_b[:49]) == (None, None)       # under min_runs: not a set


def test_a_set_without_alternatives_never_gets_the_entropy():
    """Runs without top-k alternatives have no entropy (NaN): the nearest family's best usable signal is taken,
    and the words say so."""
    S, y, g = two_families()
    entry = fit_nearest_family(S, y, g)
    T = two_families(seed=11)[0][400:]
    T[:, 2] = np.nan
    c = sc.choose_signal(entry, T)
    fam = entry["families"][1]
    usable_best = ["seq_prob", "min_prob"][int(np.argmax(fam["aurocs"][:2]))]
    assert (c.family, c.family_best, c.signal, c.reason) == ("b", "neg_entropy", usable_best, "nearest, best usable")
    assert "neg_entropy" in c.unusable and "do not define" in c.words()
    p, _ = sc.nearest_family_confidences(entry, T)
    assert np.isfinite(p).all()
    # constant entropy (e.g. one alternative listed per token): not usable either
    T[:, 2] = 0.0
    assert sc.choose_signal(entry, T).signal != "neg_entropy"
    # nothing usable at all: the default, said as such
    c = sc.choose_signal(entry, np.full((60, 3), np.nan))
    assert (c.signal, c.reason) == ("min_prob", "no usable signal") and "default" in c.words()


def test_a_set_far_from_every_family_keeps_the_default_under_max_distance():
    S, y, g = two_families()
    entry = fit_nearest_family(S, y, g, max_distance=1.0)
    far = two_families(seed=12)[0][400:] + 20.0
    c = sc.choose_signal(entry, far)
    assert (c.signal, c.reason) == ("min_prob", "too far") and "beyond max_distance" in c.words()
    assert sc.choose_signal(entry, two_families(seed=12)[0][400:]).signal == "neg_entropy"


def test_a_map_that_would_invert_a_signal_is_made_flat():
    """Where the entropy ranks the training runs upside down, its map's slope would be negative: it is made flat
    (the ranking stays the signal's, the confidences sit at the base rate)."""
    rng = np.random.default_rng(4)
    n = 900
    y = (rng.random(n) < 0.4).astype(float)
    S = rng.standard_normal((n, 3))
    S[:, 2] -= 2.0 * y
    a, b = fit_nearest_family(S, y, np.repeat(["a", "b", "c"], n // 3))["maps"]["neg_entropy"]
    assert a == 1e-3
    assert float(sigmoid(a * S[:, 2] + b).mean()) == pytest.approx(y.mean(), abs=0.01)


def test_the_entry_is_checked_field_by_field():
    S, y, g = two_families()
    entry = json.loads(json.dumps(fit_nearest_family(S, y, g)))       # as read from a file
    assert sc.check_entry(entry)["maps"] == entry["maps"]
    bad = [("min_runs", 2), ("min_runs", True), ("signals", ["min_prob"]), ("mu", [0.0, 1.0]),
           ("sd", [1.0, 0.0, 1.0]), ("maps", {"min_prob": [1, 0]}), ("families", []), ("default", "entropy"),
           ("max_distance", -1.0), ("fill", [0.0, None, 1.0])]
    for field, value in bad:
        with pytest.raises(ValueError, match=f"transfer.set_level.*{field}"):
            sc.check_entry({**entry, field: value})
    from htc_core.calibration.general import check_transfer

    t = {"method": "signal-oof", "signal": "min_prob", "coef": [0.0, 0.2, -0.4], "set_level": entry}
    assert check_transfer(t)["set_level"]["method"] == "nearest-family"      # the GAC file's checker takes it
    with pytest.raises(ValueError, match="transfer.set_level.*min_runs"):
        check_transfer({**t, "set_level": {**entry, "min_runs": 1}})


def gac_with_nearest_family():
    """The shipped gac with a nearest-family step fitted on the sample runs' signals (the shipped files hold none)."""
    import htc_core as htc
    from htc_core.calibration.transfer_methods import signal_matrix, training_free_signal_arrays
    from htc_core.experiments.transfer_families import family_groups

    from conftest import REPO

    ts, _ = htc.load(str(REPO / "sample_runs"))
    ts = ts.labeled()
    entry = fit_nearest_family(signal_matrix(training_free_signal_arrays(ts)), ts.labels, family_groups(ts.meta))
    gac = htc.load_model("gac")
    gac.transfer = {**gac.transfer, "set_level": entry}
    return gac


@pytest.fixture(scope="module")
def nf_gac():
    return gac_with_nearest_family()


def test_the_step_round_trips_through_the_json_model_file(nf_gac, tmp_path):
    import htc_core as htc
    from htc_core.calibration.general import GeneralCalibrator
    from htc_core.calibration.models import load_scorer

    from conftest import REPO

    path = nf_gac.save(tmp_path / "gac-nf.json")
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text                  # strict JSON
    back, scorer = GeneralCalibrator.load(path), load_scorer(str(path))
    assert back.transfer == nf_gac.transfer
    ts, _ = htc.load(str(REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"))
    ts = ts.take(np.arange(120))
    p = nf_gac.predict_proba_traces(ts, set_level=True)[:, 1]
    per_run = nf_gac.predict_proba_traces(ts)[:, 1]
    np.testing.assert_allclose(back.predict_proba_traces(ts, set_level=True)[:, 1], p, rtol=1e-12)
    np.testing.assert_allclose(scorer.confidences_traces(ts, set_level=True)[0], p, rtol=1e-12)   # numpy only
    np.testing.assert_allclose(nf_gac.rescore_as_set(ts, per_run), p, rtol=1e-12)
    few = ts.take(np.arange(20))                                        # under min_runs: run by run
    np.testing.assert_allclose(back.predict_proba_traces(few, set_level=True)[:, 1], per_run[:20], rtol=1e-12)
    obj = nf_gac.to_dict()
    obj["transfer"]["set_level"]["families"][0]["best"] = "entropy"
    with pytest.raises(ValueError, match="families"):
        GeneralCalibrator.from_dict(obj)


def test_fit_transfer_adds_the_step_on_request():
    from htc_core.calibration.general import check_transfer
    from htc_core.experiments.transfer_entry import fit_transfer
    from htc_core.experiments.transfer_families import prepare
    from htc_core.formats import load

    from conftest import REPO

    ex = REPO / "sample_runs" / "_examples"
    ts, _ = load([str(ex / f) for f in ("facts_Gemma3-270M-greedy.jsonl", "lists_Gemma3-270M-greedy.jsonl")])
    entry = fit_transfer(prepare(ts), "signal-oof", set_level="nearest-family")
    assert entry["set_level"]["method"] == "nearest-family"
    assert check_transfer(json.loads(json.dumps(entry)))["set_level"]["maps"] == entry["set_level"]["maps"]
    with pytest.raises(ValueError, match="set_level"):
        fit_transfer(prepare(ts), "gac", set_level="nearest-family")


def without_alternatives(src, dst, n=60):
    """The first ``n`` runs of ``src`` with their top-k alternatives removed (as a source that lists none)."""
    lines = src.read_text().splitlines()[:n]
    out = []
    for line in lines:
        run = json.loads(line)
        for step in run["steps"]:
            step.pop("top_logprobs", None)
            step.pop("top_tokens", None)
        out.append(json.dumps(run))
    dst.write_text("\n".join(out) + "\n")
    return dst


def test_score_as_set_says_which_signal_and_why(nf_gac, tmp_path, capsys):
    from htc_core.cli import main

    from conftest import REPO

    model = str(nf_gac.save(tmp_path / "gac-nf.json"))
    src = REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"
    assert main(["score", model, str(src), "--out", str(tmp_path / "a.csv"), "--as-set"]) == 0
    out = capsys.readouterr().out
    assert "scored as a set: 1 chunk(s) of at least 50 runs" in out and "nearest-family" in out
    assert "chunk 1 (250 runs): signal " in out and "nearest training family " in out and "distance " in out
    assert "per-run transfer (signal-oof, min_prob)" in out
    assert "the same labeled runs scored run by run (column confidence_per_run): ECE" in out
    a = pd.read_csv(tmp_path / "a.csv")
    assert {"confidence", "confidence_per_run"} <= set(a.columns)
    # runs without alternatives: the entropy is undefined, and the output says what was taken instead
    bare = without_alternatives(src, tmp_path / "bare.jsonl")
    assert main(["score", model, str(bare), "--out", str(tmp_path / "b.csv"), "--as-set"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("  chunk 1"))
    assert "signal neg_entropy" not in line
    assert "do not define" in line or "ranks best by it" in line
    # without --as-set: run by run, nothing about a choice
    assert main(["score", model, str(src), "--out", str(tmp_path / "c.csv")]) == 0
    assert "scored as a set" not in capsys.readouterr().out


def test_training_runs_that_never_define_a_signal_give_a_valid_entry():
    """Where no training run lists alternatives, the entropy has no statistics: the entry is still finite JSON,
    the entropy never chosen."""
    S, y, g = two_families()
    S[:, 2] = np.nan
    entry = json.loads(json.dumps(fit_nearest_family(S, y, g)))
    assert sc.check_entry(entry)["mu"][2] == 0.0
    assert all(f["best"] != "neg_entropy" and f["aurocs"][2] is None for f in entry["families"])
    assert sc.choose_signal(entry, two_families(seed=11)[0][400:]).signal != "neg_entropy"


def test_a_family_too_small_to_tell_its_best_signal_lends_none():
    """A 16-run family lies nearest to the set but its best signal is measured on 16 runs: under min_runs (the
    default of min_family_runs) it is left out of the entry, and the set takes the best of a large family."""
    S, y, g = two_families()
    rng = np.random.default_rng(9)
    tiny = rng.standard_normal((16, 3)) + 10.0                     # its own place, far from "a" and "b"
    tiny_y = np.r_[np.zeros(8), np.ones(8)]
    tiny[:, 1] += 3 * tiny_y                                       # here the minimum token probability ranks
    S2, y2, g2 = np.vstack([S, tiny]), np.r_[y, tiny_y], np.r_[g, np.array(["tiny"] * 16, dtype=object)]
    entry = fit_nearest_family(S2, y2, g2)
    assert [f["name"] for f in entry["families"]] == ["a", "b"] and entry["families_left_out"] == ["tiny"]
    assert sc.choose_signal(entry, tiny).family in ("a", "b")
    every = fit_nearest_family(S2, y2, g2, min_runs=10)          # min_family_runs follows min_runs
    assert sc.choose_signal(every, tiny).family == "tiny"
    assert sc.check_entry(json.loads(json.dumps(entry)))["families_left_out"] == ["tiny"]


def test_score_as_set_with_a_nearest_family_file_imports_numpy_only(nf_gac, tmp_path):
    """The choice and its words at scoring time need numpy alone, as the per-run GAC does."""
    from test_cli_imports import HEAVY, SCORING, loaded_by

    from conftest import REPO

    model = str(nf_gac.save(tmp_path / "gac-nf.json"))
    src = REPO / "sample_runs" / "units" / "units_SmolLM2-135M-greedy.jsonl"
    loaded = loaded_by(["score", model, str(src), "--as-set", "--out", str(tmp_path / "s.csv")])
    assert loaded <= SCORING and not loaded & HEAVY, loaded


def test_the_leave_one_family_out_choice_measures_it_on_sets_of_any_size():
    """nearest-family is a set-level candidate of the choice rule; with set_min_runs=0 every held-out family (16
    runs here) is scored as a set, and its families (all under 50 runs) still lend their signal."""
    from htc_core.experiments.transfer_choice import SET_LEVEL
    from htc_core.experiments.transfer_lofo import leave_one_family_out
    from htc_core.formats import load

    from conftest import REPO

    ex = REPO / "sample_runs" / "_examples"
    ts, _ = load([str(ex / f"{t}_Gemma3-270M-greedy.jsonl") for t in ("facts", "lists", "units")])
    choice = leave_one_family_out(ts, alphas=(1.0,), inner_folds=2, set_min_runs=0)
    assert "nearest-family" in SET_LEVEL
    rows = choice.rows[choice.rows.method == "nearest-family"]
    assert len(rows) == 3 and np.isfinite(rows[["ece", "brier", "auroc"]].to_numpy()).all()
    assert np.isfinite(choice.predictions["nearest-family"]).all()
