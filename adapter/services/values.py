"""Which Prometheus sample values the metrics APIs can serve, and why the others are left out.

A value is served as a Kubernetes quantity. NaN (0/0 in a ratio) and ±Inf (x/0) cannot be
served: the item is dropped with a reason (`nan`, `inf`) that is counted, as metrics-server leaves
out the pods it cannot measure; a request for that one object gets an error saying why. One bad
sample never fails a whole list. A finite value whose milli-units leave int64 (|v| >= 2^63/1000)
is served exactly, in exponent form (`kubecommon.quantity.milli_of_finite`), never clamped.

Pure: no I/O. Non-goals: the counting itself (the caller's `DropSink`, wired to /metrics).
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["DropSink", "MILLI_LIMIT", "describe", "ignore_drops", "unusable"]

#: (api, reason) for every sample left out; api is `custom`, `external` or `resource`
DropSink = Callable[[str, str], None]
#: |value| below this has milli-units inside int64 (the fast path: `int(value * 1000.0)`)
MILLI_LIMIT = float(2**63) / 1000.0

_DESCRIPTIONS = {"nan": "NaN", "inf": "infinite"}


def unusable(value: float) -> str | None:
    """Why `value` cannot be served, or None when it can."""
    if -MILLI_LIMIT < value < MILLI_LIMIT:  # False for NaN and ±Inf: the common case first
        return None
    if math.isnan(value):
        return "nan"
    return "inf" if math.isinf(value) else None


def describe(reason: str) -> str:
    """`its value is NaN` and the like, for an error message."""
    return f"its value in Prometheus is {_DESCRIPTIONS.get(reason, reason)}"


def ignore_drops(api: str, reason: str) -> None:
    """The default DropSink (tests, tools): nothing is counted."""
