"""`seasonal.forecast`: the highest value expected over the horizon, from the samples before now."""

from __future__ import annotations

import numpy as np
import pytest

from controller.forecast import History, forecast
from controller.forecast.seasonal import DAY, WEEK, detect_periods
from tests.unit.controller.forecast.series import STEP, daily, ramp_time

LOOKBACK = 14 * DAY


def test_too_little_history_gives_no_forecast_and_says_how_much_there_is() -> None:
    h = daily(1.5)
    f = forecast(h, now=h.end, horizon=300, lookback=LOOKBACK)
    assert f.value is None
    assert f.why.startswith("too little history: 36.0 h of samples, a forecast needs 48 h")


def test_a_recurring_ramp_is_forecast_before_it_arrives() -> None:
    h = daily(5)
    before = ramp_time(4) - 120  # two minutes before today's ramp: the level is still the night's
    f = forecast(h, now=before, horizon=600, lookback=LOOKBACK)
    assert f.value is not None
    assert f.value > 2.0 * 100  # well above the night level the reactive controller sees
    assert f.periods == (DAY,)


def test_a_forecast_reads_no_sample_after_now() -> None:
    h = daily(5)
    now = ramp_time(4) - 120
    cut = History(start=h.start, step=h.step, values=h.values[: h.index_at(now) + 1])
    spoiled = h.values.copy()
    spoiled[h.index_at(now) + 1:] = 1e9
    later = History(start=h.start, step=h.step, values=spoiled)
    a = forecast(cut, now=now, horizon=600, lookback=LOOKBACK)
    b = forecast(later, now=now, horizon=600, lookback=LOOKBACK)
    assert a.value == b.value


def test_flat_noise_has_no_cycle_so_no_forecast() -> None:
    rng = np.random.default_rng(3)
    h = History(start=0.0, step=STEP, values=100 + rng.standard_normal(int(6 * DAY / STEP)))
    f = forecast(h, now=h.end, horizon=300, lookback=LOOKBACK)
    assert f.value is None
    assert "no daily or weekly cycle" in f.why


def test_weekly_cycle_is_found_when_weekends_differ() -> None:
    h = daily(21, weekend=0.2)
    assert set(detect_periods(h)) == {DAY, WEEK}


@pytest.mark.parametrize("gap_days", [pytest.param((3,), id="yesterday missing"),
                                      pytest.param((1, 2), id="two older days missing")])
def test_missing_days_still_forecast_the_ramp(gap_days: tuple[int, ...]) -> None:
    h = daily(5)
    values = h.values.copy()
    for d in gap_days:
        values[int(d * DAY / STEP):int((d + 1) * DAY / STEP)] = np.nan
    gappy = History(start=h.start, step=h.step, values=values)
    f = forecast(gappy, now=ramp_time(4) - 120, horizon=600, lookback=LOOKBACK, periods=(DAY,))
    assert f.value is not None and f.value > 200


def test_a_one_day_outlier_does_not_set_the_forecast() -> None:
    h = daily(6)
    values = h.values.copy()
    spike = int(ramp_time(4) / STEP)
    values[spike:spike + 10] = 50_000  # yesterday's ramp hit 125x its level once
    f = forecast(History(start=0.0, step=STEP, values=values), now=ramp_time(5) - 120, horizon=600,
                 lookback=LOOKBACK, periods=(DAY,))
    assert f.value is not None and f.value < 600


def test_a_level_shift_carries_over_relative_rises() -> None:
    # from day 4 the service carries twice the load: the ramp after it is forecast at the new level
    h = daily(6, shift_at=4 * DAY, shift=2.0)
    f = forecast(h, now=ramp_time(5) - 120, horizon=600, lookback=LOOKBACK, periods=(DAY,))
    assert f.value is not None and f.value > 600


def test_weekend_morning_is_compared_with_last_weekend_not_yesterday() -> None:
    h = daily(20, weekend=0.25)
    saturday = 19 * DAY  # day 19 is a Sunday (days 5, 6, 12, 13, 19 are weekend days)
    f = forecast(h, now=saturday + 8 * 3600 - 120, horizon=600, lookback=LOOKBACK)
    assert f.value is not None
    assert f.value < 0.6 * 400  # the weekday peak would be 400; the weekend one is 100
