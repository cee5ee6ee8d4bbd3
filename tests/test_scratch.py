"""Upload copies never outlive their process (issue 16): removed on every path, a killed process's copy at the
next start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from htc_core.formats import load_bytes
from htc_core.scratch import PREFIX, clean_stale, scratch_dir
from hostile_records import HOSTILE_DIR, ROOT


@pytest.fixture
def tmp_root(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_load_bytes_leaves_no_copy_on_success_or_failure(tmp_root):
    data = (HOSTILE_DIR / "native_int400_logprobs.jsonl").read_bytes()
    ts, rep = load_bytes(data, name="runs.jsonl")
    assert ts.n_trajectories == 3 and len(rep.errors) == 1
    with pytest.raises(ValueError):
        load_bytes(data, name="runs.jsonl", format="no-such-format")
    assert list(tmp_root.iterdir()) == []


def test_a_killed_process_copy_is_removed_at_the_next_start(tmp_root):
    code = ("import sys, time; from htc_core.scratch import scratch_dir\n"
            "with scratch_dir(sys.argv[1]) as d:\n"
            "    (d / 'upload.jsonl').write_bytes(b'x' * 100000); print(d, flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_root)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    left = tmp_root / os.path.basename(proc.stdout.readline().strip())
    assert left.name.startswith(f"{PREFIX}{proc.pid}-") and (left / "upload.jsonl").exists()
    assert clean_stale(tmp_root) == []            # its process still runs: left alone
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert left.exists()                          # SIGKILL: no cleanup could run...
    with scratch_dir(tmp_root) as mine:           # ...the next scratch folder (or the next dashboard start) removes it
        assert not left.exists() and mine.exists()
    assert list(tmp_root.iterdir()) == []


def test_old_style_folders_go_after_an_hour_and_others_stay(tmp_root):
    old = tmp_root / f"{PREFIX}abc123"
    young = tmp_root / f"{PREFIX}def456"
    other = tmp_root / "not-ours"
    for d in (old, young, other):
        d.mkdir()
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert clean_stale(tmp_root) == [old]
    assert young.exists() and other.exists()
