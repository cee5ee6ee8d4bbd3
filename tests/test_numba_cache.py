"""The compiled kernels survive a new checkout (issue 29, item 3): they are cached in a user folder keyed by the
module's name inside the package and stamped with the source of every kernel module of its folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from htc_core import numba_cache
from htc_core.numba_cache import PackageCacheLocator, folder_stamp, kernel_files

ROOT = Path(__file__).resolve().parents[1]


def test_locator_takes_the_package_kernels_only(tmp_path, monkeypatch):
    from htc_core.calibration import subproblem

    monkeypatch.setenv("HTC_CACHE_DIR", str(tmp_path))
    loc = PackageCacheLocator.from_function(subproblem.l1_coordinate_step.py_func, subproblem.__file__)
    assert loc is not None
    assert Path(loc.get_cache_path()) == tmp_path / "numba" / "htc_core.calibration"

    def elsewhere(x):
        return x

    assert PackageCacheLocator.from_function(elsewhere, __file__) is None


def test_stamp_sees_every_kernel_module_of_the_folder(tmp_path):
    (tmp_path / "path.py").write_text("from x import njit\n@njit\ndef f(): pass\n")
    (tmp_path / "sub.py").write_text("@njit\ndef g(): return 1\n")
    (tmp_path / "plain.py").write_text("def h(): return 1\n")
    files = kernel_files.__wrapped__(tmp_path)
    assert files == ("path.py", "sub.py")

    def stamp():
        stats = tuple(((tmp_path / f).stat().st_mtime_ns, (tmp_path / f).stat().st_size) for f in files)
        return folder_stamp(str(tmp_path), files, stats)

    before = stamp()
    (tmp_path / "plain.py").write_text("def h(): return 2\n")
    assert stamp() == before                 # a module without kernels does not recompile anything
    (tmp_path / "sub.py").write_text("@njit\ndef g(): return 22\n")
    assert stamp() != before                 # an edit of a kernel the path inlines does


CHILD = r"""
import json, sys
import numpy as np
from htc_core.calibration import baselines
f = baselines._lowest_sums_compiled()
out = f(np.array([3.0, 1.0, 2.0, 5.0]), np.array([0, 3, 4]), np.array([2, 1]))
print(json.dumps({"file": baselines.__file__, "out": out.tolist(), "hits": sum(f.stats.cache_hits.values()),
                  "misses": sum(f.stats.cache_misses.values())}))
"""


def _run_copy(copy: Path, cache: Path) -> dict:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cache.parent), "HTC_CACHE_DIR": str(cache), "PYTHONPATH": str(copy)}
    p = subprocess.run([sys.executable, "-c", CHILD], cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.heavy      # three fresh interpreters, two of them compiling the kernel: 5.3 s CPU (not fast-tier work)
def test_a_second_checkout_loads_the_compiled_kernel(tmp_path):
    cache = tmp_path / "cache"
    runs = []
    for name in ("checkout-a", "checkout-b"):
        dst = tmp_path / name
        shutil.copytree(ROOT / "htc_core", dst / "htc_core", ignore=shutil.ignore_patterns("__pycache__"))
        runs.append(_run_copy(dst, cache))
    a, b = runs
    assert a["file"].startswith(str(tmp_path / "checkout-a")) and b["file"].startswith(str(tmp_path / "checkout-b"))
    assert a["out"] == b["out"] == [3.0, 5.0]
    assert (a["misses"], a["hits"]) == (1, 0)         # compiled once, in the first checkout
    assert (b["misses"], b["hits"]) == (0, 1)         # the new checkout found it
    # an edit of a kernel module of the same folder makes it compile again
    sub = tmp_path / "checkout-b" / "htc_core" / "calibration" / "subproblem.py"
    sub.write_text(sub.read_text() + "\n# edited\n")
    c = _run_copy(tmp_path / "checkout-b", cache)
    assert (c["misses"], c["hits"]) == (1, 0)


def test_user_numba_cache_dir_wins(monkeypatch):
    from numba.core import config

    from htc_core.calibration import subproblem

    monkeypatch.setattr(config, "CACHE_DIR", "/somewhere")
    assert PackageCacheLocator.from_function(subproblem.l1_coordinate_step.py_func, subproblem.__file__) is None
    assert numba_cache.cache_dir().name == "numba"
