"""Discovery through aggregation: the group-version documents the adapter serves, and what kubectl
sees of the four APIServices."""

from __future__ import annotations

import pytest

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]  # incl. stack start


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_custom_metrics_resource_list(stack: Stack, version: str) -> None:
    doc = stack.raw_json(f"/apis/custom.metrics.k8s.io/{version}")
    assert (doc["kind"], doc["groupVersion"]) == ("APIResourceList", f"custom.metrics.k8s.io/{version}")
    scope = {r["name"]: r["namespaced"] for r in doc["resources"]}
    assert scope["pods/app_sessions_active"] is True
    assert scope["deployments.apps/http_requests_per_second"] is True
    assert scope["namespaces/http_requests_per_second"] is False
    assert scope["nodes/node_memory_working_set_bytes"] is False
    assert {(r["kind"], tuple(r["verbs"])) for r in doc["resources"]} == {("MetricValueList", ("get",))}


def test_external_and_resource_lists(stack: Stack) -> None:
    external = stack.raw_json("/apis/external.metrics.k8s.io/v1beta1")
    assert {"queue_messages_ready", "cluster_queue_messages_ready"} <= {r["name"] for r in external["resources"]}
    resource = stack.raw_json("/apis/metrics.k8s.io/v1beta1")
    assert {(r["name"], r["kind"], r["namespaced"]) for r in resource["resources"]} == {
        ("nodes", "NodeMetrics", False), ("pods", "PodMetrics", True)}


def test_kubectl_sees_the_group_versions(stack: Stack) -> None:
    versions = set(stack.kubectl("api-versions").stdout.split())
    assert {"custom.metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta2",
            "external.metrics.k8s.io/v1beta1", "metrics.k8s.io/v1beta1"} <= versions
    group = stack.raw_json("/apis/custom.metrics.k8s.io")
    assert group["preferredVersion"]["version"] == "v1beta2", "versionPriority 200 wins"
