"""Conformance checkers that drive the metrics services, request-path parsing and value
conversion (written by other parts of the adapter) with their map-backed fakes.

Each takes (case, fixtures) and returns a `Result`; see adapter_runner for the contract.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from adapter.discovery.registry import build_registry
from kubecommon.kube.fake import FakeObjectCaches
from kubecommon.kube.objects import KubeObject
from adapter.prometheus.api import Sample
from adapter.prometheus.fake import FakePrometheus
from adapter.rules.compile import CompiledConfig
from hack.conformance.adapter_compare import Result, judge
from hack.conformance.adapter_registry import series_from_rule
from hack.conformance.adapter_rules import compile_case
from kubecommon import status
from kubecommon.quantity import format_milli, milli_of_finite
from adapter.services import values

_DEFAULT_RULE = {  # the walkthrough rule, for error cases that name a metric but give no rule
    "seriesQuery": 'http_requests_total{namespace!="",pod!=""}',
    "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
    "name": {"matches": "^(.*)_total$"},
    "metricsQuery": "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
}


def _value(raw: Any) -> float:
    return float(raw) if not isinstance(raw, str) else float(raw.replace("Inf", "inf"))


def check_quantity(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.services import resource_metrics

    from hack.conformance.adapter_rules import judge_outcome

    data = case["input"]
    api = data["api_path"]
    if api not in ("custom", "external", "resource.cpu", "resource.memory"):
        raise ValueError(f"unknown api_path {api!r} (custom, external, resource.cpu, resource.memory)")
    try:
        value = _value(data["prometheus_value"])
    except ValueError as err:  # Prometheus' answer decoding refuses it the same way
        return judge_outcome(case["expected"], {"success": False, "error": f"not a sample value: {err}"})
    if api == "resource.cpu":
        got = str(resource_metrics.cpu_quantity(value))
    elif api == "resource.memory":
        got = str(resource_metrics.memory_quantity(value))
    else:
        reason = values.unusable(value)
        if reason is not None:  # the custom and external answers leave such a sample out
            return judge_outcome(case["expected"], {"success": False, "error": f"left out: {values.describe(reason)}"})
        # what the custom and external answers really carry: milli-units, DecimalSI (`format`
        # only describes it; these APIs never write BinarySI)
        got = format_milli(milli_of_finite(value))
    return judge_outcome(case["expected"], {"success": True, "quantity": got, "values": [got]})


def _parse_http(text: str) -> tuple[str, dict[str, str]]:
    target = text.partition(" ")[2]
    parts = urlsplit(target)
    return unquote(parts.path), {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}


def _sample(item: Mapping[str, Any]) -> Sample:
    labels = item.get("labels", item.get("metric", {}))
    ts = item.get("timestamp_ms", 0) / 1000.0
    return Sample(labels=dict(labels), value=_value(item["value"]), timestamp=ts)


def _status(err: status.StatusError) -> dict[str, Any]:
    body = err.to_dict()
    return {k: body[k] for k in ("code", "reason", "message", "details") if k in body}


def _custom_setup(case: Mapping[str, Any]) -> tuple[CompiledConfig, Any]:
    compiled = compile_case({"rules": [case.get("rule", _DEFAULT_RULE)]})
    registry = build_registry(compiled, {compiled.custom[0].series_query: [series_from_rule(compiled.custom[0])]})
    return compiled, registry


def _custom_call(case: Mapping[str, Any], prom: FakePrometheus, objects: FakeObjectCaches) -> Any:
    from adapter.server.handlers.custom_metrics import parse_path
    from adapter.services.custom_metrics import CustomMetricsService

    _, registry = _custom_setup(case)
    path, params = _parse_http(case["input"]["http"])
    request = parse_path(path.split("/", 4)[4], params.get("labelSelector"), params.get("metricLabelSelector"))
    service = CustomMetricsService(registry=lambda: registry, prometheus=prom, objects=objects)
    return asyncio.run(service.get(request)), path.split("/")[3]


def _pods(namespace: str, names: list[str]) -> FakeObjectCaches:
    pods = [KubeObject(name=n, namespace=namespace, phase="Running", kind="Pod", api_version="v1") for n in names]
    return FakeObjectCaches({("", "pods"): pods})


class _FailingList(FakeObjectCaches):
    """Object caches whose list fails as the case says: "forbidden" (RBAC) is the API server's 403
    for that list, anything else its 500."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error

    async def reader(self, resource: Any) -> Any:
        from kubecommon.kube.errors import KubeAPIError

        plural = f"{resource.resource}.{resource.group}" if resource.group else resource.resource
        if "forbidden" in self.error.lower():
            failure: status.StatusError = status.Forbidden(
                f'{plural} is forbidden: User "system:serviceaccount:monitoring:prom-autoscaler" cannot list '
                f'resource "{resource.resource}" in API group "{resource.group}" ({self.error})')
        else:
            failure = status.InternalError.wrapping(self.error)
        raise KubeAPIError(failure, method="GET", path=f"/{plural}")


