"""The accuracy guard and the per-sync predictor: trust while forecasts beat reacting, fall back
when they stop, recover when they help again; the first call proves itself on recent history."""

from __future__ import annotations

import numpy as np

from controller.algorithm.spec import PredictionMode, PredictionSpec
from controller.forecast import History, PredictorState, predict_metric
from controller.forecast import guard
from tests.unit.controller.forecast.series import DAY, STEP, daily, ramp_time

SPEC = PredictionSpec(mode=PredictionMode.ACTIVE, horizon_seconds=600)


def _walk(h: History, state: PredictorState | None, start: float, end: float, every: float = 60.0):
    forecasts = []
    t = start
    while t < end:
        f, state = predict_metric(h, state, now=t, spec=SPEC)
        forecasts.append((t, f))
        t += every
    return forecasts, state


def test_a_steady_cycle_is_trusted_from_the_first_sync_after_proving_itself_on_the_last_day() -> None:
    h = daily(6)
    f, state = predict_metric(h, None, now=ramp_time(5) - 120, spec=SPEC)
    assert f.trusted and f.skill is not None and f.skill > 0
    assert state.card.scored > 50  # the bootstrap day was replayed and scored
    assert f.value is not None and f.value > 300_000 / 1000  # the ramp, ahead of it
    assert f.history_seconds >= 5 * DAY


def test_too_little_history_is_untrusted_and_says_why() -> None:
    h = daily(1)
    f, _state = predict_metric(h, None, now=h.end, spec=SPEC)
    assert (f.value, f.trusted) == (None, False)
    assert "too little history" in f.why


def test_a_pattern_change_trips_the_fallback_and_recovery_clears_it() -> None:
    # Ten days of an 08:00 ramp; then the ramp stops coming (the batch moved): forecasts of a ramp
    # that never arrives cost capacity for nothing, so the guard falls back; weeks later the new
    # pattern (no ramp, then the ramp again) is learnt and trusted again.
    days = 24
    h = daily(days)
    values = h.values.copy()
    changed = np.arange(values.shape[0]) * STEP
    flat = (changed >= 10 * DAY) & (changed < 14 * DAY)
    values[flat] = 100.0 * (1 + 0.02 * np.random.default_rng(5).standard_normal(int(flat.sum())))
    h = History(start=0.0, step=STEP, values=values)
    _f, state = predict_metric(h, None, now=9 * DAY + 12 * 3600, spec=SPEC)
    assert state.card.trusted
    after, state = _walk(h, state, 9 * DAY + 12 * 3600, 13 * DAY, every=900.0)
    tripped = [t for t, f in after if f.value is not None and not f.trusted]
    assert tripped, "the guard never fell back while forecasts of a vanished ramp failed"
    assert min(tripped) < 12 * DAY  # within two days of the change
    back, state = _walk(h, state, 13 * DAY, 20 * DAY, every=1800.0)
    assert back[-1][1].trusted, back[-1][1].why


def test_scoring_uses_the_peak_that_came_within_the_horizon() -> None:
    values = np.full(100, 10.0)
    values[50:53] = 30.0
    h = History(start=0.0, step=60.0, values=values)
    card = guard.record(guard.Scorecard(), made_at=48 * 60.0, forecast=30.0, reactive=10.0)
    card = guard.score(card, h, now=99 * 60.0, horizon=300.0)
    assert card.pending == () and card.scored == 1
    assert card.forecast_loss == 0.0  # it provided for the peak of 30 exactly
    assert card.reactive_loss == guard.UNDER_WEIGHT * 20.0 / 30.0
    assert card.trusted and card.skill == 1.0


def test_a_load_that_never_moves_is_trusted_not_reported_as_a_fallback() -> None:
    h = History(start=0.0, step=STEP, values=np.full(int(3 * DAY / STEP), 500.0))
    card = guard.Scorecard()
    for t in range(0, int(DAY), 600):
        card = guard.record(card, made_at=float(DAY + t), forecast=500.0, reactive=500.0)
    card = guard.score(card, h, now=3 * DAY, horizon=600.0)
    assert card.scored > 100 and card.forecast_loss == card.reactive_loss == 0.0
    assert card.trusted and card.skill == 0.0
