"""Kubernetes timestamps <-> the controller's clock (float seconds since the Unix epoch, UTC).

The reconcile loop feeds the algorithm wall-clock epoch seconds, so condition transition times,
`lastScaleTime` and the scale-history checkpoint can be written to status and read back after a
restart. `metav1.Time` is RFC 3339 in UTC with whole seconds ("2026-01-02T03:04:05Z"); Go's zero
time ("0001-01-01T00:00:00Z") round-trips.

Non-goals: reading the clock (callers pass `now`), MicroTime beyond parsing. Pure.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

__all__ = ["format_time", "parse_time"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_time(text: object) -> float | None:
    """RFC 3339 text -> epoch seconds; None for an absent value. Raises ValueError on bad text."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise ValueError(f"timestamp {text!r} is not a string")
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"timestamp {text!r} is not RFC 3339") from None
    if when.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no time zone")
    return (when - _EPOCH).total_seconds()


def format_time(epoch_seconds: float) -> str:
    """Epoch seconds -> RFC 3339 UTC, whole seconds (truncated, as metav1.Time serializes)."""
    if not math.isfinite(epoch_seconds):
        raise ValueError(f"timestamp {epoch_seconds!r} is not finite")
    when = _EPOCH + timedelta(seconds=math.floor(epoch_seconds))
    return f"{when.year:04d}-{when.month:02d}-{when.day:02d}T{when.hour:02d}:{when.minute:02d}:{when.second:02d}Z"
