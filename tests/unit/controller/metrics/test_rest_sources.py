"""AggregatedMetricsSource reads each metric source type from the wire format the metrics APIs
speak and hands the algorithm the values, timestamps and windows a user's metrics have."""

from __future__ import annotations

import pytest

from controller.algorithm.pods import PodMetric
from controller.algorithm.spec import ExternalSamples, FetchFailure, ObjectRef, ObjectSample, PodSamples, SourceType
from controller.metrics.report import FetchOutcome
from controller.metrics.source import MetricQuery

from .metrics_api import TS_EPOCH

WEB = {"web-1": {"labels": {"app": "web"}, "containers": {"app": {"cpu": "250m", "memory": "100Mi"},
                                                           "proxy": {"cpu": "50m", "memory": "20Mi"}}},
       "web-2": {"labels": {"app": "web"}, "containers": {"app": {"cpu": "300m", "memory": "90Mi"}},
                 "window": "1m0s"},
       "web-3": {"labels": {"app": "web"}, "containers": {"app": {"memory": "1Gi"}}},
       "api-1": {"labels": {"app": "api"}, "containers": {"app": {"cpu": "1", "memory": "1Gi"}}}}


def _pods(**values: int) -> PodSamples:
    return PodSamples(values={name: PodMetric(value=v, timestamp=TS_EPOCH, window=60.0 if name == "web-2" else 30.0)
                              for name, v in values.items()})


@pytest.mark.parametrize(("query", "selector", "expected"), [
    pytest.param(MetricQuery(type=SourceType.RESOURCE, name="cpu"), "app=web", _pods(**{"web-1": 300, "web-2": 300}),
                 id="cpu-summed-over-containers-pod-without-cpu-missing"),
    pytest.param(MetricQuery(type=SourceType.RESOURCE, name="memory"), "app=api", _pods(**{"api-1": 1073741824000}),
                 id="memory-in-milli-bytes"),
    pytest.param(MetricQuery(type=SourceType.CONTAINER_RESOURCE, name="cpu", container="proxy"), "app=web",
                 _pods(**{"web-1": 50}), id="container-resource-only-pods-with-that-container"),
    pytest.param(MetricQuery(type=SourceType.RESOURCE, name="cpu"), "app=none",
                 FetchFailure(message="no metrics returned from resource metrics API"), id="no-pods-selected"),
])
async def test_resource_metrics(api, query, selector, expected):
    api.server.pods["shop"] = WEB
    assert await api.source.observe("shop", query, pod_selector=selector) == expected
    assert api.server.calls[-1] == f"/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods?labelSelector=app%3D{selector[4:]}"


async def test_resource_metrics_prefer_v1_when_served(api):
    api.server.resource_versions = ["v1beta1", "v1"]
    api.server.pods["shop"] = WEB
    got = await api.source.observe("shop", MetricQuery(type=SourceType.RESOURCE, name="cpu"), pod_selector="app=web")
    assert isinstance(got, PodSamples) and set(got.values) == {"web-1", "web-2"}
    assert api.server.calls[-1].startswith("/apis/metrics.k8s.io/v1/namespaces/shop/pods?")


@pytest.mark.parametrize(("versions", "preferred", "used"), [
    (["v1beta1", "v1beta2"], "v1beta2", "v1beta2"),
    (["v1beta1"], "v1beta1", "v1beta1"),
    (["v1beta1", "v1beta2"], "v1beta1", "v1beta1"),
    (["v1beta1", "v1beta2"], "v2", "v1beta1"),
], ids=["preferred-v1beta2", "only-v1beta1", "server-prefers-v1beta1", "unknown-preferred-first-known-listed"])
async def test_pods_metric_in_the_discovery_preferred_version(api, versions, preferred, used):
    api.server.custom_versions, api.server.custom_preferred = versions, preferred
    api.server.pods["shop"] = WEB
    api.server.pod_custom[("shop", "rps")] = {"web-1": "1500m", "web-2": "2", "api-1": "9"}
    query = MetricQuery(type=SourceType.PODS, name="rps", metric_selector="verb=GET")
    got = await api.source.observe("shop", query, pod_selector="app=web")
    assert got == PodSamples(values={"web-1": PodMetric(value=1500, timestamp=TS_EPOCH, window=30.0),
                                     "web-2": PodMetric(value=2000, timestamp=TS_EPOCH, window=30.0)})
    assert api.server.calls[-1] == (f"/apis/custom.metrics.k8s.io/{used}/namespaces/shop/pods/*/rps"
                                    "?labelSelector=app%3Dweb&metricLabelSelector=verb%3DGET")
    assert api.source.custom_metrics_version == used


