"""`InstrumentedPrometheus`: a `PrometheusAPI` that times and counts every call of the one it wraps.

The composition root wraps the real client with it, so discovery and the services are measured
without knowing it. What is observed goes to a `CallObserver` (the server's `Telemetry` is one):
each call's latency by call (`query`, `series`, `health`), each failure by call and error type,
and the samples of every query answer (their age).

Non-goals: exposition and metric names (the observer's), retries or caching (the client's).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from adapter.prometheus.api import BackendHealth, PrometheusAPI, Sample, SeriesSink

if TYPE_CHECKING:
    from adapter.rules.query import PromQL

__all__ = ["CallObserver", "InstrumentedPrometheus"]

_T = TypeVar("_T")


class CallObserver(Protocol):
    """Where the measurements of Prometheus calls go."""

    def observe_prometheus_call(self, call: str, seconds: float) -> None: ...

    def count_prometheus_error(self, call: str, error: str) -> None: ...

    def observe_samples(self, samples: Sequence[Sample]) -> None: ...


class InstrumentedPrometheus:
    """`PrometheusAPI` that times and counts every call of the wrapped implementation."""

    def __init__(self, inner: PrometheusAPI, observer: CallObserver) -> None:
        self._inner = inner
        self._observer = observer

    async def _timed(self, call: str, awaitable: Awaitable[_T]) -> _T:
        start = time.perf_counter()
        try:
            return await awaitable
        except Exception as err:
            self._observer.count_prometheus_error(call, type(err).__name__)
            raise
        finally:
            self._observer.observe_prometheus_call(call, time.perf_counter() - start)

    async def query(self, promql: PromQL, *, time: float | None = None) -> list[Sample]:
        samples = await self._timed("query", self._inner.query(promql, time=time))
        self._observer.observe_samples(samples)
        return samples

    async def series(self, matchers: Sequence[str], *, start: float, end: float) -> list[dict[str, str]]:
        return await self._timed("series", self._inner.series(matchers, start=start, end=end))

    async def series_foreach(self, matchers: Sequence[str], *, start: float, end: float,
                             sink: SeriesSink) -> int:
        return await self._timed(
            "series", self._inner.series_foreach(matchers, start=start, end=end, sink=sink))

    async def health(self) -> BackendHealth:
        return await self._timed("health", self._inner.health())


def _conforms(wrapper: InstrumentedPrometheus) -> PrometheusAPI:
    """Never called: lets mypy check the wrapper against the port."""
    return wrapper
