"""One metric's live history as a compact array: a fold's answer in, appended, trimmed to the lookback.

The live controller keeps, per predictive object and metric, a `controller.forecast.History`:
float32 milli-units on a regular grid, NaN for a tick without a sample (4 bytes a tick: 14 days at
60 s is 80 KiB). A read's folded answer (`fold.MetricHistory`) becomes such an array
(`from_fold`); `merge` puts a newer read after the kept samples (the newer read wins where both
have a value, a tick it has no value for keeps the older one: Prometheus may not have the newest
scrape yet), fills a tick neither covers with NaN and keeps only the last `keep` ticks. The arrays
are never written after they are built, so a `History` handed out stays valid while the store
moves on.

Non-goals: reading (`live`), forecasting (`controller.forecast`). Pure: no I/O, no clock.
"""

from __future__ import annotations

import numpy as np

from controller.forecast.history import History
from controller.history.fold import Grid, MetricHistory

__all__ = ["empty", "from_fold", "merge"]


def empty(step: float) -> History:
    return History(start=0.0, step=step, values=np.empty(0, dtype=np.float32))


def from_fold(folded: MetricHistory, grid: Grid) -> History:
    """The fold's per-tick totals as float32, NaN where no series answered."""
    values = np.frombuffer(folded.total, dtype=np.float64).astype(np.float32)
    values[np.frombuffer(folded.present, dtype=np.uint8) == 0] = np.nan
    return History(start=grid.start, step=grid.step, values=values)


def merge(old: History, new: History, *, keep: int) -> History:
    """`new` after `old` (same step, ticks on the same grid), at most the last `keep` ticks."""
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
    drop = max(0, values.shape[0] - keep)  # a view: the array was just built, its head goes with the next merge
    return History(start=start + drop * step, step=step, values=values[drop:])
