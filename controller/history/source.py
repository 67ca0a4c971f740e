"""The forecast port the reconciler calls, its stand-ins, and the one bounded call to it.

`ForecastSource.forecasts(obj, now)` gives one `MetricForecast` (or None) per metric of a
predictive object. The real source is `live.LiveForecasts` (history from Prometheus through the
adapter's rules, `controller.forecast.predict_metric`); without `--prometheus-url` the controller
uses `NoHistory`, which says so per metric; tests use the map-backed `FakeForecasts`.

`forecasts_for` is what `Reconciler` runs each sync: nothing for an object that does not predict
(no `spec.prediction`, mode Off, or a native HPA), otherwise the source's answer within
`timeout`; a source that is slow or fails gives forecasts that say so, never an exception, so the
reactive decision is never held up (design.md: a forecast only adds a recommendation).

Non-goals: reading history, forecasting. No I/O of its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Protocol

from controller.algorithm.spec import MetricForecast
from controller.kube.objects import KIND, Autoscaler
from controller.kube.ports import ObjectKey

__all__ = ["FORECAST_TIMEOUT", "FakeForecasts", "ForecastSource", "NoHistory", "forecasts_for", "predicts"]

_log = logging.getLogger(__name__)
FORECAST_TIMEOUT = 2.0  # seconds a sync waits for its forecasts; the history read goes on behind it


class ForecastSource(Protocol):
    """Per metric of a predictive object, this sync's forecast (same index as spec.metrics)."""

    async def forecasts(self, obj: Autoscaler, now: float) -> tuple[MetricForecast | None, ...]: ...

    def forget(self, key: ObjectKey) -> None:
        """The object was deleted: drop its history and forecaster state."""


def predicts(obj: Autoscaler) -> bool:
    """A PromAutoscaler whose spec.prediction asks for forecasts (ForecastOnly or Active)."""
    return obj.key.kind == KIND and obj.spec.predicts


def _each(obj: Autoscaler, why: str) -> tuple[MetricForecast | None, ...]:
    return tuple(MetricForecast(value=None, why=why, trusted=False) for _ in obj.spec.metrics)


async def forecasts_for(source: ForecastSource | None, obj: Autoscaler, now: float, *,
                        timeout: float = FORECAST_TIMEOUT) -> tuple[MetricForecast | None, ...]:
    """This sync's forecasts: () when the object does not predict; never raises, never waits past `timeout`."""
    if source is None or not predicts(obj):
        return ()
    try:
        return await asyncio.wait_for(source.forecasts(obj, now), timeout)
    except TimeoutError:
        return _each(obj, f"history unavailable: not read within {timeout:g} s (still reading)")
    except Exception as err:  # noqa: BLE001 - a forecast failure must never stop the reactive decision
        _log.warning("%s %s: forecasts failed: %s", obj.key.kind, obj.key, err, exc_info=True)
        return _each(obj, f"history unavailable: {err}")


class NoHistory:
    """No `--prometheus-url`: every metric of a predictive object says why it has no forecast."""

    async def forecasts(self, obj: Autoscaler, now: float) -> tuple[MetricForecast | None, ...]:
        return _each(obj, "no --prometheus-url: the controller cannot read history")

    def forget(self, key: ObjectKey) -> None:
        return None


class FakeForecasts:
    """Map-backed: the forecasts set per object key (none: one None per metric); records who asked."""

    def __init__(self, answers: Mapping[ObjectKey, tuple[MetricForecast | None, ...]] | None = None) -> None:
        self.answers = dict(answers or {})
        self.asked: list[tuple[ObjectKey, float]] = []
        self.forgotten: list[ObjectKey] = []

    async def forecasts(self, obj: Autoscaler, now: float) -> tuple[MetricForecast | None, ...]:
        self.asked.append((obj.key, now))
        return self.answers.get(obj.key, tuple(None for _ in obj.spec.metrics))

    def forget(self, key: ObjectKey) -> None:
        self.forgotten.append(key)


def _protocol_checks() -> None:
    """mypy proves each stand-in satisfies the port (Go's `var _ I = &T{}`); `live` checks the real one."""
    none: ForecastSource = NoHistory()
    fake: ForecastSource = FakeForecasts()
    del none, fake
