"""The in-process metrics API server with an `AggregatedMetricsSource` attached, a settable clock
and a list of what the source reported to its telemetry hook."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from controller.metrics.report import FetchOutcome
from controller.metrics.rest import AggregatedMetricsSource
from kubecommon.kube.client import KubeClient
from kubecommon.kube.resources import ResourceResolver

from .metrics_api import FakeMetricsAPI


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Reports:
    seen: list[tuple[str, FetchOutcome]] = field(default_factory=list)

    def __call__(self, api_group: str, outcome: FetchOutcome, seconds: float) -> None:
        assert seconds >= 0
        self.seen.append((api_group, outcome))


@dataclass
class Harness:
    server: FakeMetricsAPI
    client: KubeClient
    clock: Clock
    reports: Reports
    source: AggregatedMetricsSource

    def new_source(self, **kwargs) -> AggregatedMetricsSource:
        return AggregatedMetricsSource(self.client, ResourceResolver(self.client), clock=self.clock,
                                       observer=self.reports, **kwargs)


@pytest.fixture
async def api() -> AsyncIterator[Harness]:
    server = FakeMetricsAPI()
    client = KubeClient(await server.start(), timeout=2.0)
    await client.start()
    clock, reports = Clock(), Reports()
    source = AggregatedMetricsSource(client, ResourceResolver(client), clock=clock, observer=reports)
    yield Harness(server=server, client=client, clock=clock, reports=reports, source=source)
    await client.close()
    await server.close()
