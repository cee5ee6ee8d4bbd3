"""htc_core.synthetic: the random trace set keeps its metadata as plain columns (no pandas until ``ts.meta`` is
read), with the same values and the same metadata schema as every reader's trace set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from htc_core.synthetic import synthetic_trace_set
from htc_core.traces import empty_meta

ROOT = Path(__file__).resolve().parents[1]


def test_building_and_reading_labels_and_ids_imports_no_pandas():
    code = ("import json, sys\nfrom htc_core.synthetic import synthetic_trace_set\n"
            "ts = synthetic_trace_set(20, n_steps=2, n_tokens=3)\n"
            "print(json.dumps({'pandas': 'pandas' in sys.modules, 'labels': ts.labels.tolist(),"
            " 'ids': ts.ids.tolist()}))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["pandas"] is False
    assert out["ids"] == [f"syn-{i}" for i in range(20)] and set(out["labels"]) <= {0.0, 1.0}


@pytest.mark.parametrize("n_traj,seed", [(1, 0), (7, 1), (40, 5)])
def test_meta_frame_is_the_pandas_built_one(n_traj, seed):
    """The frame equals the one built the former way (empty_meta + a nullable boolean success drawn from the same
    generator), with the readers' dtypes: ids are object (str), success nullable boolean."""
    ts = synthetic_trace_set(n_traj, n_steps=2, n_tokens=3, seed=seed)
    rng = np.random.default_rng(seed)
    n = n_traj * 2 * 3
    rng.beta(4.0, 1.0, n), rng.uniform(0.3, 1.0, n), rng.exponential(1.5, (n, 4))   # the token draws come first
    want = empty_meta(n_traj)
    want["id"] = pd.Series([f"syn-{i}" for i in range(n_traj)], dtype=object)
    want["success"] = pd.array(rng.random(n_traj) < 0.5, dtype="boolean")
    pd.testing.assert_frame_equal(ts.meta, want, check_exact=True)
    assert ts.meta.dtypes.to_dict() == empty_meta(0).dtypes.to_dict()
