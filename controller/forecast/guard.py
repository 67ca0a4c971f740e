"""The accuracy guard: score each forecast against what then happened, and trust it only while
it beats reacting.

Every forecast made at `t` is kept until `t + horizon` has passed, then scored against the
highest sample that came in `(t, t + horizon]` (the load it had to provide for). Two losses are
kept as moving averages, over forecasts scored on the same samples:

* the forecast's: the capacity prediction would have provided, `max(forecast, value at t)`
  (prediction only ever raises replicas);
* reacting's: the capacity a reactive autoscaler provides for, `value at t`.

The loss of a capacity `q` against the actual peak `a` is `UNDER_WEIGHT x (a - q)` when short
and `(q - a)` when over, over `max(a, value at t)`: a shortfall (users served late) costs more
than a surplus (pods idle), as in Crane's and AWS's own scoring. The guard trusts forecasts while
their loss is below reacting's and falls back when it is not (a pattern change, a broken
history), with a small margin on the way back so it does not flap. Nothing scored yet: not
trusted. A load that never moved (both losses zero) is trusted: the forecast then asks for what
reacting does, and a fallback there would only alarm. The averages weigh the last
`HALF_LIFE_SECONDS` of forecasts most, so an old season does not excuse a new failure.

Non-goals: forecasting. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from controller.forecast.history import History

__all__ = ["HALF_LIFE_SECONDS", "Pending", "Scorecard", "UNDER_WEIGHT", "record", "score"]

# Where the constants come from (the method's logic; none has changed since it came in):
# UNDER_WEIGHT is a cost ratio, not a property of any series: one replica short costs as much as
# two idle, so a raise is trusted when the surplus it adds is under twice the shortfall it removes
# (the loss is least at the 2/3 quantile of the peak, w / (1 + w)). A user's economics could set
# another; none follows from the load.
UNDER_WEIGHT = 2.0
# A quarter of the daily cycle: after a change of pattern, a day of new evidence outweighs the old
# 16 to 1 (0.5 ** 4), while the hours averaged hold enough forecasts that one miss does not trip it.
HALF_LIFE_SECONDS = 6 * 3600.0
_RECOVER = 0.95  # hysteresis, not accuracy: back to trusted when the forecast's loss is 5% under reacting's
_EXACT = 1e-9  # losses this small are exact forecasts (a load that did not move)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    made_at: float
    forecast: float
    reactive: float  # the value at `made_at`: what reacting provides for


@dataclass(frozen=True, slots=True, kw_only=True)
class Scorecard:
    pending: tuple[Pending, ...] = ()
    forecast_loss: float = 0.0
    reactive_loss: float = 0.0
    weight: float = 0.0  # the averages' total weight (0: nothing scored)
    scored: int = 0
    trusted: bool = False
    last_scored: float | None = None  # made_at of the last scored forecast (the averages decay from it)

    @property
    def skill(self) -> float | None:
        """1 - forecast loss / reacting's loss (> 0: prediction helps); None before any score."""
        if self.weight == 0.0:
            return None
        if self.reactive_loss <= 0.0:
            return 0.0 if self.forecast_loss <= 0.0 else -math.inf
        return 1.0 - self.forecast_loss / self.reactive_loss

    def verdict(self) -> str:
        s = self.skill
        if s is None:
            return "no forecast scored yet"
        return (f"{self.scored} forecasts scored, loss {self.forecast_loss:.3g} against reacting's "
                f"{self.reactive_loss:.3g} (skill {s:.2f})")


def _loss(capacity: float, actual: float, scale: float) -> float:
    short = max(0.0, actual - capacity)
    over = max(0.0, capacity - actual)
    return (UNDER_WEIGHT * short + over) / scale


def record(card: Scorecard, *, made_at: float, forecast: float, reactive: float) -> Scorecard:
    return replace(card, pending=(*card.pending, Pending(made_at=made_at, forecast=forecast, reactive=reactive)))


def score(card: Scorecard, history: History, *, now: float, horizon: float) -> Scorecard:
    """Score every pending forecast whose horizon has passed (by `now` and in the history)."""
    if not card.pending:
        return card
    due = [p for p in card.pending if p.made_at + horizon <= min(now, history.end)]
    if not due:
        return card
    f_loss, r_loss, weight, scored = card.forecast_loss, card.reactive_loss, card.weight, card.scored
    last_time = card.last_scored
    for p in due:
        first = history.index_at(p.made_at) + 1
        stop = history.index_at(p.made_at + horizon) + 1
        window = history.values[max(0, first):max(0, stop)]
        if window.shape[0] == 0 or bool(np.all(np.isnan(window))):
            continue  # a gap: nothing to score against
        actual = float(np.nanmax(window))
        scale = max(actual, p.reactive, 1e-9)
        decay = 1.0 if last_time is None else 0.5 ** (max(0.0, p.made_at - last_time) / HALF_LIFE_SECONDS)
        last_time = p.made_at
        weight = weight * decay + 1.0
        f_loss += (_loss(max(p.forecast, p.reactive), actual, scale) - f_loss) / weight
        r_loss += (_loss(p.reactive, actual, scale) - r_loss) / weight
        scored += 1
    rest = tuple(p for p in card.pending if p not in due)
    if f_loss <= _EXACT and r_loss <= _EXACT:  # a steady load: neither ever missed, nothing to fall back from
        trusted = True
    elif card.trusted:
        trusted = f_loss < r_loss
    else:
        trusted = f_loss < _RECOVER * r_loss
    return Scorecard(pending=rest, forecast_loss=f_loss, reactive_loss=r_loss, weight=weight, scored=scored,
                     trusted=trusted and scored > 0, last_scored=last_time)
