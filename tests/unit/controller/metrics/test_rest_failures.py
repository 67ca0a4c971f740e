"""What a user sees when a metrics API fails: every failure is a FetchFailure worded like
upstream's HPA (never an exception), telemetry gets one report per request by outcome, the
custom-metrics version follows discovery, and identical concurrent requests reach the API once."""

from __future__ import annotations

import asyncio

import pytest

from controller.algorithm.spec import FetchFailure, ObjectRef, PodSamples, SourceType
from controller.metrics.report import FetchOutcome
from controller.metrics.source import MetricQuery

CPU = MetricQuery(type=SourceType.RESOURCE, name="cpu")
RPS = MetricQuery(type=SourceType.PODS, name="rps")
QUEUE = MetricQuery(type=SourceType.EXTERNAL, name="queue")
DEPLOY = MetricQuery(type=SourceType.OBJECT, name="rps",
                     described_object=ObjectRef(kind="Deployment", name="web", api_version="apps/v1"))
RESOURCE_PATH = "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods"
PODS_PATH = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/rps"
OBJECT_PATH = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/deployments.apps/web/rps"
EXTERNAL_PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue"
ITEM = {"describedObject": {"kind": "Pod", "name": "web-1"}, "timestamp": "2026-11-25T18:00:00Z", "value": "1"}
POD = {"metadata": {"name": "web-1"}, "timestamp": "2026-11-25T18:00:00Z", "window": "30s",
       "containers": [{"name": "app", "usage": {"cpu": "1", "memory": "1Gi"}}]}


def _with(base: dict, **changes) -> dict:
    return {key: value for key, value in {**base, **changes}.items() if value is not None}


