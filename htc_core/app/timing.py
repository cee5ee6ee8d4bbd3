"""Time estimates for the indicators of the dashboard's long computations ("about 40 s"), from what was measured
on this machine, never made up: each kind of computation (an evaluation, a UMAP projection, a fit, an upload)
records its seconds per unit (per run, per MB) when it ends, in ``timings.json`` in the data folder, and the next
one of its kind multiplies that rate by its own size. Once a computation reports progress, the time left is its
own elapsed time scaled by the fraction still to do. Without either, no number is shown (a calibrated constant
can be passed instead, e.g. the evaluation's runs per second measured on the reference machine)."""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from pathlib import Path

__all__ = ["FILE", "record", "rate", "estimate", "about", "left", "label_with_estimate"]

log = logging.getLogger("htc.dashboard")

#: the measured rates, in the data folder: {kind: seconds per unit}
FILE = "timings.json"
_LOCK = threading.Lock()
_RATES: dict[str, dict[str, float]] = {}       # data folder -> {kind: seconds per unit}


def _rates(folder) -> dict[str, float]:
    key = str(folder)
    if key not in _RATES:
        try:
            raw = json.loads((Path(folder) / FILE).read_text(encoding="utf-8"))
            _RATES[key] = {str(k): float(v) for k, v in raw.items()
                           if isinstance(v, (int, float)) and math.isfinite(v) and v > 0}
        except (OSError, ValueError, AttributeError):    # none yet, or damaged: measured again
            _RATES[key] = {}
    return _RATES[key]


def record(folder, kind: str, units: float, seconds: float) -> None:
    """Keep ``seconds / units`` as the rate of ``kind`` (the last measurement wins: the machine's load changes)."""
    if not units or units <= 0 or not math.isfinite(seconds) or seconds <= 0:
        return
    with _LOCK:
        rates = _rates(folder)
        rates[kind] = seconds / units
        try:
            path = Path(folder) / FILE
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(rates, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as e:     # a read-only data folder: the rate stays in memory
            log.warning("could not keep the measured rate of %s: %s", kind, e)


def rate(folder, kind: str) -> float | None:
    """Seconds per unit measured last for ``kind`` on this machine, or None."""
    with _LOCK:
        return _rates(folder).get(kind)


def estimate(folder, kind: str, units: float, fallback_rate: float | None = None) -> float | None:
    """Seconds that ``units`` of ``kind`` should take: the measured rate (else ``fallback_rate``) times ``units``."""
    r = rate(folder, kind) or fallback_rate
    return None if r is None or not units else r * units


def about(seconds: float | None) -> str:
    """'about 40 s', 'about 3 min' ('' when unknown)."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    if seconds < 90:
        return f"about {max(1, round(seconds / 5) * 5 if seconds >= 20 else round(seconds))} s"
    return f"about {round(seconds / 60)} min"


def left(elapsed: float, fraction: float) -> float | None:
    """Seconds still to go judged by the progress so far (None until there is enough of it to judge)."""
    if fraction < 0.05 or fraction >= 1 or elapsed < 1.0:
        return None
    return elapsed * (1.0 - fraction) / fraction


def label_with_estimate(label: str, expected: float | None, elapsed: float = 0.0, fraction: float = 0.0) -> str:
    """``label`` with the time left: from the progress once there is some, else the expected duration."""
    rest = left(elapsed, fraction)
    if rest is not None:
        return f"{label} ({about(rest)} left)"
    if expected is not None:
        remaining = expected - elapsed
        return f"{label} ({about(expected)})" if remaining > 0 else f"{label} (taking longer than the {about(expected)} expected)"
    return label
