"""OpenTelemetry spans in one plain form, whatever file or request they came from.

Two sources, one :class:`Span`:

- **OTLP JSON** (the OpenTelemetry Collector's file exporter, an OTLP/HTTP JSON body, or a protobuf request
  turned into JSON): ``{"resourceSpans": [{"resource": {"attributes": [...]}, "scopeSpans": [{"spans": [...]}]}]}``
  with typed attribute values (``{"key": "llm.model_name", "value": {"stringValue": "..."}}``; ``intValue`` as a
  string, ``arrayValue``, ``kvlistValue``), ids as hex (or base64, as protobuf's JSON mapping writes them),
  times as ``startTimeUnixNano`` strings and ``status.code`` as 0/1/2 or ``STATUS_CODE_*``.
- **Phoenix / OpenInference span exports** (``px.Client().get_spans_dataframe()`` saved as Parquet or JSONL):
  one span per row with ``context.trace_id``, ``context.span_id``, ``parent_id``, ``name``, ``span_kind``,
  ``start_time``, ``end_time``, ``status_code``, ``status_message`` and ``attributes.*`` columns (flat, or one
  nested ``attributes`` object; message lists as ``[{"message.role": ..., "message.content": ...}]``).

Attributes end up flat under their dotted OpenInference names (``llm.input_messages.0.message.role``); a span's
kind is ``openinference.span.kind`` (``LLM``, ``TOOL``, ``CHAIN``, ``AGENT``, ...). A span that cannot be read
raises :class:`SpanError` with the field and the reason; the caller reports it and keeps the other spans.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["Span", "SpanError", "spans_of_otlp", "span_of_row", "STATUS_ERROR"]

STATUS_ERROR = "ERROR"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET", "STATUS_CODE_OK": "OK",
           "STATUS_CODE_ERROR": "ERROR"}


class SpanError(ValueError):
    """A span that cannot be read: the field, its value and the reason (the caller reports it).

    Parameters
    ----------
    field : str
        The field at fault (``traceId``, ``context.trace_id``, ``start_time``, ...).
    value : object
        Its value (None when missing).
    reason : str
        Why the span cannot be read.

    Examples
    --------
    >>> from htc_core.formats.otel_spans import SpanError, span_of_row
    >>> try:
    ...     span_of_row({"context.span_id": "eee19b7ec3c1b174"})
    ... except SpanError as e:
    ...     print(e.field, "|", e.reason)
    context.trace_id | the span has no context.trace_id
    """

    def __init__(self, field: str, value: Any, reason: str):
        """Keep the field, the value and the reason (the reason is the message)."""
        super().__init__(reason)
        self.field, self.value, self.reason = field, value, reason


@dataclass
class Span:
    """One OpenTelemetry span in plain form (ids as lower-case hex, times in ns, attributes flat).

    Parameters
    ----------
    trace_id : str
        The trace's id (hex).
    span_id : str
        The span's id (hex).
    parent_id : str or None
        The parent span's id; None for a root span.
    name : str
        The span's name.
    kind : str
        The OpenInference span kind, upper case (``LLM``, ``TOOL``, ``CHAIN``, ``AGENT``, ...; ``""`` when none).
    start_ns, end_ns : int or None
        Start and end times, nanoseconds since the epoch.
    status : str
        ``"OK"``, ``"ERROR"`` or ``"UNSET"``.
    status_message : str or None
        The status message (an error's text).
    attributes : dict
        The attributes under their dotted names (``llm.model_name``, ``output.value``, ...).
    resource : dict
        The resource attributes (``service.name``, ...).

    See Also
    --------
    spans_of_otlp, span_of_row : make them.

    Examples
    --------
    >>> from htc_core.formats.otel_spans import Span
    >>> sp = Span("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", None, "chat", "LLM",
    ...           start_ns=1_700_000_000_000_000_000, end_ns=1_700_000_000_250_000_000, status="OK",
    ...           status_message=None, attributes={"llm.model_name": "gpt-4o-mini"})
    >>> sp.latency_s, sp.attr("llm.model_name")
    (0.25, 'gpt-4o-mini')
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str                       # OpenInference span kind, upper case ('' when the span names none)
    start_ns: int | None
    end_ns: int | None
    status: str                     # 'OK', 'ERROR' or 'UNSET'
    status_message: str | None
    attributes: dict = field(default_factory=dict)
    resource: dict = field(default_factory=dict)

    @property
    def latency_s(self) -> float | None:
        """The span's duration in seconds (None when a time is missing or the end precedes the start).

        Returns
        -------
        float or None
            ``(end_ns - start_ns) / 1e9``.

        Examples
        --------
        >>> from htc_core.formats.otel_spans import Span
        >>> Span("t", "s", None, "tool", "TOOL", 0, 1_500_000_000, "OK", None).latency_s
        1.5
        """
        if self.start_ns is None or self.end_ns is None or self.end_ns < self.start_ns:
            return None
        return (self.end_ns - self.start_ns) / 1e9

    def attr(self, key: str) -> Any:
        """One attribute's value, or None.

        Parameters
        ----------
        key : str
            The attribute's dotted name.

        Returns
        -------
        object
            Its value (None when the span has no such attribute).

        Examples
        --------
        >>> from htc_core.formats.otel_spans import Span
        >>> sp = Span("t", "s", None, "chat", "LLM", None, None, "UNSET", None, {"llm.model_name": "m"})
        >>> sp.attr("llm.model_name"), sp.attr("output.value")
        ('m', None)
        """
        return self.attributes.get(key)


# ------------------------------------------------------------------------------------------- OTLP JSON
def is_otlp(obj: Any) -> bool:
    """Whether a value is an OTLP JSON request (a ``resourceSpans`` list)."""
    return isinstance(obj, dict) and isinstance(obj.get("resourceSpans", obj.get("resource_spans")), list)


def _any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "string_value"):
        if key in v:
            return v[key]
    for key in ("intValue", "int_value"):
        if key in v:
            return int(v[key])
    for key in ("doubleValue", "double_value"):
        if key in v:
            return float(v[key])
    for key in ("boolValue", "bool_value"):
        if key in v:
            return bool(v[key])
    arr = v.get("arrayValue", v.get("array_value"))
    if isinstance(arr, dict):
        return [_any_value(x) for x in arr.get("values") or []]
    kv = v.get("kvlistValue", v.get("kvlist_value"))
    if isinstance(kv, dict):
        return _attributes(kv.get("values") or [])
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _attributes(items: Any) -> dict:
    """OTLP ``[{key, value}]`` attributes as a dict of Python values."""
    if isinstance(items, dict):            # already a mapping (some exporters)
        return dict(items)
    if not isinstance(items, list):
        raise SpanError("attributes", items, "attributes must be a list of {key, value} objects")
    out = {}
    for a in items:
        if isinstance(a, dict) and isinstance(a.get("key"), str):
            out[a["key"]] = _any_value(a.get("value"))
    return out


