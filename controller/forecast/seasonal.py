"""One forecast: the highest value a metric is expected to reach in `[now, now + horizon]`.

Method (seasonal analogues). Real load repeats by the day and the week, but not exactly: a
weekend day is unlike a weekday, a level shifts, an outlier hits one day only. So:

1. Cycles: the daily and weekly cycles are looked for in the history (autocorrelation of hourly
   means at 24 h and 168 h, above the noise level of that many hours); `periods` given in the
   spec replace the search. No cycle, no forecast (reactive only, and `why` says so).
2. Analogues: each multiple of a cycle that the history covers is a candidate past moment
   ("the same time k days ago"). Each is scored by how much the hours before it look like the
   hours before now, in shape and in level, so a Saturday is compared with last Saturday rather
   than with Friday when the history shows they differ.
3. Rise: from the closest analogues, the rise the load made over the horizon after that moment,
   relative to its level then (highest sample in the next `horizon` over the mean of the last
   `horizon`). The median of their rises times the level now is the forecast. Relative rises
   carry over level shifts and growth; the median drops a one-off spike or gap on one day.

The constants below are round choices made from the method's logic (two cycles to find one, a
few hours to tell days apart, a median of three to drop an odd day, a rise from near zero is no
pattern) before any production trace was replayed, and none was fitted to one: on the four shared
traces the median deficit ratio moves by less than 0.06 for a context of 1-6 h and 1-5 analogues.

Gaps (NaN) are skipped; an analogue without samples is not a candidate. Too little history (less
than `MIN_HISTORY_SECONDS` of samples) gives no forecast and says how much there is.

Non-goals: scoring forecasts (`guard`), reading history. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from controller.forecast.history import Array, History

__all__ = ["DAY", "MIN_HISTORY_SECONDS", "WEEK", "Forecast", "detect_periods", "forecast", "level"]

DAY, WEEK = 86_400, 7 * 86_400
# Two daily cycles: one to find the cycle in, one to take an analogue from.
MIN_HISTORY_SECONDS = 2 * DAY
_CONTEXT_SECONDS = 3 * 3600  # the hours before a moment that say which day it resembles
_ANALOGUES = 3  # the closest past moments whose rises are combined (median)
_MAX_RISE = 10.0  # a rise beyond 10x its level is a start from near zero, not a pattern


@dataclass(frozen=True, slots=True, kw_only=True)
class Forecast:
    value: float | None  # the highest value expected over the horizon (None: no forecast)
    why: str  # what it was made from, or why there is none
    history_seconds: float  # seconds of samples it read
    periods: tuple[int, ...] = ()  # the cycles used (seconds)
    rise: float | None = None  # the analogues' rise over the horizon (value = level now x rise)


def level(history: History, *, now: float, horizon: float) -> float:
    """The mean of the samples in the last `horizon` before `now` (NaN: none): what a rise multiplies."""
    h = history.upto(now, seconds=max(horizon, history.step))
    return _mean(h.values)


def _hourly_means(h: History) -> Array:
    per_hour = max(1, round(3600 / h.step))
    n = h.count // per_hour * per_hour
    return _row_means(h.values[h.count - n:].reshape(-1, per_hour))


def _autocorrelation(x: Array, lag: int) -> float:
    """Pearson correlation of the series with itself `lag` steps later, over pairs both present."""
    if lag >= x.shape[0] - 2:
        return math.nan
    a, b = x[:-lag], x[lag:]
    ok = ~(np.isnan(a) | np.isnan(b))
    if int(ok.sum()) < 3:
        return math.nan
    a, b = a[ok], b[ok]
    sa, sb = float(a.std()), float(b.std())
    if sa == 0.0 or sb == 0.0:
        return math.nan
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def detect_periods(h: History) -> tuple[int, ...]:
    """The daily and weekly cycles the history shows (seconds), strongest first; () if none.

    A cycle counts when the autocorrelation of hourly means at its lag is above three standard
    errors of white noise over that many hours (Bartlett: one is 1/sqrt(n)), and at least 0.2 (a
    cycle explaining under 4% of the hourly variance, r**2, is no help to a forecast; the 3-sigma
    bound is the higher one below 225 hours). At least `MIN_HISTORY_SECONDS` of hourly means."""
    hourly = _hourly_means(h)
    n = int(np.sum(~np.isnan(hourly)))
    if n < MIN_HISTORY_SECONDS // 3600:
        return ()
    floor = max(0.2, 3.0 / math.sqrt(n))
    found = []
    for period in (DAY, WEEK):
        lag = period // 3600
        if n >= 2 * lag:
            r = _autocorrelation(hourly, lag)
            if not math.isnan(r) and r >= floor:
                found.append((r, period))
    return tuple(p for _r, p in sorted(found, reverse=True))


def _lags(periods: tuple[int, ...], span: float) -> list[int]:
    """Every multiple of every cycle that the history covers with room for its context (seconds)."""
    out: set[int] = set()
    for p in periods:
        k = 1
        while k * p + _CONTEXT_SECONDS <= span:
            out.add(k * p)
            k += 1
    return sorted(out)


def _mean(x: Array) -> float:
    if x.shape[0] == 0 or bool(np.all(np.isnan(x))):
        return math.nan
    return float(np.nanmean(x))


def _row_means(rows: Array) -> Array:
    """Per-row mean over present samples (NaN for a row with none), without nanmean's warnings."""
    ok = ~np.isnan(rows)
    counts = ok.sum(axis=1)
    sums = np.where(ok, rows, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)


