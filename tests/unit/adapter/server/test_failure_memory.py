"""A backend that keeps failing must not make the adapter hold its answers.

The serving process runs the cyclic collector rarely (kubecommon.gctune.freeze_heap), so anything a failed
request leaves in a reference cycle stays until a full collection. With the collector off, only
reference counting frees memory: what is still held after the requests is what a cycle pinned.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from adapter.prometheus.client import PrometheusClient
from adapter.prometheus.settings import PrometheusSettings
from adapter.server.context import Groups, ServerContext
from adapter.server.routes import Services, build_app
from adapter.prometheus.instrumented import InstrumentedPrometheus
from adapter.server.telemetry import Telemetry
from adapter.services.custom_metrics import CustomMetricsService
from tests.unit.adapter.services.conftest import caches, pod, registry

PODS = 2000
URL = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/*/http_requests_per_second"
# A 2,000-pod answer cut short: Prometheus (or a proxy) answered 200 with a body that does not decode.
BROKEN = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"pod": f"web-{i}"}, "value": [1700000000.5, "1.5"]} for i in range(PODS)]}}).encode()[:-5]


@pytest.fixture
def collector_off() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("collector_off")
async def test_failed_requests_do_not_keep_prometheus_answers_alive() -> None:
    async def broken(_: web.Request) -> web.Response:
        return web.Response(body=BROKEN, content_type="application/json")

    prometheus_app = web.Application()
    prometheus_app.router.add_route("*", "/{tail:.*}", broken)
    async with TestServer(prometheus_app, host="127.0.0.1") as prometheus_server:
        client = PrometheusClient(PrometheusSettings(url=str(prometheus_server.make_url("")).rstrip("/")))
        await client.start()
        try:
            telemetry, snapshot = Telemetry(), registry()
            service = CustomMetricsService(registry=lambda: snapshot,
                                           prometheus=InstrumentedPrometheus(client, telemetry),
                                           objects=caches(*[pod(f"web-{i}") for i in range(PODS)]))
            app = build_app(ServerContext(telemetry=telemetry, authenticator=None, authorizer=None, groups=Groups(),
                                          registry=lambda: snapshot), Services(custom=service))
            async with TestClient(TestServer(app, host="127.0.0.1")) as adapter:
                for _ in range(3):  # warm-up: caches, lazily built routes and metric children
                    await (await adapter.get(URL)).read()
                tracemalloc.start()
                try:
                    for _ in range(40):
                        response = await adapter.get(URL)
                        body = await response.json()
                        assert (response.status, body["reason"]) == (500, "InternalError")
                    held, _peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
        finally:
            await client.close()
    # 40 pinned answers would be 40 x ~130 KB of body plus its decoded form: several MB.
    assert held < 1.5 * len(BROKEN) * 4, f"{held / 2**20:.1f} MiB still held after 40 failed requests"
