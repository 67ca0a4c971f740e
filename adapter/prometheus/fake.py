"""Map-backed `PrometheusAPI` for unit tests of the layers above the client.

Answers come from dictionaries keyed by the exact PromQL text or series matcher, as in
prometheus-adapter's `pkg/client/fake`. An `Exception` stored as an answer is raised instead.
Every call is recorded so tests can assert what was asked (e.g. one series call per distinct
seriesQuery). Mutable on purpose: tests change answers between relists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from adapter.prometheus.api import BackendHealth, PrometheusAPI, Sample, SeriesSink

if TYPE_CHECKING:
    from adapter.rules.query import PromQL

__all__ = ["FakePrometheus", "SeriesCall"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesCall:
    matchers: tuple[str, ...]
    start: float
    end: float


@dataclass(frozen=False, slots=True, kw_only=True)
class FakePrometheus:
    queries: dict[str, list[Sample] | Exception] = field(default_factory=dict)
    series_by_matcher: dict[str, list[dict[str, str]] | Exception] = field(default_factory=dict)
    query_calls: list[tuple[str, float | None]] = field(default_factory=list)
    series_calls: list[SeriesCall] = field(default_factory=list)
    backend_health: BackendHealth = field(default_factory=BackendHealth)
    health_calls: int = 0

    def set_query(self, promql: str, samples: Sequence[Sample] | Exception) -> None:
        self.queries[promql] = samples if isinstance(samples, Exception) else list(samples)

    def set_series(
        self, matcher: str, series: Sequence[Mapping[str, str]] | Exception
    ) -> None:
        self.series_by_matcher[matcher] = (
            series if isinstance(series, Exception) else [dict(s) for s in series]
        )

    async def query(self, promql: PromQL, *, time: float | None = None) -> list[Sample]:
        self.query_calls.append((str(promql), time))
        answer = self.queries.get(str(promql), [])
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    async def series(
        self, matchers: Sequence[str], *, start: float, end: float
    ) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        await self.series_foreach(matchers, start=start, end=end, sink=out.append)
        return out

    async def series_foreach(
        self, matchers: Sequence[str], *, start: float, end: float, sink: SeriesSink
    ) -> int:
        self.series_calls.append(SeriesCall(matchers=tuple(matchers), start=start, end=end))
        seen: set[tuple[tuple[str, str], ...]] = set()
        count = 0
        for matcher in matchers:
            answer = self.series_by_matcher.get(matcher, [])
            if isinstance(answer, Exception):
                raise answer
            for labels in answer:
                key = tuple(sorted(labels.items()))
                if key not in seen:  # Prometheus answers the union of the matchers
                    seen.add(key)
                    sink(dict(labels))
                    count += 1
        return count


    async def health(self) -> BackendHealth:
        self.health_calls += 1
        return self.backend_health


def _check_protocol() -> PrometheusAPI:
    return FakePrometheus()  # mypy verifies the fake satisfies the port