def _distances(now_ctx: Array, then_ctx: Array) -> Array:
    """How unlike each past stretch of hours (rows of `then_ctx`) is to the hours before now: shape
    (each over its own mean) plus the log of their level ratio. Inf where either has no level."""
    a_mean = _mean(now_ctx)
    b_mean = _row_means(then_ctx)
    with np.errstate(invalid="ignore", divide="ignore"):
        shape = np.abs(now_ctx[None, :] / a_mean - then_ctx / b_mean[:, None])
        d = _row_means(shape) + np.abs(np.log(a_mean / b_mean))
    return np.where(np.isfinite(d) & (b_mean > 0) & (a_mean > 0), d, np.inf)


def forecast(history: History, *, now: float, horizon: float, lookback: float,
             periods: tuple[int, ...] = ()) -> Forecast:
    """The highest value expected in `[now, now + horizon]`, from the samples before `now`."""
    h = history.upto(now, seconds=lookback)
    step = h.step
    present = int(np.sum(~np.isnan(h.values))) if h.count else 0
    seconds = present * step
    if seconds < MIN_HISTORY_SECONDS:
        return Forecast(value=None, history_seconds=seconds,
                        why=f"too little history: {seconds / 3600:.1f} h of samples, a forecast needs "
                            f"{MIN_HISTORY_SECONDS / 3600:.0f} h (two daily cycles)")  # fmt: skip
    used = periods or detect_periods(h)
    if not used:
        return Forecast(value=None, history_seconds=seconds,
                        why="no daily or weekly cycle in the history: reacting is as good as it gets")
    n_h = max(1, math.ceil(horizon / step))  # samples in the horizon
    n_c = max(n_h, round(_CONTEXT_SECONDS / step))
    x = h.values
    last = h.count - 1
    level_now = _mean(x[max(0, last - n_h + 1):])
    if math.isnan(level_now) or now - h.end > max(3 * step, horizon):
        return Forecast(value=None, history_seconds=seconds, periods=used,
                        why="no recent sample to forecast from")
    js = np.array([last - round(lag / step) for lag in _lags(used, h.count * step)], dtype=np.int64)
    js = js[(js - n_c + 1 >= 0) & (js + n_h <= last)]
    rise, dist = _analogues(x, js, n_h=n_h, n_c=n_c)
    ok = np.isfinite(dist) & np.isfinite(rise)
    if not bool(ok.any()):
        return Forecast(value=None, history_seconds=seconds, periods=used,
                        why="no past cycle with samples around this time of day")
    closest = np.flatnonzero(ok)[np.argsort(dist[ok], kind="stable")][:_ANALOGUES]
    rise_hat = float(np.median(rise[closest]))
    days = ", ".join(f"{(last - int(js[k])) * step / DAY:g}d" for k in closest)
    capped = f", capped at {_MAX_RISE:g}x: the rise from a level near zero is not a pattern" \
        if rise_hat >= _MAX_RISE else ""
    return Forecast(value=max(0.0, level_now) * rise_hat, history_seconds=seconds, periods=used, rise=rise_hat,
                    why=f"level {level_now / 1000:.6g} x rise {rise_hat:.3g}{capped} (median of the analogues {days} "
                        "ago)")


def _analogues(x: Array, js: npt.NDArray[np.int64], *, n_h: int, n_c: int) -> tuple[Array, Array]:
    """For each past moment `js` (indices), the rise over the `n_h` samples after it (peak over the
    level of the `n_h` before) and its distance to now (the last `n_c` samples of `x`); NaN or inf
    where a window has no samples."""
    if js.shape[0] == 0:
        return np.empty(0), np.empty(0)
    last = x.shape[0] - 1
    past_level = _row_means(x[js[:, None] + np.arange(-n_h + 1, 1)[None, :]])
    ahead = x[js[:, None] + np.arange(1, n_h + 1)[None, :]]
    with np.errstate(invalid="ignore", divide="ignore"):
        peak = np.max(np.where(np.isnan(ahead), -np.inf, ahead), axis=1)
        rise = np.where(past_level > 0, np.minimum(peak / past_level, _MAX_RISE), np.nan)
    dist = _distances(x[last - n_c + 1:], x[js[:, None] + np.arange(-n_c + 1, 1)[None, :]])
    return rise, dist
