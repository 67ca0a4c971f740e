"""The miss path (`Discovery.missing`): a metric the last relist dropped is re-checked against
Prometheus, once for any number of concurrent requests and at most once per interval; an unknown
metric costs no series query, only a shared health read that turns an outage into an error."""

from __future__ import annotations

import asyncio

import pytest

from adapter.discovery.registry import CustomMetricInfo
from adapter.discovery.relist import Discovery
from adapter.prometheus import errors
from adapter.prometheus.api import BackendHealth
from adapter.prometheus.fake import FakePrometheus
from adapter.rules.compile import CompiledConfig

from .conftest import PODS, POD_QUERY, Clock, Sleeps, metrics_of, pod_series

MEMORY = CustomMetricInfo(resource=PODS, metric="memory_bytes", namespaced=True)
UNKNOWN = CustomMetricInfo(resource=PODS, metric="no_such_metric", namespaced=True)


async def _dropped_memory(prom: FakePrometheus, compiled: CompiledConfig) -> tuple[Discovery, Clock]:
    """A discovery whose last relist dropped pods/memory_bytes (missing twice in a row)."""
    clock = Clock()
    discovery = Discovery(prom, compiled, interval=30, clock=clock, sleep=Sleeps(clock))
    await discovery.relist()
    prom.set_series(POD_QUERY, pod_series("http_requests_total"))
    await discovery.relist()
    await discovery.relist()
    assert "pods/memory_bytes" not in metrics_of(discovery)
    assert MEMORY in discovery.snapshot.dropped_custom
    return discovery, clock


async def test_concurrent_requests_for_a_dropped_metric_share_one_recheck_and_restore_it(
        prom: FakePrometheus, compiled: CompiledConfig) -> None:
    discovery, _ = await _dropped_memory(prom, compiled)
    prom.set_series(POD_QUERY, pod_series("http_requests_total", "memory_bytes"))  # back
    calls = len(prom.series_calls)
    found = await asyncio.gather(*(discovery.missing.custom(MEMORY) for _ in range(50)))
    assert all(entry is not None and entry.series_name == "memory_bytes" for entry in found)
    assert len(prom.series_calls) == calls + 1
    assert "pods/memory_bytes" in metrics_of(discovery)
    assert discovery.state_metrics()["rechecks_total"] == 1.0


async def test_a_recheck_that_finds_nothing_is_reused_for_its_interval(
        prom: FakePrometheus, compiled: CompiledConfig) -> None:
    discovery, clock = await _dropped_memory(prom, compiled)
    calls = len(prom.series_calls)
    for _ in range(20):
        assert await discovery.missing.custom(MEMORY) is None
    assert len(prom.series_calls) == calls + 1
    clock.now += 6
    assert await discovery.missing.custom(MEMORY) is None
    assert len(prom.series_calls) == calls + 2


async def test_unknown_metric_costs_no_series_query_and_one_shared_health_read(
        prom: FakePrometheus, compiled: CompiledConfig) -> None:
    clock = Clock()
    discovery = Discovery(prom, compiled, interval=30, clock=clock, sleep=Sleeps(clock))
    await discovery.relist()
    calls = len(prom.series_calls)
    found = await asyncio.gather(*(discovery.missing.custom(UNKNOWN) for _ in range(50)))
    assert found == [None] * 50
    assert len(prom.series_calls) == calls and prom.health_calls == 1


async def test_unknown_metric_while_prometheus_is_unreachable_is_an_outage(
        prom: FakePrometheus, compiled: CompiledConfig) -> None:
    clock = Clock()
    discovery = Discovery(prom, compiled, interval=30, clock=clock, sleep=Sleeps(clock))
    prom.set_series(POD_QUERY, [])
    prom.set_series("node_load1", [])
    await discovery.relist()  # an honest empty relist
    assert len(discovery.snapshot) == 0
    prom.backend_health = BackendHealth(ready=False, reachable=False)
    with pytest.raises(errors.PrometheusUnreachable):
        await discovery.missing.custom(UNKNOWN)
    with pytest.raises(errors.PrometheusUnreachable):
        await discovery.missing.external("queue_depth")


async def test_a_proxy_refusing_the_health_read_is_no_outage(prom: FakePrometheus, compiled: CompiledConfig) -> None:
    """A 401/403 on /-/ready (kube-rbac-proxy allowing only the API) keeps an unknown metric a 404."""
    clock = Clock()
    discovery = Discovery(prom, compiled, interval=30, clock=clock, sleep=Sleeps(clock))
    await discovery.relist()
    prom.backend_health = BackendHealth(ready=False, reachable=True)
    assert await discovery.missing.custom(UNKNOWN) is None


async def test_a_dropped_metric_rechecked_during_an_outage_is_an_outage(
        prom: FakePrometheus, compiled: CompiledConfig) -> None:
    discovery, _ = await _dropped_memory(prom, compiled)
    prom.set_series(POD_QUERY, errors.PrometheusUnreachable("connection refused"))
    with pytest.raises(errors.PrometheusUnreachable):
        await discovery.missing.custom(MEMORY)


async def test_rules_reloaded_start_a_fresh_registry_without_carrying_old_entries(
        prom: FakePrometheus, compiled: CompiledConfig) -> None:
    from adapter.config.load import parse_config
    from adapter.rules.compile import compile_config

    clock = Clock()
    discovery = Discovery(prom, compiled, interval=30, clock=clock, sleep=Sleeps(clock))
    await discovery.relist()
    only_nodes = compile_config(parse_config(
        "rules:\n- seriesQuery: 'node_load1'\n  resources: {overrides: {node: {resource: node}}}\n"
        "  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n", source="c.yaml"))
    assert await discovery.use_rules(only_nodes)
    assert metrics_of(discovery) == {"nodes/node_load1"}
