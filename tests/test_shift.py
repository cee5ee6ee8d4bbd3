"""The applicability check (htc_core.calibration.shift) on real runs: UALA HotpotQA (Llama-2-70B, no top-k
alternatives) against models trained on the project's SmolLM2 sample runs, and in-distribution splits."""

import json
from pathlib import Path

import numpy as np
import pytest

from htc_core.calibration.calibrators import HTCCalibrator
from htc_core.calibration.general import GeneralCalibrator
from htc_core.calibration.models import load_model
from htc_core.calibration.shift import SHIFT_THRESHOLD, ShiftAccumulator, shift_check
from htc_core.cli import main
from htc_core.features import extract
from htc_core.formats import load

REPO = Path(__file__).resolve().parents[1]
SAMPLE = [str(REPO / "sample_runs" / d) for d in ("units", "facts")]


@pytest.fixture(scope="module")
def smol():
    ts, _ = load(SAMPLE)
    ts = ts.labeled()
    return ts, extract(ts, profile="chosen", top_k=5)


@pytest.fixture(scope="module")
def uala(uala_dir):
    ts, _ = load([str(uala_dir)])
    return ts.labeled()


@pytest.fixture(scope="module")
def smol_model(smol):
    ts, fm = smol
    return HTCCalibrator().fit(fm, ts.labels)


def test_every_fit_stores_training_feature_stats(tmp_path, smol, smol_model):
    _, fm = smol
    fs = smol_model.training_summary_["feature_stats"]
    assert np.allclose(fs["mean"], fm.values.mean(axis=0)) and np.allclose(fs["std"], fm.values.std(axis=0))
    obj = json.loads(smol_model.save(tmp_path / "m.json").read_text())
    assert obj["training"]["feature_stats"] == fs
    for name in ("gac", "gac-full"):
        for kind, m in load_model(name).models.items():
            assert len(m.training_summary_["feature_stats"]["mean"]) == len(m.feature_names_in_), (name, kind)


def test_the_shift_warning_fires_on_another_model_family(smol_model, uala):
    rep = shift_check(smol_model, uala, name="smol")
    assert rep.shifted and rep.verdict == "outside the training data" and rep.max_shift > 3
    assert "first_token_count" in rep.moved_features()
    msg = rep.message(prior="smol.json")
    assert "outside the data smol was trained on" in msg and "--prior smol.json" in msg and "Label 50 runs" in msg
    # as a GAC (routes these runs without alternatives to that model)
    gac = GeneralCalibrator.from_models({"without_alternatives": smol_model}, name="gac-smol")
    rep = shift_check(gac, uala)
    assert rep.shifted and rep.n_by_part == {"without_alternatives": len(uala)}


def test_no_warning_in_distribution(smol):
    ts, fm = smol
    idx = np.random.default_rng(0).permutation(len(ts))
    a, b = idx[: len(idx) // 2], idx[len(idx) // 2:]
    m = HTCCalibrator().fit(fm.take(a), ts.labels[a])
    rep = shift_check(m, fm.take(b))
    assert not rep.shifted and rep.max_shift < 0.5
    assert "within the data" in rep.message()
    # the shipped GAC was trained on these runs and on UALA: neither is flagged
    gac = load_model("gac")
    assert not shift_check(gac, ts).shifted


def test_chunks_add_up_and_bad_threshold(smol_model, uala):
    one = shift_check(smol_model, uala)
    acc = ShiftAccumulator(smol_model)
    for lo in range(0, len(uala), 200):
        acc.update(uala.take(np.arange(lo, min(lo + 200, len(uala)))))
    two = acc.report()
    assert np.allclose(one.frame["shift"], two.frame["shift"]) and two.n_runs == len(uala)
    assert SHIFT_THRESHOLD == 2.0
    with pytest.raises(ValueError, match="threshold"):
        ShiftAccumulator(smol_model, threshold=0)


def test_old_files_fall_back_to_the_scaler_and_adapted_ones_without_stats_are_unknown(smol_model, uala):
    obj = smol_model.to_dict()
    del obj["training"]["feature_stats"]
    old = HTCCalibrator.from_dict(obj)
    rep = shift_check(old, uala)
    assert rep.shifted and "scaler" in " ".join(rep.notes)
    obj["adaptation"] = {"prior": "x", "choice": "prior"}
    rep = shift_check(HTCCalibrator.from_dict(obj), uala)
    assert rep.verdict == "unknown" and not rep.shifted and "no training statistics" in rep.message()


def test_htc_score_warns_on_shifted_runs_only(tmp_path, capsys, uala_run_a):
    model = tmp_path / "smol.json"
    assert main(["fit", *SAMPLE, "--profile", "chosen", "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["score", str(model), str(uala_run_a), "--out", str(tmp_path / "s.csv")]) == 0
    cap = capsys.readouterr()
    assert "htc score: warning:" in cap.err and "outside the data" in cap.err and "first_token_count" in cap.err
    assert main(["score", str(model), SAMPLE[0], "--out", str(tmp_path / "s2.csv")]) == 0
    cap = capsys.readouterr()
    assert "warning" not in cap.err and "applicability:" in cap.out and "within the data" in cap.out
