"""Synthetic load series with the traits real ones have: a daily ramp, weekends, spikes, gaps."""

from __future__ import annotations

import numpy as np

from controller.forecast import History

DAY = 86_400
STEP = 60.0
RAMP_AT = 8 * 3600  # the daily ramp starts at 08:00


def daily(days: float, *, base: float = 100.0, peak: float = 400.0, weekend: float = 1.0, noise: float = 0.02,
          seed: int = 1, shift_at: float | None = None, shift: float = 1.0) -> History:
    """Per minute: `base` at night, a 5-minute ramp at 08:00 up to `peak` until 18:00; days 5 and 6
    of each week (Saturday, Sunday) scaled by `weekend`; multiplicative noise; from `shift_at` seconds
    on everything scaled by `shift` (a level shift)."""
    t = np.arange(0, days * DAY, STEP)
    tod = t % DAY
    ramp = np.clip((tod - RAMP_AT) / 300.0, 0.0, 1.0) * (tod < 18 * 3600)
    level = base + (peak - base) * ramp
    dow = (t // DAY) % 7
    level = np.where(dow >= 5, level * weekend, level)
    if shift_at is not None:
        level = np.where(t >= shift_at, level * shift, level)
    rng = np.random.default_rng(seed)
    return History(start=0.0, step=STEP, values=level * (1 + noise * rng.standard_normal(t.shape[0])))


def ramp_time(day: int) -> float:
    return day * DAY + RAMP_AT
