"""Usage ratio arithmetic: the tolerance band and Go's integer semantics.

* `Tolerances.contains(r)` is upstream's `isWithin`: the inclusive band
  `[1 - scale_down, 1 + scale_up]` (per-direction since 1.33, KEP-4951).
* `div_trunc` is Go's int64 division (truncates toward zero, unlike Python's `//`), used for the
  utilization percent and the plain averages, which upstream truncates *before* the ratio.
* `ceil_int32` is `int32(math.Ceil(x))` with the MaxInt32 cap recent versions apply.

Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.algorithm.values import quick_init

MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1
DEFAULT_TOLERANCE = 0.1


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Tolerances:
    scale_down: float = DEFAULT_TOLERANCE
    scale_up: float = DEFAULT_TOLERANCE

    def contains(self, ratio: float) -> bool:
        """True when the ratio is inside the dead band, so no change is proposed."""
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)


def div_trunc(numerator: int, denominator: int) -> int:
    """Go integer division: truncation toward zero."""
    q = abs(numerator) // abs(denominator)
    return q if (numerator >= 0) == (denominator > 0) else -q


def ceil_int32(value: float) -> int:
    """`int32(math.Ceil(value))`, capped at MaxInt32; NaN yields 0 rather than garbage."""
    if math.isnan(value):
        return 0
    if value >= MAX_INT32:
        return MAX_INT32
    return math.ceil(value)


def trunc_int32(value: float) -> int:
    """`int32(value)` for a float: truncation toward zero."""
    if math.isnan(value):
        return 0
    return max(min(int(value), MAX_INT32), -MAX_INT32 - 1)


def saturating_sum(values: tuple[int, ...] | list[int]) -> int:
    """Sum of int64 values, saturated at MaxInt64 as recent upstream does for External metrics."""
    total = sum(values)
    return MAX_INT64 if total > MAX_INT64 else total
