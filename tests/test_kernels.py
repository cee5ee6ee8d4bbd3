"""The kernel warm-up (issue 29, item 3): ``htc warmup`` compiles every kernel family into the cache of a fresh
install, a later process loads them; the dashboard's background warm-up runs once per process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core import kernels
from htc_core.calibration import baselines
from htc_core.calibration.baselines import lowest_sums_sorted
from htc_core.calibration.lowest_sums import lowest_sums
from htc_core.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _reference(r, off, k):
    out = np.zeros(len(off) - 1)
    for i in range(len(off) - 1):
        seg, total = np.sort(r[off[i]:off[i + 1]]), 0.0
        for j in range(min(k[i], len(seg))):
            total += seg[j]
        out[i] = total
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.5, 1.0, float("nan")])), max_size=30),
                max_size=12), st.data())
def test_lowest_sums_are_the_sorted_prefix_sums_to_the_bit(segments, data):
    lens = np.array([len(s) for s in segments], dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    r = np.array([v for s in segments for v in s], dtype=np.float64)
    k = np.array(data.draw(st.lists(st.integers(1, 35), min_size=len(segments), max_size=len(segments))),
                 dtype=np.int64)
    assert np.array_equal(lowest_sums(r, off, k), _reference(r, off, k), equal_nan=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(st.floats(-1, 1), st.sampled_from([0.0, -0.0, 0.5, float("nan"), float("inf"),
                                                                      -float("inf")])), max_size=30), max_size=12),
       st.data())
def test_numpy_lowest_sums_are_the_kernels_to_the_bit(segments, data):
    """Bottom-10% of up to baselines.SORTED_RUNS runs sorts with numpy (no compile): the kernel's sums, signed
    zeros, NaN and infinities included."""
    lens = np.array([len(s) for s in segments], dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    r = np.array([v for s in segments for v in s], dtype=np.float64)
    k = np.array(data.draw(st.lists(st.integers(0, 35), min_size=len(segments), max_size=len(segments))),
                 dtype=np.int64)
    want, got = lowest_sums(r, off, k), lowest_sums_sorted(r, off, k)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_bottom10_is_the_same_on_both_paths(monkeypatch):
    from htc_core.synthetic import synthetic_trace_set

    ts = synthetic_trace_set(300, n_steps=4, n_tokens=30, k=5, seed=3)
    small = baselines.bottom10(ts)
    monkeypatch.setattr(baselines, "SORTED_RUNS", 0)
    assert np.array_equal(baselines.bottom10(ts), small, equal_nan=True)


def test_background_warmup_runs_once_and_leaves_the_pages_families_ready():
    started = kernels.start_background()
    assert kernels.start_background() is False          # once per process, whoever asked first
    done, error = kernels.wait_background(timeout=600)
    assert error is None
    assert set(kernels.PAGES) <= set(done) <= set(kernels.FAMILIES)
    assert kernels.status_text() is None                # nothing compiling any more: the sidebar shows nothing
    assert isinstance(started, bool)


def test_warm_refuses_an_unknown_family():
    with pytest.raises(ValueError, match="unknown kernel families"):
        kernels.warm(families=["nope"])


def test_warmup_is_a_documented_command():
    text = build_parser().format_help()
    assert "warmup" in text and "compile the fitting kernels" in text


@pytest.mark.heavy
def test_warmup_fills_an_empty_cache_and_a_new_process_loads_it(tmp_path):
    env = dict(os.environ, HTC_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)

    def run() -> str:
        p = subprocess.run([sys.executable, "-m", "htc_core", "warmup"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        return p.stderr

    first = run()
    assert "compiling (first time on this machine)" in first
    assert any((tmp_path / "numba" / "htc_core.calibration").glob("*_best_on_segment-*.nbi"))
    assert any((tmp_path / "numba" / "htc_core.features").glob("*.nbi"))
    second = run()
    assert "loading them from the cache" in second
    for name in kernels.FAMILIES:
        assert name in first and name in second


def test_cache_is_warm_looks_under_numba_cache_dir_when_it_is_set(tmp_path, monkeypatch):
    # htc's own folder holds the path solver's index: warm while NUMBA_CACHE_DIR is unset
    folder = tmp_path / "htc" / "numba" / "htc_core.calibration"
    folder.mkdir(parents=True)
    (folder / "subproblem._best_on_segment-299.py311.nbi").write_bytes(b"")
    monkeypatch.setenv("HTC_CACHE_DIR", str(tmp_path / "htc"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert kernels.cache_is_warm()
    # numba's own variable wins (numba then caches under it, never in htc's folder): an empty one is cold
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba-user"))
    assert not kernels.cache_is_warm()


NUMBA_DIR_CHILD = r"""
import sys
from htc_core import kernels
print(kernels.cache_is_warm())
kernels.warm(families=[sys.argv[1]])
print(kernels.cache_is_warm())
"""


@pytest.mark.heavy
def test_cache_is_warm_sees_what_numba_compiled_under_numba_cache_dir(tmp_path):
    # a real compile: numba's own locator writes the kernels under NUMBA_CACHE_DIR, and cache_is_warm finds them
    env = dict(os.environ, HTC_CACHE_DIR=str(tmp_path / "htc"), NUMBA_CACHE_DIR=str(tmp_path / "numba-user"),
               PYTHONPATH=str(ROOT))
    family = "path solver (fit, evaluate, Calibration)"
    p = subprocess.run([sys.executable, "-c", NUMBA_DIR_CHILD, family], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["False", "True"]
    assert any((tmp_path / "numba-user").rglob("*_best_on_segment-*.nbi"))
    assert not any((tmp_path / "htc").rglob("*.nbi"))        # htc's folder was not used: numba's variable won
