"""/readyz?verbose and /metrics say when the served metric registry is stale and how old it is,
and a stale registry does not fail readiness (a Prometheus outage must not empty the Service)."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from adapter.discovery.relist import Discovery
from adapter.prometheus import errors
from adapter.prometheus.fake import FakePrometheus
from adapter.server.context import Groups, ServerContext
from adapter.server.routes import Services, build_app
from adapter.server.telemetry import StateSource, Telemetry
from tests.unit.adapter.services.conftest import SERIES, compiled


async def test_readyz_and_metrics_report_a_stale_registry_and_its_age() -> None:
    now = [1000.0]
    prometheus = FakePrometheus()
    for query, series in SERIES.items():
        prometheus.set_series(query, series)
    discovery = Discovery(prometheus, compiled(), interval=60, clock=lambda: now[0])
    telemetry = Telemetry()
    telemetry.add_state(StateSource(relist=discovery.state_metrics))
    ctx = ServerContext(telemetry=telemetry, authenticator=None, authorizer=None, groups=Groups(),
                        registry=lambda: discovery.snapshot, readiness={"metric-discovery": discovery.freshness})
    async with TestClient(TestServer(build_app(ctx, Services()), host="127.0.0.1")) as http:
        assert (await http.get("/readyz")).status == 500
        assert await discovery.relist()
        prometheus.set_series(next(iter(SERIES)), errors.PrometheusUnreachable("refused"))
        now[0] += 45
        assert not await discovery.relist()
        response = await http.get("/readyz")
        assert (response.status, await response.text()) == (200, "ok")
        verbose = await (await http.get("/readyz?verbose")).text()
        assert "[+]metric-discovery ok (registry stale: built 45s ago, 1 failed relists since)" in verbose
        metrics = await (await http.get("/metrics")).text()
        assert "prom_autoscaler_adapter_registry_stale 1.0" in metrics
        assert "prom_autoscaler_adapter_registry_age_seconds 45.0" in metrics
        assert "prom_autoscaler_adapter_relist_failures_total 1.0" in metrics


async def test_client_reads_readiness_and_data_coverage() -> None:
    from adapter.prometheus.api import BackendHealth
    from adapter.prometheus.client import SCRAPE_STARTUP_GRACE, PrometheusClient
    from adapter.prometheus.settings import PrometheusSettings
    from tests.fixtures.prom_http import FakePromHTTP, Recorded, json_response

    state = {"ready": 200}

    async def handler(req: Recorded) -> web.StreamResponse:
        if req.path == "/-/ready":
            return web.Response(status=state["ready"], text="x")
        if req.path == "/api/v1/status/runtimeinfo":
            return json_response({"status": "success", "data": {"startTime": "2023-11-14T22:13:20.5Z"}})
        return web.Response(status=404)

    fake = await FakePromHTTP(handler=handler).start()
    client = PrometheusClient(PrometheusSettings(url=fake.url, verb="POST"))
    await client.start()
    try:
        start = 1_700_000_000.5  # 2023-11-14T22:13:20.5Z
        assert await client.health() == BackendHealth(ready=True, covered_since=start + SCRAPE_STARTUP_GRACE,
                                                      reachable=True)
        state["ready"] = 503
        assert await client.health() == BackendHealth(ready=False, reachable=False)
        state["ready"] = 403  # a proxy in front of /-/ready: not ready as far as we know, but no outage
        assert await client.health() == BackendHealth(ready=False, reachable=True)
        state["ready"] = 404  # a backend without /-/ready
        assert (await client.health()).ready is None
        assert {r.method for r in fake.requests} == {"GET"}
        await fake.stop()
        assert await client.health() == BackendHealth(ready=False, reachable=False)  # unreachable
    finally:
        await client.close()
        await fake.stop()