@pytest.mark.parametrize(("query", "path", "body", "message"), [
    pytest.param(CPU, RESOURCE_PATH, {"kind": "PodMetricsList", "items": {}},
                 "malformed PodMetricsList: items: expected a list, got dict", id="items-not-a-list"),
    pytest.param(CPU, RESOURCE_PATH, {"items": [_with(POD, timestamp="yesterday")]},
                 "malformed PodMetricsList: items[0].timestamp: not an RFC 3339 time: 'yesterday'", id="bad-timestamp"),
    pytest.param(CPU, RESOURCE_PATH, {"items": [_with(POD, window="soon")]},
                 "malformed PodMetricsList: items[0].window: not a duration: 'soon'", id="bad-window"),
    pytest.param(CPU, RESOURCE_PATH, {"items": [_with(POD, containers=[{"name": "app", "usage": {"cpu": "lots"}}])]},
                 "malformed PodMetricsList: items[0].containers[0].usage.cpu: quantities must match", id="bad-quantity"),
    pytest.param(CPU, RESOURCE_PATH, {"items": [_with(POD, metadata={})]},
                 "malformed PodMetricsList: items[0].metadata.name: missing", id="no-pod-name"),
    pytest.param(RPS, PODS_PATH, {"items": [_with(ITEM, describedObject=None)]},
                 "malformed MetricValueList: items[0].describedObject.name: missing", id="no-described-object"),
    pytest.param(RPS, PODS_PATH, {"items": [_with(ITEM, value=None)]},
                 "malformed MetricValueList: items[0].value: missing", id="no-value"),
    pytest.param(RPS, PODS_PATH, {"items": [_with(ITEM, windowSeconds="30s")]},
                 "malformed MetricValueList: items[0].windowSeconds: expected an integer, got '30s'", id="bad-window-seconds"),
    pytest.param(DEPLOY, OBJECT_PATH, {"items": [_with(ITEM, timestamp="2026-11-25T18:00:00")]},
                 "malformed MetricValueList: items[0].timestamp: RFC 3339 time without a zone", id="naive-timestamp"),
    pytest.param(QUEUE, EXTERNAL_PATH, {"items": [{"value": True, "timestamp": "2026-11-25T18:00:00Z"}]},
                 "malformed ExternalMetricValueList: items[0].value: not a quantity: True", id="boolean-value"),
    # A value the HPA cannot hold as an int64 milli-value is refused, never read as a huge number,
    # and never raised out of the port: an exponent beyond decimal arithmetic included.
    pytest.param(QUEUE, EXTERNAL_PATH, {"items": [{"value": "1e999999", "timestamp": "2026-11-25T18:00:00Z"}]},
                 "malformed ExternalMetricValueList: items[0].value: out of range: '1e999999'", id="exponent-overflow"),
    pytest.param(QUEUE, EXTERNAL_PATH, {"items": [{"value": "1e2147483648", "timestamp": "2026-11-25T18:00:00Z"}]},
                 "malformed ExternalMetricValueList: items[0].value: out of range: '1e2147483648'", id="exponent-invalid"),
    pytest.param(RPS, PODS_PATH, {"items": [_with(ITEM, value="1e400")]},
                 "malformed MetricValueList: items[0].value: out of range: '1e400'", id="beyond-int64-milli"),
    pytest.param(CPU, RESOURCE_PATH, {"items": [_with(POD, containers=[{"name": "app", "usage": {"cpu": "9223372036854775808m"}}])]},
                 "malformed PodMetricsList: items[0].containers[0].usage.cpu: out of range: '9223372036854775808m'",
                 id="one-past-int64-milli"),
    pytest.param(DEPLOY, OBJECT_PATH, {"items": [_with(ITEM, value="1e900000")]},
                 "malformed MetricValueList: items[0].value: out of range: '1e900000'", id="huge-exponent-no-hang"),
    pytest.param(RPS, PODS_PATH, {"items": [_with(ITEM, windowSeconds=10**400)]},
                 "malformed MetricValueList: items[0].windowSeconds: expected an int64", id="window-beyond-float"),
    pytest.param(RPS, PODS_PATH, {"items": [_with(ITEM, windowSeconds=2**63)]},
                 "malformed MetricValueList: items[0].windowSeconds: expected an int64", id="window-beyond-int64"),
    # A body of another kind is refused even when its items look alike (upstream's decoder does).
    pytest.param(DEPLOY, OBJECT_PATH, {"kind": "ExternalMetricValueList", "items": [
                     {"metricName": "rps", "value": "5", "timestamp": "2026-11-25T18:00:00Z"}]},
                 "malformed MetricValueList: kind: expected MetricValueList, got 'ExternalMetricValueList'",
                 id="external-list-for-an-object"),
    pytest.param(QUEUE, EXTERNAL_PATH, {"kind": "MetricValueList", "items": [ITEM]},
                 "malformed ExternalMetricValueList: kind: expected ExternalMetricValueList, got 'MetricValueList'",
                 id="custom-list-for-external"),
    pytest.param(CPU, RESOURCE_PATH, {"kind": "Status", "apiVersion": "v1", "status": "Success"},
                 "malformed PodMetricsList: kind: expected PodMetricsList, got 'Status'", id="status-with-200"),
])
async def test_malformed_bodies_are_named(api, query, path, body, message):
    api.server.answer(path, 200, body)
    got = await api.source.observe("shop", query, pod_selector="app=web")
    assert isinstance(got, FetchFailure)
    assert got.message.startswith("unable to fetch metrics from ")
    assert message in got.message
    assert api.reports.seen[-1][1] is FetchOutcome.MALFORMED


