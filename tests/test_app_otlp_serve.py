"""``htc serve``'s receiver (real HTTP on 127.0.0.1, real store, real protobuf decoding): OTLP JSON and protobuf
bodies become stored, scored trajectories identical to the file reader's; bad payloads get 400 with the reason;
the good spans of a partly bad request are kept; the dashboard's workspace sees the new runs without a restart."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request

import numpy as np
import pytest

from conftest import REPO
from htc_core.app.otlp_server import OTLPReceiver
from htc_core.app.otlp_sink import TraceBuffer, run_set_name
from htc_core.app.store import Store
from htc_core.app.workspace import build_workspace
from htc_core.formats import load

FOREIGN = REPO / "tests" / "fixtures" / "foreign"
LINES = [json.loads(x) for x in (FOREIGN / "otel_otlp.jsonl").read_text().splitlines() if x.startswith("{\"")]


def _post(url, body: bytes, ctype: str, encoding: str | None = None):
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ctype})
    if encoding:
        req.add_header("Content-Encoding", encoding)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read(), r.headers.get("Content-Type")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("Content-Type")


@pytest.fixture
def receiver(tmp_path):
    store = Store(tmp_path / "data")
    rx = OTLPReceiver(TraceBuffer(store, settle_s=0.01, idle_s=0.01), port=0, flush_s=3600, log=lambda m: None)
    rx.start()
    host, port = rx.address
    yield rx, store, f"http://{host}:{port}/v1/traces"
    rx.close()


def _protobuf(doc: dict) -> bytes:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()


def test_json_and_protobuf_requests_are_stored_like_the_file(receiver, tmp_path):
    rx, store, url = receiver
    good = [d for d in LINES if "traceId" in d["resourceSpans"][0]["scopeSpans"][0]["spans"][0]]
    half = len(good) // 2
    for d in good[:half]:                                    # JSON, one span per request, gzip for some
        body = json.dumps(d).encode()
        code, out, _ = _post(url, gzip.compress(body) if d is good[0] else body, "application/json",
                             "gzip" if d is good[0] else None)
        assert code == 200 and json.loads(out) == {}
    merged = {"resourceSpans": [rs for d in good[half:] for rs in d["resourceSpans"]]}
    code, out, ctype = _post(url, _protobuf(merged), "application/x-protobuf")
    assert code == 200 and ctype == "application/x-protobuf"
    rx.flush(force=True)
    (rs,) = store.list_run_sets().itertuples()
    assert rs.name.startswith("otel: toy-agent · ") and rs.trajectories == 3
    assert rs.name == run_set_name("toy-agent", rs.name.split(" · ")[1])
    got = store.load_run_set(rs.id)
    want, _ = load(FOREIGN / "otel_otlp.jsonl")
    assert sorted(got.ids) == sorted(want.ids)
    order = [list(got.ids).index(i) for i in want.ids]
    got = got.take(order)
    np.testing.assert_array_equal(got.logprob, want.logprob)
    np.testing.assert_array_equal(got.top_logprobs, want.top_logprobs)
    assert list(got.step_field("observation")) == list(want.step_field("observation"))
    meta = [json.loads(m) for m in got.meta["metadata"]]
    assert all(0 <= m["htc_confidence"] <= 1 and m["htc_scored_by"] for m in meta)
    ws = build_workspace(store)                              # what the dashboard reads: features and GAC columns
    assert len(ws) == 3 and ws.features.values.shape == (3, 48) and np.isfinite(ws.features.values).all()


def test_bad_payloads_get_400_with_the_reason_and_good_spans_are_kept(receiver):
    rx, store, url = receiver
    for body, ctype, why in [(b"{not json", "application/json", "not valid JSON"),
                             (b'{"spans": []}', "application/json", "no resourceSpans"),
                             (b"\x0a\xff\xff", "application/x-protobuf", "not an OTLP ExportTraceServiceRequest"),
                             (b"x", "text/plain", "unsupported Content-Type")]:
        code, out, _ = _post(url, body, ctype)
        assert code == 400 and why in json.loads(out)["message"], (body, out)
    code, out, _ = _post(url, gzip.compress(b"{}")[:-4], "application/json", "gzip")
    assert code == 400 and "cannot be decompressed" in json.loads(out)["message"]
    code, _, _ = _post(url.replace("/v1/traces", "/v1/logs"), b"{}", "application/json")
    assert code == 404
    # one good trace and one span without a trace id in one request: 200, partialSuccess, the good one stored
    mixed = {"resourceSpans": [rs for d in LINES for rs in d["resourceSpans"]]}
    code, out, _ = _post(url, json.dumps(mixed).encode(), "application/json")
    body = json.loads(out)
    assert code == 200 and body["partialSuccess"]["rejectedSpans"] == "1"
    assert "no traceId" in body["partialSuccess"]["errorMessage"]
    rx.flush(force=True)
    assert store.list_run_sets()["trajectories"].sum() == 3


def test_a_day_run_set_grows_and_late_spans_are_not_lost(receiver):
    rx, store, url = receiver
    first = LINES[:4]                                        # trace 1 (agent, llm, tool, llm)
    for d in first:
        assert _post(url, json.dumps(d).encode(), "application/json")[0] == 200
    rx.flush(force=True)
    assert store.list_run_sets()["trajectories"].tolist() == [1]
    for d in LINES[4:7]:                                     # a late span of trace 1, traces 2 and 3
        assert _post(url, json.dumps(d).encode(), "application/json")[0] == 200
    rx.flush(force=True)
    listing = store.list_run_sets()
    assert len(listing) == 1 and listing["trajectories"].tolist() == [3]   # the day's run set, appended to
    ids = set(store.load_run_set(listing["id"][0]).ids)
    assert {"a" * 31 + "1", "b" * 31 + "2", "c" * 31 + "3"} <= ids


def test_the_day_run_set_keeps_its_id_and_a_selection_of_it_survives_a_flush(tmp_path):
    from htc_core.formats.otel_spans import spans_of_otlp

    store = Store(tmp_path / "data")
    other = store.add_run_set(load(FOREIGN / "cod_native.jsonl")[0], name="other").run_set_id
    buf = TraceBuffer(store, settle_s=0.01, idle_s=0.01)
    spans = [sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)]
    by_trace = {}
    for sp in spans:
        by_trace.setdefault(sp.trace_id, []).append(sp)
    first, *rest = by_trace.values()
    buf.add(first)
    r1 = buf.flush(force=True)
    (name, rs_id), = r1.ids.items()
    picked = build_workspace(store).select(run_sets=[rs_id])            # the sidebar's choice of the run set
    assert len(picked) == 1 and r1.run_sets == {name: 1}
    for group in rest:
        buf.add(group)
    r2 = buf.flush(force=True)
    assert r2.ids == {name: rs_id} and r2.run_sets == {name: 2}          # same id, the 2 new runs appended
    assert sorted(store.run_set_ids()) == sorted([other, rs_id])
    assert store.list_run_sets().set_index("id").loc[rs_id, "trajectories"] == 3
    picked = build_workspace(store).select(run_sets=[rs_id])            # the same selection, after the flush
    assert len(picked) == 3 and sorted(picked.ts.ids) == sorted(by_trace)
    assert np.isfinite(picked.features.values).all()
    assert store.load_run_set(rs_id).ids[0] == next(iter(by_trace))     # the first flush's run kept its place


@pytest.mark.parametrize("model", ["gac", "gac-prefix"])
def test_each_run_is_scored_as_the_model_scores_it_and_a_flush_prints_one_line(tmp_path, model):
    """gac-prefix runs in the live Monitor (the confidence after each step kept); the shipped gac mixes in a
    training-free signal (its 'transfer' step) the Monitor does not compute, so its runs are scored whole."""
    from htc_core.calibration.models import load_model
    from htc_core.formats.otel_spans import spans_of_otlp
    from htc_core.scoring import score_frame

    store = Store(tmp_path / "data")
    buf = TraceBuffer(store, model=model, settle_s=0.01, idle_s=0.01, alert_below=0.99)
    assert buf.live == (getattr(load_model(model), "transfer", None) is None)
    buf.add([sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)])
    res = buf.flush(force=True)
    got = store.load_run_set(next(iter(res.ids.values())))
    want = score_frame(load_model(model), got).set_index("id")["confidence"]    # the model on the whole runs
    for i, m in zip(got.ids, map(json.loads, got.meta["metadata"])):
        assert m["htc_confidence"] == pytest.approx(want[i], abs=1e-9)
        assert res.scores[i] == pytest.approx(m["htc_confidence"], abs=1e-12)
        if buf.live:
            assert len(m["htc_confidence_steps"]) == got.steps_per_trajectory[list(got.ids).index(i)]
            assert m["htc_confidence_steps"][-1] == pytest.approx(m["htc_confidence"], abs=1e-6)
        assert m["htc_scored_by"] == model and m["htc_alert"]["threshold"] == 0.99    # every run is below 0.99
    assert set(res.alerts) == set(got.ids)
    (line,) = res.summaries
    mean = np.mean(list(res.scores.values()))
    assert line.startswith(f"stored 3 run(s) in 'otel: toy-agent · ") and f"scored by {model} (" in line
    assert ("live Monitor" in line) == buf.live
    assert f"mean confidence {mean:.3f}" in line and "applicability over its 3 run(s) this session: " in line
    assert line.rsplit(": ", 1)[1].split(" (")[0] in ("within the training data", "outside the training data",
                                                      "unknown")


def test_a_chosen_model_scores_the_runs(tmp_path):
    from htc_core.calibration.models import load_model
    from htc_core.formats.otel_spans import spans_of_otlp
    from htc_core.scoring import score_frame

    store = Store(tmp_path / "data")
    buf = TraceBuffer(store, model="gac-full", settle_s=0.01, idle_s=0.01)
    buf.add([sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)])
    res = buf.flush(force=True)
    got = store.load_run_set(next(iter(res.ids.values())))
    want = score_frame(load_model("gac-full"), got).set_index("id")["confidence"]
    assert all(res.scores[i] == pytest.approx(want[i], abs=1e-9) for i in got.ids)
    assert "scored by gac-full (" in res.summaries[0] and not res.alerts


def test_the_running_dashboard_shows_received_runs_without_a_restart(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    import htc_core.app.ui as ui
    from htc_core.formats.otel_spans import spans_of_otlp

    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "cod.jsonl").write_text((FOREIGN / "cod_native.jsonl").read_text())
    monkeypatch.setenv("HTC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HTC_SAMPLE_DIR", str(samples))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.session_state[ui.SEEDS] = 1
    at.run()
    assert "5 of 5 trajectories selected" in [c.value for c in at.sidebar.caption]
    buffer = TraceBuffer(ui.get_store(at.session_state[ui.DATA_DIR]), settle_s=0.01, idle_s=0.01)
    buffer.add([sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)])
    buffer.flush(force=True)                                  # what htc serve's flusher does, in another process
    at.run()                                                  # the next rerun of the same session
    assert not at.exception, [e.value for e in at.exception]
    # the page now counts the 3 received runs (unlabeled: scored by the GAC) next to the 5 stored before
    assert any("3 of 8 selected runs have no outcome label" in i.value for i in at.info)


def test_sessions_spread_over_flushes_keep_every_trace(tmp_path):
    from htc_core.formats.otel_spans import spans_of_otlp

    store = Store(tmp_path / "data")
    buf = TraceBuffer(store, settle_s=0.01, idle_s=0.01, group_by="session")
    spans = [sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)]
    for sp in spans:
        sp.attributes["session.id"] = "chat-1"                # three traces of one conversation
    by_trace = {}
    for sp in spans:
        by_trace.setdefault(sp.trace_id, []).append(sp)
    for group in by_trace.values():                           # each trace finishes (and is stored) on its own
        buf.add(group)
        buf.flush(force=True)
    (rs,) = store.list_run_sets().itertuples()
    assert sorted(store.load_run_set(rs.id).ids) == ["chat-1", "chat-1@2", "chat-1@3"]


def test_held_spans_are_bounded(tmp_path):
    from htc_core.formats.otel_spans import spans_of_otlp

    now = [0.0]
    buf = TraceBuffer(Store(tmp_path / "data"), settle_s=100, idle_s=100, max_spans=4, clock=lambda: now[0])
    spans = [sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)]
    for sp in spans:                                          # no trace is quiet long enough to be finished
        buf.add([sp])
        now[0] += 1
    res = buf.flush()
    assert buf.held <= 4 and sum(res.run_sets.values()) >= 1   # the oldest trace was stored to stay in bounds
    assert buf.held == sum(len(p.spans) for p in buf.pending.values())


def test_a_day_run_set_that_cannot_take_the_runs_gives_way_to_a_new_one(tmp_path):
    from datetime import datetime, timezone

    from htc_core.app.otlp_sink import SETTING
    from htc_core.formats.otel_spans import spans_of_otlp

    store = Store(tmp_path / "data")
    bare, _ = load(FOREIGN / "cod_native.jsonl")                          # no token strings
    bare.tokens = None
    old = store.add_run_set(bare, name="bare").run_set_id
    day = datetime.fromtimestamp(1795000000, tz=timezone.utc).strftime("%Y-%m-%d")
    store.set_setting(SETTING + run_set_name("toy-agent", day), old)      # the day's run set keeps no strings
    buf = TraceBuffer(store, settle_s=0.01, idle_s=0.01)
    buf.add([sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)])
    res = buf.flush(force=True)
    (name, new), = res.ids.items()
    assert new != old and res.run_sets[name] == 3 and store.list_run_sets()["trajectories"].tolist() == [5, 3]
    assert any("runs stored in a new run set" in str(p) for p in res.report.problems)
    buf.add([sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)])
    assert buf.flush(force=True).ids == {name: new}                       # later flushes append to the new one


def test_serve_rejects_an_alert_threshold_outside_0_1():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "htc_core", "serve", "--alert-below", "2"], capture_output=True,
                         text=True, timeout=120, cwd=REPO)
    assert out.returncode == 2 and "expected a probability in [0, 1], got '2'" in out.stderr


class _Refuses:
    """A classifier on the 48 features that refuses every run (as a model may on values it cannot take)."""

    profile_, top_k_ = "paper", 5

    def predict_proba(self, X):
        raise ValueError("refused (test model)")


def test_a_run_the_model_cannot_score_is_stored_unscored_and_reported(tmp_path):
    from htc_core.formats.otel_spans import spans_of_otlp

    store = Store(tmp_path / "data")
    buf = TraceBuffer(store, model=_Refuses(), settle_s=0.01, idle_s=0.01)
    buf.add([sp for d in LINES for sp in spans_of_otlp(d, lambda e, where: None)])
    res = buf.flush(force=True)
    (rs,) = res.ids.values()
    got = store.load_run_set(rs)
    assert len(got) == 3 and all(json.loads(m)["htc_confidence"] is None for m in got.meta["metadata"])
    assert sum("not scored: refused (test model)" in str(p) for p in res.report.problems) == 3
    assert res.summaries[0].endswith("mean confidence n/a; applicability: not checked (the model keeps no "
                                     "training feature statistics)")


def test_sigterm_stores_the_held_traces_before_htc_serve_exits(tmp_path):
    """``kill`` / ``docker stop`` send SIGTERM: the traces held (not settled yet) are stored, as on Ctrl-C."""
    import os
    import re
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "htc_core", "serve", "--port", "0", "--data-dir",
                             str(tmp_path / "data"), "--settle", "3600", "--idle", "3600"],
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        deadline, head = time.monotonic() + 300, []
        while time.monotonic() < deadline and not head or not re.search(r":(\d+)/v1/traces", head[-1]):
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "".join(head)
            head.append(line)
        port = re.search(r":(\d+)/v1/traces", head[-1]).group(1)
        for d in LINES:
            _post(f"http://127.0.0.1:{port}/v1/traces", json.dumps(d).encode(), "application/json")
        assert not (tmp_path / "data").exists() or not Store(tmp_path / "data").list_run_sets().shape[0]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    want, _ = load(FOREIGN / "otel_otlp.jsonl")
    (rs,) = Store(tmp_path / "data").list_run_sets().itertuples()
    assert sorted(Store(tmp_path / "data").load_run_set(rs.id).ids) == sorted(want.ids)
