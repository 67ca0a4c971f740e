"""One metric's prediction for one sync: the step the live controller and the backtest share.

`predict_metric(history, state, now=..., spec=...)` scores the forecasts whose horizon has passed
(`guard.score`), makes the forecast for `[now, now + horizon]` (`seasonal.forecast`), records it
to be scored later, and returns the algorithm's `MetricForecast` with the guard's verdict, plus
the state to carry to the next sync (an immutable value, as `ScaleHistory` is).

The first call (no state) proves the forecaster on the history it has before trusting it: it
replays forecasts over the last `BOOTSTRAP_SECONDS` of samples, each from the samples before it,
and scores them as the guard would have live. So a restart, a new object or a new leader starts
from a verdict on the user's own recent history, never from blind trust.

Cycles are searched once per `REDETECT_SECONDS` (the search reads every sample), not every sync.

Non-goals: reading history, deciding replicas. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from controller.algorithm.spec import MetricForecast, PredictionSpec
from controller.forecast import guard
from controller.forecast.history import History
from controller.forecast.seasonal import Forecast, detect_periods, forecast, level

__all__ = ["BOOTSTRAP_SECONDS", "PredictorState", "predict_metric"]

# None of these is a fitted accuracy constant: the bootstrap spans one daily cycle (every time of
# day scored once before trust); the rest bound cost.
BOOTSTRAP_SECONDS = 86_400.0
# A cycle's presence changes over days: a search every 6 h adds 6 hourly means to the >= 48 read.
REDETECT_SECONDS = 6 * 3600.0
REFRESH_SECONDS = 60.0  # the analogues are searched again at most this often (a default history step)
_BOOTSTRAP_FORECASTS = 96  # forecasts replayed over the bootstrap day (one per 15 min)


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictorState:
    card: guard.Scorecard = guard.Scorecard()
    periods: tuple[int, ...] = ()
    detected_at: float | None = None
    last_recorded: float | None = None
    cached: Forecast | None = None  # the last searched forecast, when, and the history's start then
    cached_at: float | None = None
    cached_start: float | None = None


def _periods(history: History, state: PredictorState, spec: PredictionSpec, now: float) -> PredictorState:
    if spec.periods_seconds:
        return replace(state, periods=tuple(spec.periods_seconds), detected_at=now)
    if state.detected_at is not None and now - state.detected_at < REDETECT_SECONDS:
        return state
    return replace(state, periods=detect_periods(history.upto(now, seconds=spec.lookback_seconds)), detected_at=now)


def _value_at(history: History, t: float) -> float:
    i = history.index_at(t)
    return float(history.values[i]) if 0 <= i < history.count else math.nan


def _one(history: History, state: PredictorState, spec: PredictionSpec, now: float) -> tuple[Forecast, PredictorState]:
    """Forecast at `now` and record it for scoring (at most one per half horizon: syncs closer than
    that would score the same samples again).

    The analogues' rise changes with the hours before now, not with each sample, so it is searched
    once per `REFRESH_SECONDS` (or when the history was cut) and multiplied by the level of the
    latest samples at every sync: a 15 s sync then costs a mean over the horizon, not a search
    over two weeks (the 7-day backtest of three metrics: 31 s of CPU -> a quarter of it)."""
    state = _periods(history, state, spec, now)
    c = state.cached
    if c is not None and state.cached_at is not None and 0 <= now - state.cached_at < REFRESH_SECONDS \
            and state.cached_start == history.start:
        latest = level(history, now=now, horizon=spec.horizon_seconds)
        if c.rise is None:  # no forecast a minute ago: none now either
            f = c
        elif math.isnan(latest):
            f = replace(c, value=None, why="no recent sample to forecast from")
        else:
            f = replace(c, value=max(0.0, latest) * c.rise)
    else:
        f = forecast(history, now=now, horizon=spec.horizon_seconds, lookback=spec.lookback_seconds,
                     periods=state.periods)
        state = replace(state, cached=f, cached_at=now, cached_start=history.start)
    reactive = _value_at(history, now)
    interval = max(history.step, spec.horizon_seconds / 2)
    due = state.last_recorded is None or now - state.last_recorded >= interval - 1e-6
    if f.value is not None and due and not math.isnan(reactive):
        card = guard.record(state.card, made_at=now, forecast=f.value, reactive=reactive)
        state = replace(state, card=card, last_recorded=now)
    return f, state


def _bootstrap(history: History, spec: PredictionSpec, now: float) -> PredictorState:
    state = PredictorState()
    start = max(history.start, now - BOOTSTRAP_SECONDS)
    stride = max(history.step, spec.horizon_seconds, BOOTSTRAP_SECONDS / _BOOTSTRAP_FORECASTS)
    for t in np.arange(start, now - spec.horizon_seconds, stride):
        _f, state = _one(history, replace(state, last_recorded=None), spec, float(t))
    card = guard.score(state.card, history, now=now, horizon=spec.horizon_seconds)
    return replace(state, card=card, last_recorded=None)


def predict_metric(history: History, state: PredictorState | None, *, now: float,
                   spec: PredictionSpec) -> tuple[MetricForecast, PredictorState]:
    """This sync's forecast of one metric with the guard's verdict, and the state for the next."""
    if state is None:
        state = _bootstrap(history, spec, now)
    card = guard.score(state.card, history, now=now, horizon=spec.horizon_seconds)
    f, state = _one(history, replace(state, card=card), spec, now)
    card = state.card
    if f.value is None:
        return MetricForecast(value=None, why=f.why, trusted=False, skill=card.skill,
                              history_seconds=f.history_seconds), state
    why = f.why if card.trusted else f"{card.verdict()}: not better than reacting"
    return MetricForecast(value=round(f.value), why=why, trusted=card.trusted, skill=card.skill,
                          history_seconds=f.history_seconds), state
