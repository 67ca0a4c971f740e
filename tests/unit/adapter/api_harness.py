"""The adapter's HTTP API in process, over a real `PrometheusClient` talking to a fake Prometheus.

`serve_adapter(prometheus)` starts an aiohttp app that plays Prometheus (the test's handler
answers every request), and the adapter's app (custom, external and resource metrics, no
authentication) over the services' shared rule file and objects. Tests then speak HTTP to it,
so every answer is checked as a client sees it: status code, Status body, JSON.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from adapter.discovery.registry import Registry
from adapter.prometheus.client import PrometheusClient
from adapter.prometheus.settings import PrometheusSettings
from adapter.server.context import Groups, ServerContext
from adapter.server.routes import Services, build_app
from adapter.prometheus.instrumented import InstrumentedPrometheus
from adapter.server.telemetry import Telemetry
from adapter.services.custom_metrics import CustomMetricsService
from adapter.services.external_metrics import ExternalMetricsService
from adapter.services.resource_metrics import ResourceMetricsService
from kubecommon.kube.objects import ObjectCaches
from tests.unit.adapter.services.conftest import T, caches, compiled, node, pod, registry

PromHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CUSTOM = "/apis/custom.metrics.k8s.io/v1beta1"
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"
RESOURCE = "/apis/metrics.k8s.io/v1beta1"


def default_objects() -> ObjectCaches:
    return caches(pod("web-0", app="web"), pod("web-1", app="web"), nodes=[node("n1"), node("n2")])


def prom_json(body: Any, status: int = 200) -> web.Response:
    import json

    return web.Response(status=status, text=json.dumps(body, allow_nan=True),
                        content_type="application/json")


def vector(*items: Any) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": list(items)}}


def item(value: Any, ts: Any = T, **labels: Any) -> dict[str, Any]:
    return {"metric": labels, "value": [ts, value]}


@contextlib.asynccontextmanager
async def serve_adapter(prometheus: PromHandler, *, objects: ObjectCaches | None = None,
                        snapshot: Registry | None = None, telemetry: Telemetry | None = None,
                        **settings: Any) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    """The adapter's API over `prometheus` (a handler answering every Prometheus request)."""
    fake = web.Application()
    fake.router.add_route("*", "/{tail:.*}", prometheus)
    objects = objects if objects is not None else default_objects()
    snapshot = snapshot if snapshot is not None else registry()
    telemetry = telemetry or Telemetry()
    async with TestServer(fake, host="127.0.0.1") as prometheus_server:
        url = str(prometheus_server.make_url("")).rstrip("/")
        client = PrometheusClient(PrometheusSettings(url=url, **settings))
        await client.start()
        try:
            backend = InstrumentedPrometheus(client, telemetry)
            rules = compiled().resource
            assert rules is not None
            drop = telemetry.drop_sample
            services = Services(
                custom=CustomMetricsService(registry=lambda: snapshot, prometheus=backend, objects=objects,
                                            dropped=drop),
                external=ExternalMetricsService(registry=lambda: snapshot, prometheus=backend, dropped=drop),
                resource=ResourceMetricsService(rules=rules, prometheus=backend, objects=objects,
                                                clock=lambda: T, dropped=drop))
            ctx = ServerContext(telemetry=telemetry, authenticator=None, authorizer=None,
                                groups=Groups(resource=True), registry=lambda: snapshot)
            async with TestClient(TestServer(build_app(ctx, services), host="127.0.0.1")) as http:
                yield http
        finally:
            await client.close()