@pytest.mark.parametrize(("query", "path", "status", "body", "message", "outcome"), [
    pytest.param(RPS, PODS_PATH, 404, {"kind": "Status", "code": 404, "reason": "NotFound",
                                       "message": "the server could not find the metric rps for pods"},
                 "unable to fetch metrics from custom metrics API: the server could not find the metric rps for pods",
                 FetchOutcome.NOT_FOUND, id="status-message-passed-through"),
    pytest.param(CPU, RESOURCE_PATH, 403, {"kind": "Status", "code": 403, "reason": "Forbidden",
                                           "message": 'pods.metrics.k8s.io is forbidden: User "hpa" cannot list'},
                 'unable to fetch metrics from resource metrics API: pods.metrics.k8s.io is forbidden: User "hpa" cannot list',
                 FetchOutcome.FORBIDDEN, id="forbidden"),
    pytest.param(CPU, RESOURCE_PATH, 503, "",
                 "unable to fetch metrics from resource metrics API: the server is currently unable to handle the "
                 "request (get pods.metrics.k8s.io)", FetchOutcome.API_ERROR, id="bare-503-client-go-wording"),
    pytest.param(QUEUE, EXTERNAL_PATH, 500, "<html>oops</html>",
                 "unable to fetch metrics from external metrics API: an error on the server", FetchOutcome.API_ERROR,
                 id="non-json-500"),
    pytest.param(QUEUE, EXTERNAL_PATH, 200, "not json",
                 "unable to fetch metrics from external metrics API: GET " + EXTERNAL_PATH + ": HTTP 200 with a non-JSON body",
                 FetchOutcome.UNAVAILABLE, id="non-json-200"),
    pytest.param(DEPLOY, OBJECT_PATH, 200, {"kind": "MetricValueList", "items": [ITEM, ITEM]},
                 "unable to fetch metrics from custom metrics API: the custom metrics API server returned 2 results "
                 "when we asked for exactly one", FetchOutcome.NO_METRICS, id="object-two-items"),
])
async def test_api_errors_keep_upstream_wording(api, query, path, status, body, message, outcome):
    api.server.answer(path, status, body)
    got = await api.source.observe("shop", query, pod_selector="app=web")
    assert isinstance(got, FetchFailure) and got.message.startswith(message), got.message
    assert api.reports.seen[-1][1] is outcome


@pytest.mark.parametrize(("query", "message", "group"), [
    (RPS, "unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered",
     "custom.metrics.k8s.io"),
    (CPU, "unable to fetch metrics from resource metrics API: no resource metrics API (metrics.k8s.io) registered",
     "metrics.k8s.io"),
], ids=["custom", "resource"])
async def test_group_not_registered(api, query, message, group):
    api.server.custom_versions, api.server.resource_versions = [], []
    assert await api.source.observe("shop", query, pod_selector="") == FetchFailure(message=message)
    assert api.reports.seen == [(group, FetchOutcome.NO_API)]


async def test_timeout_and_unreachable_server(api):
    source = api.new_source(timeout=0.1)
    api.server.delay = 0.4
    got = await source.observe("shop", QUEUE, pod_selector="")
    assert got == FetchFailure(message=f"unable to fetch metrics from external metrics API: GET {EXTERNAL_PATH}: "
                                       "no answer within 0.1s (timeout)")
    assert api.reports.seen[-1] == ("external.metrics.k8s.io", FetchOutcome.TIMEOUT)
    await api.server.close()
    got = await source.observe("shop", QUEUE, pod_selector="")
    assert isinstance(got, FetchFailure) and "Cannot connect" in got.message
    assert api.reports.seen[-1] == ("external.metrics.k8s.io", FetchOutcome.UNAVAILABLE)


async def test_version_follows_discovery_on_404_and_periodically(api):
    api.server.custom_versions, api.server.custom_preferred = ["v1beta1"], "v1beta1"
    api.server.pod_custom[("shop", "rps")] = {"web-1": "1"}
    assert isinstance(await api.source.observe("shop", RPS, pod_selector=""), PodSamples)
    assert api.source.custom_metrics_version == "v1beta1"
    # the adapter is upgraded: v1beta1 disappears; the 404 triggers a re-check and one retry
    api.server.custom_versions, api.server.custom_preferred = ["v1beta2"], "v1beta2"
    api.clock.now += 20
    assert isinstance(await api.source.observe("shop", RPS, pod_selector=""), PodSamples)
    assert api.source.custom_metrics_version == "v1beta2"
    assert [c.split("?")[0].split("/")[3] for c in api.server.calls if "pods/*" in c] == ["v1beta1", "v1beta1", "v1beta2"]
    # a downgrade that still serves the old version is picked up by the periodic refresh
    api.server.custom_versions, api.server.custom_preferred = ["v1beta1", "v1beta2"], "v1beta1"
    await api.source.observe("shop", RPS, pod_selector="")
    assert api.source.custom_metrics_version == "v1beta2"  # cached for 5 minutes
    api.clock.now += 301
    await api.source.observe("shop", RPS, pod_selector="")
    assert api.source.custom_metrics_version == "v1beta1"


