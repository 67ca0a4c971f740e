"""THE error table (adapter.services.errors.status_for), one row per test, through the HTTP API.

A backend outage is 503 (retrying later can succeed), a client's mistake a 4xx, anything only the
operator or a developer can fix 500. Every request goes through the real services and a real
Prometheus client talking HTTP to a fake Prometheus; the client sees only the Status.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web

from kubecommon.kube import errors as kube_errors
from kubecommon.kube.objects import GroupResourceLike, ObjectReader
from kubecommon.status import Forbidden
from tests.unit.adapter.api_harness import CUSTOM, EXTERNAL, RESOURCE, item, prom_json, serve_adapter, vector

PODS = f"{CUSTOM}/namespaces/shop/pods/*/http_requests_per_second"


class FailingCaches:
    """Object caches whose every reader fails with `error` (an ObjectCaches for the table)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def reader(self, resource: GroupResourceLike) -> ObjectReader:
        raise self.error


def answer(status: int, body: Any) -> Any:
    async def handler(_: web.Request) -> web.StreamResponse:
        return prom_json(body, status)
    return handler


async def good(_: web.Request) -> web.StreamResponse:
    return prom_json(vector(item("1", pod="web-0")))


async def hang(_: web.Request) -> web.StreamResponse:
    await asyncio.sleep(5)
    return prom_json(vector())


async def reset(request: web.Request) -> web.StreamResponse:
    assert request.transport is not None
    request.transport.close()
    return prom_json(vector())


async def html(_: web.Request) -> web.StreamResponse:
    return web.Response(text="<html>proxy says hi</html>", content_type="text/html")


def prom_error(kind: str, status: int) -> Any:
    return answer(status, {"status": "error", "errorType": kind, "error": "secret-detail"})


# (id, prometheus handler, object caches error, path, expected code, reason, message start)
ROWS = [
    ("prometheus unreachable (connection reset)", reset, None, PODS, 503, "ServiceUnavailable",
     "unable to fetch metrics: the metrics backend is unavailable"),
    ("prometheus timeout (our deadline)", hang, None, PODS, 503, "ServiceUnavailable",
     "unable to fetch metrics: the metrics backend is unavailable"),
    ("prometheus errorType timeout", prom_error("timeout", 503), None, PODS, 503, "ServiceUnavailable", None),
    ("prometheus HTTP 500", answer(500, "boom"), None, PODS, 503, "ServiceUnavailable", None),
    ("prometheus HTTP 502 from a proxy", answer(502, "bad gateway"), None, PODS, 503, "ServiceUnavailable", None),
    ("prometheus HTTP 503", answer(503, "unavailable"), None, PODS, 503, "ServiceUnavailable", None),
    ("prometheus HTTP 429 overloaded", answer(429, "slow down"), None, PODS, 503, "ServiceUnavailable", None),
    ("prometheus HTTP 401 (our credentials)", answer(401, "unauthorized"), None, PODS, 500, "InternalError",
     "Internal error occurred: unable to fetch metrics"),
    ("prometheus HTTP 403 (our credentials)", answer(403, "forbidden"), None, PODS, 500, "InternalError", None),
    ("prometheus HTTP 404 (wrong --prometheus-url)", answer(404, "not found"), None, PODS, 500, "InternalError",
     None),
    ("prometheus bad_data (a broken rule)", prom_error("bad_data", 400), None, PODS, 500, "InternalError",
     "Internal error occurred: unable to fetch metrics"),
    ("prometheus execution error", prom_error("execution", 422), None, PODS, 500, "InternalError", None),
    ("prometheus answer not JSON", html, None, PODS, 500, "InternalError", None),
    ("kubernetes API unavailable", good, kube_errors.CacheNotSynced("not synced"), PODS, 503,
     "ServiceUnavailable", "unable to list matching resources: the Kubernetes API is unavailable"),
    ("kubernetes API refuses (RBAC)", good,
     kube_errors.KubeAPIError(Forbidden("secret-detail"), method="GET", path="/api/v1/pods"), PODS, 500,
     "InternalError", "Internal error occurred: unable to list matching resources"),
    ("bad labelSelector", good, None, f"{PODS}?labelSelector=a%20b", 400, "BadRequest", None),
    ("metricLabelSelector key PromQL cannot express", good, None, f"{PODS}?metricLabelSelector=a.b%3Dc", 400,
     "BadRequest", None),
    ("unknown metric", good, None, f"{CUSTOM}/namespaces/shop/pods/*/nope", 404, "NotFound",
     "the server could not find the metric nope for pods"),
    ("our bug", good, ZeroDivisionError("secret-detail"), PODS, 500, "InternalError",
     "Internal error occurred: an unexpected error occurred, see the adapter's log"),
    ("external metric, prometheus HTTP 500", answer(500, "boom"), None,
     f"{EXTERNAL}/namespaces/shop/queue_messages_ready", 503, "ServiceUnavailable", None),
    ("resource metrics, prometheus HTTP 503", answer(503, "x"), None, f"{RESOURCE}/namespaces/shop/pods", 503,
     "ServiceUnavailable", None),
    ("resource metrics, kubernetes API unavailable", good, kube_errors.KubeUnavailable("down"),
     f"{RESOURCE}/nodes", 503, "ServiceUnavailable", None),
]


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("handler", "kube_error", "path", "code", "reason", "message"),
                         [pytest.param(*row[1:], id=row[0]) for row in ROWS])
async def test_every_row_of_the_error_table(handler: Any, kube_error: BaseException | None, path: str,
                                            code: int, reason: str, message: str | None) -> None:
    objects = FailingCaches(kube_error) if kube_error is not None else None
    async with serve_adapter(handler, objects=objects, timeout=0.3) as adapter:
        response = await adapter.get(path)
        body = await response.json()
    assert (response.status, body["kind"], body["code"], body["reason"]) == (code, "Status", code, reason)
    if message is not None:
        assert body["message"].startswith(message)
    assert "secret" not in json.dumps(body)
