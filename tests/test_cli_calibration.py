import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from htc_core.cli import main

RUN_A = Path(__file__).resolve().parents[2] / "shared/data/uala-hotpotqa/hotpotqa_llama2-70b_run-a.jsonl"
# the single-signal rows of a small evaluation: raw, +Temp, +Platt (+Iso needs >= 200 runs per training fold)
BASE = [f"{b}{s}" for b in ("LastStep-TP", "GlobalTrace-TP", "Bottom10", "LowestGroup", "Tail")
        for s in ("", "+Temp", "+Platt")]
VERBALIZED = ["Verbalized", "Verbalized+Temp", "Verbalized+Platt"]


def write_runs(path, n=40, seed=0, labeled=True, verbalized=False, n_fail=None):
    rng = np.random.default_rng(seed)
    with open(path, "w") as fh:
        for i in range(n):
            ok = bool(rng.random() < 0.5) if n_fail is None else i >= n_fail
            steps = []
            for s in range(int(rng.integers(1, 4))):
                q = 0.9 if ok else 0.7
                steps.append({"name": f"s{s}",
                              "logprobs": np.log(np.clip(rng.normal(q, 0.15, int(rng.integers(5, 30))), 0.01, 1)).tolist()})
            obj = {"id": f"r{i}", "steps": steps, "dataset": "toy", "model": "m"}
            if labeled:
                obj["success"] = ok
            if verbalized:
                obj["verbalized_confidence"] = float(np.clip(rng.normal(0.8 if ok else 0.6, 0.1), 0, 1))
            fh.write(json.dumps(obj) + "\n")
    return path


