"""A map-backed stand-in for the Prometheus history reads (`live.HistoryReader`), for tests.

Each PromQL text maps to series: labels and a function of time giving the sample (None: no
sample). `fetch` answers every chunk as Prometheus would (one sample per tick) and counts the
range queries (`combine`: one per chunk for all the jobs, as `PrometheusHistory` asks them);
`down` makes every read fail as an unreachable Prometheus does.

Non-goals: PromQL evaluation. No I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.history.fold import Grid, Series
from controller.history.prometheus import HistoryError, Job, chunks

__all__ = ["FakeHistoryReader", "FakeSeries"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeSeries:
    labels: Mapping[str, str]
    value: Callable[[float], float | None]


@dataclass(slots=True, kw_only=True)
class FakeHistoryReader:
    """frozen=False: tests change `series` and `down` as time goes on, and read the counters."""

    series: dict[str, list[FakeSeries]] = field(default_factory=dict)
    shapes: dict[str, tuple[tuple[str, frozenset[str]], ...]] = field(default_factory=dict)
    down: bool = False
    range_queries: list[tuple[str, float, float]] = field(default_factory=list)
    series_queries: list[str] = field(default_factory=list)

    async def series_shapes(self, queries: Sequence[str], start: float, end: float
                            ) -> dict[str, tuple[tuple[str, frozenset[str]], ...]]:
        if self.down:
            raise HistoryError("seriesQuery: Prometheus at http://fake did not answer: connection refused")
        self.series_queries.extend(queries)
        return {q: self.shapes.get(q, ()) for q in queries}

    async def fetch(self, jobs: Sequence[Job], grid: Grid, *, chunk_points: int = 5_000,
                    combine: bool = False) -> None:
        for n, job in enumerate(jobs):
            for start, end in chunks(grid, chunk_points):
                if self.down:
                    raise HistoryError(f"{job.what}: Prometheus at http://fake did not answer: connection refused")
                if not combine or n == 0:
                    self.range_queries.append((" or ".join(j.promql for j in jobs) if combine else job.promql,
                                               start, end))
                job.consume(self._answer(job.promql, grid, start, end))

    def _answer(self, promql: str, grid: Grid, start: float, end: float) -> list[Series]:
        out: list[Series] = []
        for s in self.series.get(promql, ()):
            values = []
            for i in range(grid.index(start), grid.index(end) + 1):
                v = s.value(grid.time(i))
                if v is not None:
                    values.append([grid.time(i), repr(v)])
            if values:
                out.append((s.labels, values))
        return out


def _protocol_checks() -> None:
    """mypy proves the fake satisfies the port (Go's `var _ I = &T{}`)."""
    from controller.history.live import HistoryReader

    reader: HistoryReader = FakeHistoryReader()
    del reader
