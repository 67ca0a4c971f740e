"""One metric's live history as a compact array: a fold's answer in, appended, trimmed to the lookback.

The live controller keeps, per predictive object and metric, a `Packed` history: milli-units on a
regular grid as float16 over a power-of-two scale, NaN for a tick without a sample (2 bytes a tick:
14 days at 60 s is 40 KiB; float32 took 80 KiB, and 1,000 predictive objects then put the
controller above its 400 MiB budget at 10,000 objects). float16 keeps 11 significant bits (a
relative error under 0.05%, far below any load's noise); the power-of-two scale makes re-scaling
exact, so samples do not drift as the window moves. `unpack` gives the forecaster its float32
`History`. A read's folded answer (`fold.MetricHistory`) becomes such an array
(`from_fold`); `merge` puts a newer read after the kept samples (the newer read wins where both
have a value, a tick it has no value for keeps the older one: Prometheus may not have the newest
scrape yet), fills a tick neither covers with NaN and keeps only the last `keep` ticks. The arrays
are never written after they are built, so a `History` handed out stays valid while the store
moves on.

Non-goals: reading (`live`), forecasting (`controller.forecast`). Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from controller.forecast.history import History
from controller.history.fold import Grid, MetricHistory

__all__ = ["Packed", "empty", "from_fold", "merge", "pack", "unpack"]

_HEADROOM = 2.0**14  # the largest |value| / scale: float16 reaches 65504, so a new peak up to 4x fits


@dataclass(frozen=True, slots=True, kw_only=True)
class Packed:
    start: float
    step: float
    values: npt.NDArray[np.float16]  # value / scale
    scale: float  # a power of two

    @property
    def count(self) -> int:
        return int(self.values.shape[0])

    @property
    def end(self) -> float:
        return self.start + (self.count - 1) * self.step


def pack(h: History) -> Packed:
    """`h` as float16 over the power-of-two scale that puts its largest |value| at most at 2**14."""
    finite = h.values[np.isfinite(h.values)]
    peak = float(np.max(np.abs(finite))) if finite.shape[0] else 0.0
    scale = 2.0 ** math.ceil(math.log2(peak / _HEADROOM)) if peak > 0 else 1.0
    with np.errstate(over="ignore"):
        values = (h.values / scale).astype(np.float16)
    return Packed(start=h.start, step=h.step, values=values, scale=scale)


def unpack(p: Packed) -> History:
    """The forecaster's float32 `History` (a new array: the packed one stays as it is)."""
    return History(start=p.start, step=p.step, values=p.values.astype(np.float32) * np.float32(p.scale))


def empty(step: float) -> Packed:
    return Packed(start=0.0, step=step, values=np.empty(0, dtype=np.float16), scale=1.0)


def from_fold(folded: MetricHistory, grid: Grid) -> History:
    """The fold's per-tick totals as float32, NaN where no series answered."""
    values = np.frombuffer(folded.total, dtype=np.float64).astype(np.float32)
    values[np.frombuffer(folded.present, dtype=np.uint8) == 0] = np.nan
    return History(start=grid.start, step=grid.step, values=values)


def merge(packed: Packed, new: History, *, keep: int) -> Packed:
    """`new` after `packed` (same step, ticks on the same grid), at most the last `keep` ticks."""
    old = unpack(packed)
    step = new.step
    if old.count == 0 or new.start <= old.start:
        start, values = new.start, new.values
    else:
        offset = round((new.start - old.start) / step)  # new's first tick in old's ticks
        overlap = old.values[offset:offset + new.count]
        head = new.values[:overlap.shape[0]]
        kept = np.where(np.isnan(head), overlap, head) if overlap.shape[0] else head
        gap = np.full(max(0, offset - old.count), np.nan, dtype=np.float32)
        start = old.start
        values = np.concatenate((old.values[:offset], gap, kept, new.values[overlap.shape[0]:]))
    values = values.astype(np.float32, copy=False)
    drop = max(0, values.shape[0] - keep)
    return pack(History(start=start + drop * step, step=step, values=values[drop:]))
