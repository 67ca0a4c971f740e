"""Kubernetes timestamps read from the controller's objects (float epoch seconds, UTC).

The reconcile loop feeds the algorithm wall-clock epoch seconds, so condition transition times,
`lastScaleTime` and the scale-history checkpoint can be written to status and read back after a
restart. The spelling rules (`metav1.Time`: RFC 3339 in UTC with whole seconds, Go's zero time
round-trips, what Go's parser accepts) live in `kubecommon.kubetime`; this module adds what a field
of the controller's objects means when it is absent (None) and names the value in its errors;
writing uses `kubecommon.kubetime.format_time` directly.

Non-goals: reading the clock (callers pass `now`), the RFC 3339 rules themselves. Pure.
"""

from __future__ import annotations

from kubecommon import kubetime

__all__ = ["parse_time"]


def parse_time(text: object) -> float | None:
    """RFC 3339 text -> epoch seconds; None for an absent value. Raises ValueError on bad text."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise ValueError(f"timestamp {text!r} is not a string")
    try:
        return kubetime.parse_time(text)
    except kubetime.TimeError as err:
        raise ValueError(f"timestamp {err}") from None