class _Always(dict):  # type: ignore[type-arg]
    """A FakePrometheus answer table giving every query the same answer (samples or an error)."""

    def __init__(self, answer: list[Sample] | Exception) -> None:
        super().__init__()
        self.answer = answer

    def get(self, key: Any, default: Any = None) -> Any:
        return self.answer


def _decoded(result: Mapping[str, Any]) -> Any:
    """What the real Prometheus client hands the service for a /api/v1/query `data` object: the
    success document's bytes through its own answer reading (adapter.prometheus.answers), so a
    scalar is one label-less sample and any other result type the error the adapter really raises."""
    import orjson

    from adapter.prometheus import errors as prom_errors
    from adapter.prometheus.answers import query_samples

    data = {"resultType": result.get("resultType", "vector"), "result": result.get("result", [])}
    try:
        return query_samples(orjson.dumps({"status": "success", "data": data}), "/api/v1/query", lambda _: data)
    except prom_errors.PrometheusError as err:
        return err


def _vector_value(item: Mapping[str, Any]) -> Any:
    value = item.get("value")
    return value[1] if isinstance(value, list) else value


def check_routing(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.server.handlers.custom_metrics import parse_path

    from hack.conformance.adapter_rules import judge_outcome

    path, params = _parse_http(case["input"]["http"])
    try:  # the path below /apis/<group>/<version>/
        request = parse_path((path.split("/", 4)[4:] or [""])[0], params.get("labelSelector"),
                             params.get("metricLabelSelector"))
    except status.StatusError as err:  # the answer the request gets: a Status, and no route
        refused = _status(err)
        return judge_outcome(case["expected"], {"success": False, "error": err.message, "status": refused["code"],
                                                "reason": refused.get("reason"), "message": refused.get("message")})
    got: dict[str, Any] = {"success": True, "op": "by_selector" if request.name is None else "by_name",
                           "group_resource": str(request.resource), "namespace": request.namespace or "",
                           "namespaced": request.namespace is not None}
    if request.name is None:
        got["object_selector"] = str(request.label_selector)
    else:
        got["name"] = request.name
    got["metric"] = request.metric
    got["metric_selector"] = str(request.metric_selector)
    return judge_outcome(case["expected"], got)


def _resource_service(case: Mapping[str, Any], fixtures: Mapping[str, Any], prom: FakePrometheus,
                      objects: FakeObjectCaches) -> Any:
    from adapter.services.resource_metrics import ResourceMetricsService

    fixture = case["setup"]["config_fixture"].split(" ")[0]
    compiled = compile_case({"resourceRules": fixtures[fixture]["resourceRules"]})
    assert compiled.resource is not None
    return ResourceMetricsService(rules=compiled.resource, prometheus=prom, objects=objects, clock=lambda: 0.0)


def check_resource_pods(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.services.resource_metrics import ResourceQuery

    data, expected = case["input"], case["expected"]
    prom = _resource_prometheus(data)
    pods = [KubeObject(name=p["name"], namespace=p["namespace"], phase="Running") for p in data["pods"]]
    caches = FakeObjectCaches({("", "pods"): pods})
    service = _resource_service(case, fixtures, prom, caches)
    try:
        result = asyncio.run(service.list_pods(None, ResourceQuery()))
    except status.StatusError as err:
        return _resource_failed(expected, err, prom)
    got = sorted((_pod_view(p) for p in result.items), key=lambda p: (p["namespace"], p["name"]))
    issued = sorted({q for q, _ in prom.query_calls})
    return judge(_sorted_metrics(_as_answer(expected), ("pod_metrics_in_input_order", "pod_metrics")),
                 {"code": 200, "success": True, "queries_issued_unordered": issued,
                  "pod_metrics_in_input_order": got, "pod_metrics": got,
                  "items_described_object_names": [p["name"] for p in got]})


def _resource_prometheus(data: Mapping[str, Any]) -> FakePrometheus:
    """Prometheus answering the case's exact queries, or failing every one with the case's
    `prometheus_http_status` (the error the real client raises for that answer)."""
    if "prometheus_http_status" in data:
        from adapter.prometheus import errors as prom_errors
        from adapter.prometheus.client import PrometheusClient

        try:
            PrometheusClient.raise_for_document("/api/v1/query", int(data["prometheus_http_status"]),
                                                 data.get("prometheus_body", ""))
        except prom_errors.PrometheusError as err:
            return FakePrometheus(queries=_Always(err))
    return FakePrometheus(queries={q: [_sample(s) for s in v]
                                   for q, v in (data.get("prometheus_responses") or {}).items()})


def _as_answer(expected: Mapping[str, Any]) -> dict[str, Any]:
    """`expected` in the observation's terms: `status` is the HTTP code."""
    want = dict(expected)
    if "status" in want:
        want["code"] = want.pop("status")
    return want


def _resource_failed(expected: Mapping[str, Any], err: status.StatusError, prom: FakePrometheus) -> Result:
    got = {**_status(err), "success": False, "error": err.message,
           "queries_issued_unordered": sorted({q for q, _ in prom.query_calls})}
    return judge(_as_answer(expected), got)


def _sorted_metrics(expected: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """`expected` with its object lists in our answer's order (namespace, name; containers by
    name): the order of the input is not what this runner holds the adapter to."""
    want = dict(expected)
    for field in fields:
        if isinstance(want.get(field), list):
            items = [{**p, "containers_unordered": sorted(p["containers_unordered"], key=lambda c: c["name"])}
                     if isinstance(p, dict) and isinstance(p.get("containers_unordered"), list) else p
                     for p in want[field]]
            want[field] = sorted(items, key=lambda p: (str(p.get("namespace", "")), str(p.get("name", "")))
                                 if isinstance(p, dict) else ("", str(p)))
    return want


def _window(seconds: float) -> str:
    from kubecommon.gotime import format_duration

    return format_duration(seconds)


def _pod_view(pod: Any) -> dict[str, Any]:
    return {"namespace": pod.namespace, "name": pod.name, "timestamp_ms": round(pod.timestamp * 1000),
            "window": _window(pod.window_seconds),
            "containers_unordered": sorted(({"name": c.name, "usage": {k: str(v) for k, v in c.usage.items()}}
                                            for c in pod.containers), key=lambda c: c["name"])}


def check_resource_nodes(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.services.resource_metrics import ResourceQuery

    data, expected = case["input"], case["expected"]
    prom = _resource_prometheus(data)
    caches = FakeObjectCaches({("", "nodes"): [KubeObject(name=n) for n in data["nodes"]]})
    service = _resource_service(case, fixtures, prom, caches)
    try:
        result = asyncio.run(service.list_nodes(ResourceQuery()))
    except status.StatusError as err:
        return _resource_failed(expected, err, prom)
    got = sorted(({"name": n.name, "timestamp_ms": round(n.timestamp * 1000), "window": _window(n.window_seconds),
                   "usage": {k: str(v) for k, v in n.usage.items()}} for n in result.items), key=lambda n: n["name"])
    issued = sorted({q for q, _ in prom.query_calls})
    return judge(_sorted_metrics(_as_answer(expected), ("node_metrics_in_input_order", "node_metrics")),
                 {"code": 200, "success": True, "queries_issued_unordered": issued, "node_metrics_in_input_order": got,
                  "node_metrics": got, "items_described_object_names": [n["name"] for n in got]})


CHECKERS = {
    "quantity_conversion": check_quantity,
    "http.routing": check_routing,
    "resource_metrics.pods": check_resource_pods,
    "resource_metrics.nodes": check_resource_nodes,
}
