"""Discovery keeps the last good registry through partial failures and suspect empty answers,
and says when what it serves is stale and how old it is."""

from __future__ import annotations

import pytest

from adapter.discovery.relist import Discovery
from adapter.prometheus import errors
from adapter.prometheus.api import BackendHealth
from adapter.prometheus.fake import FakePrometheus
from adapter.rules.compile import CompiledConfig

from .conftest import NOW, POD_QUERY, Clock, Sleeps, metrics_of

WINDOW = 120.0


@pytest.mark.parametrize("failure", [
    pytest.param(errors.PrometheusUnreachable("connection refused"), id="unreachable"),
    pytest.param(errors.PrometheusHTTPError("x", status=503), id="HTTP 503"),
    pytest.param(errors.PrometheusTimeout("slow"), id="timeout"),
    pytest.param(errors.PrometheusBadResponse("garbage"), id="garbage"),
])
async def test_one_failing_query_keeps_every_metric_of_the_previous_registry(
    prom: FakePrometheus, compiled: CompiledConfig, failure: Exception
) -> None:
    clock = Clock()
    discovery = Discovery(prom, compiled, interval=60, clock=clock, sleep=Sleeps(clock))
    assert await discovery.relist()
    served = metrics_of(discovery)
    prom.set_series(POD_QUERY, failure)  # the node query still answers
    clock.now += 60
    assert not await discovery.relist()
    assert metrics_of(discovery) == served
    assert discovery.stale and discovery.age() == 60
    ok, reason = discovery.freshness()
    assert ok and reason == "registry stale: built 60s ago, 1 failed relists since"
    state = discovery.state_metrics()
    assert (state["registry_stale"], state["registry_age_seconds"], state["failures_total"]) == (1.0, 60.0, 1.0)


@pytest.mark.parametrize(("health", "kept", "why"), [
    pytest.param(BackendHealth(ready=False), True, "Prometheus is not ready", id="not ready (WAL replay)"),
    pytest.param(BackendHealth(ready=True, covered_since=NOW + 30 - 10), True, "its scrapes do not cover the 120s look-back window yet",
                 id="restarted: up for less than the window"),
    pytest.param(BackendHealth(ready=True, covered_since=NOW - 3600), False, "", id="ready, covers the window"),
    pytest.param(BackendHealth(), False, "", id="backend says nothing (Thanos)"),
])
async def test_series_vanishing_is_trusted_only_from_a_ready_prometheus_covering_the_window(
    prom: FakePrometheus, compiled: CompiledConfig, health: BackendHealth, kept: bool, why: str
) -> None:
    clock = Clock()
    discovery = Discovery(prom, compiled, interval=30, max_age=WINDOW, clock=clock, sleep=Sleeps(clock))
    assert await discovery.relist()
    served = metrics_of(discovery)
    prom.set_series(POD_QUERY, [])
    prom.backend_health = health
    clock.now += 30
    assert await discovery.relist() is not kept
    assert prom.health_calls == 1
    if kept:
        assert metrics_of(discovery) == served and discovery.stale
        assert why in (discovery.stats.last_error or "")
        assert discovery.state_metrics()["suspect_total"] == 1.0
        # ... until a relist succeeds against a ready Prometheus that covers the window
        prom.backend_health = BackendHealth(ready=True, covered_since=NOW - WINDOW)
        clock.now += 1
        assert await discovery.relist()
    assert "pods/memory_bytes" in metrics_of(discovery)  # missing once: still served
    clock.now += 30
    assert await discovery.relist()
    assert "pods/memory_bytes" not in metrics_of(discovery)
    assert "nodes/node_load1" in metrics_of(discovery)
    assert not discovery.stale and discovery.freshness() == (True, "")


async def test_health_is_not_read_when_nothing_vanished(prom: FakePrometheus, compiled: CompiledConfig) -> None:
    discovery = Discovery(prom, compiled, interval=30)
    assert await discovery.relist() and await discovery.relist()
    assert prom.health_calls == 0
    assert discovery.freshness() == (True, "")


async def test_before_the_first_relist_readiness_fails(prom: FakePrometheus, compiled: CompiledConfig) -> None:
    discovery = Discovery(prom, compiled, interval=30)
    assert discovery.freshness() == (False, "no successful relist yet")
    assert discovery.age() is None and discovery.state_metrics()["registry_age_seconds"] is None
