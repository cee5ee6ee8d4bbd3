"""``htc transfer``, ``htc gac``, ``htc ablation``, ``htc models``, ``htc score gac`` on real runs."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from htc_core.calibration.general import GeneralCalibrator, fit_general
from htc_core.calibration.models import SHIPPED, load_model, model_path, shipped_models
from htc_core.cli import main
from htc_core.formats import load
from htc_core.formats.native import write

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small(tmp_path_factory, uala_run_a):
    """Real runs: 40 greedy runs of each sample-run family (top-5) and 60 UALA runs (none); two/ holds the
    units runs and the UALA runs (two groups, for the slower leave-one-out)."""
    d = tmp_path_factory.mktemp("runs")
    ts, _ = load([str(p) for p in sorted((REPO / "sample_runs").glob("*/*SmolLM2-135M-greedy.jsonl"))])
    g = ts.meta.dataset.astype(str).to_numpy()
    idx = np.concatenate([np.flatnonzero(g == x)[:40] for x in sorted(set(g))])
    write(ts.take(idx), d / "sample.jsonl")
    (d / "two").mkdir()
    write(ts.take(idx[g[idx] == "units"]), d / "two" / "units.jsonl")
    ua, _ = load(uala_run_a)
    write(ua.take(np.arange(60)), d / "uala.jsonl")
    write(ua.take(np.arange(60)), d / "two" / "uala.jsonl")
    return d


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_transfer_json(small, capsys):
    obj = _json(capsys, ["transfer", str(small / "sample.jsonl"), "--seeds", "1", "--variant", "reduced", "--json"])
    assert obj["experiment"] == "transfer" and obj["by"] == "dataset" and obj["variants"] == ["reduced"]
    assert obj["groups"] == ["arithmetic", "facts", "strings", "units"] and len(obj["cells"]) == 16
    cell = obj["cells"][0]
    assert set(cell) == {"variant", "source", "target", "kind", "n_target", "ece", "brier", "auroc", "n_features"}
    assert set(cell["ece"]) == {"mean", "std"}


def test_transfer_by_framework_table(small, capsys):
    assert main(["transfer", str(small / "sample.jsonl"), str(small / "uala.jsonl"), "--by", "framework",
                 "--seeds", "1", "--variant", "full"]) == 0
    out = capsys.readouterr().out
    assert "HTC-Full, ECE" in out and "htc-react" in out and "UALA" in out


def test_gac_json_all_strategies(small, capsys):
    obj = _json(capsys, ["gac", str(small / "two"), "--seeds", "1", "--variant", "reduced", "--strategy", "all",
                         "--json"])
    assert obj["experiment"] == "gac-leave-one-out" and obj["strategies"] == ["by-kind", "pooled", "chosen"]
    assert obj["runs_with_alternatives"] == {"HotpotQA": 0, "units": 40}
    assert {r["method"] for r in obj["rows"]} == {"GAC (by-kind)", "GAC (pooled)", "GAC (chosen)", "DirectTrain"}
    assert len(obj["rows"]) == 2 * 4


def test_ablation_table(small, capsys):
    assert main(["ablation", str(small / "uala.jsonl"), "--seeds", "1", "--variant", "reduced"]) == 0
    out = capsys.readouterr().out
    assert "Dynamics+Position+Stability+Structure (48)" in out and "feature selection frequency" in out


def test_experiment_user_errors(small, tmp_path, capsys):
    assert main(["transfer", str(small / "uala.jsonl"), "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("htc transfer: error: cannot run a transfer matrix") and "Traceback" not in err
    with pytest.raises(SystemExit):
        main(["gac", str(small), "--by", "team"])
    assert "invalid choice: 'team'" in capsys.readouterr().err
    assert main(["models", "nope"]) == 2
    assert "no shipped model named 'nope'" in capsys.readouterr().err
    assert main(["score", "gac-huge", str(small / "uala.jsonl"), "--out", str(tmp_path / "s.csv")]) == 2
    assert "neither a shipped model (gac, gac-full, gac-prefix) nor an existing file" in capsys.readouterr().err


def test_shipped_models_and_cards(capsys):
    names = [m.name for m in shipped_models()]
    assert names == list(SHIPPED)
    for m in shipped_models():
        if m.name == "gac-prefix":           # trained on prefixes, card checked in test_monitor_gac_prefix.py
            continue
        c = m.card
        assert c["name"] == m.name and c["training_data"]["n"] > 2000
        # trained on the project's own runs (all with top-k alternatives); UALA HotpotQA is the foreign set
        assert c["training_data"]["runs_without_alternatives"] == 0 and c["training_data"]["runs_with_alternatives"] > 0
        assert c["transfer"]["held"]["fallback"]["kinds"] == ["without_alternatives"]
        assert {r["dataset"] for r in c["training_data"]["by_dataset_and_model"]} >= {"docs", "lists", "units"}
        assert {r["model_family"] for r in c["training_data"]["run_sets"]} == {"SmolLM2-135M", "Gemma3-270M"}
        assert all(r["runs"] > 0 and 0 < r["success_rate"] < 1 for r in c["training_data"]["run_sets"])
        assert c["models"]["with_alternatives"]["profile"] == "paper"
        assert c["models"]["without_alternatives"]["profile"] == "chosen"
        loo = c["leave_one_out"]
        assert {r["method"] for r in loo["rows"]} >= {"gac", "em", "tts", "iw", "stack-oof", "signal", "signal-oof"}
        assert loo["chosen"] in loo["summary"] and c["transfer"]["chosen"] == loo["chosen"]
        assert len(c["expected_error"]["points"]) == len({r["family"] for r in loo["rows"]}) >= 8
        assert "decision" in c and "sample_runs" in c["training_data"]["sources"]
    obj = _json(capsys, ["models", "--json"])
    assert [m["name"] for m in obj] == ["gac", "gac-full", "gac-prefix"]
    assert main(["models", "gac"]) == 0
    out = capsys.readouterr().out
    assert "routing:" in out and "Gemma3-270M" in out and "transfer: signal-oof" in out and "mean / worst" in out


def test_score_with_shipped_gac_routes_each_run(small, tmp_path, capsys):
    out = tmp_path / "scores.csv"
    assert main(["score", "gac", str(small / "sample.jsonl"), str(small / "uala.jsonl"), "--out", str(out)]) == 0
    assert "GAC-Reduced" in capsys.readouterr().out
    df = pd.read_csv(out)
    assert len(df) == 220 and df.confidence.between(0, 1).all()
    assert (df.gac_model[df.id.str.startswith(("arith", "facts", "strings", "units"))] == "with_alternatives").all()
    assert (df.gac_model == "without_alternatives").sum() == 60
    # the same numbers from the library
    gac = load_model("gac")
    ts, _ = load([str(small / "sample.jsonl"), str(small / "uala.jsonl")])
    np.testing.assert_allclose(gac.predict_proba(ts)[:, 1], df.confidence.to_numpy(), rtol=0, atol=1e-15)
    assert model_path("gac").name == "gac.json"


def test_general_calibrator_round_trip_and_routing(small, tmp_path):
    ts, _ = load([str(small / "sample.jsonl"), str(small / "uala.jsonl")])
    gac = fit_general(ts, variant="reduced", alphas=(0.1, 1.0, 10.0), inner_folds=3, card={"note": "test"})
    kinds = gac.kinds(ts)
    assert (kinds == "without_alternatives").sum() == 60 and (kinds == "with_alternatives").sum() == 160
    assert gac.models["with_alternatives"].training_summary_["n"] == 160
    assert gac.models["without_alternatives"].training_summary_["n"] == 220
    back = GeneralCalibrator.load(gac.save(tmp_path / "g.json"))
    np.testing.assert_array_equal(back.predict_proba(ts), gac.predict_proba(ts))
    assert back.card == {"note": "test"} and back.variant == "reduced"
    # a run scored alone gets the same confidence as in the batch (routing is per run)
    one = ts.take([0])
    assert back.predict_proba(one)[0, 1] == pytest.approx(gac.predict_proba(ts)[0, 1], abs=1e-12)
    bad = json.loads((tmp_path / "g.json").read_text())
    bad["models"]["without_alternatives"] = None
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="not a valid GAC model file: models must hold"):
        GeneralCalibrator.load(tmp_path / "bad.json")


def test_training_script_writes_both_models_with_cards(small, tmp_path, capsys):
    from htc_dev.train_gac import main as train

    out = tmp_path / "models"
    assert train(["--sample-runs", str(small / "two" / "units.jsonl"), "--uala", str(small / "two" / "uala.jsonl"),
                  "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["gac-full.json", "gac.json"]
    table = capsys.readouterr().out
    assert "leave-one-family-out" in table and "stack-oof" in table     # the table it decided from
    for name, variant in (("gac", "reduced"), ("gac-full", "full")):
        g = GeneralCalibrator.load(out / f"{name}.json")
        assert g.name == name and g.variant == variant
        td = g.card["training_data"]
        assert td["n"] == 100 and td["runs_with_alternatives"] == 40 and td["runs_without_alternatives"] == 60
        assert {(r["task"], r["runs"]) for r in td["run_sets"]} == {("units", 40), ("HotpotQA", 60)}
        assert g.card["models"]["with_alternatives"]["n_train"] == 40
        loo = g.card["leave_one_out"]
        assert {r["family"] for r in loo["rows"]} == {"HotpotQA | Llama-2-70b-hf", "units | SmolLM2-135M"}
        assert g.card["transfer"]["chosen"] == loo["chosen"]
        assert (g.transfer is None) == (loo["chosen"] == "gac")
        assert len(g.card["expected_error"]["points"]) == 2
    # the card's table is reproduced by a command
    assert train(["--sample-runs", str(small / "two" / "units.jsonl"), "--uala", str(small / "two" / "uala.jsonl"),
                  "--table-only", "--out", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out.strip() == table.split("\nwrote")[0].strip()
    assert not (tmp_path / "none").exists()
