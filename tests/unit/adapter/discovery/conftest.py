"""The world the relist tests share: a rule file, the map-backed Prometheus serving its series, and
a fake clock with a fake sleep that lets the relist loop run a given number of iterations."""

from __future__ import annotations

import asyncio

import pytest

from adapter.config.load import parse_config
from adapter.discovery.relist import Discovery
from adapter.prometheus.fake import FakePrometheus
from adapter.rules.compile import CompiledConfig, compile_config
from adapter.rules.resources import GroupResource

PODS = GroupResource(group="", resource="pods")
CONFIG = r"""
rules:
- seriesQuery: '{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^(.*)_total$', as: '${1}_per_second'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
- seriesQuery: '{namespace!="",pod!=""}'
  seriesFilters: [{isNot: '_total$'}]
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'node_load1'
  resources: {overrides: {node: {resource: node}}}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{namespace!="",pod!=""}'
  seriesFilters: [{is: '^queue_'}]
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""
POD_QUERY = '{namespace!="",pod!=""}'
NOW = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


class Sleeps:
    """Fake sleep: records each delay, advances the clock, and lets `budget` sleeps pass."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.delays: list[float] = []
        self.budget = 0
        self.parked = asyncio.Event()
        self._gate = asyncio.Event()

    async def __call__(self, delay: float) -> None:
        while self.budget == 0:
            self.parked.set()
            self._gate.clear()
            await self._gate.wait()
        self.budget -= 1
        self.delays.append(delay)
        self.clock.now += delay

    async def run(self, n: int) -> None:
        """Let the loop do `n` more iterations and park again."""
        self.parked.clear()
        self.budget += n
        self._gate.set()
        await asyncio.wait_for(self.parked.wait(), 1)


@pytest.fixture
def compiled() -> CompiledConfig:
    return compile_config(parse_config(CONFIG, source="config.yaml"))


def pod_series(*names: str) -> list[dict[str, str]]:
    return [{"__name__": n, "namespace": "shop", "pod": "web-1"} for n in names]


@pytest.fixture
def prom() -> FakePrometheus:
    fake = FakePrometheus()
    fake.set_series(POD_QUERY, pod_series("http_requests_total", "memory_bytes", "queue_depth"))
    fake.set_series("node_load1", [{"__name__": "node_load1", "node": "n1"}])
    return fake


def metrics_of(discovery: Discovery) -> set[str]:
    snap = discovery.snapshot
    return ({f"{i.resource}/{i.metric}" for i in snap.custom_metrics()}
            | {i.metric for i in snap.external_metrics()})
