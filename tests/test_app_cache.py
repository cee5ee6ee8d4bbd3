"""Results keyed by content: saving a model or a restart never recomputes the evaluation (hit counter)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import htc_core.app.compute as compute
import htc_core.app.ui as ui
from htc_core.app.ingest import ingest
from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace

from apptest_kit import APP, new_app
from conftest import REPO

pytestmark = pytest.mark.app

SHIPPED = REPO / "sample_runs" / "arithmetic" / "arithmetic_SmolLM2-135M-greedy.jsonl"


@pytest.fixture
def sample_dir(tmp_path) -> Path:
    d = tmp_path / "samples"
    d.mkdir()
    lines = SHIPPED.read_text(encoding="utf-8").splitlines(True)[:60]
    (d / "arithmetic-60.jsonl").write_text("".join(lines), encoding="utf-8")
    return d


def fresh_app(tmp_path, sample_dir, monkeypatch) -> AppTest:
    at = new_app(monkeypatch, tmp_path / "data", sample_dir, timeout=300)
    return at


def calibration(at: AppTest) -> AppTest:
    at.switch_page("pages/calibration.py")
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    return at


def test_saving_a_model_and_a_restart_do_not_recompute_the_evaluation(tmp_path, sample_dir, monkeypatch):
    compute.fit_registry.clear()                                        # no result of another test in memory
    at = fresh_app(tmp_path, sample_dir, monkeypatch)
    before = compute.CACHE_STATS.copy()
    at.run()                                                         # the app starts the evaluation
    calibration(at)                                                  # and Calibration joins it
    first = compute.CACHE_STATS - before
    assert first["evaluation parts"] == len(compute.EVAL_PARTS)     # baselines, HTC-Full, HTC-Reduced, once
    assert any("★" in str(v) for v in at.dataframe[0].value["Brier ↓"])
    store = Store(tmp_path / "data")
    assert store.count_results() == len(compute.EVAL_PARTS)
    revision = store.revision()

    # save a model from the page: the store's revision moves, the evaluation is not recomputed
    at.button(key="fit_button").click().run()
    assert store.revision() != revision and len(store.list_models()) == 1
    before = compute.CACHE_STATS.copy()
    calibration(at)
    after_save = compute.CACHE_STATS - before
    assert after_save["computed"] == 0 and after_save["memory"] >= len(compute.EVAL_PARTS)

    # a restart (empty memory, a new session): read back from the store, nothing recomputed, same numbers
    table = at.dataframe[0].value
    compute.fit_registry.clear()
    at2 = fresh_app(tmp_path, sample_dir, monkeypatch)
    before = compute.CACHE_STATS.copy()
    at2.run()                                                        # the Runs page finds the parts in the store
    calibration(at2)
    restart = compute.CACHE_STATS - before
    assert restart["evaluation parts"] == 0 and restart["store"] >= len(compute.EVAL_PARTS)
    assert at2.dataframe[0].value.equals(table)


def test_content_digest_follows_the_content_not_the_revision(tmp_path):
    store = Store(tmp_path / "store")
    part = tmp_path / "a.jsonl"
    part.write_text("".join(SHIPPED.read_text(encoding="utf-8").splitlines(True)[:30]), encoding="utf-8")
    ingest(store, [part], name="a")
    ws = build_workspace(store)
    d = ws.content_digest()
    store.save_model({"variant": "reduced"}, name="m")              # another revision, same runs
    assert build_workspace(store).content_digest() == d
    assert ws.take(np.arange(29)).content_digest() != d             # another selection
    flipped = ws.take(np.arange(30))
    flipped.ts.meta.loc[0, "success"] = not bool(flipped.ts.meta.loc[0, "success"])
    assert flipped.content_digest() != d                            # one label changed
    assert build_workspace(store, profile="deepconf").content_digest() != d


def test_a_rerun_joins_the_running_evaluation_instead_of_restarting_it(tmp_path, sample_dir, monkeypatch):
    """The evaluation runs in a background job: a page run cut short (what a widget change or a reload does to
    the script) leaves it running, and the next run, here a new session, joins it (started/joined counters);
    nothing is computed twice."""
    from htc_core.app import jobs

    compute.fit_registry.clear()
    sample_dir = tmp_path / "units"                                 # 500 real runs: the evaluation (paper alphas,
    sample_dir.mkdir()                                               # 5 repeats) outlasts the 1.5 s cut by far, also
    #                                                                  counting the head start the Runs page gives it
    for src in sorted((REPO / "sample_runs" / "units").glob("*.jsonl")):
        (sample_dir / src.name).write_bytes(src.read_bytes())
    at = fresh_app(tmp_path, sample_dir, monkeypatch)
    monkeypatch.setattr(compute, "ALPHAS", None)                  # the paper's 15 alphas
    at.session_state[ui.SEEDS] = 5
    started, joined = jobs.JOB_STATS["started"], jobs.JOB_STATS["joined"]
    computed = compute.CACHE_STATS["evaluation parts"]
    at.run()                                                         # the Runs page starts it in the background
    assert jobs.JOB_STATS["started"] == started + 1
    at.switch_page("pages/calibration.py")
    with pytest.raises(RuntimeError, match="timed out"):
        at.run(timeout=1.5)                                          # the script is cut off while it waits
    assert jobs.JOB_STATS["started"] == started + 1
    running = [j for j in list(jobs._JOBS.values()) if j.is_running]
    assert running, "the evaluation stopped with the page script"

    again = fresh_app(tmp_path, sample_dir, monkeypatch)
    monkeypatch.setattr(compute, "ALPHAS", None)                  # the same settings, hence the same key
    again.session_state[ui.SEEDS] = 5
    again.run()
    calibration(again)                                               # waits for the job it joined
    assert jobs.JOB_STATS["started"] == started + 1                  # not restarted
    assert jobs.JOB_STATS["joined"] >= joined + 1
    assert compute.CACHE_STATS["evaluation parts"] - computed == len(compute.EVAL_PARTS)   # each part once
    assert Store(tmp_path / "data").count_results() == len(compute.EVAL_PARTS)
    assert "HTC-Reduced" in set(again.dataframe[0].value["method"].str.replace("★ ", ""))


def test_a_part_that_finishes_while_the_page_draws_is_drawn(tmp_path, sample_dir, monkeypatch):
    """Calibration draws what is ready; a part that finishes after the page read the evaluation but before it
    looked for pending parts (the page takes a while to draw) makes it draw again: it never stays without it."""
    compute.fit_registry.clear()
    at = fresh_app(tmp_path, sample_dir, monkeypatch)
    at.run()
    calibration(at)                                       # every part computed and in memory
    full = compute.evaluation
    calls = []

    def first_without_reduced(ws, *, wait=True):
        calls.append(wait)
        if len(calls) > 1:
            return full(ws, wait=wait)
        parts = [compute.cached_result_quiet(compute._part_key(p)) for p in compute.EVAL_PARTS]
        drawn = compute.merge_evaluations(parts[:-1] + [None])  # as read just before HTC-Reduced was ready
        assert drawn.parts == ("baselines", "full") and compute.parts_missing(drawn) == ["reduced"]
        return drawn

    monkeypatch.setattr(ui, "evaluation", first_without_reduced)
    at2 = AppTest.from_file(APP, default_timeout=300)
    at2.session_state[ui.SEEDS] = 1
    at2.run()
    calibration(at2)
    assert len(calls) >= 2                                # the page drew again
    assert "HTC-Reduced" in list(at2.dataframe[0].value["method"])
    assert not [c for c in at2.caption if "Still evaluating" in str(c.value)]



def test_the_app_starts_the_evaluation_early_only_while_the_store_is_idle(tmp_path, sample_dir, monkeypatch):
    """Every page starts the selection's evaluation in the background once the selection is known, so
    Calibration joins it; never while another job of the store runs (a selection the user leaves again must not
    queue work ahead of the one they open) and never above ``compute.PREFETCH_CAP`` labeled runs."""
    import threading
    import time

    from htc_core.app import jobs

    compute.fit_registry.clear()
    at = fresh_app(tmp_path, sample_dir, monkeypatch)
    release = threading.Event()
    blocker = jobs.submit(str(tmp_path / "data"), ("blocker", time.time()), "Blocker", lambda job: release.wait(60))
    try:
        started = jobs.JOB_STATS["started"]
        at.run()
        assert not at.exception and jobs.JOB_STATS["started"] == started       # the store was busy
    finally:
        release.set()
        assert blocker.finished.wait(30)
    monkeypatch.setattr(compute, "PREFETCH_CAP", 10)                         # 60 labeled runs: too many now
    fresh_app(tmp_path, sample_dir, monkeypatch).run()                       # a new session (runs app.py again)
    assert jobs.JOB_STATS["started"] == started
    monkeypatch.setattr(compute, "PREFETCH_CAP", 5_000)
    at = fresh_app(tmp_path, sample_dir, monkeypatch)
    computed = compute.CACHE_STATS["evaluation parts"]
    at.run()
    assert jobs.JOB_STATS["started"] == started + 1                          # idle store, small selection
    calibration(at)      # joins it, or finds its parts done (a job submitted just as it ended finds nothing to do)
    assert compute.CACHE_STATS["evaluation parts"] - computed == len(compute.EVAL_PARTS)   # each part once
    assert "HTC-Reduced" in set(at.dataframe[0].value["method"].str.replace("★ ", ""))


def test_the_feature_space_projection_is_kept_in_the_store_across_a_restart(tmp_path, sample_dir, monkeypatch):
    """Issue 30 item 5: UMAP is computed once per selection content; a restart reads it back from the store
    instead of fitting again (the same points drawn)."""
    compute.fit_registry.clear()
    at = fresh_app(tmp_path, sample_dir, monkeypatch)
    at.run()
    store = Store(tmp_path / "data")

    def projections() -> list:
        with store._connect() as con:
            return [bytes(r[0]) for r in con.execute("SELECT data FROM results WHERE kind = 'projection'").fetchall()]

    assert projections() == []
    at.switch_page("pages/feature_space.py")
    at.run()                       # a PCA at once; UMAP in its background job, kept in the store when done
    assert not at.exception and not at.error
    deadline = time.monotonic() + 240
    while len(projections()) < 1:
        assert time.monotonic() < deadline, "the background UMAP was never kept"
        time.sleep(0.2)
    at.run()
    assert not at.exception and not at.error and len(projections()) == 1
    drawn = at.get("plotly_chart")[0].proto.spec
    compute.fit_registry.clear()                                        # a restart: empty memory, a new session
    import htc_core.app.projection_job as projection_job

    monkeypatch.setattr(projection_job, "project", lambda *a, **k: pytest.fail("UMAP fitted again after a restart"))
    at2 = fresh_app(tmp_path, sample_dir, monkeypatch)
    at2.run()
    at2.switch_page("pages/feature_space.py")
    before = compute.CACHE_STATS.copy()
    at2.run()
    assert not at2.exception and not at2.error
    assert (compute.CACHE_STATS - before)["store"] >= 1 and len(projections()) == 1
    assert at2.get("plotly_chart")[0].proto.spec == drawn


def test_projection_bytes_round_trip_exactly():
    from htc_core.app.projection import Projection

    p = Projection(coords=np.random.default_rng(0).normal(size=(17, 2)), method="umap",
                   params={"n_neighbors": 15, "fit_rows": 17}, seconds=1.5)
    q = Projection.from_bytes(p.to_bytes())
    assert np.array_equal(p.coords, q.coords) and (q.method, q.params, q.seconds) == (p.method, p.params, 1.5)
    with pytest.raises(Exception):
        Projection.from_bytes(b"not an npz")
