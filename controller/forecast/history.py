"""`History`: one metric's samples on a regular grid, as the forecaster reads them.

`values[i]` is the sample at `start + i * step` (milli-units, float); NaN marks a gap (no sample:
a scrape gap, a Prometheus outage, a value the adapter would not serve). The array is read-only
by convention; `window` and `upto` return views, never copies, so a forecast over 14 days of
history costs no allocation of that size.

Non-goals: reading it (`controller.history`), resampling. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["History"]

Array = npt.NDArray[np.floating]


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    start: float
    step: float
    values: Array

    @property
    def count(self) -> int:
        return int(self.values.shape[0])

    @property
    def end(self) -> float:
        """The time of the last sample (or `start - step` when empty)."""
        return self.start + (self.count - 1) * self.step

    def index_at(self, t: float) -> int:
        """The index of the last sample at or before `t` (may be < 0 or >= count)."""
        return math.floor((t - self.start) / self.step + 1e-9)

    def upto(self, t: float, *, seconds: float) -> History:
        """The samples in `(t - seconds, t]`: what a forecast made at `t` may read (no peeking)."""
        last = min(self.index_at(t), self.count - 1)
        first = max(0, last + 1 - max(1, int(seconds // self.step)))
        if last < first:
            return History(start=t, step=self.step, values=self.values[:0])
        return History(start=self.start + first * self.step, step=self.step, values=self.values[first:last + 1])
