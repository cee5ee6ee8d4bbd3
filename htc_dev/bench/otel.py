"""Benchmark: OpenTelemetry in, from a file and live (``htc serve``).

    python -m htc_dev.bench otel [--size-mb 90] [--batches 10] [--flushes 20]

Writes an OTLP JSON file as the Collector's file exporter does (one ``ExportTraceServiceRequest`` per line, 100
traces a line; a trace = an AGENT root span, 3 LLM spans whose ``output.value`` is a Chat Completions response
with 60 tokens and top-5 logprobs, as ``make_call`` writes them, and 2 TOOL spans), then measures, each in a
new process (CPU time of the work, after the imports; peak RSS of the process, and after the imports):

- floor: ``json.loads`` of every line (streaming), and the same plus ``json.loads`` of every ``output.value``
  (the responses are JSON inside JSON: a reader cannot do less);
- ``htc_core.formats.load(path, format="otel")``;
- ``htc serve`` (its own process, ``--port 0``): ``--batches`` POSTs of 100 traces (OTLP JSON), wall time from
  the first POST until every run is stored (read from its log), spans/s, and its CPU time;
- a flush's cost as the day's run set grows (in this process): ``--flushes`` flushes of 100 traces each into
  one run set, CPU time of the first and last three (flat: a flush costs its own runs only).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from htc_core.synthetic import make_call

TRACES_PER_LINE = 100
_CHILD = r"""
import json, resource, sys, time
def peak_mb():  # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's across exec on Linux)
    try:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
mode, path = sys.argv[1], sys.argv[2]
if mode == "htc":
    from htc_core.formats import load
rss0 = peak_mb()
t0 = time.process_time()
if mode == "htc":
    ts, rep = load(path, format="otel")
    extra = {"trajectories": ts.n_trajectories, "tokens": ts.n_tokens, "rejected": rep.rejected}
else:
    spans = inner = 0
    with open(path, "rb") as fh:
        for line in fh:
            doc = json.loads(line)
            if mode == "floor+inner":
                for rs in doc["resourceSpans"]:
                    for ss in rs["scopeSpans"]:
                        for sp in ss["spans"]:
                            spans += 1
                            for a in sp["attributes"]:
                                if a["key"] == "output.value" and a["value"]["stringValue"].startswith("{"):
                                    json.loads(a["value"]["stringValue"])
                                    inner += 1
    extra = {"spans": spans, "inner": inner}
cpu = time.process_time() - t0
print(json.dumps({"cpu_s": cpu, "max_rss_mb": peak_mb(),
                  "start_rss_mb": rss0, **extra}))
