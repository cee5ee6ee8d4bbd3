"""An OTLP/HTTP ``/v1/traces`` request body as spans: protobuf (``application/x-protobuf``) or JSON
(``application/json``), gzip-compressed or not.

Protobuf is decoded with the maintained ``opentelemetry-proto`` package (``pip install 'htc-calibration[otel]'``),
then turned into the OTLP JSON mapping (``google.protobuf.json_format``) that ``otel_spans`` reads, so both
encodings go through one span reader. A body that cannot be decoded at all raises :class:`PayloadError` with
the reason; spans that are unreadable inside a decoded body are returned as problems next to the good ones.
"""

from __future__ import annotations

import gzip
import zlib

from .jsonio import ParseError, loads
from .otel_spans import Span, SpanError, is_otlp, spans_of_otlp

__all__ = ["PayloadError", "decode_traces", "PROTOBUF", "JSON"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
PROTO_MISSING = ("protobuf OTLP needs the opentelemetry-proto package: pip install 'htc-calibration[otel]' "
                 "(or send OTLP JSON: OTEL_EXPORTER_OTLP_PROTOCOL=http/json)")


class PayloadError(ValueError):
    """A request body that holds no readable OTLP traces request (the message says why).

    Examples
    --------
    >>> from htc_core.formats.otlp_wire import PayloadError, decode_traces
    >>> try:
    ...     decode_traces(b"{}", "application/json")
    ... except PayloadError as e:
    ...     print(e)
    the JSON body has no resourceSpans list (not an OTLP traces request)
    """


def _inflate(body: bytes, encoding: str | None) -> bytes:
    """The body decompressed as its ``Content-Encoding`` says (gzip, deflate or none)."""
    enc = (encoding or "").strip().lower()
    if enc in ("", "identity"):
        return body
    try:
        if enc == "gzip":
            return gzip.decompress(body)
        if enc == "deflate":
            return zlib.decompress(body)
    except (OSError, EOFError, zlib.error) as e:
        raise PayloadError(f"Content-Encoding {enc} but the body cannot be decompressed ({e})") from None
    raise PayloadError(f"unsupported Content-Encoding {enc!r} (use gzip or none)")


def _from_protobuf(body: bytes) -> dict:
    """A protobuf ``ExportTraceServiceRequest`` as its OTLP JSON mapping."""
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise PayloadError(PROTO_MISSING) from None
    req = ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except DecodeError as e:
        raise PayloadError(f"the body is not an OTLP ExportTraceServiceRequest in protobuf ({e})") from None
    return MessageToDict(req)


def decode_traces(body: bytes, content_type: str | None, content_encoding: str | None = None
                  ) -> tuple[list[Span], list[tuple[str, SpanError]]]:
    """(spans, [(where, problem)]) of one request body; :class:`PayloadError` when none can be read.

    Parameters
    ----------
    body : bytes
        The HTTP request body of an OTLP/HTTP ``/v1/traces`` export.
    content_type : str or None
        Its ``Content-Type``: :data:`PROTOBUF` (needs ``opentelemetry-proto``) or :data:`JSON` (also assumed
        when missing); parameters such as ``; charset=utf-8`` are ignored.
    content_encoding : str, optional
        Its ``Content-Encoding``: ``gzip``, ``deflate`` or none.

    Returns
    -------
    spans : list of Span
        The readable spans.
    problems : list of (str, SpanError)
        Where each unreadable span was in the request, and why.

    Raises
    ------
    PayloadError
        A body that cannot be decompressed or decoded, an unsupported content type, or JSON that is not an OTLP
        traces request.

    Examples
    --------
    >>> import gzip, json
    >>> from htc_core.formats.otlp_wire import decode_traces
    >>> body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
    ...     {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "chat"},
    ...     {"name": "broken"}]}]}]}).encode()
    >>> spans, problems = decode_traces(gzip.compress(body), "application/json", "gzip")
    >>> [sp.name for sp in spans], [(where, e.reason) for where, e in problems]
    (['chat'], [('resourceSpans[0].scopeSpans[0].spans[1]', 'the span has no traceId')])
    """
    body = _inflate(body, content_encoding)
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype in (PROTOBUF, "application/protobuf"):
        doc = _from_protobuf(body)
    elif ctype == JSON or not ctype:
        try:
            doc = loads(body)
        except ParseError as e:
            raise PayloadError(f"the body is not valid JSON ({e.reason})") from None
        if not is_otlp(doc):
            raise PayloadError("the JSON body has no resourceSpans list (not an OTLP traces request)")
    else:
        raise PayloadError(f"unsupported Content-Type {content_type!r}: use {PROTOBUF} or {JSON}")
    problems: list[tuple[str, SpanError]] = []
    spans = spans_of_otlp(doc, lambda e, where: problems.append((where, e)))
    return spans, problems
