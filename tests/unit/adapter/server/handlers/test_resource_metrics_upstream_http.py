"""metrics.k8s.io over HTTP, held to what kube-apiserver serves for metrics-server's storage
(kubernetes-sigs/metrics-server pkg/api/table.go, pod.go, node.go): `kubectl get podmetrics` and
`kubectl get nodemetrics` ask for a Table and print metrics-server's columns; `kubectl get -w`
asks for a watch, which metrics-server's storage does not offer (405 MethodNotAllowed)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from tests.unit.adapter.api_harness import RESOURCE, item, prom_json, serve_adapter, vector

pytestmark = pytest.mark.timeout(5)

#: what kubectl get sends (k8s.io/cli-runtime resource.Builder with a table printer)
KUBECTL_GET = ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
               "application/json")
CREATED = "2026-08-20T10:15:30Z"  # the harness clock, T


async def usage(request: web.Request) -> web.Response:
    """web-0: two containers, web-1: one; n1 and n2."""
    query = str((await request.post()).get("query") or request.query.get("query", ""))
    if "node" in query and "container" not in query:
        value = "1.5" if "cpu" in query else str(3 * 2**30)
        return prom_json(vector(item(value, node="n1"), item(value, node="n2")))
    if "cpu" in query:
        return prom_json(vector(item("0.25", pod="web-0", container="app"), item("0.0005", pod="web-0", container="proxy"),
                                item("0.1", pod="web-1", container="app")))
    return prom_json(vector(item(str(100 * 2**20), pod="web-0", container="app"),
                            item(str(20 * 2**20), pod="web-0", container="proxy"),
                            item(str(64 * 2**20), pod="web-1", container="app")))


def _columns(names: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"name": "Name", "type": "string", "format": "name", "description": "Name of the resource", "priority": 0},
            *({"name": n, "type": "string", "format": "quantity", "description": "", "priority": 0} for n in names),
            {"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0}]


def _pod_meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "shop", "creationTimestamp": CREATED, "labels": {"app": "web"}}


TABLES = [
    pytest.param("/namespaces/shop/pods", KUBECTL_GET, "v1",
                 [(["web-0", "250500u", "120Mi", "1m0s"], _pod_meta("web-0")),
                  (["web-1", "100m", "64Mi", "1m0s"], _pod_meta("web-1"))], id="kubectl-get-podmetrics"),
    pytest.param("/namespaces/shop/pods/web-1", KUBECTL_GET, "v1",
                 [(["web-1", "100m", "64Mi", "1m0s"], _pod_meta("web-1"))], id="kubectl-get-one-podmetrics"),
    pytest.param("/nodes", KUBECTL_GET, "v1",
                 [(["n1", "1500m", "3Gi", "1m0s"], {"name": "n1", "creationTimestamp": CREATED}),
                  (["n2", "1500m", "3Gi", "1m0s"], {"name": "n2", "creationTimestamp": CREATED})],
                 id="kubectl-get-nodemetrics"),
    pytest.param("/nodes/n2", "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json", "v1beta1",
                 [(["n2", "1500m", "3Gi", "1m0s"], {"name": "n2", "creationTimestamp": CREATED})],
                 id="v1beta1-table"),
]


@pytest.mark.parametrize(("path", "accept", "version", "rows"), TABLES)
async def test_kubectl_get_gets_metrics_servers_table(path: str, accept: str, version: str,
                                                      rows: list[tuple[list[str], dict[str, Any]]]) -> None:
    async with serve_adapter(usage) as adapter:
        response = await adapter.get(RESOURCE + path, headers={"Accept": accept})
        assert response.status == 200, await response.text()
        assert response.content_type == "application/json"
        table = await response.json()
    assert (table["kind"], table["apiVersion"], table["metadata"]) == ("Table", f"meta.k8s.io/{version}", {})
    assert table["columnDefinitions"] == _columns(("cpu", "memory"))
    assert [(row["cells"], row["object"]) for row in table["rows"]] == [
        (cells, {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}", "metadata": meta})
        for cells, meta in rows]


@pytest.mark.parametrize(("include", "expected"), [
    pytest.param("None", None, id="None"),
    pytest.param("Object", {"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": _pod_meta("web-1"),
                            "timestamp": CREATED, "window": "1m0s",
                            "containers": [{"name": "app", "usage": {"cpu": "100m", "memory": "64Mi"}}]},
                 id="Object"),
])
async def test_table_include_object(include: str, expected: dict[str, Any] | None) -> None:
    async with serve_adapter(usage) as adapter:
        response = await adapter.get(f"{RESOURCE}/namespaces/shop/pods/web-1?includeObject={include}",
                                     headers={"Accept": KUBECTL_GET})
        [row] = (await response.json())["rows"]
    assert row.get("object") == expected


async def test_an_unknown_include_object_is_kube_apiservers_400() -> None:
    async with serve_adapter(usage) as adapter:
        response = await adapter.get(f"{RESOURCE}/namespaces/shop/pods?includeObject=Everything",
                                     headers={"Accept": KUBECTL_GET})
        answer = await response.json()
    assert (response.status, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == ("Unable to convert to Table as requested: includeObject: Invalid value: "
                                 "\"Everything\": must be 'Metadata', 'Object', 'None', or empty")


@pytest.mark.parametrize("accept", [
    pytest.param("application/json", id="json"),
    pytest.param("application/vnd.kubernetes.protobuf,application/json", id="kubectl-top-protobuf-first"),
    pytest.param("application/json, application/json;as=Table;v=v1;g=meta.k8s.io", id="json-before-table"),
    pytest.param("application/json;as=Table;v=v2;g=meta.k8s.io,application/json", id="unknown-table-version"),
])
async def test_plain_json_when_the_client_prefers_it(accept: str) -> None:
    async with serve_adapter(usage) as adapter:
        response = await adapter.get(f"{RESOURCE}/namespaces/shop/pods", headers={"Accept": accept})
        assert (await response.json())["kind"] == "PodMetricsList"


@pytest.mark.parametrize(("path", "kind"), [
    pytest.param("/namespaces/shop/pods?watch=true", "pods.metrics.k8s.io", id="pods-in-a-namespace"),
    pytest.param("/pods?watch=1&resourceVersion=0", "pods.metrics.k8s.io", id="pods-everywhere"),
    pytest.param("/nodes?watch=true", "nodes.metrics.k8s.io", id="nodes"),
])
async def test_watch_is_method_not_allowed(path: str, kind: str) -> None:
    """kube-apiserver's answer for a storage without Watch; before, a watch got a PodMetricsList,
    which `kubectl get podmetrics -w` failed to decode as a watch event."""
    async with serve_adapter(usage) as adapter:
        response = await adapter.get(RESOURCE + path)
        body = await response.json()
    assert (response.status, body["reason"], body["message"]) == (
        405, "MethodNotAllowed", f'watch is not supported on resources of kind "{kind}"')


async def test_list_with_resource_version_and_limit_is_a_plain_list() -> None:
    """What `kubectl get` sends with every list: served whole, no continue token."""
    async with serve_adapter(usage) as adapter:
        response = await adapter.get(f"{RESOURCE}/namespaces/shop/pods?resourceVersion=0&limit=500")
        body = await response.json()
    assert (response.status, body["metadata"], [p["metadata"]["name"] for p in body["items"]]) == (
        200, {}, ["web-0", "web-1"])