async def test_metric_not_found_does_not_storm_discovery(api):
    for _ in range(5):
        got = await api.source.observe("shop", RPS, pod_selector="")
        assert isinstance(got, FetchFailure) and "could not find" in got.message
    assert api.server.calls.count("/apis/custom.metrics.k8s.io?") == 1


async def test_identical_concurrent_requests_share_one_call(api):
    api.server.pods["shop"] = {"web-1": {"labels": {"app": "web"}, "containers": {}},
                               "api-1": {"labels": {"app": "api"}, "containers": {}}}
    api.server.pod_custom[("shop", "rps")] = {"web-1": "1", "api-1": "2"}
    api.server.delay = 0.2
    answers = await asyncio.gather(*(api.source.observe("shop", RPS, pod_selector="app=web") for _ in range(5)),
                                   api.source.observe("shop", RPS, pod_selector="app=api"))
    assert all(isinstance(a, PodSamples) for a in answers)
    assert [c.split("?")[1] for c in api.server.calls if "pods/*" in c] == ["labelSelector=app%3Dweb",
                                                                              "labelSelector=app%3Dapi"]
    assert api.reports.seen.count(("custom.metrics.k8s.io", FetchOutcome.SUCCESS)) == 2


async def test_discovery_failure_without_a_previous_choice_fails_the_metric(api):
    api.server.answer("/apis/custom.metrics.k8s.io", 503, {"kind": "Status", "code": 503,
                                                           "reason": "ServiceUnavailable", "message": "etcd is sad"})
    got = await api.source.observe("shop", RPS, pod_selector="")
    assert isinstance(got, FetchFailure) and "etcd is sad" in got.message
    assert api.reports.seen == [("custom.metrics.k8s.io", FetchOutcome.API_ERROR)]


async def test_discovery_failure_keeps_the_last_good_version(api):
    api.server.pod_custom[("shop", "rps")] = {"web-1": "1"}
    assert isinstance(await api.source.observe("shop", RPS, pod_selector=""), PodSamples)
    api.server.answer("/apis/custom.metrics.k8s.io", 503, "")  # discovery now fails ...
    api.clock.now += 301  # ... when the cached choice is due for its re-check
    assert isinstance(await api.source.observe("shop", RPS, pod_selector=""), PodSamples)
    assert api.source.custom_metrics_version == "v1beta2"


@pytest.mark.parametrize(("query", "path", "body"), [
    pytest.param(QUEUE, EXTERNAL_PATH, {"items": [{"value": "x" * 100_000, "timestamp": "2026-11-25T18:00:00Z"}]},
                 id="quantity"),
    pytest.param(QUEUE, EXTERNAL_PATH, {"items": [{"value": "1" * 100_000, "timestamp": "2026-11-25T18:00:00Z"}]},
                 id="quantity-out-of-range"),
    pytest.param(RPS, PODS_PATH, {"items": [_with(ITEM, timestamp="x" * 100_000)]}, id="timestamp"),
    pytest.param(CPU, RESOURCE_PATH, {"items": [_with(POD, window="x" * 100_000)]}, id="window"),
    pytest.param(RPS, PODS_PATH, {"items": [_with(ITEM, describedObject={"name": ["x" * 100_000]})]}, id="pod-name"),
    pytest.param(DEPLOY, OBJECT_PATH, {"kind": "x" * 100_000, "items": []}, id="kind"),
])
async def test_a_huge_bad_value_is_quoted_shortened(api, query, path, body):
    """The failure becomes the autoscaler's condition and event: a 100 kB value the adapter sent
    is named by its start, not copied whole into every status write."""
    api.server.answer(path, 200, body)
    got = await api.source.observe("shop", query, pod_selector="app=web")
    assert isinstance(got, FetchFailure) and "malformed" in got.message
    assert len(got.message) < 400, got.message[:300]
