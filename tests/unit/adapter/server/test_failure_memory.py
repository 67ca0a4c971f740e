"""A backend that keeps failing must not make the adapter hold its answers.

The serving process runs the cyclic collector rarely (kubecommon.gctune.freeze_heap), so anything a failed
request leaves in a reference cycle stays until a full collection. With the collector off, only
reference counting frees memory: what is still held after the requests is what a cycle pinned.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

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


@asynccontextmanager
async def undecodable_answers() -> AsyncIterator[str]:
    """Prometheus (or a proxy) answering 200 with a body that does not decode."""
    async def broken(_: web.Request) -> web.Response:
        return web.Response(body=BROKEN, content_type="application/json")

    prometheus_app = web.Application()
    prometheus_app.router.add_route("*", "/{tail:.*}", broken)
    async with TestServer(prometheus_app, host="127.0.0.1") as server:
        yield str(server.make_url("")).rstrip("/")


@asynccontextmanager
async def answers_cut_short() -> AsyncIterator[str]:
    """A 200 answer that announces more bytes than it sends before the connection closes: the
    bytes received are on the client's read error until it is dropped."""
    whole = BROKEN + b"]}}"

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(whole) + 100, whole))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize(("prometheus", "status", "reason"), [
    pytest.param(undecodable_answers, 500, "InternalError", id="a 200 answer that does not decode"),
    pytest.param(answers_cut_short, 503, "ServiceUnavailable", id="a 200 answer cut short"),
])
async def test_failed_requests_do_not_keep_prometheus_answers_alive(
        prometheus: Callable[[], AbstractAsyncContextManager[str]], status: int, reason: str) -> None:
    async with prometheus() as prometheus_url:
        client = PrometheusClient(PrometheusSettings(url=prometheus_url))
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
                        assert (response.status, body["reason"]) == (status, reason)
                    held, _peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
        finally:
            await client.close()
    # 40 pinned answers would be 40 x ~130 KB of body plus its decoded form: several MB.
    assert held < 1.5 * len(BROKEN) * 4, f"{held / 2**20:.1f} MiB still held after 40 failed requests"
