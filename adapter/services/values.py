"""Which Prometheus sample values the metrics APIs can serve, and why the others are left out.

A value is served as a Kubernetes quantity that the HPA reads with `MilliValue()`, an int64 of
milli-units. NaN (0/0 in a ratio), ±Inf (x/0) and values whose milli-units leave int64 cannot be
served: the item is dropped with a reason (`nan`, `inf`, `out_of_range`) that is counted, as
metrics-server leaves out the pods it cannot measure; a request for that one object gets an error
saying why. One bad sample never fails a whole list.

Pure: no I/O. Non-goals: the counting itself (the caller's `DropSink`, wired to /metrics).
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["DropSink", "MILLI_LIMIT", "describe", "ignore_drops", "unusable"]

#: (api, reason) for every sample left out; api is `custom`, `external` or `resource`
DropSink = Callable[[str, str], None]
#: |value| below this has milli-units inside int64 (what `MilliValue()` can return)
MILLI_LIMIT = float(2**63) / 1000.0

_DESCRIPTIONS = {"nan": "NaN", "inf": "infinite", "out_of_range": "outside what a quantity can hold"}


def unusable(value: float) -> str | None:
    """Why `value` cannot be served, or None when it can."""
    if -MILLI_LIMIT < value < MILLI_LIMIT:  # False for NaN and ±Inf: the common case first
        return None
    if math.isnan(value):
        return "nan"
    return "inf" if math.isinf(value) else "out_of_range"


def describe(reason: str) -> str:
    """`its value is NaN` and the like, for an error message."""
    return f"its value in Prometheus is {_DESCRIPTIONS.get(reason, reason)}"


def ignore_drops(api: str, reason: str) -> None:
    """The default DropSink (tests, tools): nothing is counted."""