def hex_id(v: Any, fld: str, *, required: bool) -> str | None:
    """A trace/span id as lower-case hex: OTLP JSON writes hex, protobuf's JSON mapping base64."""
    if v is None or v == "":
        if required:
            raise SpanError(fld, v, f"the span has no {fld}")
        return None
    if isinstance(v, bytes):
        return v.hex()
    if not isinstance(v, str):
        raise SpanError(fld, v, f"{fld} must be a string, got {type(v).__name__}")
    s = v.strip().lower()
    if s.startswith("0x"):
        s = s[2:]
    if len(s) in (16, 32) and all(c in "0123456789abcdef" for c in s):
        return s
    try:
        raw = base64.b64decode(v, validate=True)
        if len(raw) in (8, 16):
            return raw.hex()
    except (binascii.Error, ValueError):
        pass
    return s or None


def _nanos(v: Any, fld: str, *, ns: bool = False) -> int | None:
    """Nanoseconds since the epoch from an OTLP number/string (``ns``: always nanoseconds), an ISO time, a pandas
    Timestamp or a number in s / ms / us / ns (told apart by size)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if hasattr(v, "value") and hasattr(v, "tz_localize"):            # pandas Timestamp
        return int(v.value)
    if isinstance(v, datetime):                                      # exact to the microsecond (no float)
        dt = v if v.tzinfo else v.replace(tzinfo=timezone.utc)
        return (dt - _EPOCH) // timedelta(microseconds=1) * 1000
    if isinstance(v, str):
        s = v.strip()
        if s.lstrip("-").isdigit():
            v = int(s)
        else:
            try:
                dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
            except ValueError:
                raise SpanError(fld, v, f"{fld} is not a time (ISO 8601 or a number)") from None
            return _nanos(dt, fld)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SpanError(fld, v, f"{fld} must be a time, got {type(v).__name__}")
    if ns:
        return int(v)
    x = float(v)
    scale = 1 if x > 1e17 else 1e3 if x > 1e14 else 1e6 if x > 1e11 else 1e9
    return int(v * scale) if scale != 1 else int(v)


def _status(code: Any) -> str:
    """A status code (0/1/2, ``STATUS_CODE_*`` or a name) as ``OK``, ``ERROR`` or ``UNSET``."""
    if isinstance(code, str) and code.upper() in ("OK", "ERROR", "UNSET"):
        return code.upper()
    return _STATUS.get(code, "UNSET")


def _otlp_span(sp: Any, resource: dict) -> Span:
    """One OTLP JSON span object as a :class:`Span` (:class:`SpanError` when it cannot be read)."""
    if not isinstance(sp, dict):
        raise SpanError("span", sp, f"a span must be an object, got {type(sp).__name__}")
    attrs = _attributes(sp.get("attributes") or [])
    st = sp.get("status") or {}
    kind = attrs.get("openinference.span.kind")
    return Span(trace_id=hex_id(sp.get("traceId", sp.get("trace_id")), "traceId", required=True),
                span_id=hex_id(sp.get("spanId", sp.get("span_id")), "spanId", required=True),
                parent_id=hex_id(sp.get("parentSpanId", sp.get("parent_span_id")), "parentSpanId", required=False),
                name=str(sp.get("name") or ""), kind=str(kind).upper() if kind else "",
                start_ns=_nanos(sp.get("startTimeUnixNano", sp.get("start_time_unix_nano")), "startTimeUnixNano",
                                ns=True),
                end_ns=_nanos(sp.get("endTimeUnixNano", sp.get("end_time_unix_nano")), "endTimeUnixNano", ns=True),
                status=_status(st.get("code") if isinstance(st, dict) else None),
                status_message=(st.get("message") or None) if isinstance(st, dict) else None,
                attributes=attrs, resource=resource)


def spans_of_otlp(doc: dict, on_error) -> list[Span]:
    """Every readable span of an OTLP JSON document; ``on_error(SpanError, where)`` for each one that is not.

    Parameters
    ----------
    doc : dict
        An OTLP JSON request: ``{"resourceSpans": [{"resource": ..., "scopeSpans": [{"spans": [...]}]}]}``
        (camelCase or snake_case keys).
    on_error : callable
        Called as ``on_error(error, where)`` for each span that cannot be read, ``where`` its path in ``doc``
        (``resourceSpans[0].scopeSpans[0].spans[1]``); the other spans are still read.

    Returns
    -------
    list of Span
        The readable spans, in document order.

    Examples
    --------
    >>> from htc_core.formats.otel_spans import spans_of_otlp
    >>> doc = {"resourceSpans": [{"resource": {"attributes": [
    ...     {"key": "service.name", "value": {"stringValue": "agent"}}]}, "scopeSpans": [{"spans": [
    ...     {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "chat",
    ...      "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000250000000",
    ...      "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}}]},
    ...     {"spanId": "eee19b7ec3c1b175", "name": "no trace id"}]}]}]}
    >>> spans = spans_of_otlp(doc, lambda e, where: print(where, "->", e.reason))
    resourceSpans[0].scopeSpans[0].spans[1] -> the span has no traceId
    >>> sp = spans[0]
    >>> sp.kind, sp.latency_s, sp.resource
    ('LLM', 0.25, {'service.name': 'agent'})
    """
    out = []
    for i, rs in enumerate(doc.get("resourceSpans", doc.get("resource_spans")) or []):
        if not isinstance(rs, dict):
            on_error(SpanError("resourceSpans", rs, "a resourceSpans entry must be an object"), f"resourceSpans[{i}]")
            continue
        try:
            resource = _attributes((rs.get("resource") or {}).get("attributes") or [])
        except SpanError as e:
            on_error(e, f"resourceSpans[{i}].resource")
            resource = {}
        for j, ss in enumerate(rs.get("scopeSpans", rs.get("scope_spans")) or []):
            spans = ss.get("spans") if isinstance(ss, dict) else None
            for k, sp in enumerate(spans or []):
                try:
                    out.append(_otlp_span(sp, resource))
                except SpanError as e:
                    on_error(e, f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]")
    return out


# ---------------------------------------------------------------------------------- Phoenix span rows
def is_span_row(obj: Any) -> bool:
    """Whether a value is a Phoenix span row: flat ``context.trace_id`` or a nested ``context`` with ``trace_id``."""
    if not isinstance(obj, dict):
        return False
    ctx = obj.get("context")
    return "context.trace_id" in obj or (isinstance(ctx, dict) and "trace_id" in ctx)


def _flatten(prefix: str, value: Any, out: dict) -> None:
    """Nested objects (and lists of objects) into ``out`` under dotted keys."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        for i, x in enumerate(value):
            _flatten(f"{prefix}.{i}", x, out)
    else:
        out[prefix] = value


def _plain(v: Any) -> Any:
    """numpy/pyarrow values of a Parquet row as plain Python (arrays to lists, NaN to None)."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        v = v.tolist()
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def span_of_row(row: dict) -> Span:
    """One Phoenix span row (a JSONL object or a Parquet row as a dict) as a :class:`Span`.

    Parameters
    ----------
    row : dict
        The row of ``px.Client().get_spans_dataframe()``: ``context.trace_id``, ``context.span_id``,
        ``parent_id``, ``name``, ``span_kind``, ``start_time``, ``end_time``, ``status_code``, ``status_message``
        and ``attributes.*`` (flat, or one nested ``attributes`` object).

    Returns
    -------
    Span
        The span.

    Raises
    ------
    SpanError
        A missing id or a value that is not a time.

    Examples
    --------
    >>> from htc_core.formats.otel_spans import span_of_row
    >>> sp = span_of_row({"context.trace_id": "5b8efff798038103d269b633813fc60c",
    ...                   "context.span_id": "eee19b7ec3c1b174", "parent_id": None, "name": "ChatCompletion",
    ...                   "span_kind": "LLM", "start_time": "2024-05-01T12:00:00+00:00",
    ...                   "end_time": "2024-05-01T12:00:01.500000+00:00", "status_code": "OK",
    ...                   "attributes.llm.model_name": "gpt-4o-mini"})
    >>> sp.kind, sp.latency_s, sp.attributes
    ('LLM', 1.5, {'llm.model_name': 'gpt-4o-mini'})
    """
    row = {k: _plain(v) for k, v in row.items()}
    ctx = row.get("context") if isinstance(row.get("context"), dict) else {}
    attrs: dict = {}
    nested = row.get("attributes")
    if isinstance(nested, dict):
        _flatten("", nested, attrs)
    for k, v in row.items():
        if k.startswith("attributes.") and v is not None:
            _flatten(k[len("attributes."):], v, attrs)
    kind = row.get("span_kind") or attrs.get("openinference.span.kind")
    return Span(trace_id=hex_id(row.get("context.trace_id", ctx.get("trace_id")), "context.trace_id", required=True),
                span_id=hex_id(row.get("context.span_id", ctx.get("span_id")), "context.span_id", required=True),
                parent_id=hex_id(row.get("parent_id"), "parent_id", required=False),
                name=str(row.get("name") or ""), kind=str(kind).upper() if kind else "",
                start_ns=_nanos(row.get("start_time"), "start_time"), end_ns=_nanos(row.get("end_time"), "end_time"),
                status=_status(row.get("status_code")), status_message=row.get("status_message") or None,
                attributes=attrs)


# --------------------------------------------------------------------------------- message attributes
def input_messages(attrs: dict, prefix: str = "llm.input_messages") -> list[dict]:
    """The chat messages of an LLM span as OpenAI-style ``{"role", "content"}`` dicts, in order.

    From ``llm.input_messages.<i>.message.role/content`` (content parts:
    ``message.contents.<j>.message_content.text``).
    """
    rows: dict[int, dict] = {}
    head = prefix + "."
    for key, v in attrs.items():
        if not key.startswith(head):
            continue
        idx, _, rest = key[len(head):].partition(".")
        if not idx.isdigit():
            continue
        m = rows.setdefault(int(idx), {})
        if rest == "message.role":
            m["role"] = v
        elif rest == "message.content":
            m["content"] = v
        elif rest.startswith("message.contents.") and rest.endswith("message_content.text"):
            m.setdefault("parts", []).append(v)
        elif rest.startswith("message.tool_calls."):
            m["tool_call"] = True
    out = []
    for i in sorted(rows):
        m = rows[i]
        content = m.get("content")
        if content is None and m.get("parts"):
            content = "".join(str(p) for p in m["parts"] if p is not None)
        out.append({"role": m.get("role") or "?", "content": content})
    return out
