"""Hostile request text through the real HTTP API: the exact PromQL the adapter sends Prometheus.

A namespace, an object name (from the URL or the object cache), a metric selector's keys, values
and operators: none of them may change the query's structure. Label values arrive Go-quoted, names
inside `=~` RE2-escaped, and a selector PromQL cannot express is the client's 400, sent nowhere.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from adapter.discovery.registry import build_registry
from tests.unit.adapter.api_harness import CUSTOM, EXTERNAL, RESOURCE, prom_json, serve_adapter, vector
from tests.unit.adapter.services.conftest import SERIES, caches, compiled, node, pod

EVIL = 'a"}or vector(1)#'
EVIL_URL = "a%22%7Dor%20vector(1)%23"
WEB0 = f"{CUSTOM}/namespaces/shop/pods/web-0/http_requests_per_second"
QUEUE = f"{EXTERNAL}/namespaces/shop/queue_messages_ready"


def _objects() -> Any:
    return caches(pod("web-0", app="web"), pod("a.b", app="web"), pod("a|b", app="web"),
                  nodes=[node("n1.x"), node('q"}or')])


# (id, path, query parameters, expected status, the PromQL queries sent)
ROWS: list[tuple[str, str, dict[str, str], int, list[str]]] = [
    ("namespace from the URL is quoted", f"{CUSTOM}/namespaces/{EVIL_URL}/pods/web-0/http_requests_per_second",
     {}, 404, ['sum(rate(http_requests_total{namespace="a\\"}or vector(1)#",pod="web-0"}[1m])) by (pod)']),
    ("object name from the URL is quoted", f"{CUSTOM}/namespaces/shop/pods/{EVIL_URL}/http_requests_per_second",
     {}, 404, ['sum(rate(http_requests_total{namespace="shop",pod="a\\"}or vector(1)#"}[1m])) by (pod)']),
    ("names from the cache are regex-escaped", f"{CUSTOM}/namespaces/shop/pods/*/http_requests_per_second",
     {}, 200, ['sum(rate(http_requests_total{namespace="shop",pod=~"a\\\\.b|a\\\\|b|web-0"}[1m])) by (pod)']),
    ("node names in resource metrics", f"{RESOURCE}/nodes", {}, 200,
     ['sum(rate(node_cpu_usage_seconds_total{node=~"n1\\\\.x|q\\"\\\\}or"}[1m])) by (node)',
      'sum(node_memory_working_set_bytes{node=~"n1\\\\.x|q\\"\\\\}or"}) by (node)']),
    ("selector key that is no label name", WEB0, {"metricLabelSelector": f"{EVIL}=x"}, 400, []),
    ("selector exists key that is no label name", QUEUE, {"labelSelector": f"!{EVIL}"}, 400, []),
    ("qualified selector key", WEB0, {"metricLabelSelector": "app.kubernetes.io/name=x"}, 400, []),
    ("selector value with a quote", WEB0, {"metricLabelSelector": 'k=a"b'}, 400, []),
    ("gt selector", WEB0, {"metricLabelSelector": "k>1"}, 400, []),
    ("unparsable selector", WEB0, {"metricLabelSelector": "k in (a"}, 400, []),
    ("in () is the empty value", WEB0, {"metricLabelSelector": "k in ()"}, 404,
     ['sum(rate(http_requests_total{k=~"",namespace="shop",pod="web-0"}[1m])) by (pod)']),
    ("exists, does not exist, empty values", WEB0, {"metricLabelSelector": "k,!j,e=,n!="}, 404,
     ['sum(rate(http_requests_total{e="",j="",k!="",n!="",namespace="shop",pod="web-0"}[1m])) by (pod)']),
    ("set values escaped and sorted", QUEUE, {"labelSelector": "queue in (c,a.b,),x notin (y.z)"}, 200,
     ['sum(queue_messages_ready{queue=~"|a\\\\.b|c",x!~"y\\\\.z",namespace="shop"}) by (queue)']),
    ("external namespace is quoted", f"{EXTERNAL}/namespaces/{EVIL_URL}/queue_messages_ready", {}, 200,
     ['sum(queue_messages_ready{namespace="a\\"}or vector(1)#"}) by (queue)']),
]


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("path", "params", "status", "queries"), [pytest.param(*row[1:], id=row[0]) for row in ROWS])
async def test_request_text_never_changes_the_query_structure(path: str, params: dict[str, str], status: int,
                                                              queries: list[str]) -> None:
    sent: list[str] = []

    async def prometheus(request: web.Request) -> web.StreamResponse:
        form = await request.post() if request.method == "POST" else request.query
        sent.append(str(form["query"]))
        return prom_json(vector())

    async with serve_adapter(prometheus, objects=_objects()) as adapter:
        response = await adapter.get(path, params=params)
        body = await response.json()
    assert response.status == status, body
    assert sent == queries


@pytest.mark.timeout(10)
async def test_a_discovered_series_name_that_is_no_metric_name_is_never_sent() -> None:
    """Prometheus 3 accepts UTF-8 metric names, so a tenant's exporter can publish a series named
    like PromQL; the rule's broad seriesQuery discovers it and a request may name it. Discovery
    leaves it out (the render refuses it too, `test_query`): a 404, and nothing sent."""
    evil = 'queue_messages_ready{namespace="other"} or queue_messages_ready'
    series = {**SERIES, 'queue_messages_ready{namespace!="",queue!=""}': [
        {"__name__": evil, "namespace": "shop", "queue": "orders"}]}
    sent: list[str] = []

    async def prometheus(request: web.Request) -> web.StreamResponse:
        sent.append(str((await request.post() if request.method == "POST" else request.query)["query"]))
        return prom_json(vector())

    async with serve_adapter(prometheus, snapshot=build_registry(compiled(), series)) as adapter:
        response = await adapter.get(f"{EXTERNAL}/namespaces/shop/{evil}")
        body = await response.json()
    assert (response.status, body["reason"]) == (404, "NotFound")
    assert sent == []
