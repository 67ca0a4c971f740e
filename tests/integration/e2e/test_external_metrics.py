"""external.metrics.k8s.io through aggregation: namespace matcher, `namespaced: false`, selectors."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]  # incl. stack start


def _items(stack: Stack, path: str) -> list[tuple[dict[str, str], str]]:
    doc = stack.raw_json(f"/apis/external.metrics.k8s.io/v1beta1{path}")
    assert (doc["kind"], doc["apiVersion"], doc["metadata"]) == (
        "ExternalMetricValueList", "external.metrics.k8s.io/v1beta1", {})
    for item in doc["items"]:
        assert set(item) == {"metricName", "metricLabels", "timestamp", "value"}
    return [(item["metricLabels"], item["value"]) for item in doc["items"]]


def _key(pair: tuple[dict[str, str], str]) -> Any:
    return sorted(pair[0].items())


@pytest.mark.parametrize(("path", "expected"), [
    pytest.param("/namespaces/shop/queue_messages_ready",
                 [({"queue": "emails"}, "7"), ({"queue": "orders"}, "42")], id="namespaced rule"),
    pytest.param("/namespaces/shop/queue_messages_ready?labelSelector=queue%3Dorders",
                 [({"queue": "orders"}, "42")], id="labelSelector selects series"),
    pytest.param("/namespaces/payments/queue_messages_ready",
                 [({"queue": "settlements"}, "3")], id="other namespace"),
    pytest.param("/namespaces/default/queue_messages_ready", [], id="no series is an empty list"),
    pytest.param("/namespaces/default/cluster_queue_messages_ready?labelSelector=queue+in+%28orders%2Csettlements%29",
                 [({"namespace": "payments", "queue": "settlements"}, "3"),
                  ({"namespace": "shop", "queue": "orders"}, "42")], id="namespaced false ignores the namespace"),
    pytest.param("/namespaces/default/cluster_queue_messages_ready?labelSelector=queue%21%3Dorders%2Cnamespace%3Dshop",
                 [({"namespace": "shop", "queue": "emails"}, "7")], id="!= and = together"),
])
def test_external_values(stack: Stack, path: str, expected: list[tuple[dict[str, str], str]]) -> None:
    assert sorted(_items(stack, path), key=_key) == sorted(expected, key=_key)
