"""``htc serve``: an OTLP/HTTP trace receiver (``POST /v1/traces``) that feeds the dashboard's store.

Standard library HTTP (``http.server.ThreadingHTTPServer``): the receiver has one endpoint and no routing,
templating or async needs, so a web framework would add a dependency and nothing else. It listens on
127.0.0.1 unless told otherwise: spans carry prompts and answers.

Per the OTLP/HTTP specification: protobuf (``application/x-protobuf``) or JSON (``application/json``) bodies,
optionally gzip-compressed; the answer has the request's encoding. A body with no readable traces request gets
400 with the reason (as a ``google.rpc.Status``-shaped JSON / plain message); a request whose spans are partly
unreadable is accepted with ``partialSuccess`` (``rejectedSpans`` and the first reasons), and its good spans are
kept. A background thread flushes finished traces into the store every ``flush_s`` seconds
(:class:`~htc_core.app.otlp_sink.TraceBuffer`).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from ..formats.otlp_wire import PROTOBUF, PayloadError, decode_traces
from .otlp_sink import TraceBuffer

__all__ = ["OTLPReceiver", "MAX_BODY"]

MAX_BODY = 64 << 20          # a larger request body is refused with 413


def _response_body(ctype: str, rejected: int, message: str) -> tuple[bytes, str]:
    """An ExportTraceServiceResponse (with partialSuccess when spans were rejected) in the request's encoding."""
    if ctype == PROTOBUF:
        try:
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

            resp = ExportTraceServiceResponse()
            if rejected:
                resp.partial_success.rejected_spans = rejected
                resp.partial_success.error_message = message
            return resp.SerializeToString(), PROTOBUF
        except ImportError:
            pass
    body = {"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": message}} if rejected else {}
    return json.dumps(body).encode(), "application/json"


class _Handler(BaseHTTPRequestHandler):
    server_version = "htc-serve"
    buffer: TraceBuffer
    log: Callable[[str], None]

    def log_message(self, fmt, *args):        # one line per request through the receiver's logger
        self.log(f"{self.address_string()} {fmt % args}")

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _fail(self, code: int, reason: str) -> None:
        self._send(code, json.dumps({"code": 3 if code == 400 else 8, "message": reason}).encode(), "application/json")

    def do_POST(self):  # noqa: N802 - http.server's naming
        if self.path.split("?")[0].rstrip("/") != "/v1/traces":
            return self._fail(404, f"unknown path {self.path!r}: send traces to /v1/traces")
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return self._fail(400, "Content-Length is not a number")
        if n > MAX_BODY:
            return self._fail(413, f"request body of {n:,} bytes is over the limit of {MAX_BODY:,}")
        body = self.rfile.read(n)
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        try:
            spans, problems = decode_traces(body, ctype, self.headers.get("Content-Encoding"))
        except PayloadError as e:
            self.log(f"400: {e}")
            return self._fail(400, str(e))
        self.buffer.add(spans)
        msg = "; ".join(f"{where}: {e.reason}" for where, e in problems[:5])
        if problems:
            self.log(f"{len(problems)} span(s) rejected, {len(spans)} kept: {msg}")
        out, out_type = _response_body(ctype, len(problems), msg)
        self._send(200, out, out_type)

    def do_GET(self):  # noqa: N802
        if self.path.split("?")[0].rstrip("/") == "/health":      # for probes (and the README test)
            return self._send(200, b'{"status": "ok"}', "application/json")
        self._fail(405, "the receiver takes POST /v1/traces (OTLP/HTTP)")


class OTLPReceiver:
    """The server and its flusher: ``start()`` (background threads) or ``serve_forever()``; ``close()`` stops both
    and flushes every trace still held."""

    def __init__(self, buffer: TraceBuffer, *, host: str = "127.0.0.1", port: int = 4318, flush_s: float = 1.0,
                 log: Callable[[str], None] = print):
        handler = type("Handler", (_Handler,), {"buffer": buffer, "log": staticmethod(log)})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.buffer, self.flush_s, self.log = buffer, flush_s, log
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def address(self) -> tuple[str, int]:
        return self.httpd.server_address[:2]

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.flush_s):
            self.flush()

    def flush(self, *, force: bool = False) -> None:
        try:
            res = self.buffer.flush(force=force)
        except Exception as e:  # noqa: BLE001 - the receiver keeps running; the traces are reported
            self.log(f"could not store traces: {type(e).__name__}: {e}")
            return
        for line in res.summaries:          # one line per run set written (runs, id, scorer, mean, verdict)
            self.log(line)
        for tid, (step, c) in res.alerts.items():
            self.log(f"  alert: {tid}: confidence {c:.3f} after step {step}")
        for p in res.report.problems[:20]:
            self.log(f"  [{p.severity}] {p}")

    def start(self) -> "OTLPReceiver":
        for target in (self.httpd.serve_forever, self._flush_loop):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def serve_forever(self) -> None:
        t = threading.Thread(target=self._flush_loop, daemon=True)
        t.start()
        self._threads.append(t)
        try:
            self.httpd.serve_forever()
        finally:
            self.close()

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.flush(force=True)