def test_evaluate_json_schema(tmp_path, capsys):
    f = write_runs(tmp_path / "runs.jsonl", verbalized=True)
    assert main(["evaluate", str(f), "--json", "--seeds", "1"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert set(obj) == {"n", "positive_rate", "methods", "ece"} and obj["n"] == 40
    assert "10 equal-width bins" in obj["ece"]
    assert set(obj["methods"]) == {"HTC-Full", "HTC-Reduced", *BASE, *VERBALIZED}
    for m in ("HTC-Full", "HTC-Reduced"):
        assert set(obj["methods"][m]) == {"ece", "brier", "auroc", "n_features", "n"}
    for k in ("ece", "brier", "auroc"):
        assert set(obj["methods"]["Bottom10+Temp"][k]) == {"mean", "std"}


def test_evaluate_table(tmp_path, capsys):
    f = write_runs(tmp_path / "runs.jsonl", seed=1)
    assert main(["evaluate", str(f), "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "HTC-Reduced" in out and "±" in out and "ECE" in out and "AUROC" in out
    assert "Verbalized: not evaluated" in out


@pytest.mark.parametrize("kwargs,match", [
    ({"n": 20, "n_fail": 0}, "all 20 labeled trajectories are successes"),
    ({"n": 8}, "only 8 labeled trajectories"),
    ({"n": 30, "n_fail": 3}, "only 3 failures"),
    ({"n": 12, "labeled": False}, "none of the 12 trajectories has a success label"),
])
def test_evaluate_bad_input_is_a_message_not_a_traceback(tmp_path, capsys, kwargs, match):
    f = write_runs(tmp_path / "runs.jsonl", **kwargs)
    assert main(["evaluate", str(f), "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


def test_fit_then_score_unlabeled(tmp_path, capsys):
    train = write_runs(tmp_path / "train.jsonl", n=60, seed=2)
    model = tmp_path / "model.json"
    assert main(["fit", str(train), "--variant", "full", "--out", str(model)]) == 0
    assert "wrote" in capsys.readouterr().out
    obj = json.loads(model.read_text())
    assert obj["variant"] == "full" and obj["training"]["n"] == 60 and obj["training"]["datasets"] == ["toy"]
    new = write_runs(tmp_path / "new.jsonl", n=15, seed=3, labeled=False)
    out = tmp_path / "scores.csv"
    assert main(["score", str(model), str(new), "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["id", "confidence", "last_step_tp", "global_trace_tp", "bottom10", "lowest_group",
                                "tail"]
    assert len(df) == 15 and df.confidence.between(0, 1).all()
    # same numbers as the library
    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.features import extract
    from htc_core.formats import load

    ts, _ = load([str(new)])
    np.testing.assert_allclose(df.confidence, HTCCalibrator.load(model).predict_proba(extract(ts))[:, 1], rtol=1e-15)


def test_fit_records_the_profile_and_score_uses_it(tmp_path, capsys):
    train = write_runs(tmp_path / "train.jsonl", n=60, seed=4)
    model = tmp_path / "model.json"
    assert main(["fit", str(train), "--profile", "deepconf", "--top-k", "3", "--out", str(model)]) == 0
    obj = json.loads(model.read_text())
    assert obj["profile"] == "deepconf" and obj["top_k"] == 3
    new = write_runs(tmp_path / "new.jsonl", n=12, seed=5, labeled=False)
    out = tmp_path / "scores.csv"
    assert main(["score", str(model), str(new), "--out", str(out)]) == 0
    from htc_core.calibration.calibrators import HTCCalibrator
    from htc_core.features import extract
    from htc_core.formats import load

    ts, _ = load([str(new)])
    m = HTCCalibrator.load(model)
    assert (m.profile_, m.top_k_) == ("deepconf", 3)
    expected = m.predict_proba(extract(ts, profile="deepconf", top_k=3))[:, 1]
    np.testing.assert_allclose(pd.read_csv(out).confidence, expected, rtol=1e-15)
    with pytest.raises(ValueError, match="fitted on features of profile 'deepconf'"):
        m.predict_proba(extract(ts))


def test_score_rejects_bad_model(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    runs = write_runs(tmp_path / "r.jsonl", n=5)
    assert main(["score", str(bad), str(runs), "--out", str(tmp_path / "s.csv")]) == 2
    assert "not a valid HTC model file" in capsys.readouterr().err


def test_help_texts(capsys):
    for cmd in ("evaluate", "fit", "score"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "usage: htc " + cmd in capsys.readouterr().out


def test_real_run_a_fit_and_score(tmp_path):
    if not RUN_A.exists():
        pytest.skip(f"real data not found at {RUN_A}")
    model = tmp_path / "m.json"
    assert main(["fit", str(RUN_A), "--out", str(model)]) == 0
    out = tmp_path / "s.csv"
    assert main(["score", str(model), str(RUN_A), "--out", str(out)]) == 0
    assert len(pd.read_csv(out)) == 466


def test_score_explain_writes_flags_reasons_and_features(tmp_path, capsys):
    runs = Path(__file__).resolve().parents[1] / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"
    model = tmp_path / "m.json"
    assert main(["fit", str(runs), "--variant", "full", "--out", str(model)]) == 0
    out = tmp_path / "scores.csv"
    assert main(["score", str(model), str(runs), "--out", str(out), "--explain"]) == 0
    df = pd.read_csv(out, keep_default_na=False)
    from htc_core.features import FEATURE_NAMES

    assert {"id", "confidence", "flags", "reason_1", "reason_2", "reason_3"} <= set(df.columns)
    assert set(FEATURE_NAMES) <= set(df.columns) and len(df) == 250
    stuck = df[df["id"] == "arithmetic-0177-SmolLM2-135M-greedy"].iloc[0]
    assert "ended without a final answer" in stuck["flags"] and stuck["reason_1"].endswith(").")
    assert (df["flags"] == "").sum() > 200                      # most runs raise no flag
    # issue 27: what the dashboard's export carries (scorer, outcome, question, answer, gold, out-of-fold)
    assert {"scorer", "success", "question", "final_answer", "gold", "confidence (out-of-fold)"} <= set(df.columns)
    assert set(df["scorer"]) == {"HTC-Full (model file)"}
    oof = pd.to_numeric(df["confidence (out-of-fold)"])
    assert oof.notna().all() and not np.allclose(oof, df["confidence"])   # held out, not the in-sample fit


def test_score_explain_of_unlabeled_runs_with_the_gac(tmp_path, uala_dir):
    """Unlabeled runs scored by the shipped GAC: the scorer (its sub-model) and that sub-model's reasons."""
    import json

    runs = tmp_path / "unlabeled.jsonl"
    objs = [json.loads(x) for x in (uala_dir / "hotpotqa_llama2-70b_run-c.jsonl").read_text().splitlines()[:30]]
    runs.write_text("".join(json.dumps({k: v for k, v in o.items() if k != "success"}) + "\n" for o in objs))
    out = tmp_path / "gac.csv"
    assert main(["score", "gac", str(runs), "--out", str(out), "--explain"]) == 0
    df = pd.read_csv(out, keep_default_na=False)
    assert set(df["scorer"]) == {"GAC (without alternatives model, zero-shot)"}
    assert "confidence (out-of-fold)" not in df.columns and (df["success"] == "").all()
    assert (df["reason_1"] != "").all() and df["question"].str.len().min() > 0