"""


def _attr(key: str, value) -> dict:
    return {"key": key, "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}}


def _span(tid: str, sid: str, parent: str | None, name: str, kind: str, t0: int, attrs: list) -> dict:
    sp = {"traceId": tid, "spanId": sid, "name": name, "kind": 1, "startTimeUnixNano": str(t0),
          "endTimeUnixNano": str(t0 + 900_000_000), "status": {"code": 1},
          "attributes": [_attr("openinference.span.kind", kind), *attrs]}
    if parent:
        sp["parentSpanId"] = parent
    return sp


def make_trace(rng: random.Random, n: int, *, steps: int = 3, tokens: int = 60) -> list[dict]:
    """The spans of one agent run (OTLP JSON): AGENT root, ``steps`` LLM spans, a TOOL span after each but the
    last."""
    tid, root = f"{n:032x}", f"{n:012x}0000"
    t = 1_795_000_000_000_000_000 + n * 10_000_000_000
    spans = [_span(tid, root, None, "agent", "AGENT", t, [_attr("input.value", f"question {n}")])]
    for s in range(steps):
        call = make_call(rng, f"run-{n}", s, tokens)
        spans.append(_span(tid, f"{n:012x}{2 * s + 1:04x}", root, "ChatCompletion", "LLM", t + (2 * s + 1) * 10**9, [
            _attr("llm.model_name", call["response"]["model"]),
            _attr("llm.input_messages.0.message.role", "user"),
            _attr("llm.input_messages.0.message.content", f"question {n}"),
            _attr("output.value", json.dumps(call["response"])), _attr("output.mime_type", "application/json")]))
        if s < steps - 1:
            spans.append(_span(tid, f"{n:012x}{2 * s + 2:04x}", root, "calculator", "TOOL", t + (2 * s + 2) * 10**9,
                               [_attr("tool.name", "calculator"), _attr("input.value", "14*8"),
                                _attr("output.value", "112")]))
    return spans


def request(traces: list[list[dict]], service: str = "bench-agent") -> dict:
    """One ExportTraceServiceRequest (OTLP JSON) holding ``traces``."""
    return {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", service)]},
                               "scopeSpans": [{"scope": {"name": "openinference.instrumentation.openai"},
                                               "spans": [sp for tr in traces for sp in tr]}]}]}


def write_otlp(path: Path, size_mb: float, seed: int = 0) -> dict:
    rng, n, nbytes, spans = random.Random(seed), 0, 0, 0
    with open(path, "w", encoding="utf-8") as fh:
        while nbytes < size_mb * 1e6:
            traces = [make_trace(rng, n + i) for i in range(TRACES_PER_LINE)]
            n += TRACES_PER_LINE
            spans += sum(map(len, traces))
            line = json.dumps(request(traces)) + "\n"
            fh.write(line)
            nbytes += len(line.encode())
    return {"bytes": nbytes, "traces": n, "spans": spans}


def _child(mode: str, path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(path)], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def serve_throughput(folder: Path, batches: int, seed: int = 1) -> dict:
    """POST ``batches`` requests of 100 traces to a real ``htc serve``; wall time until all are stored."""
    import resource

    rng = random.Random(seed)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)           # earlier children's CPU, not the server's
    bodies = [json.dumps(request([make_trace(rng, 10**6 + b * TRACES_PER_LINE + i)
                                  for i in range(TRACES_PER_LINE)])).encode() for b in range(batches)]
    n_spans = batches * TRACES_PER_LINE * len(make_trace(random.Random(0), 0))
    proc = subprocess.Popen([sys.executable, "-m", "htc_core", "serve", "--port", "0", "--data-dir",
                             str(folder / "serve"), "--settle", "0.2", "--idle", "5"], stderr=subprocess.PIPE,
                            text=True, encoding="utf-8", errors="replace",
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
                            # Ctrl-C stops it; a shell's background job would pass SIGINT on ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    port, stored, done = [None], [0], threading.Event()
    ready, log = threading.Event(), []

    def read_log():
        for line in proc.stderr:
            log.append(line)
            m = re.search(r"http://127\.0\.0\.1:(\d+)/v1/traces", line)
            if m:
                port[0] = int(m.group(1))
                ready.set()
            m = re.search(r"stored (\d+) run\(s\) in '", line)
            if m:
                stored[0] += int(m.group(1))
                if stored[0] >= batches * TRACES_PER_LINE:
                    done.set()

    threading.Thread(target=read_log, daemon=True).start()
    if not ready.wait(120):
        proc.kill()
        raise RuntimeError("htc serve did not start")
    url = f"http://127.0.0.1:{port[0]}/v1/traces"
    t0 = time.perf_counter()
    for body in bodies:
        req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            r.read()
    t_post = time.perf_counter() - t0
    if not done.wait(300):
        proc.kill()
        raise RuntimeError(f"htc serve stored {stored[0]} of {batches * TRACES_PER_LINE} runs: " + "".join(log[-20:]))
    wall = time.perf_counter() - t0
    proc.send_signal(signal.SIGINT)
    proc.wait(120)
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"spans": n_spans, "tokens": batches * TRACES_PER_LINE * 3 * 60, "post_s": t_post, "wall_s": wall,
            "spans_per_s": n_spans / wall,
            "stored": stored[0], "server_cpu_s": cpu.ru_utime + cpu.ru_stime - before.ru_utime - before.ru_stime}


def flush_costs(folder: Path, flushes: int, seed: int = 2) -> list[float]:
    """CPU seconds of each of ``flushes`` flushes of 100 traces into one run set (one service, one day)."""
    from htc_core.app.otlp_sink import TraceBuffer
    from htc_core.app.store import Store
    from htc_core.formats.otel_spans import spans_of_otlp

    rng, buf, out = random.Random(seed), TraceBuffer(Store(folder / "flush"), settle_s=0.01, idle_s=0.01), []
    for f in range(flushes):
        doc = request([make_trace(rng, 10**7 + f * TRACES_PER_LINE + i) for i in range(TRACES_PER_LINE)])
        buf.add(spans_of_otlp(doc, lambda e, where: None))
        t0 = time.process_time()
        buf.flush(force=True)
        out.append(time.process_time() - t0)
    return out


def run(print_fn=print, size_mb: float = 90.0, batches: int = 10, flushes: int = 20) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "otlp.jsonl"
        counts = write_otlp(path, size_mb)
        mb = counts["bytes"] / 1e6
        print_fn(f"OTLP JSON file: {mb:.1f} MB, {counts['traces']:,} traces, {counts['spans']:,} spans "
                 f"(3 LLM spans of 60 tokens, top-5, per trace)")
        out = {"file_mb": mb, **counts}
        for mode, label in (("floor", "floor: json.loads per line"),
                            ("floor+inner", "floor: json.loads per line + each output.value"),
                            ("htc", "htc load(format='otel')")):
            r = _child(mode, path)
            out[mode] = r
            print_fn(f"{label:48s} CPU {r['cpu_s']:6.2f} s ({mb / r['cpu_s']:5.1f} MB/s), "
                     f"peak RSS {r['max_rss_mb']:6.0f} MB (after the imports {r['start_rss_mb']:.0f} MB)")
        print_fn(f"htc load: {out['htc']['trajectories']:,} runs, {out['htc']['tokens']:,} tokens; "
                 f"{out['htc']['cpu_s'] / out['floor+inner']['cpu_s']:.1f}x the floor with output.value")
        s = serve_throughput(folder, batches)
        out["serve"] = s
        print_fn(f"htc serve: {batches} POSTs of 100 traces ({s['spans']:,} spans): all {s['stored']:,} runs stored "
                 f"after {s['wall_s']:.1f} s (POSTs took {s['post_s']:.1f} s): {s['spans_per_s']:,.0f} spans/s "
                 f"({s['tokens'] / s['wall_s']:,.0f} tokens/s); "
                 f"server CPU {s['server_cpu_s']:.1f} s")
        costs = flush_costs(folder, flushes)
        out["flush_cpu_s"] = costs
        print_fn(f"flush of 100 traces into the day's run set: first three {sum(costs[:3]) / 3:.2f} s CPU, last "
                 f"three {sum(costs[-3:]) / 3:.2f} s CPU (run set at {100 * flushes:,} runs)")
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m htc_dev.bench otel", description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mb", type=float, default=90.0, help="size of the OTLP JSON file (default 90)")
    p.add_argument("--batches", type=int, default=10, help="POSTs of 100 traces sent to htc serve (default 10)")
    p.add_argument("--flushes", type=int, default=20, help="flushes of 100 traces into one run set (default 20)")
    a = p.parse_args(argv)
    run(size_mb=a.size_mb, batches=a.batches, flushes=a.flushes)
    return 0