async def test_pods_metric_without_values(api):
    api.server.pod_custom[("shop", "rps")] = {}
    got = await api.source.observe("shop", MetricQuery(type=SourceType.PODS, name="rps"), pod_selector="app=web")
    assert got == FetchFailure(message="no metrics returned from custom metrics API")


@pytest.mark.parametrize(("ref", "stored_at", "expected"), [
    pytest.param(ObjectRef(kind="Deployment", name="web", api_version="apps/v1"),
                 "namespaces/shop/deployments.apps/web/rps", ObjectSample(value=42000, timestamp=TS_EPOCH),
                 id="namespaced-kind-qualified-resource"),
    pytest.param(ObjectRef(kind="Service", name="front", api_version="v1"),
                 "namespaces/shop/services/front/rps", ObjectSample(value=500, timestamp=TS_EPOCH),
                 id="core-kind-plain-resource"),
    # upstream asks in the autoscaler's namespace whatever the kind's scope: an HPA never reads a
    # metric outside its namespace (client-go custom_metrics NamespacedMetrics.GetForObject)
    pytest.param(ObjectRef(kind="Node", name="node-a", api_version="v1"),
                 "namespaces/shop/nodes/node-a/rps", ObjectSample(value=500, timestamp=TS_EPOCH),
                 id="cluster-scoped-kind-still-in-the-autoscalers-namespace"),
    pytest.param(ObjectRef(kind="Namespace", name="ignored", api_version="v1"),
                 "namespaces/shop/metrics/rps", ObjectSample(value=500, timestamp=TS_EPOCH),
                 id="namespace-kind-uses-the-autoscalers-namespace"),
])
async def test_object_metric(api, ref, stored_at, expected):
    api.server.object_metrics[stored_at] = "42" if "deployments" in stored_at else "500m"
    query = MetricQuery(type=SourceType.OBJECT, name="rps", described_object=ref, metric_selector="a=b")
    assert await api.source.observe("shop", query, pod_selector="app=web") == expected
    assert api.server.calls[-1] == f"/apis/custom.metrics.k8s.io/v1beta2/{stored_at}?metricLabelSelector=a%3Db"


async def test_object_metric_of_an_unknown_kind(api):
    query = MetricQuery(type=SourceType.OBJECT, name="rps",
                        described_object=ObjectRef(kind="Widget", name="w", api_version="apps/v1"))
    got = await api.source.observe("shop", query, pod_selector="")
    assert got == FetchFailure(message='unable to fetch metrics from custom metrics API: unable to map kind '
                                       'Widget.apps to resource: no matches for kind "Widget" in group "apps"')
    assert api.reports.seen == [("custom.metrics.k8s.io", FetchOutcome.NO_API)]


@pytest.mark.parametrize(("selector", "expected"), [
    ("", ExternalSamples(values=(7000, 42000), timestamp=TS_EPOCH)),
    ("queue=orders", ExternalSamples(values=(42000,), timestamp=TS_EPOCH)),
    ("queue=none", FetchFailure(message="no metrics returned from external metrics API")),
], ids=["every-series", "metric-selector", "nothing-selected"])
async def test_external_metric(api, selector, expected):
    api.server.external[("shop", "queue_messages_ready")] = [({"queue": "emails"}, "7"), ({"queue": "orders"}, "42")]
    query = MetricQuery(type=SourceType.EXTERNAL, name="queue_messages_ready", metric_selector=selector)
    assert await api.source.observe("shop", query, pod_selector="app=web") == expected
    path = "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_messages_ready"
    assert api.server.calls[-1] == path + (f"?labelSelector={selector.replace('=', '%3D')}" if selector else "?")
