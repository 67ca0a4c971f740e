"""Conformance checkers for the custom and external metrics APIs' answers, one observation per case.

A request goes through the real path parser, service and renderer over map-backed fakes, and
everything a client or Prometheus could see of it is observed, whatever the case's family
(`custom.errors`, `custom.response_json`, `external.errors`, `external.response_json`):

- the answer: `status` (the HTTP code), `success` (a 2xx), and for an error `reason`, `message`,
  `details`, `error` (its message); for a success `body`, `items`, `values` (the items' value
  strings) and, for custom metrics, `items_described_object_names`;
- what was asked of Prometheus: `queries_issued_unordered`, and `query` when there was one query.

So a case may state any of these fields in any of the four families (FIELDS.md); a field it
states that the answer does not have (e.g. `body` of an error) is a mismatch, not ignored.

Non-goals: the other families (adapter_services, adapter_rules, adapter_registry, ...).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from adapter.discovery.registry import build_registry
from adapter.prometheus.fake import FakePrometheus
from hack.conformance.adapter_compare import Result, judge
from hack.conformance.adapter_registry import series_from_rule
from hack.conformance.adapter_rules import compile_case
from hack.conformance.adapter_services import (
    _Always,
    _custom_call,
    _decoded,
    _FailingList,
    _parse_http,
    _pods,
    _sample,
    _status,
)
from kubecommon import status

__all__ = ["CHECKERS", "check_custom", "check_external"]

_DEFAULT_EXTERNAL_RULE = {"seriesQuery": "queue_depth", "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>})",
                          "resources": {"namespaced": False}}


def _prometheus(data: Mapping[str, Any]) -> FakePrometheus:
    """Prometheus answering every query with the case's vector, result or HTTP failure."""
    prom = FakePrometheus()
    if "prometheus_http_status" in data:
        from adapter.prometheus import errors as prom_errors
        from adapter.prometheus.client import PrometheusClient

        try:  # the error the real client raises for that answer (it maps status and body to a type)
            PrometheusClient.raise_for_document("/api/v1/query", int(data["prometheus_http_status"]),
                                                 data.get("prometheus_body", ""))
        except prom_errors.PrometheusError as err:
            prom.queries = _Always(err)
    elif "prometheus_vector" in data:
        prom.queries = _Always([_sample(i) for i in data["prometheus_vector"]])
    elif "prometheus_result" in data:
        prom.queries = _Always(_decoded(data["prometheus_result"]))
    return prom


def _observed(answer: dict[str, Any] | status.StatusError, prom: FakePrometheus) -> dict[str, Any]:
    if isinstance(answer, status.StatusError):
        got: dict[str, Any] = {**_status(answer), "success": False, "error": answer.message}
    else:
        got = {"code": 200, "success": True, **answer}
    issued = [query for query, _ in prom.query_calls]
    got["queries_issued_unordered"] = issued
    if len(issued) == 1:
        got["query"] = issued[0]
    return got


def _wanted(expected: Mapping[str, Any]) -> dict[str, Any]:
    """`expected` in the observation's terms: `status` is the HTTP code; item timestamps (the
    adapter's clock at response time, upstream's too) are not compared. Every other stated field
    is compared (the runner has refused those the family is not observed as, adapter_observed):
    one the answer does not carry, such as an e2e case's `pod_metrics` for a custom request, FAILs."""
    want: dict[str, Any] = json.loads(json.dumps({k: v for k, v in expected.items() if not k.startswith("_")}))
    if "status" in want:
        want["code"] = want.pop("status")
    for item in (want.get("body") or {}).get("items", []) if isinstance(want.get("body"), dict) else []:
        if isinstance(item, dict) and "timestamp" in item:
            item["timestamp"] = "<ts>"
    return want


def _kube_objects(data: Mapping[str, Any], namespace: str) -> Any:
    if data.get("kube_list_error"):
        return _FailingList(str(data["kube_list_error"]))
    names = data.get("kube_list_result_names")
    if names is None:
        labels = [i.get("metric", i.get("labels", {})) for i in data.get("prometheus_vector") or ()]
        names = [n for n in (lbl.get("kubernetes_pod_name") or lbl.get("pod") for lbl in labels) if n] or ["web-1"]
    return _pods(namespace, list(names))


def check_custom(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.server import render_metrics

    data = case["input"]
    prom = _prometheus(data)
    path, _ = _parse_http(data["http"])
    namespace = path.split("/")[5] if "/namespaces/" in path else ""
    answer: dict[str, Any] | status.StatusError
    try:
        result, version = _custom_call(case, prom, _kube_objects(data, namespace))
    except status.StatusError as err:
        answer = err
    else:
        body = render_metrics.render_custom(result, version)
        for item in body["items"]:
            item["timestamp"] = "<ts>"
        answer = {"body": body, "items": body["items"], "values": [i["value"] for i in body["items"]],
                  "items_described_object_names": [i["describedObject"]["name"] for i in body["items"]]}
    return judge(_wanted(case["expected"]), _observed(answer, prom))


def check_external(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.server import render_metrics
    from adapter.server.handlers.external_metrics import parse_path
    from adapter.services.external_metrics import ExternalMetricsService

    data = case["input"]
    compiled = compile_case({"externalRules": [case.get("rule", _DEFAULT_EXTERNAL_RULE)]})
    registry = build_registry(compiled, {compiled.external[0].series_query: [series_from_rule(compiled.external[0])]})
    prom = _prometheus(data if any(k in data for k in ("prometheus_http_status", "prometheus_vector",
                                                        "prometheus_result")) else {"prometheus_result": {}})
    path, params = _parse_http(data.get("http", "GET /apis/external.metrics.k8s.io/v1beta1/namespaces/default/"
                                                 "queue_depth"))
    answer: dict[str, Any] | status.StatusError
    try:
        request = parse_path(path.split("/", 4)[4], params.get("labelSelector"))
        got = asyncio.run(ExternalMetricsService(registry=lambda: registry, prometheus=prom).get(request))
    except status.StatusError as err:
        answer = err
    else:
        body = render_metrics.render_external(got)
        for item in body["items"]:
            item["timestamp"] = "<ts>"
        answer = {"body": body, "items": body["items"], "values": [i["value"] for i in body["items"]]}
    return judge(_wanted(case["expected"]), _observed(answer, prom))


def check_e2e(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    """An end-to-end observation: the answer the case's request (`input.http`) gets from the API
    group it names, through the same parser, service and renderer the server uses: the custom or
    external metrics answer, or metrics.k8s.io's node or pod list (`setup.config_fixture`)."""
    from hack.conformance.adapter_services import check_resource_nodes, check_resource_pods

    path, _ = _parse_http(str(case["input"].get("http", "")))
    parts = path.strip("/").split("/")
    group = parts[1] if len(parts) > 1 and parts[0] == "apis" else ""
    if group == "custom.metrics.k8s.io":
        return check_custom(case, fixtures)
    if group == "external.metrics.k8s.io":
        return check_external(case, fixtures)
    if group == "metrics.k8s.io" and parts[-1] in ("nodes", "pods"):
        return (check_resource_nodes if parts[-1] == "nodes" else check_resource_pods)(case, fixtures)
    return Result(False, case["expected"], f"an e2e case's `http` names a request to one of the adapter's APIs "
                                           f"(custom, external metrics; metrics.k8s.io nodes or pods), got {path!r}")


CHECKERS = {
    "e2e": check_e2e,
    "custom.errors": check_custom,
    "custom.response_json": check_custom,
    "external.errors": check_external,
    "external.response_json": check_external,
}
