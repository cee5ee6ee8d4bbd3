"""Values every reader checks the same way: the error types, and trajectory-level fields (labels, verbalized
confidence, text). Logprob checks live in ``logprobs``, file and JSON reading in ``jsonio``.

The lowest module of the package: it imports nothing from ``htc_core``.
"""

from __future__ import annotations

import math
from typing import Any

#: a positive logprob up to this size is a rounding error and is clipped to 0
POSITIVE_TOLERANCE = 1e-6
#: vLLM writes this for -inf
VLLM_NEG_INF = -9999.0


class FieldError(ValueError):
    """A value in an input that makes the trajectory unusable."""

    def __init__(self, field: str, value: Any, reason: str, *, has_value: bool = True):
        super().__init__(reason)
        self.field = field
        self.value = value
        self.reason = reason
        self.has_value = has_value


class MissingLogprobs(FieldError):
    """An LLM call recorded without logprobs: the step is dropped with a warning."""


def is_number(x: Any) -> bool:
    """An int or float (bool is not a number)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def type_name(v: Any) -> str:
    """The JSON-ish type name of a decoded value, for messages ('null' for None)."""
    return "null" if v is None else type(v).__name__


def token_strings(values: Any, n: int, field: str) -> list[str] | None:
    """A step's token strings (one per logprob; None stays None), or :class:`FieldError`."""
    if values is None:
        return None
    if not isinstance(values, list):
        raise FieldError(field, values, f"must be a list of strings, got {type(values).__name__}")
    if len(values) != n:
        raise FieldError(field, f"{len(values)} entries", f"has {len(values)} entries but logprobs has {n}")
    return ["" if t is None else str(t) for t in values]


def success_label(value: Any, field: str = "success") -> bool | None:
    """A trace file's success label: true, false or null (anything else is a :class:`FieldError`)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    raise FieldError(field, value, f"must be true, false or null, got {type(value).__name__}")


def verbalized(value: Any, field: str = "verbalized_confidence") -> tuple[float | None, str | None]:
    """Parse a verbalized confidence; returns (value in [0, 1] or None, warning or None)."""
    if value is None:
        return None, None
    if isinstance(value, str):
        s = value.strip().rstrip("%").strip()
        try:
            v = float(s)
        except ValueError:
            return None, f"not a number ({value!r}); ignored"
        if value.strip().endswith("%"):
            v /= 100.0
    elif is_number(value):
        v = float(value)
    else:
        return None, f"must be a number, got {type(value).__name__}; ignored"
    if not math.isfinite(v):
        return None, "not finite; ignored"
    if 1.0 < v <= 100.0:
        return v / 100.0, "read as a percentage"
    if not 0.0 <= v <= 1.0:
        return None, "outside [0, 1] (or 0-100 %); ignored"
    return v, None


def optional_text(value: Any) -> str | None:
    """A text field: None stays None, any other value becomes its ``str``."""
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def text_of(value: Any) -> str | None:
    """Message content that may be a string or a list of content parts."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for p in value:
            if isinstance(p, dict):
                t = p.get("text")
                if isinstance(t, str):
                    out.append(t)
            elif isinstance(p, str):
                out.append(p)
        return "".join(out) if out else None
    return str(value)


# internal: the readers' shared checks (the readers' read functions are the public surface)
__all__: list[str] = []
