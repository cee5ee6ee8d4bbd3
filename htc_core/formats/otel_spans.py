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

__all__ = ["Span", "SpanError", "hex_id", "spans_of_otlp", "span_of_row", "is_otlp", "is_span_row",
           "input_messages", "STATUS_ERROR"]

STATUS_ERROR = "ERROR"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET", "STATUS_CODE_OK": "OK",
           "STATUS_CODE_ERROR": "ERROR"}


class SpanError(ValueError):
    def __init__(self, field: str, value: Any, reason: str):
        super().__init__(reason)
        self.field, self.value, self.reason = field, value, reason


@dataclass
class Span:
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
        if self.start_ns is None or self.end_ns is None or self.end_ns < self.start_ns:
            return None
        return (self.end_ns - self.start_ns) / 1e9

    def attr(self, key: str) -> Any:
        return self.attributes.get(key)


# ------------------------------------------------------------------------------------------- OTLP JSON
def is_otlp(obj: Any) -> bool:
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
    if isinstance(code, str) and code.upper() in ("OK", "ERROR", "UNSET"):
        return code.upper()
    return _STATUS.get(code, "UNSET")


def _otlp_span(sp: Any, resource: dict) -> Span:
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
    """Every readable span of an OTLP JSON document; ``on_error(SpanError, where)`` for each one that is not."""
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
    """A Phoenix/OpenInference span row: flat ``context.trace_id`` or a nested ``context`` with ``trace_id``."""
    if not isinstance(obj, dict):
        return False
    ctx = obj.get("context")
    return "context.trace_id" in obj or (isinstance(ctx, dict) and "trace_id" in ctx)


def _flatten(prefix: str, value: Any, out: dict) -> None:
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
    """One Phoenix span row (a JSONL object or a Parquet row as a dict) as a :class:`Span`."""
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
    """The chat messages of an LLM span (``llm.input_messages.<i>.message.role/content``, content parts
    ``message.contents.<j>.message_content.text``) as OpenAI-style ``{"role", "content"}`` dicts, in order."""
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
