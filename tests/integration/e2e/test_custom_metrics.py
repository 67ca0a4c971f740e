"""custom.metrics.k8s.io through kube-apiserver aggregation (the stand-in) with real kubectl:
every route, both API versions, values checked against the exporter's gauges."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from kubecommon.quantity import Quantity

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]  # incl. stack start

VERSIONS = ("v1beta1", "v1beta2")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MiB = 2**20


def _items(stack: Stack, version: str, path: str) -> list[dict[str, Any]]:
    doc = stack.raw_json(f"/apis/custom.metrics.k8s.io/{version}{path}")
    assert (doc["kind"], doc["apiVersion"], doc["metadata"]) == (
        "MetricValueList", f"custom.metrics.k8s.io/{version}", {})
    for item in doc["items"]:
        _assert_item_shape(item, version)
    return doc["items"]


def _assert_item_shape(item: dict[str, Any], version: str) -> None:
    if version == "v1beta1":
        assert set(item) == {"describedObject", "metricName", "timestamp", "value", "selector"}
    else:
        assert set(item) == {"describedObject", "metric", "timestamp", "value"}
        assert set(item["metric"]) == {"name", "selector"}
    assert RFC3339.match(item["timestamp"])
    stamp = datetime.strptime(item["timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    assert abs(stamp - time.time()) < 60
    assert str(Quantity.parse(item["value"])) == item["value"], "values are canonical quantities"


def _summary(items: list[dict[str, Any]]) -> list[tuple[str, str | None, str, str]]:
    return [(i["describedObject"]["kind"], i["describedObject"].get("namespace"),
             i["describedObject"]["name"], i["value"]) for i in items]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("path", "expected"), [
    pytest.param("/namespaces/shop/pods/web-7d9f8-abcde/app_sessions_active",
                 [("Pod", "shop", "web-7d9f8-abcde", "50")], id="namespaced object"),
    pytest.param("/namespaces/shop/pods/%2A/app_sessions_active?labelSelector=app%3Dweb",
                 [("Pod", "shop", "web-7d9f8-abcde", "50"), ("Pod", "shop", "web-7d9f8-fghij", "30"),
                  ("Pod", "shop", "web-7d9f8-klmno", "20")], id="namespaced * with labelSelector"),
    pytest.param("/namespaces/payments/pods/*/http_requests_in_flight",
                 [("Pod", "payments", "api-66f4c-uvwxy", "1"), ("Pod", "payments", "api-66f4c-zabcd", "1")],
                 id="namespaced * without selector"),
    pytest.param("/nodes/node-a/node_memory_working_set_bytes",
                 [("Node", None, "node-a", str((120 + 100 + 60 + 512) * MiB))], id="cluster-scoped object"),
    pytest.param("/nodes/*/node_memory_working_set_bytes?labelSelector=kubernetes.io%2Fhostname%3Dnode-b",
                 [("Node", None, "node-b", str((110 + 80 + 64 + 512) * MiB))], id="cluster-scoped * with selector"),
    pytest.param("/namespaces/payments/pods/*/app_sessions_active?labelSelector=app+in+%28api%2Cnone%29",
                 [("Pod", "payments", "api-66f4c-uvwxy", "5"), ("Pod", "payments", "api-66f4c-zabcd", "5")],
                 id="set-based labelSelector with + as space"),
])
def test_routes_answer_exact_gauge_values(stack: Stack, version: str, path: str,
                                          expected: list[tuple[str, str | None, str, str]]) -> None:
    assert _summary(_items(stack, version, path)) == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_described_object_carries_kind_and_api_version(stack: Stack, version: str) -> None:
    [pod] = _items(stack, version, "/namespaces/shop/pods/cart-5c6b7-pqrst/app_sessions_active")
    assert pod["describedObject"] == {"kind": "Pod", "namespace": "shop", "name": "cart-5c6b7-pqrst",
                                      "apiVersion": "/v1"}
    [deployment] = _items(stack, version, "/namespaces/shop/deployments.apps/web/http_requests_per_second")
    assert deployment["describedObject"] == {"kind": "Deployment", "namespace": "shop", "name": "web",
                                             "apiVersion": "apps/v1"}


@pytest.mark.parametrize("version", VERSIONS)
def test_group_qualified_wildcard_reads_deployments_from_the_cache(stack: Stack, version: str) -> None:
    items = _items(stack, version, "/namespaces/shop/deployments.apps/*/http_requests_per_second")
    assert [i["describedObject"]["name"] for i in items] == ["cart", "web"]


@pytest.mark.parametrize("version", VERSIONS)
def test_namespace_object_metric(stack: Stack, version: str) -> None:
    [item] = _items(stack, version, "/namespaces/shop/metrics/http_requests_per_second")
    assert item["describedObject"] == {"kind": "Namespace", "name": "shop", "apiVersion": "/v1"}


@pytest.mark.parametrize("version", VERSIONS)
def test_rate_matches_the_same_promql_sent_to_prometheus(stack: Stack, version: str) -> None:
    promql = 'sum(rate(http_requests_total{namespace="shop",service="web"}[1m])) by (service)'
    before = float(stack.prometheus.query(promql)[0]["value"][1])
    [item] = _items(stack, version, "/namespaces/shop/services/web/http_requests_per_second")
    after = float(stack.prometheus.query(promql)[0]["value"][1])
    # a scrape may land between the reads; the adapter's answer lies between them (milli-truncated)
    served = Quantity.parse(item["value"]).as_float()
    assert min(before, after) * 0.95 - 0.001 <= served <= max(before, after) * 1.05


@pytest.mark.parametrize(("version", "selector_field"), [
    pytest.param("v1beta1", lambda item: item["selector"], id="v1beta1 top-level selector"),
    pytest.param("v1beta2", lambda item: item["metric"]["selector"], id="v1beta2 metric.selector"),
])
def test_metric_label_selector_filters_series_and_is_echoed(stack: Stack, version: str,
                                                            selector_field: Any) -> None:
    path = "/namespaces/shop/pods/web-7d9f8-abcde/http_requests_per_second"
    [every] = _items(stack, version, path)
    [posts] = _items(stack, version, path + "?metricLabelSelector=method%3DPOST")
    assert selector_field(every) is None
    assert selector_field(posts) == {"matchLabels": {"method": "POST"}}
    # POSTs are 10 % of the pod's requests
    assert Quantity.parse(posts["value"]).as_float() == pytest.approx(
        Quantity.parse(every["value"]).as_float() * 0.1, rel=0.3)
