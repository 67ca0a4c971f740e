"""Every Prometheus answer is checked against its result type before use, through the HTTP API.

Malformed answers are a 500 Status naming the problem (never a 200 with garbage, never a crash);
NaN, ±Inf and out-of-range values leave their item out of a list (counted in /metrics) and make a
single-object request a 404 that says why; an answer over the byte limit is refused naming it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web

from tests.unit.adapter.api_harness import CUSTOM, EXTERNAL, RESOURCE, T, item, prom_json, serve_adapter, vector

LIST = f"{CUSTOM}/namespaces/shop/pods/*/http_requests_per_second"
ONE = f"{CUSTOM}/namespaces/shop/pods/web-0/http_requests_per_second"
QUEUE = f"{EXTERNAL}/namespaces/shop/queue_messages_ready"


def answering(body: Any) -> Any:
    async def handler(_: web.Request) -> web.StreamResponse:
        return prom_json(body)
    return handler


def success(data: Any) -> dict[str, Any]:
    return {"status": "success", "data": data}


MALFORMED = [
    ("value is a bare string", vector({"metric": {"pod": "web-0"}, "value": "1"}),
     'sample 0 of the vector: value is not a [time, "number"] pair'),
    ("value pair of three", vector({"metric": {"pod": "web-0"}, "value": [T, "1", "2"]}),
     'sample 0 of the vector: value is not a [time, "number"] pair'),
    ("value is a JSON number", vector(item(1.5, pod="web-0")),
     'sample 0 of the vector: the value is a number, not a "number" string'),
    ("value is not a number", vector(item("lots", pod="web-0")),
     "sample 0 of the vector: the value is not a number"),
    ("time is a string", vector(item("1", ts="noon", pod="web-0")),
     "sample 0 of the vector: the time is a string, not a number"),
    ("value missing", vector({"metric": {"pod": "web-0"}}),
     'sample 0 of the vector: value is not a [time, "number"] pair'),
    ("label value is a number", vector(item("1", pod="web-0"), item("1", pod=7)),
     "sample 1 of the vector: label 'pod' is a number, not a string"),
    ("label value is null", vector(item("1", pod=None)),
     "sample 0 of the vector: label 'pod' is a null, not a string"),
    ("label value is an object", vector(item("1", pod={"name": "web-0"})),
     "sample 0 of the vector: label 'pod' is a object, not a string"),
    ("metric missing", vector({"value": [T, "1"]}), "sample 0 of the vector has no label object"),
    ("sample is a list", vector([T, "1"]), "sample 0 of the vector has no label object"),
    ("result is an object", success({"resultType": "vector", "result": {"pod": "web-0"}}),
     "the vector result is not a list"),
    ("data is a list", success([]), "the answer's data is not an object"),
    ("matrix result", success({"resultType": "matrix", "result": []}),
     "unexpected query result type 'matrix' (want vector or scalar)"),
    ("string result", success({"resultType": "string", "result": [T, "x"]}),
     "unexpected query result type 'string' (want vector or scalar)"),
    ("no result type", success({"result": []}), "unexpected query result type 'NoneType' (want vector or scalar)"),
]


@pytest.mark.timeout(5)
@pytest.mark.parametrize(("body", "problem"), [pytest.param(*row[1:], id=row[0]) for row in MALFORMED])
@pytest.mark.parametrize("path", [pytest.param(LIST, id="custom list"), pytest.param(ONE, id="custom object"),
                                  pytest.param(QUEUE, id="external")])
async def test_a_malformed_answer_is_a_500_naming_the_problem(body: Any, problem: str, path: str) -> None:
    async with serve_adapter(answering(body)) as adapter:
        response = await adapter.get(path)
        status = await response.json()
    assert (response.status, status["reason"]) == (500, "InternalError"), status
    assert status["message"] == f"Internal error occurred: unable to fetch metrics: {problem}"


@pytest.mark.timeout(5)
@pytest.mark.parametrize(("bad", "reason"), [
    pytest.param("NaN", "nan", id="NaN"), pytest.param("+Inf", "inf", id="+Inf"),
    pytest.param("-Inf", "inf", id="-Inf"),
])
async def test_an_unusable_value_leaves_its_item_out_and_is_counted(bad: str, reason: str) -> None:
    answer = vector(item("1.5", pod="web-0"), item(bad, pod="web-1"))
    async with serve_adapter(answering(answer)) as adapter:
        listed = await (await adapter.get(LIST)).json()
        assert [(i["describedObject"]["name"], i["value"]) for i in listed["items"]] == [("web-0", "1500m")]
        external = await (await adapter.get(QUEUE)).json()
        assert [i["value"] for i in external["items"]] == ["1500m"]
        single = await adapter.get(f"{CUSTOM}/namespaces/shop/pods/web-1/http_requests_per_second")
        assert single.status == 404
        assert (await single.json())["message"].startswith(
            "the server could not find the metric http_requests_per_second for pods web-1: its value in Prometheus is ")
        metrics = await (await adapter.get("/metrics")).text()
    for api, count in (("custom", 2.0), ("external", 1.0)):
        assert f'prom_autoscaler_adapter_dropped_samples_total{{api="{api}",reason="{reason}"}} {count}' in metrics


@pytest.mark.timeout(5)
async def test_a_value_beyond_int64_milli_units_is_served_in_exponent_form_not_clamped() -> None:
    answer = vector(item("2e16", pod="web-0"), item("1e300", pod="web-1"))
    async with serve_adapter(answering(answer)) as adapter:
        listed = await (await adapter.get(LIST)).json()
        external = await (await adapter.get(QUEUE)).json()
    assert [i["value"] for i in listed["items"]] == ["20e15", "1e300"]
    assert [i["value"] for i in external["items"]] == ["20e15", "1e300"]


def resource_answer(bad: str) -> Any:
    async def handler(request: web.Request) -> web.StreamResponse:
        query = (await request.post()).get("query") or request.query.get("query", "")
        by_node = "node" in str(query) and "container" not in str(query)
        if by_node:
            return prom_json(vector(item("1", node="n1"), item(bad, node="n2")))
        return prom_json(vector(item("0.5", pod="web-0", container="app"), item(bad, pod="web-1", container="app")))
    return handler


@pytest.mark.timeout(5)
@pytest.mark.parametrize("bad", ["NaN", "-5"])
async def test_a_node_with_a_nan_or_negative_sample_is_served_with_that_usage_at_0_as_upstream(bad: str) -> None:
    """`kubectl top nodes` keeps listing the node, as with prometheus-adapter (the HPA reads no
    node metrics); a pod with such a sample is left out (half-measured-pod-left-out)."""
    async def handler(request: web.Request) -> web.StreamResponse:
        query = str((await request.post()).get("query") or request.query.get("query", ""))
        if "node" in query and "container" not in query:
            usage = bad if "cpu" in query else "1"
            return prom_json(vector(item("1", node="n1"), item(usage, node="n2")))
        return prom_json(vector(item("0.5", pod="web-0", container="app")))

    async with serve_adapter(handler) as adapter:
        nodes = await (await adapter.get(f"{RESOURCE}/nodes")).json()
        node = await adapter.get(f"{RESOURCE}/nodes/n2")
        one = await node.json()
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["n1", "n2"]
    assert (node.status, one["usage"]) == (200, {"cpu": "0", "memory": "1"})


@pytest.mark.timeout(5)
@pytest.mark.parametrize("bad", ["+Inf", "-Inf"])
async def test_resource_metrics_leave_out_unmeasurable_pods_and_nodes_instead_of_failing_the_list(bad: str) -> None:
    async with serve_adapter(resource_answer(bad)) as adapter:
        pods = await adapter.get(f"{RESOURCE}/namespaces/shop/pods")
        assert pods.status == 200, await pods.text()
        assert [p["metadata"]["name"] for p in (await pods.json())["items"]] == ["web-0"]
        nodes = await (await adapter.get(f"{RESOURCE}/nodes")).json()
        assert [n["metadata"]["name"] for n in nodes["items"]] == ["n1"]
        one = await adapter.get(f"{RESOURCE}/namespaces/shop/pods/web-1")
        assert one.status == 404
        assert "its value in Prometheus is" in (await one.json())["message"]
        node = await adapter.get(f"{RESOURCE}/nodes/n2")
        assert node.status == 404 and "its value in Prometheus is" in (await node.json())["message"]


@pytest.mark.timeout(10)
async def test_an_answer_over_the_byte_limit_is_refused_naming_the_limit() -> None:
    big = vector(*[item("1", pod=f"web-{i}") for i in range(20_000)])  # ~1 MB

    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(json.dumps(big).encode())
        return response

    for source in (chunked, answering(big)):  # streamed, and with a Content-Length
        async with serve_adapter(source, max_answer_bytes=64 * 1024) as adapter:
            response = await adapter.get(LIST)
            status = await response.json()
        assert (response.status, status["reason"]) == (500, "InternalError")
        assert status["message"] == ("Internal error occurred: unable to fetch metrics: Prometheus answered more "
                                     "than 64 KiB for one query (--prometheus-max-answer-bytes); narrow the "
                                     "rule's query or raise the limit")
