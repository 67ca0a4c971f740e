"""The controller's metrics client on the real path: the API-server stand-in's aggregation layer
proxying to this project's adapter, which queries a real Prometheus scraping the sample exporter.

What a user relies on: an autoscaler's Pods, Object, External and Resource metrics come back with
the values the workload exports (milli-units), the custom metrics version is the one discovery
prefers (v1beta2), and a metric nobody serves is a failure in upstream's words, not a value.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from controller.algorithm.spec import ExternalSamples, FetchFailure, ObjectRef, ObjectSample, PodSamples, SourceType
from controller.metrics.report import FetchOutcome
from controller.metrics.rest import AggregatedMetricsSource
from controller.metrics.source import MetricQuery
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import load_kube_config
from kubecommon.kube.resources import ResourceResolver
from tests.integration.e2e.conftest import Stack, stack, stacks  # noqa: F401 (the stack fixtures)

# The controller's metrics client reads the aggregated APIs, whatever backend the adapter queries
# (tests/integration/e2e covers the adapter on both): one backend here keeps the suite's time down.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(120),
              pytest.mark.parametrize("stack", ["prometheus"], indirect=True)]  # incl. stack start

MiB = 2**20
WEB = ("web-7d9f8-abcde", "web-7d9f8-fghij", "web-7d9f8-klmno")


@pytest.fixture
async def source(stack: Stack) -> AsyncIterator[tuple[AggregatedMetricsSource, list[tuple[str, FetchOutcome]]]]:  # noqa: F811
    client = KubeClient(load_kube_config(stack.standin.kubeconfig), timeout=15.0)
    await client.start()
    seen: list[tuple[str, FetchOutcome]] = []
    yield (AggregatedMetricsSource(client, ResourceResolver(client), timeout=15.0,
                                   observer=lambda group, outcome, _: seen.append((group, outcome))), seen)
    await client.close()


def _fresh(timestamp: float | None) -> bool:
    return timestamp is not None and abs(time.time() - timestamp) < 120


@pytest.mark.parametrize(("metric", "expected"), [
    ("http_requests_in_flight", {"web-7d9f8-abcde": 10_000, "web-7d9f8-fghij": 6_000, "web-7d9f8-klmno": 4_000}),
    ("app_sessions_active", {"web-7d9f8-abcde": 50_000, "web-7d9f8-fghij": 30_000, "web-7d9f8-klmno": 20_000}),
])
async def test_pods_metric_values_per_pod(source, metric, expected) -> None:
    metrics, seen = source
    got = await metrics.observe("shop", MetricQuery(type=SourceType.PODS, name=metric), pod_selector="app=web")
    assert isinstance(got, PodSamples), got
    assert {name: sample.value for name, sample in got.values.items()} == expected
    assert all(_fresh(sample.timestamp) for sample in got.values.values())
    assert metrics.custom_metrics_version == "v1beta2"
    assert seen == [("custom.metrics.k8s.io", FetchOutcome.SUCCESS)]


async def test_object_metrics_stay_in_the_autoscalers_namespace(source, stack: Stack) -> None:  # noqa: F811
    metrics, seen = source
    # As upstream's client, a cluster-scoped kind is asked for in the autoscaler's namespace: an
    # autoscaler in "shop" cannot read a node's metric (the adapter has no namespaced node series).
    node = MetricQuery(type=SourceType.OBJECT, name="node_memory_working_set_bytes",
                       described_object=ObjectRef(kind="Node", name="node-a", api_version="v1"))
    got = await metrics.observe("shop", node, pod_selector="")
    assert isinstance(got, FetchFailure), got
    assert got.message.startswith("unable to fetch metrics from custom metrics API: "), got.message
    assert seen[-1] == ("custom.metrics.k8s.io", FetchOutcome.NOT_FOUND)
    deployment = MetricQuery(type=SourceType.OBJECT, name="http_requests_per_second",
                             described_object=ObjectRef(kind="Deployment", name="web", api_version="apps/v1"))
    promql = 'sum(rate(http_requests_total{namespace="shop",service="web"}[1m]))'
    before = float(stack.prometheus.query(promql)[0]["value"][1])
    got = await metrics.observe("shop", deployment, pod_selector="")
    after = float(stack.prometheus.query(promql)[0]["value"][1])
    assert isinstance(got, ObjectSample), got
    assert min(before, after) * 950 - 1 <= got.value <= max(before, after) * 1050 + 1


@pytest.mark.parametrize(("selector", "values"), [
    ("", (7_000, 42_000)),
    ("queue=orders", (42_000,)),
], ids=["every-queue", "selected-queue"])
async def test_external_metric_values(source, selector, values) -> None:
    metrics, _ = source
    query = MetricQuery(type=SourceType.EXTERNAL, name="queue_messages_ready", metric_selector=selector)
    got = await metrics.observe("shop", query, pod_selector="app=web")
    assert isinstance(got, ExternalSamples), got
    assert sorted(got.values) == list(values) and _fresh(got.timestamp)


async def test_resource_metrics_per_pod(source, stack: Stack) -> None:  # noqa: F811
    metrics, _ = source
    memory = await metrics.observe("shop", MetricQuery(type=SourceType.RESOURCE, name="memory"),
                                   pod_selector="app=web")
    assert isinstance(memory, PodSamples), memory
    assert {name: s.value for name, s in memory.values.items()} == {
        "web-7d9f8-abcde": 120 * MiB * 1000, "web-7d9f8-fghij": 110 * MiB * 1000, "web-7d9f8-klmno": 100 * MiB * 1000}
    assert all(s.window == 60.0 and _fresh(s.timestamp) for s in memory.values.values())
    promql = 'sum(rate(container_cpu_usage_seconds_total{namespace="shop",container="app"}[1m])) by (pod)'
    before = {s["metric"]["pod"]: float(s["value"][1]) * 1000 for s in stack.prometheus.query(promql)}
    cpu = await metrics.observe("shop", MetricQuery(type=SourceType.CONTAINER_RESOURCE, name="cpu", container="app"),
                                pod_selector="app=web")
    after = {s["metric"]["pod"]: float(s["value"][1]) * 1000 for s in stack.prometheus.query(promql)}
    assert isinstance(cpu, PodSamples) and set(cpu.values) == set(WEB)
    for pod in WEB:  # the same rate Prometheus computes (a scrape may land between the reads)
        low, high = sorted((before[pod], after[pod]))
        assert low * 0.95 - 1 <= cpu.values[pod].value <= high * 1.05 + 1


async def test_unserved_metric_is_a_failure_in_upstream_words(source) -> None:
    metrics, seen = source
    got = await metrics.observe("shop", MetricQuery(type=SourceType.PODS, name="no_such_metric"), pod_selector="app=web")
    assert isinstance(got, FetchFailure)
    assert got.message.startswith("unable to fetch metrics from custom metrics API: ")
    assert "no_such_metric" in got.message
    assert seen[-1] == ("custom.metrics.k8s.io", FetchOutcome.NOT_FOUND)
